/*
 * ember/config.h — compile-time limits of the runtime.
 *
 * Every limit can be overridden with -D on the compiler command line. They
 * bound the fixed-size tables the runtime keeps (it never calls malloc), and
 * the checks that untrusted programs must pass at load.
 */
#ifndef EMBER_CONFIG_H
#define EMBER_CONFIG_H

/** Largest tensor rank a program may declare. */
#ifndef EMBER_MAX_DIM
#define EMBER_MAX_DIM 16
#endif

/** How many kernel tables may be registered at once. */
#ifndef EMBER_MAX_KERNEL_TABLES
#define EMBER_MAX_KERNEL_TABLES 32
#endif

/** How many backends may be registered at once. */
#ifndef EMBER_MAX_BACKENDS
#define EMBER_MAX_BACKENDS 16
#endif

/** Bytes kept for the last error message (including the terminating NUL). */
#ifndef EMBER_ERROR_MESSAGE_SIZE
#define EMBER_ERROR_MESSAGE_SIZE 512
#endif

/**
 * Backward jumps one execute may take before it gives up. Loops emitted for
 * `map` jump backwards once per iteration; a corrupt program could loop
 * forever, and this bound turns that into an error.
 */
#ifndef EMBER_MAX_BACKWARD_JUMPS
#define EMBER_MAX_BACKWARD_JUMPS 1000000
#endif

/** Largest name (operator key, backend id) the runtime compares, in bytes. */
#ifndef EMBER_MAX_NAME
#define EMBER_MAX_NAME 256
#endif

/**
 * The event tracer (ember/devtools.h): 1 builds it in, 0 leaves it out of
 * the runtime entirely (methods then carry no tracer pointer and the
 * devtools functions return EMBER_ERR_NOT_SUPPORTED). CMake option
 * EMBER_EVENT_TRACER.
 */
#ifndef EMBER_EVENT_TRACER
#define EMBER_EVENT_TRACER 1
#endif

/**
 * Thread-local storage for the last error message. Define EMBER_NO_TLS on
 * targets without it: the message then lives in one global buffer.
 */
#if !defined(EMBER_NO_TLS) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define EMBER_THREAD_LOCAL _Thread_local
#else
#define EMBER_THREAD_LOCAL
#endif

#endif /* EMBER_CONFIG_H */
