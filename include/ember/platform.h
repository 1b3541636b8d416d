/*
 * ember/platform.h — the platform layer, for porters.
 *
 * The runtime reaches the outside world only through this table: logging,
 * a monotonic clock, abort, and (optionally) a heap. Install one with
 * ember_platform_set(); NULL selects the built-in default (POSIX on hosted
 * builds, a silent no-heap table on bare metal, chosen at build time with
 * EMBER_PLATFORM_BAREMETAL).
 */
#ifndef EMBER_PLATFORM_H
#define EMBER_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Severity of a log line. */
typedef enum ember_log_level {
    EMBER_LOG_DEBUG = 0,
    EMBER_LOG_INFO = 1,
    EMBER_LOG_WARNING = 2,
    EMBER_LOG_ERROR = 3
} ember_log_level;

/**
 * The platform table. Fill in struct_size = sizeof(ember_platform) so the
 * table can grow; any function pointer may be NULL, meaning "not available"
 * (for alloc/free: the runtime then needs caller-supplied memory).
 */
typedef struct ember_platform {
    size_t struct_size;
    /** Passed back to every function below. */
    void *user;
    /** Writes one log line (no trailing newline in msg). */
    void (*log)(void *user, ember_log_level level, const char *msg);
    /** Monotonic time in nanoseconds. */
    uint64_t (*ticks_ns)(void *user);
    /** Called only on broken internal invariants, never on bad input. */
    void (*abort)(void *user);
    /** Returns size bytes aligned to align (a power of two), or NULL. */
    void *(*alloc)(void *user, size_t size, size_t align);
    /** Releases memory from alloc; ptr may be NULL. */
    void (*free)(void *user, void *ptr);
} ember_platform;

/**
 * Installs the platform table used by the whole library.
 * @param[in] platform  table to use, or NULL for the built-in default; the
 *                      table must stay valid until the next call.
 * Not thread-safe: call it once at start-up, before loading programs.
 */
void ember_platform_set(const ember_platform *platform);

/** Returns the table in use (never NULL). */
const ember_platform *ember_platform_get(void);

/** The built-in default table for this build. */
const ember_platform *ember_platform_default(void);

/** Logs through the platform table with printf-style formatting. */
void ember_log(ember_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Monotonic nanoseconds from the platform table (0 if it has no clock). */
uint64_t ember_ticks_ns(void);

/** Allocates from the platform heap; NULL if there is none or it is full. */
void *ember_platform_alloc(size_t size, size_t align);

/** Frees memory from ember_platform_alloc(); ptr may be NULL. */
void ember_platform_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_PLATFORM_H */
