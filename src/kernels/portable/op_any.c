/*
 * aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
 * aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out)
 * aten::any.all_out(Tensor self, *, Tensor(a!) out)
 * aten::all.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
 * aten::all.all_out(Tensor self, *, Tensor(a!) out)
 *
 * Whether any (all) element over the dims is non-zero; 1/0 in out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

typedef struct truth_state {
    bool want_any; /* any: stop at the first true; all: at the first false */
    bool result;
} truth_state;

static void fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    truth_state *s = (truth_state *)state;
    const double *v = (const double *)x;
    (void)pos;
    for (size_t i = 0; i < n; i++) {
        bool t = v[i] != 0; /* NaN counts as true */
        if (s->want_any ? t : !t) s->result = s->want_any;
    }
}

static void fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    truth_state *s = (truth_state *)state;
    const int64_t *v = (const int64_t *)x;
    (void)pos;
    for (size_t i = 0; i < n; i++) {
        bool t = v[i] != 0;
        if (s->want_any ? t : !t) s->result = s->want_any;
    }
}

static ember_status truth(ember_kernel_ctx *ctx, ember_tensor *in, const int64_t *dims,
                          size_t ndims, bool has_dims, bool keepdim, ember_tensor *out,
                          bool want_any) {
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, dims, ndims, has_dims, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    ek_reduce_plan_bind_out(&p, out);
    ek_ctype ct = ek_is_float(in->dtype) ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, EK_CT_I64);
    char *obase = (char *)out->data;
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        /* empty: any is false, all is true */
        truth_state s = {want_any, !want_any};
        ek_reduce_fold(&p, in, off[1], load, ct == EK_CT_F64 ? fold_f64 : fold_i64, &s);
        int64_t v = s.result ? 1 : 0;
        store(obase + off[0] * osize, 1, &v, 1);
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

static ember_status truth_dim(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                              bool want_any) {
    ember_tensor *in, *out;
    int64_t dim;
    bool keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    return truth(ctx, in, &dim, 1, true, keepdim, out, want_any);
}

static ember_status truth_all(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                              bool want_any) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    return truth(ctx, in, NULL, 0, false, false, out, want_any);
}

ember_status ek_op_any_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return truth_dim(ctx, args, nargs, true);
}

ember_status ek_op_any_dims_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    bool has_dims, keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 1, &dims, &ndims, &has_dims));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    return truth(ctx, in, dims, ndims, has_dims, keepdim, out, true);
}

ember_status ek_op_any_all_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return truth_all(ctx, args, nargs, true);
}

ember_status ek_op_all_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return truth_dim(ctx, args, nargs, false);
}

ember_status ek_op_all_all_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return truth_all(ctx, args, nargs, false);
}
