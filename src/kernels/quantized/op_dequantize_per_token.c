/*
 * quantized_decomposed::dequantize_per_token.out(Tensor input, Tensor scales,
 *     Tensor zero_points, int quant_min, int quant_max, ScalarType dtype,
 *     ScalarType output_dtype, *, Tensor(a!) out) -> Tensor(a!)
 *
 * Every token (a row along the last dim) t has its own parameters:
 * out = ((input - zero_points[t]) * scales[t]).to(output_dtype), the
 * difference in integers, the product in the scales' dtype.
 * Arguments: 7 inputs, out, out (9).
 */
#include "quant_util.h"

ember_status eq_op_dequantize_per_token_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t qmin, qmax;
    int dtype, odtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(eq_arg_dtype(ctx, args, 6, &odtype));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    if (out->dtype != odtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "dequantize_per_token: out is %s, output_dtype is %s",
                                 ember_dtype_name(out->dtype), ember_dtype_name(odtype));
    EK_TRY(eq_check_qrange(ctx, "dequantize_per_token", dtype, qmin, qmax));
    eq_affine a = {1, 1, scales, 0.0, zps, 0, false};
    if (in->dim > 0) {
        a.inner = in->sizes[in->dim - 1];
        a.count = in->sizes[in->dim - 1] > 0 ? in->numel / in->sizes[in->dim - 1] : 0;
    }
    if (in->numel > 0) EK_TRY(eq_check_params(ctx, "dequantize_per_token", scales, zps, a.count));
    return eq_dequantize(ctx, "dequantize_per_token", out, in, &a, dtype);
}
