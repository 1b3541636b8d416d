/*
 * aten::log10.out(Tensor self, *, Tensor(a!) out)
 *
 * out = log10(self).
 * Integer and bool inputs give float32 results; float16 and bfloat16
 * compute in float.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(log10, log10f(x), log10(x))

ember_status ek_op_log10_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &log10_map, NULL, true);
}
