/*
 * quantized_decomposed::quantize_per_channel_group.out(Tensor input, Tensor scales,
 *     Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size, *,
 *     Tensor(a!) out) -> Tensor(a!)
 *
 * input (M, N) is split into groups of group_size consecutive elements per
 * row, group g with its own parameters:
 * out = clamp(round(input * (1 / scales[g]) + zero_points[g]), quant_min, quant_max).
 * As in torch: group_size > 1; a group_size above N with one scale per row
 * means N; N must divide into groups; NaN input is an error.
 * Arguments: 7 inputs, out, out (9).
 */
#include "quant_util.h"

#define DEF_HAS_NAN(SFX, T, CT, LOAD, STORE)                                                       \
    static bool has_nan_##SFX(const T *x, int64_t n) {                                             \
        for (int64_t i = 0; i < n; i++) {                                                          \
            CT v = LOAD(x[i]);                                                                     \
            if (v != v) return true;                                                               \
        }                                                                                          \
        return false;                                                                              \
    }

EK_FOR_EACH_FLOAT(DEF_HAS_NAN)

static bool has_nan(const ember_tensor *t) {
    switch (t->dtype) {
    case EMBER_FLOAT32: return has_nan_f32(t->data, t->numel);
    case EMBER_FLOAT64: return has_nan_f64(t->data, t->numel);
    case EMBER_FLOAT16: return has_nan_f16(t->data, t->numel);
    case EMBER_BFLOAT16: return has_nan_bf16(t->data, t->numel);
    default: return false;
    }
}

ember_status eq_op_quantize_per_channel_group_out(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs) {
    ember_tensor *in, *scales, *zps, *out;
    int64_t qmin, qmax, group_size;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(eq_arg_dtype(ctx, args, 5, &dtype));
    EK_TRY(ek_arg_int(ctx, args, 6, &group_size));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    eq_affine a;
    EK_TRY(eq_group_affine(ctx, "quantize_per_channel_group", in, scales, zps, group_size, &a));
    EK_TRY(eq_check_qrange(ctx, "quantize_per_channel_group", dtype, qmin, qmax));
    if (ek_is_float(in->dtype) && in->numel > 0 && has_nan(in))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "quantize_per_channel_group: input contains NaN");
    return eq_quantize(ctx, "quantize_per_channel_group", out, in, &a, qmin, qmax, dtype);
}
