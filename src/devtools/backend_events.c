/*
 * The backend side of the event tracer: delegates report their own events
 * and intermediate outputs while the executor runs them (backend.h), through
 * a thread-local pointer that is set only around a traced delegate call.
 */
#include "devtools/tracer.h"

#if EMBER_EVENT_TRACER

#define DEBUG_FLAGS (EMBER_TRACE_DEBUG_OUTPUTS | EMBER_TRACE_DEBUG_STATS)

/* The tracer of the delegate call running on this thread (set by the
 * executor around a traced delegate call only), NULL otherwise. */
static EMBER_THREAD_LOCAL ember_event_tracer *g_delegate_tracer;

void ember_trace_delegate_begin(ember_event_tracer *t) {
    g_delegate_tracer = (t->flags & (EMBER_TRACE_PROFILE | DEBUG_FLAGS)) != 0 ? t : NULL;
}

void ember_trace_delegate_end(void) { g_delegate_tracer = NULL; }

bool ember_backend_tracing(void) {
    return g_delegate_tracer != NULL && (g_delegate_tracer->flags & EMBER_TRACE_PROFILE) != 0;
}

bool ember_backend_tracing_outputs(void) {
    return g_delegate_tracer != NULL && (g_delegate_tracer->flags & DEBUG_FLAGS) != 0;
}

/* The format's integer id is 32-bit; -1 means none. */
static int32_t delegate_id(int64_t debug_handle) {
    return debug_handle >= 0 && debug_handle <= INT32_MAX ? (int32_t)debug_handle : -1;
}

ember_status ember_backend_log_event(const char *name, int64_t debug_handle, const char *debug_id,
                                     uint64_t start_ns, uint64_t end_ns, const void *metadata,
                                     size_t metadata_len) {
    if (!ember_backend_tracing()) return EMBER_OK;
    ember_event_tracer *t = g_delegate_tracer;
    ember_trace_profile(t, name, t->chain, t->instruction, delegate_id(debug_handle), debug_id,
                        start_ns, end_ns, metadata, metadata_len);
    return EMBER_OK;
}

ember_status ember_backend_log_output(const char *name, int64_t debug_handle,
                                      const char *debug_id, const ember_tensor *tensor) {
    if (!ember_backend_tracing_outputs()) return EMBER_OK;
    if (tensor == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tensor");
    ember_trace_delegate_value(g_delegate_tracer, name, delegate_id(debug_handle), debug_id,
                               tensor);
    return EMBER_OK;
}

#else

bool ember_backend_tracing(void) { return false; }

bool ember_backend_tracing_outputs(void) { return false; }

ember_status ember_backend_log_event(const char *name, int64_t debug_handle, const char *debug_id,
                                     uint64_t start_ns, uint64_t end_ns, const void *metadata,
                                     size_t metadata_len) {
    (void)name;
    (void)debug_handle;
    (void)debug_id;
    (void)start_ns;
    (void)end_ns;
    (void)metadata;
    (void)metadata_len;
    return EMBER_OK;
}

ember_status ember_backend_log_output(const char *name, int64_t debug_handle,
                                      const char *debug_id, const ember_tensor *tensor) {
    (void)name;
    (void)debug_handle;
    (void)debug_id;
    (void)tensor;
    return EMBER_OK;
}

#endif /* EMBER_EVENT_TRACER */
