/*
 * aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None,
 *     SymInt? end=None, SymInt step=1, *, Tensor(a!) out)
 *
 * out = self, with the slice start:end:step along dim replaced by src (cast
 * to self's dtype). start and end are wrapped and clamped as in slice_copy;
 * src must have exactly the slice's shape.
 */
#include "kernel_util.h"
#include "ops.h"

/* Wraps a negative index once and clamps it to [0, size]. */
static int64_t clamp_index(int64_t i, int64_t size) {
    if (i < 0) i = i < -size ? 0 : i + size;
    return i > size ? size : i;
}

ember_status ek_op_slice_scatter_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *src, *out;
    int64_t dim, start, end, step;
    bool has_start, has_end;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &src));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(ek_arg_opt_int(ctx, args, 3, &start, &has_start));
    EK_TRY(ek_arg_opt_int(ctx, args, 4, &end, &has_end));
    EK_TRY(ek_arg_int(ctx, args, 5, &step));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "slice_scatter self"));
    EK_TRY(ek_check_supported(ctx, src->dtype, "slice_scatter src"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, src));
    if (self->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "slice_scatter: cannot slice a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, self->dim, &d));
    if (step <= 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "slice_scatter: step must be positive");
    int64_t size = self->sizes[d];
    start = has_start ? clamp_index(start, size) : 0;
    end = has_end ? clamp_index(end, size) : size;
    int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
    if (step > size)
        step = size > 0 ? size : 1; /* at most one element: keeps stride * step small */

    bool same = src->dim == self->dim;
    for (size_t i = 0; same && i < self->dim; i++)
        same = src->sizes[i] == (i == d ? len : self->sizes[i]);
    if (!same) {
        char a[64], b[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "slice_scatter: src has shape %s, the slice of self %s with "
                                 "%lld elements along dim %zu",
                                 ek_shape_str(a, sizeof a, src->sizes, src->dim),
                                 ek_shape_str(b, sizeof b, self->sizes, self->dim),
                                 (long long)len, d);
    }
    EK_TRY(ek_resize_like(ctx, out, self));
    if (out->numel == 0) return EMBER_OK;
    if (out != self) ek_copy_tensor(out, self);
    if (src->numel == 0) return EMBER_OK;

    int64_t shape[EMBER_MAX_DIM], dst_strides[EMBER_MAX_DIM];
    for (size_t i = 0; i < self->dim; i++) {
        shape[i] = src->sizes[i];
        dst_strides[i] = i == d ? out->strides[i] * step : out->strides[i];
    }
    ek_copy_block_cast(out->data, out->dtype, start * out->strides[d], dst_strides, src->data,
                       src->dtype, 0, src->strides, shape, self->dim);
    return EMBER_OK;
}
