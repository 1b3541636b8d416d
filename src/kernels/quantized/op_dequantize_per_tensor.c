/*
 * quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, int zero_point,
 *     int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
 *     Tensor(a!) out) -> Tensor(a!)
 * quantized_decomposed::dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale,
 *     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *,
 *     ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)
 *
 * out = (input.to(out_dtype) - zero_point) * scale, computed as torch does:
 * each step rounded to out_dtype (float32 when None). input has dtype
 * (uint8, int8, int16, int32). The Tensor overload reads scale and
 * zero_point from one-element tensors. Arguments: 7 inputs, out, out (9).
 */
#include "quant_util.h"

static ember_status dequantize_per_tensor(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs, bool tensor_params) {
    ember_tensor *in, *out;
    int64_t qmin, qmax;
    int dtype;
    eq_affine a = {1, 1, NULL, 0.0, NULL, 0, true};
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    if (tensor_params) {
        ember_tensor *s, *z;
        EK_TRY(ek_arg_tensor(ctx, args, 1, &s));
        EK_TRY(ek_arg_tensor(ctx, args, 2, &z));
        EK_TRY(eq_item_double(ctx, "dequantize_per_tensor: scale", s, &a.scale));
        EK_TRY(eq_item_int(ctx, "dequantize_per_tensor: zero_point", z, &a.zero_point));
    } else {
        EK_TRY(ek_arg_double(ctx, args, 1, &a.scale));
        EK_TRY(ek_arg_int(ctx, args, 2, &a.zero_point));
    }
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    EK_TRY(eq_check_out_dtype(ctx, "dequantize_per_tensor", args, 6, out));
    EK_TRY(eq_check_qrange(ctx, "dequantize_per_tensor", dtype, qmin, qmax));
    return eq_dequantize(ctx, "dequantize_per_tensor", out, in, &a, dtype);
}

ember_status eq_op_dequantize_per_tensor_out(ember_kernel_ctx *ctx, ember_value **args,
                                             size_t nargs) {
    return dequantize_per_tensor(ctx, args, nargs, false);
}

ember_status eq_op_dequantize_per_tensor_tensor_out(ember_kernel_ctx *ctx, ember_value **args,
                                                    size_t nargs) {
    return dequantize_per_tensor(ctx, args, nargs, true);
}
