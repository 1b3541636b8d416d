/*
 * Fused attention: the driver that spreads (batch, head, row block) tasks
 * over the thread pool, and the optimized twins of the attention kernels
 * (attention.h). The micro-kernels of the level in use come from config.c.
 */
#include "attention.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"
#include "ember/threadpool.h"
#include "kernels/portable/kernel_util.h"
#include "ops.h"

/* Scratch rows start on cache lines, so threads never share one. */
#define ROW_ALIGN 64
#define ALIGN_FLOATS (ROW_ALIGN / sizeof(float))

/* Query rows of one task at most: the rows that share each block of keys
 * and values while it is in L1. */
#define ROWS_MAX 16
/* Keys per block when several rows share them: 64 keys of a 64-float head
 * are 16 KiB of keys and 16 KiB of values. */
#define KEYS_PER_BLOCK 64

typedef struct attn_job {
    const ek_attn *a;
    const eko_f32_attn *cfg;
    int64_t rows_per_task, blocks; /* query rows per task; tasks per (batch, head) */
    float *scratch;                /* (threads, thread_floats) */
    size_t row_floats, d_floats, thread_floats;
} attn_job;

/* Keys query row t sees. */
static int64_t visible(const ek_attn *a, int64_t t) {
    return a->causal && a->start_pos + t + 1 < a->n_keys ? a->start_pos + t + 1 : a->n_keys;
}

/* rows [0, cnt) of src (stride floats apart) to dst, d floats each, packed. */
static const float *pack_rows(float *dst, const float *src, int64_t stride, int64_t cnt,
                              size_t d) {
    for (int64_t j = 0; j < cnt; j++)
        memcpy(dst + (size_t)j * d, src + j * stride, d * sizeof(float));
    return dst;
}

/*
 * One task: rows [t0, t1) of one (batch, head). Scores of every row, block
 * of keys by block of keys (each block read from memory once for all the
 * rows), the softmax of each row, then the values block by block, each
 * row's sums carried from block to block in acc.
 */
static void attn_rows(const attn_job *job, float *s, float *acc, float *pack, int64_t b,
                      int64_t h, int64_t t0, int64_t t1) {
    const ek_attn *a = job->a;
    const eko_f32_attn *cfg = job->cfg;
    const int64_t reps = a->nh / a->nkvh, nr = t1 - t0;
    const size_t d = (size_t)a->d;
    const float *q = (const float *)a->q + b * a->q_sb + h * a->q_sh;
    const float *k = (const float *)a->k + b * a->k_sb + (h / reps) * a->k_sh;
    const float *v = (const float *)a->v + b * a->v_sb + (h / reps) * a->v_sh;
    float *out = (float *)a->out + b * a->o_sb + h * a->o_sh;
    const int64_t nmax = visible(a, t1 - 1); /* the last row sees the most */
    /* one row streams its keys and values once: no blocks */
    const int64_t kb = nr > 1 && nmax > KEYS_PER_BLOCK ? KEYS_PER_BLOCK : (nmax > 0 ? nmax : 1);
    /* Rows of a block that are far apart in memory (ExecuTorch's layout puts
     * every head's row of a position together) are copied next to each other
     * first: the copy costs one read of the block, the rows then share L1
     * without conflicts. */
    const bool packed = nr > 1 && a->k_sn != a->d;
    float inv[ROWS_MAX];
    for (int64_t j0 = 0; j0 < nmax; j0 += kb) {
        const float *kblk = k + j0 * a->k_sn;
        size_t ks = (size_t)a->k_sn;
        if (packed) {
            kblk = pack_rows(pack, kblk, a->k_sn, nmax - j0 < kb ? nmax - j0 : kb, d);
            ks = d;
        }
        for (int64_t r = 0; r < nr; r++) {
            const int64_t n = visible(a, t0 + r);
            if (j0 >= n) continue;
            const int64_t cnt = n - j0 < kb ? n - j0 : kb;
            cfg->scores(q + (t0 + r) * a->q_st, kblk, ks, (size_t)cnt, d, (float)a->scale,
                        s + (size_t)r * job->row_floats + j0);
        }
    }
    for (int64_t r = 0; r < nr; r++) {
        const float *mask = a->mask != NULL ? (const float *)a->mask + (t0 + r) * a->mask_st
                                            : NULL;
        /* a row that sees nothing (sum 0) gives 0 * inf = NaN, as the reference */
        inv[r] = 1.0f / cfg->softmax(s + (size_t)r * job->row_floats, mask,
                                     (size_t)visible(a, t0 + r));
    }
    for (int64_t j0 = 0; j0 < (nmax > 0 ? nmax : 1); j0 += kb) {
        const float *vblk = v + j0 * a->v_sn;
        size_t vs = (size_t)a->v_sn;
        if (packed) {
            vblk = pack_rows(pack, vblk, a->v_sn, nmax - j0 < kb ? nmax - j0 : kb, d);
            vs = d;
        }
        for (int64_t r = 0; r < nr; r++) {
            const int64_t n = visible(a, t0 + r);
            if (j0 >= n && !(j0 == 0 && n == 0)) continue;
            const int64_t cnt = n - j0 < kb ? n - j0 : kb;
            const bool last = j0 + kb >= n;
            float *acc_r = acc + (size_t)r * job->d_floats;
            cfg->weighted_sum(s + (size_t)r * job->row_floats + j0, vblk, vs, (size_t)cnt, d,
                              j0 == 0 ? NULL : acc_r, last ? inv[r] : 1.0f,
                              last ? out + (t0 + r) * a->o_st : acc_r);
        }
    }
}

static void attn_tasks(void *ctx, size_t thread, size_t start, size_t count) {
    const attn_job *job = ctx;
    const ek_attn *a = job->a;
    float *s = job->scratch + thread * job->thread_floats;         /* (rows, row_floats) */
    float *acc = s + (size_t)job->rows_per_task * job->row_floats; /* (rows, d_floats) */
    float *pack = acc + (size_t)job->rows_per_task * job->d_floats; /* (KEYS_PER_BLOCK, d) */
    for (size_t task = start; task < start + count; task++) {
        const int64_t block = (int64_t)task % job->blocks;
        const int64_t bh = (int64_t)task / job->blocks;
        const int64_t t0 = block * job->rows_per_task;
        const int64_t t1 = t0 + job->rows_per_task < a->nq ? t0 + job->rows_per_task : a->nq;
        attn_rows(job, s, acc, pack, bh / a->nh, bh % a->nh, t0, t1);
    }
}

/* n floats rounded up to whole cache lines; false on overflow. */
static bool round_floats(size_t n, size_t *out) {
    if (ember_add_overflow(n, ALIGN_FLOATS - 1, out)) return false;
    *out -= *out % ALIGN_FLOATS;
    return true;
}

ember_status eko_attention(ember_kernel_ctx *ctx, const ek_attn *a) {
    if (a->dtype != EMBER_FLOAT32 || (a->mask != NULL && a->mask_dtype != EMBER_FLOAT32))
        return ek_attn_reference(ctx, a);
    if (a->nb == 0 || a->nq == 0 || a->nh == 0 || a->d == 0) return EMBER_OK;
    ember_threadpool *pool = ember_kernel_threadpool(ctx);
    const size_t threads = ember_threadpool_size(pool);

    /* Tasks: (batch, head) pairs, each split in blocks of at most ROWS_MAX
     * query rows, and in smaller blocks when that gives fewer than about
     * four tasks per thread. */
    attn_job job = {a, eko_f32_attn_active(), 0, 0, NULL, 0, 0, 0};
    const int64_t pairs = a->nb * a->nh, want = (int64_t)threads * 4;
    int64_t per_pair = (a->nq + ROWS_MAX - 1) / ROWS_MAX;
    if (threads > 1 && pairs * per_pair < want) per_pair = (want + pairs - 1) / pairs;
    if (per_pair > a->nq) per_pair = a->nq;
    job.rows_per_task = (a->nq + per_pair - 1) / per_pair;
    job.blocks = (a->nq + job.rows_per_task - 1) / job.rows_per_task;

    /* per thread: rows_per_task rows of scores (n_keys) and of sums (d), and
     * a block of keys or values (KEYS_PER_BLOCK, d). A long context may not
     * fit the method's scratch at that many rows: halve them until it does;
     * when even one row a thread does not fit, the reference runner needs
     * one row in all. */
    size_t p;
    if (!round_floats((size_t)a->n_keys, &job.row_floats) ||
        !round_floats((size_t)a->d, &job.d_floats) ||
        ember_mul_overflow((size_t)a->d, KEYS_PER_BLOCK, &p))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "attention: scratch size overflows");
    for (;;) {
        size_t bytes, t;
        if (ember_add_overflow(job.row_floats, job.d_floats, &t) ||
            ember_mul_overflow(t, (size_t)job.rows_per_task, &t) ||
            ember_add_overflow(t, p, &job.thread_floats) ||
            ember_mul_overflow(job.thread_floats, sizeof(float), &bytes) ||
            ember_mul_overflow(bytes, threads, &bytes))
            return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                     "attention: scratch size overflows");
        job.scratch = ember_kernel_scratch(ctx, bytes, ROW_ALIGN);
        if (job.scratch != NULL) break;
        if (job.rows_per_task == 1) return ek_attn_reference(ctx, a);
        job.rows_per_task = (job.rows_per_task + 1) / 2;
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
