/*
 * attention.h — the attention kernels of src/kernels/llm, described once.
 *
 * Three operators compute the same thing in different layouts:
 *
 *   ember::sdpa_with_kv_cache.out   caches (B, H, L, D), always causal
 *   llama::sdpa_with_kv_cache.out   caches (B, L, Hkv, D); appends k, v first
 *   llama::custom_sdpa.out          caches (B, L, Hkv, D) already updated
 *
 * Each kernel checks its arguments (the *_setup functions below, shared by
 * the portable kernel and its optimized twin), describes what is left as an
 * ek_attn, and hands it to a runner: ek_attn_reference() here, or the
 * optimized one (kernels/optimized/attention.h). With B batch, S query rows,
 * H query heads, Hkv key/value heads (H a multiple of Hkv), D head size:
 *
 *   q, out   (B, S, H, D)    row (b, t, h) at b*q_sb + t*q_st + h*q_sh
 *   k, v     (B, N, Hkv, D)  key j of kv head g at b*k_sb + j*k_sn + g*k_sh
 *
 * Query head h reads kv head h / (H / Hkv). Query row t attends over keys
 * [0, n_keys), and when causal only over [0, start_pos + t]. With a mask,
 * score(t, j) = scale * q.k_j + mask[t * mask_st + j]. Elements of a row
 * are contiguous (stride 1) everywhere.
 */
#ifndef EMBER_KERNELS_LLM_ATTENTION_H
#define EMBER_KERNELS_LLM_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/kernel.h"

typedef struct ek_attn {
    int dtype; /* of q, k, v and out: a float type */
    const void *q, *k, *v;
    void *out;
    const void *mask; /* NULL, or (S, n_keys) of mask_dtype, rows mask_st apart */
    int mask_dtype;
    int64_t mask_st;
    int64_t nb, nq, nh, nkvh, d;
    int64_t n_keys;    /* keys [0, n_keys) of k and v are read */
    int64_t start_pos; /* absolute position of query row 0 (causal only) */
    bool causal;
    double scale;
    int64_t q_sb, q_st, q_sh; /* strides in elements */
    int64_t k_sb, k_sn, k_sh;
    int64_t v_sb, v_sn, v_sh;
    int64_t o_sb, o_st, o_sh;
    /* dtype EMBER_INT8 (q, k, v int8; out float32): every row of D has a
     * float32 scale and an int8 zero point, at its first element's index
     * / D; scores are exact int32 products of the rows, zero points taken
     * out, times both scales and scale (llama::custom_quantized_sdpa) */
    const float *q_scale, *k_scale, *v_scale;
    const int8_t *q_zero, *k_zero, *v_zero;
} ek_attn;

/**
 * Computes the attention a describes, row by row in the compute type (float
 * for float, float16 and bfloat16; double for float64): scores, the row
 * maximum subtracted, exp, the weighted sum of values, divided by the sum.
 * Scratch: one row of scores and one of accumulators. A row whose scores
 * are all -inf (a mask that hides every key) gives NaN, as in PyTorch.
 * Fails EMBER_ERR_OUT_OF_MEMORY if the scratch is too small.
 */
ember_status ek_attn_reference(ember_kernel_ctx *ctx, const ek_attn *a);

/** The checks every attention operator makes on what its queries see:
 * query heads (nh) a multiple of kv heads (nkvh), no dropout, not both a
 * mask and is_causal, a float mask of (nq, len), contiguous, or else
 * start_pos with nq rows inside the len cache positions. *n_keys: the keys
 * read (len with a mask, start_pos + nq without). */
ember_status ek_attn_check_keys(ember_kernel_ctx *ctx, const char *op, int64_t nq, int64_t nh,
                                int64_t nkvh, int64_t len, int64_t start_pos,
                                const ember_tensor *mask, double dropout, bool causal,
                                int64_t *n_keys);

/** ember::sdpa_with_kv_cache.out: checks the 9 arguments, appends k and v to
 * the caches, and describes the attention left to do (a->out resized). */
ember_status ek_sdpa_with_kv_cache_setup(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                         ek_attn *a);

/** llama::custom_sdpa.out: checks the 10 arguments and describes the
 * attention (a->out resized). */
ember_status ek_llama_custom_sdpa_setup(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                        ek_attn *a);

/** llama::sdpa_with_kv_cache.out: checks the 13 arguments, appends k and v
 * to the caches, and describes the attention left to do. */
ember_status ek_llama_sdpa_with_kv_cache_setup(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs, ek_attn *a);

/** llama::custom_quantized_sdpa.out: checks the 17 arguments and describes
 * the int8 attention (dtype EMBER_INT8, a->out resized). */
ember_status ek_llama_custom_quantized_sdpa_setup(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs, ek_attn *a);

/**
 * Computes an int8 attention (dtype EMBER_INT8) row by row: exact int32
 * products for the scores, float softmax and weighted sum of the
 * dequantized values. Scratch: one row of scores and one of accumulators.
 * Fails EMBER_ERR_OUT_OF_MEMORY if the scratch is too small.
 */
ember_status ek_attn_quantized_reference(ember_kernel_ctx *ctx, const ek_attn *a);

/* Copies value (B, S, Hkv, D) into rows [start_pos, start_pos + S) of cache
 * (B, L, Hkv, D), both contiguous and already checked to fit
 * (op_update_cache.c). */
void ek_llama_cache_write(const ember_tensor *value, ember_tensor *cache, int64_t start_pos);

#endif /* EMBER_KERNELS_LLM_ATTENTION_H */
