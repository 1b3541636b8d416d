/*
 * aten::le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 *
 * Elementwise comparison in the promoted type; writes 1/0 in out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_le_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_LE, false);
}

ember_status ek_op_le_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_compare_op(ctx, args, nargs, EK_CMP_LE, true);
}
