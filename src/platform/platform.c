/*
 * The installed platform table and the helpers that call through it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

static const ember_platform *g_platform;

void ember_platform_set(const ember_platform *platform) { g_platform = platform; }

const ember_platform *ember_platform_get(void) {
    return g_platform != NULL ? g_platform : ember_platform_default();
}

void ember_log(ember_log_level level, const char *fmt, ...) {
    const ember_platform *p = ember_platform_get();
    if (p->log == NULL) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    p->log(p->user, level, line);
}

uint64_t ember_ticks_ns(void) {
    const ember_platform *p = ember_platform_get();
    return p->ticks_ns != NULL ? p->ticks_ns(p->user) : 0;
}

void *ember_platform_alloc(size_t size, size_t align) {
    const ember_platform *p = ember_platform_get();
    return p->alloc != NULL ? p->alloc(p->user, size, align) : NULL;
}

void ember_platform_free(void *ptr) {
    const ember_platform *p = ember_platform_get();
    if (ptr != NULL && p->free != NULL) p->free(p->user, ptr);
}
