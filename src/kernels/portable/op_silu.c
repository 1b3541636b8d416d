/*
 * aten::silu.out(Tensor self, *, Tensor(a!) out)
 *
 * out = self * sigmoid(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(silu, x / (1.0f + expf(-x)), x / (1.0 + exp(-x)))

ember_status ek_op_silu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &silu_map, NULL, true);
}
