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
    ember_tensor *in, *out, *indices;
    const int64_t *ks, *st, *pd, *dl;
    size_t nks, nst, npd, ndl;
    bool ceil_mode;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &dl, &ndl));
    EK_TRY(ek_arg_bool(ctx, args, 5, &ceil_mode));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    EK_TRY(ek_arg_out(ctx, args, 7, &indices));
    if (!ek_is_float(in->dtype) && !ek_is_int(in->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "max_pool2d: dtype %s not supported", ember_dtype_name(in->dtype));
    ek_pool p;
    EK_TRY(ek_pool_init(ctx, &p, in, 2, ks, nks, st, nst, pd, npd, dl, ndl, ceil_mode));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "max_pool2d self and out"));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "max_pool2d: indices must be int64");
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_no_alias(ctx, indices, in));
    EK_TRY(ek_check_no_alias(ctx, indices, out));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    EK_TRY(ek_resize_out(ctx, indices, p.out_shape, p.out_dim));
    return ek_pool_max(ctx, &p, in, out, indices);
}
