/*
 * aten::avg_pool1d.out(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0],
 *     bool ceil_mode=False, bool count_include_pad=True, *, Tensor(a!) out)
 *
 * Mean over each window of every row of a 2-d (C, L) or 3-d (N, C, L) input,
 * with avg_pool2d's divisor rules along one dim. Float dtypes and int64
 * (whose means truncate, as in PyTorch); any dim order.
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_avg_pool1d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_pool_avg_op(ctx, args, nargs, 1, false, "avg_pool1d");
}
