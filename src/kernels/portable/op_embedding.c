/*
 * aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
 *     bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out)
 *
 * out[..., :] = weight[indices[...], :]: out has shape indices.shape + (D,)
 * for weight (V, D). Every index is checked against V at execute
 * (EMBER_ERR_DATA_OUT_OF_BOUNDS); padding_idx only matters for training.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_embedding_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *weight, *indices, *out;
    int64_t padding_idx;
    bool scale, sparse;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &weight));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &indices));
    EK_TRY(ek_arg_int(ctx, args, 2, &padding_idx));
    EK_TRY(ek_arg_bool(ctx, args, 3, &scale));
    EK_TRY(ek_arg_bool(ctx, args, 4, &sparse));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    if (weight->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "embedding: weight must be 2-d, got %u-d", (unsigned)weight->dim);
    if (indices->dtype != EMBER_INT64 && indices->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "embedding: indices must be int64 or int32");
    if (indices->dim + 1 > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "embedding: indices rank too large");
    EK_TRY(ek_check_same_dtype(ctx, weight, out, "weight and out"));
    EK_TRY(ek_check_contiguous(ctx, weight, "embedding weight"));

    int64_t vocab = weight->sizes[0], dim = weight->sizes[1];
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(indices, shape);
    shape[indices->dim] = dim;
    EK_TRY(ek_resize_out(ctx, out, shape, indices->dim + 1));
    EK_TRY(ek_check_contiguous(ctx, out, "embedding out"));
    if (indices->numel == 0) return EMBER_OK;

    size_t row_bytes = (size_t)dim * ember_dtype_size(weight->dtype); /* <= weight->nbytes */
    int64_t isizes[EMBER_MAX_DIM], istrides[1][EMBER_MAX_DIM], idx[EMBER_MAX_DIM] = {0},
                                                               off[1] = {0};
    ek_sizes64(indices, isizes);
    for (size_t d = 0; d < indices->dim; d++) istrides[0][d] = indices->strides[d];
    char *dst = (char *)out->data;
    int64_t row = 0; /* rows of out written, in row-major order of indices */
    do {
        int64_t i = indices->dtype == EMBER_INT64 ? ((const int64_t *)indices->data)[off[0]]
                                                  : ((const int32_t *)indices->data)[off[0]];
        if (i < 0 || i >= vocab)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "embedding: index %lld out of range [0, %lld)", (long long)i,
                                     (long long)vocab);
        if (row_bytes > 0)
            memcpy(dst + (size_t)row * row_bytes,
                   (const char *)weight->data + (size_t)i * row_bytes, row_bytes);
        row++;
    } while (
        ek_advance(idx, isizes, indices->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])istrides, off));
    return EMBER_OK;
}
