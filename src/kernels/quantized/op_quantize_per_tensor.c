/*
 * quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point,
 *     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)
 * quantized_decomposed::quantize_per_tensor.Tensor_out(Tensor input, Tensor scale,
 *     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *,
 *     Tensor(a!) out) -> Tensor(a!)
 *
 * out = clamp(round(input * (1 / scale)) + zero_point, quant_min, quant_max)
 * in float32 (float16 / bfloat16 input is widened first), round half to
 * even, written as dtype (uint8, int8, int16, int32). The Tensor overload
 * reads scale and zero_point from one-element tensors. Arguments: 6 inputs,
 * out, out (8).
 */
#include "quant_util.h"

static ember_status quantize_per_tensor(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                        bool tensor_params) {
    ember_tensor *in, *out;
    int64_t qmin, qmax;
    int dtype;
    eq_affine a = {1, 1, NULL, 0.0, NULL, 0, true};
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    if (tensor_params) {
        ember_tensor *s, *z;
        EK_TRY(ek_arg_tensor(ctx, args, 1, &s));
        EK_TRY(ek_arg_tensor(ctx, args, 2, &z));
        EK_TRY(eq_item_double(ctx, "quantize_per_tensor: scale", s, &a.scale));
        EK_TRY(eq_item_int(ctx, "quantize_per_tensor: zero_point", z, &a.zero_point));
    } else {
        EK_TRY(ek_arg_double(ctx, args, 1, &a.scale));
        EK_TRY(ek_arg_int(ctx, args, 2, &a.zero_point));
    }
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    if (in->dtype == EMBER_FLOAT64)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "quantize_per_tensor: input must be float32, float16 or bfloat16");
    return eq_quantize(ctx, "quantize_per_tensor", out, in, &a, qmin, qmax, dtype);
}

ember_status eq_op_quantize_per_tensor_out(ember_kernel_ctx *ctx, ember_value **args,
                                           size_t nargs) {
    return quantize_per_tensor(ctx, args, nargs, false);
}

ember_status eq_op_quantize_per_tensor_tensor_out(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs) {
    return quantize_per_tensor(ctx, args, nargs, true);
}
