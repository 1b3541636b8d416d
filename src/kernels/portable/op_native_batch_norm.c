/*
 * aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight,
 *     Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps,
 *     *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
 *
 * Inference batch norm over channel dim 1 of input (N, C, ...):
 *   out0 = x * scale[c] + shift[c],  scale = weight / sqrt(var + eps),
 *   shift = bias - mean * scale   (PyTorch's CPU formulation).
 * out1 and out2 (saved statistics) are empty in inference: resized to (0).
 * Float dtypes, contiguous. Arguments: 7 inputs, 3 outs, TensorList (11).
 */
#include <tgmath.h> /* sqrt in the compute type */

#include "kernel_util.h"
#include "ops.h"

/* x viewed as (n, c, inner) */
#define DEF_BATCH_NORM(SFX, T, CT, LOAD, STORE)                                                    \
    static void batch_norm_##SFX(T *y, const T *x, const T *w, const T *b, const T *mean,          \
                                 const T *var, int64_t n, int64_t c, int64_t inner, double eps) {  \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
            CT invstd = (CT)1 / sqrt(LOAD(var[ch]) + (CT)eps);                                     \
            CT scale = w != NULL ? LOAD(w[ch]) * invstd : invstd;                                  \
            CT shift = (b != NULL ? LOAD(b[ch]) : (CT)0) - LOAD(mean[ch]) * scale;                 \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const T *xp = x + (i * c + ch) * inner;                                            \
                T *yp = y + (i * c + ch) * inner;                                                  \
                for (int64_t j = 0; j < inner; j++) yp[j] = STORE(LOAD(xp[j]) * scale + shift);    \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_BATCH_NORM)

static ember_status check_channel_param(ember_kernel_ctx *ctx, const ember_tensor *t,
                                        const ember_tensor *in, int64_t c, const char *what) {
    if (t == NULL) return EMBER_OK;
    EK_TRY(ek_check_same_dtype(ctx, t, in, what));
    if (t->dim != 1 || t->sizes[0] != c)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "batch_norm: %s must have shape (%lld)", what, (long long)c);
    return EMBER_OK;
}

/* The saved-statistics outputs are empty in inference. */
static ember_status resize_empty(ember_kernel_ctx *ctx, ember_tensor *t) {
    if (t->dim != 1) return EMBER_OK;
    const int64_t zero[1] = {0};
    return ek_resize_out(ctx, t, zero, 1);
}

ember_status ek_op_batch_norm_no_training_out(ember_kernel_ctx *ctx, ember_value **args,
                                              size_t nargs) {
    ember_tensor *in, *w, *b, *mean, *var, *out, *out1, *out2;
    double momentum, eps;
    EK_TRY(ek_check_nargs(ctx, nargs, 11));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 1, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &b));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &mean));
    EK_TRY(ek_arg_tensor(ctx, args, 4, &var));
    EK_TRY(ek_arg_double(ctx, args, 5, &momentum));
    EK_TRY(ek_arg_double(ctx, args, 6, &eps));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    EK_TRY(ek_arg_out(ctx, args, 8, &out1));
    EK_TRY(ek_arg_out(ctx, args, 9, &out2));
    (void)momentum;

    if (in->dim < 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "batch_norm: input must have at least 2 dims, got %u",
                                 (unsigned)in->dim);
    int64_t n = in->sizes[0], c = in->sizes[1], inner = 1;
    for (size_t d = 2; d < in->dim; d++) inner *= in->sizes[d];
    EK_TRY(ek_check_float(ctx, in->dtype, "batch_norm"));
    EK_TRY(ek_check_contiguous(ctx, in, "batch_norm input"));
    EK_TRY(check_channel_param(ctx, w, in, c, "weight"));
    EK_TRY(check_channel_param(ctx, b, in, c, "bias"));
    EK_TRY(check_channel_param(ctx, mean, in, c, "running_mean"));
    EK_TRY(check_channel_param(ctx, var, in, c, "running_var"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "batch_norm input and out0"));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_check_contiguous(ctx, out, "batch_norm out0"));
    EK_TRY(resize_empty(ctx, out1));
    EK_TRY(resize_empty(ctx, out2));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, batch_norm, out->data, in->data, w != NULL ? w->data : NULL,
                    b != NULL ? b->data : NULL, mean->data, var->data, n, c, inner, eps);
    return EMBER_OK;
}
