/*
 * embedding_util.h — shared engine of the quantized embedding kernels
 * (embedding_byte, embedding_4bit, embedding_2bit; internal).
 *
 * A quantized embedding table is a weight (V, C) of integers, C bytes per
 * row holding D = C * (8 / bits) values, with scales (V) or (V, G): one per
 * row or one per group of D / G consecutive values of a row, and optional
 * zero points of the same shape. Row r, value j dequantizes to
 *
 *     (q[r][j] - zero_point[r][j / (D / G)]) * scale[r][j / (D / G)]
 *
 * computed in float32 and stored in out's dtype (float32, float16, bfloat16
 * or float64). out = table[indices]: shape indices.shape + (D,).
 *
 * The three ops differ only in how a value is read from its row, which each
 * op file supplies (eq_embedding_spec). Prefix: eq_.
 */
#ifndef EMBER_KERNELS_QUANTIZED_EMBEDDING_UTIL_H
#define EMBER_KERNELS_QUANTIZED_EMBEDDING_UTIL_H

#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"

/** How one quantized embedding op stores its values. */
typedef struct eq_embedding_spec {
    const char *name;        /* op name for messages, "embedding_4bit" */
    int values_per_byte;     /* 1, 2 or 4 */
    bool int8_weight;        /* the weight may be int8 (else uint8 only) */
    int64_t qmin, qmax;      /* the widest quant range the format holds (uint8 widens
                                embedding_byte's to [0, 255]) */
    /* value j (0 <= j < D) of a row of packed bytes */
    int32_t (*value)(const void *row, int64_t j, bool int8_weight);
} eq_embedding_spec;

/**
 * Runs op spec with ExecuTorch's arguments:
 *   .out:       weight, weight_scales, weight_zero_points?, weight_quant_min,
 *               weight_quant_max, indices, out, out (nargs 8)
 *   .dtype_out: the same with `ScalarType? dtype` before out (nargs 9)
 * Validates everything before writing: weight 2-d and of the op's dtype;
 * scales float (float32/float16/bfloat16/float64), (V) or (V, G) with G
 * dividing D; zero points (float or integer) shaped as the scales; the
 * quant range ordered and inside the format's; indices int64 or int32, each
 * in [0, V) (EMBER_ERR_DATA_OUT_OF_BOUNDS naming it); out a float tensor of
 * dtype (when given) or the scales' dtype (.out, or dtype None), resized to
 * indices.shape + (D,). Allocates nothing.
 */
ember_status eq_embedding(ember_kernel_ctx *ctx, const eq_embedding_spec *spec,
                          ember_value **args, size_t nargs, bool has_dtype);

#endif /* EMBER_KERNELS_QUANTIZED_EMBEDDING_UTIL_H */
