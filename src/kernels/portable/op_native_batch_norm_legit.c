/*
 * aten::_native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias,
 *     Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum,
 *     float eps, *, Tensor(d!) out, Tensor(e!) save_mean, Tensor(f!) save_invstd)
 * aten::_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias,
 *     bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean,
 *     Tensor(c!) save_invstd)
 *
 * Batch norm over channel dim 1 of input (N, C, ...). Training: each
 * channel is normalized with its batch mean and biased variance,
 * save_mean / save_invstd (C) get the mean and 1 / sqrt(var + eps), and the
 * running statistics (when given) move toward the batch's:
 *   running_mean = (1 - momentum) running_mean + momentum mean,
 *   running_var  = (1 - momentum) running_var + momentum var * n / (n - 1).
 * Not training: the running statistics normalize, and save_mean /
 * save_invstd are empty (0). Statistics accumulate in double. Float dtypes
 * (weight, bias and statistics too), any dim order. Arguments: 8 (6)
 * inputs, 3 outs, TensorList.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

/* Every dim of input but the channel dim: the elements of one channel. */
typedef struct bn_walk {
    size_t n;
    int64_t sizes[EMBER_MAX_DIM];
    int64_t st[2][EMBER_MAX_DIM]; /* [0] input, [1] out */
    int64_t count;                /* elements per channel */
} bn_walk;

/* Runs BODY for every element of channel ch, with OFF[0] / OFF[1] its element
 * offsets in input / out (both already include the channel's offset). */
#define BN_FOR_CHANNEL(w, base_x, base_y, OFF, BODY)                                               \
    do {                                                                                           \
        int64_t pos_[EMBER_MAX_DIM] = {0}, OFF[2] = {(base_x), (base_y)};                          \
        bool more_ = (w)->count > 0;                                                               \
        while (more_) {                                                                            \
            BODY;                                                                                  \
            more_ = ek_advance(pos_, (w)->sizes, (w)->n, 2,                                        \
                               (const int64_t(*)[EMBER_MAX_DIM])(w)->st, OFF);                     \
        }                                                                                          \
    } while (0)

/* rm / rv may be NULL (no running statistics); cs: channel strides of input and out */
#define DEF_BN_LEGIT(SFX, T, CT, LOAD, STORE)                                                      \
    static void bn_legit_##SFX(T *y, T *smean, T *sinv, T *rm, T *rv, const T *x, const T *w,      \
                               const T *b, int64_t c, const int64_t *cs, const bn_walk *wk,        \
                               bool training, double momentum, double eps) {                       \
        int64_t count = wk->count;                                                                 \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
            CT mean, invstd;                                                                       \
            if (training) {                                                                        \
                double sum = 0, ss = 0;                                                            \
                BN_FOR_CHANNEL(wk, ch * cs[0], 0, off, sum += (double)LOAD(x[off[0]]));            \
                double m = count > 0 ? sum / (double)count : NAN;                                  \
                BN_FOR_CHANNEL(wk, ch * cs[0], 0, off, {                                           \
                    double dv = (double)LOAD(x[off[0]]) - m;                                       \
                    ss += dv * dv;                                                                 \
                });                                                                                \
                double var = count > 0 ? ss / (double)count : NAN;                                 \
                mean = (CT)m;                                                                      \
                invstd = (CT)(1.0 / sqrt(var + eps));                                              \
                smean[ch] = STORE(mean);                                                           \
                sinv[ch] = STORE(invstd);                                                          \
                double unbiased = count > 1 ? ss / (double)(count - 1) : NAN;                      \
                if (rm != NULL)                                                                    \
                    rm[ch] = STORE((CT)((1 - momentum) * (double)LOAD(rm[ch]) + momentum * m));    \
                if (rv != NULL)                                                                    \
                    rv[ch] = STORE(                                                                \
                        (CT)((1 - momentum) * (double)LOAD(rv[ch]) + momentum * unbiased));        \
            } else {                                                                               \
                mean = LOAD(rm[ch]);                                                               \
                invstd = (CT)(1.0 / sqrt((double)LOAD(rv[ch]) + eps));                             \
            }                                                                                      \
            CT alpha = w != NULL ? LOAD(w[ch]) * invstd : invstd;                                  \
            CT beta = (b != NULL ? LOAD(b[ch]) : (CT)0) - mean * alpha;                            \
            BN_FOR_CHANNEL(wk, ch * cs[0], ch * cs[1], off,                                        \
                           y[off[1]] = STORE(LOAD(x[off[0]]) * alpha + beta));                     \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_BN_LEGIT)

static ember_status check_param(ember_kernel_ctx *ctx, const ember_tensor *t,
                                const ember_tensor *in, int64_t c, const char *what) {
    if (t == NULL) return EMBER_OK;
    EK_TRY(ek_check_same_dtype(ctx, t, in, what));
    if (t->dim != 1 || t->sizes[0] != c)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "batch_norm: %s must have shape (%lld)", what, (long long)c);
    return EMBER_OK;
}

/* Resizes a saved-statistics output to (len) and checks its dtype. */
static ember_status resize_stat(ember_kernel_ctx *ctx, ember_tensor *t, const ember_tensor *in,
                                int64_t len, const char *what) {
    EK_TRY(ek_check_same_dtype(ctx, t, in, what));
    const int64_t shape[1] = {len};
    return ek_resize_out(ctx, t, shape, 1);
}

/* rm / rv: NULL for no_stats; both present otherwise. */
static ember_status bn_legit(ember_kernel_ctx *ctx, ember_value **args, size_t first_flag,
                             ember_tensor *rm, ember_tensor *rv) {
    ember_tensor *in, *w, *b, *out, *smean, *sinv;
    bool training;
    double momentum, eps;
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 1, &w));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &b));
    EK_TRY(ek_arg_bool(ctx, args, first_flag, &training));
    EK_TRY(ek_arg_double(ctx, args, first_flag + 1, &momentum));
    EK_TRY(ek_arg_double(ctx, args, first_flag + 2, &eps));
    EK_TRY(ek_arg_out(ctx, args, first_flag + 3, &out));
    EK_TRY(ek_arg_out(ctx, args, first_flag + 4, &smean));
    EK_TRY(ek_arg_out(ctx, args, first_flag + 5, &sinv));
    if (in->dim < 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "batch_norm: input must have at least 2 dims, got %u",
                                 (unsigned)in->dim);
    if (!training && rm == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "batch_norm: running statistics are needed when not training");
    if (training && rm != NULL) { /* written in place: must not be constants */
        EK_TRY(ek_arg_inout(ctx, args, 3, &rm));
        EK_TRY(ek_arg_inout(ctx, args, 4, &rv));
    }
    int64_t c = in->sizes[1];
    EK_TRY(ek_check_float(ctx, in->dtype, "batch_norm"));
    EK_TRY(check_param(ctx, w, in, c, "weight"));
    EK_TRY(check_param(ctx, b, in, c, "bias"));
    EK_TRY(check_param(ctx, rm, in, c, "running_mean"));
    EK_TRY(check_param(ctx, rv, in, c, "running_var"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "batch_norm input and out"));
    const ember_tensor *outs[3] = {out, smean, sinv};
    const ember_tensor *reads[5] = {in, w, b, rm, rv};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 5; j++)
            if (reads[j] != NULL) EK_TRY(ek_check_no_alias(ctx, outs[i], reads[j]));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(resize_stat(ctx, smean, in, training ? c : 0, "batch_norm input and save_mean"));
    EK_TRY(resize_stat(ctx, sinv, in, training ? c : 0, "batch_norm input and save_invstd"));
    if (c == 0) return EMBER_OK;
    bn_walk wk = {0, {0}, {{0}}, 1};
    for (size_t d = 0; d < in->dim; d++) {
        if (d == 1) continue;
        wk.sizes[wk.n] = in->sizes[d];
        wk.st[0][wk.n] = in->strides[d];
        wk.st[1][wk.n] = out->strides[d];
        wk.count *= in->sizes[d]; /* at most numel */
        wk.n++;
    }
    const int64_t cs[2] = {in->strides[1], out->strides[1]};
    /* statistics and parameters are 1-d: element ch at ch * stride, stride 1 */
    EK_FLOAT_SWITCH(ctx, in->dtype, bn_legit, out->data, smean->data, sinv->data,
                    rm != NULL ? rm->data : NULL, rv != NULL ? rv->data : NULL, in->data,
                    w != NULL ? w->data : NULL, b != NULL ? b->data : NULL, c, cs, &wk, training,
                    momentum, eps);
    return EMBER_OK;
}

ember_status ek_op_native_batch_norm_legit_out(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs) {
    ember_tensor *rm, *rv;
    EK_TRY(ek_check_nargs(ctx, nargs, 12));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &rm));
    EK_TRY(ek_arg_tensor(ctx, args, 4, &rv));
    return bn_legit(ctx, args, 5, rm, rv);
}

ember_status ek_op_native_batch_norm_legit_no_stats_out(ember_kernel_ctx *ctx, ember_value **args,
                                                        size_t nargs) {
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    return bn_legit(ctx, args, 3, NULL, NULL);
}
