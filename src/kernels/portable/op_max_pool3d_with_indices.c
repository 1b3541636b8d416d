/*
 * aten::max_pool3d_with_indices.out(Tensor self, int[3] kernel_size, int[3] stride=[],
 *     int[3] padding=0, int[3] dilation=1, bool ceil_mode=False, *,
 *     Tensor(a!) out, Tensor(b!) indices)
 *
 * Max over each (dilated) window of every (D, H, W) volume of a 4-d or 5-d
 * input; indices (int64) give the position of the max within its volume,
 * (d * H + h) * W + w. NaN wins, as in PyTorch. Float and integer dtypes,
 * any dim order. Arguments: 6 inputs, 2 outs, TensorList (9).
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_max_pool3d_with_indices_out(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs) {
    return ek_pool_max_op(ctx, args, nargs, 3, "max_pool3d");
}
