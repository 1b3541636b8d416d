/*
 * aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride,
 *     SymInt? storage_offset=None, *, Tensor(a!) out)
 *
 * out[i0, i1, ...] = storage(self)[storage_offset + sum_k i_k * stride[k]],
 * where self's storage is its elements in memory order (its dim order). The
 * view must lie inside that storage; strides and offset must be
 * non-negative, as in PyTorch. Every dtype.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_as_strided_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    const int64_t *size, *stride;
    size_t nsize, nstride;
    int64_t offset;
    bool has_offset;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &size, &nsize));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &stride, &nstride));
    EK_TRY(ek_arg_opt_int(ctx, args, 3, &offset, &has_offset));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, self));
    if (!has_offset) offset = 0;
    if (nsize != nstride)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "as_strided: %zu sizes but %zu strides", nsize, nstride);
    if (nsize > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "as_strided: %zu dims exceed the limit of %d", nsize,
                                 EMBER_MAX_DIM);
    if (offset < 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "as_strided: storage_offset %lld is negative", (long long)offset);
    /* last element reached: offset + sum (size - 1) * stride, overflow-checked */
    bool empty = false;
    size_t last = (size_t)offset;
    for (size_t k = 0; k < nsize; k++) {
        if (size[k] < 0 || stride[k] < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "as_strided: size %lld / stride %lld at dim %zu is negative",
                                     (long long)size[k], (long long)stride[k], k);
        if (size[k] == 0) empty = true;
    }
    for (size_t k = 0; !empty && k < nsize; k++) {
        size_t span;
        if (ember_mul_overflow((size_t)(size[k] - 1), (size_t)stride[k], &span) ||
            ember_add_overflow(last, span, &last))
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "as_strided: the view's extent overflows");
    }
    if (!empty && last >= (size_t)self->numel)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "as_strided: the view reaches element %zu of a storage of %lld",
                                 last, (long long)self->numel);
    EK_TRY(ek_resize_out(ctx, out, size, nsize));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, self->data, offset, stride, size, nsize,
                  ember_dtype_size(self->dtype));
    return EMBER_OK;
}
