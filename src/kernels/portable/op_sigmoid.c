/*
 * aten::sigmoid.out(Tensor self, *, Tensor(a!) out)
 *
 * out = 1 / (1 + exp(-self)). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))

ember_status ek_op_sigmoid_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &sigmoid_map, NULL, true);
}
