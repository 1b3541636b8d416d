/*
 * Status names and the per-thread last error message.
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static EMBER_THREAD_LOCAL char g_message[EMBER_ERROR_MESSAGE_SIZE];
/* Debug handle of the node a delegate named when it failed; -1: none. */
static EMBER_THREAD_LOCAL int64_t g_debug_handle = -1;

const char *ember_status_str(ember_status status) {
    switch (status) {
    case EMBER_OK: return "ok";
    case EMBER_ERR_INVALID_ARGUMENT: return "invalid argument";
    case EMBER_ERR_INVALID_STATE: return "invalid state";
    case EMBER_ERR_NOT_FOUND: return "not found";
    case EMBER_ERR_INDEX_OUT_OF_RANGE: return "index out of range";
    case EMBER_ERR_TYPE_MISMATCH: return "type mismatch";
    case EMBER_ERR_SHAPE_MISMATCH: return "shape mismatch";
    case EMBER_ERR_INVALID_PROGRAM: return "invalid program";
    case EMBER_ERR_TRUNCATED: return "truncated program";
    case EMBER_ERR_BAD_IDENTIFIER: return "not a program (bad identifier)";
    case EMBER_ERR_NOT_SUPPORTED: return "not supported";
    case EMBER_ERR_OPERATOR_MISSING: return "operator missing";
    case EMBER_ERR_BACKEND_MISSING: return "backend missing";
    case EMBER_ERR_OUT_OF_MEMORY: return "out of memory";
    case EMBER_ERR_IO: return "i/o error";
    case EMBER_ERR_TABLE_FULL: return "registry table full";
    case EMBER_ERR_KERNEL_FAILED: return "kernel failed";
    case EMBER_ERR_DELEGATE_FAILED: return "delegate failed";
    case EMBER_ERR_DATA_OUT_OF_BOUNDS: return "data-dependent index out of bounds";
    case EMBER_ERR_LOOP_LIMIT: return "loop limit exceeded";
    case EMBER_ERR_OUTPUT_MISMATCH: return "outputs differ from the expected ones";
    }
    return "unknown status";
}

const char *ember_last_error(void) { return g_message; }

int64_t ember_last_error_debug_handle(void) { return g_debug_handle; }

void ember_clear_error(void) {
    g_message[0] = '\0';
    g_debug_handle = -1;
}

ember_status ember_set_error_v(ember_status status, const char *fmt, va_list ap) {
    vsnprintf(g_message, sizeof g_message, fmt, ap);
    g_debug_handle = -1;
    return status;
}

ember_status ember_set_error(ember_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

ember_status ember_invalid_program(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(EMBER_ERR_INVALID_PROGRAM, fmt, ap);
    va_end(ap);
    return EMBER_ERR_INVALID_PROGRAM;
}

/* Writes "prefix: detail" into the message buffer, truncating as needed. */
static void set_joined(const char *prefix, const char *detail) {
    size_t cap = sizeof g_message - 1;
    size_t np = strlen(prefix);
    if (np > cap) np = cap;
    size_t nd = strlen(detail);
    if (nd > cap - np) nd = cap - np;
    char out[EMBER_ERROR_MESSAGE_SIZE];
    memcpy(out, prefix, np);
    memcpy(out + np, detail, nd);
    out[np + nd] = '\0';
    memcpy(g_message, out, np + nd + 1);
}

void ember_error_prefix(const char *fmt, ...) {
    char prefix[EMBER_ERROR_MESSAGE_SIZE];
    char old[EMBER_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix - 2, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof prefix - 3) n = (int)(sizeof prefix - 3);
    memcpy(prefix + n, ": ", 3);
    memcpy(old, g_message, sizeof old);
    set_joined(prefix, old);
}

ember_status ember_kernel_fail(ember_kernel_ctx *ctx, ember_status status, const char *fmt, ...) {
    /* The method prefixes the instruction and operator when it reports. */
    va_list ap;
    (void)ctx;
    va_start(ap, fmt);
    ember_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

ember_status ember_error_set(ember_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

ember_status ember_backend_fail(ember_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

ember_status ember_backend_bad_payload(const char *backend, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(EMBER_ERR_INVALID_PROGRAM, fmt, ap);
    va_end(ap);
    ember_error_prefix("%s payload", backend);
    return EMBER_ERR_INVALID_PROGRAM;
}

ember_status ember_backend_fail_at(ember_status status, int64_t debug_handle, const char *fmt,
                                   ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(status, fmt, ap);
    va_end(ap);
    g_debug_handle = debug_handle >= 0 ? debug_handle : -1;
    return status;
}
