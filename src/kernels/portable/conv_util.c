/*
 * conv_util.c — shared geometry and loops of the convolution kernels: float
 * convolutions as matrix products (ek_gemm over x or im2col tiles in
 * scratch), a direct loop for the rest, and the transposed loop.
 */
#include "conv_util.h"

#include <string.h>

#define DEF_CONV(SFX, T, CT, LOAD, STORE)                                                          \
    static void conv_##SFX(T *out, const T *x, const T *wt, const T *bias, const ek_conv_geom *g,  \
                           const ek_conv_strides *st) {                                            \
        const int64_t icg = g->cin / g->groups, ocg = g->cout / g->groups;                         \
        const int64_t *xs = st->x, *ws = st->w, *os = st->out;                                     \
        for (int64_t n = 0; n < g->n; n++) {                                                       \
            for (int64_t oc = 0; oc < g->cout; oc++) {                                             \
                const int64_t grp = oc / ocg;                                                      \
                T *op = out + n * os[0] + oc * os[1]; /* (OH, OW) */                               \
                for (int64_t oy = 0; oy < g->oh; oy++) {                                           \
                    for (int64_t ox = 0; ox < g->ow; ox++) {                                       \
                        CT acc = bias != NULL ? LOAD(bias[oc]) : (CT)0;                            \
                        for (int64_t ic = 0; ic < icg; ic++) {                                     \
                            const int64_t c = grp * icg + ic;                                      \
                            const T *xp = x + n * xs[0] + c * xs[1]; /* (H, W) */                  \
                            /* (KH, KW) filter connecting input channel c and oc */                \
                            const T *wp = g->transposed                                            \
                                              ? wt + c * ws[0] + (oc - grp * ocg) * ws[1]          \
                                              : wt + oc * ws[0] + ic * ws[1];                      \
                            for (int64_t ky = 0; ky < g->kh; ky++) {                               \
                                int64_t iy;                                                        \
                                if (!g->transposed) {                                              \
                                    iy = oy * g->sh - g->ph + ky * g->dh;                          \
                                } else { /* oy = iy * sh - ph + ky * dh */                         \
                                    int64_t t = oy + g->ph - ky * g->dh;                           \
                                    if (t < 0 || t % g->sh != 0) continue;                         \
                                    iy = t / g->sh;                                                \
                                }                                                                  \
                                if (iy < 0 || iy >= g->h) continue;                                \
                                for (int64_t kx = 0; kx < g->kw; kx++) {                           \
                                    int64_t ix;                                                    \
                                    if (!g->transposed) {                                          \
                                        ix = ox * g->sw - g->pw + kx * g->dw;                      \
                                    } else {                                                       \
                                        int64_t t = ox + g->pw - kx * g->dw;                       \
                                        if (t < 0 || t % g->sw != 0) continue;                     \
                                        ix = t / g->sw;                                            \
                                    }                                                              \
                                    if (ix < 0 || ix >= g->w) continue;                            \
                                    acc += LOAD(xp[iy * xs[2] + ix * xs[3]]) *                     \
                                           LOAD(wp[ky * ws[2] + kx * ws[3]]);                      \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                        op[oy * os[2] + ox * os[3]] = STORE(acc);                                  \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* Integer convolutions accumulate in uint64_t: wrapping, like PyTorch's int64
 * arithmetic, and free of signed-overflow undefined behaviour. */
#define CONV_I2U(x) ((uint64_t)(int64_t)(x))
#define CONV_U2U8(v) ((uint8_t)(int64_t)(v))
#define CONV_U2I8(v) ((int8_t)(int64_t)(v))
#define CONV_U2I16(v) ((int16_t)(int64_t)(v))
#define CONV_U2I32(v) ((int32_t)(int64_t)(v))
#define CONV_U2I64(v) ((int64_t)(v))
#define CONV_FOR_EACH_INT(X)                                                                       \
    X(u8, uint8_t, uint64_t, CONV_I2U, CONV_U2U8)                                                  \
    X(i8, int8_t, uint64_t, CONV_I2U, CONV_U2I8)                                                   \
    X(i16, int16_t, uint64_t, CONV_I2U, CONV_U2I16)                                                \
    X(i32, int32_t, uint64_t, CONV_I2U, CONV_U2I32)                                                \
    X(i64, int64_t, uint64_t, CONV_I2U, CONV_U2I64)

EK_FOR_EACH_FLOAT(DEF_CONV)
CONV_FOR_EACH_INT(DEF_CONV)

/* Output columns accumulated at once in the direct (not transposed) loop. */
#define EK_CONV_COLS 256

/*
 * The direct convolution with the output column innermost: for each output
 * row block, every filter tap (ic, ky, kx) adds w * x[iy][ox*sw - pw + kx*dw]
 * over the block's columns, a strided (for sw == 1 and a contiguous row,
 * unit-stride) loop the compiler vectorizes. Accumulates in the compute type.
 * Runs what conv_gemm below does not: integers, layouts other than the
 * default for weight or out, and float convolutions without scratch.
 */
#define DEF_CONV_DIRECT(SFX, T, CT, LOAD, STORE)                                                   \
    static void conv_direct_##SFX(T *out, const T *x, const T *wt, const T *bias,                  \
                                  const ek_conv_geom *g, const ek_conv_strides *st) {              \
        const int64_t icg = g->cin / g->groups, ocg = g->cout / g->groups;                         \
        const int64_t *xs = st->x, *ws = st->w, *os = st->out;                                     \
        CT acc[EK_CONV_COLS];                                                                      \
        for (int64_t n = 0; n < g->n; n++) {                                                       \
            for (int64_t oc = 0; oc < g->cout; oc++) {                                             \
                const int64_t grp = oc / ocg;                                                      \
                T *op = out + n * os[0] + oc * os[1]; /* (OH, OW) */                               \
                const CT b = bias != NULL ? LOAD(bias[oc]) : (CT)0;                                \
                for (int64_t oy = 0; oy < g->oh; oy++) {                                           \
                    for (int64_t ox0 = 0; ox0 < g->ow; ox0 += EK_CONV_COLS) {                      \
                        const int64_t bn = g->ow - ox0 < EK_CONV_COLS ? g->ow - ox0 : EK_CONV_COLS; \
                        for (int64_t j = 0; j < bn; j++) acc[j] = b;                               \
                        for (int64_t ic = 0; ic < icg; ic++) {                                     \
                            const int64_t c = grp * icg + ic;                                      \
                            const T *xp = x + n * xs[0] + c * xs[1]; /* (H, W) */                  \
                            const T *wp = wt + oc * ws[0] + ic * ws[1]; /* (KH, KW) */             \
                            for (int64_t ky = 0; ky < g->kh; ky++) {                               \
                                const int64_t iy = oy * g->sh - g->ph + ky * g->dh;                \
                                if (iy < 0 || iy >= g->h) continue;                                \
                                const T *xrow = xp + iy * xs[2];                                   \
                                for (int64_t kx = 0; kx < g->kw; kx++) {                           \
                                    const CT wv = LOAD(wp[ky * ws[2] + kx * ws[3]]);               \
                                    /* columns j of the block with 0 <= ix < w, where              \
                                     * ix = (ox0 + j) * sw - pw + kx * dw */                       \
                                    const int64_t base = ox0 * g->sw - g->pw + kx * g->dw;         \
                                    int64_t lo = base >= 0 ? 0 : (-base + g->sw - 1) / g->sw;      \
                                    int64_t hi = base >= g->w ? 0 : (g->w - base + g->sw - 1) / g->sw; \
                                    if (hi > bn) hi = bn;                                          \
                                    if (lo >= hi) continue;                                        \
                                    const int64_t step = g->sw * xs[3], cnt = hi - lo;             \
                                    /* input of column lo: a pointer inside the row */             \
                                    const T *xj = xrow + (base + lo * g->sw) * xs[3];              \
                                    CT *aj = acc + lo;                                             \
                                    if (step == 1) /* unit stride: vectorizes */                   \
                                        for (int64_t j = 0; j < cnt; j++)                          \
                                            aj[j] += wv * LOAD(xj[j]);                             \
                                    else                                                           \
                                        for (int64_t j = 0; j < cnt; j++)                          \
                                            aj[j] += wv * LOAD(xj[j * step]);                      \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                        for (int64_t j = 0; j < bn; j++) op[oy * os[2] + (ox0 + j) * os[3]] = STORE(acc[j]); \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_CONV_DIRECT)
CONV_FOR_EACH_INT(DEF_CONV_DIRECT)

/*
 * Float convolutions (not transposed) as matrix products, one per image n
 * and group: with K = C_in / groups * KH * KW,
 *
 *   out[n, group] (C_out / groups, OH * OW) = w[group] (C_out / groups, K) @ col (K, OH * OW)
 *
 * where row (ic, ky, kx) of col holds x[n, c, oy * sh - ph + ky * dh,
 * ox * sw - pw + kx * dw] for output position (oy, ox), or 0 in the padding
 * (im2col). ek_gemm does the products in register tiles. A 1x1 convolution
 * with stride 1 and no padding over an input whose (H, W) planes are
 * contiguous needs no col: it is x[n] itself, (C_in, H * W). Otherwise col
 * is built in scratch for a tile of output positions at a time.
 *
 * Needs the weight's (C_in / groups, KH, KW) rows and out's (OH, OW) planes
 * contiguous (the default dim order; not channels last) so that both are
 * plain row-major matrices; conv_gemm_fits says so.
 */

/* Largest col tile, in bytes: it and a panel of the weight stay in L2. */
#define EK_CONV_COL_BYTES ((size_t)128 * 1024)
/* Output positions per col tile are a multiple of this (ek_gemm's column tile). */
#define EK_CONV_COL_ALIGN 32

static bool conv_gemm_fits(int dtype, const ek_conv_geom *g, const ek_conv_strides *st) {
    const int64_t *ws = st->w, *os = st->out;
    const int64_t icg = g->cin / g->groups;
    if (g->transposed || !ek_is_float(dtype)) return false;
    /* weight (oc, ic, ky, kx) at oc * ws[0] + (ic * KH + ky) * KW + kx */
    if (g->kw != 1 && ws[3] != 1) return false;
    if (g->kh != 1 && ws[2] != g->kw) return false;
    if (icg != 1 && ws[1] != g->kh * g->kw) return false;
    /* out (n, oc, oy, ox) at n * os[0] + oc * os[1] + oy * OW + ox */
    if (g->ow != 1 && os[3] != 1) return false;
    if (g->oh != 1 && os[2] != g->ow) return false;
    return true;
}

/* Copies n elements of es bytes, src stride sstride (elements), to contiguous
 * dst. Fixed-size memcpy moves one element without reading it as another type. */
static void col_copy(char *dst, const char *src, int64_t sstride, int64_t n, size_t es) {
    if (sstride == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    const int64_t sb = sstride * (int64_t)es;
    switch (es) {
    case 2:
        for (int64_t j = 0; j < n; j++) memcpy(dst + j * 2, src + j * sb, 2);
        break;
    case 4:
        for (int64_t j = 0; j < n; j++) memcpy(dst + j * 4, src + j * sb, 4);
        break;
    default:
        for (int64_t j = 0; j < n; j++) memcpy(dst + j * 8, src + j * sb, 8);
        break;
    }
}

/*
 * Fills col (K, tn), row stride tn, for output positions t0 .. t0 + tn of
 * image n, group grp. Zero bits are +0.0 in every float dtype.
 */
static void col_fill(char *col, const char *x, size_t es, const ek_conv_geom *g,
                     const int64_t *xs, int64_t n, int64_t grp, int64_t t0, int64_t tn) {
    const int64_t icg = g->cin / g->groups;
    for (int64_t ic = 0; ic < icg; ic++) {
        const char *xp = x + (n * xs[0] + (grp * icg + ic) * xs[1]) * (int64_t)es; /* (H, W) */
        for (int64_t ky = 0; ky < g->kh; ky++) {
            for (int64_t kx = 0; kx < g->kw; kx++) {
                char *dst = col + ((ic * g->kh + ky) * g->kw + kx) * tn * (int64_t)es; /* (tn) */
                int64_t t = t0;
                while (t < t0 + tn) {
                    /* one output row's run of positions: (oy, ox .. ox + seg) */
                    const int64_t oy = t / g->ow, ox = t % g->ow;
                    const int64_t seg = g->ow - ox < t0 + tn - t ? g->ow - ox : t0 + tn - t;
                    char *d = dst + (t - t0) * (int64_t)es;
                    const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                    if (iy < 0 || iy >= g->h) {
                        memset(d, 0, (size_t)seg * es);
                    } else {
                        /* ix = (ox + j) * sw + base is inside [0, w) for j in [lo, hi) */
                        const int64_t base = ox * g->sw - g->pw + kx * g->dw;
                        int64_t lo = base >= 0 ? 0 : (-base + g->sw - 1) / g->sw;
                        int64_t hi = base >= g->w ? 0 : (g->w - base + g->sw - 1) / g->sw;
                        if (lo > seg) lo = seg;
                        if (hi > seg) hi = seg;
                        if (hi < lo) hi = lo;
                        memset(d, 0, (size_t)lo * es);
                        if (hi > lo) /* (the source is formed only when it is inside x) */
                            col_copy(d + lo * (int64_t)es,
                                     xp + (iy * xs[2] + (base + lo * g->sw) * xs[3]) * (int64_t)es,
                                     g->sw * xs[3], hi - lo, es);
                        memset(d + hi * (int64_t)es, 0, (size_t)(seg - hi) * es);
                    }
                    t += seg;
                }
            }
        }
    }
}

/*
 * The convolution through ek_gemm when conv_gemm_fits. Returns false, having
 * written nothing, when it needs a col tile and scratch has no room for one.
 */
static bool conv_gemm(ember_kernel_ctx *ctx, int dtype, void *out, const void *x, const void *wt,
                      const void *bias, const ek_conv_geom *g, const ek_conv_strides *st) {
    const int64_t *xs = st->x, *ws = st->w, *os = st->out;
    const size_t es = ember_dtype_size(dtype);
    const int64_t icg = g->cin / g->groups, ocg = g->cout / g->groups;
    const int64_t K = icg * g->kh * g->kw, npos = g->oh * g->ow;
    /* x[n] itself is col: 1x1, stride 1, no padding, contiguous (H, W) planes */
    const bool direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 &&
                        g->pw == 0 && (g->w == 1 || xs[3] == 1) && (g->h == 1 || xs[2] == g->w);
    char *col = NULL;
    int64_t tile = npos;
    if (!direct) {
        /* the widest tile (a multiple of EK_CONV_COL_ALIGN positions, or all
         * of them) whose col fits EK_CONV_COL_BYTES and the scratch left */
        size_t row_bytes; /* one column of col: K elements */
        if (ember_mul_overflow((size_t)K, es, &row_bytes)) return false;
        int64_t fit = (int64_t)(EK_CONV_COL_BYTES / row_bytes);
        fit -= fit % EK_CONV_COL_ALIGN;
        if (fit < EK_CONV_COL_ALIGN) fit = EK_CONV_COL_ALIGN;
        if (tile > fit) tile = fit;
        while (col == NULL) {
            size_t bytes;
            if (ember_mul_overflow(row_bytes, (size_t)tile, &bytes)) return false;
            col = ember_kernel_scratch(ctx, bytes, 64);
            if (col != NULL) break;
            if (tile <= EK_CONV_COL_ALIGN) return false;
            tile /= 2;
            tile -= tile % EK_CONV_COL_ALIGN;
            if (tile < EK_CONV_COL_ALIGN) tile = EK_CONV_COL_ALIGN;
        }
    }
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const int64_t oc0 = grp * ocg;
            const char *a = (const char *)wt + oc0 * ws[0] * (int64_t)es; /* (ocg, K) */
            char *o = (char *)out + (n * os[0] + oc0 * os[1]) * (int64_t)es;  /* (ocg, npos) */
            ek_mm_bias mb = {NULL, 1, 0, 1.0};
            if (bias != NULL) mb.data = (const char *)bias + oc0 * (int64_t)es;
            const ek_mm_bias *pb = bias != NULL ? &mb : NULL;
            if (direct) {
                const char *b = (const char *)x + (n * xs[0] + grp * icg * xs[1]) * (int64_t)es;
                ek_gemm(dtype, o, os[1], a, ws[0], b, xs[1], ocg, K, npos, 1.0, pb);
                continue;
            }
            for (int64_t t0 = 0; t0 < npos; t0 += tile) {
                const int64_t tn = npos - t0 < tile ? npos - t0 : tile;
                col_fill(col, (const char *)x, es, g, xs, n, grp, t0, tn);
                ek_gemm(dtype, o + t0 * (int64_t)es, os[1], a, ws[0], col, tn, ocg, K, tn, 1.0,
                        pb);
            }
        }
    }
    return true;
}

/* conv_<SFX> or conv_direct_<SFX> by dtype, floats and integers. */
#define CONV_DISPATCH(ctx, dtype, NAME, ...)                                                       \
    do {                                                                                           \
        switch (dtype) {                                                                           \
        case EMBER_UINT8: NAME##_u8(__VA_ARGS__); break;                                           \
        case EMBER_INT8: NAME##_i8(__VA_ARGS__); break;                                            \
        case EMBER_INT16: NAME##_i16(__VA_ARGS__); break;                                          \
        case EMBER_INT32: NAME##_i32(__VA_ARGS__); break;                                          \
        case EMBER_INT64: NAME##_i64(__VA_ARGS__); break;                                          \
        default: EK_FLOAT_SWITCH(ctx, dtype, NAME, __VA_ARGS__);                                   \
        }                                                                                          \
    } while (0)

/* Row-major strides of a (d0, d1, d2, d3) tensor. */
static void contiguous4(int64_t *st, int64_t d1, int64_t d2, int64_t d3) {
    st[3] = 1;
    st[2] = d3;
    st[1] = d2 * d3;
    st[0] = d1 * d2 * d3;
}

ember_status ek_conv_run_strided(ember_kernel_ctx *ctx, int dtype, void *out, const void *x,
                                 const void *wt, const void *bias, const ek_conv_geom *g,
                                 const ek_conv_strides *st) {
    if (g->transposed)
        CONV_DISPATCH(ctx, dtype, conv, out, x, wt, bias, g, st);
    else if (!conv_gemm_fits(dtype, g, st) || !conv_gemm(ctx, dtype, out, x, wt, bias, g, st))
        CONV_DISPATCH(ctx, dtype, conv_direct, out, x, wt, bias, g, st);
    return EMBER_OK;
}

ember_status ek_conv_run(ember_kernel_ctx *ctx, int dtype, void *out, const void *x,
                         const void *wt, const void *bias, const ek_conv_geom *g) {
    ek_conv_strides st;
    contiguous4(st.x, g->cin, g->h, g->w);
    contiguous4(st.out, g->cout, g->oh, g->ow);
    if (g->transposed)
        contiguous4(st.w, g->cout / g->groups, g->kh, g->kw);
    else
        contiguous4(st.w, g->cin / g->groups, g->kh, g->kw);
    return ek_conv_run_strided(ctx, dtype, out, x, wt, bias, g, &st);
}

void ek_conv_strides_of(const ek_conv_geom *g, const ember_tensor *t, int64_t st[4]) {
    /* (N, C, [H,] W): a 1-d tensor's missing height has size 1, stride unused */
    st[0] = t->strides[0];
    st[1] = t->strides[1];
    st[2] = g->nsp == 2 ? t->strides[2] : 0;
    st[3] = t->strides[t->dim - 1];
}

/* Bounds parameters so that every index computation fits in int64. */
#define CONV_PARAM_MAX ((int64_t)1 << 30)

/* Reads a per-spatial-dim list: one value for all dims, or one per dim. */
static ember_status spatial_param(ember_kernel_ctx *ctx, const int64_t *items, size_t len,
                                  size_t nsp, int64_t lo, const char *what, int64_t *out) {
    if (len != 1 && len != nsp)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "convolution: %s has %zu values for %zu spatial dims", what, len,
                                 nsp);
    for (size_t i = 0; i < nsp; i++) {
        int64_t v = items[len == 1 ? 0 : i];
        if (v < lo || v > CONV_PARAM_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "convolution: %s value %lld out of range", what, (long long)v);
        out[i] = v;
    }
    return EMBER_OK;
}

ember_status ek_conv_geom_init(ember_kernel_ctx *ctx, ek_conv_geom *g, const ember_tensor *in,
                               const ember_tensor *wt, const int64_t *l_stride, size_t n_stride,
                               const int64_t *l_pad, size_t n_pad, const int64_t *l_dil,
                               size_t n_dil, bool transposed, const int64_t *l_opad,
                               size_t n_opad, int64_t groups) {
    if ((in->dim != 3 && in->dim != 4) || wt->dim != in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "convolution: only batched 1-d and 2-d inputs are supported "
                                 "(input rank %u, weight rank %u)",
                                 (unsigned)in->dim, (unsigned)wt->dim);
    size_t nsp = in->dim - 2;
    int64_t stride[2], pad[2], dil[2], opad[2] = {0, 0};
    EK_TRY(spatial_param(ctx, l_stride, n_stride, nsp, 1, "stride", stride));
    EK_TRY(spatial_param(ctx, l_pad, n_pad, nsp, 0, "padding", pad));
    EK_TRY(spatial_param(ctx, l_dil, n_dil, nsp, 1, "dilation", dil));
    if (transposed) EK_TRY(spatial_param(ctx, l_opad, n_opad, nsp, 0, "output_padding", opad));
    if (groups < 1 || groups > CONV_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "convolution: groups %lld invalid", (long long)groups);

    /* 1-d runs as 2-d with a height of 1 */
    g->n = in->sizes[0];
    g->cin = in->sizes[1];
    g->h = nsp == 2 ? in->sizes[2] : 1;
    g->w = in->sizes[in->dim - 1];
    g->kh = nsp == 2 ? wt->sizes[2] : 1;
    g->kw = wt->sizes[wt->dim - 1];
    g->sh = nsp == 2 ? stride[0] : 1;
    g->sw = stride[nsp - 1];
    g->ph = nsp == 2 ? pad[0] : 0;
    g->pw = pad[nsp - 1];
    g->dh = nsp == 2 ? dil[0] : 1;
    g->dw = dil[nsp - 1];
    g->groups = groups;
    g->transposed = transposed;
    int64_t oph = nsp == 2 ? opad[0] : 0, opw = opad[nsp - 1];

    if (g->cin % groups != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "convolution: %lld input channels not divisible by %lld groups",
                                 (long long)g->cin, (long long)groups);
    if (!transposed) {
        g->cout = wt->sizes[0];
        if (wt->sizes[1] * groups != g->cin || g->cout % groups != 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "convolution: weight (%d, %d, ...) does not fit %lld input "
                                     "channels in %lld groups",
                                     (int)wt->sizes[0], (int)wt->sizes[1], (long long)g->cin,
                                     (long long)groups);
        int64_t eh = g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1;
        int64_t ew = g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1;
        if (g->kh < 1 || g->kw < 1 || eh < 0 || ew < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "convolution: kernel larger than padded input");
        g->oh = eh / g->sh + 1;
        g->ow = ew / g->sw + 1;
    } else {
        if (wt->sizes[0] != g->cin)
            return ember_kernel_fail(
                ctx, EMBER_ERR_SHAPE_MISMATCH,
                "convolution: transposed weight has %d input channels, input %lld",
                (int)wt->sizes[0], (long long)g->cin);
        g->cout = (int64_t)wt->sizes[1] * groups;
        if ((oph >= g->sh && oph >= g->dh) || (opw >= g->sw && opw >= g->dw))
            return ember_kernel_fail(
                ctx, EMBER_ERR_INVALID_ARGUMENT,
                "convolution: output_padding must be smaller than stride or dilation");
        g->oh = (g->h - 1) * g->sh - 2 * g->ph + g->dh * (g->kh - 1) + oph + 1;
        g->ow = (g->w - 1) * g->sw - 2 * g->pw + g->dw * (g->kw - 1) + opw + 1;
        if (g->kh < 1 || g->kw < 1 || g->oh < 0 || g->ow < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "convolution: transposed output size is negative");
    }
    g->nsp = nsp;
    g->out_shape[0] = g->n;
    g->out_shape[1] = g->cout;
    g->out_shape[2] = nsp == 2 ? g->oh : g->ow;
    g->out_shape[3] = g->ow;
    return EMBER_OK;
}
