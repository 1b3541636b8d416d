/*
 * aten::tan.out(Tensor self, *, Tensor(a!) out)
 *
 * out = tan(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(tan, tanf(x), tan(x))

ember_status ek_op_tan_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &tan_map, NULL, true);
}
