/*
 * aten::narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, Tensor(a!) out)
 *
 * Elements [start, start + length) along dim (a negative start counts from
 * the end); the range must lie inside the dim.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_narrow_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim, start, length;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_int(ctx, args, 2, &start));
    EK_TRY(ek_arg_int(ctx, args, 3, &length));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "narrow: cannot narrow a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    int64_t size = in->sizes[d];
    if (start < -size || start > size)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "narrow: start %lld out of range", (long long)start);
    if (start < 0) start += size;
    if (length < 0 || length > size - start)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "narrow: length %lld out of range", (long long)length);
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(in, shape);
    shape[d] = length;
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, start * in->strides[d], in->strides, shape,
                  in->dim, ember_dtype_size(in->dtype));
    return EMBER_OK;
}
