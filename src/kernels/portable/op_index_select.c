/*
 * aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out)
 * aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False,
 *     Tensor(a!) out)
 *
 * index_select: out takes self's shape with dim resized to index's length,
 * and slice k along dim is self's slice index[k].
 * gather: out has index's shape; out[p] = self[p with dim replaced by index[p]].
 * Indices (int64 or int32; negative ones count from the end) are checked at
 * execute: EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

/* Reads index element off (int64 or int32) and wraps it into [0, size). */
static ember_status read_index(ember_kernel_ctx *ctx, const ember_tensor *index, int64_t off,
                               int64_t size, int64_t *out) {
    int64_t i = index->dtype == EMBER_INT64 ? ((const int64_t *)index->data)[off]
                                            : ((const int32_t *)index->data)[off];
    if (i < -size || i >= size)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "index %lld out of range for a dim of size %lld", (long long)i,
                                 (long long)size);
    *out = i < 0 ? i + size : i;
    return EMBER_OK;
}

static ember_status check_index_dtype(ember_kernel_ctx *ctx, const ember_tensor *index) {
    if (index->dtype != EMBER_INT64 && index->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "index must be int64 or int32, got %s",
                                 ember_dtype_name(index->dtype));
    return EMBER_OK;
}

ember_status ek_op_index_select_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *index, *out;
    int64_t dim;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &index));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(check_index_dtype(ctx, index));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_no_alias(ctx, out, index));
    if (index->dim > 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "index_select: index must be 0-d or 1-d");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(in, shape);
    int64_t size = in->dim == 0 ? 1 : in->sizes[d];
    if (in->dim > 0) shape[d] = index->numel;
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (index->numel == 0) return EMBER_OK;

    /* each selected slice: self's dims without d, into out's dims without d */
    int64_t bsizes[EMBER_MAX_DIM], bsrc[EMBER_MAX_DIM], bdst[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t k = 0; k < in->dim; k++) {
        if (k == d) continue;
        bsizes[n] = in->sizes[k];
        bsrc[n] = in->strides[k];
        bdst[n] = out->strides[k];
        n++;
    }
    int64_t istride = index->dim == 1 ? index->strides[0] : 0;
    int64_t sstride = in->dim > 0 ? in->strides[d] : 0, ostride = in->dim > 0 ? out->strides[d] : 0;
    for (int64_t k = 0; k < index->numel; k++) {
        int64_t i = 0;
        EK_TRY(read_index(ctx, index, k * istride, size, &i));
        if (out->numel > 0)
            ek_copy_block(out->data, k * ostride, bdst, in->data, i * sstride, bsrc, bsizes, n,
                          ember_dtype_size(in->dtype));
    }
    return EMBER_OK;
}

ember_status ek_op_gather_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *index, *out;
    int64_t dim;
    bool sparse;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &index));
    EK_TRY(ek_arg_bool(ctx, args, 3, &sparse));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    /* PyTorch takes an empty index of any dtype (it reads nothing from it). */
    if (index->numel > 0) EK_TRY(check_index_dtype(ctx, index));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_no_alias(ctx, out, index));
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    size_t rank = in->dim == 0 ? 1 : in->dim;
    if ((index->dim == 0 ? 1 : index->dim) != rank && index->numel > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "gather: index and self differ in rank");
    for (size_t k = 0; k < index->dim && k < in->dim; k++)
        if (k != d && index->sizes[k] > in->sizes[k])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "gather: index size %d exceeds self size %d at dim %zu",
                                     (int)index->sizes[k], (int)in->sizes[k], k);
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(index, shape);
    EK_TRY(ek_resize_out(ctx, out, shape, index->dim));
    if (out->numel == 0) return EMBER_OK;

    /* Walk index (and out) row-major, a run along the last dim at a time;
     * self's offset uses every dim but d. */
    int64_t st[3][EMBER_MAX_DIM], idx[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    for (size_t k = 0; k < index->dim; k++) {
        st[0][k] = out->strides[k];
        st[1][k] = index->strides[k];
        st[2][k] = k == d ? 0 : in->strides[k];
    }
    int64_t size = in->dim == 0 ? 1 : in->sizes[d], sstride = in->dim == 0 ? 0 : in->strides[d];
    size_t es = ember_dtype_size(in->dtype);
    size_t outer = index->dim == 0 ? 0 : index->dim - 1;
    int64_t len = index->dim == 0 ? 1 : shape[outer];
    int64_t so = index->dim == 0 ? 0 : st[0][outer], si = index->dim == 0 ? 0 : st[1][outer];
    int64_t ss = index->dim == 0 ? 0 : st[2][outer];
    do {
        char *o = (char *)out->data + off[0] * (int64_t)es;
        const char *sb = (const char *)in->data + off[2] * (int64_t)es;
        for (int64_t j = 0; j < len; j++) {
            int64_t i = 0;
            EK_TRY(read_index(ctx, index, off[1] + j * si, size, &i));
            char *dst = o + j * so * (int64_t)es;
            const char *src = sb + (j * ss + i * sstride) * (int64_t)es;
            switch (es) { /* constant sizes: one load and one store each */
            case 1: memcpy(dst, src, 1); break;
            case 2: memcpy(dst, src, 2); break;
            case 4: memcpy(dst, src, 4); break;
            case 8: memcpy(dst, src, 8); break;
            default: memcpy(dst, src, es); break;
            }
        }
    } while (ek_advance(idx, shape, outer, 3, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
