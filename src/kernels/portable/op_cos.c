/*
 * aten::cos.out(Tensor self, *, Tensor(a!) out)
 *
 * out = cos(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(cos, cosf(x), cos(x))

ember_status ek_op_cos_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &cos_map, NULL, true);
}
