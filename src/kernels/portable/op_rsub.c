/*
 * aten::rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
 *
 * out = other - alpha * self.
 */
#include "kernel_util.h"
#include "ops.h"

static void rsub_f32(float *o, const float *const *in, size_t n, void *arg) {
    const float *self = in[0], *other = in[1];
    const float alpha = (float)((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = other[i] - alpha * self[i];
}

static void rsub_f64(double *o, const double *const *in, size_t n, void *arg) {
    const double *self = in[0], *other = in[1];
    const double alpha = ((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = other[i] - alpha * self[i];
}

static void rsub_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    const int64_t *self = in[0], *other = in[1];
    const uint64_t alpha = (uint64_t)((const ek_scalar *)arg)->i;
    for (size_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)other[i] - alpha * (uint64_t)self[i]);
}

static const ek_map rsub_map = {rsub_f32, rsub_f64, rsub_i64};

ember_status ek_op_rsub_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    ek_scalar other, alpha;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &other));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &alpha));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    int result = ek_binary_result_type(self, NULL, &other);
    if (result == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "subtraction of bool tensors is not supported");
    if (!ek_is_float(result) && alpha.kind == EK_SCALAR_FLOAT)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "alpha must not be a floating point number for integral inputs");
    return ek_map_binary(ctx, out, self, NULL, &other, result, ek_ctype_of(result), &rsub_map,
                         &alpha);
}
