/*
 * Default platform for hosted POSIX builds: stderr logging, the monotonic
 * clock, abort(), and the C heap.
 */
#ifndef EMBER_PLATFORM_BAREMETAL

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static void *posix_alloc(void *user, size_t size, size_t align) {
    (void)user;
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) return NULL;
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

#endif /* !EMBER_PLATFORM_BAREMETAL */
