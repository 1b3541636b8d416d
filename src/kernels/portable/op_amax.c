/*
 * aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
 * aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
 * aten::max.unary_out(Tensor self, *, Tensor(a!) out)
 *
 * Max (min) over dims ([] means all); NaN propagates. out has self's dtype.
 * Reducing an empty dim fails, as in PyTorch. max.unary_out is amax over
 * every dim into a 0-dim out (an empty self fails).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct ext_state {
    bool is_max, seen, nan;
    double d;
    int64_t i;
} ext_state;

static void fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    ext_state *s = (ext_state *)state;
    const double *v = (const double *)x;
    (void)pos;
    for (size_t k = 0; k < n; k++) {
        if (v[k] != v[k]) s->nan = true;
        if (!s->seen || (s->is_max ? v[k] > s->d : v[k] < s->d)) s->d = v[k];
        s->seen = true;
    }
}

static void fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    ext_state *s = (ext_state *)state;
    const int64_t *v = (const int64_t *)x;
    (void)pos;
    for (size_t k = 0; k < n; k++) {
        if (!s->seen || (s->is_max ? v[k] > s->i : v[k] < s->i)) s->i = v[k];
        s->seen = true;
    }
}

static ember_status extreme(ember_kernel_ctx *ctx, ember_tensor *in, const int64_t *dims,
                            size_t ndims, bool keepdim, ember_tensor *out, bool is_max) {
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, dims, ndims, true, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    if (p.red_count == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: cannot reduce over a dim of size 0",
                                 is_max ? "amax" : "amin");
    ek_reduce_plan_bind_out(&p, out);

    ek_ctype ct = ek_is_float(in->dtype) ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, ct);
    char *obase = (char *)out->data;
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        ext_state s = {is_max, false, false, 0.0, 0};
        ek_reduce_fold(&p, in, off[1], load, ct == EK_CT_F64 ? fold_f64 : fold_i64, &s);
        if (ct == EK_CT_F64) {
            if (s.nan) s.d = NAN;
            store(obase + off[0] * osize, 1, &s.d, 1);
        } else {
            store(obase + off[0] * osize, 1, &s.i, 1);
        }
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

static ember_status extreme_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                               bool is_max) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    bool keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &dims, &ndims));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    return extreme(ctx, in, dims, ndims, keepdim, out, is_max);
}

ember_status ek_op_amax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return extreme_op(ctx, args, nargs, true);
}

ember_status ek_op_amin_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return extreme_op(ctx, args, nargs, false);
}

ember_status ek_op_max_unary_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    if (in->numel == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "max: expected a non-empty tensor (no identity for max)");
    return extreme(ctx, in, NULL, 0, false, out, true);
}
