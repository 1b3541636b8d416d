/*
 * aten::col2im.out(Tensor self, SymInt[2] output_size, int[2] kernel_size,
 *     int[2] dilation, int[2] padding, int[2] stride, *, Tensor(a!) out)
 *
 * The inverse of im2col (nn.Fold): self (N, C kh kw, L) or (C kh kw, L)
 * holds one column per sliding block; out (N, C, H, W) or (C, H, W) sums
 * every column element into the pixel its block covers, dropping those that
 * fall in the padding. L must equal the number of blocks for output_size.
 * Float dtypes and bool (where sums are logical or); any dim order.
 */
#include "kernel_util.h"
#include "ops.h"

/* Bounds parameters so that every index computation fits in int64. */
#define COL2IM_PARAM_MAX ((int64_t)1 << 30)

typedef struct col2im_geom {
    int64_t batch, channels, h, w, kh, kw, dh, dw, ph, pw, sh, sw, bh, bw;
    int64_t xs[3]; /* element strides of self as (batch, C kh kw, L) */
    int64_t ys[4]; /* element strides of out as (batch, C, H, W) */
} col2im_geom;

/* Accumulates into out's own storage in PyTorch's order, rounding each sum
 * as it does; x is (batch, C kh kw, bh bw), y (batch, C, h, w), any strides. */
#define DEF_COL2IM(SFX, T, CT, LOAD, STORE)                                                        \
    static void col2im_##SFX(T *y, const T *x, const col2im_geom *g) {                             \
        int64_t rows = g->channels * g->kh * g->kw;                                                \
        for (int64_t n = 0; n < g->batch; n++)                                                     \
            for (int64_t r = 0; r < rows; r++) {                                                   \
                int64_t kx = r % g->kw, ky = (r / g->kw) % g->kh, ch = r / g->kw / g->kh;          \
                const T *xr = x + n * g->xs[0] + r * g->xs[1];   /* (bh bw) */                     \
                T *yp = y + n * g->ys[0] + ch * g->ys[1];        /* (h, w) */                      \
                for (int64_t by = 0; by < g->bh; by++) {                                           \
                    int64_t iy = by * g->sh - g->ph + ky * g->dh;                                  \
                    if (iy < 0 || iy >= g->h) continue;                                            \
                    for (int64_t bx = 0; bx < g->bw; bx++) {                                       \
                        int64_t ix = bx * g->sw - g->pw + kx * g->dw;                              \
                        if (ix < 0 || ix >= g->w) continue;                                        \
                        T *d = &yp[iy * g->ys[2] + ix * g->ys[3]];                                 \
                        *d = STORE(LOAD(*d) + LOAD(xr[(by * g->bw + bx) * g->xs[2]]));             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }

EK_FOR_EACH_FLOAT(DEF_COL2IM)
/* bool sums are logical or */
#define COL2IM_BOOL_LOAD(x) ((x) != 0)
#define COL2IM_BOOL_STORE(x) ((uint8_t)((x) != 0))
DEF_COL2IM(b, uint8_t, int, COL2IM_BOOL_LOAD, COL2IM_BOOL_STORE)

static ember_status pair(ember_kernel_ctx *ctx, const int64_t *items, size_t len, int64_t lo,
                         const char *what, int64_t *a, int64_t *b) {
    if (len != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "col2im: %s must have 2 values, got %zu", what, len);
    *a = items[0];
    *b = items[1];
    if (*a < lo || *b < lo || *a > COL2IM_PARAM_MAX || *b > COL2IM_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "col2im: %s out of range", what);
    return EMBER_OK;
}

ember_status ek_op_col2im_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os, *ks, *dl, *pd, *st;
    size_t nos, nks, ndl, npd, nst;
    col2im_geom g;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &os, &nos));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &dl, &ndl));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &pd, &npd));
    EK_TRY(ek_arg_int_list(ctx, args, 5, &st, &nst));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    EK_TRY(pair(ctx, os, nos, 1, "output_size", &g.h, &g.w));
    EK_TRY(pair(ctx, ks, nks, 1, "kernel_size", &g.kh, &g.kw));
    EK_TRY(pair(ctx, dl, ndl, 1, "dilation", &g.dh, &g.dw));
    EK_TRY(pair(ctx, pd, npd, 0, "padding", &g.ph, &g.pw));
    EK_TRY(pair(ctx, st, nst, 1, "stride", &g.sh, &g.sw));
    if (!ek_is_float(in->dtype) && in->dtype != EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "col2im: dtype %s not supported (float types and bool)",
                                 ember_dtype_name(in->dtype));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "col2im self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (in->dim != 2 && in->dim != 3)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "col2im: expected a 2-d or 3-d input, got %u-d",
                                 (unsigned)in->dim);
    bool batched = in->dim == 3;
    g.batch = batched ? in->sizes[0] : 1;
    int64_t rows = in->sizes[in->dim - 2], blocks = in->sizes[in->dim - 1];
    int64_t area = g.kh * g.kw; /* <= 2^60 */
    if (rows == 0 || rows % area != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "col2im: input dim %u (%lld) must be a non-zero multiple of "
                                 "kernel_size[0] * kernel_size[1] = %lld",
                                 (unsigned)in->dim - 2, (long long)rows, (long long)area);
    g.channels = rows / area;
    g.bh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
    g.bw = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
    /* blocks <= INT32_MAX bounds both factors first, so the product cannot overflow */
    if (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1 < 0 || g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1 < 0 ||
        g.bh > blocks || g.bw > blocks || g.bh * g.bw != blocks)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "col2im: %lld blocks given, output_size, kernel, dilation, "
                                 "padding and stride make a different count",
                                 (long long)blocks);
    int64_t shape[4];
    size_t dim = 0;
    if (batched) shape[dim++] = g.batch;
    shape[dim++] = g.channels;
    shape[dim++] = g.h;
    shape[dim++] = g.w;
    EK_TRY(ek_resize_out(ctx, out, shape, dim));
    size_t lead = batched ? 1 : 0;
    g.xs[0] = batched ? in->strides[0] : 0;
    g.xs[1] = in->strides[lead];
    g.xs[2] = in->strides[lead + 1];
    g.ys[0] = batched ? out->strides[0] : 0;
    for (size_t k = 0; k < 3; k++) g.ys[k + 1] = out->strides[lead + k];
    if (out->numel == 0) return EMBER_OK;
    const uint8_t zero[8] = {0};
    ek_fill_bytes(out->data, out->numel, zero, ember_dtype_size(out->dtype));
    if (in->numel == 0) return EMBER_OK;
    if (in->dtype == EMBER_BOOL) {
        col2im_b(out->data, in->data, &g);
        return EMBER_OK;
    }
    EK_FLOAT_SWITCH(ctx, in->dtype, col2im, out->data, in->data, &g);
    return EMBER_OK;
}
