/*
 * Matrix-product driver (matmul.h): streaming products of few rows, packed
 * GEMM for more, both tiled over the thread pool.
 */
#include "matmul.h"

#include <math.h>
#include <stdint.h>

#include "ember/threadpool.h"
#include "f32_gemv.h"
#include "gemm.h"

/* Output columns per cache line: the unit the streaming path splits. */
#define LINE 16
/* Columns of a rows-of-n weight per streaming call, so that the rows of C
 * being summed stay in the first-level cache (4 rows x 1024 floats). */
#define COLS_BLOCK 1024
/* Rows of A per GEMM tile (a multiple of every micro-kernel's MR). */
#define ROW_BLOCK 64

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* ------------------------------------------------------------------------ */
/* Streaming (few rows)                                                      */
/* ------------------------------------------------------------------------ */

typedef struct gemv_job {
    const eko_f32_mm *p;
    const eko_f32_gemv *g;
    size_t cols_per_piece, pieces; /* per batch */
} gemv_job;

/* Columns [c0, c1) of batch b, every row of A, four rows at a time. */
static void gemv_piece(const gemv_job *j, size_t b, size_t c0, size_t c1) {
    const eko_f32_mm *p = j->p;
    const float *a = p->a + b * p->a_batch, *w = p->w + b * p->w_batch;
    float *c = p->c + b * p->c_batch;
    const float *bias = p->bias != NULL ? p->bias + c0 : NULL;
    for (size_t m0 = 0; m0 < p->m; m0 += EKO_GEMV_MAX_ROWS) {
        const size_t mr = p->m - m0 < EKO_GEMV_MAX_ROWS ? p->m - m0 : EKO_GEMV_MAX_ROWS;
        if (p->w_sk == 1) {
            j->g->rows(mr, c1 - c0, p->k, a + m0 * p->lda, p->lda, w + c0 * p->w_sn, p->w_sn, bias,
                       c + m0 * p->ldc + c0, p->ldc);
        } else {
            for (size_t cb = c0; cb < c1; cb += COLS_BLOCK) {
                const size_t nc = c1 - cb < COLS_BLOCK ? c1 - cb : COLS_BLOCK;
                j->g->cols(mr, nc, p->k, a + m0 * p->lda, p->lda, w + cb, p->w_sk,
                           p->bias != NULL ? p->bias + cb : NULL, c + m0 * p->ldc + cb, p->ldc);
            }
        }
    }
}

static void gemv_tiles(void *ctx, size_t thread, size_t start, size_t count) {
    const gemv_job *j = ctx;
    (void)thread;
    for (size_t t = start; t < start + count; t++) {
        const size_t b = t / j->pieces, c0 = (t % j->pieces) * j->cols_per_piece;
        const size_t c1 = j->p->n - c0 < j->cols_per_piece ? j->p->n : c0 + j->cols_per_piece;
        gemv_piece(j, b, c0, c1);
    }
}

static void run_gemv(ember_threadpool *pool, const eko_f32_mm *p, size_t macs) {
    gemv_job j = {p, eko_f32_gemv_active(), p->n, 1};
    /* bound by the weights it streams: 4 bytes a multiply-add per row */
    const size_t threads = ember_parallel_threads(pool, ember_work_mul(macs, 4));
    if (threads > 1) {
        /* about four pieces per thread over all batches, in whole lines */
        const size_t lines = ceil_div(p->n, LINE), want = ceil_div(threads * 4, p->batch);
        j.cols_per_piece = ceil_div(lines, want) * LINE;
        j.pieces = ceil_div(p->n, j.cols_per_piece);
    }
    ember_parallel_1d_on(pool, threads, gemv_tiles, &j, p->batch * j.pieces, 1);
}

/* ------------------------------------------------------------------------ */
/* Packed GEMM (more rows)                                                   */
/* ------------------------------------------------------------------------ */

typedef struct gemm_job {
    const eko_f32_mm *p;
    const eko_f32_gemm_config *cfg;
    size_t panel_floats;     /* (k + 1) * NR */
    size_t panels_per_block; /* per column block */
    size_t col_blocks, row_blocks;
    float *packed;           /* threads x panels_per_block x panel_floats */
    size_t *packed_id;       /* per thread: the (batch, column block) in its slice */
} gemm_job;

/*
 * Packs columns [n0, n0 + nc) of batch b's W into panels of NR (bias first,
 * then NR weights per k, zero past nc): gemm.h's layout. Rows of k use
 * eko_f32_pack; rows of n are read here, a row of NR contiguous weights at
 * a time.
 */
static void pack_block(const gemm_job *j, size_t b, size_t n0, size_t nc, float *out) {
    const eko_f32_mm *p = j->p;
    const float *w = p->w + b * p->w_batch;
    const float *bias = p->bias != NULL ? p->bias + n0 : NULL;
    const size_t nr = j->cfg->nr;
    if (p->w_sk == 1 && p->w_sn == p->k) {
        eko_f32_pack(j->cfg, nc, p->k, w + n0 * p->w_sn, false, bias, out);
        return;
    }
    for (size_t q = 0; q < nc; q += nr) {
        const size_t cols = nc - q < nr ? nc - q : nr;
        for (size_t jj = 0; jj < nr; jj++) out[jj] = bias != NULL && jj < cols ? bias[q + jj] : 0.0f;
        out += nr;
        for (size_t kk = 0; kk < p->k; kk++, out += nr) {
            const float *row = w + kk * p->w_sk + (n0 + q) * p->w_sn;
            for (size_t jj = 0; jj < cols; jj++) out[jj] = row[jj * p->w_sn];
            for (size_t jj = cols; jj < nr; jj++) out[jj] = 0.0f;
        }
    }
}

/* Tile t: batch, then column block, then row block, so that consecutive
 * tiles (which a thread takes in order) share one packed block. */
static void gemm_tiles(void *ctx, size_t thread, size_t start, size_t count) {
    const gemm_job *j = ctx;
    const eko_f32_mm *p = j->p;
    const size_t nr = j->cfg->nr, block_cols = j->panels_per_block * nr;
    float *slice = j->packed + thread * j->panels_per_block * j->panel_floats;
    for (size_t t = start; t < start + count; t++) {
        const size_t id = t / j->row_blocks, rb = t % j->row_blocks;
        const size_t b = id / j->col_blocks, n0 = (id % j->col_blocks) * block_cols;
        const size_t nc = p->n - n0 < block_cols ? p->n - n0 : block_cols;
        if (j->packed_id[thread] != id) {
            pack_block(j, b, n0, nc, slice);
            j->packed_id[thread] = id;
        }
        const size_t m0 = rb * ROW_BLOCK, mc = p->m - m0 < ROW_BLOCK ? p->m - m0 : ROW_BLOCK;
        eko_f32_gemm_serial(j->cfg, mc, nc, p->k, p->a + b * p->a_batch + m0 * p->lda, p->lda,
                            slice, p->c + b * p->c_batch + m0 * p->ldc + n0, p->ldc, -INFINITY,
                            INFINITY);
    }
}

/* The packed path if scratch holds at least one panel per thread; false otherwise. */
static bool run_gemm(ember_kernel_ctx *ctx, ember_threadpool *pool, const eko_f32_mm *p,
                     size_t macs) {
    const eko_f32_gemm_config *cfg = eko_f32_gemm_config_active();
    const size_t threads = ember_parallel_threads(pool, macs);
    gemm_job j = {p, cfg, 0, 0, 0, ceil_div(p->m, ROW_BLOCK), NULL, NULL};
    if (!eko_f32_packed_size(cfg, cfg->nr, p->k, &j.panel_floats)) return false;
    const size_t panels = ceil_div(p->n, cfg->nr);
    /* blocks small enough for about four tiles per thread, as scratch allows */
    const size_t tiles_wanted = ceil_div(threads * 4, p->batch * j.row_blocks);
    size_t ppb = ceil_div(panels, tiles_wanted);
    j.packed_id = ember_kernel_scratch(ctx, threads * sizeof(size_t), _Alignof(size_t));
    if (j.packed_id == NULL) return false;
    /* the largest block the scratch holds (it cannot be asked how much is free) */
    for (; ppb > 0; ppb = ppb > 8 ? ppb * 3 / 4 : ppb - 1) {
        size_t bytes;
        if (ember_mul_overflow(ppb, j.panel_floats, &bytes) ||
            ember_mul_overflow(bytes, threads * sizeof(float), &bytes))
            continue;
        j.packed = ember_kernel_scratch(ctx, bytes, 64);
        if (j.packed != NULL) break;
    }
    if (j.packed == NULL) return false;
    j.panels_per_block = ppb;
    j.col_blocks = ceil_div(panels, ppb);
    for (size_t t = 0; t < threads; t++) j.packed_id[t] = SIZE_MAX;
    ember_parallel_1d_on(pool, threads, gemm_tiles, &j, p->batch * j.col_blocks * j.row_blocks,
                         1);
    return true;
}

/* ------------------------------------------------------------------------ */

void eko_f32_matmul(ember_kernel_ctx *ctx, const eko_f32_mm *p) {
    if (p->batch == 0 || p->m == 0 || p->n == 0) return;
    if (p->k == 0) { /* nothing to sum: every row is the bias (A and W may be empty) */
        for (size_t b = 0; b < p->batch; b++)
            for (size_t i = 0; i < p->m; i++) {
                float *row = p->c + b * p->c_batch + i * p->ldc;
                for (size_t jj = 0; jj < p->n; jj++) row[jj] = p->bias != NULL ? p->bias[jj] : 0.0f;
            }
        return;
    }
    ember_threadpool *pool = ember_kernel_threadpool(ctx);
    /* a count of work only, to pick serial or parallel: saturates instead of wrapping */
    size_t macs = p->batch;
    if (ember_mul_overflow(macs, p->m, &macs) || ember_mul_overflow(macs, p->n, &macs) ||
        ember_mul_overflow(macs, p->k, &macs))
        macs = SIZE_MAX;
    if (p->m > EKO_GEMV_MAX_ROWS && run_gemm(ctx, pool, p, macs)) return;
    run_gemv(pool, p, macs);
}
