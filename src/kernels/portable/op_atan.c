/*
 * aten::atan.out(Tensor self, *, Tensor(a!) out)
 *
 * out = atan(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(atan, atanf(x), atan(x))

ember_status ek_op_atan_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &atan_map, NULL, true);
}
