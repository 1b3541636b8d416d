/*
 * aten::native_layer_norm_backward.out(Tensor grad_out, Tensor input, SymInt[] normalized_shape,
 *     Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask, *,
 *     Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
 *
 * Gradients of native_layer_norm for the outputs output_mask selects, with
 * input viewed as (rows, cols) as in the forward and mean, rstd its saved
 * statistics (one per row, any shape of that many elements):
 *   out0 = rstd * (dy*w - (sum(dy*w) + xhat * sum(dy*w*xhat)) / cols)   (input's shape)
 *   out1 = sum over rows of dy * xhat,   out2 = sum over rows of dy      (normalized_shape)
 * where xhat = (x - mean) * rstd and w is 1 without weight. Sums are in
 * double. bias only matters to the forward. An output that output_mask
 * leaves out is not touched (it may be None). Float dtypes, contiguous.
 * Arguments: 8 inputs, 3 outs, TensorList (12).
 */
#include "kernel_util.h"
#include "ops.h"

#define DEF_LAYER_NORM_BWD(SFX, T, CT, LOAD, STORE)                                                \
    static void layer_norm_dx_##SFX(T *dx, const T *dy, const T *x, const T *mean,                 \
                                    const T *rstd, const T *w, int64_t rows, int64_t cols) {       \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T *dyr = dy + r * cols, *xr = x + r * cols; /* (cols) */                         \
            T *dxr = dx + r * cols;                                                                \
            const double m = (double)LOAD(mean[r]), a = (double)LOAD(rstd[r]);                     \
            double ds = 0.0, db = 0.0; /* sum(dy*w*x), sum(dy*w) */                                \
            for (int64_t c = 0; c < cols; c++) {                                                   \
                double g = (double)LOAD(dyr[c]) * (w != NULL ? (double)LOAD(w[c]) : 1.0);          \
                ds += g * (double)LOAD(xr[c]);                                                     \
                db += g;                                                                           \
            }                                                                                      \
            const double s = 1.0 / (double)cols;                                                   \
            const double b = (db * m - ds) * a * a * a * s;                                        \
            const double cc = -b * m - db * a * s;                                                 \
            for (int64_t c = 0; c < cols; c++) {                                                   \
                double g = (double)LOAD(dyr[c]) * (w != NULL ? (double)LOAD(w[c]) : 1.0);          \
                dxr[c] = STORE((CT)(a * g + b * (double)LOAD(xr[c]) + cc));                        \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void layer_norm_dwb_##SFX(T *dw, T *db, const T *dy, const T *x, const T *mean,         \
                                     const T *rstd, int64_t rows, int64_t cols) {                  \
        for (int64_t c = 0; c < cols; c++) {                                                       \
            double sw = 0.0, sb = 0.0;                                                             \
            for (int64_t r = 0; r < rows; r++) {                                                   \
                double g = (double)LOAD(dy[r * cols + c]);                                         \
                double xhat = ((double)LOAD(x[r * cols + c]) - (double)LOAD(mean[r])) *            \
                              (double)LOAD(rstd[r]);                                               \
                sw += g * xhat;                                                                    \
                sb += g;                                                                           \
            }                                                                                      \
            if (dw != NULL) dw[c] = STORE((CT)sw);                                                 \
            if (db != NULL) db[c] = STORE((CT)sb);                                                 \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_LAYER_NORM_BWD)

static ember_status check_vec(ember_kernel_ctx *ctx, const ember_tensor *t, const ember_tensor *in,
                              int64_t n, const char *what) {
    if (t == NULL) return EMBER_OK;
    EK_TRY(ek_check_same_dtype(ctx, in, t, what));
    EK_TRY(ek_check_contiguous(ctx, t, what));
    if (t->numel != n)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "layer_norm_backward: %s has %lld elements, not %lld", what,
                                 (long long)t->numel, (long long)n);
    return EMBER_OK;
}

ember_status ek_op_native_layer_norm_backward_out(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs) {
    ember_tensor *dy, *in, *mean, *rstd, *w, *b, *outs[3] = {NULL, NULL, NULL};
    const int64_t *norm;
    const bool *mask;
    size_t nnorm, nmask;
    EK_TRY(ek_check_nargs(ctx, nargs, 12));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &dy));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &norm, &nnorm));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &mean));
    EK_TRY(ek_arg_tensor(ctx, args, 4, &rstd));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 5, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 6, &b));
    EK_TRY(ek_arg_bool_list(ctx, args, 7, &mask, &nmask));
    if (nmask != 3)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "layer_norm_backward: output_mask has %zu values, not 3",
                                 nmask);
    for (size_t k = 0; k < 3; k++)
        if (mask[k]) EK_TRY(ek_arg_out(ctx, args, 8 + k, &outs[k]));

    if (nnorm == 0 || nnorm > in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "layer_norm_backward: normalized_shape has %zu dims, input has %u",
                                 nnorm, (unsigned)in->dim);
    size_t axis = in->dim - nnorm;
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < in->dim; d++) {
        if (d < axis) {
            rows *= in->sizes[d];
        } else if (norm[d - axis] != in->sizes[d]) {
            return ember_kernel_fail(
                ctx, EMBER_ERR_SHAPE_MISMATCH,
                "layer_norm_backward: normalized_shape[%zu] = %lld but input dim %zu is %d",
                d - axis, (long long)norm[d - axis], d, (int)in->sizes[d]);
        } else {
            cols *= in->sizes[d];
        }
    }
    EK_TRY(ek_check_float(ctx, in->dtype, "layer_norm_backward"));
    EK_TRY(ek_check_contiguous(ctx, in, "layer_norm_backward input"));
    EK_TRY(ek_check_same_dtype(ctx, in, dy, "layer_norm_backward input and grad_out"));
    EK_TRY(ek_check_contiguous(ctx, dy, "layer_norm_backward grad_out"));
    if (dy->numel != in->numel || dy->dim != in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "layer_norm_backward: grad_out must have input's shape");
    for (size_t d = 0; d < in->dim; d++)
        if (dy->sizes[d] != in->sizes[d])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "layer_norm_backward: grad_out must have input's shape");
    EK_TRY(check_vec(ctx, mean, in, rows, "mean"));
    EK_TRY(check_vec(ctx, rstd, in, rows, "rstd"));
    EK_TRY(check_vec(ctx, w, in, cols, "weight"));
    if (b != NULL) EK_TRY(check_vec(ctx, b, in, cols, "bias"));
    for (size_t k = 0; k < 3; k++) {
        if (outs[k] == NULL) continue;
        EK_TRY(ek_check_same_dtype(ctx, in, outs[k], "layer_norm_backward input and out"));
        EK_TRY(ek_check_no_alias(ctx, outs[k], in));
        EK_TRY(ek_check_no_alias(ctx, outs[k], dy));
    }
    if (outs[0] != NULL) {
        EK_TRY(ek_resize_like(ctx, outs[0], in));
        EK_TRY(ek_check_contiguous(ctx, outs[0], "layer_norm_backward out0"));
    }
    for (size_t k = 1; k < 3; k++) {
        if (outs[k] == NULL) continue;
        EK_TRY(ek_resize_out(ctx, outs[k], norm, nnorm));
        EK_TRY(ek_check_contiguous(ctx, outs[k], "layer_norm_backward out1/out2"));
    }
    if (cols == 0) return EMBER_OK; /* every output is empty */
    if (rows == 0) {
        /* no rows: the parameter gradients are zero sums */
        for (size_t k = 1; k < 3; k++) {
            if (outs[k] == NULL) continue;
            ek_scalar zero = ek_scalar_from_int(0);
            char elem[8];
            ek_scalar_store(outs[k]->dtype, &zero, elem);
            ek_fill_bytes(outs[k]->data, outs[k]->numel, elem, ember_dtype_size(outs[k]->dtype));
        }
        return EMBER_OK;
    }
    if (outs[0] != NULL)
        EK_FLOAT_SWITCH(ctx, in->dtype, layer_norm_dx, outs[0]->data, dy->data, in->data,
                        mean->data, rstd->data, w != NULL ? w->data : NULL, rows, cols);
    if (outs[1] != NULL || outs[2] != NULL)
        EK_FLOAT_SWITCH(ctx, in->dtype, layer_norm_dwb, outs[1] != NULL ? outs[1]->data : NULL,
                        outs[2] != NULL ? outs[2]->data : NULL, dy->data, in->data, mean->data,
                        rstd->data, rows, cols);
    return EMBER_OK;
}
