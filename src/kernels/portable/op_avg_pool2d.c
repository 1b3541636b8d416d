/*
 * aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
 *     bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *,
 *     Tensor(a!) out)
 *
 * Mean over each window of every (H, W) plane, with PyTorch's divisor
 * rules: divisor_override if given, else the window size clipped to the
 * padded input (count_include_pad) or to the input. Float dtypes and int64
 * (whose means truncate, as in PyTorch); any dim order. The loops are the
 * shared pooling helper's (pool_util.h).
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_avg_pool2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_pool_avg_op(ctx, args, nargs, 2, true, "avg_pool2d");
}
