/*
 * aten::embedding_dense_backward.out(Tensor grad_output, Tensor indices, SymInt num_weights,
 *     SymInt padding_idx, bool scale_grad_by_freq, *, Tensor(a!) out) -> Tensor(a!)
 *
 * Gradient of embedding's weight: out (num_weights, D) is zero, then for
 * every index k = indices[i] other than padding_idx, row k accumulates
 * grad_output's row i (grad_output has shape indices.shape + (D,)), scaled
 * by 1 / (occurrences of k) when scale_grad_by_freq. Rows are added in index
 * order in the storage dtype, as PyTorch's CPU kernel does. Indices (int64 or
 * int32) are checked against num_weights at execute (DATA_OUT_OF_BOUNDS).
 * Occurrence counts live in scratch memory; without enough scratch they are
 * counted by a scan per index instead. Every dtype, contiguous: integers add
 * wrapping and scale by 1 / count in integer arithmetic (rows seen more than
 * once add nothing); bool adds as logical or, and its scale (1 / count as a
 * bool) is true. As PyTorch's kernel does.
 */
#include "kernel_util.h"
#include "ops.h"

static int64_t index_at(const ember_tensor *indices, int64_t i) {
    return indices->dtype == EMBER_INT64 ? ((const int64_t *)indices->data)[i]
                                         : ((const int32_t *)indices->data)[i];
}

/* Occurrences of k in indices (the scan used when counts do not fit in scratch). */
static int64_t count_of(const ember_tensor *indices, int64_t k) {
    int64_t c = 0;
    for (int64_t j = 0; j < indices->numel; j++) c += index_at(indices, j) == k;
    return c;
}

#define DEF_EMB_BWD(SFX, T, CT, LOAD, STORE)                                                       \
    static void emb_bwd_##SFX(T *out, const T *grad, const ember_tensor *indices, int64_t dim,     \
                              int64_t padding_idx, bool scale, const int64_t *counts) {            \
        for (int64_t i = 0; i < indices->numel; i++) {                                             \
            int64_t k = index_at(indices, i);                                                      \
            if (k == padding_idx) continue;                                                        \
            CT alpha = 1;                                                                          \
            if (scale)                                                                             \
                alpha = (CT)(1.0 / (double)(counts != NULL ? counts[k] : count_of(indices, k)));   \
            T *o = out + k * dim;         /* (D) */                                                \
            const T *g = grad + i * dim; /* (D) */                                                 \
            for (int64_t d = 0; d < dim; d++) o[d] = STORE(LOAD(o[d]) + alpha * LOAD(g[d]));       \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_EMB_BWD)

/* Integers: `(1 / count) * g` is g for a row seen once, else 0. Bool: g. */
#define DEF_EMB_BWD_INT(SFX, T, ADD, SCALES)                                                       \
    static void emb_bwd_##SFX(T *out, const T *grad, const ember_tensor *indices, int64_t dim,     \
                              int64_t padding_idx, bool scale, const int64_t *counts) {            \
        for (int64_t i = 0; i < indices->numel; i++) {                                             \
            int64_t k = index_at(indices, i);                                                      \
            if (k == padding_idx) continue;                                                        \
            if (SCALES && scale && (counts != NULL ? counts[k] : count_of(indices, k)) != 1)       \
                continue;                                                                          \
            T *o = out + k * dim;                                                                  \
            const T *g = grad + i * dim;                                                           \
            for (int64_t d = 0; d < dim; d++) o[d] = ADD(T, o[d], g[d]);                           \
        }                                                                                          \
    }
/* wrapping addition, through uint64_t */
#define EMB_ADD_WRAP(T, a, b) ((T)(int64_t)((uint64_t)(int64_t)(a) + (uint64_t)(int64_t)(b)))
#define EMB_ADD_OR(T, a, b) ((T)((a) | (b)))
DEF_EMB_BWD_INT(u8, uint8_t, EMB_ADD_WRAP, true)
DEF_EMB_BWD_INT(i8, int8_t, EMB_ADD_WRAP, true)
DEF_EMB_BWD_INT(i16, int16_t, EMB_ADD_WRAP, true)
DEF_EMB_BWD_INT(i32, int32_t, EMB_ADD_WRAP, true)
DEF_EMB_BWD_INT(i64, int64_t, EMB_ADD_WRAP, true)
DEF_EMB_BWD_INT(b8, uint8_t, EMB_ADD_OR, false)

ember_status ek_op_embedding_dense_backward_out(ember_kernel_ctx *ctx, ember_value **args,
                                                size_t nargs) {
    ember_tensor *grad, *indices, *out;
    int64_t num_weights, padding_idx;
    bool scale;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &grad));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &indices));
    EK_TRY(ek_arg_int(ctx, args, 2, &num_weights));
    EK_TRY(ek_arg_int(ctx, args, 3, &padding_idx));
    EK_TRY(ek_arg_bool(ctx, args, 4, &scale));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    if (indices->dtype != EMBER_INT64 && indices->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "embedding_dense_backward: indices must be int64 or int32, got %s",
                                 ember_dtype_name(indices->dtype));
    bool same = grad->dim == indices->dim + 1;
    for (size_t d = 0; same && d < indices->dim; d++) same = grad->sizes[d] == indices->sizes[d];
    if (!same) {
        char g[96], ix[96];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "embedding_dense_backward: grad_output %s must be indices' shape "
                                 "%s plus one dim",
                                 ek_shape_str(g, sizeof g, grad->sizes, grad->dim),
                                 ek_shape_str(ix, sizeof ix, indices->sizes, indices->dim));
    }
    if (num_weights < 0 || num_weights > INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "embedding_dense_backward: num_weights %lld out of range",
                                 (long long)num_weights);
    EK_TRY(ek_check_supported(ctx, grad->dtype, "grad_output"));
    EK_TRY(ek_check_same_dtype(ctx, grad, out, "embedding_dense_backward grad_output and out"));
    EK_TRY(ek_check_contiguous(ctx, grad, "embedding_dense_backward grad_output"));
    EK_TRY(ek_check_contiguous(ctx, indices, "embedding_dense_backward indices"));
    EK_TRY(ek_check_no_alias(ctx, out, grad));
    int64_t dim = grad->sizes[grad->dim - 1];
    const int64_t shape[2] = {num_weights, dim};
    EK_TRY(ek_resize_out(ctx, out, shape, 2));
    EK_TRY(ek_check_contiguous(ctx, out, "embedding_dense_backward out"));
    /* every index is checked before anything is written */
    for (int64_t i = 0; i < indices->numel; i++) {
        int64_t k = index_at(indices, i);
        if (k != padding_idx && (k < 0 || k >= num_weights))
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "embedding_dense_backward: index %lld out of range [0, %lld)",
                                     (long long)k, (long long)num_weights);
    }
    if (out->numel == 0) return EMBER_OK;
    ek_scalar zero = ek_scalar_from_int(0);
    char elem[8];
    ek_scalar_store(out->dtype, &zero, elem);
    ek_fill_bytes(out->data, out->numel, elem, ember_dtype_size(out->dtype));
    if (indices->numel == 0 || dim == 0) return EMBER_OK;
    int64_t *counts = NULL;
    size_t cbytes;
    if (scale && !ember_mul_overflow((size_t)num_weights, sizeof(int64_t), &cbytes))
        counts = ember_kernel_scratch(ctx, cbytes, sizeof(int64_t));
    if (counts != NULL) {
        for (int64_t i = 0; i < indices->numel; i++) {
            int64_t k = index_at(indices, i);
            if (k != padding_idx) counts[k] = 0;
        }
        for (int64_t i = 0; i < indices->numel; i++) {
            int64_t k = index_at(indices, i);
            if (k != padding_idx) counts[k]++;
        }
    }
#define EMB_ARGS out->data, grad->data, indices, dim, padding_idx, scale, counts
    switch (grad->dtype) {
    case EMBER_UINT8: emb_bwd_u8(EMB_ARGS); break;
    case EMBER_INT8: emb_bwd_i8(EMB_ARGS); break;
    case EMBER_INT16: emb_bwd_i16(EMB_ARGS); break;
    case EMBER_INT32: emb_bwd_i32(EMB_ARGS); break;
    case EMBER_INT64: emb_bwd_i64(EMB_ARGS); break;
    case EMBER_BOOL: emb_bwd_b8(EMB_ARGS); break;
    default: EK_FLOAT_SWITCH(ctx, grad->dtype, emb_bwd, EMB_ARGS);
    }
#undef EMB_ARGS
    return EMBER_OK;
}
