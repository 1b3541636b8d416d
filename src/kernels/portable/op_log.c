/*
 * aten::log.out(Tensor self, *, Tensor(a!) out)
 *
 * out = log(self) (natural). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(log, logf(x), log(x))

ember_status ek_op_log_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &log_map, NULL, true);
}
