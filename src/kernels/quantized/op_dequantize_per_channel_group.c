/*
 * quantized_decomposed::dequantize_per_channel_group.out(Tensor input, Tensor scales,
 *     Tensor? zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size,
 *     ScalarType output_dtype, *, Tensor(a!) out) -> Tensor(a!)
 *
 * input (M, N) in groups of group_size consecutive elements per row, group g
 * with its own parameters: out = ((input - zero_points[g]) * scales[g]).to(output_dtype),
 * the difference in integers, the product in the scales' dtype; no
 * zero_points means zero. Group rules as quantize_per_channel_group.
 * Arguments: 8 inputs, out, out (10).
 */
#include "quant_util.h"

ember_status eq_op_dequantize_per_channel_group_out(ember_kernel_ctx *ctx, ember_value **args,
                                                    size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t qmin, qmax, group_size;
    int dtype, odtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(ek_arg_int(ctx, args, 6, &group_size));
    EK_TRY(eq_arg_dtype(ctx, args, 7, &odtype));
    EK_TRY(ek_arg_out(ctx, args, 8, &out));
    if (out->dtype != odtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "dequantize_per_channel_group: out is %s, output_dtype is %s",
                                 ember_dtype_name(out->dtype), ember_dtype_name(odtype));
    eq_affine a;
    EK_TRY(eq_group_affine(ctx, "dequantize_per_channel_group", in, scales, zps, group_size, &a));
    EK_TRY(eq_check_qrange(ctx, "dequantize_per_channel_group", dtype, qmin, qmax));
    return eq_dequantize(ctx, "dequantize_per_channel_group", out, in, &a, dtype);
}
