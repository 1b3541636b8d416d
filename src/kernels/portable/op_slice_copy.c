/*
 * aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None,
 *     SymInt? end=None, SymInt step=1, *, Tensor(a!) out)
 *
 * Elements start, start+step, ... < end along dim. Negative start/end count
 * from the end; both are clamped to [0, size], as in PyTorch.
 */
#include "kernel_util.h"
#include "ops.h"

/* Wraps a negative index once and clamps it to [0, size]. */
static int64_t clamp_index(int64_t i, int64_t size) {
    if (i < 0) i = i < -size ? 0 : i + size;
    return i > size ? size : i;
}

ember_status ek_op_slice_copy_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim, start, end, step;
    bool has_start, has_end;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_opt_int(ctx, args, 2, &start, &has_start));
    EK_TRY(ek_arg_opt_int(ctx, args, 3, &end, &has_end));
    EK_TRY(ek_arg_int(ctx, args, 4, &step));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "slice: cannot slice a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    if (step <= 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "slice: step must be positive");
    int64_t size = in->sizes[d];
    start = has_start ? clamp_index(start, size) : 0;
    end = has_end ? clamp_index(end, size) : size;
    int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
    if (step > size)
        step = size > 0 ? size : 1; /* at most one element: keeps stride * step small */

    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    for (size_t i = 0; i < in->dim; i++) {
        shape[i] = i == d ? len : in->sizes[i];
        src_strides[i] = i == d ? in->strides[i] * step : in->strides[i];
    }
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, start * in->strides[d], src_strides, shape,
                  in->dim, ember_dtype_size(in->dtype));
    return EMBER_OK;
}
