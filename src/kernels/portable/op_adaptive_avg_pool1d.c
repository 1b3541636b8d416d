/*
 * aten::adaptive_avg_pool1d.out(Tensor self, int[1] output_size, *, Tensor(a!) out)
 *
 * Output cell o averages input [floor(o L / OL), ceil((o+1) L / OL)) along the
 * last dim of a 2-d or 3-d input. Float dtypes, any dim order.
 */
#include "pool_util.h"
#include "ops.h"

ember_status ek_op_adaptive_avg_pool1d_out(ember_kernel_ctx *ctx, ember_value **args,
                                           size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os;
    size_t nos;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &os, &nos));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    ek_pool p;
    EK_TRY(ek_pool_adaptive_init(ctx, &p, in, 1, os, nos));
    EK_TRY(ek_check_float(ctx, in->dtype, "adaptive_avg_pool1d"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "adaptive_avg_pool1d self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    return ek_pool_adaptive_avg(ctx, &p, in, out);
}
