/*
 * aten::avg_pool3d.out(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
 *     bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *,
 *     Tensor(a!) out)
 *
 * Mean over each window of every (D, H, W) volume of a 4-d or 5-d input,
 * with avg_pool2d's divisor rules. Float dtypes and int64 (whose means
 * truncate, as in PyTorch); any dim order.
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_avg_pool3d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_pool_avg_op(ctx, args, nargs, 3, true, "avg_pool3d");
}
