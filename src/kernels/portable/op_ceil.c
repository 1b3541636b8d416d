/*
 * aten::ceil.out(Tensor self, *, Tensor(a!) out)
 *
 * out = ceil(self). Integers are returned unchanged.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void ceil_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = ceilf(in[0][i]);
}

static void ceil_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = ceil(in[0][i]);
}

static const ek_map ceil_map = {ceil_f32, ceil_f64, NULL};

ember_status ek_op_ceil_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (!ek_is_float(self->dtype))
        return ek_unary_op(ctx, args, nargs, &ek_map_identity, NULL, false);
    return ek_unary_op(ctx, args, nargs, &ceil_map, NULL, false);
}
