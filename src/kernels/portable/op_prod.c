/*
 * aten::prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
 * aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *,
 *     ScalarType? dtype=None, Tensor(a!) out)
 *
 * Product of every element (into a 0-dim out) or along dim. Floats multiply
 * in double, integers and bool in int64 (wrapping, which gives the same
 * low bits as multiplying in a narrower integer out dtype); the result is
 * cast to out's dtype. The product of nothing is 1. A float self cannot
 * write to an integer out.
 */
#include "kernel_util.h"
#include "ops.h"

static void fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    const double *v = (const double *)x;
    double *acc = (double *)state;
    (void)pos;
    for (size_t i = 0; i < n; i++) *acc *= v[i];
}

static void fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    const int64_t *v = (const int64_t *)x;
    uint64_t *acc = (uint64_t *)state;
    (void)pos;
    for (size_t i = 0; i < n; i++) *acc *= (uint64_t)v[i];
}

static ember_status prod_core(ember_kernel_ctx *ctx, ember_tensor *in, const int64_t *dim,
                              bool keepdim, ember_tensor *out) {
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (ek_is_float(in->dtype) && !ek_is_float(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "prod: cannot write %s products to %s",
                                 ember_dtype_name(in->dtype), ember_dtype_name(out->dtype));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, dim, dim != NULL ? 1 : 0, dim != NULL, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    ek_reduce_plan_bind_out(&p, out);

    bool use_double = ek_is_float(in->dtype) || ek_is_float(out->dtype);
    ek_ctype ct = use_double ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, ct);
    char *obase = (char *)out->data;
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        if (use_double) {
            double acc = 1.0;
            ek_reduce_fold(&p, in, off[1], load, fold_f64, &acc);
            store(obase + off[0] * osize, 1, &acc, 1);
        } else {
            uint64_t acc = 1;
            ek_reduce_fold(&p, in, off[1], load, fold_i64, &acc);
            int64_t v = (int64_t)acc;
            store(obase + off[0] * osize, 1, &v, 1);
        }
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

ember_status ek_op_prod_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_arg_check_dtype(ctx, args, 1, out->dtype));
    return prod_core(ctx, in, NULL, false, out);
}

ember_status ek_op_prod_int_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim;
    bool keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_arg_check_dtype(ctx, args, 3, out->dtype));
    return prod_core(ctx, in, &dim, keepdim, out);
}
