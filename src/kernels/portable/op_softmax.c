/*
 * aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 * aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 *
 * Along dim: out = exp(x - max) / sum(exp(x - max)), or its log
 * (x - max - log(sum)). Float dtypes, contiguous; out has self's dtype.
 */
#include <string.h>
#include "real_math.h" /* ek_exp, ek_log in the compute type (float or double) */

#include "kernel_util.h"
#include "ops.h"

/* Columns of one (len, inner) slice handled together. */
#define SM_BLOCK 64
/* Independent lanes of the row reductions (max, sum) when inner == 1: as
 * many as the compiler vectorizes as a loop (shorter ones it unrolls first,
 * and then leaves the max scalar). */
#define SM_LANES 32

/*
 * exp(x) in float for x <= 0 or NaN only: the x - max of softmax. NaN gives
 * NaN, -inf gives 0, and the result is within about 1 ulp of exp(x)
 * (denormal results included); x > 0 is outside the contract. Written
 * without branches, table lookups or float-to-int conversions so that a
 * loop over it vectorizes:
 *   x below -150 (-inf included) is raised to -150, whose exp rounds to 0;
 *   n = round(x * log2(e)) by adding 1.5 * 2^23, whose float rounding is
 *   to the nearest integer (n also lands in the low mantissa bits, so NaN
 *   is never converted to an int);
 *   r = x - n * ln 2 in two steps (Cody and Waite: ln 2 split into a short
 *   high part, for which n * hi is exact, and the rest), |r| <= ln(2) / 2;
 *   exp(r) by the degree-7 polynomial of Cephes' expf;
 *   2^n as two powers of two built from bits, each in the normal range,
 *   so that only the last product rounds when the result is denormal.
 */
static inline float sm_expf_nonpos(float x) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    /* The clamp works on the bits as int32: negative floats from -150
     * (0xC3160000) to -inf (0xFF800000) are the ints from -1021968384 to
     * -8388608, in order; NaNs and x >= -150 fall outside. A float compare
     * and select would do, but GCC turns it into a branch it will not
     * vectorize (the compare might trap), so the select is a bit mask. */
    int32_t ix;
    memcpy(&ix, &x, sizeof ix);
    const int32_t low = -((ix > -1021968384) & (ix <= -8388608)); /* all ones: x < -150 */
    ix = (ix & ~low) | (-1021968384 & low);
    memcpy(&x, &ix, sizeof x);
    const float t = x * 1.44269504088896341f + magic;
    const float n = t - magic;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* t's bits are those of 1.5 * 2^23 plus n: nb = n + 252 in [35, 252]
     * splits into h + (nb - h), each in [17, 126], and 2^n = 2^(h - 126) *
     * 2^(nb - h - 126), whose biased exponents are h + 1 and nb - h + 1.
     * Unsigned arithmetic: a NaN's bits give some scale, and NaN * it is NaN. */
    uint32_t bits;
    memcpy(&bits, &t, sizeof bits);
    const uint32_t nb = bits - 0x4B400000u + 252u;
    const uint32_t h = nb >> 1;
    const uint32_t e1 = (h + 1u) << 23, e2 = (nb - h + 1u) << 23;
    float s1, s2;
    memcpy(&s1, &e1, sizeof s1);
    memcpy(&s2, &e2, sizeof s2);
    return p * s1 * s2;
}

/* exp of a value <= 0 or NaN in the compute type: the polynomial for float,
 * libm for double. */
static inline float sm_exp_f32(float x) { return sm_expf_nonpos(x); }
static inline double sm_exp_f64(double x) { return exp(x); }
#define SM_EXP(CT, x)                                                                              \
    (sizeof(CT) == sizeof(float) ? (CT)sm_exp_f32((float)(x)) : (CT)sm_exp_f64((double)(x)))

/*
 * Rows (inner == 1): self viewed as (outer, len), each row normalized on
 * its own. The max and the sum of exponentials run in SM_LANES independent
 * lanes (folded at the end), so neither is one long chain of dependent
 * operations and both vectorize. The max skips NaN; a NaN in the row still
 * makes every output NaN through its exponential, as in PyTorch.
 */
#define DEF_SOFTMAX_ROWS(SFX, T, CT, LOAD, STORE)                                                  \
    static void softmax_rows_##SFX(T *out, const T *x, int64_t outer, int64_t len,                 \
                                   bool log_out) {                                                 \
        const int64_t lfull = len - len % SM_LANES;                                                \
        /* float and double keep the exponentials in out and scale them below;             \
         * half types compute them again from x, rounding only once */                     \
        const bool keep = !log_out && sizeof(T) == sizeof(CT);                                     \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *xr = x + o * len; /* (len) */                                                 \
            T *yr = out + o * len;                                                                 \
            CT lane[SM_LANES];                                                                     \
            for (int j = 0; j < SM_LANES; j++) lane[j] = -INFINITY;                                \
            for (int64_t i = 0; i < lfull; i += SM_LANES)                                          \
                for (int j = 0; j < SM_LANES; j++) {                                               \
                    const CT v = LOAD(xr[i + j]);                                                  \
                    lane[j] = v > lane[j] ? v : lane[j];                                           \
                }                                                                                  \
            CT max = -INFINITY;                                                                    \
            for (int j = 0; j < SM_LANES; j++) max = lane[j] > max ? lane[j] : max;                \
            for (int64_t i = lfull; i < len; i++) {                                                \
                const CT v = LOAD(xr[i]);                                                          \
                max = v > max ? v : max;                                                           \
            }                                                                                      \
            for (int j = 0; j < SM_LANES; j++) lane[j] = 0;                                        \
            CT sum = 0;                                                                            \
            if (keep) {                                                                            \
                for (int64_t i = 0; i < lfull; i += SM_LANES)                                      \
                    for (int j = 0; j < SM_LANES; j++) {                                           \
                        const CT e = SM_EXP(CT, LOAD(xr[i + j]) - max);                            \
                        yr[i + j] = STORE(e);                                                      \
                        lane[j] += e;                                                              \
                    }                                                                              \
                for (int64_t i = lfull; i < len; i++) {                                            \
                    const CT e = SM_EXP(CT, LOAD(xr[i]) - max);                                    \
                    yr[i] = STORE(e);                                                              \
                    sum += e;                                                                      \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t i = 0; i < lfull; i += SM_LANES)                                      \
                    for (int j = 0; j < SM_LANES; j++)                                             \
                        lane[j] += SM_EXP(CT, LOAD(xr[i + j]) - max);                              \
                for (int64_t i = lfull; i < len; i++) sum += SM_EXP(CT, LOAD(xr[i]) - max);        \
            }                                                                                      \
            for (int j = 0; j < SM_LANES; j++) sum += lane[j];                                     \
            if (log_out) {                                                                         \
                const CT lse = ek_log(sum);                                                        \
                for (int64_t i = 0; i < len; i++) yr[i] = STORE(LOAD(xr[i]) - max - lse);          \
            } else if (keep) {                                                                     \
                const CT inv = 1 / sum;                                                            \
                for (int64_t i = 0; i < len; i++) yr[i] = STORE(LOAD(yr[i]) * inv);                \
            } else {                                                                               \
                const CT inv = 1 / sum;                                                            \
                for (int64_t i = 0; i < len; i++)                                                  \
                    yr[i] = STORE(SM_EXP(CT, LOAD(xr[i]) - max) * inv);                            \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_SOFTMAX_ROWS)

/*
 * self viewed as (outer, len, inner): element (o, d, i) at (o * len + d) * inner + i.
 * Each slice o is taken SM_BLOCK columns at a time: the running max, the sum
 * of exponentials and the outputs of a block are computed row by row, so
 * memory is read in order whichever dim is normalized (inner == 1, the
 * plain row case, goes to softmax_rows).
 */
#define DEF_SOFTMAX(SFX, T, CT, LOAD, STORE)                                                       \
    static void softmax_##SFX(T *out, const T *x, int64_t outer, int64_t len, int64_t inner,       \
                              bool log_out) {                                                      \
        if (inner == 1) {                                                                          \
            softmax_rows_##SFX(out, x, outer, len, log_out);                                       \
            return;                                                                                \
        }                                                                                          \
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
                            CT e = SM_EXP(CT, LOAD(xr[j]) - max[j]);                               \
                            yr[j] = STORE(e);                                                      \
                            acc[j] += e;                                                           \
                        }                                                                          \
                    else                                                                           \
                        for (int64_t j = 0; j < w; j++)                                            \
                            acc[j] += SM_EXP(CT, LOAD(xr[j]) - max[j]);                            \
                }                                                                                  \
                /* acc becomes log(sum) or 1 / sum */                                              \
                for (int64_t j = 0; j < w; j++) acc[j] = log_out ? ek_log(acc[j]) : 1 / acc[j];    \
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
                            yr[j] = STORE(SM_EXP(CT, LOAD(xr[j]) - max[j]) * acc[j]);              \
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
