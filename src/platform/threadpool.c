/*
 * The thread pool: pthreads workers that spin, then sleep, between calls.
 *
 * A parallel call publishes its job (function, context, tiles) under a
 * generation counter; every thread, the caller as thread 0, first runs the
 * tiles of its own even share, taking them one at a time with an atomic
 * counter, then takes the tiles other threads have not reached yet through
 * their counters. The caller returns once every tile is done, whether or not
 * every worker took part: on a machine busier than the pool, a worker that
 * is not scheduled in time costs nothing, since the caller takes its tiles.
 * Workers spin on the generation for a while after each call (decode runs
 * many short calls back to back), then wait on a condition variable.
 *
 * The generation is odd while the caller writes a job and even once the job
 * is published. A worker announces itself in `active` and checks that the
 * generation it saw is still current before it reads the job; the caller
 * makes the generation odd and waits for `active` to drain before it
 * rewrites the job, so no worker ever reads a job half written, and a late
 * worker of a finished job only finds its shares empty.
 *
 * Builds without threads (bare metal, EMBER_NO_THREADS) run every call
 * serially on the caller; ember_threadpool_create then makes a pool of one.
 */
#if !defined(EMBER_PLATFORM_BAREMETAL) && !defined(EMBER_NO_THREADS)
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>
#define EMBER_HAVE_THREADS 1
#endif

#include <string.h>

#include "core/internal.h"
#include "ember/threadpool.h"

/* Threads in all, at most (the caller included). */
#define MAX_THREADS 256

static size_t tiles_of(size_t range, size_t tile) { return range / tile + (range % tile != 0); }

/* Runs tiles [first, end) of a job on the calling thread. */
static void run_tiles(ember_task_1d fn, void *ctx, size_t thread, size_t range, size_t tile,
                      size_t first, size_t end) {
    for (size_t t = first; t < end; t++) {
        size_t start = t * tile;
        fn(ctx, thread, start, range - start < tile ? range - start : tile);
    }
}

size_t ember_cpu_count(void) {
#ifdef EMBER_HAVE_THREADS
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
#else
    return 1;
#endif
}

#ifdef EMBER_HAVE_THREADS

/* One thread's share of the tiles, on a cache line of its own. */
typedef struct share {
    _Atomic size_t next; /* next tile to take */
    size_t end;          /* one past the share's last tile */
    char pad[64 - sizeof(size_t) * 2];
} share;

typedef struct worker {
    pthread_t thread;
    struct ember_threadpool *pool;
    size_t index;             /* 1..n-1 */
} worker;

struct ember_threadpool {
    size_t n;                 /* threads in all; workers are 1..n-1 */
    worker *workers;          /* n - 1 */
    share *shares;            /* n */
    /* the current job, published before generation is bumped */
    ember_task_1d fn;
    void *ctx;
    size_t range, tile;
    _Atomic uint32_t generation; /* odd: a job being written; even: published */
    _Atomic size_t active;    /* workers inside a job (reading it or running tiles) */
    _Atomic size_t done;      /* tiles of the current job finished */
    _Atomic bool stop;
    _Atomic int sleepers;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool sync_ready;          /* mu and wake initialized */
    size_t started;           /* workers created (for cleanup) */
};

/* Spins before a worker sleeps; about a millisecond on current x86 cores. */
#define SPIN_ROUNDS 20000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Runs thread `self`'s share, then the rest of every other share. */
static void work(ember_threadpool *p, size_t self) {
    for (size_t k = 0; k < p->n; k++) {
        share *s = &p->shares[(self + k) % p->n];
        for (;;) {
            size_t t = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
            if (t >= s->end) break;
            run_tiles(p->fn, p->ctx, self, p->range, p->tile, t, t + 1);
            atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        }
    }
}

/* A generation a worker has not served yet and may take: published (even)
 * and new to it. */
static bool takeable(uint32_t g, uint32_t seen) { return g != seen && (g & 1u) == 0; }

static void *worker_main(void *arg) {
    worker *w = arg;
    ember_threadpool *p = w->pool;
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = atomic_load(&p->generation);
        for (int i = 0; !takeable(g, seen) && i < SPIN_ROUNDS && !atomic_load(&p->stop); i++) {
            cpu_relax();
            g = atomic_load(&p->generation);
        }
        if (!takeable(g, seen)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (!takeable(g = atomic_load(&p->generation), seen) && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        atomic_fetch_add(&p->active, 1);
        /* still the job it saw? (else the caller may be rewriting it) */
        if (atomic_load(&p->generation) == g) {
            seen = g;
            work(p, w->index);
        }
        atomic_fetch_sub(&p->active, 1);
    }
}

ember_status ember_threadpool_create(size_t num_threads, ember_threadpool **out) {
    if (out == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "threadpool: NULL output");
    *out = NULL;
    size_t n = num_threads == 0 ? ember_cpu_count() : num_threads;
    if (n > MAX_THREADS) n = MAX_THREADS;
    ember_threadpool *p = ember_platform_alloc(sizeof *p, 64);
    if (p == NULL) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: no memory");
    memset(p, 0, sizeof *p);
    p->n = n;
    p->shares = ember_platform_alloc(n * sizeof(share), 64);
    p->workers = n > 1 ? ember_platform_alloc((n - 1) * sizeof(worker), 64) : NULL;
    if (p->shares == NULL || (n > 1 && p->workers == NULL)) {
        ember_threadpool_destroy(p);
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: no memory for %zu threads", n);
    }
    memset(p->shares, 0, n * sizeof(share));
    if (pthread_mutex_init(&p->mu, NULL) != 0 || pthread_cond_init(&p->wake, NULL) != 0) {
        ember_threadpool_destroy(p);
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: cannot make its lock");
    }
    p->sync_ready = true;
    for (size_t i = 1; i < n; i++) {
        worker *w = &p->workers[i - 1];
        w->pool = p;
        w->index = i;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            ember_threadpool_destroy(p);
            return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: cannot start thread %zu",
                                   i);
        }
        p->started = i;
    }
    *out = p;
    return EMBER_OK;
}

void ember_threadpool_destroy(ember_threadpool *p) {
    if (p == NULL) return;
    if (p->sync_ready) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, true);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
    }
    ember_platform_free(p->workers);
    ember_platform_free(p->shares);
    ember_platform_free(p);
}

size_t ember_threadpool_size(const ember_threadpool *p) { return p != NULL ? p->n : 1; }

void ember_parallel_1d(ember_threadpool *p, ember_task_1d fn, void *ctx, size_t range,
                       size_t tile) {
    if (tile == 0) tile = 1;
    size_t ntiles = tiles_of(range, tile);
    if (p == NULL || p->n == 1 || ntiles <= 1) {
        run_tiles(fn, ctx, 0, range, tile, 0, ntiles);
        return;
    }
    /* Close the previous job: no worker may enter it from now on, and the
     * ones inside (late to it, finding nothing) leave. */
    atomic_fetch_add(&p->generation, 1); /* odd */
    for (unsigned spins = 0; atomic_load(&p->active) != 0; spins++) {
        if (spins < SPIN_ROUNDS)
            cpu_relax();
        else
            sched_yield();
    }
    /* Only as many threads as tiles take part; the others find empty shares. */
    p->fn = fn;
    p->ctx = ctx;
    p->range = range;
    p->tile = tile;
    for (size_t i = 0; i < p->n; i++) {
        atomic_store_explicit(&p->shares[i].next, ntiles * i / p->n, memory_order_relaxed);
        p->shares[i].end = ntiles * (i + 1) / p->n;
    }
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1); /* even: publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, 0);
    /* the tiles other threads took and are still running */
    for (unsigned spins = 0; atomic_load_explicit(&p->done, memory_order_acquire) != ntiles;
         spins++) {
        if (spins < SPIN_ROUNDS)
            cpu_relax();
        else
            sched_yield();
    }
}

#else /* no threads: a pool of one */

struct ember_threadpool {
    size_t n;
};

ember_status ember_threadpool_create(size_t num_threads, ember_threadpool **out) {
    (void)num_threads;
    if (out == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "threadpool: NULL output");
    *out = ember_platform_alloc(sizeof **out, 16);
    if (*out == NULL) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: no memory");
    (*out)->n = 1;
    return EMBER_OK;
}

void ember_threadpool_destroy(ember_threadpool *p) { ember_platform_free(p); }

size_t ember_threadpool_size(const ember_threadpool *p) {
    (void)p;
    return 1;
}

void ember_parallel_1d(ember_threadpool *p, ember_task_1d fn, void *ctx, size_t range,
                       size_t tile) {
    (void)p;
    if (tile == 0) tile = 1;
    run_tiles(fn, ctx, 0, range, tile, 0, tiles_of(range, tile));
}

#endif
