/*
 * Dynamically quantized matrix products (qd8_gemm.h): weight geometry and
 * packing, row quantization, and the driver that spreads tiles of rows x
 * panels over the thread pool. Plain C; the micro-kernels are per ISA.
 */
#include "qd8_gemm.h"
#include "qs8_ops.h"
#include "tiles.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/internal.h"
#include "ember/threadpool.h"

bool eko_qd8_weights_init(eko_qd8_weights *w, size_t n, size_t k, size_t slice_k, bool int4,
                          bool scales_bf16, size_t *bytes) {
    memset(w, 0, sizeof *w);
    if (slice_k == 0 || slice_k > EKO_QD8_MAX_K || k % slice_k != 0) return false;
    const size_t depth = int4 ? 8 : 4; /* k per block */
    w->n = n;
    w->k = k;
    w->slice_k = slice_k;
    w->slices = k / slice_k;
    w->slice_blocks = slice_k / depth + (slice_k % depth != 0);
    w->int4 = int4;
    w->scales_bf16 = scales_bf16;
    w->scale_bytes = EKO_QD8_NR * (scales_bf16 ? 2 : 4);
    w->panels = n / EKO_QD8_NR + (n % EKO_QD8_NR != 0);
    w->group_slices = EKO_QD8_BLOCK_BYTES / w->scale_bytes;
    const size_t groups = w->slices / w->group_slices + (w->slices % w->group_slices != 0);
    size_t blocks, lines;
    /* per panel: each group's line of scales and its slices' blocks; ksums,
     * biases, isums (slice_k <= EKO_QD8_MAX_K bounds a group) */
    w->group_bytes = EKO_QD8_BLOCK_BYTES * (1 + w->group_slices * w->slice_blocks);
    if (ember_mul_overflow(w->slice_blocks, (size_t)EKO_QD8_BLOCK_BYTES * w->slices, &blocks) ||
        ember_mul_overflow(groups, (size_t)EKO_QD8_BLOCK_BYTES, &lines) ||
        ember_add_overflow(blocks, lines, &w->tail_at) ||
        ember_add_overflow(w->tail_at, 3 * EKO_QD8_BLOCK_BYTES, &w->panel_bytes) ||
        ember_mul_overflow(w->panel_bytes, w->panels, bytes))
        return false;
    return true;
}

static float bf16_to_f32(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Weight (row, kk) of the source as an int. */
static int weight_at(const eko_qd8_weights *w, const uint8_t *src, size_t row, size_t kk) {
    if (!w->int4) return (int8_t)src[row * w->k + kk];
    const uint8_t b = src[row * ((w->k + 1) / 2) + kk / 2];
    return (kk % 2 == 0 ? b & 0x0f : b >> 4) - 8;
}

static float scale_at(const eko_qd8_weights *w, const uint8_t *scales, size_t row, size_t slice) {
    const size_t i = row * w->slices + slice;
    if (w->scales_bf16) {
        uint16_t h;
        memcpy(&h, scales + 2 * i, sizeof h);
        return bf16_to_f32(h);
    }
    float f;
    memcpy(&f, scales + 4 * i, sizeof f);
    return f;
}

/* Writes weight v at depth i of a slice's blocks, column c. */
static void put_weight(const eko_qd8_weights *w, uint8_t *blocks, size_t c, size_t i, int v) {
    const size_t depth = w->int4 ? 8 : 4;
    uint8_t *blk = blocks + (i / depth) * EKO_QD8_BLOCK_BYTES;
    const size_t d = i % depth;
    if (!w->int4)
        blk[4 * c + d] = (uint8_t)(int8_t)v;
    else if (d < 4)
        blk[4 * c + d] = (uint8_t)((blk[4 * c + d] & 0xf0) | (v + 8));
    else
        blk[4 * c + d - 4] = (uint8_t)((blk[4 * c + d - 4] & 0x0f) | ((v + 8) << 4));
}

/* Packs column c's weights of one slice (row `row` of the source), when the
 * slice is whole blocks on whole source bytes; returns their sum. int4: the
 * source's bytes hold depth 2j, 2j + 1 in low, high nibble (each + 8); a
 * block's byte i holds depth i and 4 + i. */
static int64_t pack_blocks(const eko_qd8_weights *w, const uint8_t *src, size_t row, size_t s,
                           uint8_t *blocks, size_t c, bool *ok) {
    int64_t sum = 0;
    if (w->int4) {
        const uint8_t *p = src + row * (w->k / 2) + s * w->slice_k / 2;
        for (size_t b = 0; b < w->slice_blocks; b++, p += 4) {
            const uint8_t nib[8] = {p[0] & 15, p[0] >> 4, p[1] & 15, p[1] >> 4,
                                    p[2] & 15, p[2] >> 4, p[3] & 15, p[3] >> 4};
            uint8_t *blk = blocks + b * EKO_QD8_BLOCK_BYTES + 4 * c;
            for (int i = 0; i < 4; i++) {
                blk[i] = (uint8_t)(nib[i] | nib[4 + i] << 4);
                sum += (int)nib[i] + (int)nib[4 + i] - 16;
            }
        }
        return sum;
    }
    const int8_t *p = (const int8_t *)src + row * w->k + s * w->slice_k;
    for (size_t b = 0; b < w->slice_blocks; b++, p += 4) {
        memcpy(blocks + b * EKO_QD8_BLOCK_BYTES + 4 * c, p, 4);
        for (int i = 0; i < 4; i++) {
            *ok = *ok && p[i] != -128;
            sum += p[i];
        }
    }
    return sum;
}

/* Packs panels [p0, p1) of w; false if an int8 weight there is -128. */
static bool pack_panels(const eko_qd8_weights *w, const uint8_t *src, const uint8_t *scales,
                        const float *bias, uint8_t *out, size_t p0, size_t p1) {
    const size_t slice_bytes = w->slice_blocks * EKO_QD8_BLOCK_BYTES;
    /* slices of whole blocks, on whole source bytes: a block's column at a time */
    const bool whole_blocks = w->slice_k % (w->int4 ? 8 : 4) == 0 && (!w->int4 || w->k % 2 == 0);
    bool ok = true;
    memset(out + p0 * w->panel_bytes, 0, w->panel_bytes * (p1 - p0));
    for (size_t p = p0; p < p1; p++) {
        uint8_t *panel = out + p * w->panel_bytes;
        const size_t n0 = p * EKO_QD8_NR;
        const size_t nc = w->n - n0 < EKO_QD8_NR ? w->n - n0 : EKO_QD8_NR;
        double ksum[EKO_QD8_NR] = {0};
        int32_t isum[EKO_QD8_NR] = {0};
        for (size_t s = 0; s < w->slices; s++) {
            uint8_t *blocks = panel + eko_qd8_blocks_at(w, s);
            /* zero weights first, for the padding and the columns past n
             * (an int4 zero is a nibble of 8) */
            if (w->int4) memset(blocks, 0x88, slice_bytes);
            for (size_t c = 0; c < nc; c++) {
                const float sc = scale_at(w, scales, n0 + c, s);
                int64_t sum = 0;
                if (whole_blocks) {
                    sum = pack_blocks(w, src, n0 + c, s, blocks, c, &ok);
                } else {
                    for (size_t i = 0; i < w->slice_k; i++) {
                        const int v = weight_at(w, src, n0 + c, s * w->slice_k + i);
                        ok = ok && v != -128;
                        sum += v;
                        put_weight(w, blocks, c, i, v);
                    }
                }
                ksum[c] += (double)sc * (double)sum;
                isum[c] = (int32_t)sum; /* |sum| <= 127 * EKO_QD8_MAX_K */
                /* the scale as the source gives it */
                memcpy(panel + eko_qd8_scales_at(w, s) + c * (w->scale_bytes / EKO_QD8_NR),
                       scales + (n0 + c) * w->slices * (w->scale_bytes / EKO_QD8_NR) +
                           s * (w->scale_bytes / EKO_QD8_NR),
                       w->scale_bytes / EKO_QD8_NR);
            }
        }
        /* the zero point's way out: exact in int32 with one slice, else in float */
        float ks[EKO_QD8_NR] = {0}, b[EKO_QD8_NR] = {0};
        for (size_t c = 0; c < nc; c++) {
            ks[c] = w->slices == 1 ? 0.0f : (float)ksum[c];
            b[c] = bias != NULL ? bias[n0 + c] : 0.0f;
        }
        if (w->slices != 1) memset(isum, 0, sizeof isum);
        memcpy(panel + w->tail_at, ks, sizeof ks);
        memcpy(panel + w->tail_at + EKO_QD8_BLOCK_BYTES, b, sizeof b);
        memcpy(panel + w->tail_at + 2 * EKO_QD8_BLOCK_BYTES, isum, sizeof isum);
    }
    return ok;
}

bool eko_qd8_pack(eko_qd8_weights *w, const void *src, const void *scales, const float *bias,
                  uint8_t *out) {
    const bool ok = pack_panels(w, src, scales, bias, out, 0, w->panels);
    w->data = out;
    return ok;
}

typedef struct pack_job {
    const eko_qd8_weights *w;
    const uint8_t *src, *scales;
    const float *bias;
    uint8_t *out;
    atomic_bool bad; /* a thread met -128 */
} pack_job;

static void pack_task(void *ctx, size_t thread, size_t start, size_t count) {
    pack_job *j = ctx;
    (void)thread;
    if (!pack_panels(j->w, j->src, j->scales, j->bias, j->out, start, start + count))
        atomic_store(&j->bad, true);
}

bool eko_qd8_pack_parallel(eko_qd8_weights *w, struct ember_threadpool *pool, const void *src,
                           const void *scales, const float *bias, uint8_t *out) {
    pack_job j = {w, src, scales, bias, out, false};
    /* runs of 8 panels: each thread writes (and first touches) its own pages */
    ember_parallel_1d_on(pool,
                         ember_parallel_threads(pool, ember_work_mul(w->panels, w->panel_bytes)),
                         pack_task, &j, w->panels, 8);
    w->data = out;
    return !atomic_load(&j.bad);
}

/* --------------------------------------------------------------------- */
/* Row quantization                                                      */
/* --------------------------------------------------------------------- */

eko_qd8_row eko_qd8_row_params(float lo, float hi) {
    /* XNNPACK's asymmetric choice: the range holds 0; the multiplier maps it
     * onto 255 steps; the zero point comes from the end with less error */
    const float rmin = lo < 0.0f ? lo : 0.0f, rmax = hi > 0.0f ? hi : 0.0f;
    float mult = 1.0f;
    if (rmin != rmax) {
        const float range = rmax - rmin;
        /* a range beyond float (e.g. -3e38 .. 3e38): divide in double */
        mult = isfinite(range) ? 255.0f / range : (float)(255.0 / ((double)rmax - rmin));
    }
    const float dmin = rmin * mult, dmax = rmax * mult;
    float zp = (-128.0f + dmin) + (127.0f + dmax) > 0.0f ? -128.0f - dmin : 127.0f - dmax;
    zp = zp < -128.0f ? -128.0f : zp > 127.0f ? 127.0f : zp;
    eko_qd8_row r;
    r.zero_point = (int32_t)rintf(zp);
    r.scale = 1.0f / mult;
    return r;
}

void eko_qd8_range_scalar(size_t k, const float *x, float *lo_out, float *hi_out, bool *nan) {
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        const float v = x[i];
        if (isnan(v)) *nan = true;
        else if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    *lo_out = lo < *lo_out ? lo : *lo_out;
    *hi_out = hi > *hi_out ? hi : *hi_out;
}

/* n values quantized with r (as XNNPACK's conversion: multiplied by the
 * reciprocal of the scale; NaN gives the zero point), stored q ^ x_xor. */
static inline void quantize_block(const size_t n, const float *restrict x, uint8_t *restrict q,
                                  float mult, int32_t zp, uint8_t x_xor) {
    for (size_t i = 0; i < n; i++)
        q[i] = (uint8_t)((uint8_t)eko_qs8_round(x[i] * mult, zp, -128, 127) ^ x_xor);
}

void eko_qd8_values_scalar(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor) {
    const float mult = 1.0f / r.scale;
    uint8_t *u = (uint8_t *)q;
    size_t i = 0;
    for (; i + 64 <= k; i += 64) quantize_block(64, x + i, u + i, mult, r.zero_point, x_xor);
    quantize_block(k - i, x + i, u + i, mult, r.zero_point, x_xor);
}

/* The quantization of a row from the range of its finite values (none:
 * the range of 0). */
static eko_qd8_row row_finish(float lo, float hi) {
    if (lo > hi) lo = hi = 0.0f; /* no finite value */
    return eko_qd8_row_params(lo, hi);
}

void eko_qd8_quantize_row_scalar(size_t k, const float *x, int8_t *q, uint8_t x_xor,
                                 eko_qd8_row *out) {
    float lo = INFINITY, hi = -INFINITY;
    bool nan = false;
    eko_qd8_range_scalar(k, x, &lo, &hi, &nan);
    eko_qd8_row r = row_finish(lo, hi);
    eko_qd8_values_scalar(k, x, q, r, x_xor);
    if (nan) r.scale = NAN; /* its products are NaN, as in float */
    *out = r;
}

/* Rows of at least 2 x QUANT_CHUNK_MIN values, fewer than threads, are
 * split into up to QUANT_CHUNKS chunks: their ranges, then their values. */
#define QUANT_CHUNKS 64
#define QUANT_CHUNK_MIN 8192

typedef struct quant_job {
    const eko_qd8_gemm_config *cfg;
    size_t k, ldx, ldq;
    const float *x;
    int8_t *q;
    eko_qd8_row *params;
    /* one long row split into chunks: each chunk's range, then the row's */
    size_t chunk;
    float lo[QUANT_CHUNKS], hi[QUANT_CHUNKS];
    bool nan[QUANT_CHUNKS];
    eko_qd8_row row;
} quant_job;

static void quant_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const quant_job *j = ctx;
    (void)thread;
    for (size_t r = start; r < start + count; r++) {
        float lo = INFINITY, hi = -INFINITY;
        bool nan = false;
        const float *x = j->x + r * j->ldx;
        j->cfg->range(j->k, x, &lo, &hi, &nan);
        eko_qd8_row qr = row_finish(lo, hi);
        j->cfg->values(j->k, x, j->q + r * j->ldq, qr, j->cfg->x_xor);
        if (nan) qr.scale = NAN; /* its products are NaN, as in float */
        j->params[r] = qr;
    }
}

static void chunk_ranges(void *ctx, size_t thread, size_t start, size_t count) {
    quant_job *j = ctx;
    (void)thread;
    for (size_t c = start; c < start + count; c++) {
        const size_t at = c * j->chunk, n = j->k - at < j->chunk ? j->k - at : j->chunk;
        j->lo[c] = INFINITY, j->hi[c] = -INFINITY, j->nan[c] = false;
        j->cfg->range(n, j->x + at, &j->lo[c], &j->hi[c], &j->nan[c]);
    }
}

static void chunk_values(void *ctx, size_t thread, size_t start, size_t count) {
    const quant_job *j = ctx;
    (void)thread;
    for (size_t c = start; c < start + count; c++) {
        const size_t at = c * j->chunk, n = j->k - at < j->chunk ? j->k - at : j->chunk;
        j->cfg->values(n, j->x + at, j->q + at, j->row, j->cfg->x_xor);
    }
}

void eko_qd8_quantize(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool, size_t rows,
                      size_t k, const float *x, size_t ldx, int8_t *q, size_t ldq,
                      eko_qd8_row *params) {
    quant_job j;
    memset(&j, 0, sizeof j);
    j.cfg = cfg, j.k = k, j.ldx = ldx, j.ldq = ldq, j.x = x, j.q = q, j.params = params;
    /* 5 bytes an element: a float read, an int8 written */
    const size_t threads = ember_parallel_threads(pool, ember_work_mul(ember_work_mul(rows, k), 5));
    if (rows >= threads || k < 2 * QUANT_CHUNK_MIN) {
        ember_parallel_1d_on(pool, threads, quant_rows, &j, rows, 1);
        return;
    }
    /* few long rows (the images of a convolution): each split into chunks */
    size_t chunks = k / QUANT_CHUNK_MIN;
    chunks = chunks < QUANT_CHUNKS ? chunks : QUANT_CHUNKS;
    j.chunk = k / chunks + (k % chunks != 0);
    chunks = k / j.chunk + (k % j.chunk != 0);
    for (size_t r = 0; r < rows; r++) {
        j.x = x + r * ldx;
        j.q = q + r * ldq;
        ember_parallel_1d_on(pool, threads, chunk_ranges, &j, chunks, 1);
        float lo = INFINITY, hi = -INFINITY;
        bool nan = false;
        for (size_t c = 0; c < chunks; c++) {
            lo = j.lo[c] < lo ? j.lo[c] : lo;
            hi = j.hi[c] > hi ? j.hi[c] : hi;
            nan = nan || j.nan[c];
        }
        j.row = row_finish(lo, hi);
        ember_parallel_1d_on(pool, threads, chunk_values, &j, chunks, 1);
        params[r] = j.row;
        if (nan) params[r].scale = NAN;
    }
}

/* --------------------------------------------------------------------- */
/* Driver                                                                */
/* --------------------------------------------------------------------- */

typedef struct gemm_job {
    const eko_qd8_gemm_config *cfg;
    size_t m;
    const int8_t *x;
    size_t ldx;
    const eko_qd8_row *rows;   /* one per row, or NULL: every row has `shared` */
    eko_qd8_row shared;
    eko_qd8_ukernel ukernel;   /* the config's, for x's encoding */
    const eko_qd8_weights *w;
    eko_qd8_out out;
    float min, max;
    eko_tiles tiles;
    eko_qd8_ukernel_q ukernel_q; /* int8 results straight from the kernel, or NULL */
} gemm_job;

/* n <= EKO_QD8_NR results, within [min, max] of int8, rounded to int8. A
 * whole panel row at a time, so the compiler vectorizes it. (Static int8
 * weights are packed with finite multipliers, so no result is NaN; one would
 * give an unspecified int8, never undefined behaviour.) */
static inline void round_row(size_t n, const float *restrict v, int8_t *restrict q) {
    int8_t row[EKO_QD8_NR];
    for (size_t c = 0; c < EKO_QD8_NR; c++) row[c] = (int8_t)eko_round_small(v[c]);
    memcpy(q, row, n);
}

/* mr rows from row r of panel p, nc columns from n0, into j->out. */
static void gemm_call(const gemm_job *j, const uint8_t *panel, size_t r, size_t mr, size_t n0,
                      size_t nc) {
    eko_qd8_row same[EKO_QD8_MAX_MR];
    const eko_qd8_row *rows = j->rows != NULL ? j->rows + r : same;
    if (j->rows == NULL)
        for (size_t i = 0; i < mr; i++) same[i] = j->shared;
    const int8_t *x = j->x + r * j->ldx;
    if (j->out.q == NULL) {
        j->ukernel(mr, nc, x, j->ldx, rows, j->w, panel, j->out.c + r * j->out.ld + n0, j->out.ld,
                   j->min, j->max);
        return;
    }
    if (j->ukernel_q != NULL) { /* int8 results from the kernel itself */
        j->ukernel_q(mr, nc, x, j->ldx, rows, j->w, panel, j->out.q + r * j->out.ld + n0,
                     j->out.ld, j->min, j->max);
        return;
    }
    /* int8 results: the tile in floats on the stack, then rounded */
    float tile[EKO_QD8_MAX_MR * EKO_QD8_NR];
    j->ukernel(mr, nc, x, j->ldx, rows, j->w, panel, tile, EKO_QD8_NR, j->min, j->max);
    for (size_t i = 0; i < mr; i++)
        round_row(nc, tile + i * EKO_QD8_NR, j->out.q + (r + i) * j->out.ld + n0);
}

static void gemm_tiles(void *ctx, size_t thread, size_t start, size_t count) {
    const gemm_job *j = ctx;
    const eko_qd8_weights *w = j->w;
    (void)thread;
    for (size_t t = start; t < start + count; t++) {
        size_t m0, m1, p0, p1;
        eko_tiles_bounds(&j->tiles, t, &m0, &m1, &p0, &p1);
        for (size_t p = p0; p < p1; p++) {
            const size_t n0 = p * EKO_QD8_NR;
            const size_t nc = w->n - n0 < EKO_QD8_NR ? w->n - n0 : EKO_QD8_NR;
            const uint8_t *panel = w->data + p * w->panel_bytes;
            for (size_t r = m0; r < m1; r += j->cfg->mr) {
                const size_t mr = m1 - r < j->cfg->mr ? m1 - r : j->cfg->mr;
                gemm_call(j, panel, r, mr, n0, nc);
            }
        }
    }
}

static void gemm_run(gemm_job *j, struct ember_threadpool *pool) {
    /* the multiply-adds, and the packed weights it streams */
    const uint64_t macs = ember_work_mul(ember_work_mul(j->m, j->w->n), j->w->k);
    const uint64_t bytes = ember_work_mul(j->w->panels, j->w->panel_bytes);
    const size_t threads = ember_parallel_threads(pool, macs > UINT64_MAX - bytes ? UINT64_MAX
                                                                                   : macs + bytes);
    j->tiles = eko_tiles_plan(j->m, j->w->panels, threads);
    ember_parallel_1d_on(pool, threads, gemm_tiles, j, j->tiles.count, 1);
}

void eko_qd8_gemm(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool, size_t m,
                  const int8_t *x, size_t ldx, const eko_qd8_row *rows, const eko_qd8_weights *w,
                  float *c, size_t ldc, float min, float max) {
    if (m == 0 || w->n == 0) return;
    gemm_job j;
    memset(&j, 0, sizeof j);
    j = (gemm_job){cfg, m, x, ldx, rows, {1.0f, 0}, cfg->ukernel, w, {c, NULL, ldc}, min, max,
                   j.tiles, NULL};
    gemm_run(&j, pool);
}

void eko_qd8_gemm_uniform(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool,
                          size_t m, const int8_t *x, size_t ldx, uint8_t x_xor, eko_qd8_row xq,
                          const eko_qd8_weights *w, eko_qd8_out out, float min, float max) {
    if (m == 0 || w->n == 0) return;
    gemm_job j;
    memset(&j, 0, sizeof j);
    /* plain int8 rows go to the kernel that reads them so */
    const eko_qd8_ukernel uk = x_xor == cfg->x_xor ? cfg->ukernel : cfg->ukernel_s8;
    /* int8 results of plain int8 rows: the kernel that writes them, where there is one */
    const eko_qd8_ukernel_q ukq =
        out.q != NULL && uk == cfg->ukernel_s8 && cfg->x_xor != 0 ? cfg->ukernel_s8_q : NULL;
    j = (gemm_job){cfg, m, x, ldx, NULL, xq, uk, w, out, min, max, j.tiles, ukq};
    gemm_run(&j, pool);
}
