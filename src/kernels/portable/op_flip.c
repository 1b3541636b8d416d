/*
 * aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out)
 *
 * Reverses self along dims: read with a negative stride from the last
 * element of each flipped dim.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_flip_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &dims, &ndims));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    bool flip[EMBER_MAX_DIM] = {false};
    for (size_t i = 0; i < ndims; i++) {
        size_t d;
        EK_TRY(ek_norm_dim(ctx, dims[i], in->dim, &d));
        if (in->dim == 0) continue;
        if (flip[d])
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "flip: dim %zu repeated", d);
        flip[d] = true;
    }
    EK_TRY(ek_resize_like(ctx, out, in));
    if (out->numel == 0) return EMBER_OK;
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM], src_off = 0;
    for (size_t d = 0; d < in->dim; d++) {
        shape[d] = in->sizes[d];
        src_strides[d] = flip[d] ? -in->strides[d] : in->strides[d];
        if (flip[d]) src_off += (in->sizes[d] - 1) * in->strides[d];
    }
    ek_copy_block(out->data, 0, out->strides, in->data, src_off, src_strides, shape, in->dim,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}
