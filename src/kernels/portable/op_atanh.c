/*
 * aten::atanh.out(Tensor self, *, Tensor(a!) out)
 *
 * out = atanh(self) (+-inf at +-1, NaN beyond).
 * Integer and bool inputs give float32 results; float16 and bfloat16
 * compute in float.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(atanh, atanhf(x), atanh(x))

ember_status ek_op_atanh_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &atanh_map, NULL, true);
}
