/*
 * aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
 *     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *,
 *     Tensor(a!) out, Tensor(b!) indices)
 *
 * Max over each (dilated) window of every (H, W) plane; indices (int64)
 * give the position of the max within its plane, h * W + w. NaN wins, as in
 * PyTorch. Float and integer dtypes, any dim order; the loops are the
 * shared pooling helper's (pool_util.h). Arguments: 6 inputs, 2 outs,
 * TensorList (9).
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_max_pool2d_with_indices_out(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs) {
    return ek_pool_max_op(ctx, args, nargs, 2, "max_pool2d");
}
