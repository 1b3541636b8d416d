/*
 * Row-wise drivers (rows.h): tiles of whole rows over the thread pool.
 */
#include "rows.h"

#include "eltwise.h" /* eko_par_threads, EKO_PAR_CHUNK */
#include "ember/threadpool.h"

typedef struct rows_job {
    const eko_f32_rows *k;
    size_t len;
    const float *x, *w, *b;
    float *y, *mean, *rstd;
    float eps;
    bool log_out, norm;
} rows_job;

static void rows_tile(void *ctx, size_t thread, size_t start, size_t count) {
    const rows_job *j = ctx;
    (void)thread;
    for (size_t r = start; r < start + count; r++) {
        const float *x = j->x + r * j->len; /* (len) */
        float *y = j->y + r * j->len;
        if (j->norm)
            j->k->layer_norm(j->len, x, j->w, j->b, j->eps, y, j->mean + r, j->rstd + r);
        else if (j->log_out)
            j->k->log_softmax(j->len, x, y);
        else
            j->k->softmax(j->len, x, y);
    }
}

static void rows_run(struct ember_threadpool *pool, rows_job *j, size_t rows) {
    if (rows == 0) return;
    const size_t threads = eko_par_threads(pool, rows * j->len); /* the caller's tensor */
    if (threads <= 1) {
        rows_tile(j, 0, 0, rows);
        return;
    }
    const size_t per_tile = j->len >= EKO_PAR_CHUNK ? 1 : EKO_PAR_CHUNK / j->len;
    ember_parallel_1d_on(pool, threads, rows_tile, j, rows, per_tile);
}

void eko_f32_softmax_rows(struct ember_threadpool *pool, const eko_f32_rows *k, size_t rows,
                          size_t len, const float *x, float *y, bool log_out) {
    rows_job j = {k, len, x, NULL, NULL, y, NULL, NULL, 0.0f, log_out, false};
    rows_run(pool, &j, rows);
}

void eko_f32_layer_norm_rows(struct ember_threadpool *pool, const eko_f32_rows *k, size_t rows,
                             size_t cols, const float *x, const float *w, const float *b,
                             float eps, float *y, float *mean, float *rstd) {
    rows_job j = {k, cols, x, w, b, y, mean, rstd, eps, false, true};
    rows_run(pool, &j, rows);
}
