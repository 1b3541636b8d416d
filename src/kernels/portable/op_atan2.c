/*
 * aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * out = atan2(self, other), the angle of the point (other, self), with self
 * and other broadcast together. The result type is the promoted type, or
 * float32 when both are integers or bool; out must be floating.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void atan2_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = atan2f(in[0][i], in[1][i]);
}

static void atan2_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = atan2(in[0][i], in[1][i]);
}

static const ek_map atan2_map = {atan2_f32, atan2_f64, NULL};

ember_status ek_op_atan2_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *other, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, other->dtype, "other"));
    int result = ek_binary_result_type(self, other, NULL);
    if (!ek_is_float(result)) result = EMBER_FLOAT32; /* integer inputs, as in PyTorch */
    return ek_map_binary(ctx, out, self, other, NULL, result, ek_ctype_float_of(result),
                         &atan2_map, NULL);
}
