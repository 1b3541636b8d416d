/*
 * aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out)
 * aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
 *
 * Writes src, broadcast to self's shape and converted to the destination's
 * dtype, into out (copy.out: out takes self's shape and dtype) or into self
 * itself (copy_, used for in-place buffer updates: 4 arguments).
 */
#include "kernel_util.h"
#include "ops.h"

/* dst (already shaped) = src broadcast to dst's shape. */
static ember_status broadcast_copy(ember_kernel_ctx *ctx, ember_tensor *dst,
                                   const ember_tensor *src) {
    EK_TRY(ek_check_supported(ctx, src->dtype, "src"));
    EK_TRY(ek_check_supported(ctx, dst->dtype, "destination"));
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    ek_sizes64(dst, shape);
    if (!ek_broadcastable_to(src, shape, dst->dim)) {
        char a[96], b[96];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "copy: src %s does not broadcast to %s",
                                 ek_shape_str(a, sizeof a, src->sizes, src->dim),
                                 ek_shape_str(b, sizeof b, dst->sizes, dst->dim));
    }
    if (dst->numel == 0) return EMBER_OK;
    size_t lead = dst->dim - src->dim;
    for (size_t d = 0; d < dst->dim; d++)
        src_strides[d] = (d < lead || src->sizes[d - lead] == 1) ? 0 : src->strides[d - lead];
    ek_copy_block_cast(dst->data, dst->dtype, 0, dst->strides, src->data, src->dtype, 0,
                       src_strides, shape, dst->dim);
    return EMBER_OK;
}

ember_status ek_op_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *src, *out;
    bool non_blocking;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &src));
    EK_TRY(ek_arg_bool(ctx, args, 2, &non_blocking));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_resize_like(ctx, out, self));
    return broadcast_copy(ctx, out, src);
}

ember_status ek_op_copy_(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *src;
    bool non_blocking;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_inout(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &src));
    EK_TRY(ek_arg_bool(ctx, args, 2, &non_blocking));
    return broadcast_copy(ctx, self, src);
}
