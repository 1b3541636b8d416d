/*
 * The event tracer: records events into the caller's buffer (tracer.h has
 * the layout). Every recording function is all-or-nothing and bounded; a
 * full buffer drops the event and counts it.
 */
#include <math.h>
#include <string.h>

#include "devtools/tracer.h"

#if EMBER_EVENT_TRACER

#define KNOWN_FLAGS                                                                               \
    (EMBER_TRACE_PROFILE | EMBER_TRACE_ALLOCATIONS | EMBER_TRACE_DEBUG_OUTPUTS |                  \
     EMBER_TRACE_DEBUG_STATS | EMBER_TRACE_PROGRAM_OUTPUTS)

/* Tensor data in the debug buffer starts on this boundary. */
#define DEBUG_ALIGN 64

_Static_assert(sizeof(struct ember_event_tracer) + 2 * _Alignof(struct ember_event_tracer) +
                       sizeof(trace_rec) <= EMBER_EVENT_TRACER_MIN_SIZE,
               "EMBER_EVENT_TRACER_MIN_SIZE is too small for the tracer's state");

static bool valid(const ember_event_tracer *t) { return t != NULL && t->magic == TRACE_MAGIC; }

ember_status ember_event_tracer_init(void *buf, size_t size, uint32_t flags,
                                     ember_event_tracer **out) {
    if (out == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL output");
    *out = NULL;
    if (buf == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tracer buffer");
    if ((flags & ~(uint32_t)KNOWN_FLAGS) != 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "unknown tracer flags 0x%x",
                               (unsigned)(flags & ~(uint32_t)KNOWN_FLAGS));
    if (size < EMBER_EVENT_TRACER_MIN_SIZE)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                               "tracer buffer of %zu bytes: at least %u needed", size,
                               EMBER_EVENT_TRACER_MIN_SIZE);
    /* Pool references are 32-bit offsets. */
    if (size > UINT32_MAX) size = UINT32_MAX;
    uintptr_t p = (uintptr_t)buf;
    size_t align = _Alignof(struct ember_event_tracer);
    size_t skip = (size_t)((align - (p & (align - 1))) & (align - 1));
    ember_event_tracer *t = (ember_event_tracer *)(void *)((uint8_t *)buf + skip);
    memset(t, 0, sizeof *t);
    t->magic = TRACE_MAGIC;
    t->flags = flags;
    /* Offsets count from the tracer's (aligned) start, so that records and
     * tensor blocks keep their alignment. */
    t->base = (uint8_t *)t;
    t->size = size - skip;
    size_t recs = sizeof *t;
    t->recs = (recs + _Alignof(trace_rec) - 1) & ~(_Alignof(trace_rec) - 1);
    t->pool = t->size;
    t->bundled = -1;
    t->chain = -1;
    t->instruction = -1;
    *out = t;
    return EMBER_OK;
}

ember_status ember_event_tracer_set_debug_buffer(ember_event_tracer *t, void *buf, size_t size) {
    if (!valid(t)) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tracer");
    if (buf == NULL && size > 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL debug buffer of %zu bytes", size);
    if (t->dbg_used > 0)
        return ember_set_error(EMBER_ERR_INVALID_STATE,
                               "the tracer already holds %zu bytes of debug data", t->dbg_used);
    t->dbg = buf;
    t->dbg_size = size;
    return EMBER_OK;
}

ember_status ember_event_tracer_debug_data(const ember_event_tracer *t, const void **data,
                                           size_t *size) {
    if (!valid(t) || data == NULL || size == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    *data = t->dbg;
    *size = t->dbg_used;
    return EMBER_OK;
}

ember_status ember_event_tracer_set_bundled_input(ember_event_tracer *t, int32_t index) {
    if (!valid(t)) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tracer");
    t->bundled = index < 0 ? -1 : index;
    return EMBER_OK;
}

ember_status ember_event_tracer_get_stats(const ember_event_tracer *t,
                                          ember_event_tracer_stats *s) {
    if (!valid(t) || s == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    s->events = t->num_recs - t->runs;
    s->dropped = t->dropped;
    s->runs = t->runs;
    s->bytes_total = t->size;
    s->bytes_used = t->recs + t->num_recs * sizeof(trace_rec) + (t->size - t->pool);
    s->debug_used = t->dbg_used;
    return EMBER_OK;
}

ember_status ember_event_tracer_status(const ember_event_tracer *t) {
    if (!valid(t)) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tracer");
    if (t->dropped > 0)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                               "event tracer: %zu event%s dropped (tracer buffer of %zu bytes or "
                               "debug buffer of %zu bytes full)",
                               t->dropped, t->dropped == 1 ? "" : "s", t->size, t->dbg_size);
    return EMBER_OK;
}

void ember_event_tracer_reset(ember_event_tracer *t) {
    if (!valid(t)) return;
    t->num_recs = 0;
    t->pool = t->size;
    t->dropped = 0;
    t->runs = 0;
    t->dbg_used = 0;
    memset(t->cache, 0, sizeof t->cache);
}

ember_status ember_event_tracer_time_scale(const ember_event_tracer *t, uint64_t *num,
                                           uint64_t *den) {
    if (!valid(t) || num == NULL || den == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    *num = 1;
    *den = 1;
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Recording                                                              */
/* ---------------------------------------------------------------------- */

/* What an event has taken so far, to give back if it does not fit whole. */
typedef struct txn {
    size_t num_recs, pool, dbg_used;
} txn;

static void txn_begin(const ember_event_tracer *t, txn *x) {
    x->num_recs = t->num_recs;
    x->pool = t->pool;
    x->dbg_used = t->dbg_used;
}

static void txn_abort(ember_event_tracer *t, const txn *x) {
    t->num_recs = x->num_recs;
    t->pool = x->pool;
    t->dbg_used = x->dbg_used;
    /* Names interned by this event are gone with its pool bytes. */
    for (size_t k = 0; k < TRACE_NAME_CACHE; k++)
        if (t->cache[k].ref != 0 && t->cache[k].ref < x->pool) t->cache[k].ptr = NULL;
    t->dropped++;
}

/* A new zeroed record, or NULL when the records would reach the pool. */
static trace_rec *rec_new(ember_event_tracer *t, uint8_t kind) {
    size_t end = t->recs + (t->num_recs + 1) * sizeof(trace_rec);
    if (end > t->pool) return NULL;
    trace_rec *r = trace_rec_at(t, t->num_recs++);
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->chain = -1;
    r->instruction = -1;
    r->delegate_int = -1;
    return r;
}

/* n bytes from the pool aligned to align; 0 when they do not fit. */
static uint32_t pool_take(ember_event_tracer *t, size_t n, size_t align) {
    size_t floor = t->recs + t->num_recs * sizeof(trace_rec);
    if (n > t->pool) return 0;
    size_t at = (t->pool - n) & ~(align - 1);
    if (at < floor || at == 0) return 0;
    t->pool = at;
    return (uint32_t)at;
}

/* Copies prefix + s into the pool (NUL-terminated), reusing the copy of a
 * recently seen pointer with the same text. 0 when full. */
static uint32_t intern2(ember_event_tracer *t, const char *prefix, const char *s) {
    size_t h = (size_t)(((uintptr_t)s >> 3) % TRACE_NAME_CACHE);
    if (prefix == NULL && t->cache[h].ptr == s &&
        strcmp((const char *)t->base + t->cache[h].ref, s) == 0)
        return t->cache[h].ref;
    size_t lp = prefix != NULL ? strlen(prefix) : 0, ls = strlen(s);
    if (ls > t->size || lp > t->size) return 0;
    uint32_t at = pool_take(t, lp + ls + 1, 1);
    if (at == 0) return 0;
    if (lp > 0) memcpy(t->base + at, prefix, lp);
    memcpy(t->base + at + lp, s, ls + 1);
    if (prefix == NULL) {
        t->cache[h].ptr = s;
        t->cache[h].ref = at;
    }
    return at;
}

static uint32_t intern(ember_event_tracer *t, const char *s) { return intern2(t, NULL, s); }

void ember_trace_begin_run(ember_event_tracer *t, const char *prefix, const char *name) {
    txn x;
    txn_begin(t, &x);
    trace_rec *r = rec_new(t, REC_RUN);
    if (r == NULL || (r->name = intern2(t, prefix, name)) == 0) {
        txn_abort(t, &x);
        return;
    }
    r->a = (uint64_t)(int64_t)t->bundled;
    t->runs++;
}

uint32_t ember_trace_start(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr) {
    txn x;
    txn_begin(t, &x);
    trace_rec *r = rec_new(t, REC_PROFILE);
    if (r == NULL || (r->name = intern(t, name)) == 0) {
        txn_abort(t, &x);
        return 0;
    }
    r->chain = chain;
    r->instruction = instr;
    r->a = ember_ticks_ns();
    return (uint32_t)t->num_recs; /* record index + 1 */
}

void ember_trace_end(ember_event_tracer *t, uint32_t token) {
    if (token == 0 || token > t->num_recs) return;
    trace_rec *r = trace_rec_at(t, token - 1);
    if (r->kind != REC_PROFILE || r->ended) return;
    r->b = ember_ticks_ns();
    r->ended = 1;
}

void ember_trace_profile(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr,
                         int32_t delegate_int, const char *delegate_str, uint64_t start,
                         uint64_t end, const void *meta, size_t meta_len) {
    txn x;
    txn_begin(t, &x);
    trace_rec *r = rec_new(t, REC_PROFILE);
    if (r == NULL) goto full;
    if (name != NULL && (r->name = intern(t, name)) == 0) goto full;
    if (delegate_str != NULL && (r->delegate_str = intern(t, delegate_str)) == 0) goto full;
    if (meta != NULL && meta_len > 0) {
        if (meta_len > UINT32_MAX || (r->meta = pool_take(t, meta_len, 1)) == 0) goto full;
        memcpy(t->base + r->meta, meta, meta_len);
        r->meta_len = (uint32_t)meta_len;
    }
    r->chain = chain;
    r->instruction = instr;
    r->delegate_int = delegate_int;
    r->a = start;
    r->b = end;
    r->ended = 1;
    return;
full:
    txn_abort(t, &x);
}

void ember_trace_alloc(ember_event_tracer *t, int32_t allocator, uint64_t bytes) {
    txn x;
    txn_begin(t, &x);
    trace_rec *r = rec_new(t, REC_ALLOC);
    if (r == NULL) {
        txn_abort(t, &x);
        return;
    }
    r->a = (uint64_t)(int64_t)allocator;
    r->b = bytes;
}

/* ---------------------------------------------------------------------- */
/* Values                                                                 */
/* ---------------------------------------------------------------------- */

/* Element i of a tensor as a double; false for dtypes without one. */
static bool element(const void *data, int dtype, int64_t i, double *out) {
    switch (dtype) {
    case EMBER_FLOAT32: *out = ((const float *)data)[i]; return true;
    case EMBER_FLOAT64: *out = ((const double *)data)[i]; return true;
    case EMBER_INT8: *out = ((const int8_t *)data)[i]; return true;
    case EMBER_UINT8: case EMBER_BOOL: *out = ((const uint8_t *)data)[i]; return true;
    case EMBER_INT16: *out = ((const int16_t *)data)[i]; return true;
    case EMBER_INT32: *out = ((const int32_t *)data)[i]; return true;
    case EMBER_INT64: *out = (double)((const int64_t *)data)[i]; return true;
    default: return false;
    }
}

/* [hash, numel, min, max, mean] of a tensor (tracer.h, EMBER_TRACE_DEBUG_STATS). */
static void tensor_stats(const ember_tensor *tn, double out[5]) {
    uint32_t h = 2166136261u;
    const uint8_t *bytes = tn->data;
    for (size_t k = 0; bytes != NULL && k < tn->nbytes; k++) h = (h ^ bytes[k]) * 16777619u;
    out[0] = (double)h;
    out[1] = (double)tn->numel;
    double lo = NAN, hi = NAN, sum = 0, v;
    if (tn->data != NULL && tn->numel > 0 && element(tn->data, tn->dtype, 0, &v)) {
        lo = hi = v;
        for (int64_t i = 0; i < tn->numel; i++) {
            element(tn->data, tn->dtype, i, &v);
            if (v < lo) lo = v;
            if (v > hi) hi = v;
            sum += v;
        }
        out[4] = sum / (double)tn->numel;
    } else {
        out[4] = NAN;
    }
    out[2] = lo;
    out[3] = hi;
}

/* Room in the debug buffer for n bytes on a DEBUG_ALIGN boundary; false
 * when full. */
static bool debug_take(ember_event_tracer *t, size_t n, size_t *at) {
    size_t start = (t->dbg_used + DEBUG_ALIGN - 1) & ~(size_t)(DEBUG_ALIGN - 1);
    if (start < t->dbg_used || start > t->dbg_size || n > t->dbg_size - start) return false;
    t->dbg_used = start + n;
    *at = start;
    return true;
}

/* Writes one tensor's entry of a tensor block at p; its data (or stats)
 * into the debug buffer when there is one. */
static bool put_tensor(ember_event_tracer *t, uint8_t *p, const ember_tensor *tn, bool stats) {
    uint64_t off = 0;
    int64_t *dims = (int64_t *)(void *)(p + 16);
    if (stats) {
        double s[5];
        size_t at;
        tensor_stats(tn, s);
        p[0] = EMBER_FLOAT64;
        p[1] = 1;
        dims[0] = 5;
        dims[1] = 1;
        if (t->dbg != NULL) {
            if (!debug_take(t, sizeof s, &at)) return false;
            memcpy(t->dbg + at, s, sizeof s);
            off = at;
        }
    } else {
        p[0] = tn->dtype;
        p[1] = (uint8_t)tn->dim;
        for (uint32_t d = 0; d < tn->dim; d++) {
            dims[d] = tn->sizes[d];
            dims[tn->dim + d] = tn->strides[d];
        }
        if (t->dbg != NULL && tn->data != NULL && tn->nbytes > 0) {
            size_t at;
            if (!debug_take(t, tn->nbytes, &at)) return false;
            memcpy(t->dbg + at, tn->data, tn->nbytes);
            off = at;
        }
    }
    memcpy(p + 8, &off, sizeof off);
    return true;
}

static size_t tensor_entry_size(const ember_tensor *tn, bool stats) {
    return 16 + 16 * (size_t)(stats ? 1 : tn->dim);
}

/* One debug event: the value v, or (v NULL) the single tensor `single`. */
static void trace_value(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr,
                        int32_t delegate_int, const char *delegate_str, const ember_value *v,
                        const ember_tensor *single, bool output) {
    bool stats = (t->flags & EMBER_TRACE_DEBUG_STATS) != 0;
    size_t count = 0;
    uint8_t vtype;
    switch (v != NULL ? v->tag : EMBER_TAG_TENSOR) {
    case EMBER_TAG_INT: vtype = VT_INT; break;
    case EMBER_TAG_BOOL: vtype = VT_BOOL; break;
    case EMBER_TAG_DOUBLE: vtype = VT_DOUBLE; break;
    case EMBER_TAG_TENSOR:
        vtype = VT_TENSOR;
        if (v != NULL) single = v->u.t;
        count = 1;
        break;
    case EMBER_TAG_TENSOR_LIST:
        vtype = VT_TENSOR_LIST;
        count = v->u.tensor_list.len;
        for (size_t k = 0; k < count; k++)
            if (v->u.tensor_list.items[k]->tag != EMBER_TAG_TENSOR) return;
        break;
    default: return; /* nothing the format holds */
    }
    txn x;
    txn_begin(t, &x);
    trace_rec *r = rec_new(t, REC_DEBUG);
    if (r == NULL) goto full;
    if (name != NULL && (r->name = intern(t, name)) == 0) goto full;
    if (delegate_str != NULL && (r->delegate_str = intern(t, delegate_str)) == 0) goto full;
    r->vtype = vtype;
    r->output = output;
    r->chain = chain;
    r->instruction = instr;
    r->delegate_int = delegate_int;
    if (vtype == VT_INT) {
        r->a = (uint64_t)v->u.i;
    } else if (vtype == VT_BOOL) {
        r->a = v->u.b;
    } else if (vtype == VT_DOUBLE) {
        memcpy(&r->a, &v->u.d, sizeof r->a);
    } else {
        size_t bytes = 8;
        for (size_t k = 0; k < count; k++) {
            const ember_tensor *tn = single != NULL ? single : v->u.tensor_list.items[k]->u.t;
            bytes += tensor_entry_size(tn, stats);
        }
        uint32_t at = bytes <= t->size ? pool_take(t, bytes, 8) : 0;
        if (at == 0) goto full;
        uint8_t *p = t->base + at;
        memset(p, 0, bytes);
        uint32_t n32 = (uint32_t)count;
        memcpy(p, &n32, sizeof n32);
        p += 8;
        for (size_t k = 0; k < count; k++) {
            const ember_tensor *tn = single != NULL ? single : v->u.tensor_list.items[k]->u.t;
            if (!put_tensor(t, p, tn, stats)) goto full;
            p += tensor_entry_size(tn, stats);
        }
        r->a = at;
    }
    return;
full:
    txn_abort(t, &x);
}

void ember_trace_value(ember_event_tracer *t, const char *name, int32_t chain, int32_t instr,
                       const ember_value *v, bool output) {
    trace_value(t, name, chain, instr, -1, NULL, v, NULL, output);
}

void ember_trace_delegate_value(ember_event_tracer *t, const char *name, int32_t delegate_int,
                                const char *delegate_str, const ember_tensor *tensor) {
    trace_value(t, name, t->chain, t->instruction, delegate_int, delegate_str, NULL, tensor,
                false);
}

/* ---------------------------------------------------------------------- */
/* Application events                                                     */
/* ---------------------------------------------------------------------- */

ember_status ember_event_tracer_begin_run(ember_event_tracer *t, const char *name) {
    if (!valid(t) || name == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    size_t before = t->runs;
    ember_trace_begin_run(t, NULL, name);
    if (t->runs == before)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "event tracer buffer full");
    return EMBER_OK;
}

ember_status ember_event_tracer_start_profiling(ember_event_tracer *t, const char *name,
                                                uint32_t *token) {
    if (!valid(t) || name == NULL || token == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    *token = ember_trace_start(t, name, -1, -1);
    if (*token == 0) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "event tracer buffer full");
    return EMBER_OK;
}

ember_status ember_event_tracer_end_profiling(ember_event_tracer *t, uint32_t token) {
    if (!valid(t)) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL tracer");
    if (token == 0) return EMBER_OK; /* from a start that did not fit */
    if (token > t->num_recs || trace_rec_at(t, token - 1)->kind != REC_PROFILE)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "token %u is not a started event",
                               (unsigned)token);
    ember_trace_end(t, token);
    return EMBER_OK;
}

#else /* !EMBER_EVENT_TRACER: the API, refusing */

#include "core/internal.h"
#include "ember/devtools.h"

static ember_status off(void) {
    return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                           "the event tracer is not in this build (EMBER_EVENT_TRACER=0)");
}

ember_status ember_event_tracer_init(void *buf, size_t size, uint32_t flags,
                                     ember_event_tracer **out) {
    (void)buf;
    (void)size;
    (void)flags;
    if (out != NULL) *out = NULL;
    return off();
}
ember_status ember_event_tracer_set_debug_buffer(ember_event_tracer *t, void *buf, size_t size) {
    (void)t;
    (void)buf;
    (void)size;
    return off();
}
ember_status ember_event_tracer_debug_data(const ember_event_tracer *t, const void **data,
                                           size_t *size) {
    (void)t;
    (void)data;
    (void)size;
    return off();
}
ember_status ember_event_tracer_set_bundled_input(ember_event_tracer *t, int32_t index) {
    (void)t;
    (void)index;
    return off();
}
ember_status ember_event_tracer_begin_run(ember_event_tracer *t, const char *name) {
    (void)t;
    (void)name;
    return off();
}
ember_status ember_event_tracer_start_profiling(ember_event_tracer *t, const char *name,
                                                uint32_t *token) {
    (void)t;
    (void)name;
    if (token != NULL) *token = 0;
    return off();
}
ember_status ember_event_tracer_end_profiling(ember_event_tracer *t, uint32_t token) {
    (void)t;
    (void)token;
    return off();
}
ember_status ember_event_tracer_get_stats(const ember_event_tracer *t,
                                          ember_event_tracer_stats *stats) {
    (void)t;
    (void)stats;
    return off();
}
ember_status ember_event_tracer_status(const ember_event_tracer *t) {
    (void)t;
    return off();
}
void ember_event_tracer_reset(ember_event_tracer *t) { (void)t; }
ember_status ember_event_tracer_time_scale(const ember_event_tracer *t, uint64_t *num,
                                           uint64_t *den) {
    (void)t;
    (void)num;
    (void)den;
    return off();
}
ember_status ember_etdump_write(const ember_event_tracer *t, void *out, size_t cap, size_t *size) {
    (void)t;
    (void)out;
    (void)cap;
    if (size != NULL) *size = 0;
    return off();
}

#endif /* EMBER_EVENT_TRACER */
