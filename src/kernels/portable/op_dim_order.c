/*
 * dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
 *     int[]? dim_order=None, Tensor(a!) out)
 * dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
 *     int[]? dim_order=None, Tensor(a!) out)
 * dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out)
 *
 * The edge dialect's clone / _to_copy / empty: the layout asked for is
 * dim_order, any permutation of the dims, which must be out's own (the
 * program gives out that order). _clone_dim_order keeps the dtype;
 * _to_dim_order_copy converts to out's.
 */
#include "kernel_util.h"
#include "ops.h"

/* The dim_order argument, when given, must be a permutation of out's dims
 * and out's own order: the program laid out out that way, and any
 * permutation is one (the copy walks both tensors through their strides). */
static ember_status check_dim_order(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                    const ember_tensor *out) {
    const int64_t *order;
    size_t n;
    bool present;
    EK_TRY(ek_arg_opt_int_list(ctx, args, i, &order, &n, &present));
    if (!present) return EMBER_OK;
    if (n != out->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "dim_order argument has %zu entries, out has rank %u", n,
                                 (unsigned)out->dim);
    bool seen[EMBER_MAX_DIM] = {false}; /* n == out->dim <= EMBER_MAX_DIM */
    for (size_t k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= (int64_t)n || seen[order[k]])
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "dim_order argument is not a permutation: entry %zu is %lld",
                                     k, (long long)order[k]);
        seen[order[k]] = true;
    }
    for (size_t k = 0; k < n; k++)
        if (order[k] != out->dim_order[k])
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "dim_order argument differs from out's dim order at "
                                     "entry %zu (%lld, out has %u)",
                                     k, (long long)order[k], (unsigned)out->dim_order[k]);
    return EMBER_OK;
}

static ember_status dim_order_copy(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                   bool same_dtype) {
    ember_tensor *in, *out;
    bool non_blocking;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_bool(ctx, args, 1, &non_blocking));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(check_dim_order(ctx, args, 2, out));
    if (same_dtype) EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    EK_TRY(ek_resize_like(ctx, out, in));
    ek_copy_tensor(out, in);
    return EMBER_OK;
}

ember_status ek_op_clone_dim_order_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_order_copy(ctx, args, nargs, true);
}

ember_status ek_op_to_dim_order_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_order_copy(ctx, args, nargs, false);
}

ember_status ek_op_empty_dim_order_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    const int64_t *size;
    size_t n;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(check_dim_order(ctx, args, 1, out));
    return ek_resize_out(ctx, out, size, n);
}
