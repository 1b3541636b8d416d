/*
 * aten::log2.out(Tensor self, *, Tensor(a!) out)
 *
 * out = log2(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(log2, log2f(x), log2(x))

ember_status ek_op_log2_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &log2_map, NULL, true);
}
