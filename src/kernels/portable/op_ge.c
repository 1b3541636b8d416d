/*
 * aten::ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 *
 * Elementwise comparison in the promoted type; writes 1/0 in out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_ge_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_GE, false);
}

ember_status ek_op_ge_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_GE, true);
}
