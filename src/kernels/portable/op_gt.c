/*
 * aten::gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 *
 * Elementwise comparison in the promoted type; writes 1/0 in out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_gt_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_GT, false);
}

ember_status ek_op_gt_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_GT, true);
}
