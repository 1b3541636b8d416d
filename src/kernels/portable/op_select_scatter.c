/*
 * aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *,
 *     Tensor(a!) out)
 *
 * out = self, with the slice at index along dim replaced by src (cast to
 * self's dtype); src has self's shape without dim. The index (which may be
 * computed at run time) is checked: EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_select_scatter_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *src, *out;
    int64_t dim, index;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &src));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(ek_arg_int(ctx, args, 3, &index));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "select_scatter self"));
    EK_TRY(ek_check_supported(ctx, src->dtype, "select_scatter src"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, src));
    if (self->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "select_scatter: cannot select on a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, self->dim, &d));
    bool same = src->dim + 1 == self->dim;
    for (size_t i = 0, j = 0; same && i < self->dim; i++) {
        if (i == d) continue;
        same = src->sizes[j++] == self->sizes[i];
    }
    if (!same) {
        char a[64], b[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "select_scatter: src has shape %s, expected self %s without "
                                 "dim %zu",
                                 ek_shape_str(a, sizeof a, src->sizes, src->dim),
                                 ek_shape_str(b, sizeof b, self->sizes, self->dim), d);
    }
    int64_t size = self->sizes[d];
    if (index < -size || index >= size)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "select_scatter: index %lld out of range for dim %zu of size %lld",
                                 (long long)index, d, (long long)size);
    if (index < 0) index += size;
    EK_TRY(ek_resize_like(ctx, out, self));
    if (out->numel == 0) return EMBER_OK;
    if (out != self) ek_copy_tensor(out, self);

    int64_t shape[EMBER_MAX_DIM], dst_strides[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t i = 0; i < self->dim; i++) {
        if (i == d) continue;
        shape[n] = self->sizes[i];
        dst_strides[n] = out->strides[i];
        n++;
    }
    ek_copy_block_cast(out->data, out->dtype, index * out->strides[d], dst_strides, src->data,
                       src->dtype, 0, src->strides, shape, n);
    return EMBER_OK;
}
