/*
 * aten::argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
 * aten::argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
 *
 * Index (int64) of the first max (min) along dim, or in the flattened
 * tensor when dim is None. NaN counts as the extreme, as in PyTorch.
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status arg_extreme(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                bool is_max) {
    ember_tensor *in, *out;
    int64_t dim;
    bool has_dim, keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int(ctx, args, 1, &dim, &has_dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    if (out->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out must be int64",
                                 is_max ? "argmax" : "argmin");
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, &dim, 1, has_dim, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    if (p.red_count == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: cannot reduce over a dim of size 0",
                                 is_max ? "argmax" : "argmin");
    ek_reduce_plan_bind_out(&p, out);

    ek_ctype ct = ek_is_float(in->dtype) ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    int64_t *obase = (int64_t *)out->data;
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        ek_extreme_state s = {is_max, false, false, 0.0, 0, 0};
        ek_reduce_fold(&p, in, off[1], load, ct == EK_CT_F64 ? ek_extreme_fold_f64 : ek_extreme_fold_i64, &s);
        obase[off[0]] = s.best;
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

ember_status ek_op_argmax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return arg_extreme(ctx, args, nargs, true);
}

ember_status ek_op_argmin_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return arg_extreme(ctx, args, nargs, false);
}
