/*
 * quantized_decomposed::quantize_per_token.out(Tensor input, Tensor scales,
 *     Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, *,
 *     Tensor(a!) out) -> Tensor(a!)
 *
 * Every token (a row along the last dim) t has its own parameters:
 * out = clamp(round(input * (1 / scales[t]) + zero_points[t]), quant_min, quant_max),
 * computed in float64 when input or scales are, else in float32.
 * Arguments: 6 inputs, out, out (8).
 */
#include "quant_util.h"

ember_status eq_op_quantize_per_token_out(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t qmin, qmax;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    eq_affine a = {1, 1, scales, 0.0, zps, 0, false};
    if (in->dim > 0) {
        a.inner = in->sizes[in->dim - 1];
        a.count = in->sizes[in->dim - 1] > 0 ? in->numel / in->sizes[in->dim - 1] : 0;
    }
    if (in->numel > 0) EK_TRY(eq_check_params(ctx, "quantize_per_token", scales, zps, a.count));
    return eq_quantize(ctx, "quantize_per_token", out, in, &a, qmin, qmax, dtype);
}
