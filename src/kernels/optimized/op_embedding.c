/*
 * aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
 *     bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out)
 *
 * Fast path: a contiguous 2-d weight of any dtype, contiguous int64 or
 * int32 indices all in range, out of weight's dtype: rows copied over the
 * thread pool. Anything else, an index out of range included (its error
 * names the index), is the portable kernel's.
 */
#include <string.h>

#include "ember/threadpool.h"
#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"

/* Bytes copied per piece of split work. */
#define GATHER_BYTES (64u * 1024u)

typedef struct gather_job {
    const char *weight;
    const void *indices;
    bool i64;
    char *out;
    size_t row_bytes;
} gather_job;

static void gather_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const gather_job *j = ctx;
    (void)thread;
    for (size_t r = start; r < start + count; r++) {
        const int64_t i = j->i64 ? ((const int64_t *)j->indices)[r]
                                 : ((const int32_t *)j->indices)[r];
        memcpy(j->out + r * j->row_bytes, j->weight + (size_t)i * j->row_bytes, j->row_bytes);
    }
}

static bool embedding_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    if (nargs != 7 || args[0]->tag != EMBER_TAG_TENSOR || args[1]->tag != EMBER_TAG_TENSOR ||
        args[2]->tag != EMBER_TAG_INT || args[3]->tag != EMBER_TAG_BOOL ||
        args[4]->tag != EMBER_TAG_BOOL || args[5]->tag != EMBER_TAG_TENSOR)
        return false;
    const ember_tensor *w = args[0]->u.t, *ix = args[1]->u.t;
    ember_tensor *out = args[5]->u.t;
    if (w == NULL || ix == NULL || out == NULL || w->dim != 2 || ix->dim + 1 > EMBER_MAX_DIM ||
        (ix->dtype != EMBER_INT64 && ix->dtype != EMBER_INT32) || out->dtype != w->dtype ||
        !ek_is_supported(w->dtype) || out->storage == EMBER_STORAGE_CONSTANT ||
        out->dim > EMBER_MAX_DIM || !ember_tensor_is_contiguous(w) ||
        !ember_tensor_is_contiguous(ix) || (w->numel > 0 && w->data == NULL) ||
        (ix->numel > 0 && ix->data == NULL) || eko_overlap(out, w) || eko_overlap(out, ix))
        return false;
    const int64_t vocab = w->sizes[0];
    const size_t n = (size_t)ix->numel;
    for (size_t r = 0; r < n; r++) { /* any index out of range: the portable error */
        const int64_t i = ix->dtype == EMBER_INT64 ? ((const int64_t *)ix->data)[r]
                                                   : ((const int32_t *)ix->data)[r];
        if (i < 0 || i >= vocab) return false;
    }
    int64_t shape[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < ix->dim; d++) shape[d] = ix->sizes[d];
    shape[ix->dim] = w->sizes[1];
    if (ember_tensor_resize(out, shape, ix->dim + 1) != EMBER_OK ||
        (out->numel > 0 && out->data == NULL) || !ember_tensor_is_contiguous(out))
        return false;
    const size_t row_bytes = (size_t)w->sizes[1] * ember_dtype_size(w->dtype); /* <= w->nbytes */
    if (n == 0 || row_bytes == 0) return true;
    gather_job j = {(const char *)w->data, ix->data, ix->dtype == EMBER_INT64, (char *)out->data,
                    row_bytes};
    const size_t per_piece = row_bytes >= GATHER_BYTES ? 1 : GATHER_BYTES / row_bytes;
    ember_threadpool *pool = ember_kernel_threadpool(ctx);
    /* each row read and written */
    ember_parallel_1d_on(pool, ember_parallel_threads(pool, ember_work_mul(n, 2 * row_bytes)),
                         gather_rows, &j, n, per_piece);
    return true;
}

ember_status eko_op_embedding_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return embedding_fast(ctx, args, nargs) ? EMBER_OK : ek_op_embedding_out(ctx, args, nargs);
}
