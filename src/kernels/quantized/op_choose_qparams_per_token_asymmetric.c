/*
 * quantized_decomposed::choose_qparams_per_token_asymmetric.out(Tensor input,
 *     ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
 *     -> (Tensor(a!), Tensor(b!))
 *
 * Asymmetric int8 parameters ([-128, 127]) for every token (row along the
 * last dim), as torch's reference computes them in input's dtype:
 *   lo = min(min(row), 0), hi = max(max(row), 0)
 *   scale = max((hi - lo) / 255, FLT_EPSILON)
 *   zero_point = round(clamp(lo / scale + 128 + hi / scale + 127 > 0 ?
 *                            -128 - lo / scale : 127 - hi / scale, -128, 127))
 * scale_out (float64) and zero_point_out (int64) get input's shape with the
 * last size 1. Float dtypes. Arguments: 2 inputs, 2 outs, TensorList (5).
 */
#include <float.h>
#include <math.h>

#include "quant_util.h"

/* x rounded to dtype's precision, as the result of one op in that dtype. */
static double rnd(int dtype, double x) {
    if (dtype == EMBER_FLOAT64) return x;
    float f = (float)x;
    if (dtype == EMBER_FLOAT16) f = ember_half_to_float(ember_float_to_half(f));
    if (dtype == EMBER_BFLOAT16) f = ember_bf16_to_float(ember_float_to_bf16(f));
    return (double)f;
}

/* max / min as torch.max / torch.min of two tensors: NaN propagates. */
static double max_nan(double a, double b) {
    return a != a || b != b ? NAN : a > b ? a : b;
}
static double min_nan(double a, double b) {
    return a != a || b != b ? NAN : a < b ? a : b;
}

ember_status eq_op_choose_qparams_per_token_asymmetric_out(ember_kernel_ctx *ctx,
                                                           ember_value **args, size_t nargs) {
    ember_tensor *in, *scale_out, *zp_out;
    int dtype;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(eq_arg_dtype(ctx, args, 1, &dtype));
    EK_TRY(ek_arg_out(ctx, args, 2, &scale_out));
    EK_TRY(ek_arg_out(ctx, args, 3, &zp_out));
    EK_TRY(ek_check_float(ctx, in->dtype, "choose_qparams_per_token_asymmetric"));
    EK_TRY(ek_check_contiguous(ctx, in, "choose_qparams_per_token_asymmetric input"));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "choose_qparams_per_token_asymmetric: input must have a dim");
    if (scale_out->dtype != EMBER_FLOAT64 || zp_out->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "choose_qparams_per_token_asymmetric: scale_out must be float64 "
                                 "and zero_point_out int64");
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(in, shape);
    int64_t cols = shape[in->dim - 1];
    shape[in->dim - 1] = 1;
    EK_TRY(ek_check_no_alias(ctx, scale_out, in));
    EK_TRY(ek_check_no_alias(ctx, zp_out, in));
    EK_TRY(ek_resize_out(ctx, scale_out, shape, in->dim));
    EK_TRY(ek_resize_out(ctx, zp_out, shape, in->dim));
    EK_TRY(ek_check_contiguous(ctx, scale_out, "scale_out"));
    EK_TRY(ek_check_contiguous(ctx, zp_out, "zero_point_out"));
    if (scale_out->numel == 0) return EMBER_OK;
    if (cols == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "choose_qparams_per_token_asymmetric: empty tokens");
    const int dt = in->dtype;
    const double qmin = -128.0, qmax = 127.0;
    ek_load_fn load = ek_loader(dt, EK_CT_F64);
    size_t isz = ember_dtype_size(dt);
    double buf[EK_CHUNK];
    for (int64_t r = 0; r < scale_out->numel; r++) {
        double lo = INFINITY, hi = -INFINITY;
        bool nan = false;
        for (int64_t c0 = 0; c0 < cols; c0 += EK_CHUNK) {
            size_t n = (size_t)(cols - c0 < EK_CHUNK ? cols - c0 : EK_CHUNK);
            load(buf, (const char *)in->data + (size_t)(r * cols + c0) * isz, 1, n);
            for (size_t j = 0; j < n; j++) {
                if (buf[j] != buf[j]) nan = true;
                if (buf[j] < lo) lo = buf[j];
                if (buf[j] > hi) hi = buf[j];
            }
        }
        if (nan) lo = hi = NAN; /* amin / amax propagate NaN */
        lo = min_nan(lo, 0.0);
        hi = max_nan(hi, 0.0);
        double scale = rnd(dt, hi - lo);
        scale = rnd(dt, scale / (qmax - qmin));
        if (scale == scale && scale < (double)FLT_EPSILON) scale = rnd(dt, (double)FLT_EPSILON);
        double dmin = rnd(dt, lo / scale), dmax = rnd(dt, hi / scale);
        double emin = rnd(dt, qmin + dmin), emax = rnd(dt, qmax + dmax);
        double zp = rnd(dt, emin + emax) > 0.0 ? rnd(dt, qmin - dmin) : rnd(dt, qmax - dmax);
        if (zp < qmin) zp = qmin;
        if (zp > qmax) zp = qmax;
        zp = nearbyint(zp);
        ((double *)scale_out->data)[r] = scale;
        ((int64_t *)zp_out->data)[r] = ek_f64_to_i64(zp);
    }
    return EMBER_OK;
}
