/*
 * test_threadpool.c — ember_parallel_1d runs every item exactly once.
 *
 * For pools of 1 to 5 threads (and none), ranges from 0 to a few thousand
 * and tiles from 1 to larger than the range: each item is counted by the
 * task, and must end with count 1; the pieces handed out never overlap the
 * range's end and are at most a tile long. Uneven work (some tiles slow)
 * checks that threads take tiles left over by others. Thread ids stay below
 * the pool size. Many back-to-back calls check the spin/sleep hand-over,
 * and pools are created and destroyed repeatedly.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "ember/threadpool.h"

#define MAX_RANGE 5000

typedef struct job {
    _Atomic int counts[MAX_RANGE];
    size_t range, tile, threads;
    _Atomic int bad_piece;
    _Atomic int bad_thread;
    _Atomic int used[64];
    bool slow_first; /* the first tiles take longer */
} job;

static void count_task(void *ctx, size_t thread, size_t start, size_t count) {
    job *j = ctx;
    if (count == 0 || count > j->tile || start + count > j->range || start % j->tile != 0)
        atomic_fetch_add(&j->bad_piece, 1);
    if (thread >= j->threads) atomic_fetch_add(&j->bad_thread, 1);
    else if (thread < 64) atomic_store(&j->used[thread], 1);
    if (j->slow_first && start < j->range / 4) {
        /* 1 ms a tile: 100 ms of them, long enough that a loaded machine
         * schedules every worker before the caller could finish them alone */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = start; i < start + count && i < MAX_RANGE; i++)
        atomic_fetch_add(&j->counts[i], 1);
}

/* Runs a job on at most `limit` threads (0: all) and checks it. */
static bool run_job_on(ember_threadpool *pool, size_t limit, job *j, size_t range, size_t tile,
                       bool slow) {
    memset(j, 0, sizeof *j);
    j->range = range;
    j->tile = tile == 0 ? 1 : tile;
    size_t size = ember_threadpool_size(pool);
    j->threads = limit == 0 || limit > size ? size : limit;
    j->slow_first = slow;
    if (limit == 0)
        ember_parallel_1d(pool, count_task, j, range, tile);
    else
        ember_parallel_1d_on(pool, limit, count_task, j, range, tile);
    bool ok = atomic_load(&j->bad_piece) == 0 && atomic_load(&j->bad_thread) == 0;
    for (size_t i = 0; i < range; i++) ok = ok && atomic_load(&j->counts[i]) == 1;
    return ok;
}

static bool run_job(ember_threadpool *pool, job *j, size_t range, size_t tile, bool slow) {
    return run_job_on(pool, 0, j, range, tile, slow);
}

static job g_job;

static void test_every_item_once(void) {
    check_section("every item once, any pool, range and tile");
    static const size_t ranges[] = {0, 1, 2, 3, 7, 64, 100, 1000, 4999};
    static const size_t tiles[] = {0, 1, 2, 3, 16, 64, 1000, 10000};
    ember_threadpool *pools[6] = {NULL};
    for (size_t n = 1; n <= 5; n++) CHECK_OK(ember_threadpool_create(n, &pools[n]));
    for (size_t p = 0; p <= 5; p++) {
        if (p > 0) CHECK_EQ_INT(ember_threadpool_size(pools[p]), p);
        int failures = 0;
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++)
            for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
                if (!run_job(pools[p], &g_job, ranges[r], tiles[t], false)) failures++;
        CHECK_MSG(failures == 0, "pool of %zu: %d range/tile cases wrong", p, failures);
    }
    CHECK_EQ_INT(ember_threadpool_size(NULL), 1);
    for (size_t n = 1; n <= 5; n++) ember_threadpool_destroy(pools[n]);
}

static void test_uneven_work_is_shared(void) {
    check_section("slow tiles: the others take what is left");
    ember_threadpool *pool;
    if (!CHECK_OK(ember_threadpool_create(3, &pool))) return;
    CHECK(run_job(pool, &g_job, 400, 1, true));
    /* the caller and both workers took part (each has a share of its own) */
    CHECK(atomic_load(&g_job.used[0]) && atomic_load(&g_job.used[1]) &&
          atomic_load(&g_job.used[2]));
    ember_threadpool_destroy(pool);
}

static void test_many_calls_and_sleeps(void) {
    check_section("back-to-back calls, and calls after the workers slept");
    ember_threadpool *pool;
    if (!CHECK_OK(ember_threadpool_create(4, &pool))) return;
    int failures = 0;
    for (int i = 0; i < 2000; i++)
        if (!run_job(pool, &g_job, 37 + (size_t)i % 50, 3, false)) failures++;
    CHECK_MSG(failures == 0, "%d of 2000 quick calls wrong", failures);
    struct timespec ts = {0, 20 * 1000 * 1000}; /* long enough for workers to sleep */
    for (int i = 0; i < 5; i++) {
        nanosleep(&ts, NULL);
        CHECK(run_job(pool, &g_job, 1000, 7, false));
    }
    ember_threadpool_destroy(pool);
}

static void test_create_destroy(void) {
    check_section("create and destroy, default size");
    for (int i = 0; i < 50; i++) {
        ember_threadpool *pool;
        if (!CHECK_OK(ember_threadpool_create((size_t)(i % 4) + 1, &pool))) return;
        if (i % 2) CHECK(run_job(pool, &g_job, 10, 1, false));
        ember_threadpool_destroy(pool);
    }
    ember_threadpool *pool;
    if (CHECK_OK(ember_threadpool_create(0, &pool))) {
        CHECK_EQ_INT(ember_threadpool_size(pool), ember_cpu_count());
        ember_threadpool_destroy(pool);
    }
    CHECK(ember_cpu_count() >= 1);
    CHECK_STATUS(ember_threadpool_create(2, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_threadpool_destroy(NULL);
}

static void test_limited_calls(void) {
    check_section("calls on fewer threads than the pool has");
    ember_threadpool *pool;
    if (!CHECK_OK(ember_threadpool_create(5, &pool))) return;
    int failures = 0;
    for (int i = 0; i < 3000; i++) {
        /* every limit, 0 (all) and past the pool's size, interleaved with
         * calls on every thread so that workers left out have just run */
        size_t limit = (size_t)i % 8;
        if (!run_job_on(pool, limit, &g_job, 50 + (size_t)i % 300, 1 + (size_t)i % 5, false))
            failures++;
    }
    CHECK_MSG(failures == 0, "%d of 3000 limited calls wrong", failures);
    /* slow tiles on 2 threads of 5: both take part, the others never do */
    CHECK(run_job_on(pool, 2, &g_job, 400, 1, true));
    CHECK(atomic_load(&g_job.used[0]) && atomic_load(&g_job.used[1]));
    CHECK(!atomic_load(&g_job.used[2]) && !atomic_load(&g_job.used[3]) &&
          !atomic_load(&g_job.used[4]));
    /* after the workers slept: a limited call wakes only its own */
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (size_t limit = 1; limit <= 5; limit++) {
        nanosleep(&ts, NULL);
        CHECK(run_job_on(pool, limit, &g_job, 1000, 3, false));
    }
    ember_threadpool_destroy(pool);
}

static void test_threads_for_work(void) {
    check_section("threads for an amount of work");
    ember_threadpool *pool;
    if (!CHECK_OK(ember_threadpool_create(4, &pool))) return;
    const uint64_t g = EMBER_PARALLEL_GRAIN;
    ember_threadpool_set_grain(pool, g); /* whatever the environment says */
    CHECK_EQ_INT(ember_parallel_threads(pool, 0), 1);
    CHECK_EQ_INT(ember_parallel_threads(pool, g - 1), 1);
    CHECK_EQ_INT(ember_parallel_threads(pool, 2 * g - 1), 1);
    CHECK_EQ_INT(ember_parallel_threads(pool, 2 * g), 2);
    CHECK_EQ_INT(ember_parallel_threads(pool, 3 * g), 3);
    CHECK_EQ_INT(ember_parallel_threads(pool, 1000 * g), 4);
    CHECK_EQ_INT(ember_parallel_threads(pool, UINT64_MAX), 4);
    CHECK_EQ_INT(ember_parallel_threads(NULL, UINT64_MAX), 1);
    ember_threadpool_set_grain(pool, 1);
    CHECK_EQ_INT(ember_parallel_threads(pool, 0), 1);
    CHECK_EQ_INT(ember_parallel_threads(pool, 3), 3);
    CHECK_EQ_INT(ember_parallel_threads(pool, 4), 4);
    ember_threadpool_set_grain(pool, 100);
    CHECK_EQ_INT(ember_parallel_threads(pool, 250), 2);
    ember_threadpool_set_grain(NULL, 5); /* no-op */
    ember_threadpool_destroy(pool);
}

static void test_more_threads_than_cpus(void) {
    check_section("a pool of 16 threads, whatever the machine has");
    ember_threadpool *pool;
    if (!CHECK_OK(ember_threadpool_create(16, &pool))) return;
    CHECK_EQ_INT(ember_threadpool_size(pool), 16);
    int failures = 0;
    for (int i = 0; i < 300; i++)
        if (!run_job_on(pool, (size_t)i % 17, &g_job, 16 + (size_t)i * 7 % 900, 1, false))
            failures++;
    CHECK_MSG(failures == 0, "%d of 300 calls wrong", failures);
    ember_threadpool_destroy(pool);
}

int main(void) {
    test_every_item_once();
    test_uneven_work_is_shared();
    test_many_calls_and_sleeps();
    test_create_destroy();
    test_limited_calls();
    test_threads_for_work();
    test_more_threads_than_cpus();
    return check_finish();
}
