/*
 * pool_util.c — shared geometry and loops of the pooling kernels.
 */
#include <math.h>
#include <stdio.h>

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

/* First tap of a window at or after 0: start + j * step for the least such j. */
static int64_t first_tap(int64_t start, int64_t step) {
    return start >= 0 ? start : start + ((-start + step - 1) / step) * step;
}

/* Window [start, end) of output cell o along spatial dim i, before clipping. */
#define WIN_START(p, i, o) ((o) * (p)->s[i] - (p)->p[i])

/* Element strides of one (D, H, W) volume of in, out and indices (0 for absent dims). */
typedef struct pool_strides {
    int64_t x[3], y[3], ind[3];
} pool_strides;

/* Clipped window of output cell (oz, oy, ox): s[i] <= index < e[i]; *padded is
 * the window's size clipped to the padded input, *inside to the input. */
static void avg_window(const ek_pool *p, int64_t oz, int64_t oy, int64_t ox, int64_t *s,
                       int64_t *e, int64_t *padded, int64_t *inside) {
    int64_t o[3] = {oz, oy, ox};
    *padded = *inside = 1;
    for (int i = 0; i < 3; i++) {
        s[i] = WIN_START(p, i, o[i]);
        e[i] = s[i] + p->k[i];
        if (e[i] > p->in[i] + p->p[i]) e[i] = p->in[i] + p->p[i];
        *padded *= e[i] - s[i];
        if (s[i] < 0) s[i] = 0;
        if (e[i] > p->in[i]) e[i] = p->in[i];
        *inside *= e[i] > s[i] ? e[i] - s[i] : 0;
    }
}

/* ACC is the sum type; DIV(sum, n) divides it (floats, or int64 truncating). */
#define DEF_POOL_AVG(SFX, T, ACC, LOAD, STORE, DIV)                                                \
    static void pool_avg_##SFX(T *yp, const T *xp, const ek_pool *p, const pool_strides *st,       \
                               bool include_pad, int64_t divisor) {                                \
        const int64_t *xs = st->x, *ys = st->y;                                                    \
        for (int64_t oz = 0; oz < p->out[0]; oz++)                                                 \
            for (int64_t oy = 0; oy < p->out[1]; oy++)                                             \
                for (int64_t ox = 0; ox < p->out[2]; ox++) {                                       \
                    int64_t s[3], e[3], padded, inside;                                            \
                    avg_window(p, oz, oy, ox, s, e, &padded, &inside);                             \
                    T *dst = &yp[oz * ys[0] + oy * ys[1] + ox * ys[2]];                            \
                    ACC sum = 0;                                                                   \
                    for (int64_t z = s[0]; z < e[0]; z++)                                          \
                        for (int64_t yy = s[1]; yy < e[1]; yy++)                                   \
                            for (int64_t xx = s[2]; xx < e[2]; xx++)                               \
                                sum += (ACC)LOAD(xp[z * xs[0] + yy * xs[1] + xx * xs[2]]);         \
                    if (inside == 0) {                                                             \
                        *dst = STORE(0);                                                           \
                        continue;                                                                  \
                    }                                                                              \
                    int64_t div = divisor != 0 ? divisor : include_pad ? padded : inside;          \
                    *dst = STORE(DIV(sum, div));                                                   \
                }                                                                                  \
    }

#define POOL_FDIV(sum, n) ((sum) / (n))
#define DEF_POOL_AVG_FLOAT(SFX, T, CT, LOAD, STORE) DEF_POOL_AVG(SFX, T, CT, LOAD, STORE, POOL_FDIV)
EK_FOR_EACH_FLOAT(DEF_POOL_AVG_FLOAT)

/* int64 sums wrap as in PyTorch (summed on uint64); division truncates, and
 * INT64_MIN / -1 wraps to INT64_MIN instead of trapping. */
static int64_t pool_idiv(uint64_t sum, int64_t n) {
    int64_t v = (int64_t)sum;
    return n == -1 ? (int64_t)(0u - sum) : v / n;
}
#define POOL_I64_STORE(x) ((int64_t)(x))
DEF_POOL_AVG(i64, int64_t, uint64_t, EK_IDENT, POOL_I64_STORE, pool_idiv)

/* CT is the compare type; LOWEST starts the running max (-inf for floats).
 * Indices are logical positions in the volume, (d * H + h) * W + w. */
#define DEF_POOL_MAX(SFX, T, CT, LOAD, STORE, LOWEST)                                              \
    static void pool_max_##SFX(T *yp, int64_t *ip, const T *xp, const ek_pool *p,                  \
                               const pool_strides *st) {                                           \
        const int64_t *xs = st->x, *ys = st->y, *is = st->ind;                                     \
        int64_t ih = p->in[1], iw = p->in[2];                                                      \
        for (int64_t oz = 0; oz < p->out[0]; oz++)                                                 \
            for (int64_t oy = 0; oy < p->out[1]; oy++)                                             \
                for (int64_t ox = 0; ox < p->out[2]; ox++) {                                       \
                    int64_t o[3] = {oz, oy, ox}, s[3], e[3];                                       \
                    for (int i = 0; i < 3; i++) {                                                  \
                        s[i] = WIN_START(p, i, o[i]);                                              \
                        e[i] = s[i] + (p->k[i] - 1) * p->dl[i] + 1;                                \
                        if (e[i] > p->in[i]) e[i] = p->in[i];                                      \
                        s[i] = first_tap(s[i], p->dl[i]);                                          \
                    }                                                                              \
                    CT best = LOWEST;                                                              \
                    int64_t best_i = (s[0] * ih + s[1]) * iw + s[2];                               \
                    for (int64_t z = s[0]; z < e[0]; z += p->dl[0])                                \
                        for (int64_t yy = s[1]; yy < e[1]; yy += p->dl[1])                         \
                            for (int64_t xx = s[2]; xx < e[2]; xx += p->dl[2]) {                   \
                                CT v = LOAD(xp[z * xs[0] + yy * xs[1] + xx * xs[2]]);              \
                                if (v > best || v != v) {                                          \
                                    best = v;                                                      \
                                    best_i = (z * ih + yy) * iw + xx;                              \
                                }                                                                  \
                            }                                                                      \
                    yp[oz * ys[0] + oy * ys[1] + ox * ys[2]] = STORE(best);                        \
                    ip[oz * is[0] + oy * is[1] + ox * is[2]] = best_i;                             \
                }                                                                                  \
    }

#define DEF_POOL_MAX_FLOAT(SFX, T, CT, LOAD, STORE) DEF_POOL_MAX(SFX, T, CT, LOAD, STORE, -INFINITY)
EK_FOR_EACH_FLOAT(DEF_POOL_MAX_FLOAT)
#define POOL_INT_STORE(x) (x)
DEF_POOL_MAX(u8, uint8_t, int64_t, EK_IDENT, POOL_INT_STORE, INT64_MIN)
DEF_POOL_MAX(i8, int8_t, int64_t, EK_IDENT, POOL_INT_STORE, INT64_MIN)
DEF_POOL_MAX(i16, int16_t, int64_t, EK_IDENT, POOL_INT_STORE, INT64_MIN)
DEF_POOL_MAX(i32, int32_t, int64_t, EK_IDENT, POOL_INT_STORE, INT64_MIN)
DEF_POOL_MAX(i64, int64_t, int64_t, EK_IDENT, POOL_INT_STORE, INT64_MIN)

#define DEF_POOL_ADAPTIVE(SFX, T, CT, LOAD, STORE)                                                 \
    static void pool_adaptive_##SFX(T *yp, const T *xp, const ek_pool *p,                          \
                                    const pool_strides *st) {                                      \
        const int64_t *xs = st->x, *ys = st->y;                                                    \
        const int64_t *in = p->in, *out = p->out;                                                  \
        for (int64_t oz = 0; oz < out[0]; oz++) {                                                  \
            int64_t zs = (oz * in[0]) / out[0], ze = ((oz + 1) * in[0] + out[0] - 1) / out[0];     \
            for (int64_t oy = 0; oy < out[1]; oy++) {                                              \
                int64_t ys0 = (oy * in[1]) / out[1];                                               \
                int64_t ye = ((oy + 1) * in[1] + out[1] - 1) / out[1];                             \
                for (int64_t ox = 0; ox < out[2]; ox++) {                                          \
                    int64_t xs0 = (ox * in[2]) / out[2];                                           \
                    int64_t xe = ((ox + 1) * in[2] + out[2] - 1) / out[2];                         \
                    CT sum = 0;                                                                    \
                    for (int64_t z = zs; z < ze; z++)                                              \
                        for (int64_t yy = ys0; yy < ye; yy++)                                      \
                            for (int64_t xx = xs0; xx < xe; xx++)                                  \
                                sum += LOAD(xp[z * xs[0] + yy * xs[1] + xx * xs[2]]);              \
                    CT cnt = (CT)((ze - zs) * (ye - ys0) * (xe - xs0));                            \
                    yp[oz * ys[0] + oy * ys[1] + ox * ys[2]] = STORE(sum / cnt);                   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_POOL_ADAPTIVE)

/* One pooling call: the tensors (indices may be NULL) and their spatial strides. */
typedef struct pool_job {
    const ek_pool *p;
    const ember_tensor *in;
    ember_tensor *out, *indices;
    pool_strides st;
} pool_job;

static void job_init(pool_job *j, const ek_pool *p, const ember_tensor *in, ember_tensor *out,
                     ember_tensor *indices) {
    j->p = p;
    j->in = in;
    j->out = out;
    j->indices = indices;
    size_t lead = in->dim - p->nsp;
    for (size_t i = 0; i < 3; i++) {
        bool present = i >= 3 - p->nsp;
        size_t d = present ? lead + i - (3 - p->nsp) : 0;
        j->st.x[i] = present ? in->strides[d] : 0;
        j->st.y[i] = present ? out->strides[d] : 0;
        j->st.ind[i] = present && indices != NULL ? indices->strides[d] : 0;
    }
}

/* Runs BODY once per plane (each index of the leading dims, row-major), with
 * OFF[0..2] the plane's element offsets in in, out and indices. Any dim order. */
#define POOL_FOR_EACH_PLANE(j, OFF, BODY)                                                          \
    do {                                                                                           \
        size_t lead_ = (j)->in->dim - (j)->p->nsp;                                                 \
        int64_t sz_[EMBER_MAX_DIM], st_[3][EMBER_MAX_DIM], pos_[EMBER_MAX_DIM] = {0};              \
        int64_t OFF[3] = {0, 0, 0}; /* in, out, indices */                                         \
        for (size_t d_ = 0; d_ < lead_; d_++) {                                                    \
            sz_[d_] = (j)->in->sizes[d_];                                                          \
            st_[0][d_] = (j)->in->strides[d_];                                                     \
            st_[1][d_] = (j)->out->strides[d_];                                                    \
            st_[2][d_] = (j)->indices != NULL ? (j)->indices->strides[d_] : 0;                     \
        }                                                                                          \
        do {                                                                                       \
            BODY;                                                                                  \
        } while (ek_advance(pos_, sz_, lead_, 3, (const int64_t(*)[EMBER_MAX_DIM])st_, OFF));     \
    } while (0)

ember_status ek_pool_avg(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, bool count_include_pad, int64_t divisor) {
    if (out->numel == 0) return EMBER_OK;
    pool_job j;
    job_init(&j, p, in, out, NULL);
    switch (in->dtype) {
#define AVG_CASE(DT, SFX, T)                                                                       \
    case DT:                                                                                       \
        POOL_FOR_EACH_PLANE(&j, off,                                                               \
                            pool_avg_##SFX((T *)out->data + off[1], (const T *)in->data + off[0],  \
                                           p, &j.st, count_include_pad, divisor));                 \
        return EMBER_OK;
        AVG_CASE(EMBER_FLOAT32, f32, float)
        AVG_CASE(EMBER_FLOAT64, f64, double)
        AVG_CASE(EMBER_FLOAT16, f16, uint16_t)
        AVG_CASE(EMBER_BFLOAT16, bf16, uint16_t)
        AVG_CASE(EMBER_INT64, i64, int64_t)
#undef AVG_CASE
    default:
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "avg pool: dtype %s not supported (float types and int64)",
                                 ember_dtype_name(in->dtype));
    }
}

ember_status ek_pool_max(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, ember_tensor *indices) {
    if (out->numel == 0) return EMBER_OK;
    pool_job j;
    job_init(&j, p, in, out, indices);
    switch (in->dtype) {
#define MAX_CASE(DT, SFX, T)                                                                       \
    case DT:                                                                                       \
        POOL_FOR_EACH_PLANE(&j, off,                                                               \
                            pool_max_##SFX((T *)out->data + off[1],                                \
                                           (int64_t *)indices->data + off[2],                      \
                                           (const T *)in->data + off[0], p, &j.st));               \
        return EMBER_OK;
        MAX_CASE(EMBER_FLOAT32, f32, float)
        MAX_CASE(EMBER_FLOAT64, f64, double)
        MAX_CASE(EMBER_FLOAT16, f16, uint16_t)
        MAX_CASE(EMBER_BFLOAT16, bf16, uint16_t)
        MAX_CASE(EMBER_UINT8, u8, uint8_t)
        MAX_CASE(EMBER_INT8, i8, int8_t)
        MAX_CASE(EMBER_INT16, i16, int16_t)
        MAX_CASE(EMBER_INT32, i32, int32_t)
        MAX_CASE(EMBER_INT64, i64, int64_t)
#undef MAX_CASE
    default:
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "max pool: dtype %s not supported (float and integer types)",
                                 ember_dtype_name(in->dtype));
    }
}

ember_status ek_pool_adaptive_avg(ember_kernel_ctx *ctx, const ek_pool *p,
                                  const ember_tensor *in, ember_tensor *out) {
    if (out->numel == 0) return EMBER_OK;
    pool_job j;
    job_init(&j, p, in, out, NULL);
    switch (in->dtype) {
#define ADAPTIVE_CASE(DT, SFX, T)                                                                  \
    case DT:                                                                                       \
        POOL_FOR_EACH_PLANE(&j, off,                                                               \
                            pool_adaptive_##SFX((T *)out->data + off[1],                           \
                                                (const T *)in->data + off[0], p, &j.st));          \
        return EMBER_OK;
        ADAPTIVE_CASE(EMBER_FLOAT32, f32, float)
        ADAPTIVE_CASE(EMBER_FLOAT64, f64, double)
        ADAPTIVE_CASE(EMBER_FLOAT16, f16, uint16_t)
        ADAPTIVE_CASE(EMBER_BFLOAT16, bf16, uint16_t)
#undef ADAPTIVE_CASE
    default:
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "adaptive avg pool: dtype %s not supported (float types only)",
                                 ember_dtype_name(in->dtype));
    }
}

ember_status ek_pool_avg_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t nsp,
                            bool has_divisor, const char *name) {
    ember_tensor *in, *out;
    const int64_t *ks, *st, *pd;
    size_t nks, nst, npd;
    bool ceil_mode, include_pad, has_div = false;
    int64_t divisor = 0;
    EK_TRY(ek_check_nargs(ctx, nargs, has_divisor ? 9 : 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_bool(ctx, args, 4, &ceil_mode));
    EK_TRY(ek_arg_bool(ctx, args, 5, &include_pad));
    if (has_divisor) EK_TRY(ek_arg_opt_int(ctx, args, 6, &divisor, &has_div));
    EK_TRY(ek_arg_out(ctx, args, has_divisor ? 7 : 6, &out));
    if (!has_div)
        divisor = 0;
    else if (divisor == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "%s: divisor must not be zero",
                                 name);
    if (!ek_is_float(in->dtype) && in->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: dtype %s not supported (float types and int64)", name,
                                 ember_dtype_name(in->dtype));
    ek_pool p;
    EK_TRY(ek_pool_init(ctx, &p, in, nsp, ks, nks, st, nst, pd, npd, NULL, 0, ceil_mode));
    char what[64];
    snprintf(what, sizeof what, "%s self and out", name);
    EK_TRY(ek_check_same_dtype(ctx, in, out, what));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    return ek_pool_avg(ctx, &p, in, out, include_pad, divisor);
}

ember_status ek_pool_max_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t nsp,
                            const char *name) {
    ember_tensor *in, *out, *indices;
    const int64_t *ks, *st, *pd, *dl;
    size_t nks, nst, npd, ndl;
    bool ceil_mode;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &dl, &ndl));
    EK_TRY(ek_arg_bool(ctx, args, 5, &ceil_mode));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    EK_TRY(ek_arg_out(ctx, args, 7, &indices));
    if (!ek_is_float(in->dtype) && !ek_is_int(in->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: dtype %s not supported", name,
                                 ember_dtype_name(in->dtype));
    ek_pool p;
    EK_TRY(ek_pool_init(ctx, &p, in, nsp, ks, nks, st, nst, pd, npd, dl, ndl, ceil_mode));
    char what[64];
    snprintf(what, sizeof what, "%s self and out", name);
    EK_TRY(ek_check_same_dtype(ctx, in, out, what));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: indices must be int64", name);
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_no_alias(ctx, indices, in));
    EK_TRY(ek_check_no_alias(ctx, indices, out));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    EK_TRY(ek_resize_out(ctx, indices, p.out_shape, p.out_dim));
    return ek_pool_max(ctx, &p, in, out, indices);
}
