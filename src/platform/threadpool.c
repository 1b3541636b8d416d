/*
 * The thread pool: pthreads workers that spin briefly, then sleep, between
 * calls.
 *
 * A parallel call publishes its job (function, context, tiles, and how many
 * threads take part) under a generation counter; every thread that takes
 * part, the caller as thread 0, first runs the tiles of its own even share,
 * taking them one at a time with an atomic counter, then takes the tiles
 * other threads have not reached yet through their counters. The caller
 * returns once every tile is done, whether or not every worker took part: on
 * a machine busier than the pool, a worker that is not scheduled in time
 * costs nothing, since the caller takes its tiles.
 *
 * How many threads a call uses is the caller's to say (ember_parallel_1d_on),
 * most often from ember_parallel_threads: one thread per `grain` units of
 * work, so a small node runs on one thread or a few and the rest of the pool
 * stays parked. A worker that a job does not include is not woken for it,
 * and its spin goes on running down. Workers spin on the generation for a
 * while after the last job they took part in (decode runs many short calls
 * back to back), then each sleeps on a condition variable of its own, so a
 * call wakes exactly the workers it needs. A pool with more threads than the
 * CPUs the process may run on does not spin: a spinning worker would hold a
 * core the caller needs.
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
#if defined(__linux__)
#define _GNU_SOURCE /* sched_getaffinity */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
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
#if defined(__linux__)
    /* the CPUs this process may run on (a container or taskset may allow
     * fewer than are online) */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (size_t)CPU_COUNT(&set);
#endif
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
    pthread_cond_t wake;      /* signalled when a job includes this worker */
    bool sleeping;            /* waiting on wake (under the pool's mu) */
    bool wake_ready;          /* wake initialized */
} worker;

struct ember_threadpool {
    size_t n;                 /* threads in all; workers are 1..n-1 */
    worker *workers;          /* n - 1 */
    share *shares;            /* n */
    unsigned spin;            /* rounds a worker spins before it sleeps */
    uint64_t grain;           /* work units per thread (ember_parallel_threads) */
    /* the current job, published before generation is bumped */
    ember_task_1d fn;
    void *ctx;
    size_t range, tile;
    _Atomic size_t job_threads; /* threads 0..job_threads-1 take part */
    _Atomic uint32_t generation; /* odd: a job being written; even: published */
    _Atomic size_t active;    /* workers inside a job (reading it or running tiles) */
    _Atomic size_t done;      /* tiles of the current job finished */
    _Atomic bool stop;
    _Atomic int sleepers;
    pthread_mutex_t mu;
    bool sync_ready;          /* mu initialized */
    size_t started;           /* workers created (for cleanup) */
};

/* Threads worth using for `work` units on a pool of n threads: one per
 * grain, at least one. */
static size_t threads_for(size_t n, uint64_t grain, uint64_t work) {
    uint64_t t = work / (grain != 0 ? grain : 1);
    return t < 1 ? 1 : t < n ? (size_t)t : n;
}

/* Spins before a worker sleeps; about a millisecond on current x86 cores. */
#define SPIN_ROUNDS 20000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Runs thread `self`'s share, then the rest of every other share of the
 * job's `threads`. */
static void work(ember_threadpool *p, size_t self, size_t threads) {
    for (size_t k = 0; k < threads; k++) {
        share *s = &p->shares[(self + k) % threads];
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

/* Waits (spinning, then asleep) for a published job that includes worker w
 * and returns its generation, or returns with *stop set. */
static uint32_t wait_for_job(worker *w, uint32_t *seen, bool *stop) {
    ember_threadpool *p = w->pool;
    for (unsigned spins = 0;;) {
        uint32_t g = atomic_load(&p->generation);
        if ((*stop = atomic_load(&p->stop))) return g;
        if (takeable(g, *seen)) {
            if (w->index < atomic_load(&p->job_threads)) return g;
            *seen = g; /* a job for fewer threads: not this worker's */
            continue;
        }
        if (spins < p->spin) {
            spins++;
            cpu_relax();
            continue;
        }
        pthread_mutex_lock(&p->mu);
        w->sleeping = true;
        atomic_fetch_add(&p->sleepers, 1);
        for (;;) {
            g = atomic_load(&p->generation);
            if (atomic_load(&p->stop)) break;
            if (takeable(g, *seen)) {
                if (w->index < atomic_load(&p->job_threads)) break;
                *seen = g;
            }
            pthread_cond_wait(&w->wake, &p->mu);
        }
        atomic_fetch_sub(&p->sleepers, 1);
        w->sleeping = false;
        pthread_mutex_unlock(&p->mu);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    ember_threadpool *p = w->pool;
    uint32_t seen = 0;
    for (;;) {
        bool stop;
        uint32_t g = wait_for_job(w, &seen, &stop);
        if (stop) return NULL;
        atomic_fetch_add(&p->active, 1);
        /* still the job it saw? (else the caller may be rewriting it) */
        if (atomic_load(&p->generation) == g) {
            seen = g;
            work(p, w->index, atomic_load_explicit(&p->job_threads, memory_order_relaxed));
        }
        atomic_fetch_sub(&p->active, 1);
    }
}

/* The grain from EMBER_PARALLEL_GRAIN (a positive decimal), else the default. */
static uint64_t default_grain(void) {
    const char *env = getenv("EMBER_PARALLEL_GRAIN");
    if (env != NULL && *env != '\0') {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v > 0) return (uint64_t)v;
    }
    return EMBER_PARALLEL_GRAIN;
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
    p->spin = n <= ember_cpu_count() ? SPIN_ROUNDS : 0;
    p->grain = default_grain();
    p->shares = ember_platform_alloc(n * sizeof(share), 64);
    p->workers = n > 1 ? ember_platform_alloc((n - 1) * sizeof(worker), 64) : NULL;
    if (p->shares == NULL || (n > 1 && p->workers == NULL)) {
        ember_threadpool_destroy(p);
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: no memory for %zu threads", n);
    }
    memset(p->shares, 0, n * sizeof(share));
    if (n > 1) memset(p->workers, 0, (n - 1) * sizeof(worker));
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        ember_threadpool_destroy(p);
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "threadpool: cannot make its lock");
    }
    p->sync_ready = true;
    for (size_t i = 1; i < n; i++) {
        worker *w = &p->workers[i - 1];
        w->pool = p;
        w->index = i;
        if (pthread_cond_init(&w->wake, NULL) != 0) {
            ember_threadpool_destroy(p);
            return ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                                   "threadpool: cannot make thread %zu's wake-up", i);
        }
        w->wake_ready = true;
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
        for (size_t i = 0; i < p->started; i++) pthread_cond_signal(&p->workers[i].wake);
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
        pthread_mutex_destroy(&p->mu);
    }
    for (size_t i = 0; p->workers != NULL && i + 1 < p->n; i++)
        if (p->workers[i].wake_ready) pthread_cond_destroy(&p->workers[i].wake);
    ember_platform_free(p->workers);
    ember_platform_free(p->shares);
    ember_platform_free(p);
}

size_t ember_threadpool_size(const ember_threadpool *p) { return p != NULL ? p->n : 1; }

void ember_threadpool_set_grain(ember_threadpool *p, uint64_t grain) {
    if (p != NULL) p->grain = grain != 0 ? grain : default_grain();
}

size_t ember_parallel_threads(const ember_threadpool *p, uint64_t work) {
    return p != NULL ? threads_for(p->n, p->grain, work) : 1;
}

void ember_parallel_1d_on(ember_threadpool *p, size_t threads, ember_task_1d fn, void *ctx,
                          size_t range, size_t tile) {
    if (tile == 0) tile = 1;
    size_t ntiles = tiles_of(range, tile);
    size_t t = p == NULL ? 1 : threads == 0 || threads > p->n ? p->n : threads;
    if (t > ntiles) t = ntiles; /* only as many threads as tiles take part */
    if (t <= 1) {
        run_tiles(fn, ctx, 0, range, tile, 0, ntiles);
        return;
    }
    /* Close the previous job: no worker may enter it from now on, and the
     * ones inside (late to it, finding nothing) leave. */
    atomic_fetch_add(&p->generation, 1); /* odd */
    for (unsigned spins = 0; atomic_load(&p->active) != 0; spins++) {
        if (spins < p->spin)
            cpu_relax();
        else
            sched_yield();
    }
    p->fn = fn;
    p->ctx = ctx;
    p->range = range;
    p->tile = tile;
    for (size_t i = 0; i < t; i++) {
        atomic_store_explicit(&p->shares[i].next, ntiles * i / t, memory_order_relaxed);
        p->shares[i].end = ntiles * (i + 1) / t;
    }
    atomic_store_explicit(&p->job_threads, t, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1); /* even: publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
        /* wake the sleepers this job includes, and only those */
        pthread_mutex_lock(&p->mu);
        for (size_t i = 1; i < t; i++)
            if (p->workers[i - 1].sleeping) pthread_cond_signal(&p->workers[i - 1].wake);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, 0, t);
    /* the tiles other threads took and are still running */
    for (unsigned spins = 0; atomic_load_explicit(&p->done, memory_order_acquire) != ntiles;
         spins++) {
        if (spins < p->spin)
            cpu_relax();
        else
            sched_yield();
    }
}

void ember_parallel_1d(ember_threadpool *p, ember_task_1d fn, void *ctx, size_t range,
                       size_t tile) {
    ember_parallel_1d_on(p, 0, fn, ctx, range, tile);
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

void ember_threadpool_set_grain(ember_threadpool *p, uint64_t grain) {
    (void)p;
    (void)grain;
}

size_t ember_parallel_threads(const ember_threadpool *p, uint64_t work) {
    (void)p;
    (void)work;
    return 1;
}

void ember_parallel_1d_on(ember_threadpool *p, size_t threads, ember_task_1d fn, void *ctx,
                          size_t range, size_t tile) {
    (void)p;
    (void)threads;
    if (tile == 0) tile = 1;
    run_tiles(fn, ctx, 0, range, tile, 0, tiles_of(range, tile));
}

void ember_parallel_1d(ember_threadpool *p, ember_task_1d fn, void *ctx, size_t range,
                       size_t tile) {
    ember_parallel_1d_on(p, 1, fn, ctx, range, tile);
}

#endif
