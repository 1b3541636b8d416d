/*
 * aten::log1p.out(Tensor self, *, Tensor(a!) out)
 *
 * out = log(1 + self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(log1p, log1pf(x), log1p(x))

ember_status ek_op_log1p_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &log1p_map, NULL, true);
}
