/*
 * aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
 * aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
 *
 * out = self + alpha * other, broadcast, in the promoted type.
 */
#include "kernel_util.h"
#include "ops.h"

static void add_f32(float *o, const float *const *in, size_t n, void *arg) {
    const float *a = in[0], *b = in[1];
    const float alpha = (float)((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = a[i] + alpha * b[i];
}

static void add_f64(double *o, const double *const *in, size_t n, void *arg) {
    const double *a = in[0], *b = in[1];
    const double alpha = ((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = a[i] + alpha * b[i];
}

/* integers wrap around, as in PyTorch (computed unsigned: no overflow UB) */
static void add_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    const int64_t *a = in[0], *b = in[1];
    const uint64_t alpha = (uint64_t)((const ek_scalar *)arg)->i;
    for (size_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)a[i] + alpha * (uint64_t)b[i]);
}

static const ek_map add_map = {add_f32, add_f64, add_i64};

/* Shared by add and sub: self + alpha * (other or scalar). */
ember_status ek_add_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool scalar,
                           bool negate) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0), alpha;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &alpha));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));

    int result = ek_binary_result_type(self, other, &s);
    if (negate && result == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "subtraction of bool tensors is not supported");
    if (!ek_is_float(result) && alpha.kind == EK_SCALAR_FLOAT)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "alpha must not be a floating point number for integral inputs");
    if (negate) {
        alpha.d = -alpha.d;
        alpha.i = (int64_t)(0 - (uint64_t)alpha.i);
    }
    return ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &add_map, &alpha);
}

ember_status ek_op_add_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_add_common(ctx, args, nargs, false, false);
}

ember_status ek_op_add_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_add_common(ctx, args, nargs, true, false);
}
