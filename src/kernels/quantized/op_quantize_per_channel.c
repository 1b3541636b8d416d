/*
 * quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales,
 *     Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
 *     Tensor(a!) out) -> Tensor(a!)
 *
 * out = clamp(round(input * (1 / scales[c])) + zero_points[c], quant_min, quant_max)
 * with c the index along axis (negative counts from the end). float16 /
 * bfloat16 input is widened to float32; the product is in float64 when the
 * scales are. Arguments: 7 inputs, out, out (9).
 */
#include "quant_util.h"

ember_status eq_op_quantize_per_channel_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t axis, qmin, qmax;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &axis));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 5, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 6, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    if (in->dtype == EMBER_FLOAT64)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "quantize_per_channel: input must be float32, float16 or "
                                 "bfloat16");
    size_t ax;
    EK_TRY(ek_norm_dim(ctx, axis, in->dim, &ax));
    eq_affine a = {1, in->sizes[ax], scales, 0.0, zps, 0, true};
    for (size_t d = ax + 1; d < in->dim; d++) a.inner *= in->sizes[d];
    EK_TRY(eq_check_params(ctx, "quantize_per_channel", scales, zps, a.count));
    return eq_quantize(ctx, "quantize_per_channel", out, in, &a, qmin, qmax, dtype);
}
