/*
 * aten::exp.out(Tensor self, *, Tensor(a!) out)
 *
 * out = exp(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(exp, expf(x), exp(x))

ember_status ek_op_exp_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &exp_map, NULL, true);
}
