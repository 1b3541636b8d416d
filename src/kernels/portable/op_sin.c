/*
 * aten::sin.out(Tensor self, *, Tensor(a!) out)
 *
 * out = sin(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(sin, sinf(x), sin(x))

ember_status ek_op_sin_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &sin_map, NULL, true);
}
