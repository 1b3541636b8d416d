/*
 * aten::hardsigmoid.out(Tensor self, *, Tensor(a!) out)
 *
 * out = relu6(self + 3) / 6. Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(hardsigmoid, fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f,
                      fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0)

ember_status ek_op_hardsigmoid_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &hardsigmoid_map, NULL, true);
}
