/*
 * aten::var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
 *     bool keepdim=False, Tensor(a!) out)
 * aten::var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *,
 *     Tensor(a!) out)
 *
 * sum((x - mean)^2) / (N - correction) over dims (None: all), correction
 * defaulting to 1; two passes in double. Float dtypes. var.out is the same
 * with correction 1 (unbiased) or 0.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct var_state {
    double mean, sum;
} var_state;

static void fold_sum(void *state, const void *x, size_t n, int64_t pos) {
    var_state *s = (var_state *)state;
    const double *v = (const double *)x;
    (void)pos;
    for (size_t i = 0; i < n; i++) s->sum += v[i];
}

static void fold_sq(void *state, const void *x, size_t n, int64_t pos) {
    var_state *s = (var_state *)state;
    const double *v = (const double *)x;
    (void)pos;
    for (size_t i = 0; i < n; i++) s->sum += (v[i] - s->mean) * (v[i] - s->mean);
}

ember_status ek_op_var_correction_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    bool has_dims, has_corr, keepdim;
    ek_scalar corr;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 1, &dims, &ndims, &has_dims));
    EK_TRY(ek_arg_opt_scalar(ctx, args, 2, &corr, &has_corr));
    EK_TRY(ek_arg_bool(ctx, args, 3, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_float(ctx, in->dtype, "var"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    double c = has_corr ? corr.d : 1.0;
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, dims, ndims, has_dims, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    ek_reduce_plan_bind_out(&p, out);
    ek_load_fn load = ek_loader(in->dtype, EK_CT_F64);
    ek_store_fn store = ek_storer(out->dtype, EK_CT_F64);
    char *obase = (char *)out->data;
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    double n = (double)p.red_count;
    double denom = n - c > 0 ? n - c : 0.0; /* PyTorch: max(0, N - correction) */
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        var_state s = {0.0, 0.0};
        ek_reduce_fold(&p, in, off[1], load, fold_sum, &s);
        s.mean = s.sum / n;
        s.sum = 0.0;
        ek_reduce_fold(&p, in, off[1], load, fold_sq, &s);
        double v = s.sum / denom; /* x / 0 gives inf or nan, as in PyTorch */
        store(obase + off[0] * osize, 1, &v, 1);
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

ember_status ek_op_var_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    bool unbiased;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_bool(ctx, args, 2, &unbiased));
    /* var.correction_out(self, dim, correction, keepdim, out, out) */
    ember_value corr;
    corr.tag = EMBER_TAG_INT;
    corr.u.i = unbiased ? 1 : 0;
    ember_value *var_args[6] = {args[0], args[1], &corr, args[3], args[4], args[5]};
    return ek_op_var_correction_out(ctx, var_args, 6);
}
