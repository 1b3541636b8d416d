/*
 * quantized_decomposed::embedding_byte.out(Tensor weight, Tensor weight_scales,
 *     Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max,
 *     Tensor indices, *, Tensor(a!) out) -> Tensor(a!)
 * quantized_decomposed::embedding_byte.dtype_out(..., Tensor indices, *,
 *     ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
 *
 * An 8-bit table: weight (V, D) of int8 or uint8, one byte per value, with
 * scales (and zero points) per row or per group of a row. out =
 * dequantized rows weight[indices]; see embedding_util.h for the rules.
 * Arguments: 6 inputs (7 with dtype), out, out.
 */
#include "embedding_util.h"

static int32_t byte_value(const void *row, int64_t j, bool int8_weight) {
    return int8_weight ? (int32_t)((const int8_t *)row)[j] : (int32_t)((const uint8_t *)row)[j];
}

static const eq_embedding_spec k_byte = {"embedding_byte", 1, true, INT8_MIN, UINT8_MAX,
                                         byte_value};

ember_status eq_op_embedding_byte_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return eq_embedding(ctx, &k_byte, args, nargs, false);
}

ember_status eq_op_embedding_byte_dtype_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    return eq_embedding(ctx, &k_byte, args, nargs, true);
}
