/*
 * The reference attention runner (attention.h): the correctness oracle of
 * every attention kernel, plain loops over (batch, head, query row).
 *
 * Per row: scores over the visible keys, their maximum, exp(score - max) and
 * its sum, then the values weighted by those exponentials, divided by the
 * sum once at the end. Keys a causal row cannot see are skipped (their
 * weight is exactly 0). Everything runs in the compute type.
 */
#include <math.h>
#include <tgmath.h> /* exp in the compute type (float or double) */

#include "../portable/kernel_util.h"
#include "attention.h"

/* Lanes of the unrolled dot product and row update: independent sums and
 * stores, in blocks the compiler can keep in vector registers. */
#define ATT_LANES 8

/* Element i of a mask of the given float dtype. */
static double mask_at(int dtype, const void *m, int64_t i) {
    switch (dtype) {
    case EMBER_FLOAT64: return ((const double *)m)[i];
    case EMBER_FLOAT16: return ember_half_to_float(((const uint16_t *)m)[i]);
    case EMBER_BFLOAT16: return ember_bf16_to_float(((const uint16_t *)m)[i]);
    default: return ((const float *)m)[i];
    }
}

#define DEF_ATTN(SFX, T, CT, LOAD, STORE)                                                          \
    static CT att_dot_##SFX(const T *restrict a, const T *restrict b, int64_t n) {                 \
        CT part[ATT_LANES] = {0};                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + ATT_LANES <= n; i += ATT_LANES)                                                 \
            for (int l = 0; l < ATT_LANES; l++)                                                    \
                part[l] += (CT)LOAD(a[i + l]) * (CT)LOAD(b[i + l]);                                \
        CT sum = 0;                                                                                \
        for (; i < n; i++) sum += (CT)LOAD(a[i]) * (CT)LOAD(b[i]);                                 \
        for (int l = 0; l < ATT_LANES; l++) sum += part[l];                                        \
        return sum;                                                                                \
    }                                                                                              \
                                                                                                   \
    /* acc[0..n) += w * row[0..n) */                                                               \
    static void att_axpy_##SFX(CT *restrict acc, CT w, const T *restrict row, int64_t n) {         \
        int64_t i = 0;                                                                             \
        for (; i + ATT_LANES <= n; i += ATT_LANES)                                                 \
            for (int l = 0; l < ATT_LANES; l++) acc[i + l] += w * (CT)LOAD(row[i + l]);            \
        for (; i < n; i++) acc[i] += w * (CT)LOAD(row[i]);                                         \
    }                                                                                              \
                                                                                                   \
    static void att_run_##SFX(const ek_attn *a, void *scratch) {                                   \
        const T *q = a->q, *k = a->k, *v = a->v;                                                   \
        T *out = a->out;                                                                           \
        const int64_t d = a->d, reps = a->nh / a->nkvh;                                            \
        const CT scale = (CT)a->scale;                                                             \
        CT *score = scratch;          /* (n_keys) */                                               \
        CT *acc = score + a->n_keys;  /* (d) */                                                    \
        for (int64_t b = 0; b < a->nb; b++)                                                        \
            for (int64_t h = 0; h < a->nh; h++) {                                                  \
                const T *kh = k + b * a->k_sb + (h / reps) * a->k_sh;                              \
                const T *vh = v + b * a->v_sb + (h / reps) * a->v_sh;                              \
                for (int64_t t = 0; t < a->nq; t++) {                                              \
                    const T *qr = q + b * a->q_sb + t * a->q_st + h * a->q_sh;                     \
                    T *orow = out + b * a->o_sb + t * a->o_st + h * a->o_sh;                       \
                    int64_t n = a->n_keys;                                                         \
                    if (a->causal && a->start_pos + t + 1 < n) n = a->start_pos + t + 1;           \
                    CT max = -INFINITY;                                                            \
                    for (int64_t j = 0; j < n; j++) {                                              \
                        CT s = scale * att_dot_##SFX(qr, kh + j * a->k_sn, d);                     \
                        if (a->mask != NULL)                                                       \
                            s += (CT)mask_at(a->mask_dtype, a->mask, t * a->mask_st + j);          \
                        score[j] = s;                                                              \
                        if (s > max) max = s;                                                      \
                    }                                                                              \
                    CT sum = 0;                                                                    \
                    for (int64_t j = 0; j < n; j++) {                                              \
                        score[j] = exp(score[j] - max);                                            \
                        sum += score[j];                                                           \
                    }                                                                              \
                    for (int64_t i = 0; i < d; i++) acc[i] = 0;                                    \
                    for (int64_t j = 0; j < n; j++)                                                \
                        att_axpy_##SFX(acc, score[j], vh + j * a->v_sn, d);                        \
                    CT inv = (CT)1 / sum;                                                          \
                    for (int64_t i = 0; i < d; i++) orow[i] = STORE(acc[i] * inv);                 \
                }                                                                                  \
            }                                                                                      \
    }

EK_FOR_EACH_FLOAT(DEF_ATTN)

ember_status ek_attn_reference(ember_kernel_ctx *ctx, const ek_attn *a) {
    if (a->nb == 0 || a->nq == 0 || a->nh == 0 || a->d == 0) return EMBER_OK;
    /* scratch: score (n_keys) and acc (d), in the compute type */
    size_t csize = a->dtype == EMBER_FLOAT64 ? sizeof(double) : sizeof(float);
    size_t count, bytes;
    if (ember_add_overflow((size_t)a->n_keys, (size_t)a->d, &count) ||
        ember_mul_overflow(count, csize, &bytes))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "attention: scratch size overflows");
    void *scratch = ember_kernel_scratch(ctx, bytes, csize);
    if (scratch == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                 "attention: needs %zu bytes of scratch", bytes);
    EK_FLOAT_SWITCH(ctx, a->dtype, att_run, a, scratch);
    return EMBER_OK;
}
