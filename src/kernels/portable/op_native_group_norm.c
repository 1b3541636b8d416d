/*
 * aten::native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N,
 *     SymInt C, SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1,
 *     Tensor(c!) out2)
 *
 * input (N, C, *) with C split into `group` groups; each (n, group) slab of
 * C/group * HxW elements is normalized on its own, then scaled per channel:
 *   out0 = (x - mean) * rstd * weight[c] + bias[c],  out1 = mean,  out2 = rstd
 * with out1, out2 of shape (N, group). Float dtypes, contiguous.
 * Arguments: 8 inputs, 3 outs, TensorList (12).
 */
#include <tgmath.h> /* sqrt in the compute type */

#include "kernel_util.h"
#include "ops.h"

#define DEF_GROUP_NORM(SFX, T, CT, LOAD, STORE)                                                    \
    static void group_norm_##SFX(T *y, T *mean_out, T *rstd_out, const T *x, const T *w,           \
                                 const T *b, int64_t n, int64_t c, int64_t hw, int64_t groups,     \
                                 double eps) {                                                     \
        const int64_t cg = c / groups, len = cg * hw; /* one slab: (cg, hw) */                     \
        for (int64_t i = 0; i < n * groups; i++) {                                                 \
            const T *xs = x + i * len;                                                             \
            T *ys = y + i * len;                                                                   \
            double sum = 0.0, sq = 0.0;                                                            \
            for (int64_t k = 0; k < len; k++) sum += (double)LOAD(xs[k]);                          \
            double mean = len > 0 ? sum / (double)len : 0.0;                                       \
            for (int64_t k = 0; k < len; k++) {                                                    \
                double dv = (double)LOAD(xs[k]) - mean;                                            \
                sq += dv * dv;                                                                     \
            }                                                                                      \
            double var = len > 0 ? sq / (double)len : NAN;                                         \
            const CT m = (CT)mean, rstd = (CT)(1.0 / sqrt(var + eps));                             \
            for (int64_t ch = 0; ch < cg; ch++) {                                                  \
                int64_t cc = (i % groups) * cg + ch; /* channel index */                           \
                CT scale = w != NULL ? LOAD(w[cc]) * rstd : rstd;                                  \
                CT shift = (b != NULL ? LOAD(b[cc]) : (CT)0) - m * scale;                          \
                for (int64_t k = 0; k < hw; k++)                                                   \
                    ys[ch * hw + k] = STORE(LOAD(xs[ch * hw + k]) * scale + shift);                \
            }                                                                                      \
            mean_out[i] = STORE(m);                                                                \
            rstd_out[i] = STORE(rstd);                                                             \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_GROUP_NORM)

static ember_status check_param(ember_kernel_ctx *ctx, const ember_tensor *t,
                                const ember_tensor *in, int64_t c, const char *what) {
    if (t == NULL) return EMBER_OK;
    EK_TRY(ek_check_same_dtype(ctx, t, in, what));
    if (t->dim != 1 || t->sizes[0] != c)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm: %s must have shape (%lld)", what, (long long)c);
    return EMBER_OK;
}

ember_status ek_op_native_group_norm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *w, *b, *out, *mean, *rstd;
    int64_t n, c, hw, groups;
    double eps;
    EK_TRY(ek_check_nargs(ctx, nargs, 12));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 1, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &b));
    EK_TRY(ek_arg_int(ctx, args, 3, &n));
    EK_TRY(ek_arg_int(ctx, args, 4, &c));
    EK_TRY(ek_arg_int(ctx, args, 5, &hw));
    EK_TRY(ek_arg_int(ctx, args, 6, &groups));
    EK_TRY(ek_arg_double(ctx, args, 7, &eps));
    EK_TRY(ek_arg_out(ctx, args, 8, &out));
    EK_TRY(ek_arg_out(ctx, args, 9, &mean));
    EK_TRY(ek_arg_out(ctx, args, 10, &rstd));
    /* N, C and HxW must describe input exactly */
    if (in->dim < 2 || in->sizes[0] != n || in->sizes[1] != c || n < 0 || c < 0 || hw < 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm: N, C do not match the input");
    int64_t inner = 1;
    for (size_t d = 2; d < in->dim; d++) inner *= in->sizes[d];
    if (inner != hw)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "group_norm: HxW %lld does not match the input", (long long)hw);
    if (groups <= 0 || c % groups != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "group_norm: %lld channels not divisible into %lld groups",
                                 (long long)c, (long long)groups);
    EK_TRY(ek_check_float(ctx, in->dtype, "group_norm"));
    EK_TRY(ek_check_contiguous(ctx, in, "group_norm input"));
    EK_TRY(check_param(ctx, w, in, c, "weight"));
    EK_TRY(check_param(ctx, b, in, c, "bias"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "group_norm input and out0"));
    EK_TRY(ek_check_same_dtype(ctx, in, mean, "group_norm input and out1"));
    EK_TRY(ek_check_same_dtype(ctx, in, rstd, "group_norm input and out2"));
    const int64_t stat[2] = {n, groups};
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_resize_out(ctx, mean, stat, 2));
    EK_TRY(ek_resize_out(ctx, rstd, stat, 2));
    EK_TRY(ek_check_contiguous(ctx, out, "group_norm out0"));
    EK_TRY(ek_check_contiguous(ctx, mean, "group_norm out1"));
    EK_TRY(ek_check_contiguous(ctx, rstd, "group_norm out2"));
    if (mean->numel == 0) return EMBER_OK;
    static double dummy[1]; /* for empty slabs: never read or written */
    const void *x = in->numel > 0 ? in->data : (void *)dummy;
    void *y = in->numel > 0 ? out->data : (void *)dummy;
    EK_FLOAT_SWITCH(ctx, in->dtype, group_norm, y, mean->data, rstd->data, x,
                    w != NULL ? w->data : NULL, b != NULL ? b->data : NULL, n, c, hw, groups, eps);
    return EMBER_OK;
}
