/*
 * conv_util.c — shared geometry and loop of the convolution kernels.
 */
#include "conv_util.h"

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
                                    const int64_t step = g->sw * xs[3];                            \
                                    const T *xj = xrow + base * xs[3];                             \
                                    for (int64_t j = lo; j < hi; j++) acc[j] += wv * LOAD(xj[j * step]); \
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
    else
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
