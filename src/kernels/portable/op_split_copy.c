/*
 * aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *,
 *     Tensor(a!)[] out) -> ()
 * aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *,
 *     Tensor(a!)[] out) -> ()
 * aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()
 *
 * Copies consecutive pieces of self along dim into the out tensors. These
 * ops return nothing, so the out list may or may not be repeated as a last
 * argument (4 or 5 arguments; unbind 3 or 4).
 */
#include "kernel_util.h"
#include "ops.h"

/* Copies the piece [at, at + len) of in along d into out (resized). */
static ember_status copy_piece(ember_kernel_ctx *ctx, const ember_tensor *in, size_t d, int64_t at,
                               int64_t len, bool drop_dim, ember_tensor *out) {
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t i = 0; i < in->dim; i++) {
        if (i == d && drop_dim) continue;
        shape[n] = i == d ? len : in->sizes[i];
        src_strides[n] = in->strides[i];
        n++;
    }
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, at * in->strides[d], src_strides, shape, n,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}

/* Shared argument handling: self, [sizes], dim, out list, optional repeat. */
static ember_status out_list(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t i,
                             ember_value ***items, size_t *count) {
    if (nargs != i + 1 && nargs != i + 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "expected %zu or %zu arguments, got %zu", i + 1, i + 2, nargs);
    return ek_arg_tensor_list(ctx, args, i, items, count);
}

ember_status ek_op_split_with_sizes_copy_out(ember_kernel_ctx *ctx, ember_value **args,
                                             size_t nargs) {
    ember_tensor *in;
    const int64_t *sizes;
    size_t nsizes, count, d;
    int64_t dim;
    ember_value **outs;
    if (nargs < 4) return ek_check_nargs(ctx, nargs, 4);
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &sizes, &nsizes));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(out_list(ctx, args, nargs, 3, &outs, &count));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "split: cannot split a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    if (count != nsizes)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "split_with_sizes: %zu sizes but %zu out tensors", nsizes, count);
    int64_t total = 0;
    for (size_t i = 0; i < nsizes; i++) {
        if (sizes[i] < 0 || sizes[i] > in->sizes[d] - total)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "split_with_sizes: sizes do not add up to %d",
                                     (int)in->sizes[d]);
        total += sizes[i];
    }
    if (total != in->sizes[d])
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "split_with_sizes: sizes add up to %lld, dim %zu has %d",
                                 (long long)total, d, (int)in->sizes[d]);
    int64_t at = 0;
    for (size_t i = 0; i < count; i++) {
        EK_TRY(copy_piece(ctx, in, d, at, sizes[i], false, outs[i]->u.t));
        at += sizes[i];
    }
    return EMBER_OK;
}

ember_status ek_op_split_copy_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in;
    int64_t split, dim;
    size_t count, d;
    ember_value **outs;
    if (nargs < 4) return ek_check_nargs(ctx, nargs, 4);
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &split));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(out_list(ctx, args, nargs, 3, &outs, &count));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "split: cannot split a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    int64_t size = in->sizes[d];
    if (split < 0 || (split == 0 && size != 0))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "split: split_size %lld invalid",
                                 (long long)split);
    /* ceil(size / split) pieces, at least one */
    int64_t pieces = split == 0 ? 1 : size / split + (size % split != 0);
    if (pieces == 0) pieces = 1;
    if ((int64_t)count != pieces)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "split: %lld pieces but %zu out tensors", (long long)pieces,
                                 count);
    for (size_t i = 0; i < count; i++) {
        int64_t at = (int64_t)i * split;
        int64_t len = size - at < split ? size - at : split;
        EK_TRY(copy_piece(ctx, in, d, at, len, false, outs[i]->u.t));
    }
    return EMBER_OK;
}

ember_status ek_op_unbind_copy_int_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in;
    int64_t dim;
    size_t count, d;
    ember_value **outs;
    if (nargs < 3) return ek_check_nargs(ctx, nargs, 3);
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(out_list(ctx, args, nargs, 2, &outs, &count));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "unbind: cannot unbind a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    if ((int64_t)count != in->sizes[d])
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "unbind: dim has %d entries but %zu outs", (int)in->sizes[d],
                                 count);
    for (size_t i = 0; i < count; i++)
        EK_TRY(copy_piece(ctx, in, d, (int64_t)i, 1, true, outs[i]->u.t));
    return EMBER_OK;
}
