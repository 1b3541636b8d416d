/*
 * aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
 *
 * out (b, n, m) = self (b, n, k) @ mat2 (b, k, m); float and integer dtypes, contiguous.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_bmm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *a, *b, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &a));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &b));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (a->dim != 3 || b->dim != 3)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "bmm: expected 3-D tensors, got %u-D and %u-D", (unsigned)a->dim,
                                 (unsigned)b->dim);
    int64_t batch = a->sizes[0], n = a->sizes[1], k = a->sizes[2], m = b->sizes[2];
    if (b->sizes[0] != batch || b->sizes[1] != k)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "bmm: self is (%lld, %lld, %lld) but mat2 is (%d, %d, %lld)",
                                 (long long)batch, (long long)n, (long long)k, (int)b->sizes[0],
                                 (int)b->sizes[1], (long long)m);
    if (!ek_is_float(a->dtype) && !ek_is_int(a->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "bmm: dtype %s not supported",
                                 ember_dtype_name(a->dtype));
    EK_TRY(ek_check_same_dtype(ctx, a, b, "bmm self and mat2"));
    EK_TRY(ek_check_same_dtype(ctx, a, out, "bmm self and out"));
    EK_TRY(ek_check_contiguous(ctx, a, "bmm self"));
    EK_TRY(ek_check_contiguous(ctx, b, "bmm mat2"));
    const int64_t shape[3] = {batch, n, m};
    EK_TRY(ek_resize_out(ctx, out, shape, 3));
    EK_TRY(ek_check_contiguous(ctx, out, "bmm out"));
    ek_matmul(a->dtype, out->data, a->data, b->data, batch, n, k, m, 1.0, NULL);
    return EMBER_OK;
}
