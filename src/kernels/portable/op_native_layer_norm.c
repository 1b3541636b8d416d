/*
 * aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight,
 *     Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
 *
 * Normalizes over the last len(normalized_shape) dims:
 *   out0 = (x - mean) * rstd * weight + bias,  out1 = mean,  out2 = rstd
 * with rstd = 1 / sqrt(var + eps) (biased variance). out1 and out2 have
 * input's shape with the normalized dims set to 1. Float dtypes, contiguous.
 * Arguments: 5 inputs, 3 outs, then the TensorList of the outs (9).
 */
#include <tgmath.h> /* sqrt in the compute type */

#include "kernel_util.h"
#include "ops.h"

/* x viewed as (rows, cols): each row is normalized on its own. Sums are
 * accumulated in double, two passes (mean, then variance). */
#define DEF_LAYER_NORM(SFX, T, CT, LOAD, STORE)                                                    \
    static void layer_norm_##SFX(T *y, T *mean_out, T *rstd_out, const T *x, const T *w,           \
                                 const T *b, int64_t rows, int64_t cols, double eps) {             \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T *xr = x + r * cols; /* (cols) */                                               \
            T *yr = y + r * cols;                                                                  \
            /* four running sums per pass: independent additions pipeline */                   \
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                         \
            int64_t c = 0;                                                                         \
            for (; c + 4 <= cols; c += 4) {                                                        \
                s0 += (double)LOAD(xr[c]);                                                         \
                s1 += (double)LOAD(xr[c + 1]);                                                     \
                s2 += (double)LOAD(xr[c + 2]);                                                     \
                s3 += (double)LOAD(xr[c + 3]);                                                     \
            }                                                                                      \
            for (; c < cols; c++) s0 += (double)LOAD(xr[c]);                                       \
            double mean = cols > 0 ? ((s0 + s1) + (s2 + s3)) / (double)cols : 0.0;                 \
            s0 = s1 = s2 = s3 = 0.0;                                                               \
            for (c = 0; c + 4 <= cols; c += 4) {                                                   \
                double d0 = (double)LOAD(xr[c]) - mean, d1 = (double)LOAD(xr[c + 1]) - mean;       \
                double d2 = (double)LOAD(xr[c + 2]) - mean, d3 = (double)LOAD(xr[c + 3]) - mean;   \
                s0 += d0 * d0;                                                                     \
                s1 += d1 * d1;                                                                     \
                s2 += d2 * d2;                                                                     \
                s3 += d3 * d3;                                                                     \
            }                                                                                      \
            for (; c < cols; c++) {                                                                \
                double dv = (double)LOAD(xr[c]) - mean;                                            \
                s0 += dv * dv;                                                                     \
            }                                                                                      \
            double sq = (s0 + s1) + (s2 + s3);                                                     \
            double var = cols > 0 ? sq / (double)cols : NAN;                                       \
            const CT m = (CT)mean, rstd = (CT)(1.0 / sqrt(var + eps));                             \
            if (w != NULL && b != NULL) /* the usual case, without a test per element */          \
                for (c = 0; c < cols; c++)                                                         \
                    yr[c] = STORE((LOAD(xr[c]) - m) * rstd * LOAD(w[c]) + LOAD(b[c]));            \
            else                                                                                   \
                for (c = 0; c < cols; c++) {                                                       \
                    CT v = (LOAD(xr[c]) - m) * rstd;                                               \
                    if (w != NULL) v *= LOAD(w[c]);                                                \
                    if (b != NULL) v += LOAD(b[c]);                                                \
                    yr[c] = STORE(v);                                                              \
                }                                                                                  \
            mean_out[r] = STORE(m);                                                                \
            rstd_out[r] = STORE(rstd);                                                             \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_LAYER_NORM)

static ember_status check_affine(ember_kernel_ctx *ctx, const ember_tensor *t,
                                 const ember_tensor *in, int64_t cols, const char *what) {
    if (t == NULL) return EMBER_OK;
    EK_TRY(ek_check_same_dtype(ctx, t, in, what));
    EK_TRY(ek_check_contiguous(ctx, t, what));
    if (t->numel != cols)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "layer_norm: %s has %lld elements, normalized shape has %lld",
                                 what, (long long)t->numel, (long long)cols);
    return EMBER_OK;
}

ember_status ek_op_native_layer_norm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *w, *b, *out, *mean, *rstd;
    const int64_t *norm;
    size_t nnorm;
    double eps;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &norm, &nnorm));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 3, &b));
    EK_TRY(ek_arg_double(ctx, args, 4, &eps));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    EK_TRY(ek_arg_out(ctx, args, 6, &mean));
    EK_TRY(ek_arg_out(ctx, args, 7, &rstd));

    if (nnorm == 0 || nnorm > in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "layer_norm: normalized_shape has %zu dims, input has %u", nnorm,
                                 (unsigned)in->dim);
    size_t axis = in->dim - nnorm;
    int64_t rows = 1, cols = 1;
    int64_t stat_shape[EMBER_MAX_DIM];
    for (size_t d = 0; d < in->dim; d++) {
        if (d < axis) {
            rows *= in->sizes[d];
            stat_shape[d] = in->sizes[d];
        } else {
            if (norm[d - axis] != in->sizes[d])
                return ember_kernel_fail(
                    ctx, EMBER_ERR_SHAPE_MISMATCH,
                    "layer_norm: normalized_shape[%zu] = %lld but input dim %zu is %d", d - axis,
                    (long long)norm[d - axis], d, (int)in->sizes[d]);
            cols *= in->sizes[d];
            stat_shape[d] = 1;
        }
    }
    EK_TRY(ek_check_float(ctx, in->dtype, "layer_norm"));
    EK_TRY(ek_check_contiguous(ctx, in, "layer_norm input"));
    EK_TRY(check_affine(ctx, w, in, cols, "weight"));
    EK_TRY(check_affine(ctx, b, in, cols, "bias"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "layer_norm input and out0"));
    EK_TRY(ek_check_same_dtype(ctx, in, mean, "layer_norm input and out1"));
    EK_TRY(ek_check_same_dtype(ctx, in, rstd, "layer_norm input and out2"));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_resize_out(ctx, mean, stat_shape, in->dim));
    EK_TRY(ek_resize_out(ctx, rstd, stat_shape, in->dim));
    EK_TRY(ek_check_contiguous(ctx, out, "layer_norm out0"));
    EK_TRY(ek_check_contiguous(ctx, mean, "layer_norm out1"));
    EK_TRY(ek_check_contiguous(ctx, rstd, "layer_norm out2"));
    if (rows == 0) return EMBER_OK;
    /* empty rows (cols == 0) still get statistics; their data may be NULL,
     * so give the loop a pointer that no arithmetic will trip over */
    static double dummy[1]; /* never read or written */
    const void *x = cols > 0 ? in->data : (void *)dummy;
    void *y = cols > 0 ? out->data : (void *)dummy;
    EK_FLOAT_SWITCH(ctx, in->dtype, layer_norm, y, mean->data, rstd->data, x,
                    w != NULL ? w->data : NULL, b != NULL ? b->data : NULL, rows, cols, eps);
    return EMBER_OK;
}
