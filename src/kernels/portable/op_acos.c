/*
 * aten::acos.out(Tensor self, *, Tensor(a!) out)
 *
 * out = acos(self) (NaN outside [-1, 1]).
 * Integer and bool inputs give float32 results; float16 and bfloat16
 * compute in float.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(acos, acosf(x), acos(x))

ember_status ek_op_acos_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &acos_map, NULL, true);
}
