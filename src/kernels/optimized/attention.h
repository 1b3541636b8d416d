/*
 * attention.h — fast fused attention for the LLM kernels (float32).
 *
 * Runs the problem an ek_attn describes (kernels/llm/attention.h): the same
 * numbers as ek_attn_reference up to rounding, split over the method's
 * thread pool by (batch, head, block of query rows), on micro-kernels of the
 * instruction set in use (cpu.h):
 *
 *   scores        s[j] = scale * q . k_j          (vectorized dot products)
 *   softmax       s[j] = exp(s[j] + mask[j] - max), returns the sum
 *   weighted_sum  out = (sum_j s[j] * v_j) / sum  (vectorized rows of v, in
 *                 blocks of keys whose partial sums carry over)
 *
 * The keys go in chunks of 512: the scores of a chunk, their softmax
 * against the running maximum (online softmax: the sums so far are rescaled
 * when the maximum grows), then the chunk's values, so scratch is bounded
 * by the chunk whatever the context (per thread, up to 16 rows of 512
 * scores and their sums, from the kernel context). The rows of a task (the
 * query heads that share a kv head, or a block of prefill rows) share each
 * block of keys and values while it is in L1, so a decode step reads each
 * kv head once. A decode step whose kv heads split evenly over the threads
 * gives each task whole kv heads, read position by position together (the
 * cache front to back). Every split gives the same results: a row's
 * arithmetic does not depend on its task.
 * Int8 caches (llama::custom_quantized_sdpa): a few rows a kv head (decode)
 * go through scores_i8 and weighted_sum_i8, which convert each key and
 * value row in registers once for up to four rows; many rows (prefill)
 * convert each block once (int8_row) for the float kernels. Both give the
 * same bits (the scores' sums are exact integers; the weighted sums add the
 * same products in the same order).
 * Other dtypes, and masks that are not float32, go to the reference.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_ATTENTION_H
#define EMBER_KERNELS_OPTIMIZED_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "kernels/llm/attention.h"

typedef struct eko_f32_attn {
    eko_isa isa;
    /* s[j] = scale * sum_i q[i] * k[j * ks + i], for j < n, i < d */
    void (*scores)(const float *q, const float *k, size_t ks, size_t n, size_t d, float scale,
                   float *s);
    /* adds mask[0..n) to s when mask is not NULL; max = the larger of
     * *running_max and every s[j], stored back in *running_max; then
     * s[j] = exp(s[j] - max), and returns their sum; 0 (and s all 0) when
     * max is -inf (-inf on entry: the softmax of these n scores alone) */
    float (*softmax)(float *s, const float *mask, size_t n, float *running_max);
    /* out[i] = inv * (acc[i] + sum_j p[j] * v[j * vs + i]), for i < d, j < n;
     * acc NULL counts as zeros, and may be out itself */
    void (*weighted_sum)(const float *p, const float *v, size_t vs, size_t n, size_t d,
                         const float *acc, float inv, float *out);
    /* dst[i] = src[i] - zero, for i < d (an int8 row as exact floats) */
    void (*int8_row)(const int8_t *src, size_t d, float zero, float *dst);
    /* int8 keys, nr (<= 4) query rows that hold integers (int8 rows less
     * their zero points), d <= 256: s[r * ss + j] =
     * (sum_i q[r * qs + i] * (k[j * ks + i] - kz[j * zs])) * (qmul[r] * ksc[j * zs]) * scale,
     * the sum exact (an integer below 2^24), j < n */
    void (*scores_i8)(const float *q, size_t qs, size_t nr, const float *qmul, const int8_t *k,
                      size_t ks, const int8_t *kz, const float *ksc, size_t zs, size_t n,
                      size_t d, float scale, float *s, size_t ss);
    /* int8 values: p[r * ps + j] *= vsc[j * zs], then as weighted_sum for
     * each of nr (<= 4) rows r on the rows v[j * vs + i] - vz[j * zs]
     * (exact floats), from acc[r] (NULL: zeros) into out[r] times inv[r] */
    void (*weighted_sum_i8)(float *p, size_t ps, size_t nr, const int8_t *v, size_t vs,
                            const int8_t *vz, const float *vsc, size_t zs, size_t n, size_t d,
                            float *const *acc, const float *inv, float *const *out);
} eko_f32_attn;

/** The micro-kernels of an instruction set (NULL if this build lacks it;
 * config.c). */
const eko_f32_attn *eko_f32_attn_for(eko_isa isa);

/** The micro-kernels of the level in use (scalar C at worst; config.c). */
const eko_f32_attn *eko_f32_attn_active(void);

/**
 * Runs a on the kernel's thread pool with the level in use (float32 with a
 * float32 mask or none), or with ek_attn_reference (anything else). Scratch:
 * up to 16 (512 + d) + 64 d floats per thread, fewer rows a task when that
 * does not fit, and the reference's one row when even one does not.
 */
ember_status eko_attention(ember_kernel_ctx *ctx, const ek_attn *a);

/* The micro-kernels, by instruction set (f32_attn_<isa>.c, one body:
 * f32_attn_body.h). */
extern const eko_f32_attn eko_f32_attn_scalar;
extern const eko_f32_attn eko_f32_attn_avx2;
extern const eko_f32_attn eko_f32_attn_avx512;
extern const eko_f32_attn eko_f32_attn_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_ATTENTION_H */
