/*
 * aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max,
 *     Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
 * aten::min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min,
 *     Tensor(b!) min_indices) -> (Tensor(a!) values, Tensor(b!) indices)
 *
 * The max (min) along dim and its first index (int64); NaN wins, as in
 * PyTorch. Arguments: 3 inputs, 2 outs, TensorList (6).
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status dim_extreme(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                bool is_max) {
    ember_tensor *in, *values, *indices;
    int64_t dim;
    bool keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 3, &values));
    EK_TRY(ek_arg_out(ctx, args, 4, &indices));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, in, values, "self and values"));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "indices must be int64");
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, &dim, 1, true, keepdim));
    EK_TRY(ek_resize_out(ctx, values, p.out_sizes, p.out_dim));
    EK_TRY(ek_resize_out(ctx, indices, p.out_sizes, p.out_dim));
    if (values->numel == 0) return EMBER_OK;
    if (p.red_count == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "cannot reduce over a dim of size 0");
    /* values and indices share one walk: their strides must agree */
    for (uint32_t d = 0; d < values->dim; d++)
        if (values->strides[d] != indices->strides[d] && values->sizes[d] > 1)
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                     "values and indices differ in dim order");
    ek_reduce_plan_bind_out(&p, values);

    ek_ctype ct = ek_is_float(in->dtype) ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(values->dtype, ct);
    char *vbase = (char *)values->data;
    int64_t *ibase = (int64_t *)indices->data;
    int64_t vsize = (int64_t)ember_dtype_size(values->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        ek_extreme_state s = {is_max, false, false, 0.0, 0, 0};
        ek_reduce_fold(&p, in, off[1], load, ct == EK_CT_F64 ? ek_extreme_fold_f64 : ek_extreme_fold_i64, &s);
        store(vbase + off[0] * vsize, 1, ct == EK_CT_F64 ? (const void *)&s.d : (const void *)&s.i,
              1);
        ibase[off[0]] = s.best;
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

ember_status ek_op_max_dim_max(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_extreme(ctx, args, nargs, true);
}

ember_status ek_op_min_dim_min(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_extreme(ctx, args, nargs, false);
}
