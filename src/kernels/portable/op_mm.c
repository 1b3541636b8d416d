/*
 * aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
 *
 * out (n, m) = self (n, k) @ mat2 (k, m); float and integer dtypes, contiguous.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_mm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *a, *b, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &a));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &b));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (a->dim != 2 || b->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "mm: expected 2-D tensors, got %u-D and %u-D", (unsigned)a->dim,
                                 (unsigned)b->dim);
    int64_t n = a->sizes[0], k = a->sizes[1], m = b->sizes[1];
    if (b->sizes[0] != k)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "mm: self is (%lld, %lld) but mat2 is (%d, %lld)", (long long)n,
                                 (long long)k, (int)b->sizes[0], (long long)m);
    if (!ek_is_float(a->dtype) && !ek_is_int(a->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "mm: dtype %s not supported",
                                 ember_dtype_name(a->dtype));
    EK_TRY(ek_check_same_dtype(ctx, a, b, "mm self and mat2"));
    EK_TRY(ek_check_same_dtype(ctx, a, out, "mm self and out"));
    EK_TRY(ek_check_contiguous(ctx, a, "mm self"));
    EK_TRY(ek_check_contiguous(ctx, b, "mm mat2"));
    const int64_t shape[2] = {n, m};
    EK_TRY(ek_resize_out(ctx, out, shape, 2));
    EK_TRY(ek_check_contiguous(ctx, out, "mm out"));
    ek_matmul(a->dtype, out->data, a->data, b->data, 1, n, k, m, 1.0, NULL);
    return EMBER_OK;
}
