/*
 * aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out)
 *
 * out[..., j] = sum_k input[..., k] * weight[j, k] (+ bias[j]): nn.Linear
 * whole, for programs that keep it (EdgeCompileConfig(preserve_ops=...)).
 * input (..., K) of rank >= 1, weight (N, K), bias (N); one float dtype,
 * contiguous. Each output sums over k in order, in the compute type.
 */
#include "kernel_util.h"
#include "ops.h"

#define DEF_LINEAR(SFX, T, CT, LOAD, STORE)                                                        \
    static void linear_##SFX(T *out, const T *x, const T *w, const T *b, int64_t rows, int64_t k,  \
                             int64_t n) {                                                          \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            for (int64_t j = 0; j < n; j++) {                                                      \
                CT acc = 0;                                                                        \
                for (int64_t p = 0; p < k; p++) acc += LOAD(x[r * k + p]) * LOAD(w[j * k + p]);    \
                if (b != NULL) acc += LOAD(b[j]);                                                  \
                out[r * n + j] = STORE(acc);                                                       \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_LINEAR)

ember_status ek_op_linear_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *x, *w, *b, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &x));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &b));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (x->dim < 1 || w->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "linear: input must be at least 1-D and weight 2-D, got %u-D "
                                 "and %u-D",
                                 (unsigned)x->dim, (unsigned)w->dim);
    const int64_t k = x->sizes[x->dim - 1], n = w->sizes[0];
    if (w->sizes[1] != k)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "linear: input has %lld features but weight is (%lld, %d)",
                                 (long long)k, (long long)n, (int)w->sizes[1]);
    if (b != NULL && (b->dim != 1 || b->sizes[0] != n))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "linear: bias must have shape (%lld)", (long long)n);
    EK_TRY(ek_check_float(ctx, x->dtype, "linear"));
    EK_TRY(ek_check_same_dtype(ctx, x, w, "linear input and weight"));
    if (b != NULL) EK_TRY(ek_check_same_dtype(ctx, x, b, "linear input and bias"));
    EK_TRY(ek_check_same_dtype(ctx, x, out, "linear input and out"));
    EK_TRY(ek_check_contiguous(ctx, x, "linear input"));
    EK_TRY(ek_check_contiguous(ctx, w, "linear weight"));
    if (b != NULL) EK_TRY(ek_check_contiguous(ctx, b, "linear bias"));
    EK_TRY(ek_check_no_alias(ctx, out, x));
    int64_t shape[EMBER_MAX_DIM], rows = 1;
    for (uint32_t d = 0; d + 1 < x->dim; d++) {
        shape[d] = x->sizes[d];
        rows *= x->sizes[d]; /* <= numel of x, or 0 */
    }
    shape[x->dim - 1] = n;
    EK_TRY(ek_resize_out(ctx, out, shape, x->dim));
    EK_TRY(ek_check_contiguous(ctx, out, "linear out"));
    if (rows == 0 || n == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, x->dtype, linear, out->data, x->data, w->data,
                    b != NULL ? b->data : NULL, rows, k, n);
    return EMBER_OK;
}
