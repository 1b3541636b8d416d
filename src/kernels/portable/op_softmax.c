/*
 * aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 * aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 *
 * Along dim: out = exp(x - max) / sum(exp(x - max)), or its log
 * (x - max - log(sum)). Float dtypes, contiguous; out has self's dtype.
 */
#include <tgmath.h> /* exp, log in the compute type (float or double) */

#include "kernel_util.h"
#include "ops.h"

/* Columns of one (len, inner) slice handled together. */
#define SM_BLOCK 64

/*
 * self viewed as (outer, len, inner): element (o, d, i) at (o * len + d) * inner + i.
 * Each slice o is taken SM_BLOCK columns at a time: the running max, the sum
 * of exponentials and the outputs of a block are computed row by row, so
 * memory is read in order whichever dim is normalized (inner == 1 is the
 * plain row case).
 */
#define DEF_SOFTMAX(SFX, T, CT, LOAD, STORE)                                                       \
    static void softmax_##SFX(T *out, const T *x, int64_t outer, int64_t len, int64_t inner,       \
                              bool log_out) {                                                      \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *xs = x + o * len * inner; /* (len, inner) */                                  \
            T *ys = out + o * len * inner;                                                         \
            for (int64_t i0 = 0; i0 < inner; i0 += SM_BLOCK) {                                     \
                int64_t w = inner - i0 < SM_BLOCK ? inner - i0 : SM_BLOCK;                         \
                CT max[SM_BLOCK], acc[SM_BLOCK];                                                   \
                for (int64_t j = 0; j < w; j++) {                                                  \
                    max[j] = -INFINITY;                                                            \
                    acc[j] = 0;                                                                    \
                }                                                                                  \
                for (int64_t d = 0; d < len; d++) {                                                \
                    const T *xr = xs + d * inner + i0;                                             \
                    for (int64_t j = 0; j < w; j++)                                                \
                        if (LOAD(xr[j]) > max[j]) max[j] = LOAD(xr[j]);                            \
                }                                                                                  \
                /* float and double keep the exponentials in out and scale them below;     \
                 * half types compute them again from x, rounding only once */             \
                bool keep = !log_out && sizeof(T) == sizeof(CT);                                   \
                for (int64_t d = 0; d < len; d++) {                                                \
                    const T *xr = xs + d * inner + i0;                                             \
                    T *yr = ys + d * inner + i0;                                                   \
                    if (keep)                                                                      \
                        for (int64_t j = 0; j < w; j++) {                                          \
                            CT e = exp(LOAD(xr[j]) - max[j]);                                      \
                            yr[j] = STORE(e);                                                      \
                            acc[j] += e;                                                           \
                        }                                                                          \
                    else                                                                           \
                        for (int64_t j = 0; j < w; j++) acc[j] += exp(LOAD(xr[j]) - max[j]);       \
                }                                                                                  \
                /* acc becomes log(sum) or 1 / sum */                                              \
                for (int64_t j = 0; j < w; j++) acc[j] = log_out ? log(acc[j]) : 1 / acc[j];       \
                for (int64_t d = 0; d < len; d++) {                                                \
                    const T *xr = xs + d * inner + i0;                                             \
                    T *yr = ys + d * inner + i0;                                                   \
                    if (log_out)                                                                   \
                        for (int64_t j = 0; j < w; j++)                                            \
                            yr[j] = STORE(LOAD(xr[j]) - max[j] - acc[j]);                          \
                    else if (keep)                                                                 \
                        for (int64_t j = 0; j < w; j++) yr[j] = STORE(LOAD(yr[j]) * acc[j]);       \
                    else                                                                           \
                        for (int64_t j = 0; j < w; j++)                                            \
                            yr[j] = STORE(exp(LOAD(xr[j]) - max[j]) * acc[j]);                     \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_SOFTMAX)

static ember_status softmax_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                   bool log_out) {
    ember_tensor *self, *out;
    int64_t dim;
    bool half_to_float;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &half_to_float));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (half_to_float)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "softmax: half_to_float is not supported");
    size_t d;
    EK_TRY(ek_norm_dim(ctx, dim, self->dim, &d));
    EK_TRY(ek_check_float(ctx, self->dtype, "softmax"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "softmax self and out"));
    EK_TRY(ek_check_contiguous(ctx, self, "softmax self"));
    EK_TRY(ek_resize_like(ctx, out, self));
    EK_TRY(ek_check_contiguous(ctx, out, "softmax out"));
    if (out->numel == 0) return EMBER_OK;

    int64_t outer = 1, len = 1, inner = 1;
    for (size_t i = 0; i < self->dim; i++) {
        if (i < d)
            outer *= self->sizes[i];
        else if (i == d)
            len = self->sizes[i];
        else
            inner *= self->sizes[i];
    }
    EK_FLOAT_SWITCH(ctx, self->dtype, softmax, out->data, self->data, outer, len, inner, log_out);
    return EMBER_OK;
}

ember_status ek_op_softmax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return softmax_common(ctx, args, nargs, false);
}

ember_status ek_op_log_softmax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return softmax_common(ctx, args, nargs, true);
}
