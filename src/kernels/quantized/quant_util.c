/*
 * quant_util.c — shared engine of the quantized_decomposed kernels.
 */
#include <math.h>

#include "quant_util.h"

ember_status eq_check_qrange(ember_kernel_ctx *ctx, const char *op, int dtype, int64_t qmin,
                             int64_t qmax) {
    int64_t lo, hi;
    switch (dtype) {
    case EMBER_UINT8: lo = 0, hi = UINT8_MAX; break;
    case EMBER_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
    case EMBER_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
    case EMBER_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
    default:
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: quantized dtype %s not supported (uint8, int8, int16, int32)",
                                 op, ember_dtype_name(dtype));
    }
    if (qmin < lo || qmax > hi)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: quant range [%lld, %lld] exceeds %s's [%lld, %lld]", op,
                                 (long long)qmin, (long long)qmax, ember_dtype_name(dtype),
                                 (long long)lo, (long long)hi);
    return EMBER_OK;
}

ember_status eq_arg_dtype(ember_kernel_ctx *ctx, ember_value **args, size_t i, int *dtype) {
    int64_t v;
    EK_TRY(ek_arg_int(ctx, args, i, &v));
    if (v < 0 || v > 255)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "argument %zu: %lld is not a dtype code", i, (long long)v);
    *dtype = (int)v;
    return EMBER_OK;
}

ember_status eq_check_out_dtype(ember_kernel_ctx *ctx, const char *op, ember_value **args,
                                size_t i, const ember_tensor *out) {
    int want = EMBER_FLOAT32;
    if (args[i]->tag != EMBER_TAG_NONE) EK_TRY(eq_arg_dtype(ctx, args, i, &want));
    if (out->dtype != want)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out is %s, out_dtype is %s",
                                 op, ember_dtype_name(out->dtype), ember_dtype_name(want));
    if (!ek_is_float(want))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: out_dtype %s is not a float dtype", op,
                                 ember_dtype_name(want));
    return EMBER_OK;
}

static bool is_qint(int dt) {
    return dt == EMBER_UINT8 || dt == EMBER_INT8 || dt == EMBER_INT16 || dt == EMBER_INT32 ||
           dt == EMBER_INT64;
}

ember_status eq_check_params(ember_kernel_ctx *ctx, const char *op, const ember_tensor *scales,
                             const ember_tensor *zero_points, int64_t count) {
    if (scales->dtype != EMBER_FLOAT32 && scales->dtype != EMBER_FLOAT64)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: scales must be float32 or float64, got %s", op,
                                 ember_dtype_name(scales->dtype));
    EK_TRY(ek_check_contiguous(ctx, scales, "scales"));
    if (scales->numel != count)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: scales has %lld elements, not one per parameter (%lld)", op,
                                 (long long)scales->numel, (long long)count);
    if (zero_points == NULL) return EMBER_OK;
    if (!is_qint(zero_points->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: zero_points must be an integer tensor, got %s", op,
                                 ember_dtype_name(zero_points->dtype));
    EK_TRY(ek_check_contiguous(ctx, zero_points, "zero_points"));
    if (zero_points->numel != count)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: zero_points has %lld elements, not one per parameter (%lld)", op,
                                 (long long)zero_points->numel, (long long)count);
    return EMBER_OK;
}

ember_status eq_group_affine(ember_kernel_ctx *ctx, const char *op, const ember_tensor *in,
                             const ember_tensor *scales, const ember_tensor *zero_points,
                             int64_t group_size, eq_affine *a) {
    if (in->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: input must be 2-d, got %u-d",
                                 op, (unsigned)in->dim);
    if (group_size <= 1)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: group_size must be > 1, got %lld", op, (long long)group_size);
    int64_t n = in->sizes[1];
    if (group_size > n && scales->dim > 0 && scales->sizes[scales->dim - 1] == 1) group_size = n;
    if (group_size < 1 || n % group_size != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: row length %lld does not divide into groups of %lld", op,
                                 (long long)n, (long long)group_size);
    a->inner = group_size;
    a->count = in->numel / group_size;
    a->scales = scales;
    a->scale = 0.0;
    a->zero_points = zero_points;
    a->zero_point = 0;
    a->round_first = false;
    if (in->numel == 0) return EMBER_OK;
    return eq_check_params(ctx, op, scales, zero_points, a->count);
}

/* Element i of a float32/float64 tensor, as double (exact). */
static double read_f(const ember_tensor *t, int64_t i) {
    return t->dtype == EMBER_FLOAT64 ? ((const double *)t->data)[i]
                                     : (double)((const float *)t->data)[i];
}

/* Element i of an integer tensor. */
static int64_t read_i(const ember_tensor *t, int64_t i) {
    switch (t->dtype) {
    case EMBER_UINT8: return ((const uint8_t *)t->data)[i];
    case EMBER_INT8: return ((const int8_t *)t->data)[i];
    case EMBER_INT16: return ((const int16_t *)t->data)[i];
    case EMBER_INT32: return ((const int32_t *)t->data)[i];
    default: return ((const int64_t *)t->data)[i];
    }
}

ember_status eq_item_double(ember_kernel_ctx *ctx, const char *what, const ember_tensor *t,
                            double *out) {
    if (t->numel != 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s must have one element, has %lld", what, (long long)t->numel);
    ek_load_fn load = ek_loader(t->dtype, EK_CT_F64);
    if (load == NULL || !ek_is_float(t->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: dtype %s is not a float dtype",
                                 what, ember_dtype_name(t->dtype));
    load(out, t->data, 1, 1);
    return EMBER_OK;
}

ember_status eq_item_int(ember_kernel_ctx *ctx, const char *what, const ember_tensor *t,
                         int64_t *out) {
    if (t->numel != 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s must have one element, has %lld", what, (long long)t->numel);
    if (!is_qint(t->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: dtype %s is not an integer dtype", what,
                                 ember_dtype_name(t->dtype));
    *out = read_i(t, 0);
    return EMBER_OK;
}

/* Parameter index of element i. */
static int64_t param_of(const eq_affine *a, int64_t i) {
    return (i / a->inner) % a->count;
}

static int64_t clamp_q(double v, int64_t qmin, int64_t qmax) {
    int64_t q = ek_f64_to_i64(v); /* integral already; NaN -> 0 */
    return q < qmin ? qmin : q > qmax ? qmax : q;
}

/* One chunk of quantization in float32: x, inv and zp as torch's float ops see them. */
static void quantize_chunk_f32(int64_t *q, const float *x, size_t n, int64_t i0,
                               const eq_affine *a, int64_t qmin, int64_t qmax) {
    const float lo = (float)qmin, hi = (float)qmax;
    for (size_t j = 0; j < n; j++) {
        int64_t p = param_of(a, i0 + (int64_t)j);
        float inv = a->scales != NULL ? 1.0f / (float)read_f(a->scales, p)
                                      : (float)(1.0 / a->scale);
        float zp = (float)(a->zero_points != NULL ? read_i(a->zero_points, p) : a->zero_point);
        /* separate statements: torch rounds after each tensor op */
        float v = x[j] * inv;
        if (a->round_first) {
            v = nearbyintf(v);
            v = v + zp;
        } else {
            v = v + zp;
            v = nearbyintf(v);
        }
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        q[j] = clamp_q((double)v, qmin, qmax);
    }
}

static void quantize_chunk_f64(int64_t *q, const double *x, size_t n, int64_t i0,
                               const eq_affine *a, int64_t qmin, int64_t qmax) {
    for (size_t j = 0; j < n; j++) {
        int64_t p = param_of(a, i0 + (int64_t)j);
        double inv = 1.0 / (a->scales != NULL ? read_f(a->scales, p) : a->scale);
        double zp = (double)(a->zero_points != NULL ? read_i(a->zero_points, p) : a->zero_point);
        double v = x[j] * inv;
        if (a->round_first) {
            v = nearbyint(v);
            v = v + zp;
        } else {
            v = v + zp;
            v = nearbyint(v);
        }
        if (v < (double)qmin) v = (double)qmin;
        if (v > (double)qmax) v = (double)qmax;
        q[j] = clamp_q(v, qmin, qmax);
    }
}

ember_status eq_quantize(ember_kernel_ctx *ctx, const char *op, ember_tensor *out,
                         const ember_tensor *in, const eq_affine *a, int64_t qmin, int64_t qmax,
                         int dtype) {
    EK_TRY(eq_check_qrange(ctx, op, dtype, qmin, qmax));
    if (out->dtype != dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out is %s, dtype is %s", op,
                                 ember_dtype_name(out->dtype), ember_dtype_name(dtype));
    if (!ek_is_float(in->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: input must be a float tensor, got %s", op,
                                 ember_dtype_name(in->dtype));
    EK_TRY(ek_check_contiguous(ctx, in, "input"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_check_contiguous(ctx, out, "out"));
    if (out->numel == 0) return EMBER_OK;
    if (a->inner < 1 || a->count < 1)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "%s: no parameters", op);
    bool f64 = in->dtype == EMBER_FLOAT64 || (a->scales != NULL && a->scales->dtype == EMBER_FLOAT64);
    ek_load_fn load = ek_loader(in->dtype, f64 ? EK_CT_F64 : EK_CT_F32);
    ek_store_fn store = ek_storer(out->dtype, EK_CT_I64);
    size_t isz = ember_dtype_size(in->dtype), osz = ember_dtype_size(out->dtype);
    union {
        float f[EK_CHUNK];
        double d[EK_CHUNK];
    } x;
    int64_t q[EK_CHUNK];
    for (int64_t i0 = 0; i0 < in->numel; i0 += EK_CHUNK) {
        size_t n = (size_t)(in->numel - i0 < EK_CHUNK ? in->numel - i0 : EK_CHUNK);
        load(&x, (const char *)in->data + (size_t)i0 * isz, 1, n);
        if (f64)
            quantize_chunk_f64(q, x.d, n, i0, a, qmin, qmax);
        else
            quantize_chunk_f32(q, x.f, n, i0, a, qmin, qmax);
        store((char *)out->data + (size_t)i0 * osz, 1, q, n);
    }
    return EMBER_OK;
}

/* x rounded to dtype (float16 / bfloat16 / float32) and back. */
static float round_to(int dtype, float x) {
    if (dtype == EMBER_FLOAT16) return ember_half_to_float(ember_float_to_half(x));
    if (dtype == EMBER_BFLOAT16) return ember_bf16_to_float(ember_float_to_bf16(x));
    return x;
}

ember_status eq_dequantize(ember_kernel_ctx *ctx, const char *op, ember_tensor *out,
                           const ember_tensor *in, const eq_affine *a, int dtype) {
    if (in->dtype != dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: input is %s, dtype is %s", op,
                                 ember_dtype_name(in->dtype), ember_dtype_name(dtype));
    if (!ek_is_float(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: out must be float, got %s",
                                 op, ember_dtype_name(out->dtype));
    EK_TRY(ek_check_contiguous(ctx, in, "input"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_check_contiguous(ctx, out, "out"));
    if (out->numel == 0) return EMBER_OK;
    if (a->inner < 1 || a->count < 1)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "%s: no parameters", op);
    const int od = out->dtype;
    /* results in double (exact for every float dtype's values), stored in one go */
    ek_store_fn store = ek_storer(od, EK_CT_F64);
    size_t osz = ember_dtype_size(od);
    double r[EK_CHUNK];
    for (int64_t i0 = 0; i0 < in->numel; i0 += EK_CHUNK) {
        size_t n = (size_t)(in->numel - i0 < EK_CHUNK ? in->numel - i0 : EK_CHUNK);
        for (size_t j = 0; j < n; j++) {
            int64_t i = i0 + (int64_t)j, p = param_of(a, i);
            int64_t q = read_i(in, i);
            int64_t zp = a->zero_points != NULL ? read_i(a->zero_points, p) : a->zero_point;
            if (a->scales == NULL) {
                /* (input.to(out_dtype) - zero_point) * scale, rounding after each step */
                if (od == EMBER_FLOAT64) {
                    double v = (double)q;
                    v = v - (double)zp;
                    r[j] = v * a->scale;
                } else {
                    float v = round_to(od, (float)q);
                    v = round_to(od, v - (float)zp);
                    r[j] = (double)round_to(od, v * (float)a->scale);
                }
            } else {
                /* (input - zero_points) in integers, times the scales in their dtype */
                int64_t d = (int64_t)((uint64_t)q - (uint64_t)zp);
                if (a->scales->dtype == EMBER_FLOAT64) {
                    r[j] = (double)d * read_f(a->scales, p);
                } else {
                    float v = (float)d * (float)read_f(a->scales, p);
                    r[j] = (double)v;
                }
            }
        }
        store((char *)out->data + (size_t)i0 * osz, 1, r, n);
    }
    return EMBER_OK;
}
