/*
 * aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
 *
 * out.shape[i] = self.shape[dims[i]]; a strided copy (any dim order).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_permute_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &dims, &ndims));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (ndims != in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "permute: %zu dims given for a tensor of rank %u", ndims,
                                 (unsigned)in->dim);
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    bool seen[EMBER_MAX_DIM] = {false};
    for (size_t i = 0; i < ndims; i++) {
        size_t d;
        EK_TRY(ek_norm_dim(ctx, dims[i], in->dim, &d));
        if (seen[d])
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "permute: dim %zu repeated",
                                     d);
        seen[d] = true;
        shape[i] = in->sizes[d];
        src_strides[i] = in->strides[d];
    }
    EK_TRY(ek_resize_out(ctx, out, shape, ndims));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, 0, src_strides, shape, ndims,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}
