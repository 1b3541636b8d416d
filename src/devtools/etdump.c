/*
 * ETDump writer: the tracer's records as ExecuTorch's etdump flatbuffer
 * (schema etdump_schema_flatcc.fbs, identifier "ED00", size-prefixed),
 * written front to back with the bounded builder (fb_builder.h).
 *
 *   ETDump { version:uint, run_data:[RunData] }
 *   RunData { name, bundled_input_index:int, allocators:[Allocator{name}], events:[Event] }
 *   Event { profile_event | allocation_event | debug_event }   (one of them)
 */
#include <string.h>

#include "devtools/fb_builder.h"
#include "devtools/tracer.h"

#if EMBER_EVENT_TRACER

#define ETDUMP_VERSION 0

/* Field ids (schema order). */
enum { ETDUMP_VERSION_F = 0, ETDUMP_RUN_DATA = 1 };
enum { RUN_NAME = 0, RUN_BUNDLED = 1, RUN_ALLOCATORS = 2, RUN_EVENTS = 3 };
enum { EVENT_PROFILE = 0, EVENT_ALLOCATION = 1, EVENT_DEBUG = 2 };
enum { PE_NAME = 0, PE_CHAIN = 1, PE_INSTR = 2, PE_DELEGATE_INT = 3, PE_DELEGATE_STR = 4,
       PE_METADATA = 5, PE_START = 6, PE_END = 7 };
enum { AE_ALLOCATOR = 0, AE_SIZE = 1 };
enum { DE_CHAIN = 0, DE_INSTR = 1, DE_ENTRY = 2, DE_DELEGATE_INT = 3, DE_DELEGATE_STR = 4,
       DE_NAME = 5 };
enum { VAL_TYPE = 0, VAL_TENSOR = 1, VAL_TENSOR_LIST = 2, VAL_INT = 3, VAL_FLOAT = 4,
       VAL_DOUBLE = 5, VAL_BOOL = 6, VAL_OUTPUT = 7 };
enum { TENSOR_DTYPE = 0, TENSOR_SIZES = 1, TENSOR_STRIDES = 2, TENSOR_OFFSET = 3 };

static const char *const g_allocator_names[TRACE_NUM_ALLOCATORS] = {"method_allocator",
                                                                    "planned_memory"};

static const char *pool_str(const ember_event_tracer *t, uint32_t ref) {
    return (const char *)t->base + ref;
}

/* A field list being assembled. */
typedef struct fields {
    fbb_field f[FBB_MAX_FIELDS];
    size_t n;
} fields;

static void scalar(fields *fl, uint8_t id, uint8_t size, uint64_t v) {
    fl->f[fl->n++] = (fbb_field){id, size, false, v};
}

/* Adds a reference field; returns its index (its slot after fbb_table). */
static size_t ref(fields *fl, uint8_t id) {
    fl->f[fl->n] = (fbb_field){id, 4, true, 0};
    return fl->n++;
}

static void write_string(fbb *b, size_t slot, const char *s) {
    fbb_patch(b, slot, fbb_string(b, s, strlen(s)));
}

/* A table with one scalar field (Int, Bool, Double). */
static void write_boxed(fbb *b, size_t slot, uint8_t size, uint64_t v) {
    fields fl = {.n = 0};
    size_t slots[1];
    scalar(&fl, 0, size, v);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
}

/* One Tensor table from entry p of a tensor block. */
static void write_tensor(fbb *b, size_t slot, const uint8_t *p) {
    uint64_t off;
    int64_t dims[2 * EMBER_MAX_DIM];
    uint8_t dim = p[1];
    memcpy(&off, p + 8, sizeof off);
    memcpy(dims, p + 16, 16 * (size_t)dim);
    fields fl = {.n = 0};
    size_t slots[FBB_MAX_FIELDS];
    scalar(&fl, TENSOR_DTYPE, 1, p[0]);
    size_t s_sizes = ref(&fl, TENSOR_SIZES), s_strides = ref(&fl, TENSOR_STRIDES);
    scalar(&fl, TENSOR_OFFSET, 8, off);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    fbb_patch(b, slots[s_sizes], fbb_i64_vec(b, dims, dim));
    fbb_patch(b, slots[s_strides], fbb_i64_vec(b, dims + dim, dim));
}

static void write_value(fbb *b, size_t slot, const ember_event_tracer *t, const trace_rec *r) {
    fields fl = {.n = 0};
    size_t slots[FBB_MAX_FIELDS], s_val = 0;
    scalar(&fl, VAL_TYPE, 1, r->vtype);
    switch (r->vtype) {
    case VT_INT: s_val = ref(&fl, VAL_INT); break;
    case VT_BOOL: s_val = ref(&fl, VAL_BOOL); break;
    case VT_DOUBLE: s_val = ref(&fl, VAL_DOUBLE); break;
    case VT_TENSOR: s_val = ref(&fl, VAL_TENSOR); break;
    default: s_val = ref(&fl, VAL_TENSOR_LIST); break;
    }
    size_t s_out = ref(&fl, VAL_OUTPUT);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    const uint8_t *block = t->base + (r->vtype >= VT_TENSOR ? r->a : 0);
    uint32_t count;
    switch (r->vtype) {
    case VT_INT: write_boxed(b, slots[s_val], 8, r->a); break;
    case VT_BOOL: write_boxed(b, slots[s_val], 1, r->a != 0); break;
    case VT_DOUBLE: write_boxed(b, slots[s_val], 8, r->a); break;
    case VT_TENSOR: write_tensor(b, slots[s_val], block + 8); break;
    default: {
        memcpy(&count, block, sizeof count);
        fields lf = {.n = 0};
        size_t lslots[1];
        size_t s_tensors = ref(&lf, 0);
        fbb_patch(b, slots[s_val], fbb_table(b, lf.f, lf.n, lslots));
        size_t vec = fbb_ref_vec(b, count);
        fbb_patch(b, lslots[s_tensors], vec);
        const uint8_t *p = block + 8;
        for (uint32_t k = 0; k < count; k++) {
            write_tensor(b, vec + 4 + 4 * (size_t)k, p);
            p += 16 + 16 * (size_t)p[1];
        }
        break;
    }
    }
    write_boxed(b, slots[s_out], 1, r->output);
}

static void write_profile(fbb *b, size_t slot, const ember_event_tracer *t, const trace_rec *r) {
    fields fl = {.n = 0};
    size_t slots[FBB_MAX_FIELDS], s_name = 0, s_str = 0, s_meta = 0;
    if (r->name != 0) s_name = ref(&fl, PE_NAME);
    scalar(&fl, PE_CHAIN, 4, (uint32_t)r->chain);
    scalar(&fl, PE_INSTR, 4, (uint32_t)r->instruction);
    scalar(&fl, PE_DELEGATE_INT, 4, (uint32_t)r->delegate_int);
    if (r->delegate_str != 0) s_str = ref(&fl, PE_DELEGATE_STR);
    if (r->meta != 0) s_meta = ref(&fl, PE_METADATA);
    /* An event never ended (an execute that failed in between) lasts 0. */
    uint64_t end = r->ended && r->b >= r->a ? r->b : r->a;
    scalar(&fl, PE_START, 8, r->a);
    scalar(&fl, PE_END, 8, end);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    if (r->name != 0) write_string(b, slots[s_name], pool_str(t, r->name));
    if (r->delegate_str != 0) write_string(b, slots[s_str], pool_str(t, r->delegate_str));
    if (r->meta != 0) fbb_patch(b, slots[s_meta], fbb_bytes_vec(b, t->base + r->meta, r->meta_len));
}

static void write_debug(fbb *b, size_t slot, const ember_event_tracer *t, const trace_rec *r) {
    fields fl = {.n = 0};
    size_t slots[FBB_MAX_FIELDS], s_name = 0, s_str = 0;
    scalar(&fl, DE_CHAIN, 8, r->chain < 0 ? 0 : (uint64_t)r->chain);
    scalar(&fl, DE_INSTR, 4, (uint32_t)r->instruction);
    size_t s_entry = ref(&fl, DE_ENTRY);
    scalar(&fl, DE_DELEGATE_INT, 4, (uint32_t)r->delegate_int);
    if (r->delegate_str != 0) s_str = ref(&fl, DE_DELEGATE_STR);
    if (r->name != 0) s_name = ref(&fl, DE_NAME);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    write_value(b, slots[s_entry], t, r);
    if (r->delegate_str != 0) write_string(b, slots[s_str], pool_str(t, r->delegate_str));
    if (r->name != 0) write_string(b, slots[s_name], pool_str(t, r->name));
}

static void write_event(fbb *b, size_t slot, const ember_event_tracer *t, const trace_rec *r) {
    fields fl = {.n = 0};
    size_t slots[1];
    uint8_t which = r->kind == REC_PROFILE ? EVENT_PROFILE
                    : r->kind == REC_ALLOC ? EVENT_ALLOCATION
                                           : EVENT_DEBUG;
    ref(&fl, which);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    if (r->kind == REC_PROFILE) {
        write_profile(b, slots[0], t, r);
    } else if (r->kind == REC_DEBUG) {
        write_debug(b, slots[0], t, r);
    } else {
        fields af = {.n = 0};
        size_t aslots[2];
        scalar(&af, AE_ALLOCATOR, 4, (uint32_t)(int32_t)(int64_t)r->a);
        scalar(&af, AE_SIZE, 8, r->b);
        fbb_patch(b, slots[0], fbb_table(b, af.f, af.n, aslots));
    }
}

/* One RunData: records [first, end) after its run record (or none). */
static void write_run(fbb *b, size_t slot, const ember_event_tracer *t, const char *name,
                      int32_t bundled, size_t first, size_t end) {
    bool allocs = false;
    size_t n = end - first;
    for (size_t i = first; i < end; i++) allocs |= trace_rec_at(t, i)->kind == REC_ALLOC;
    fields fl = {.n = 0};
    size_t slots[FBB_MAX_FIELDS], s_alloc = 0;
    size_t s_name = ref(&fl, RUN_NAME);
    scalar(&fl, RUN_BUNDLED, 4, (uint32_t)bundled);
    if (allocs) s_alloc = ref(&fl, RUN_ALLOCATORS);
    size_t s_events = ref(&fl, RUN_EVENTS);
    fbb_patch(b, slot, fbb_table(b, fl.f, fl.n, slots));
    write_string(b, slots[s_name], name);
    if (allocs) {
        size_t vec = fbb_ref_vec(b, TRACE_NUM_ALLOCATORS);
        fbb_patch(b, slots[s_alloc], vec);
        for (size_t k = 0; k < TRACE_NUM_ALLOCATORS; k++) {
            fields af = {.n = 0};
            size_t aslots[1];
            ref(&af, 0);
            fbb_patch(b, vec + 4 + 4 * k, fbb_table(b, af.f, af.n, aslots));
            write_string(b, aslots[0], g_allocator_names[k]);
        }
    }
    size_t vec = fbb_ref_vec(b, n);
    fbb_patch(b, slots[s_events], vec);
    for (size_t i = 0; i < n; i++) write_event(b, vec + 4 + 4 * i, t, trace_rec_at(t, first + i));
}

ember_status ember_etdump_write(const ember_event_tracer *t, void *out, size_t cap, size_t *size) {
    if (t == NULL || t->magic != TRACE_MAGIC || size == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    if (out == NULL && cap > 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL output of %zu bytes", cap);
    *size = 0;
    /* Events recorded before any run form a run of their own. */
    size_t lead = 0;
    while (lead < t->num_recs && trace_rec_at(t, lead)->kind != REC_RUN) lead++;
    size_t nruns = t->runs + (lead > 0 ? 1 : 0);

    fbb b;
    fbb_init(&b, out, cap);
    size_t prefix = fbb_put(&b, 0, 4);
    size_t root_slot = fbb_put(&b, 0, 4);
    fbb_put(&b, (uint64_t)'E' | (uint64_t)'D' << 8 | (uint64_t)'0' << 16 | (uint64_t)'0' << 24, 4);
    fields fl = {.n = 0};
    size_t slots[2];
    scalar(&fl, ETDUMP_VERSION_F, 4, ETDUMP_VERSION);
    size_t s_runs = ref(&fl, ETDUMP_RUN_DATA);
    fbb_patch(&b, root_slot, fbb_table(&b, fl.f, fl.n, slots));
    size_t vec = fbb_ref_vec(&b, nruns);
    fbb_patch(&b, slots[s_runs], vec);
    size_t k = 0;
    if (lead > 0) write_run(&b, vec + 4 + 4 * k++, t, "run", -1, 0, lead);
    for (size_t i = lead; i < t->num_recs;) {
        const trace_rec *run = trace_rec_at(t, i);
        size_t end = i + 1;
        while (end < t->num_recs && trace_rec_at(t, end)->kind != REC_RUN) end++;
        write_run(&b, vec + 4 + 4 * k++, t, pool_str(t, run->name), (int32_t)(int64_t)run->a, i + 1,
                  end);
        i = end;
    }
    fbb_pad(&b, 8, 0);
    /* The size prefix counts the bytes after it. */
    fbb_put_at(&b, prefix, (uint64_t)(b.pos - 4), 4);
    *size = b.pos;
    if (b.pos - 4 > UINT32_MAX)
        return ember_set_error(EMBER_ERR_NOT_SUPPORTED, "ETDump of %zu bytes: over 4 GiB", b.pos);
    if (b.full) {
        if (out == NULL) return EMBER_OK; /* a size query */
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "ETDump needs %zu bytes, %zu given", b.pos,
                               cap);
    }
    return EMBER_OK;
}

#else
typedef int ember_etdump_unused;
#endif /* EMBER_EVENT_TRACER */
