/*
 * ember/threadpool.h — the threads optimized kernels and delegates split
 * their work across.
 *
 * The core runtime starts no thread by itself: the application creates a
 * pool, sized as it likes, and hands it to the methods it loads
 * (ember_method_options.threadpool). A parallel call runs a loop over
 * [0, range) in tiles on every thread of the pool, the calling thread
 * included, and returns when all of it is done. A NULL pool, a pool of one
 * thread, and builds without threads (EMBER_NO_THREADS, bare metal) run the
 * same loop serially on the caller.
 */
#ifndef EMBER_THREADPOOL_H
#define EMBER_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A pool of worker threads (opaque). */
typedef struct ember_threadpool ember_threadpool;

/**
 * Creates a pool of num_threads threads in all, the caller of each parallel
 * call being one of them (so num_threads - 1 workers start); 0 means one per
 * CPU the process may run on. Workers spin briefly after each call they
 * take part in, then sleep; a pool larger than the CPUs the process may run
 * on does not spin.
 * @param[in]  num_threads threads in all, or 0
 * @param[out] out         the pool
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_OUT_OF_MEMORY
 *         (allocation or thread creation failed). Allocates from the platform
 *         heap; not thread-safe with other calls on the same pool.
 */
ember_status ember_threadpool_create(size_t num_threads, ember_threadpool **out);

/** Stops and joins the workers and frees the pool. NULL is a no-op. */
void ember_threadpool_destroy(ember_threadpool *pool);

/** Threads a parallel call runs on: 1 for NULL. */
size_t ember_threadpool_size(const ember_threadpool *pool);

/** Number of CPUs the process may run on (its affinity mask where the
 *  platform has one, else the online cores; 1 where it cannot be told). */
size_t ember_cpu_count(void);

/**
 * Work, in the units ember_parallel_threads counts, that each thread of a
 * call should have: a call takes one more thread per grain. A unit is one
 * byte that a memory-bound loop reads or writes, or one multiply-add of a
 * product; a grain is a few microseconds of one core's time, several times
 * what it costs to hand a thread its share and wait for it.
 */
#define EMBER_PARALLEL_GRAIN ((uint64_t)1 << 16)

/** a * b, saturating: work estimates for ember_parallel_threads. */
static inline uint64_t ember_work_mul(uint64_t a, uint64_t b) {
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/**
 * How many of the pool's threads a call with `work` units of work should
 * use: one per grain (EMBER_PARALLEL_GRAIN, or the pool's own, see
 * ember_threadpool_set_grain), at least 1 and at most the pool's size. A
 * node too small to pay for waking a thread runs on one, and the rest of the
 * pool stays parked. 1 for a NULL pool.
 */
size_t ember_parallel_threads(const ember_threadpool *pool, uint64_t work);

/**
 * Sets the work per thread ember_parallel_threads asks for; 0 restores the
 * default (EMBER_PARALLEL_GRAIN, or the EMBER_PARALLEL_GRAIN environment
 * variable where it is a positive decimal number, read at create). A grain
 * of 1 splits every call over every thread it has tiles for (tests use this
 * to run each kernel's parallel split on small shapes). No-op for NULL; not
 * thread-safe with a parallel call on the same pool.
 */
void ember_threadpool_set_grain(ember_threadpool *pool, uint64_t grain);

/**
 * One piece of a parallel loop: items [start, start + count) of the range,
 * run by thread `thread` (0 = the caller; < ember_threadpool_size()), so a
 * task can give each thread scratch memory of its own.
 */
typedef void (*ember_task_1d)(void *ctx, size_t thread, size_t start, size_t count);

/**
 * Runs fn over [0, range) in pieces of `tile` items (the last may be
 * shorter), as if by
 *
 *     for (size_t i = 0; i < range; i += tile)
 *         fn(ctx, 0, i, min(tile, range - i));
 *
 * but spread over the pool: each thread takes an even share of the tiles,
 * then takes tiles left over by slower threads. Returns when every tile has
 * run. tile 0 counts as 1. Calls on one pool must not overlap or nest (a task
 * must not call ember_parallel_1d on the same pool).
 */
void ember_parallel_1d(ember_threadpool *pool, ember_task_1d fn, void *ctx, size_t range,
                       size_t tile);

/**
 * As ember_parallel_1d, on threads 0 .. threads-1 of the pool only (0, or
 * more than the pool has: all of them; never more than there are tiles).
 * The workers left out are not woken. Results must not depend on `threads`:
 * tasks write disjoint outputs, whichever thread runs them.
 */
void ember_parallel_1d_on(ember_threadpool *pool, size_t threads, ember_task_1d fn, void *ctx,
                          size_t range, size_t tile);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_THREADPOOL_H */
