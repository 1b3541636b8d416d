/*
 * aten::cosh.out(Tensor self, *, Tensor(a!) out)
 *
 * out = cosh(self).
 * Integer and bool inputs give float32 results; float16 and bfloat16
 * compute in float.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(cosh, coshf(x), cosh(x))

ember_status ek_op_cosh_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &cosh_map, NULL, true);
}
