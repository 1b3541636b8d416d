/*
 * conv_util.c — shared geometry and loops of the convolution kernels: float
 * convolutions as matrix products (ek_gemm over x or im2col tiles in
 * scratch), a direct loop for the rest, and the transposed loop. Every
 * convolution runs as 3-d (1-d and 2-d with unit depth and height), so one
 * set of loops serves all ranks.
 */
#include "conv_util.h"

#include <string.h>

/*
 * Input index of output index o through filter tap k along one spatial dim,
 * or -1 when it falls outside [0, size). Plain: i = o * s - p + k * dl.
 * Transposed (the scatter read backwards): o = i * s - p + k * dl, so i
 * exists only where o + p - k * dl is a non-negative multiple of s.
 */
static inline int64_t conv_src(bool transposed, int64_t o, int64_t k, int64_t s, int64_t p,
                               int64_t dl, int64_t size) {
    int64_t i;
    if (!transposed) {
        i = o * s - p + k * dl;
    } else {
        const int64_t t = o + p - k * dl;
        if (t < 0 || t % s != 0) return -1;
        i = t / s;
    }
    return i >= 0 && i < size ? i : -1;
}

/*
 * The plain loop, one output element at a time: transposed convolutions.
 * For output (oz, oy, ox), every tap (kz, ky, kx) that lands on an input
 * position (iz, iy, ix) adds that position over the group's input channels;
 * the taps' index arithmetic (divisions, for the transposed direction) is
 * done once per tap, not once per channel.
 */
#define DEF_CONV(SFX, T, CT, LOAD, STORE)                                                          \
    static void conv_##SFX(T *out, const T *x, const T *wt, const T *bias, const ek_conv_geom *g,  \
                           const ek_conv_strides *st) {                                            \
        const int64_t icg = g->cin / g->groups, ocg = g->cout / g->groups;                         \
        const int64_t *xs = st->x, *ws = st->w, *os = st->out;                                     \
        const bool tr = g->transposed;                                                             \
        for (int64_t n = 0; n < g->n; n++) {                                                       \
            for (int64_t oc = 0; oc < g->cout; oc++) {                                             \
                const int64_t grp = oc / ocg;                                                      \
                T *op = out + n * os[0] + oc * os[1];                  /* (OD, OH, OW) */          \
                const T *xg = x + n * xs[0] + grp * icg * xs[1];       /* (icg, D, H, W) */        \
                /* (icg, KD, KH, KW) filters connecting the group's input channels and oc */       \
                const T *wg = tr ? wt + grp * icg * ws[0] + (oc - grp * ocg) * ws[1]               \
                                 : wt + oc * ws[0];                                                \
                const int64_t wcs = tr ? ws[0] : ws[1]; /* weight stride between them */           \
                for (int64_t oz = 0; oz < g->od; oz++) {                                           \
                    for (int64_t oy = 0; oy < g->oh; oy++) {                                       \
                        for (int64_t ox = 0; ox < g->ow; ox++) {                                   \
                            CT acc = bias != NULL ? LOAD(bias[oc]) : (CT)0;                        \
                            for (int64_t kz = 0; kz < g->kd; kz++) {                               \
                                const int64_t iz =                                                 \
                                    conv_src(tr, oz, kz, g->sd, g->pd, g->dd, g->d);               \
                                if (iz < 0) continue;                                              \
                                for (int64_t ky = 0; ky < g->kh; ky++) {                           \
                                    const int64_t iy =                                             \
                                        conv_src(tr, oy, ky, g->sh, g->ph, g->dh, g->h);           \
                                    if (iy < 0) continue;                                          \
                                    for (int64_t kx = 0; kx < g->kw; kx++) {                       \
                                        const int64_t ix =                                         \
                                            conv_src(tr, ox, kx, g->sw, g->pw, g->dw, g->w);       \
                                        if (ix < 0) continue;                                      \
                                        const T *xp = xg + iz * xs[2] + iy * xs[3] + ix * xs[4];   \
                                        const T *wp = wg + kz * ws[2] + ky * ws[3] + kx * ws[4];   \
                                        for (int64_t ic = 0; ic < icg; ic++)                       \
                                            acc += LOAD(xp[ic * xs[1]]) * LOAD(wp[ic * wcs]);      \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                            op[oz * os[2] + oy * os[3] + ox * os[4]] = STORE(acc);                 \
                        }                                                                          \
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
 * row block, every filter tap (ic, kz, ky, kx) adds
 * w * x[iz][iy][ox*sw - pw + kx*dw] over the block's columns, a strided (for
 * sw == 1 and a contiguous row, unit-stride) loop the compiler vectorizes.
 * Accumulates in the compute type. Runs what conv_gemm below does not:
 * integers, layouts other than the default for weight or out, and float
 * convolutions without scratch.
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
                T *op = out + n * os[0] + oc * os[1]; /* (OD, OH, OW) */                           \
                const CT b = bias != NULL ? LOAD(bias[oc]) : (CT)0;                                \
                for (int64_t oz = 0; oz < g->od; oz++) {                                           \
                    for (int64_t oy = 0; oy < g->oh; oy++) {                                       \
                        T *orow = op + oz * os[2] + oy * os[3]; /* (OW) */                         \
                        for (int64_t ox0 = 0; ox0 < g->ow; ox0 += EK_CONV_COLS) {                  \
                            const int64_t bn =                                                     \
                                g->ow - ox0 < EK_CONV_COLS ? g->ow - ox0 : EK_CONV_COLS;           \
                            for (int64_t j = 0; j < bn; j++) acc[j] = b;                           \
                            for (int64_t ic = 0; ic < icg; ic++) {                                 \
                                const int64_t c = grp * icg + ic;                                  \
                                const T *xp = x + n * xs[0] + c * xs[1]; /* (D, H, W) */           \
                                const T *wp = wt + oc * ws[0] + ic * ws[1]; /* (KD, KH, KW) */     \
                                for (int64_t kz = 0; kz < g->kd; kz++) {                           \
                                    const int64_t iz = oz * g->sd - g->pd + kz * g->dd;            \
                                    if (iz < 0 || iz >= g->d) continue;                            \
                                    for (int64_t ky = 0; ky < g->kh; ky++) {                       \
                                        const int64_t iy = oy * g->sh - g->ph + ky * g->dh;        \
                                        if (iy < 0 || iy >= g->h) continue;                        \
                                        const T *xrow = xp + iz * xs[2] + iy * xs[3]; /* (W) */    \
                                        const T *wrow = wp + kz * ws[2] + ky * ws[3]; /* (KW) */   \
                                        for (int64_t kx = 0; kx < g->kw; kx++) {                   \
                                            const CT wv = LOAD(wrow[kx * ws[4]]);                  \
                                            /* columns j of the block with 0 <= ix < w,            \
                                             * where ix = (ox0 + j) * sw - pw + kx * dw */         \
                                            const int64_t base =                                   \
                                                ox0 * g->sw - g->pw + kx * g->dw;                  \
                                            int64_t lo =                                           \
                                                base >= 0 ? 0 : (-base + g->sw - 1) / g->sw;       \
                                            int64_t hi = base >= g->w                              \
                                                             ? 0                                   \
                                                             : (g->w - base + g->sw - 1) / g->sw;  \
                                            if (hi > bn) hi = bn;                                  \
                                            if (lo >= hi) continue;                                \
                                            const int64_t step = g->sw * xs[4], cnt = hi - lo;     \
                                            /* input of column lo: inside the row */               \
                                            const T *xj = xrow + (base + lo * g->sw) * xs[4];      \
                                            CT *aj = acc + lo;                                     \
                                            if (step == 1) /* unit stride: vectorizes */           \
                                                for (int64_t j = 0; j < cnt; j++)                  \
                                                    aj[j] += wv * LOAD(xj[j]);                     \
                                            else                                                   \
                                                for (int64_t j = 0; j < cnt; j++)                  \
                                                    aj[j] += wv * LOAD(xj[j * step]);              \
                                        }                                                          \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                            for (int64_t j = 0; j < bn; j++)                                       \
                                orow[(ox0 + j) * os[4]] = STORE(acc[j]);                           \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_CONV_DIRECT)
CONV_FOR_EACH_INT(DEF_CONV_DIRECT)

/*
 * Float convolutions (not transposed) as matrix products, one per image n
 * and group: with K = C_in / groups * KD * KH * KW and P = OD * OH * OW,
 *
 *   out[n, group] (C_out / groups, P) = w[group] (C_out / groups, K) @ col (K, P)
 *
 * where row (ic, kz, ky, kx) of col holds x[n, c, oz * sd - pd + kz * dd,
 * oy * sh - ph + ky * dh, ox * sw - pw + kx * dw] for output position
 * (oz, oy, ox), or 0 in the padding (im2col). ek_gemm does the products in
 * register tiles. A 1x1(x1) convolution with stride 1 and no padding over an
 * input whose (D, H, W) planes are contiguous needs no col: it is x[n]
 * itself, (C_in, D * H * W). Otherwise col is built in scratch for a tile of
 * output positions at a time.
 *
 * Needs the weight's (C_in / groups, KD, KH, KW) rows and out's (OD, OH, OW)
 * planes contiguous (the default dim order; not channels last) so that both
 * are plain row-major matrices; conv_gemm_fits says so.
 */

/* Largest col tile, in bytes: it and a panel of the weight stay in L2. */
#define EK_CONV_COL_BYTES ((size_t)128 * 1024)
/* Output positions per col tile are a multiple of this (ek_gemm's column tile). */
#define EK_CONV_COL_ALIGN 32

static bool conv_gemm_fits(int dtype, const ek_conv_geom *g, const ek_conv_strides *st) {
    const int64_t *ws = st->w, *os = st->out;
    const int64_t icg = g->cin / g->groups;
    if (g->transposed || !ek_is_float(dtype)) return false;
    /* weight (oc, ic, kz, ky, kx) at oc * ws[0] + ((ic * KD + kz) * KH + ky) * KW + kx */
    if (g->kw != 1 && ws[4] != 1) return false;
    if (g->kh != 1 && ws[3] != g->kw) return false;
    if (g->kd != 1 && ws[2] != g->kh * g->kw) return false;
    if (icg != 1 && ws[1] != g->kd * g->kh * g->kw) return false;
    /* out (n, oc, oz, oy, ox) at n * os[0] + oc * os[1] + (oz * OH + oy) * OW + ox */
    if (g->ow != 1 && os[4] != 1) return false;
    if (g->oh != 1 && os[3] != g->ow) return false;
    if (g->od != 1 && os[2] != g->oh * g->ow) return false;
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
    /* position t0 as (oz, oy, ox); each tap's fill advances from it run by run */
    const int64_t ox0 = t0 % g->ow, oy0 = t0 / g->ow % g->oh, oz0 = t0 / g->ow / g->oh;
    char *dst = col; /* row (ic, kz, ky, kx) of col: (tn) */
    for (int64_t ic = 0; ic < icg; ic++) {
        const char *xp = x + (n * xs[0] + (grp * icg + ic) * xs[1]) * (int64_t)es; /* (D, H, W) */
        /* taps (kz, ky, kx) in row-major order, kx fastest */
        for (int64_t kz = 0, ky = 0, kx = 0; kz < g->kd; dst += tn * (int64_t)es) {
            int64_t ox = ox0, oy = oy0, oz = oz0;
            int64_t t = t0;
            while (t < t0 + tn) {
                /* one output row's run of positions: (oz, oy, ox .. ox + seg) */
                const int64_t seg = g->ow - ox < t0 + tn - t ? g->ow - ox : t0 + tn - t;
                char *d = dst + (t - t0) * (int64_t)es;
                const int64_t iz = oz * g->sd - g->pd + kz * g->dd;
                const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                if (iz < 0 || iz >= g->d || iy < 0 || iy >= g->h) {
                    memset(d, 0, (size_t)seg * es);
                } else {
                    /* ix = (ox + j) * sw + base is inside [0, w) for j in [lo, hi);
                     * divisions only for runs that cross an edge of the row */
                    const int64_t base = ox * g->sw - g->pw + kx * g->dw;
                    int64_t lo = base >= 0 ? 0 : (-base + g->sw - 1) / g->sw;
                    int64_t hi = base + (seg - 1) * g->sw < g->w ? seg
                                 : base >= g->w                  ? 0
                                                                 : (g->w - base + g->sw - 1) / g->sw;
                    if (lo > seg) lo = seg;
                    if (hi > seg) hi = seg;
                    if (hi < lo) hi = lo;
                    memset(d, 0, (size_t)lo * es);
                    if (hi > lo) /* (the source is formed only when it is inside x) */
                        col_copy(d + lo * (int64_t)es,
                                 xp + (iz * xs[2] + iy * xs[3] + (base + lo * g->sw) * xs[4]) *
                                          (int64_t)es,
                                 g->sw * xs[4], hi - lo, es);
                    memset(d + hi * (int64_t)es, 0, (size_t)(seg - hi) * es);
                }
                t += seg;
                ox += seg; /* a run ends at its row's end or at the tile's */
                if (ox == g->ow) {
                    ox = 0;
                    if (++oy == g->oh) oy = 0, oz++;
                }
            }
            if (++kx == g->kw) {
                kx = 0;
                if (++ky == g->kh) ky = 0, kz++;
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
    const int64_t K = icg * g->kd * g->kh * g->kw, npos = g->od * g->oh * g->ow;
    /* x[n] itself is col: 1x1x1, stride 1, no padding, contiguous (D, H, W) planes */
    const bool direct = g->kd == 1 && g->kh == 1 && g->kw == 1 && g->sd == 1 && g->sh == 1 &&
                        g->sw == 1 && g->pd == 0 && g->ph == 0 && g->pw == 0 &&
                        (g->w == 1 || xs[4] == 1) && (g->h == 1 || xs[3] == g->w) &&
                        (g->d == 1 || xs[2] == g->h * g->w);
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

/* Row-major strides of a (d0, d1, d2, d3, d4) tensor. */
static void contiguous5(int64_t *st, int64_t d1, int64_t d2, int64_t d3, int64_t d4) {
    st[4] = 1;
    st[3] = d4;
    st[2] = d3 * d4;
    st[1] = d2 * d3 * d4;
    st[0] = d1 * d2 * d3 * d4;
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
    contiguous5(st.x, g->cin, g->d, g->h, g->w);
    contiguous5(st.out, g->cout, g->od, g->oh, g->ow);
    if (g->transposed)
        contiguous5(st.w, g->cout / g->groups, g->kd, g->kh, g->kw);
    else
        contiguous5(st.w, g->cin / g->groups, g->kd, g->kh, g->kw);
    return ek_conv_run_strided(ctx, dtype, out, x, wt, bias, g, &st);
}

void ek_conv_strides_of(const ek_conv_geom *g, const ember_tensor *t, int64_t st[5]) {
    /* (N, C, [[D,] H,] W): the spatial dims t lacks have size 1, stride unused */
    st[0] = t->strides[0];
    st[1] = t->strides[1];
    st[2] = st[3] = 0;
    for (size_t i = 0; i < g->nsp; i++) st[5 - g->nsp + i] = t->strides[2 + i];
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
    if (in->dim < 3 || in->dim > 5 || wt->dim != in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "convolution: only batched 1-d, 2-d and 3-d inputs are supported "
                                 "(input rank %u, weight rank %u)",
                                 (unsigned)in->dim, (unsigned)wt->dim);
    const size_t nsp = in->dim - 2;
    /* (D, H, W) parameters; the leading dims a lower rank lacks are trivial */
    int64_t isz[3] = {1, 1, 1}, ksz[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
    int64_t dil[3] = {1, 1, 1}, opad[3] = {0, 0, 0}, osz[3];
    const size_t first = 3 - nsp;
    EK_TRY(spatial_param(ctx, l_stride, n_stride, nsp, 1, "stride", stride + first));
    EK_TRY(spatial_param(ctx, l_pad, n_pad, nsp, 0, "padding", pad + first));
    EK_TRY(spatial_param(ctx, l_dil, n_dil, nsp, 1, "dilation", dil + first));
    if (transposed)
        EK_TRY(spatial_param(ctx, l_opad, n_opad, nsp, 0, "output_padding", opad + first));
    if (groups < 1 || groups > CONV_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "convolution: groups %lld invalid", (long long)groups);
    for (size_t i = 0; i < nsp; i++) {
        isz[first + i] = in->sizes[2 + i];
        ksz[first + i] = wt->sizes[2 + i];
    }
    g->n = in->sizes[0];
    g->cin = in->sizes[1];
    g->groups = groups;
    g->transposed = transposed;
    g->nsp = nsp;

    if (g->cin % groups != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "convolution: %lld input channels not divisible by %lld groups",
                                 (long long)g->cin, (long long)groups);
    for (size_t i = 0; i < 3; i++)
        if (ksz[i] < 1)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "convolution: kernel size %lld in spatial dim %zu",
                                     (long long)ksz[i], i - first);
    if (!transposed) {
        g->cout = wt->sizes[0];
        if (wt->sizes[1] * groups != g->cin || g->cout % groups != 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "convolution: weight (%d, %d, ...) does not fit %lld input "
                                     "channels in %lld groups",
                                     (int)wt->sizes[0], (int)wt->sizes[1], (long long)g->cin,
                                     (long long)groups);
        for (size_t i = 0; i < 3; i++) {
            /* sizes < 2^31 and parameters <= 2^30: no term overflows int64 */
            const int64_t e = isz[i] + 2 * pad[i] - dil[i] * (ksz[i] - 1) - 1;
            if (e < 0)
                return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                         "convolution: kernel larger than padded input in "
                                         "spatial dim %zu",
                                         i - first);
            osz[i] = e / stride[i] + 1;
        }
    } else {
        if (wt->sizes[0] != g->cin)
            return ember_kernel_fail(
                ctx, EMBER_ERR_SHAPE_MISMATCH,
                "convolution: transposed weight has %d input channels, input %lld",
                (int)wt->sizes[0], (long long)g->cin);
        g->cout = (int64_t)wt->sizes[1] * groups;
        for (size_t i = 0; i < 3; i++) {
            if (opad[i] >= stride[i] && opad[i] >= dil[i])
                return ember_kernel_fail(
                    ctx, EMBER_ERR_INVALID_ARGUMENT,
                    "convolution: output_padding must be smaller than stride or dilation");
            osz[i] = (isz[i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (ksz[i] - 1) + opad[i] + 1;
            if (osz[i] < 0)
                return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                         "convolution: transposed output size is negative");
        }
    }
    g->d = isz[0], g->h = isz[1], g->w = isz[2];
    g->kd = ksz[0], g->kh = ksz[1], g->kw = ksz[2];
    g->od = osz[0], g->oh = osz[1], g->ow = osz[2];
    g->sd = stride[0], g->sh = stride[1], g->sw = stride[2];
    g->pd = pad[0], g->ph = pad[1], g->pw = pad[2];
    g->dd = dil[0], g->dh = dil[1], g->dw = dil[2];
    g->out_shape[0] = g->n;
    g->out_shape[1] = g->cout;
    for (size_t i = 0; i < nsp; i++) g->out_shape[2 + i] = osz[first + i];
    return EMBER_OK;
}
