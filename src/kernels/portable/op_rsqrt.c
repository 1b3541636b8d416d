/*
 * aten::rsqrt.out(Tensor self, *, Tensor(a!) out)
 *
 * out = 1 / sqrt(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))

ember_status ek_op_rsqrt_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &rsqrt_map, NULL, true);
}
