/*
 * Fused attention: the driver that spreads (batch, kv head, row block) tasks
 * over the thread pool, and the optimized twins of the attention kernels
 * (attention.h). The micro-kernels of the level in use come from config.c.
 */
#include "attention.h"

#include <math.h>
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

/* Rows (query rows of the heads that share a kv head) of one task at most:
 * the rows that share each block of keys and values while it is in L1. */
#define ROWS_MAX 16
/* Keys per block when several rows share them: 64 keys of a 64-float head
 * are 16 KiB of keys and 16 KiB of values. */
#define KEYS_PER_BLOCK 64
/* Blocks of strided keys read in place (at most PACK_ROWS_MIN rows). */
#define KEYS_PER_SHORT_BLOCK 16
#define PACK_ROWS_MIN 4
/* Keys per chunk of the online softmax (a multiple of both block sizes):
 * the scores a row keeps in scratch at once. */
#define KEYS_PER_CHUNK 512

typedef struct attn_job {
    const ek_attn *a;
    const eko_f32_attn *cfg;
    int64_t rows_per_task, blocks; /* rows per task; tasks per (batch, kv head) */
    float *scratch;                /* (threads, thread_floats) */
    size_t row_floats, d_floats, thread_floats;
    bool int8;                     /* q, k and v int8 with row scales (ek_attn) */
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

/* Asks for float rows [0, cnt) of src (stride floats apart, d floats each)
 * ahead of their use: a kv head's rows of successive positions lie far
 * apart (ExecuTorch's layout keeps every head of a position together), a
 * pattern the hardware prefetchers follow badly. */
static void prefetch_rows(const float *src, int64_t stride, int64_t cnt, size_t d) {
    for (int64_t j = 0; j < cnt; j++)
        for (size_t i = 0; i < d; i += ALIGN_FLOATS) __builtin_prefetch(src + j * stride + i);
}

/* int8 rows [0, cnt) of src (stride elements apart) to dst as floats less
 * their zero points (zero[j * zstride]): exact small integers. */
static const float *int8_rows(const eko_f32_attn *cfg, float *dst, const int8_t *src,
                              int64_t stride, int64_t cnt, size_t d, const int8_t *zero,
                              int64_t zstride) {
    for (int64_t j = 0; j < cnt; j++) {
        /* rows a cache line or two long, far apart: ask for later ones early */
        __builtin_prefetch(src + (j + 16) * stride);
        cfg->int8_row(src + j * stride, d, (float)zero[j * zstride], dst + (size_t)j * d);
    }
    return dst;
}

/*
 * One task: rows [r0, r1) of one (batch, kv head). The rows of a kv head
 * are those of every query head that reads it (grouped-query attention),
 * head by head: row r is query row r % S of head g * reps + r / S. The keys
 * go chunk by chunk: the scores of every row, block of keys by block of
 * keys (each block read from memory once for all the rows, so a decode step
 * reads each kv head once for all its query heads); each row's softmax
 * against its running maximum, the sums so far rescaled when it grows
 * (online softmax); then the chunk's values block by block, each row's sums
 * carried in acc to its last block, which divides by the row's total.
 */
static void attn_rows(const attn_job *job, float *s, float *acc, float *pack, float *qbuf,
                      int64_t b, int64_t g, int64_t r0, int64_t r1) {
    const ek_attn *a = job->a;
    const eko_f32_attn *cfg = job->cfg;
    const int64_t reps = a->nh / a->nkvh, nr = r1 - r0;
    const size_t d = (size_t)a->d;
    const bool q8 = job->int8;
    const int64_t k0 = b * a->k_sb + g * a->k_sh, v0 = b * a->v_sb + g * a->v_sh;
    const float *k = q8 ? NULL : (const float *)a->k + k0;
    const float *v = q8 ? NULL : (const float *)a->v + v0;
    /* int8: the rows' scales and zero points, one a row of d elements (row
     * strides are whole rows) */
    const int64_t ksr = a->k_sn / a->d, vsr = a->v_sn / a->d;
    const float *ksc = q8 ? a->k_scale + k0 / a->d : NULL;
    const float *vsc = q8 ? a->v_scale + v0 / a->d : NULL;
    const int8_t *kzp = q8 ? a->k_zero + k0 / a->d : NULL;
    const int8_t *vzp = q8 ? a->v_zero + v0 / a->d : NULL;
    const float *qrow[ROWS_MAX];
    float *orow[ROWS_MAX];
    int64_t nrow[ROWS_MAX], trow[ROWS_MAX], nmax = 0;
    float rmax[ROWS_MAX], total[ROWS_MAX], qmul[ROWS_MAX];
    float bscale[KEYS_PER_BLOCK]; /* int8: the scales of a block's rows */
    for (int64_t r = 0; r < nr; r++) {
        const int64_t h = g * reps + (r0 + r) / a->nq, t = (r0 + r) % a->nq;
        const int64_t qi = b * a->q_sb + h * a->q_sh + t * a->q_st;
        if (q8) {
            /* the row less its zero point, exactly; its scale with the keys' */
            qrow[r] = int8_rows(cfg, qbuf + (size_t)r * job->d_floats, (const int8_t *)a->q + qi,
                                0, 1, d, a->q_zero + qi / a->d, 0);
            qmul[r] = a->q_scale[qi / a->d];
        } else {
            qrow[r] = (const float *)a->q + qi;
        }
        orow[r] = (float *)a->out + b * a->o_sb + h * a->o_sh + t * a->o_st;
        trow[r] = t;
        nrow[r] = visible(a, t);
        rmax[r] = -INFINITY;
        total[r] = 0.0f;
        if (nrow[r] > nmax) nmax = nrow[r];
    }
    /* Rows of a block that are far apart in memory (ExecuTorch's layout puts
     * every head's row of a position together) are copied next to each other
     * first when many rows share them (prefill): the copy costs one read of
     * the block, the rows then share L1 without conflicts. A few rows (the
     * query heads of a decode step) read them in place, in short blocks
     * whose strided rows still fit L1's ways. One row streams its keys and
     * values once a chunk: no blocks. */
    /* int8 keys and values are always converted, a block at a time, into
     * floats less their zero points (exact), and their scales applied to
     * the scores and weights: the reference's exact int32 products. */
    const bool packed = q8 || (nr > PACK_ROWS_MIN && a->k_sn != a->d);
    const int64_t blk = packed || a->k_sn == a->d ? KEYS_PER_BLOCK : KEYS_PER_SHORT_BLOCK;
    for (int64_t c0 = 0; c0 < (nmax > 0 ? nmax : 1); c0 += KEYS_PER_CHUNK) {
        const int64_t c1 = nmax - c0 < KEYS_PER_CHUNK ? nmax : c0 + KEYS_PER_CHUNK;
        const int64_t kb = (nr > 1 || q8) && c1 - c0 > blk ? blk : (c1 > c0 ? c1 - c0 : 1);
        for (int64_t j0 = c0; j0 < c1; j0 += kb) {
            const int64_t nb = c1 - j0 < kb ? c1 - j0 : kb;
            const float *kblk = q8 ? NULL : k + j0 * a->k_sn;
            size_t ks = (size_t)a->k_sn;
            if (!q8 && a->k_sn != a->d && j0 + kb < c1) /* the next block's keys */
                prefetch_rows(kblk + kb * a->k_sn, a->k_sn, c1 - j0 - kb < kb ? c1 - j0 - kb : kb,
                              d);
            if (q8) {
                kblk = int8_rows(cfg, pack, (const int8_t *)a->k + k0 + j0 * a->k_sn, a->k_sn, nb,
                                 d, kzp + j0 * ksr, ksr);
                ks = d;
                /* the keys' scales (far apart), once for every row */
                for (int64_t j = 0; j < nb; j++) bscale[j] = ksc[(j0 + j) * ksr];
            } else if (packed) {
                kblk = pack_rows(pack, kblk, a->k_sn, nb, d);
                ks = d;
            }
            for (int64_t r = 0; r < nr; r++) {
                if (j0 >= nrow[r]) continue;
                const int64_t cnt = nrow[r] - j0 < kb ? nrow[r] - j0 : kb;
                float *sr = s + (size_t)r * job->row_floats + (j0 - c0);
                cfg->scores(qrow[r], kblk, ks, (size_t)cnt, d, q8 ? 1.0f : (float)a->scale, sr);
                if (q8)
                    for (int64_t j = 0; j < cnt; j++)
                        sr[j] = sr[j] * (qmul[r] * bscale[j]) * (float)a->scale;
            }
        }
        for (int64_t r = 0; r < nr; r++) {
            if (c0 >= nrow[r]) continue;
            const int64_t cnt = (nrow[r] < c1 ? nrow[r] : c1) - c0;
            const float *mask = a->mask != NULL
                                    ? (const float *)a->mask + trow[r] * a->mask_st + c0
                                    : NULL;
            const float before = rmax[r];
            const float sum = cfg->softmax(s + (size_t)r * job->row_floats, mask, (size_t)cnt,
                                           &rmax[r]);
            if (c0 > 0 && rmax[r] > before) {
                /* the maximum grew: what was summed so far counts for less */
                const float f = before == -INFINITY ? 0.0f : expf(before - rmax[r]);
                float *acc_r = acc + (size_t)r * job->d_floats;
                for (size_t i = 0; i < d; i++) acc_r[i] *= f;
                total[r] *= f;
            }
            total[r] += sum;
        }
        for (int64_t j0 = c0; j0 < (c1 > c0 ? c1 : c0 + 1); j0 += kb) {
            const int64_t nb = c1 - j0 < kb ? c1 - j0 : kb;
            const float *vblk = q8 ? NULL : v + j0 * a->v_sn;
            size_t vs = (size_t)a->v_sn;
            if (!q8 && a->v_sn != a->d && j0 + kb < c1) /* the next block's values */
                prefetch_rows(vblk + kb * a->v_sn, a->v_sn, c1 - j0 - kb < kb ? c1 - j0 - kb : kb,
                              d);
            if (q8 && nb > 0) {
                vblk = int8_rows(cfg, pack, (const int8_t *)a->v + v0 + j0 * a->v_sn, a->v_sn, nb,
                                 d, vzp + j0 * vsr, vsr);
                vs = d;
                for (int64_t j = 0; j < nb; j++) bscale[j] = vsc[(j0 + j) * vsr];
            } else if (packed && !q8) {
                vblk = pack_rows(pack, vblk, a->v_sn, nb, d);
                vs = d;
            }
            for (int64_t r = 0; r < nr; r++) {
                const int64_t n = nrow[r];
                if (j0 >= n && !(j0 == 0 && n == 0)) continue;
                const int64_t cnt = n - j0 < kb ? n - j0 : kb;
                const bool last = j0 + kb >= n;
                float *acc_r = acc + (size_t)r * job->d_floats;
                if (q8) { /* the values' scales go with the weights */
                    float *w = s + (size_t)r * job->row_floats + (j0 - c0);
                    for (int64_t j = 0; j < cnt; j++) w[j] *= bscale[j];
                }
                /* a row that sees nothing (total 0) gives 0 * inf = NaN, as
                 * the reference */
                cfg->weighted_sum(s + (size_t)r * job->row_floats + (j0 - c0), vblk, vs,
                                  (size_t)cnt, d, j0 == 0 ? NULL : acc_r,
                                  last ? 1.0f / total[r] : 1.0f, last ? orow[r] : acc_r);
            }
        }
    }
}

static void attn_tasks(void *ctx, size_t thread, size_t start, size_t count) {
    const attn_job *job = ctx;
    const ek_attn *a = job->a;
    const int64_t rows = (a->nh / a->nkvh) * a->nq; /* of one (batch, kv head) */
    float *s = job->scratch + thread * job->thread_floats;         /* (rows, row_floats) */
    float *acc = s + (size_t)job->rows_per_task * job->row_floats; /* (rows, d_floats) */
    float *pack = acc + (size_t)job->rows_per_task * job->d_floats; /* (KEYS_PER_BLOCK, d) */
    float *qbuf = pack + (size_t)KEYS_PER_BLOCK * (size_t)a->d;      /* int8: (rows, d_floats) */
    for (size_t task = start; task < start + count; task++) {
        const int64_t block = (int64_t)task % job->blocks;
        const int64_t bg = (int64_t)task / job->blocks;
        const int64_t r0 = block * job->rows_per_task;
        const int64_t r1 = r0 + job->rows_per_task < rows ? r0 + job->rows_per_task : rows;
        attn_rows(job, s, acc, pack, qbuf, bg / a->nkvh, bg % a->nkvh, r0, r1);
    }
}

/* n floats rounded up to whole cache lines; false on overflow. */
static bool round_floats(size_t n, size_t *out) {
    if (ember_add_overflow(n, ALIGN_FLOATS - 1, out)) return false;
    *out -= *out % ALIGN_FLOATS;
    return true;
}

ember_status eko_attention(ember_kernel_ctx *ctx, const ek_attn *a) {
    /* int8 rows of up to 256 keep every partial sum of a product an exact
     * float (255 * 255 * 256 < 2^24), as the reference's int32 */
    const bool int8 = a->dtype == EMBER_INT8;
    ember_status (*const reference)(ember_kernel_ctx *, const ek_attn *) =
        int8 ? ek_attn_quantized_reference : ek_attn_reference;
    const bool float_mask = a->mask == NULL || a->mask_dtype == EMBER_FLOAT32;
    if (!float_mask || (int8 ? a->d > 256 : a->dtype != EMBER_FLOAT32)) return reference(ctx, a);
    if (a->nb == 0 || a->nq == 0 || a->nh == 0 || a->d == 0 || a->nkvh == 0) return EMBER_OK;
    ember_threadpool *pool = ember_kernel_threadpool(ctx);
    const size_t threads = ember_threadpool_size(pool);

    /* Tasks: (batch, kv head) pairs, each with the rows of all the query
     * heads that read that kv head, split in blocks of at most ROWS_MAX
     * rows, and in smaller blocks when that gives fewer than about four
     * tasks per thread. */
    attn_job job = {a, eko_f32_attn_active(), 0, 0, NULL, 0, 0, 0, int8};
    const int64_t pairs = a->nb * a->nkvh, want = (int64_t)threads * 4;
    const int64_t rows = (a->nh / a->nkvh) * a->nq;
    int64_t per_pair = (rows + ROWS_MAX - 1) / ROWS_MAX;
    if (threads > 1 && pairs * per_pair < want) per_pair = (want + pairs - 1) / pairs;
    if (per_pair > rows) per_pair = rows;
    job.rows_per_task = (rows + per_pair - 1) / per_pair;
    job.blocks = (rows + job.rows_per_task - 1) / job.rows_per_task;

    /* per thread: rows_per_task rows of scores (a chunk of keys) and of sums
     * (d), and a block of keys or values (KEYS_PER_BLOCK, d). A small
     * scratch may not hold that many rows: halve them until it does; when
     * even one row a thread does not fit, the reference runner needs one
     * row in all. */
    size_t p;
    const int64_t chunk = a->n_keys < KEYS_PER_CHUNK ? a->n_keys : KEYS_PER_CHUNK;
    if (!round_floats((size_t)chunk, &job.row_floats) ||
        !round_floats((size_t)a->d, &job.d_floats) ||
        ember_mul_overflow((size_t)a->d, KEYS_PER_BLOCK, &p))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "attention: scratch size overflows");
    for (;;) {
        size_t bytes, t;
        if (ember_add_overflow(job.row_floats, job.d_floats * (int8 ? 2 : 1), &t) ||
            ember_mul_overflow(t, (size_t)job.rows_per_task, &t) ||
            ember_add_overflow(t, p, &job.thread_floats) ||
            ember_mul_overflow(job.thread_floats, sizeof(float), &bytes) ||
            ember_mul_overflow(bytes, threads, &bytes))
            return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                     "attention: scratch size overflows");
        job.scratch = ember_kernel_scratch(ctx, bytes, ROW_ALIGN);
        if (job.scratch != NULL) break;
        if (job.rows_per_task == 1) return reference(ctx, a);
        job.rows_per_task = (job.rows_per_task + 1) / 2;
        job.blocks = (rows + job.rows_per_task - 1) / job.rows_per_task;
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

ember_status eko_op_llama_custom_quantized_sdpa_out(ember_kernel_ctx *ctx, ember_value **args,
                                                    size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_custom_quantized_sdpa_setup(ctx, args, nargs, &a));
    return eko_attention(ctx, &a);
}

ember_status eko_op_llama_sdpa_with_kv_cache_out(ember_kernel_ctx *ctx, ember_value **args,
                                                 size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_sdpa_with_kv_cache_setup(ctx, args, nargs, &a));
    return eko_attention(ctx, &a);
}
