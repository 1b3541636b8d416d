/*
 * aten::native_group_norm_backward.out(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd,
 *     Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask, *,
 *     Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
 *
 * Gradients of native_group_norm for the outputs output_mask selects. input
 * is (N, C, *) with HxW elements per channel and mean, rstd the forward's
 * statistics (N, group). With ds[n,c] = sum(dy * x), db[n,c] = sum(dy) over
 * a channel's HxW elements and w the weight (1 without one):
 *   out0[n,c,i] = rstd w[c] dy + c2 x + c3,  per (n, group) of D channels:
 *       c2 = (sum db w * mean - sum ds w) rstd^3 / (D HxW),
 *       c3 = -c2 mean - sum db w * rstd / (D HxW)
 *   out1[c] = sum_n (ds[n,c] - db[n,c] mean) rstd,   out2[c] = sum_n db[n,c]
 * as PyTorch computes them; sums are in double. An output that output_mask
 * leaves out is not touched (it may be None). Float dtypes, contiguous.
 * Arguments: 10 inputs, 3 outs, TensorList (14).
 */
#include "kernel_util.h"
#include "ops.h"

typedef struct gn_geom {
    int64_t n, c, hw, groups;
} gn_geom;

#define DEF_GROUP_NORM_BWD(SFX, T, CT, LOAD, STORE)                                                \
    /* ds, db of channel slab xs / dys (HxW elements) */                                           \
    static void gn_sums_##SFX(const T *dys, const T *xs, int64_t hw, double *ds, double *db) {     \
        double s = 0.0, b = 0.0;                                                                   \
        for (int64_t k = 0; k < hw; k++) {                                                         \
            double g = (double)LOAD(dys[k]);                                                       \
            s += g * (double)LOAD(xs[k]);                                                          \
            b += g;                                                                                \
        }                                                                                          \
        *ds = s;                                                                                   \
        *db = b;                                                                                   \
    }                                                                                              \
    static void gn_dx_##SFX(T *dx, const T *dy, const T *x, const T *mean, const T *rstd,          \
                            const T *w, const gn_geom *q) {                                        \
        const int64_t d = q->c / q->groups;                                                        \
        const double s = 1.0 / (double)(d * q->hw);                                                \
        for (int64_t i = 0; i < q->n * q->groups; i++) {                                           \
            const int64_t base = i * d * q->hw; /* slab (D, HxW) */                                \
            const double m = (double)LOAD(mean[i]), a = (double)LOAD(rstd[i]);                     \
            double dsg = 0.0, dbg = 0.0;                                                           \
            for (int64_t ch = 0; ch < d; ch++) {                                                   \
                const int64_t cc = (i % q->groups) * d + ch;                                       \
                double ds, db, wc = w != NULL ? (double)LOAD(w[cc]) : 1.0;                         \
                gn_sums_##SFX(dy + base + ch * q->hw, x + base + ch * q->hw, q->hw, &ds, &db);     \
                dsg += ds * wc;                                                                    \
                dbg += db * wc;                                                                    \
            }                                                                                      \
            const double c2 = (dbg * m - dsg) * a * a * a * s;                                     \
            const double c3 = -c2 * m - dbg * a * s;                                               \
            for (int64_t ch = 0; ch < d; ch++) {                                                   \
                const int64_t cc = (i % q->groups) * d + ch;                                       \
                const double c1 = a * (w != NULL ? (double)LOAD(w[cc]) : 1.0);                     \
                const int64_t o = base + ch * q->hw;                                               \
                for (int64_t k = 0; k < q->hw; k++)                                                \
                    dx[o + k] = STORE(                                                             \
                        (CT)(c1 * (double)LOAD(dy[o + k]) + c2 * (double)LOAD(x[o + k]) + c3));    \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void gn_dwb_##SFX(T *dw, T *db_out, const T *dy, const T *x, const T *mean,             \
                             const T *rstd, const gn_geom *q) {                                    \
        const int64_t d = q->c / q->groups;                                                        \
        for (int64_t cc = 0; cc < q->c; cc++) {                                                    \
            double sw = 0.0, sb = 0.0;                                                             \
            for (int64_t n = 0; n < q->n; n++) {                                                   \
                const int64_t i = n * q->groups + cc / d; /* (n, group) */                         \
                const int64_t o = (n * q->c + cc) * q->hw;                                         \
                double ds, db;                                                                     \
                gn_sums_##SFX(dy + o, x + o, q->hw, &ds, &db);                                     \
                sw += (ds - db * (double)LOAD(mean[i])) * (double)LOAD(rstd[i]);                   \
                sb += db;                                                                          \
            }                                                                                      \
            if (dw != NULL) dw[cc] = STORE((CT)sw);                                                \
            if (db_out != NULL) db_out[cc] = STORE((CT)sb);                                        \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_GROUP_NORM_BWD)

static ember_status check_stat(ember_kernel_ctx *ctx, const ember_tensor *t, const ember_tensor *in,
                               int64_t n, const char *what) {
    EK_TRY(ek_check_same_dtype(ctx, in, t, what));
    EK_TRY(ek_check_contiguous(ctx, t, what));
    if (t->numel != n)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm_backward: %s has %lld elements, not %lld", what,
                                 (long long)t->numel, (long long)n);
    return EMBER_OK;
}

ember_status ek_op_native_group_norm_backward_out(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs) {
    ember_tensor *dy, *in, *mean, *rstd, *w, *outs[3] = {NULL, NULL, NULL};
    const bool *mask;
    size_t nmask;
    gn_geom q;
    EK_TRY(ek_check_nargs(ctx, nargs, 14));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &dy));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &mean));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &rstd));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 4, &w));
    EK_TRY(ek_arg_int(ctx, args, 5, &q.n));
    EK_TRY(ek_arg_int(ctx, args, 6, &q.c));
    EK_TRY(ek_arg_int(ctx, args, 7, &q.hw));
    EK_TRY(ek_arg_int(ctx, args, 8, &q.groups));
    EK_TRY(ek_arg_bool_list(ctx, args, 9, &mask, &nmask));
    if (nmask != 3)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "group_norm_backward: output_mask has %zu values, not 3",
                                 nmask);
    for (size_t k = 0; k < 3; k++)
        if (mask[k]) EK_TRY(ek_arg_out(ctx, args, 10 + k, &outs[k]));

    /* N, C and HxW must describe input exactly */
    if (in->dim < 2 || q.n < 0 || q.c < 0 || q.hw < 0 || in->sizes[0] != q.n ||
        in->sizes[1] != q.c)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm_backward: N, C do not match the input");
    int64_t inner = 1;
    for (size_t d = 2; d < in->dim; d++) inner *= in->sizes[d];
    if (inner != q.hw)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm_backward: HxW %lld does not match the input",
                                 (long long)q.hw);
    if (q.groups <= 0 || q.c % q.groups != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "group_norm_backward: %lld channels not divisible into %lld groups",
                                 (long long)q.c, (long long)q.groups);
    EK_TRY(ek_check_float(ctx, in->dtype, "group_norm_backward"));
    EK_TRY(ek_check_contiguous(ctx, in, "group_norm_backward input"));
    EK_TRY(ek_check_same_dtype(ctx, in, dy, "group_norm_backward input and grad_out"));
    EK_TRY(ek_check_contiguous(ctx, dy, "group_norm_backward grad_out"));
    bool same = dy->dim == in->dim;
    for (size_t d = 0; same && d < in->dim; d++) same = dy->sizes[d] == in->sizes[d];
    if (!same)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm_backward: grad_out must have input's shape");
    EK_TRY(check_stat(ctx, mean, in, q.n * q.groups, "mean"));
    EK_TRY(check_stat(ctx, rstd, in, q.n * q.groups, "rstd"));
    if (w != NULL) EK_TRY(check_stat(ctx, w, in, q.c, "weight"));
    for (size_t k = 0; k < 3; k++) {
        if (outs[k] == NULL) continue;
        EK_TRY(ek_check_same_dtype(ctx, in, outs[k], "group_norm_backward input and out"));
        EK_TRY(ek_check_no_alias(ctx, outs[k], in));
        EK_TRY(ek_check_no_alias(ctx, outs[k], dy));
    }
    if (outs[0] != NULL) {
        EK_TRY(ek_resize_like(ctx, outs[0], in));
        EK_TRY(ek_check_contiguous(ctx, outs[0], "group_norm_backward out0"));
    }
    const int64_t cshape[1] = {q.c};
    for (size_t k = 1; k < 3; k++) {
        if (outs[k] == NULL) continue;
        EK_TRY(ek_resize_out(ctx, outs[k], cshape, 1));
        EK_TRY(ek_check_contiguous(ctx, outs[k], "group_norm_backward out1/out2"));
    }
    if (in->numel == 0) {
        /* nothing to sum: the parameter gradients are zero */
        for (size_t k = 1; k < 3; k++) {
            if (outs[k] == NULL || outs[k]->numel == 0) continue;
            ek_scalar zero = ek_scalar_from_int(0);
            char elem[8];
            ek_scalar_store(outs[k]->dtype, &zero, elem);
            ek_fill_bytes(outs[k]->data, outs[k]->numel, elem, ember_dtype_size(outs[k]->dtype));
        }
        return EMBER_OK;
    }
    if (outs[0] != NULL)
        EK_FLOAT_SWITCH(ctx, in->dtype, gn_dx, outs[0]->data, dy->data, in->data, mean->data,
                        rstd->data, w != NULL ? w->data : NULL, &q);
    if (outs[1] != NULL || outs[2] != NULL)
        EK_FLOAT_SWITCH(ctx, in->dtype, gn_dwb, outs[1] != NULL ? outs[1]->data : NULL,
                        outs[2] != NULL ? outs[2]->data : NULL, dy->data, in->data, mean->data,
                        rstd->data, &q);
    return EMBER_OK;
}
