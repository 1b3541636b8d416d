/*
 * quant_util.h — shared engine of the quantized_decomposed kernels (internal).
 *
 * The quantize / dequantize ops differ only in how their parameters map onto
 * elements and in the arithmetic order torch's reference implementation
 * (torch.ao.quantization.fx._decomposed) uses, which these kernels follow
 * exactly: round half to even, then clamp to [quant_min, quant_max].
 *
 * Element i of the (contiguous) input uses parameter (i / inner) % count:
 *   per tensor:         inner 1, count 1
 *   per channel (axis): inner = product of the sizes after axis, count = size(axis)
 *   per token:          inner = last size, count = number of tokens
 *   per channel group:  inner = group_size, count = numel / group_size
 *
 * Quantized dtypes: uint8, int8, int16, int32. Prefix: eq_.
 */
#ifndef EMBER_KERNELS_QUANTIZED_QUANT_UTIL_H
#define EMBER_KERNELS_QUANTIZED_QUANT_UTIL_H

#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"

/** How one quantize or dequantize op reads its parameters. */
typedef struct eq_affine {
    int64_t inner, count;
    /* scales: a float32/float64 tensor of count elements, or NULL for the scalar */
    const ember_tensor *scales;
    double scale;
    /* zero points: an integer tensor of count elements, or NULL for the scalar */
    const ember_tensor *zero_points;
    int64_t zero_point;
    /* quantize: round(x * inv) + zp (per tensor, per channel) rather than
     * round(x * inv + zp) (per token, per group) */
    bool round_first;
} eq_affine;

/**
 * Fails INVALID_ARGUMENT unless dtype is uint8/int8/int16/int32 and
 * [qmin, qmax] lies within its range (op names the kernel in the message).
 */
ember_status eq_check_qrange(ember_kernel_ctx *ctx, const char *op, int dtype, int64_t qmin,
                             int64_t qmax);

/** Reads a ScalarType argument (an Int dtype code). */
ember_status eq_arg_dtype(ember_kernel_ctx *ctx, ember_value **args, size_t i, int *dtype);

/**
 * Checks a scales tensor (float32 or float64, contiguous, count elements) and
 * a zero-points tensor (integer, contiguous, count elements; may be NULL).
 */
ember_status eq_check_params(ember_kernel_ctx *ctx, const char *op, const ember_tensor *scales,
                             const ember_tensor *zero_points, int64_t count);

/** The single value of a one-element tensor, as double / as int64. */
ember_status eq_item_double(ember_kernel_ctx *ctx, const char *what, const ember_tensor *t,
                            double *out);
ember_status eq_item_int(ember_kernel_ctx *ctx, const char *what, const ember_tensor *t,
                         int64_t *out);

/**
 * Parameters of the per-channel-group ops for a 2-d input (M, N) in groups
 * of group_size along each row, with torch's rules: group_size > 1; a
 * group_size above N with one scale per row (scales' last size 1) means N;
 * N must divide into groups; scales (and zero_points, if any) hold one
 * value per group. Fails INVALID_ARGUMENT / SHAPE_MISMATCH.
 */
ember_status eq_group_affine(ember_kernel_ctx *ctx, const char *op, const ember_tensor *in,
                             const ember_tensor *scales, const ember_tensor *zero_points,
                             int64_t group_size, eq_affine *a);

/**
 * out = clamp(round(in * (1 / scale) (+ zp)) ...), resized to in's shape;
 * out's dtype must be dtype. The product is computed in float64 if in or the
 * scales are float64, else in float32 (the scalar scale: 1 / scale rounded
 * to float32), as torch promotes. in must be a float dtype, contiguous.
 */
ember_status eq_quantize(ember_kernel_ctx *ctx, const char *op, ember_tensor *out,
                         const ember_tensor *in, const eq_affine *a, int64_t qmin, int64_t qmax,
                         int dtype);

/**
 * out = (in - zp) * scale in out's dtype (float), resized to in's shape.
 * The scalar form rounds to out's dtype after each step, as torch's
 * (input.to(out_dtype) - zero_point) * scale does; the tensor form subtracts
 * in integers and multiplies in the scales' dtype. in must have dtype.
 */
ember_status eq_dequantize(ember_kernel_ctx *ctx, const char *op, ember_tensor *out,
                           const ember_tensor *in, const eq_affine *a, int dtype);

/**
 * Reads `ScalarType? out_dtype` (argument i): out must have that dtype, or
 * float32 when it is None.
 */
ember_status eq_check_out_dtype(ember_kernel_ctx *ctx, const char *op, ember_value **args,
                                size_t i, const ember_tensor *out);

#endif /* EMBER_KERNELS_QUANTIZED_QUANT_UTIL_H */
