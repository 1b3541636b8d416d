/*
 * pool_util.c — shared geometry and loops of the pooling kernels.
 */
#include <math.h>

#include "pool_util.h"

/* Bounds parameters so that every index computation fits in int64. */
#define POOL_PARAM_MAX ((int64_t)1 << 30)

static ember_status pair(ember_kernel_ctx *ctx, const int64_t *items, size_t len, int64_t lo,
                         const char *what, int64_t *a, int64_t *b) {
    if (len != 1 && len != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: %s must have 1 or 2 values", what);
    *a = items[0];
    *b = items[len - 1];
    if (*a < lo || *b < lo || *a > POOL_PARAM_MAX || *b > POOL_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "pool: %s out of range", what);
    return EMBER_OK;
}

/* floor((in + 2 pad - dil (k - 1) - 1 + (ceil ? s - 1 : 0)) / s) + 1, then
 * in ceil mode the last window must start inside the input or left pad. */
static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil,
                        bool ceil_mode) {
    int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t q = num / s;
    if (num % s != 0 && num < 0) q -= 1; /* round toward -inf */
    int64_t o = q + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) o -= 1;
    return o;
}

ember_status ek_pool2d_init(ember_kernel_ctx *ctx, ek_pool2d *p, const ember_tensor *in,
                            const int64_t *ks, size_t nks, const int64_t *st, size_t nst,
                            const int64_t *pd, size_t npd, const int64_t *dl, size_t ndl,
                            bool ceil_mode) {
    if (in->dim != 3 && in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pool: expected a 3-d or 4-d input, got %u-d", (unsigned)in->dim);
    EK_TRY(pair(ctx, ks, nks, 1, "kernel_size", &p->kh, &p->kw));
    if (nst == 0) {
        p->sh = p->kh;
        p->sw = p->kw;
    } else {
        EK_TRY(pair(ctx, st, nst, 1, "stride", &p->sh, &p->sw));
    }
    EK_TRY(pair(ctx, pd, npd, 0, "padding", &p->ph, &p->pw));
    if (dl == NULL) {
        p->dh = p->dw = 1;
    } else {
        EK_TRY(pair(ctx, dl, ndl, 1, "dilation", &p->dh, &p->dw));
    }
    if (p->ph > ((p->kh - 1) * p->dh + 1) / 2 || p->pw > ((p->kw - 1) * p->dw + 1) / 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: padding must be at most half the kernel size");
    size_t lead = in->dim - 2;
    p->planes = 1;
    for (size_t d = 0; d < lead; d++) {
        p->planes *= in->sizes[d];
        p->out_shape[d] = in->sizes[d];
    }
    p->h = in->sizes[lead];
    p->w = in->sizes[lead + 1];
    p->oh = out_size(p->h, p->kh, p->ph, p->sh, p->dh, ceil_mode);
    p->ow = out_size(p->w, p->kw, p->pw, p->sw, p->dw, ceil_mode);
    if (p->oh < 1 || p->ow < 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pool: output size %lldx%lld is too small (input %lldx%lld)",
                                 (long long)p->oh, (long long)p->ow, (long long)p->h,
                                 (long long)p->w);
    p->out_shape[lead] = p->oh;
    p->out_shape[lead + 1] = p->ow;
    p->out_dim = in->dim;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* N-d pooling (2 or 3 spatial dims)                                         */
/* ------------------------------------------------------------------------ */

/* Reads a list of 1 or nsp values into the last nsp slots of v (D, H, W). */
static ember_status spatial(ember_kernel_ctx *ctx, const int64_t *items, size_t len, size_t nsp,
                            int64_t lo, const char *what, int64_t *v) {
    if (len != 1 && len != nsp)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: %s must have 1 or %zu values", what, nsp);
    for (size_t i = 0; i < nsp; i++) {
        int64_t x = items[len == 1 ? 0 : i];
        if (x < lo || x > POOL_PARAM_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "pool: %s out of range",
                                     what);
        v[3 - nsp + i] = x;
    }
    return EMBER_OK;
}

/* Leading dims (planes) and the spatial sizes of in; the caller checked rank. */
static void split_input(ek_pool *p, const ember_tensor *in, size_t nsp) {
    size_t lead = in->dim - nsp;
    p->nsp = nsp;
    p->planes = 1;
    for (size_t d = 0; d < lead; d++) {
        p->planes *= in->sizes[d];
        p->out_shape[d] = in->sizes[d];
    }
    for (size_t i = 0; i < 3; i++) p->in[i] = i < 3 - nsp ? 1 : in->sizes[lead + i - (3 - nsp)];
    p->out_dim = in->dim;
}

static ember_status check_rank(ember_kernel_ctx *ctx, const ember_tensor *in, size_t nsp) {
    if (in->dim != nsp + 1 && in->dim != nsp + 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pool: expected a %zu-d or %zu-d input, got %u-d", nsp + 1,
                                 nsp + 2, (unsigned)in->dim);
    return EMBER_OK;
}

ember_status ek_pool_init(ember_kernel_ctx *ctx, ek_pool *p, const ember_tensor *in, size_t nsp,
                          const int64_t *ks, size_t nks, const int64_t *st, size_t nst,
                          const int64_t *pd, size_t npd, const int64_t *dl, size_t ndl,
                          bool ceil_mode) {
    EK_TRY(check_rank(ctx, in, nsp));
    for (size_t i = 0; i < 3; i++) {
        p->k[i] = p->s[i] = p->dl[i] = 1;
        p->p[i] = 0;
    }
    EK_TRY(spatial(ctx, ks, nks, nsp, 1, "kernel_size", p->k));
    if (nst == 0) {
        for (size_t i = 0; i < 3; i++) p->s[i] = p->k[i];
    } else {
        EK_TRY(spatial(ctx, st, nst, nsp, 1, "stride", p->s));
    }
    EK_TRY(spatial(ctx, pd, npd, nsp, 0, "padding", p->p));
    if (dl != NULL) EK_TRY(spatial(ctx, dl, ndl, nsp, 1, "dilation", p->dl));
    /* every window (at most the kernel's volume) is counted in int64 */
    if (p->k[0] * p->k[1] > POOL_PARAM_MAX || p->k[0] * p->k[1] * p->k[2] > POOL_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: kernel volume out of range");
    for (size_t i = 0; i < 3; i++)
        if (p->p[i] > ((p->k[i] - 1) * p->dl[i] + 1) / 2)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "pool: padding must be at most half the kernel size");
    split_input(p, in, nsp);
    size_t lead = in->dim - nsp;
    for (size_t i = 0; i < 3; i++) {
        p->out[i] = out_size(p->in[i], p->k[i], p->p[i], p->s[i], p->dl[i], ceil_mode);
        if (p->out[i] < 1)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "pool: output size %lld along spatial dim %zu is too small "
                                     "(input %lld)",
                                     (long long)p->out[i], i - (3 - nsp), (long long)p->in[i]);
        if (i >= 3 - nsp) p->out_shape[lead + i - (3 - nsp)] = p->out[i];
    }
    return EMBER_OK;
}

ember_status ek_pool_adaptive_init(ember_kernel_ctx *ctx, ek_pool *p, const ember_tensor *in,
                                   size_t nsp, const int64_t *os, size_t nos) {
    EK_TRY(check_rank(ctx, in, nsp));
    if (nos != nsp)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "adaptive pool: output_size must have %zu values", nsp);
    split_input(p, in, nsp);
    size_t lead = in->dim - nsp;
    bool empty_out = false, empty_in = false;
    for (size_t i = 0; i < 3; i++) {
        int64_t o = i < 3 - nsp ? 1 : os[i - (3 - nsp)];
        if (o < 0 || o > INT32_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "adaptive pool: output size %lld out of range", (long long)o);
        p->out[i] = o;
        p->k[i] = p->s[i] = p->dl[i] = 1;
        p->p[i] = 0;
        if (o == 0) empty_out = true;
        if (p->in[i] == 0) empty_in = true;
        if (i >= 3 - nsp) p->out_shape[lead + i - (3 - nsp)] = o;
    }
    if (empty_in && !empty_out && p->planes > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "adaptive pool: empty input plane");
    return EMBER_OK;
}

/* Window [start, end) of output cell o along spatial dim i, before clipping. */
#define WIN_START(p, i, o) ((o) * (p)->s[i] - (p)->p[i])

#define DEF_POOL_AVG(SFX, T, CT, LOAD, STORE)                                                      \
    static void pool_avg_##SFX(T *y, const T *x, const ek_pool *p, bool include_pad,               \
                               int64_t divisor) {                                                  \
        int64_t id = p->in[0], ih = p->in[1], iw = p->in[2];                                       \
        int64_t od = p->out[0], oh = p->out[1], ow = p->out[2];                                    \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *xp = x + pl * id * ih * iw; /* (D, H, W) */                                   \
            T *yp = y + pl * od * oh * ow;       /* (OD, OH, OW) */                                \
            for (int64_t oz = 0; oz < od; oz++)                                                    \
                for (int64_t oy = 0; oy < oh; oy++)                                                \
                    for (int64_t ox = 0; ox < ow; ox++) {                                          \
                        int64_t s[3] = {WIN_START(p, 0, oz), WIN_START(p, 1, oy),                  \
                                        WIN_START(p, 2, ox)};                                      \
                        int64_t e[3], padded = 1, inside = 1;                                      \
                        for (int i = 0; i < 3; i++) {                                              \
                            e[i] = s[i] + p->k[i];                                                 \
                            if (e[i] > p->in[i] + p->p[i]) e[i] = p->in[i] + p->p[i];              \
                            padded *= e[i] - s[i];                                                 \
                            if (s[i] < 0) s[i] = 0;                                                \
                            if (e[i] > p->in[i]) e[i] = p->in[i];                                  \
                            inside *= e[i] > s[i] ? e[i] - s[i] : 0;                               \
                        }                                                                          \
                        T *dst = &yp[(oz * oh + oy) * ow + ox];                                    \
                        if (inside == 0) {                                                         \
                            *dst = STORE((CT)0);                                                   \
                            continue;                                                              \
                        }                                                                          \
                        CT sum = 0;                                                                \
                        for (int64_t z = s[0]; z < e[0]; z++)                                      \
                            for (int64_t yy = s[1]; yy < e[1]; yy++)                               \
                                for (int64_t xx = s[2]; xx < e[2]; xx++)                           \
                                    sum += LOAD(xp[(z * ih + yy) * iw + xx]);                      \
                        int64_t div = divisor != 0 ? divisor : include_pad ? padded : inside;      \
                        *dst = STORE(sum / (CT)div);                                               \
                    }                                                                              \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_POOL_AVG)
/* int64 sums wrap as in PyTorch (computed on uint64); division truncates. */
#define EK_POOL_WRAP(x) ((int64_t)(uint64_t)(x))
static void pool_avg_i64(int64_t *y, const int64_t *x, const ek_pool *p, bool include_pad,
                         int64_t divisor) {
    int64_t id = p->in[0], ih = p->in[1], iw = p->in[2];
    int64_t od = p->out[0], oh = p->out[1], ow = p->out[2];
    for (int64_t pl = 0; pl < p->planes; pl++) {
        const int64_t *xp = x + pl * id * ih * iw;
        int64_t *yp = y + pl * od * oh * ow;
        for (int64_t oz = 0; oz < od; oz++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    int64_t s[3] = {WIN_START(p, 0, oz), WIN_START(p, 1, oy), WIN_START(p, 2, ox)};
                    int64_t e[3], padded = 1, inside = 1;
                    for (int i = 0; i < 3; i++) {
                        e[i] = s[i] + p->k[i];
                        if (e[i] > p->in[i] + p->p[i]) e[i] = p->in[i] + p->p[i];
                        padded *= e[i] - s[i];
                        if (s[i] < 0) s[i] = 0;
                        if (e[i] > p->in[i]) e[i] = p->in[i];
                        inside *= e[i] > s[i] ? e[i] - s[i] : 0;
                    }
                    int64_t *dst = &yp[(oz * oh + oy) * ow + ox];
                    if (inside == 0) {
                        *dst = 0;
                        continue;
                    }
                    uint64_t sum = 0;
                    for (int64_t z = s[0]; z < e[0]; z++)
                        for (int64_t yy = s[1]; yy < e[1]; yy++)
                            for (int64_t xx = s[2]; xx < e[2]; xx++)
                                sum += (uint64_t)xp[(z * ih + yy) * iw + xx];
                    int64_t div = divisor != 0 ? divisor : include_pad ? padded : inside;
                    int64_t v = EK_POOL_WRAP(sum);
                    /* INT64_MIN / -1 overflows: PyTorch gives INT64_MIN there too */
                    *dst = div == -1 ? EK_POOL_WRAP(0u - (uint64_t)v) : v / div;
                }
    }
}

ember_status ek_pool_avg(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, bool count_include_pad, int64_t divisor) {
    if (out->numel == 0) return EMBER_OK;
    if (in->dtype == EMBER_INT64) {
        pool_avg_i64(out->data, in->data, p, count_include_pad, divisor);
        return EMBER_OK;
    }
    EK_FLOAT_SWITCH(ctx, in->dtype, pool_avg, out->data, in->data, p, count_include_pad, divisor);
    return EMBER_OK;
}

/* First tap of a window at or after 0: start + j * step for the least such j. */
static int64_t first_tap(int64_t start, int64_t step) {
    return start >= 0 ? start : start + ((-start + step - 1) / step) * step;
}

/* CT is the compare type; LOWEST starts the running max (-inf for floats). */
#define DEF_POOL_MAX(SFX, T, CT, LOAD, STORE, LOWEST)                                              \
    static void pool_max_##SFX(T *y, int64_t *ind, const T *x, const ek_pool *p) {                 \
        int64_t id = p->in[0], ih = p->in[1], iw = p->in[2];                                       \
        int64_t od = p->out[0], oh = p->out[1], ow = p->out[2];                                    \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *xp = x + pl * id * ih * iw; /* (D, H, W) */                                   \
            T *yp = y + pl * od * oh * ow;       /* (OD, OH, OW) */                                \
            int64_t *ip = ind + pl * od * oh * ow;                                                 \
            for (int64_t oz = 0; oz < od; oz++)                                                    \
                for (int64_t oy = 0; oy < oh; oy++)                                                \
                    for (int64_t ox = 0; ox < ow; ox++) {                                          \
                        int64_t s[3] = {WIN_START(p, 0, oz), WIN_START(p, 1, oy),                  \
                                        WIN_START(p, 2, ox)};                                      \
                        int64_t e[3];                                                              \
                        for (int i = 0; i < 3; i++) {                                              \
                            e[i] = s[i] + (p->k[i] - 1) * p->dl[i] + 1;                            \
                            if (e[i] > p->in[i]) e[i] = p->in[i];                                  \
                            s[i] = first_tap(s[i], p->dl[i]);                                      \
                        }                                                                          \
                        CT best = LOWEST;                                                          \
                        int64_t best_i = (s[0] * ih + s[1]) * iw + s[2];                           \
                        for (int64_t z = s[0]; z < e[0]; z += p->dl[0])                            \
                            for (int64_t yy = s[1]; yy < e[1]; yy += p->dl[1])                     \
                                for (int64_t xx = s[2]; xx < e[2]; xx += p->dl[2]) {               \
                                    int64_t at = (z * ih + yy) * iw + xx;                          \
                                    CT v = LOAD(xp[at]);                                           \
                                    if (v > best || v != v) {                                      \
                                        best = v;                                                  \
                                        best_i = at;                                               \
                                    }                                                              \
                                }                                                                  \
                        yp[(oz * oh + oy) * ow + ox] = STORE(best);                                \
                        ip[(oz * oh + oy) * ow + ox] = best_i;                                     \
                    }                                                                              \
        }                                                                                          \
    }

#define DEF_POOL_MAX_FLOAT(SFX, T, CT, LOAD, STORE) DEF_POOL_MAX(SFX, T, CT, LOAD, STORE, -INFINITY)
EK_FOR_EACH_FLOAT(DEF_POOL_MAX_FLOAT)
#define EK_POOL_STORE_INT(x) (x)
DEF_POOL_MAX(u8, uint8_t, int64_t, EK_IDENT, EK_POOL_STORE_INT, INT64_MIN)
DEF_POOL_MAX(i8, int8_t, int64_t, EK_IDENT, EK_POOL_STORE_INT, INT64_MIN)
DEF_POOL_MAX(i16, int16_t, int64_t, EK_IDENT, EK_POOL_STORE_INT, INT64_MIN)
DEF_POOL_MAX(i32, int32_t, int64_t, EK_IDENT, EK_POOL_STORE_INT, INT64_MIN)
DEF_POOL_MAX(i64, int64_t, int64_t, EK_IDENT, EK_POOL_STORE_INT, INT64_MIN)

ember_status ek_pool_max(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, ember_tensor *indices) {
    if (out->numel == 0) return EMBER_OK;
    switch (in->dtype) {
    case EMBER_UINT8: pool_max_u8(out->data, indices->data, in->data, p); return EMBER_OK;
    case EMBER_INT8: pool_max_i8(out->data, indices->data, in->data, p); return EMBER_OK;
    case EMBER_INT16: pool_max_i16(out->data, indices->data, in->data, p); return EMBER_OK;
    case EMBER_INT32: pool_max_i32(out->data, indices->data, in->data, p); return EMBER_OK;
    case EMBER_INT64: pool_max_i64(out->data, indices->data, in->data, p); return EMBER_OK;
    default: break;
    }
    EK_FLOAT_SWITCH(ctx, in->dtype, pool_max, out->data, indices->data, in->data, p);
    return EMBER_OK;
}

#define DEF_POOL_ADAPTIVE(SFX, T, CT, LOAD, STORE)                                                 \
    static void pool_adaptive_##SFX(T *y, const T *x, const ek_pool *p) {                          \
        int64_t id = p->in[0], ih = p->in[1], iw = p->in[2];                                       \
        int64_t od = p->out[0], oh = p->out[1], ow = p->out[2];                                    \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *xp = x + pl * id * ih * iw; /* (D, H, W) */                                   \
            T *yp = y + pl * od * oh * ow;       /* (OD, OH, OW) */                                \
            for (int64_t oz = 0; oz < od; oz++) {                                                  \
                int64_t zs = (oz * id) / od, ze = ((oz + 1) * id + od - 1) / od;                   \
                for (int64_t oy = 0; oy < oh; oy++) {                                              \
                    int64_t ys = (oy * ih) / oh, ye = ((oy + 1) * ih + oh - 1) / oh;               \
                    for (int64_t ox = 0; ox < ow; ox++) {                                          \
                        int64_t xs = (ox * iw) / ow, xe = ((ox + 1) * iw + ow - 1) / ow;           \
                        CT sum = 0;                                                                \
                        for (int64_t z = zs; z < ze; z++)                                          \
                            for (int64_t yy = ys; yy < ye; yy++)                                   \
                                for (int64_t xx = xs; xx < xe; xx++)                               \
                                    sum += LOAD(xp[(z * ih + yy) * iw + xx]);                      \
                        CT cnt = (CT)((ze - zs) * (ye - ys) * (xe - xs));                          \
                        yp[(oz * oh + oy) * ow + ox] = STORE(sum / cnt);                           \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_POOL_ADAPTIVE)

ember_status ek_pool_adaptive_avg(ember_kernel_ctx *ctx, const ek_pool *p,
                                  const ember_tensor *in, ember_tensor *out) {
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, pool_adaptive, out->data, in->data, p);
    return EMBER_OK;
}
