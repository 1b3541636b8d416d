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
/* Rows of a task of whole kv heads (a decode step's) at most. */
#define GROUP_ROWS_MAX 32
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
    int64_t heads;                 /* > 1: tasks of that many whole kv heads */
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

/* Asks for rows [0, cnt) of src (stride bytes apart, row_bytes each) ahead
 * of their use: in ExecuTorch's layout (every head of a position together)
 * one kv head's float rows of successive positions lie far apart, a pattern
 * the hardware prefetchers follow badly. A task of several kv heads reads
 * their rows of a position together and needs none of this: there, asking
 * for the next block stalled on the prefetches themselves (Llama 1B at 4k
 * on 2 Zen 4 threads: 22 tok/s with them, 25 without). Int8 rows are asked
 * for row by row in int8_rows instead (a whole block ahead made them
 * slower). */
static void prefetch_rows(const void *src, int64_t stride, int64_t cnt, size_t row_bytes) {
    for (int64_t j = 0; j < cnt; j++)
        for (size_t i = 0; i < row_bytes; i += ROW_ALIGN)
            __builtin_prefetch((const char *)src + j * stride + i);
}

/* int8 rows [0, cnt) of src (stride elements apart) to dst as floats less
 * their zero points (zero[j * zstride]): exact small integers. */
static const float *int8_rows(const eko_f32_attn *cfg, float *dst, const int8_t *src,
                              int64_t stride, int64_t cnt, size_t d, const int8_t *zero,
                              int64_t zstride) {
    for (int64_t j = 0; j < cnt; j++) {
        /* rows a cache line or two long, far apart: ask for later ones
         * early (past the last row too: a prefetch never faults, and its
         * address is an integer, not a pointer past the array) */
        __builtin_prefetch((const void *)((uintptr_t)src + (uintptr_t)((j + 16) * stride)));
        cfg->int8_row(src + j * stride, d, (float)zero[j * zstride], dst + (size_t)j * d);
    }
    return dst;
}

/* The keys or the values of one task: kv head g0 + g's row of position j
 * at base + (j * sn + g * sh) elements of esize bytes; int8 rows have a
 * scale and a zero point each, at the row's first element's index / d. */
typedef struct attn_kv {
    const char *base;
    int64_t sn, sh;
    size_t esize;
    const float *scale;
    const int8_t *zero;
} attn_kv;

/*
 * One block of int8 keys (pass 0) or values (pass 1) of one kv head, at
 * element `at`, for rows [r0, r1) (their scores s + r * row_floats): the
 * micro-kernels convert each row once for up to four query rows that see
 * as many keys (all of a decode step's).
 */
static void int8_block(const attn_job *job, const attn_kv *x, int64_t at, int pass, float *s,
                       float *acc, const float *const *qrow, const float *qmul,
                       float *const *orow, const int64_t *nrow, const float *total, int64_t r0,
                       int64_t r1, int64_t j0, int64_t kb) {
    const ek_attn *a = job->a;
    const size_t d = (size_t)a->d;
    const int8_t *rows = (const int8_t *)(const void *)x->base + at;
    const int64_t zr = at / a->d, zs = x->sn / a->d;
    for (int64_t r = r0; r < r1;) {
        int64_t e = r + 1;
        while (e < r1 && e - r < 4 && nrow[e] == nrow[r]) e++;
        const int64_t n = nrow[r];
        const size_t cnt = (size_t)(n - j0 < kb ? n - j0 : kb);
        float *sr = s + (size_t)r * job->row_floats;
        if (pass == 0 && j0 < n) {
            job->cfg->scores_i8(qrow[r], job->d_floats, (size_t)(e - r), qmul + r, rows,
                                (size_t)x->sn, x->zero + zr, x->scale + zr, (size_t)zs, cnt, d,
                                (float)a->scale, sr, job->row_floats);
        } else if (pass == 1 && (j0 < n || (j0 == 0 && n == 0))) {
            /* a row that sees nothing (total 0) gives 0 * inf = NaN, as
             * the reference */
            float *accs[4], *outs[4], inv[4];
            const bool last = j0 + kb >= n;
            for (int64_t i = r; i < e; i++) {
                float *acc_i = acc + (size_t)i * job->d_floats;
                accs[i - r] = j0 == 0 ? NULL : acc_i;
                outs[i - r] = last ? orow[i] : acc_i;
                inv[i - r] = last ? 1.0f / total[i] : 1.0f;
            }
            job->cfg->weighted_sum_i8(sr, job->row_floats, (size_t)(e - r), rows, (size_t)x->sn,
                                      x->zero + zr, x->scale + zr, (size_t)zs, cnt, d, accs, inv,
                                      outs);
        }
        r = e;
    }
}

/*
 * One task: the rows of kv heads [g0, g1) of batch b, rows [r0, r1) of
 * each. The rows of a kv head are those of every query head that reads it
 * (grouped-query attention), head by head: row r is query row r % S of
 * head g * reps + r / S. A task of several kv heads (a decode step's) has
 * all their rows, and reads each block of positions for all its heads in
 * turn, so the cache is read once, front to back.
 * The keys go chunk by chunk: the scores of every row, block of keys by
 * block of keys (each kv head's block read from memory once for all its
 * rows); each row's softmax against its running maximum, the sums so far
 * rescaled when it grows (online softmax); then the chunk's values block by
 * block, each row's sums carried in acc to its last block, which divides by
 * the row's total. A row's arithmetic is the same whatever the task it is
 * in and whatever else that task holds.
 */
static void attn_rows(const attn_job *job, float *s, float *acc, float *pack, float *qbuf,
                      int64_t b, int64_t g0, int64_t g1, int64_t r0, int64_t r1) {
    const ek_attn *a = job->a;
    const eko_f32_attn *cfg = job->cfg;
    const int64_t reps = a->nh / a->nkvh, per = r1 - r0, ng = g1 - g0, nr = ng * per;
    const size_t d = (size_t)a->d;
    const bool q8 = job->int8;
    const size_t esize = q8 ? 1 : sizeof(float);
    const int64_t k0 = b * a->k_sb + g0 * a->k_sh, v0 = b * a->v_sb + g0 * a->v_sh;
    const attn_kv kv[2] = {
        {(const char *)a->k + k0 * (int64_t)esize, a->k_sn, a->k_sh, esize,
         q8 ? a->k_scale + k0 / a->d : NULL, q8 ? a->k_zero + k0 / a->d : NULL},
        {(const char *)a->v + v0 * (int64_t)esize, a->v_sn, a->v_sh, esize,
         q8 ? a->v_scale + v0 / a->d : NULL, q8 ? a->v_zero + v0 / a->d : NULL}};
    const float *qrow[GROUP_ROWS_MAX];
    float *orow[GROUP_ROWS_MAX];
    int64_t nrow[GROUP_ROWS_MAX], trow[GROUP_ROWS_MAX], nmax = 0;
    float rmax[GROUP_ROWS_MAX], total[GROUP_ROWS_MAX], qmul[GROUP_ROWS_MAX];
    float bscale[KEYS_PER_BLOCK]; /* int8, many rows: the scales of a block's rows */
    for (int64_t r = 0; r < nr; r++) {
        const int64_t rl = r0 + r % per;
        const int64_t h = (g0 + r / per) * reps + rl / a->nq, t = rl % a->nq;
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
    const bool packed = q8 || (per > PACK_ROWS_MIN && a->k_sn != a->d);
    const int64_t blk = packed || a->k_sn == a->d ? KEYS_PER_BLOCK : KEYS_PER_SHORT_BLOCK;
    for (int64_t c0 = 0; c0 < (nmax > 0 ? nmax : 1); c0 += KEYS_PER_CHUNK) {
        const int64_t c1 = nmax - c0 < KEYS_PER_CHUNK ? nmax : c0 + KEYS_PER_CHUNK;
        const int64_t kb = (per > 1 || q8) && c1 - c0 > blk ? blk : (c1 > c0 ? c1 - c0 : 1);
        /* keys, then values: each block of each head, the next one asked for */
        for (int pass = 0; pass < 2; pass++) {
            const attn_kv *x = &kv[pass];
            if (pass == 1) {
                for (int64_t r = 0; r < nr; r++) {
                    if (c0 >= nrow[r]) continue;
                    const int64_t cnt = (nrow[r] < c1 ? nrow[r] : c1) - c0;
                    const float *mask = a->mask != NULL
                                            ? (const float *)a->mask + trow[r] * a->mask_st + c0
                                            : NULL;
                    const float before = rmax[r];
                    const float sum = cfg->softmax(s + (size_t)r * job->row_floats, mask,
                                                   (size_t)cnt, &rmax[r]);
                    if (c0 > 0 && rmax[r] > before) {
                        /* the maximum grew: what was summed so far counts for less */
                        const float f = before == -INFINITY ? 0.0f : expf(before - rmax[r]);
                        float *acc_r = acc + (size_t)r * job->d_floats;
                        for (size_t i = 0; i < d; i++) acc_r[i] *= f;
                        total[r] *= f;
                    }
                    total[r] += sum;
                }
            }
            for (int64_t j0 = c0; j0 < (c1 > c0 ? c1 : c0 + 1); j0 += kb) {
                const int64_t nb = c1 - j0 < kb ? c1 - j0 : kb;
                /* what comes next: this chunk's next block, else the
                 * chunk's first of values, else the next chunk's first of keys */
                const attn_kv *nx = x;
                int64_t nj = j0 + kb, nend = c1;
                if (nj >= c1) {
                    nx = &kv[1 - pass];
                    nj = pass == 0 ? c0 : c1;
                    nend = pass == 0 ? c1 : nmax;
                }
                const int64_t ncnt = nend - nj < kb ? nend - nj : kb;
                for (int64_t gi = 0; gi < ng; gi++) {
                    if (!q8 && ng == 1 && a->k_sn != a->d && ncnt > 0)
                        prefetch_rows(nx->base + (nj * nx->sn + gi * nx->sh) * (int64_t)esize,
                                      nx->sn * (int64_t)esize, ncnt, d * esize);
                    const int64_t at = j0 * x->sn + gi * x->sh;
                    if (q8 && per <= 4) {
                        int8_block(job, x, at, pass, s + (j0 - c0), acc, qrow, qmul, orow, nrow,
                                   total, gi * per, (gi + 1) * per, j0, kb);
                        continue;
                    }
                    const float *blkp = (const float *)(const void *)x->base + at;
                    size_t bs = (size_t)x->sn;
                    if (q8 && nb > 0) { /* many rows: the block converted once */
                        blkp = int8_rows(cfg, pack, (const int8_t *)(const void *)x->base + at,
                                         x->sn, nb, d, x->zero + at / a->d, x->sn / a->d);
                        bs = d;
                        /* the rows' scales (far apart), once for every row */
                        for (int64_t j = 0; j < nb; j++)
                            bscale[j] = x->scale[at / a->d + j * (x->sn / a->d)];
                    } else if (packed && nb > 0) {
                        blkp = pack_rows(pack, blkp, x->sn, nb, d);
                        bs = d;
                    }
                    for (int64_t r = gi * per; r < (gi + 1) * per; r++) {
                        float *sr = s + (size_t)r * job->row_floats + (j0 - c0);
                        if (pass == 0) {
                            if (j0 >= nrow[r]) continue;
                            const int64_t cnt = nrow[r] - j0 < kb ? nrow[r] - j0 : kb;
                            cfg->scores(qrow[r], blkp, bs, (size_t)cnt, d,
                                        q8 ? 1.0f : (float)a->scale, sr);
                            if (q8)
                                for (int64_t j = 0; j < cnt; j++)
                                    sr[j] = sr[j] * (qmul[r] * bscale[j]) * (float)a->scale;
                            continue;
                        }
                        const int64_t n = nrow[r];
                        if (j0 >= n && !(j0 == 0 && n == 0)) continue;
                        const int64_t cnt = n - j0 < kb ? n - j0 : kb;
                        const bool last = j0 + kb >= n;
                        float *acc_r = acc + (size_t)r * job->d_floats;
                        if (q8) /* the values' scales go with the weights */
                            for (int64_t j = 0; j < cnt; j++) sr[j] *= bscale[j];
                        /* a row that sees nothing (total 0) gives 0 * inf =
                         * NaN, as the reference */
                        cfg->weighted_sum(sr, blkp, bs, (size_t)cnt, d, j0 == 0 ? NULL : acc_r,
                                          last ? 1.0f / total[r] : 1.0f,
                                          last ? orow[r] : acc_r);
                    }
                }
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
        if (job->heads > 1) { /* whole kv heads, `heads` of them */
            const int64_t groups = a->nkvh / job->heads;
            const int64_t g0 = (int64_t)task % groups * job->heads;
            attn_rows(job, s, acc, pack, qbuf, (int64_t)task / groups, g0, g0 + job->heads, 0,
                      rows);
            continue;
        }
        const int64_t block = (int64_t)task % job->blocks;
        const int64_t bg = (int64_t)task / job->blocks;
        const int64_t r0 = block * job->rows_per_task;
        const int64_t r1 = r0 + job->rows_per_task < rows ? r0 + job->rows_per_task : rows;
        attn_rows(job, s, acc, pack, qbuf, bg / a->nkvh, bg % a->nkvh, bg % a->nkvh + 1, r0, r1);
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
    /* two products of every query row with every key: 2 multiply-adds, or
     * in decode the keys' and values' 8 bytes, an element */
    const uint64_t work = ember_work_mul(
        ember_work_mul(ember_work_mul(ember_work_mul((uint64_t)a->nb, (uint64_t)a->nh),
                                      (uint64_t)a->nq),
                       (uint64_t)a->n_keys),
        ember_work_mul((uint64_t)a->d, a->nq == 1 ? 8 : 2));
    const size_t threads = ember_parallel_threads(pool, work);

    /* Tasks: (batch, kv head) pairs, each with the rows of all the query
     * heads that read that kv head, split in blocks of at most ROWS_MAX
     * rows, and in smaller blocks when that gives fewer than about four
     * tasks per thread. */
    attn_job job = {a, eko_f32_attn_active(), 0, 0, 1, NULL, 0, 0, 0, int8};
    const int64_t pairs = a->nb * a->nkvh, want = (int64_t)threads * 4;
    const int64_t rows = (a->nh / a->nkvh) * a->nq;
    int64_t per_pair = (rows + ROWS_MAX - 1) / ROWS_MAX;
    if (threads > 1 && pairs * per_pair < want) per_pair = (want + pairs - 1) / pairs;
    if (per_pair > rows) per_pair = rows;
    job.rows_per_task = (rows + per_pair - 1) / per_pair;
    job.blocks = (rows + job.rows_per_task - 1) / job.rows_per_task;
    /* A decode step (one query row a head): tasks of whole kv heads, as many
     * as GROUP_ROWS_MAX rows hold while every thread gets as many tasks, so
     * each reads its heads' part of every position at once. */
    if (a->nq == 1)
        for (int64_t hg = GROUP_ROWS_MAX / rows; hg >= 2; hg--)
            if (a->nkvh % hg == 0 && (a->nb * (a->nkvh / hg)) % (int64_t)threads == 0) {
                job.heads = hg;
                break;
            }
    const int64_t split_rows = job.rows_per_task;
    if (job.heads > 1) job.rows_per_task = job.heads * rows;

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
        if (job.heads > 1) { /* a kv head's rows a task, as without groups */
            job.heads = 1;
            job.rows_per_task = split_rows;
            continue;
        }
        if (job.rows_per_task == 1) return reference(ctx, a);
        job.rows_per_task = (job.rows_per_task + 1) / 2;
        job.blocks = (rows + job.rows_per_task - 1) / job.rows_per_task;
    }
    const int64_t tasks = job.heads > 1 ? pairs / job.heads : pairs * job.blocks;
    ember_parallel_1d_on(pool, threads, attn_tasks, &job, (size_t)tasks, 1);
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
