/*
 * quantized_decomposed::embedding_2bit.out(Tensor weight, Tensor weight_scales,
 *     Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max,
 *     Tensor indices, *, Tensor(a!) out) -> Tensor(a!)
 * quantized_decomposed::embedding_2bit.dtype_out(..., Tensor indices,
 *     ScalarType? dtype=None, *, Tensor(a!) out) -> Tensor(a!)
 *
 * A 2-bit table: weight (V, D / 4) of uint8, four values per byte, ExecuTorch's
 * packing: value 4k + i in bits 2i..2i+1 of byte k (the first value in the
 * lowest bits), each stored as q + 2 (q in [-2, 1]). Scales (and zero
 * points) per row or per group of a row; see embedding_util.h. Arguments:
 * 6 inputs (7 with dtype), out, out.
 */
#include "embedding_util.h"

static int32_t crumb_value(const void *row, int64_t j, bool int8_weight) {
    (void)int8_weight;
    uint8_t b = ((const uint8_t *)row)[j / 4];
    return (int32_t)((b >> (2 * (j % 4))) & 0x03) - 2;
}

static const eq_embedding_spec k_2bit = {"embedding_2bit", 4, false, -2, 1, crumb_value};

ember_status eq_op_embedding_2bit_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return eq_embedding(ctx, &k_2bit, args, nargs, false);
}

ember_status eq_op_embedding_2bit_dtype_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    return eq_embedding(ctx, &k_2bit, args, nargs, true);
}
