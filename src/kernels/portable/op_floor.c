/*
 * aten::floor.out(Tensor self, *, Tensor(a!) out)
 *
 * out = floor(self). Integers are returned unchanged.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void floor_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = floorf(in[0][i]);
}

static void floor_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = floor(in[0][i]);
}

static const ek_map floor_map = {floor_f32, floor_f64, NULL};

ember_status ek_op_floor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (!ek_is_float(self->dtype))
        return ek_unary_op(ctx, args, nargs, &ek_map_identity, NULL, false);
    return ek_unary_op(ctx, args, nargs, &floor_map, NULL, false);
}
