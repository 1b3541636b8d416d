/*
 * aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
 *                 Scalar alpha=1, Tensor(a!) out)
 *
 * out (n, m) = beta * self + alpha * (mat1 (n, k) @ mat2 (k, m)), self
 * broadcast to (n, m) (a bias row, usually). Float and integer dtypes, contiguous.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_addmm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *bias, *a, *b, *out;
    ek_scalar beta, alpha;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &bias));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &a));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &b));
    EK_TRY(ek_arg_scalar(ctx, args, 3, &beta));
    EK_TRY(ek_arg_scalar(ctx, args, 4, &alpha));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    if (a->dim != 2 || b->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "addmm: expected 2-D matrices, got %u-D and %u-D",
                                 (unsigned)a->dim, (unsigned)b->dim);
    int64_t n = a->sizes[0], k = a->sizes[1], m = b->sizes[1];
    if (b->sizes[0] != k)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "addmm: mat1 is (%lld, %lld) but mat2 is (%d, %lld)", (long long)n,
                                 (long long)k, (int)b->sizes[0], (long long)m);
    const int64_t shape[2] = {n, m};
    if (!ek_broadcastable_to(bias, shape, 2))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "addmm: self (rank %u) does not broadcast to (%lld, %lld)",
                                 (unsigned)bias->dim, (long long)n, (long long)m);
    if (!ek_is_float(a->dtype) && !ek_is_int(a->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "addmm: dtype %s not supported",
                                 ember_dtype_name(a->dtype));
    EK_TRY(ek_check_same_dtype(ctx, a, b, "addmm mat1 and mat2"));
    EK_TRY(ek_check_same_dtype(ctx, a, bias, "addmm mat1 and self"));
    EK_TRY(ek_check_same_dtype(ctx, a, out, "addmm mat1 and out"));
    EK_TRY(ek_check_contiguous(ctx, a, "addmm mat1"));
    EK_TRY(ek_check_contiguous(ctx, b, "addmm mat2"));

    /* bias element (i, j): broadcast dims step by 0 */
    ek_mm_bias mb = {bias->data, 0, 0, beta.d};
    if (bias->dim == 2) {
        mb.si = bias->sizes[0] == 1 ? 0 : bias->strides[0];
        mb.sj = bias->sizes[1] == 1 ? 0 : bias->strides[1];
    } else if (bias->dim == 1) {
        mb.sj = bias->sizes[0] == 1 ? 0 : bias->strides[0];
    }
    EK_TRY(ek_resize_out(ctx, out, shape, 2));
    EK_TRY(ek_check_contiguous(ctx, out, "addmm out"));
    ek_matmul(a->dtype, out->data, a->data, b->data, 1, n, k, m, alpha.d, &mb);
    return EMBER_OK;
}
