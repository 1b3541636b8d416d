/*
 * eltwise.h — elementwise float32 work split over the thread pool: binary
 * ops with numpy broadcasting, where, unary math, clamp.
 *
 * Broadcast operands are described by an eko_nd: the output's shape and,
 * for each operand, its stride (in elements) along every output dim, 0
 * where it repeats. eko_nd_init drops size-1 dims and merges dims that are
 * contiguous for every operand, so that the common cases become one long
 * row ((N, M) + (N, M)), rows against one row ((N, M) + (M,)), rows against
 * one value each ((N, M) + (N, 1)) or a row against one value (a scalar).
 * Each call takes as many threads as its bytes are worth
 * (eko_par_threads); small work, or a NULL pool, runs on the caller.
 * Nothing here allocates.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_ELTWISE_H
#define EMBER_KERNELS_OPTIMIZED_ELTWISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/config.h"
#include "ember/threadpool.h"
#include "f32_rows.h"
#include "vmath.h"

struct ember_threadpool;

/* The elements of one piece of split work. */
#define EKO_PAR_CHUNK 8192

/* Threads for a pass over n float32 elements that reads and writes each
 * (8 bytes of traffic an element, ember_parallel_threads' unit). */
static inline size_t eko_par_threads(struct ember_threadpool *pool, size_t n) {
    return ember_parallel_threads(pool, ember_work_mul(n, 8));
}

#define EKO_ND_MAX_DIM EMBER_MAX_DIM
#define EKO_ND_MAX_OPS 4

typedef struct eko_nd {
    size_t rank; /* >= 1 */
    size_t nops; /* operand 0 is the output */
    size_t sizes[EKO_ND_MAX_DIM];
    size_t strides[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM];
} eko_nd;

/**
 * Strides along the output dims out_sizes[0..rank) of a contiguous operand
 * of shape sizes[0..r) (aligned to the right, numpy style): 0 where the
 * operand has size 1 or no such dim. False if r > rank or a size differs
 * from the output's and is not 1.
 */
bool eko_nd_broadcast(size_t rank, const size_t *out_sizes, size_t r, const size_t *sizes,
                      size_t *strides);

/**
 * Sets up nd from an output shape sizes[0..rank) (rank <= EKO_ND_MAX_DIM, 0
 * allowed) and nops <= EKO_ND_MAX_OPS operands' strides, then drops size-1
 * dims and merges adjacent dims contiguous for every operand.
 */
void eko_nd_init(eko_nd *nd, size_t rank, const size_t *sizes, size_t nops,
                 const size_t (*strides)[EKO_ND_MAX_DIM]);

/** Elements of the output. */
size_t eko_nd_numel(const eko_nd *nd);

/**
 * y = a op b over a broadcast described by nd (operands: 0 = y, 1 = a,
 * 2 = b), split over pool. y must not overlap a or b unless it is the same
 * array with the same strides.
 */
void eko_f32_binary_nd(struct ember_threadpool *pool, const eko_f32_rows *rows, eko_binop op,
                       const eko_nd *nd, float *y, const float *a, const float *b);

/** y = cond ? a : b (cond bytes, nonzero = true), operands 0 = y, 1 = cond, 2 = a, 3 = b. */
void eko_f32_where_nd(struct ember_threadpool *pool, const eko_nd *nd, float *y,
                      const uint8_t *cond, const float *a, const float *b);

/** y[i] = fn(x[i]) for i < n, split over pool (y == x allowed). */
void eko_f32_unary(struct ember_threadpool *pool, eko_f32_unary_fn fn, size_t n, const float *x,
                   float *y);

/** y[i] = clamp(x[i], lo, hi) for i < n, split over pool (y == x allowed). */
void eko_f32_clamp(struct ember_threadpool *pool, const eko_f32_rows *rows, size_t n,
                   const float *x, float lo, float hi, float *y);

#endif /* EMBER_KERNELS_OPTIMIZED_ELTWISE_H */
