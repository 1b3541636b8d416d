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
    ember_tensor *in, *out;
    const int64_t *ks, *st, *pd;
    size_t nks, nst, npd;
    bool ceil_mode, include_pad;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_bool(ctx, args, 4, &ceil_mode));
    EK_TRY(ek_arg_bool(ctx, args, 5, &include_pad));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    if (!ek_is_float(in->dtype) && in->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "avg_pool1d: dtype %s not supported (float types and int64)",
                                 ember_dtype_name(in->dtype));
    ek_pool p;
    EK_TRY(ek_pool_init(ctx, &p, in, 1, ks, nks, st, nst, pd, npd, NULL, 0, ceil_mode));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "avg_pool1d self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    return ek_pool_avg(ctx, &p, in, out, include_pad, 0);
}
