/*
 * aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out)
 *
 * Broadcasts self to size: new leading dims and dims of size 1 repeat
 * (stride 0); -1 keeps a dim's size.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_expand_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *size;
    size_t n;
    bool implicit;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &size, &n));
    EK_TRY(ek_arg_bool(ctx, args, 2, &implicit));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    if (n < in->dim || n > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "expand: %zu sizes for a tensor of rank %u", n, (unsigned)in->dim);
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    size_t lead = n - in->dim;
    for (size_t i = 0; i < n; i++) {
        int64_t want = size[i];
        if (i < lead) {
            if (want < 0)
                return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                         "expand: size %lld invalid for new dim %zu",
                                         (long long)want, i);
            shape[i] = want;
            src_strides[i] = 0;
            continue;
        }
        int64_t have = in->sizes[i - lead];
        if (want == -1) want = have;
        if (want == have) {
            shape[i] = have;
            src_strides[i] = in->strides[i - lead];
        } else if (have == 1 && want >= 0) {
            shape[i] = want;
            src_strides[i] = 0;
        } else {
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "expand: dim %zu of size %lld cannot expand to %lld", i,
                                     (long long)have, (long long)want);
        }
    }
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, 0, src_strides, shape, n,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}
