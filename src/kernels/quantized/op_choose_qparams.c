/*
 * quantized_decomposed::choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max,
 *     float eps, ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
 *     -> (Tensor(a!), Tensor(b!))
 *
 * Per-tensor affine parameters from input's range, as torch's
 * determine_qparams computes them:
 *   lo = min(min(input), 0), hi = max(max(input), 0)           (input's dtype)
 *   scale = max((hi - lo) / (quant_max - quant_min), eps)      (float32)
 *   zero_point = clamp(quant_min - round(lo / scale), quant_min, quant_max)
 * scale_out (float64) and zero_point_out (int64) get shape (1). input is
 * float32, float16 or bfloat16 and not empty; quant_min <= 0 <= quant_max.
 * Arguments: 5 inputs, 2 outs, TensorList (8).
 */
#include <math.h>

#include "quant_util.h"

/* x rounded to dtype's precision (float32, float16, bfloat16), as a float op's result is. */
static double round_as(int dtype, double x) {
    float f = (float)x;
    if (dtype == EMBER_FLOAT16) f = ember_half_to_float(ember_float_to_half(f));
    if (dtype == EMBER_BFLOAT16) f = ember_bf16_to_float(ember_float_to_bf16(f));
    return (double)f;
}

ember_status eq_op_choose_qparams_tensor_out(ember_kernel_ctx *ctx, ember_value **args,
                                             size_t nargs) {
    ember_tensor *in, *scale_out, *zp_out;
    int64_t qmin, qmax;
    double eps;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 2, &qmax));
    EK_TRY(ek_arg_double(ctx, args, 3, &eps));
    EK_TRY(eq_arg_dtype(ctx, args, 4, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 5, &scale_out));
    EK_TRY(ek_arg_out(ctx, args, 6, &zp_out));
    if (in->dtype != EMBER_FLOAT32 && in->dtype != EMBER_FLOAT16 && in->dtype != EMBER_BFLOAT16)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "choose_qparams: input must be float32, float16 or bfloat16, got "
                                 "%s",
                                 ember_dtype_name(in->dtype));
    EK_TRY(eq_check_qrange(ctx, "choose_qparams", dtype, qmin, qmax));
    if (qmin > 0 || qmax < 0 || qmin >= qmax)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "choose_qparams: need quant_min <= 0 <= quant_max and "
                                 "quant_min < quant_max, got [%lld, %lld]",
                                 (long long)qmin, (long long)qmax);
    if (in->numel == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "choose_qparams: input is empty");
    EK_TRY(ek_check_contiguous(ctx, in, "choose_qparams input"));
    if (scale_out->dtype != EMBER_FLOAT64 || zp_out->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "choose_qparams: scale_out must be float64 and zero_point_out "
                                 "int64");
    const int64_t one[1] = {1};
    EK_TRY(ek_resize_out(ctx, scale_out, one, 1));
    EK_TRY(ek_resize_out(ctx, zp_out, one, 1));

    ek_load_fn load = ek_loader(in->dtype, EK_CT_F64);
    double lo = INFINITY, hi = -INFINITY, buf[EK_CHUNK];
    bool nan = false;
    size_t isz = ember_dtype_size(in->dtype);
    for (int64_t i0 = 0; i0 < in->numel; i0 += EK_CHUNK) {
        size_t n = (size_t)(in->numel - i0 < EK_CHUNK ? in->numel - i0 : EK_CHUNK);
        load(buf, (const char *)in->data + (size_t)i0 * isz, 1, n);
        for (size_t j = 0; j < n; j++) {
            if (buf[j] != buf[j]) nan = true;
            if (buf[j] < lo) lo = buf[j];
            if (buf[j] > hi) hi = buf[j];
        }
    }
    if (nan) lo = hi = NAN; /* aminmax propagates NaN */
    if (lo > 0.0) lo = 0.0;
    if (hi < 0.0) hi = 0.0;
    double scale = round_as(in->dtype, hi - lo);
    scale = round_as(in->dtype, scale / (double)(qmax - qmin));
    /* torch.max with a float32 eps tensor: NaN propagates, the result is float32 */
    double feps = (double)(float)eps;
    if (scale == scale && scale < feps) scale = feps;
    double r = nearbyint(round_as(EMBER_FLOAT32, lo / scale));
    int64_t zp = qmin - ek_f64_to_i64(r);
    zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
    ((double *)scale_out->data)[0] = scale;
    ((int64_t *)zp_out->data)[0] = zp;
    return EMBER_OK;
}
