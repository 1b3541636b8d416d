/*
 * aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
 * aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
 *
 * out = self - alpha * other: add with alpha negated.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_sub_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_add_common(ctx, args, nargs, false, true);
}

ember_status ek_op_sub_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_add_common(ctx, args, nargs, true, true);
}
