/*
 * aten::leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out)
 *
 * out = self > 0 ? self : self * negative_slope (float types).
 */
#include "kernel_util.h"
#include "ops.h"

static void leaky_f32(float *o, const float *const *in, size_t n, void *arg) {
    const float slope = (float)((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] > 0.0f ? in[0][i] : in[0][i] * slope;
}

static void leaky_f64(double *o, const double *const *in, size_t n, void *arg) {
    const double slope = ((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] > 0.0 ? in[0][i] : in[0][i] * slope;
}

static const ek_map leaky_map = {leaky_f32, leaky_f64, NULL};

ember_status ek_op_leaky_relu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    ek_scalar slope;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &slope));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_float(ctx, self->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(self->dtype), &leaky_map, &slope);
}
