/*
 * aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 *
 * out = self * other, broadcast, in the promoted type.
 */
#include "kernel_util.h"
#include "ops.h"

static void mul_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] * in[1][i];
}

static void mul_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] * in[1][i];
}

static void mul_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)in[0][i] * (uint64_t)in[1][i]);
}

static const ek_map mul_map = {mul_f32, mul_f64, mul_i64};

static ember_status mul_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                               bool scalar) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, &s);
    return ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &mul_map, NULL);
}

ember_status ek_op_mul_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return mul_common(ctx, args, nargs, false);
}

ember_status ek_op_mul_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return mul_common(ctx, args, nargs, true);
}
