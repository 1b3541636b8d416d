/*
 * quantized_decomposed::dequantize_per_channel.out(Tensor input, Tensor scales,
 *     Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
 *     ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)
 *
 * out = ((input - zero_points[c]) * scales[c]).to(out_dtype) with c the
 * index along axis: the difference in integers, the product in the scales'
 * dtype, then rounded to out_dtype (float32 when None). No zero_points means
 * zero. Arguments: 8 inputs, out, out (10).
 */
#include "quant_util.h"

ember_status eq_op_dequantize_per_channel_out(ember_kernel_ctx *ctx, ember_value **args,
                                              size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t axis, qmin, qmax;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &axis));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 5, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 6, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 8, &out));
    EK_TRY(eq_check_out_dtype(ctx, "dequantize_per_channel", args, 7, out));
    EK_TRY(eq_check_qrange(ctx, "dequantize_per_channel", dtype, qmin, qmax));
    size_t ax;
    EK_TRY(ek_norm_dim(ctx, axis, in->dim, &ax));
    eq_affine a = {1, in->sizes[ax], scales, 0.0, zps, 0, true};
    for (size_t d = ax + 1; d < in->dim; d++) a.inner *= in->sizes[d];
    EK_TRY(eq_check_params(ctx, "dequantize_per_channel", scales, zps, a.count));
    return eq_dequantize(ctx, "dequantize_per_channel", out, in, &a, dtype);
}
