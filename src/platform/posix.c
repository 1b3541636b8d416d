/*
 * Default platform for hosted POSIX builds: stderr logging, the monotonic
 * clock, abort(), and the C heap.
 */
#ifndef EMBER_PLATFORM_BAREMETAL

#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ember/platform.h"

static void posix_log(void *user, ember_log_level level, const char *msg) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    (void)user;
    fprintf(stderr, "ember %s: %s\n", names[level <= EMBER_LOG_ERROR ? level : EMBER_LOG_ERROR], msg);
}

static uint64_t posix_ticks_ns(void *user) {
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void posix_abort(void *user) {
    (void)user;
    abort();
}

/* Blocks this large (packed weights, planned buffers of big models) start on
 * a 2 MiB boundary and ask Linux for transparent huge pages: a decode step
 * streams every weight once, and 4 KiB pages would cost a TLB miss per page. */
#define HUGE_BLOCK ((size_t)8 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static void *posix_alloc(void *user, size_t size, size_t align) {
    (void)user;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_BLOCK && align < HUGE_PAGE) align = HUGE_PAGE;
#endif
    if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_BLOCK) (void)madvise(p, size & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
    return p;
}

static void posix_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

static const ember_platform g_posix = {
    sizeof(ember_platform), NULL, posix_log, posix_ticks_ns, posix_abort, posix_alloc, posix_free,
};

const ember_platform *ember_platform_default(void) { return &g_posix; }

#else
/* ISO C forbids an empty translation unit. */
typedef int ember_posix_unused;
#endif /* !EMBER_PLATFORM_BAREMETAL */
