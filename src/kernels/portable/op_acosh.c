/*
 * aten::acosh.out(Tensor self, *, Tensor(a!) out)
 *
 * out = acosh(self) (NaN below 1).
 * Integer and bool inputs give float32 results; float16 and bfloat16
 * compute in float.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(acosh, acoshf(x), acosh(x))

ember_status ek_op_acosh_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &acosh_map, NULL, true);
}
