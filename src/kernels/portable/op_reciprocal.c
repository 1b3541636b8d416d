/*
 * aten::reciprocal.out(Tensor self, *, Tensor(a!) out)
 *
 * out = 1 / self. Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(reciprocal, 1.0f / x, 1.0 / x)

ember_status ek_op_reciprocal_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &reciprocal_map, NULL, true);
}
