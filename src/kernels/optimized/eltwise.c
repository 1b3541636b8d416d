/*
 * Elementwise drivers (eltwise.h): broadcast geometry, and the loops that
 * hand rows of it to the row kernels over the thread pool.
 */
#include "eltwise.h"

#include <string.h>

#include "ember/threadpool.h"

bool eko_nd_broadcast(size_t rank, const size_t *out_sizes, size_t r, const size_t *sizes,
                      size_t *strides) {
    if (r > rank) return false;
    size_t step = 1;
    for (size_t d = rank; d-- > 0;) {
        const size_t od = d + r >= rank ? d + r - rank : SIZE_MAX; /* the operand's dim */
        const size_t size = od == SIZE_MAX ? 1 : sizes[od];
        if (size != 1 && size != out_sizes[d]) return false;
        strides[d] = size == 1 ? 0 : step;
        step *= size; /* at most the operand's numel */
    }
    return true;
}

void eko_nd_init(eko_nd *nd, size_t rank, const size_t *sizes, size_t nops,
                 const size_t (*strides)[EKO_ND_MAX_DIM]) {
    memset(nd, 0, sizeof *nd);
    nd->nops = nops;
    size_t n = 0;
    for (size_t d = 0; d < rank; d++) {
        if (sizes[d] == 1) continue;
        /* d continues the previous kept dim if, for every operand, stepping
         * the previous dim once is the same as stepping d through its size */
        bool merge = n > 0;
        for (size_t k = 0; merge && k < nops; k++)
            merge = nd->strides[k][n - 1] == strides[k][d] * sizes[d];
        if (merge) {
            nd->sizes[n - 1] *= sizes[d];
            for (size_t k = 0; k < nops; k++) nd->strides[k][n - 1] = strides[k][d];
        } else {
            nd->sizes[n] = sizes[d];
            for (size_t k = 0; k < nops; k++) nd->strides[k][n] = strides[k][d];
            n++;
        }
    }
    if (n == 0) { /* a single element: one dim of size 1 */
        nd->sizes[0] = 1;
        for (size_t k = 0; k < nops; k++) nd->strides[k][0] = 1;
        n = 1;
    }
    /* a zero size anywhere: no elements (the loops below see numel 0) */
    for (size_t d = 0; d < rank; d++)
        if (sizes[d] == 0) nd->sizes[0] = 0;
    nd->rank = n;
}

size_t eko_nd_numel(const eko_nd *nd) {
    size_t n = 1;
    for (size_t d = 0; d < nd->rank; d++) n *= nd->sizes[d]; /* the output's numel */
    return n;
}

/* ------------------------------------------------------------------------ */
/* Running rows over the pool                                                */
/* ------------------------------------------------------------------------ */

/* One row: n elements; off[k] the element offset of operand k's first,
 * step[k] its stride along the row. */
typedef void (*nd_row_fn)(void *ctx, size_t n, const size_t *off, const size_t *step);

typedef struct nd_job {
    const eko_nd *nd;
    nd_row_fn fn;
    void *ctx;
    size_t inner;  /* elements of a row */
    size_t chunks; /* pieces of a row (split rows), else 1 */
    size_t chunk;  /* elements of a piece */
} nd_job;

/* Offsets of row r (a row-major index over dims [0, rank - 1)); fills the
 * counter idx for stepping on. */
static void row_offsets(const eko_nd *nd, size_t r, size_t *idx, size_t *off) {
    for (size_t k = 0; k < nd->nops; k++) off[k] = 0;
    for (size_t d = nd->rank - 1; d-- > 0;) {
        idx[d] = r % nd->sizes[d];
        r /= nd->sizes[d];
        for (size_t k = 0; k < nd->nops; k++) off[k] += idx[d] * nd->strides[k][d];
    }
}

/* Advances idx (and off) to the next row. */
static void next_row(const eko_nd *nd, size_t *idx, size_t *off) {
    for (size_t d = nd->rank - 1; d-- > 0;) {
        for (size_t k = 0; k < nd->nops; k++) off[k] += nd->strides[k][d];
        if (++idx[d] < nd->sizes[d]) return;
        for (size_t k = 0; k < nd->nops; k++) off[k] -= idx[d] * nd->strides[k][d];
        idx[d] = 0;
    }
}

/* Whole rows [start, start + count). */
static void nd_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const nd_job *j = ctx;
    size_t idx[EKO_ND_MAX_DIM], off[EKO_ND_MAX_OPS], step[EKO_ND_MAX_OPS];
    (void)thread;
    for (size_t k = 0; k < j->nd->nops; k++) step[k] = j->nd->strides[k][j->nd->rank - 1];
    row_offsets(j->nd, start, idx, off);
    for (size_t r = 0; r < count; r++) {
        j->fn(j->ctx, j->inner, off, step);
        next_row(j->nd, idx, off);
    }
}

/* Pieces [start, start + count) of split rows: piece t is chunk t % chunks of row t / chunks. */
static void nd_pieces(void *ctx, size_t thread, size_t start, size_t count) {
    const nd_job *j = ctx;
    size_t idx[EKO_ND_MAX_DIM], off[EKO_ND_MAX_OPS], step[EKO_ND_MAX_OPS], at[EKO_ND_MAX_OPS];
    (void)thread;
    for (size_t k = 0; k < j->nd->nops; k++) step[k] = j->nd->strides[k][j->nd->rank - 1];
    for (size_t t = start; t < start + count; t++) {
        const size_t c0 = (t % j->chunks) * j->chunk;
        const size_t n = j->inner - c0 < j->chunk ? j->inner - c0 : j->chunk;
        row_offsets(j->nd, t / j->chunks, idx, off);
        for (size_t k = 0; k < j->nd->nops; k++) at[k] = off[k] + c0 * step[k];
        j->fn(j->ctx, n, at, step);
    }
}

/*
 * Runs fn over every row of nd. Small work runs on the caller; otherwise
 * many short rows go in tiles of whole rows, and a few long rows (fewer
 * than two per thread) in pieces of EKO_PAR_CHUNK elements.
 */
static void nd_run(struct ember_threadpool *pool, const eko_nd *nd, nd_row_fn fn, void *ctx) {
    const size_t total = eko_nd_numel(nd);
    if (total == 0) return;
    nd_job j = {nd, fn, ctx, nd->sizes[nd->rank - 1], 1, 0};
    const size_t rows = total / j.inner, threads = eko_par_threads(pool, total);
    if (threads <= 1) {
        nd_rows(&j, 0, 0, rows);
        return;
    }
    if (rows >= 2 * threads) {
        const size_t per_tile = j.inner >= EKO_PAR_CHUNK ? 1 : EKO_PAR_CHUNK / j.inner;
        ember_parallel_1d_on(pool, threads, nd_rows, &j, rows, per_tile);
        return;
    }
    j.chunk = EKO_PAR_CHUNK;
    j.chunks = j.inner / j.chunk + (j.inner % j.chunk != 0);
    ember_parallel_1d_on(pool, threads, nd_pieces, &j, rows * j.chunks, 1);
}

/* ------------------------------------------------------------------------ */
/* Binary                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct binary_ctx {
    eko_f32_binary_fn fn[EKO_BSHAPE_COUNT];
    float *y;
    const float *a, *b;
} binary_ctx;

static void binary_row(void *ctx, size_t n, const size_t *off, const size_t *step) {
    const binary_ctx *c = ctx;
    float *y = c->y + off[0];
    const float *a = c->a + off[1], *b = c->b + off[2];
    if (step[0] != 1 || step[1] > 1 || step[2] > 1) {
        /* not a layout eko_nd_broadcast makes; element by element */
        for (size_t i = 0; i < n; i++)
            c->fn[EKO_VS](1, a + i * step[1], b + i * step[2], y + i);
    } else if (step[1] == 1) {
        c->fn[step[2] == 1 ? EKO_VV : EKO_VS](n, a, b, y);
    } else if (step[2] == 1) {
        c->fn[EKO_SV](n, a, b, y);
    } else { /* both one value: compute it once, then repeat it */
        c->fn[EKO_VS](1, a, b, y);
        for (size_t i = 1; i < n; i++) y[i] = y[0];
    }
}

void eko_f32_binary_nd(struct ember_threadpool *pool, const eko_f32_rows *rows, eko_binop op,
                       const eko_nd *nd, float *y, const float *a, const float *b) {
    binary_ctx c = {{rows->binary[op][EKO_VV], rows->binary[op][EKO_VS], rows->binary[op][EKO_SV]},
                    y, a, b};
    nd_run(pool, nd, binary_row, &c);
}

/* ------------------------------------------------------------------------ */
/* Where                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct where_ctx {
    float *y;
    const uint8_t *cond;
    const float *a, *b;
} where_ctx;

static void where_row(void *ctx, size_t n, const size_t *off, const size_t *step) {
    const where_ctx *c = ctx;
    float *y = c->y + off[0];
    const uint8_t *cond = c->cond + off[1];
    const float *a = c->a + off[2], *b = c->b + off[3];
    if (step[0] == 1 && step[1] == 1 && step[2] == 1 && step[3] == 1) {
        /* the common case as a plain loop the compiler vectorizes */
        for (size_t i = 0; i < n; i++) y[i] = cond[i] != 0 ? a[i] : b[i];
    } else if (step[0] == 1 && step[1] == 0) { /* one condition for the row: a copy */
        const float *src = cond[0] != 0 ? a : b;
        const size_t s = cond[0] != 0 ? step[2] : step[3];
        if (s == 1)
            memcpy(y, src, n * sizeof(float));
        else
            for (size_t i = 0; i < n; i++) y[i] = src[i * s];
    } else {
        for (size_t i = 0; i < n; i++)
            y[i * step[0]] = cond[i * step[1]] != 0 ? a[i * step[2]] : b[i * step[3]];
    }
}

void eko_f32_where_nd(struct ember_threadpool *pool, const eko_nd *nd, float *y,
                      const uint8_t *cond, const float *a, const float *b) {
    where_ctx c = {y, cond, a, b};
    nd_run(pool, nd, where_row, &c);
}

/* ------------------------------------------------------------------------ */
/* Unary and clamp: one flat array in pieces                                 */
/* ------------------------------------------------------------------------ */

typedef struct flat_job {
    eko_f32_unary_fn fn;
    void (*clamp)(size_t n, const float *x, float lo, float hi, float *y);
    const float *x;
    float *y;
    float lo, hi;
} flat_job;

static void flat_piece(void *ctx, size_t thread, size_t start, size_t count) {
    const flat_job *j = ctx;
    (void)thread;
    if (j->fn != NULL)
        j->fn(count, j->x + start, j->y + start);
    else
        j->clamp(count, j->x + start, j->lo, j->hi, j->y + start);
}

static void flat_run(struct ember_threadpool *pool, flat_job *j, size_t n) {
    if (n == 0) return;
    const size_t threads = eko_par_threads(pool, n);
    if (threads <= 1)
        flat_piece(j, 0, 0, n);
    else
        ember_parallel_1d_on(pool, threads, flat_piece, j, n, EKO_PAR_CHUNK);
}

void eko_f32_unary(struct ember_threadpool *pool, eko_f32_unary_fn fn, size_t n, const float *x,
                   float *y) {
    flat_job j = {fn, NULL, x, y, 0.0f, 0.0f};
    flat_run(pool, &j, n);
}

void eko_f32_clamp(struct ember_threadpool *pool, const eko_f32_rows *rows, size_t n,
                   const float *x, float lo, float hi, float *y) {
    flat_job j = {NULL, rows->clamp, x, y, lo, hi};
    flat_run(pool, &j, n);
}
