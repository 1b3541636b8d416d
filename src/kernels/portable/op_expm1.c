/*
 * aten::expm1.out(Tensor self, *, Tensor(a!) out)
 *
 * out = exp(self) - 1. Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(expm1, expm1f(x), expm1(x))

ember_status ek_op_expm1_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &expm1_map, NULL, true);
}
