/*
 * rows.h — float32 row-wise kernels split over the thread pool: softmax and
 * log-softmax of each row, layer norm of each row (with its mean and
 * reciprocal standard deviation, as native_layer_norm returns them).
 *
 * Rows go to the threads in whole tiles of at least EKO_PAR_CHUNK elements,
 * on as many threads as the bytes are worth (eko_par_threads); small work,
 * or a NULL pool, runs on the caller. Nothing here allocates.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_ROWS_H
#define EMBER_KERNELS_OPTIMIZED_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "f32_rows.h"

struct ember_threadpool;

/**
 * y = softmax (log_out false) or log-softmax (true) of each of `rows` rows
 * of len >= 1 floats, x and y contiguous (y == x allowed).
 */
void eko_f32_softmax_rows(struct ember_threadpool *pool, const eko_f32_rows *k, size_t rows,
                          size_t len, const float *x, float *y, bool log_out);

/**
 * Layer norm of each of `rows` rows of cols >= 1 floats: y (rows, cols),
 * mean and rstd (rows); w and b (cols) may be NULL.
 */
void eko_f32_layer_norm_rows(struct ember_threadpool *pool, const eko_f32_rows *k, size_t rows,
                             size_t cols, const float *x, const float *w, const float *b,
                             float eps, float *y, float *mean, float *rstd);

#endif /* EMBER_KERNELS_OPTIMIZED_ROWS_H */
