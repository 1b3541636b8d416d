/*
 * aten::sqrt.out(Tensor self, *, Tensor(a!) out)
 *
 * out = sqrt(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(sqrt, sqrtf(x), sqrt(x))

ember_status ek_op_sqrt_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &sqrt_map, NULL, true);
}
