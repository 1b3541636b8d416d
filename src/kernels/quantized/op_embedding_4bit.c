/*
 * quantized_decomposed::embedding_4bit.out(Tensor weight, Tensor weight_scales,
 *     Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max,
 *     Tensor indices, *, Tensor(a!) out) -> Tensor(a!)
 * quantized_decomposed::embedding_4bit.dtype_out(..., Tensor indices,
 *     ScalarType? dtype=None, *, Tensor(a!) out) -> Tensor(a!)
 *
 * A 4-bit table: weight (V, D / 2) of uint8, two values per byte, ExecuTorch's
 * packing: value 2k in the high nibble of byte k, value 2k + 1 in the low
 * one, each stored as q + 8 (q in [-8, 7]). Scales (and zero points) per row
 * or per group of a row; see embedding_util.h. Arguments: 6 inputs (7 with
 * dtype), out, out.
 */
#include "embedding_util.h"

static int32_t nibble_value(const void *row, int64_t j, bool int8_weight) {
    (void)int8_weight;
    uint8_t b = ((const uint8_t *)row)[j / 2];
    return (int32_t)((j % 2 == 0) ? (b >> 4) : (b & 0x0F)) - 8;
}

static const eq_embedding_spec k_4bit = {"embedding_4bit", 2, false, -8, 7, nibble_value};

ember_status eq_op_embedding_4bit_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return eq_embedding(ctx, &k_4bit, args, nargs, false);
}

ember_status eq_op_embedding_4bit_dtype_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    return eq_embedding(ctx, &k_4bit, args, nargs, true);
}
