/*
 * The backend side of the event tracer: delegates report their own events
 * while the executor runs them (backend.h), through a thread-local pointer
 * that is set only around a traced delegate call.
 */
#include "devtools/tracer.h"

#if EMBER_EVENT_TRACER

/* The tracer of the delegate call running on this thread (set by the
 * executor around a traced delegate call only), NULL otherwise. */
static EMBER_THREAD_LOCAL ember_event_tracer *g_delegate_tracer;

void ember_trace_delegate_begin(ember_event_tracer *t) {
    g_delegate_tracer = (t->flags & EMBER_TRACE_PROFILE) != 0 ? t : NULL;
}

void ember_trace_delegate_end(void) { g_delegate_tracer = NULL; }

bool ember_backend_tracing(void) { return g_delegate_tracer != NULL; }

ember_status ember_backend_log_event(const char *name, int64_t debug_handle, const char *debug_id,
                                     uint64_t start_ns, uint64_t end_ns, const void *metadata,
                                     size_t metadata_len) {
    ember_event_tracer *t = g_delegate_tracer;
    if (t == NULL) return EMBER_OK;
    /* The format's integer id is 32-bit; -1 means none. */
    int32_t id = debug_handle >= 0 && debug_handle <= INT32_MAX ? (int32_t)debug_handle : -1;
    ember_trace_profile(t, name, t->chain, t->instruction, id, debug_id, start_ns, end_ns,
                        metadata, metadata_len);
    return EMBER_OK;
}

#else

bool ember_backend_tracing(void) { return false; }

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

#endif /* EMBER_EVENT_TRACER */
