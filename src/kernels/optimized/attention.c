/*
 * Fused attention: configurations by instruction set, the driver that
 * spreads (batch, head, row block) tasks over the thread pool, and the
 * optimized twins of the attention kernels (attention.h).
 */
#include "attention.h"

#include <stdint.h>

#include "core/internal.h"
#include "ember/threadpool.h"
#include "kernels/portable/kernel_util.h"
#include "ops.h"

static const eko_f32_attn *const g_configs[EKO_ISA_COUNT] = {
    [EKO_ISA_SCALAR] = &eko_f32_attn_scalar,
#ifdef EMBER_HAVE_AVX2_KERNELS
    [EKO_ISA_AVX2] = &eko_f32_attn_avx2,
#endif
#ifdef EMBER_HAVE_AVX512_KERNELS
    [EKO_ISA_AVX512] = &eko_f32_attn_avx512,
#endif
#ifdef EMBER_HAVE_NEON_KERNELS
    [EKO_ISA_NEON] = &eko_f32_attn_neon,
#endif
};

const eko_f32_attn *eko_f32_attn_for(eko_isa isa) {
    return (unsigned)isa < EKO_ISA_COUNT ? g_configs[isa] : NULL;
}

const eko_f32_attn *eko_f32_attn_active(void) {
    const eko_f32_attn *cfg = eko_f32_attn_for(eko_isa_active());
    return cfg != NULL ? cfg : &eko_f32_attn_scalar;
}

/* Scratch rows start on cache lines, so threads never share one. */
#define ROW_ALIGN 64

typedef struct attn_job {
    const ek_attn *a;
    const eko_f32_attn *cfg;
    int64_t rows_per_task, blocks; /* query rows per task; tasks per (batch, head) */
    float *scratch;                /* (threads, row_floats) */
    size_t row_floats;
} attn_job;

static void attn_tasks(void *ctx, size_t thread, size_t start, size_t count) {
    const attn_job *job = ctx;
    const ek_attn *a = job->a;
    const eko_f32_attn *cfg = job->cfg;
    const int64_t reps = a->nh / a->nkvh;
    const float scale = (float)a->scale;
    float *s = job->scratch + thread * job->row_floats; /* (n_keys) */
    for (size_t task = start; task < start + count; task++) {
        const int64_t block = (int64_t)task % job->blocks;
        const int64_t bh = (int64_t)task / job->blocks, h = bh % a->nh, b = bh / a->nh;
        const float *q = (const float *)a->q + b * a->q_sb + h * a->q_sh;
        const float *k = (const float *)a->k + b * a->k_sb + (h / reps) * a->k_sh;
        const float *v = (const float *)a->v + b * a->v_sb + (h / reps) * a->v_sh;
        float *out = (float *)a->out + b * a->o_sb + h * a->o_sh;
        const int64_t t0 = block * job->rows_per_task;
        const int64_t t1 = t0 + job->rows_per_task < a->nq ? t0 + job->rows_per_task : a->nq;
        for (int64_t t = t0; t < t1; t++) {
            int64_t n = a->n_keys;
            if (a->causal && a->start_pos + t + 1 < n) n = a->start_pos + t + 1;
            const float *mask = a->mask != NULL ? (const float *)a->mask + t * a->mask_st : NULL;
            cfg->scores(q + t * a->q_st, k, (size_t)a->k_sn, (size_t)n, (size_t)a->d, scale, s);
            float sum = cfg->softmax(s, mask, (size_t)n);
            /* a row that sees nothing (sum 0) gives 0 * inf = NaN, as the reference */
            cfg->weighted_sum(s, v, (size_t)a->v_sn, (size_t)n, (size_t)a->d, 1.0f / sum,
                              out + t * a->o_st);
        }
    }
}

ember_status eko_attention(ember_kernel_ctx *ctx, const ek_attn *a) {
    if (a->dtype != EMBER_FLOAT32 || (a->mask != NULL && a->mask_dtype != EMBER_FLOAT32))
        return ek_attn_reference(ctx, a);
    if (a->nb == 0 || a->nq == 0 || a->nh == 0 || a->d == 0) return EMBER_OK;
    ember_threadpool *pool = ember_kernel_threadpool(ctx);
    const size_t threads = ember_threadpool_size(pool);

    /* one row of scores per thread, rounded up to whole cache lines */
    size_t row_floats, bytes;
    if (ember_add_overflow((size_t)a->n_keys, ROW_ALIGN / sizeof(float) - 1, &row_floats))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "attention: scratch size overflows");
    row_floats -= row_floats % (ROW_ALIGN / sizeof(float));
    if (row_floats == 0) row_floats = ROW_ALIGN / sizeof(float);
    if (ember_mul_overflow(row_floats, sizeof(float), &bytes) ||
        ember_mul_overflow(bytes, threads, &bytes))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "attention: scratch size overflows");
    float *scratch = ember_kernel_scratch(ctx, bytes, ROW_ALIGN);
    if (scratch == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                 "attention: needs %zu bytes of scratch", bytes);

    /* (batch, head) pairs are the tasks; when they are fewer than about four
     * per thread (prefill of few heads on many threads), each is split in
     * blocks of query rows. */
    attn_job job = {a, eko_f32_attn_active(), a->nq, 1, scratch, row_floats};
    const int64_t pairs = a->nb * a->nh, want = (int64_t)threads * 4;
    if (threads > 1 && pairs < want && a->nq > 1) {
        int64_t per_pair = (want + pairs - 1) / pairs;
        if (per_pair > a->nq) per_pair = a->nq;
        job.rows_per_task = (a->nq + per_pair - 1) / per_pair;
        job.blocks = (a->nq + job.rows_per_task - 1) / job.rows_per_task;
    }
    ember_parallel_1d(pool, attn_tasks, &job, (size_t)(pairs * job.blocks), 1);
    return EMBER_OK;
}

ember_status eko_op_sdpa_with_kv_cache_out(ember_kernel_ctx *ctx, ember_value **args,
                                           size_t nargs) {
    ek_attn a;
    EK_TRY(ek_sdpa_with_kv_cache_setup(ctx, args, nargs, &a));
    return eko_attention(ctx, &a);
}

ember_status eko_op_llama_custom_sdpa_out(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_custom_sdpa_setup(ctx, args, nargs, &a));
    return eko_attention(ctx, &a);
}

ember_status eko_op_llama_sdpa_with_kv_cache_out(ember_kernel_ctx *ctx, ember_value **args,
                                                 size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_sdpa_with_kv_cache_setup(ctx, args, nargs, &a));
    return eko_attention(ctx, &a);
}
