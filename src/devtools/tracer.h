/*
 * The event tracer's state and records, shared by the recorder
 * (event_tracer.c) and the ETDump writer (etdump.c), and the hooks the
 * executor and backends call. Not installed.
 *
 * Layout of the caller's buffer:
 *
 *     [ state | records ->            free            <- pool ]
 *
 * Records are fixed-size and grow from the front; names, metadata and
 * tensor descriptors go into a pool that grows down from the end. An event
 * takes its pool bytes and its record together or not at all.
 */
#ifndef EMBER_DEVTOOLS_TRACER_H
#define EMBER_DEVTOOLS_TRACER_H

#include "core/internal.h"
#include "ember/devtools.h"

#if EMBER_EVENT_TRACER

enum {
    REC_RUN = 1,     /* starts a run: name, a = bundled input index */
    REC_PROFILE = 2, /* name, chain, instruction, delegate ids, metadata, a..b times */
    REC_ALLOC = 3,   /* a = allocator id, b = bytes */
    REC_DEBUG = 4    /* name, chain, instruction, vtype; a = value (see below) */
};

/* ETDump ValueType codes. */
enum { VT_NULL = 0, VT_INT = 1, VT_BOOL = 2, VT_FLOAT = 3, VT_DOUBLE = 4, VT_TENSOR = 5,
       VT_TENSOR_LIST = 6, VT_STRING = 7 };

/* The allocators a trace names (RunData.allocators, by id). */
enum { TRACE_ALLOC_METHOD = 0, TRACE_ALLOC_PLANNED = 1, TRACE_NUM_ALLOCATORS = 2 };

/* One event. Pool references are offsets from the tracer's buffer start,
 * 0 meaning none. For REC_DEBUG, a holds the Int/Bool value, the bits of the
 * Double, or (Tensor, TensorList) the pool reference of a tensor block:
 *     u32 count, u32 0, then count times
 *     { u8 dtype, u8 dim, u8 0 x 6, u64 data offset, i64 sizes[dim], i64 strides[dim] } */
typedef struct trace_rec {
    uint8_t kind;
    uint8_t vtype;
    uint8_t output;      /* debug: a method output */
    uint8_t ended;       /* profile: end time recorded */
    int32_t chain;
    int32_t instruction;
    int32_t delegate_int;
    uint32_t name;
    uint32_t delegate_str;
    uint32_t meta;
    uint32_t meta_len;
    uint64_t a, b;
} trace_rec;

#define TRACE_NAME_CACHE 32
#define TRACE_MAGIC 0x45545243u /* "ETRC" */

struct ember_event_tracer {
    uint32_t magic;
    uint32_t flags;
    uint8_t *base;        /* the caller's buffer */
    size_t size;
    size_t recs;          /* offset of record 0 */
    size_t num_recs;
    size_t pool;          /* offset of the pool's lowest byte */
    size_t dropped;
    size_t runs;
    uint8_t *dbg;         /* debug buffer */
    size_t dbg_size, dbg_used;
    int32_t bundled;
    int32_t chain, instruction; /* the instruction running now (for delegates) */
    struct { const char *ptr; uint32_t ref; } cache[TRACE_NAME_CACHE];
};

static inline trace_rec *trace_rec_at(const ember_event_tracer *t, size_t i) {
    return (trace_rec *)(void *)(t->base + t->recs + i * sizeof(trace_rec));
}

/* Hooks for the executor and backends. They never fail: a full buffer drops
 * the event and counts it. */
void ember_trace_begin_run(ember_event_tracer *t, const char *prefix, const char *name);
uint32_t ember_trace_start(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr);
void ember_trace_end(ember_event_tracer *t, uint32_t token);
void ember_trace_profile(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr,
                         int32_t delegate_int, const char *delegate_str, uint64_t start,
                         uint64_t end, const void *meta, size_t meta_len);
void ember_trace_value(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr,
                       const ember_value *v, bool output);
/* A tensor a delegate made, under the running delegate call's instruction. */
void ember_trace_delegate_value(ember_event_tracer *t, const char *name, int32_t delegate_int,
                                const char *delegate_str, const ember_tensor *tensor);
void ember_trace_alloc(ember_event_tracer *t, int32_t allocator, uint64_t bytes);
/* Around a delegate call: lets the backend's ember_backend_log_event() and
 * ember_backend_log_output() in. */
void ember_trace_delegate_begin(ember_event_tracer *t);
void ember_trace_delegate_end(void);

#endif /* EMBER_EVENT_TRACER */

#endif /* EMBER_DEVTOOLS_TRACER_H */
