/*
 * ExecuTorch's KV-cache update operators (namespace llama):
 *
 *   llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos,
 *       *, Tensor(b!) out)
 *   llama::update_cache_with_indices.out(Tensor value, Tensor(a!) cache,
 *       SymInt start_pos, Tensor indices, *, Tensor(b!) out)
 *
 * value (B, S, H, D) is copied into cache (B, L, H, D), sequence at dim 1:
 * row (b, t) goes to cache row (b, start_pos + t), or with indices (B, S)
 * int64 to cache row (b, indices[b, t]) (start_pos unused). Same dtype,
 * contiguous. out is a placeholder the export gives the op (ExecuTorch
 * returns it untouched; so does this kernel). start_pos and indices are
 * data: out of range they fail EMBER_ERR_DATA_OUT_OF_BOUNDS, before anything
 * is written.
 */
#include <string.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"
#include "attention.h"

void ek_llama_cache_write(const ember_tensor *value, ember_tensor *cache, int64_t start_pos) {
    if (value->numel == 0) return; /* B, S, H or D is 0 */
    /* (S, H, D) of one batch row is one contiguous block in both */
    const size_t es = ember_dtype_size(cache->dtype);
    size_t block = (size_t)value->numel / (size_t)value->sizes[0] * es;
    size_t cache_b = (size_t)cache->numel / (size_t)cache->sizes[0] * es;
    size_t row = (size_t)cache->sizes[2] * (size_t)cache->sizes[3] * es;
    for (int64_t b = 0; b < value->sizes[0]; b++)
        memcpy((char *)cache->data + (size_t)b * cache_b + (size_t)start_pos * row,
               (const char *)value->data + (size_t)b * block, block);
}

/* value (B, S, H, D) and cache (B, L, H, D): same B, H, D and dtype. */
static ember_status check_value_cache(ember_kernel_ctx *ctx, const char *op,
                                      const ember_tensor *value, const ember_tensor *cache) {
    if (value->dim != 4 || cache->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: value and cache must be 4-d, got %u-d and %u-d", op,
                                 (unsigned)value->dim, (unsigned)cache->dim);
    if (value->sizes[0] != cache->sizes[0] || value->sizes[2] != cache->sizes[2] ||
        value->sizes[3] != cache->sizes[3]) {
        char a[64], b[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: value %s and cache %s differ outside dim 1 (B, *, H, D)", op,
                                 ek_shape_str(a, sizeof a, value->sizes, value->dim),
                                 ek_shape_str(b, sizeof b, cache->sizes, cache->dim));
    }
    if (value->dtype != cache->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: value is %s but cache is %s",
                                 op, ember_dtype_name(value->dtype),
                                 ember_dtype_name(cache->dtype));
    if (value == cache)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "%s: value and cache are the same tensor", op);
    EK_TRY(ek_check_contiguous(ctx, value, op));
    return ek_check_contiguous(ctx, cache, op);
}

ember_status ek_op_llama_update_cache_out(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs) {
    static const char op[] = "llama::update_cache";
    ember_tensor *value, *cache, *out;
    int64_t start_pos;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &value));
    EK_TRY(ek_arg_inout(ctx, args, 1, &cache));
    EK_TRY(ek_arg_int(ctx, args, 2, &start_pos));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 3, &out));
    EK_TRY(check_value_cache(ctx, op, value, cache));
    int64_t len = cache->sizes[1], nt = value->sizes[1];
    if (start_pos < 0 || start_pos >= len || start_pos > len - nt)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "%s: start_pos %lld with %lld new rows does not fit in the cache "
                                 "of %lld positions",
                                 op, (long long)start_pos, (long long)nt, (long long)len);
    ek_llama_cache_write(value, cache, start_pos);
    return EMBER_OK;
}

ember_status ek_op_llama_update_cache_with_indices_out(ember_kernel_ctx *ctx, ember_value **args,
                                                       size_t nargs) {
    static const char op[] = "llama::update_cache_with_indices";
    ember_tensor *value, *cache, *indices, *out;
    int64_t start_pos;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &value));
    EK_TRY(ek_arg_inout(ctx, args, 1, &cache));
    EK_TRY(ek_arg_int(ctx, args, 2, &start_pos));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &indices));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 4, &out));
    EK_TRY(check_value_cache(ctx, op, value, cache));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: indices must be int64, got %s",
                                 op, ember_dtype_name(indices->dtype));
    if (indices->dim != 2 || indices->sizes[0] != value->sizes[0] ||
        indices->sizes[1] != value->sizes[1]) {
        char a[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: indices must be (%d, %d) (batch, rows of value), got %s", op,
                                 (int)value->sizes[0], (int)value->sizes[1],
                                 ek_shape_str(a, sizeof a, indices->sizes, indices->dim));
    }
    EK_TRY(ek_check_contiguous(ctx, indices, op));
    if (value->numel == 0) return EMBER_OK;
    const int64_t *idx = indices->data;
    int64_t nb = value->sizes[0], nt = value->sizes[1], len = cache->sizes[1];
    for (int64_t i = 0; i < nb * nt; i++)
        if (idx[i] < 0 || idx[i] >= len)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "%s: index %lld (entry %lld) is outside the cache of %lld "
                                     "positions",
                                     op, (long long)idx[i], (long long)i, (long long)len);
    size_t row = (size_t)value->sizes[2] * (size_t)value->sizes[3] * ember_dtype_size(value->dtype);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t t = 0; t < nt; t++)
            memcpy((char *)cache->data + (size_t)(b * len + idx[b * nt + t]) * row,
                   (const char *)value->data + (size_t)(b * nt + t) * row, row);
    return EMBER_OK;
}
