/*
 * Methods: build the values and instruction tables of one execution plan,
 * bind memory, and run the instructions. Everything a method needs is
 * allocated at load; execute allocates nothing.
 */
#include <string.h>

#include "devtools/tracer.h"
#include "format/data_map.h"

#ifndef EMBER_DEFAULT_SCRATCH_SIZE
#define EMBER_DEFAULT_SCRATCH_SIZE (256u * 1024u)
#endif

/* Planned buffers must be aligned at least this much. */
#define PLANNED_ALIGN 16

typedef struct instr {
    uint8_t kind;
    int32_t a, b;            /* see pte_instr */
    ember_kernel_fn fn;      /* kernel calls */
    const char *op_name;     /* kernel calls: the kernel key */
    ember_value **args;
    uint32_t nargs;
} instr;

typedef struct chain {
    instr *instrs;
    uint32_t len;
} chain;

typedef struct delegate {
    const ember_backend *backend;
    void *handle;
    const char *id;
    ember_compile_spec *specs;   /* filled at init; allocated in build() */
} delegate;

struct ember_method {
    const ember_program *program;
    const pte_plan *plan;
    ember_heap_allocator heap;   /* platform-heap memory of this method */
    ember_value *values;
    uint32_t num_values;
    uint32_t *inputs;
    uint32_t *outputs;
    uint32_t num_inputs, num_outputs;
    chain *chains;
    uint32_t num_chains;
    const char **op_names;       /* per operator */
    ember_kernel_fn *op_fns;     /* per operator */
    delegate *delegates;
    uint32_t num_delegates;      /* initialized so far */
    void *workspace;             /* shared by the delegates (ember_backend_request_workspace) */
    size_t workspace_bytes, workspace_align; /* the largest request, the strictest alignment */
    void **planned;              /* buffer for memory id k at [k - 1] */
    size_t num_planned;
    ember_arena scratch;
    ember_kernel_ctx kctx;
    struct ember_threadpool *threadpool;
    const ember_data_map *const *data_maps; /* the caller's, outlive the method */
    size_t num_data_maps;
    const ember_weight_cache *weight_cache; /* the caller's, outlives the method; or NULL */
    ember_buffer *external;      /* (plan->num_external) bytes of EXTERNAL constants */
    const ember_data_loader **external_loaders; /* what releases each of them */
    uint32_t num_external;       /* loaded so far */
#if EMBER_EVENT_TRACER
    ember_event_tracer *tracer;  /* NULL: not tracing */
    struct traced_allocator {
        ember_allocator base;
        ember_allocator *inner;
        ember_event_tracer *tracer;
    } traced;                    /* the method allocator, counted (EMBER_TRACE_ALLOCATIONS) */
#endif
};

#if EMBER_EVENT_TRACER
static bool tracing(const ember_method *m, uint32_t flag) {
    return m->tracer != NULL && (m->tracer->flags & flag) != 0;
}

static void *traced_alloc(void *ctx, size_t size, size_t align) {
    struct traced_allocator *ta = ctx;
    void *p = ta->inner->alloc(ta->inner->ctx, size, align);
    if (p != NULL) ember_trace_alloc(ta->tracer, TRACE_ALLOC_METHOD, size);
    return p;
}
#endif

/* Allocation that reports out-of-memory with what it was for. */
static ember_status alloc_array(ember_allocator *a, size_t count, size_t elem, size_t align,
                                const char *what, void **out) {
    size_t bytes;
    if (ember_mul_overflow(count, elem, &bytes))
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "%s: size overflows", what);
    *out = ember_alloc(a, bytes, align);
    if (*out == NULL)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", bytes,
                               what);
    return EMBER_OK;
}

#define ALLOC(a, count, type, what, out)                                                          \
    alloc_array((a), (count), sizeof(type), _Alignof(type), (what), (void **)(out))

/* ---------------------------------------------------------------------- */
/* Building values                                                        */
/* ---------------------------------------------------------------------- */

static ember_status build_tensor(ember_method *m, ember_allocator *a, const pte_tensor *d,
                                 ember_tensor **out) {
    ember_tensor *t;
    int32_t *sizes, *bounds;
    uint8_t *order;
    int64_t *strides;
    size_t dim = d->dim;
    EMBER_TRY(ALLOC(a, 1, ember_tensor, "a tensor", &t));
    EMBER_TRY(ALLOC(a, dim, int32_t, "tensor sizes", &sizes));
    EMBER_TRY(ALLOC(a, dim, int32_t, "tensor bounds", &bounds));
    EMBER_TRY(ALLOC(a, dim, uint8_t, "tensor dim order", &order));
    EMBER_TRY(ALLOC(a, dim, int64_t, "tensor strides", &strides));
    memcpy(sizes, d->sizes, dim * sizeof *sizes);
    memcpy(bounds, d->sizes, dim * sizeof *bounds);
    memcpy(order, d->dim_order, dim);
    t->sizes = sizes;
    t->bounds = bounds;
    t->dim_order = order;
    t->strides = strides;
    t->dim = (uint32_t)dim;
    t->dtype = d->dtype;
    t->dynamism = d->dynamism;
    t->storage = d->storage;
    t->numel = d->numel;
    t->nbytes = d->nbytes;
    t->data = NULL;
    t->capacity = 0;
    ember_tensor_compute_strides(t);
    if (d->storage == EMBER_STORAGE_CONSTANT) {
        /* Kernels never write tensors they only read; constants are inputs. */
        t->data = (void *)(uintptr_t)d->constant;
        t->capacity = d->nbytes;
    } else if (d->storage == EMBER_STORAGE_PLANNED && m->planned[d->memory_id - 1] != NULL) {
        t->data = (uint8_t *)m->planned[d->memory_id - 1] + d->memory_offset;
        t->capacity = d->nbytes;
    }
    *out = t;
    return EMBER_OK;
}

static ember_status build_value(ember_method *m, ember_allocator *a, uint32_t i) {
    const ember_program *p = m->program;
    const fb_reader *r = &p->r;
    ember_value *v = &m->values[i];
    pte_value d;
    EMBER_TRY(pte_decode_value(p, m->plan, i, &d));
    v->tag = d.tag;
    switch (d.tag) {
    case EMBER_TAG_NONE: break;
    case EMBER_TAG_INT: v->u.i = d.u.i; break;
    case EMBER_TAG_BOOL: v->u.b = d.u.b; break;
    case EMBER_TAG_DOUBLE: v->u.d = d.u.d; break;
    case EMBER_TAG_STRING:
        v->u.str.data = d.u.s.data;
        v->u.str.len = d.u.s.len;
        break;
    case EMBER_TAG_TENSOR: return build_tensor(m, a, &d.u.t, &v->u.t);
    case EMBER_TAG_INT_LIST: {
        uint32_t n = d.u.list.len;
        EMBER_TRY(ALLOC(a, n, ember_value *, "int list items", &v->u.int_list.items));
        EMBER_TRY(ALLOC(a, n, int64_t, "int list", &v->u.int_list.unboxed));
        for (uint32_t k = 0; k < n; k++) {
            int64_t idx = fb_vec_i64(r, &d.u.list, k);
            v->u.int_list.items[k] = &m->values[idx];
            v->u.int_list.unboxed[k] = 0;
        }
        v->u.int_list.len = n;
        break;
    }
    case EMBER_TAG_DOUBLE_LIST: {
        double *items;
        EMBER_TRY(ALLOC(a, d.u.list.len, double, "double list", &items));
        for (uint32_t k = 0; k < d.u.list.len; k++) items[k] = fb_vec_f64(r, &d.u.list, k);
        v->u.double_list.items = items;
        v->u.double_list.len = d.u.list.len;
        break;
    }
    case EMBER_TAG_BOOL_LIST: {
        bool *items;
        EMBER_TRY(ALLOC(a, d.u.list.len, bool, "bool list", &items));
        for (uint32_t k = 0; k < d.u.list.len; k++) items[k] = fb_vec_u8(r, &d.u.list, k) != 0;
        v->u.bool_list.items = items;
        v->u.bool_list.len = d.u.list.len;
        break;
    }
    case EMBER_TAG_TENSOR_LIST:
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: {
        uint32_t n = d.u.list.len;
        EMBER_TRY(ALLOC(a, n, ember_value *, "tensor list", &v->u.tensor_list.items));
        for (uint32_t k = 0; k < n; k++) {
            int32_t idx = fb_vec_i32(r, &d.u.list, k);
            v->u.tensor_list.items[k] = idx < 0 ? NULL : &m->values[idx];
        }
        v->u.tensor_list.len = n;
        break;
    }
    default:
        return ember_set_error(EMBER_ERR_INVALID_PROGRAM, "value %u: unknown kind %u", (unsigned)i,
                               (unsigned)d.tag);
    }
    return EMBER_OK;
}

/* Copies the index list of inputs or outputs. */
static ember_status build_io(ember_method *m, ember_allocator *a, const fb_vec *list,
                             uint32_t **out) {
    EMBER_TRY(ALLOC(a, list->len, uint32_t, "input/output table", out));
    for (uint32_t k = 0; k < list->len; k++) (*out)[k] = (uint32_t)fb_vec_i32(&m->program->r, list, k);
    return EMBER_OK;
}

static bool is_io(const ember_method *m, uint32_t value) {
    for (uint32_t k = 0; k < m->num_inputs; k++)
        if (m->inputs[k] == value) return true;
    for (uint32_t k = 0; k < m->num_outputs; k++)
        if (m->outputs[k] == value) return true;
    return false;
}

/* Resolves every operator; all missing ones are named in one message. */
static ember_status resolve_operators(ember_method *m, ember_allocator *a, bool measure) {
    const pte_plan *plan = m->plan;
    uint32_t n = plan->operators.len, missing = 0;
    bool truncated = false;
    char list[EMBER_ERROR_MESSAGE_SIZE];
    size_t used = 0;
    list[0] = '\0';
    EMBER_TRY(ALLOC(a, n, const char *, "operator names", &m->op_names));
    EMBER_TRY(ALLOC(a, n, ember_kernel_fn, "operator table", &m->op_fns));
    for (uint32_t i = 0; i < n; i++) {
        fb_str name, overload;
        char *key;
        EMBER_TRY(pte_operator(m->program, plan, i, &name, &overload));
        size_t len = name.len + (overload.len > 0 ? 1u + overload.len : 0u);
        EMBER_TRY(ALLOC(a, len + 1, char, "an operator name", &key));
        memcpy(key, name.data, name.len);
        if (overload.len > 0) {
            key[name.len] = '.';
            memcpy(key + name.len + 1, overload.data, overload.len);
        }
        key[len] = '\0';
        m->op_names[i] = key;
        m->op_fns[i] = measure ? NULL : ember_kernel_find(key, len);
        if (!measure && m->op_fns[i] == NULL) {
            missing++;
            /* Names that do not fit are counted and marked with "...". */
            if (!truncated && used + len + 8 < sizeof list) {
                memcpy(list + used, missing > 1 ? ", " : "", missing > 1 ? 2 : 0);
                used += missing > 1 ? 2 : 0;
                memcpy(list + used, key, len + 1);
                used += len;
            } else if (!truncated) {
                memcpy(list + used, ", ...", 6);
                used += 5;
                truncated = true;
            }
        }
    }
    if (missing > 0)
        return ember_set_error(EMBER_ERR_OPERATOR_MISSING, "%u operator%s without a kernel: %.*s",
                               (unsigned)missing, missing > 1 ? "s" : "",
                               EMBER_ERROR_MESSAGE_SIZE - 48, list);
    return EMBER_OK;
}

static ember_status build_chains(ember_method *m, ember_allocator *a) {
    const pte_plan *plan = m->plan;
    m->num_chains = plan->chains.len;
    EMBER_TRY(ALLOC(a, m->num_chains, chain, "chains", &m->chains));
    for (uint32_t c = 0; c < m->num_chains; c++) {
        uint32_t len = 0;
        pte_instr d;
        EMBER_TRY(pte_instruction(m->program, plan, c, 0, &d, &len));
        m->chains[c].len = len;
        EMBER_TRY(ALLOC(a, len, instr, "instructions", &m->chains[c].instrs));
        for (uint32_t i = 0; i < len; i++) {
            instr *in = &m->chains[c].instrs[i];
            EMBER_TRY(pte_instruction(m->program, plan, c, i, &d, &len));
            memset(in, 0, sizeof *in);
            in->kind = d.kind;
            in->a = d.a;
            in->b = d.b;
            if (d.kind == INSTR_KERNEL || d.kind == INSTR_DELEGATE) {
                in->nargs = d.args.len;
                EMBER_TRY(ALLOC(a, d.args.len, ember_value *, "instruction arguments", &in->args));
                for (uint32_t k = 0; k < d.args.len; k++)
                    in->args[k] = &m->values[fb_vec_i32(&m->program->r, &d.args, k)];
                if (d.kind == INSTR_KERNEL) {
                    in->fn = m->op_fns[d.a];
                    in->op_name = m->op_names[d.a];
                }
            }
        }
    }
    return EMBER_OK;
}

static ember_status bind_planned(ember_method *m, const ember_memory *mem);

/* Builds everything that comes from the method allocator; when measuring,
 * binds no memory and resolves no kernels. */
static ember_status build(ember_method *m, ember_allocator *a, const ember_memory *mem,
                          bool measure) {
    const pte_plan *plan = m->plan;
    m->num_planned = plan->buffer_sizes.len > 0 ? plan->buffer_sizes.len - 1 : 0;
    EMBER_TRY(ALLOC(a, m->num_planned, void *, "planned buffer table", &m->planned));
    memset(m->planned, 0, m->num_planned * sizeof *m->planned);
    if (!measure) EMBER_TRY(bind_planned(m, mem));
    m->num_values = plan->values.len;
    EMBER_TRY(ALLOC(a, m->num_values, ember_value, "values", &m->values));
    memset(m->values, 0, (size_t)m->num_values * sizeof *m->values);
    for (uint32_t i = 0; i < m->num_values; i++) EMBER_TRY(build_value(m, a, i));
    m->num_inputs = plan->inputs.len;
    m->num_outputs = plan->outputs.len;
    EMBER_TRY(build_io(m, a, &plan->inputs, &m->inputs));
    EMBER_TRY(build_io(m, a, &plan->outputs, &m->outputs));
    /* Tensors without storage must be bound by the caller: only inputs and
     * outputs can be, so anything else would run on no memory. */
    for (uint32_t i = 0; i < m->num_values; i++) {
        const ember_value *v = &m->values[i];
        if (v->tag == EMBER_TAG_TENSOR && v->u.t->storage == EMBER_STORAGE_NONE &&
            v->u.t->nbytes > 0 && !is_io(m, i))
            return ember_set_error(EMBER_ERR_INVALID_PROGRAM,
                                   "value %u: tensor has no storage and is not an input or output",
                                   (unsigned)i);
    }
    EMBER_TRY(resolve_operators(m, a, measure));
    EMBER_TRY(build_chains(m, a));
    EMBER_TRY(ALLOC(a, plan->num_external, ember_buffer, "external tensor table", &m->external));
    EMBER_TRY(ALLOC(a, plan->num_external, const ember_data_loader *, "external tensor table",
              &m->external_loaders));
    EMBER_TRY(ALLOC(a, plan->delegates.len, delegate, "delegates", &m->delegates));
    /* The compile-spec tables are the runtime's own memory, so they are
     * taken here, where ember_program_method_arena_size() measures them;
     * what backends allocate at init comes after. */
    for (uint32_t i = 0; i < plan->delegates.len; i++) {
        pte_delegate d;
        EMBER_TRY(pte_delegate_ref(m->program, plan, i, &d));
        EMBER_TRY(
            ALLOC(a, d.specs.len, ember_compile_spec, "compile specs", &m->delegates[i].specs));
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Memory and delegates                                                   */
/* ---------------------------------------------------------------------- */

/* Fills the planned buffer table from the caller's memory or the heap. */
static ember_status bind_planned(ember_method *m, const ember_memory *mem) {
    const pte_plan *plan = m->plan;
    size_t n = m->num_planned;
    bool given = mem != NULL && mem->planned_buffers != NULL;
    if (given && mem->num_planned_buffers != n)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "method '%s' needs %zu planned buffers, %zu given", plan->name, n,
                               mem->num_planned_buffers);
    for (size_t k = 0; k < n; k++) {
        size_t bytes;
        EMBER_TRY(pte_buffer_size(m->program, plan, (uint32_t)(k + 1), &bytes));
#if EMBER_EVENT_TRACER
        if (tracing(m, EMBER_TRACE_ALLOCATIONS))
            ember_trace_alloc(m->tracer, TRACE_ALLOC_PLANNED, bytes);
#endif
        if (given) {
            m->planned[k] = mem->planned_buffers[k];
            if (m->planned[k] == NULL && bytes > 0)
                return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "planned buffer %zu is NULL", k);
            if (((uintptr_t)m->planned[k] & (PLANNED_ALIGN - 1)) != 0)
                return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                                       "planned buffer %zu is not aligned to %d bytes", k,
                                       PLANNED_ALIGN);
        } else {
            m->planned[k] = ember_alloc(&m->heap.base, bytes, PLANNED_ALIGN);
            if (m->planned[k] == NULL)
                return ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                                       "cannot allocate planned buffer %zu (%zu bytes)", k, bytes);
            memset(m->planned[k], 0, bytes);
        }
    }
    return EMBER_OK;
}

/* Copies the initial contents of mutable planned tensors. */
static ember_status init_mutable(ember_method *m) {
    const ember_program *p = m->program;
    ember_buffer seg = {NULL, 0, NULL};
    ember_status st = EMBER_OK;
    for (uint32_t i = 0; i < m->num_values && st == EMBER_OK; i++) {
        pte_value d;
        st = pte_decode_value(p, m->plan, i, &d);
        if (st != EMBER_OK || d.tag != EMBER_TAG_TENSOR || d.u.t.mutable_index == 0) continue;
        if (seg.data == NULL) st = pte_load_segment(p, p->mutable_segment, EMBER_SEGMENT_MUTABLE, &seg);
        if (st != EMBER_OK) break;
        uint64_t off = fb_vec_u64(&p->r, &p->mutable_offsets, d.u.t.mutable_index);
        if (off > seg.size || d.u.t.nbytes > seg.size - off) {
            st = ember_set_error(EMBER_ERR_INVALID_PROGRAM, "value %u: initial data out of range",
                                 (unsigned)i);
            break;
        }
        if (d.u.t.nbytes > 0) memcpy(m->values[i].u.t->data, (const uint8_t *)seg.data + off, d.u.t.nbytes);
    }
    pte_release(p, &seg);
    return st;
}

/* Checks a data map's tensor against the program's; a map entry without a
 * layout (raw named data) is checked by size only. */
static ember_status check_external(uint32_t i, const pte_tensor *t, const ember_data_info *info) {
    int n = (int)(t->fqn.len < 200 ? t->fqn.len : 200);
    if (info->has_layout) {
        if (info->dtype != t->dtype)
            return ember_set_error(EMBER_ERR_TYPE_MISMATCH,
                                   "value %u: external tensor '%.*s' is %s in the program but %s "
                                   "in the data map",
                                   (unsigned)i, n, t->fqn.data, ember_dtype_name(t->dtype),
                                   ember_dtype_name(info->dtype));
        bool same = info->dim == t->dim;
        for (uint32_t d = 0; same && d < t->dim; d++)
            same = info->sizes[d] == t->sizes[d] && info->dim_order[d] == t->dim_order[d];
        if (!same)
            return ember_set_error(EMBER_ERR_SHAPE_MISMATCH,
                                   "value %u: external tensor '%.*s' has other sizes or dim order "
                                   "in the data map (rank %u) than in the program (rank %u)",
                                   (unsigned)i, n, t->fqn.data, (unsigned)info->dim,
                                   (unsigned)t->dim);
    }
    if (info->size < t->nbytes)
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH,
                               "value %u: external tensor '%.*s' needs %zu bytes, the data map "
                               "holds %zu",
                               (unsigned)i, n, t->fqn.data, t->nbytes, info->size);
    return EMBER_OK;
}

/* Binds EXTERNAL tensors to their data: constants keep the loaded bytes
 * until the method is destroyed; planned tensors get a copy. */
static ember_status bind_external(ember_method *m) {
    const ember_program *p = m->program;
    for (uint32_t i = 0; i < m->num_values; i++) {
        pte_value d;
        named_ref ref;
        ember_data_info info;
        ember_buffer buf;
        const ember_data_loader *loader = NULL;
        EMBER_TRY(pte_decode_value(p, m->plan, i, &d));
        if (d.tag != EMBER_TAG_TENSOR || !d.u.t.external) continue;
        const pte_tensor *t = &d.u.t;
        ember_status st = named_find(p, m->data_maps, m->num_data_maps, t->fqn.data, t->fqn.len,
                                     &ref);
        if (st != EMBER_OK) {
            ember_error_prefix("value %u: external tensor", (unsigned)i);
            return st;
        }
        named_info(p, &ref, &info);
        EMBER_TRY(check_external(i, t, &info));
        if (t->storage == EMBER_STORAGE_CONSTANT) {
            if (m->num_external >= m->plan->num_external)
                return ember_set_error(EMBER_ERR_INVALID_PROGRAM,
                                       "value %u: too many external "
                                       "tensors",
                                       (unsigned)i);
            EMBER_TRY(named_load(p, &ref, EMBER_SEGMENT_CONSTANT, &buf, &loader));
            m->external[m->num_external] = buf;
            m->external_loaders[m->num_external] = loader;
            m->num_external++;
            size_t elem = ember_dtype_size(t->dtype), align = elem < 8 ? elem : 8;
            if (((uintptr_t)buf.data & (align - 1)) != 0)
                return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                                       "value %u: external tensor '%.*s' is misaligned for %s; "
                                       "load the data map from memory aligned to 16 bytes",
                                       (unsigned)i, (int)(t->fqn.len < 200 ? t->fqn.len : 200),
                                       t->fqn.data, ember_dtype_name(t->dtype));
            /* Kernels never write tensors they only read; constants are inputs. */
            m->values[i].u.t->data = (void *)(uintptr_t)buf.data;
        } else {
            EMBER_TRY(named_load(p, &ref, EMBER_SEGMENT_MUTABLE, &buf, &loader));
            if (t->nbytes > 0) memcpy(m->values[i].u.t->data, buf.data, t->nbytes);
            if (buf.data != NULL && loader->release != NULL) loader->release(loader->ctx, &buf);
        }
    }
    return EMBER_OK;
}

static ember_status init_delegate(ember_method *m, ember_allocator *a, uint32_t i) {
    const ember_program *p = m->program;
    pte_delegate d;
    ember_compile_spec *specs;
    ember_buffer payload = {NULL, 0, NULL};
    EMBER_TRY(pte_delegate_ref(p, m->plan, i, &d));
    const ember_backend *b = ember_backend_find(d.id.data, d.id.len);
    if (b == NULL)
        return ember_set_error(EMBER_ERR_BACKEND_MISSING,
                               "delegate %u: backend '%s' is not registered", (unsigned)i,
                               d.id.data);
    if (b->is_available != NULL && !b->is_available())
        return ember_set_error(EMBER_ERR_BACKEND_MISSING,
                               "delegate %u: backend '%s' is not available", (unsigned)i,
                               d.id.data);
    specs = m->delegates[i].specs;
    for (uint32_t k = 0; k < d.specs.len; k++) {
        fb_table spec;
        fb_str key;
        fb_vec value;
        bool present;
        fb_vec_table(&p->r, &d.specs, k, &spec);
        fb_str_field(&p->r, &spec, SPEC_KEY, &key, &present);
        fb_vec_field(&p->r, &spec, SPEC_VALUE, 1, &value, &present);
        specs[k].key = key.data;
        specs[k].value = fb_vec_bytes(&p->r, &value);
        specs[k].value_size = value.len;
    }
    if (d.location == 0) {
        fb_table inl;
        fb_vec data;
        bool present;
        fb_vec_table(&p->r, &p->delegate_data, d.index, &inl);
        fb_vec_field(&p->r, &inl, 0, 1, &data, &present);
        payload.data = fb_vec_bytes(&p->r, &data);
        payload.size = data.len;
    } else {
        EMBER_TRY(pte_load_segment(p, d.index, EMBER_SEGMENT_BACKEND, &payload));
    }
    ember_backend_init_ctx ctx = {a, i, p, m->threadpool, m->data_maps, m->num_data_maps, m,
                                  m->weight_cache};
    ember_clear_error();
    void *handle = NULL;
    ember_status st = b->init(&ctx, payload.data, payload.size, specs, d.specs.len, &handle);
    if (d.location != 0) pte_release(p, &payload);
    if (st != EMBER_OK) {
        if (ember_last_error()[0] == '\0') ember_set_error(st, "%s", ember_status_str(st));
        ember_error_prefix("delegate %u (%s) init", (unsigned)i, d.id.data);
        return st;
    }
    m->delegates[i].backend = b;
    m->delegates[i].handle = handle;
    m->delegates[i].id = d.id.data;
    m->num_delegates = i + 1;
    return EMBER_OK;
}

ember_status ember_backend_request_workspace(const ember_backend_init_ctx *ctx, size_t bytes,
                                             size_t align, void *const **base) {
    if (ctx == NULL || ctx->method_ == NULL || base == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "workspace: NULL argument");
    if (align == 0 || (align & (align - 1)) != 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "workspace: alignment %zu is not a power of two", align);
    ember_method *m = ctx->method_;
    if (bytes > m->workspace_bytes) m->workspace_bytes = bytes;
    if (align > m->workspace_align) m->workspace_align = align;
    *base = &m->workspace;
    return EMBER_OK;
}

/* The delegates' shared workspace, once all of them have asked for theirs. */
static ember_status alloc_workspace(ember_method *m, ember_allocator *a) {
    if (m->workspace_bytes == 0) return EMBER_OK;
    m->workspace = ember_alloc(a, m->workspace_bytes, m->workspace_align);
    if (m->workspace == NULL)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                               "cannot allocate %zu bytes of delegate workspace",
                               m->workspace_bytes);
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Load and destroy                                                       */
/* ---------------------------------------------------------------------- */

/* An allocator that counts what an arena of the same requests would use. */
typedef struct measure_allocator {
    ember_allocator base;
    ember_heap_allocator *heap;
    size_t used;
} measure_allocator;

static void *measure_alloc(void *ctx, size_t size, size_t align) {
    measure_allocator *ma = ctx;
    size_t start = (ma->used + align - 1) & ~(align - 1);
    if (start < ma->used || ember_add_overflow(start, size, &ma->used)) return NULL;
    return ember_alloc(&ma->heap->base, size, align);
}

ember_status ember_program_method_arena_size(const ember_program *program, const char *method,
                                             size_t *bytes) {
    const pte_plan *plan;
    ember_method m;
    ember_heap_allocator heap;
    if (bytes == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL output");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    ember_heap_allocator_init(&heap);
    measure_allocator ma = {{NULL, measure_alloc}, &heap, 0};
    ma.base.ctx = &ma;
    memset(&m, 0, sizeof m);
    m.program = program;
    m.plan = plan;
    /* The method struct itself comes first, as in ember_method_load(). */
    ember_status st = measure_alloc(&ma, sizeof(ember_method), _Alignof(ember_method)) != NULL
                          ? build(&m, &ma.base, NULL, true)
                          : ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "no heap to measure with");
    ember_heap_allocator_release(&heap);
    *bytes = ma.used;
    return st;
}

ember_status ember_method_load(const ember_program *program, const char *name,
                               const ember_memory *memory, ember_method **out) {
    ember_method_options options;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.memory = memory;
    return ember_method_load_with(program, name, &options, out);
}

ember_status ember_method_load_with(const ember_program *program, const char *name,
                                    const ember_method_options *options, ember_method **out) {
    const ember_memory *memory = options != NULL ? options->memory : NULL;
    const pte_plan *plan;
    ember_heap_allocator heap;
    ember_allocator *a;
    ember_method *m;
    ember_status st;

    const ember_data_map *const *maps = NULL;
    size_t num_maps = 0;

    if (out == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL output");
    *out = NULL;
    /* Options from before data maps end at the thread pool. */
    if (options != NULL && options->struct_size < offsetof(ember_method_options, data_maps))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_method_options.struct_size is wrong");
    if (options != NULL && options->struct_size >= offsetof(ember_method_options, event_tracer)) {
        maps = options->data_maps;
        num_maps = options->num_data_maps;
        if (maps == NULL && num_maps > 0)
            return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "%zu data maps, but no array",
                                   num_maps);
        for (size_t k = 0; k < num_maps; k++)
            if (maps[k] == NULL)
                return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "data map %zu is NULL", k);
    }
    if (memory != NULL && memory->struct_size < sizeof(ember_memory))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "ember_memory.struct_size is wrong");
    EMBER_TRY(pte_find_plan(program, name, &plan));
    ember_heap_allocator_init(&heap);
    a = memory != NULL && memory->method_allocator != NULL ? memory->method_allocator : &heap.base;
    m = ember_alloc(a, sizeof *m, _Alignof(ember_method));
    if (m == NULL) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate the method");
    memset(m, 0, sizeof *m);
    m->heap = heap;
    m->heap.base.ctx = &m->heap;
    if (a == &heap.base) a = &m->heap.base;
    m->program = program;
    m->plan = plan;
    m->threadpool = options != NULL ? options->threadpool : NULL;
    m->kctx.threadpool = m->threadpool;
    m->data_maps = maps;
    m->num_data_maps = num_maps;
    if (options != NULL && options->struct_size >= sizeof(ember_method_options))
        m->weight_cache = options->weight_cache;
#if EMBER_EVENT_TRACER
    uint32_t load_token = 0, init_token = 0;
    if (options != NULL &&
        options->struct_size >= offsetof(ember_method_options, weight_cache))
        m->tracer = options->event_tracer;
    if (m->tracer != NULL && m->tracer->magic != TRACE_MAGIC) {
        m->tracer = NULL;
        st = ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                             "event_tracer is not an initialized tracer");
        ember_method_destroy(m);
        return st;
    }
    if (m->tracer != NULL) {
        ember_trace_begin_run(m->tracer, "load:", plan->name);
        if (tracing(m, EMBER_TRACE_PROFILE))
            load_token = ember_trace_start(m->tracer, "Program::load_method", -1, -1);
    }
    if (tracing(m, EMBER_TRACE_ALLOCATIONS)) {
        ember_trace_alloc(m->tracer, TRACE_ALLOC_METHOD, sizeof *m);
        m->traced.base.ctx = &m->traced;
        m->traced.base.alloc = traced_alloc;
        m->traced.inner = a;
        m->traced.tracer = m->tracer;
        a = &m->traced.base;
    }
#endif

    st = build(m, a, memory, false);
    if (st == EMBER_OK) st = init_mutable(m);
    if (st == EMBER_OK) st = bind_external(m);
    if (st == EMBER_OK) {
        void *scratch = memory != NULL ? memory->scratch : NULL;
        size_t size = memory != NULL ? memory->scratch_size : 0;
        if (scratch == NULL && ember_platform_get()->alloc != NULL) {
            size = EMBER_DEFAULT_SCRATCH_SIZE;
            scratch = ember_alloc(&m->heap.base, size, 64);
            if (scratch == NULL)
                st = ember_set_error(EMBER_ERR_OUT_OF_MEMORY,
                                     "cannot allocate %zu bytes of scratch", size);
        }
        /* Without a heap and without caller scratch, kernels get none. */
        ember_arena_init(&m->scratch, scratch, scratch != NULL ? size : 0);
        m->kctx.scratch = &m->scratch;
    }
#if EMBER_EVENT_TRACER
    if (tracing(m, EMBER_TRACE_PROFILE))
        init_token = ember_trace_start(m->tracer, "Method::init", -1, -1);
#endif
    for (uint32_t i = 0; st == EMBER_OK && i < plan->delegates.len; i++) st = init_delegate(m, a, i);
    if (st == EMBER_OK) st = alloc_workspace(m, a);
#if EMBER_EVENT_TRACER
    if (m->tracer != NULL) {
        ember_trace_end(m->tracer, init_token);
        ember_trace_end(m->tracer, load_token);
    }
#endif
    if (st != EMBER_OK) {
        ember_error_prefix("method '%.64s'", plan->name);
        ember_method_destroy(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void ember_method_destroy(ember_method *method) {
    if (method == NULL) return;
    for (uint32_t i = 0; i < method->num_delegates; i++) {
        const ember_backend *b = method->delegates[i].backend;
        if (b != NULL && b->destroy != NULL) b->destroy(method->delegates[i].handle);
    }
    for (uint32_t i = 0; i < method->num_external; i++) {
        const ember_data_loader *l = method->external_loaders[i];
        if (method->external[i].data != NULL && l->release != NULL)
            l->release(l->ctx, &method->external[i]);
    }
    ember_heap_allocator heap = method->heap;
    ember_heap_allocator_release(&heap);
}

/* ---------------------------------------------------------------------- */
/* Inputs and outputs                                                     */
/* ---------------------------------------------------------------------- */

const char *ember_method_name(const ember_method *method) {
    return method != NULL ? method->plan->name : "";
}

size_t ember_method_input_count(const ember_method *method) {
    return method != NULL ? method->num_inputs : 0;
}

size_t ember_method_output_count(const ember_method *method) {
    return method != NULL ? method->num_outputs : 0;
}

static ember_status input_value(ember_method *m, size_t i, uint32_t tag, ember_value **out) {
    if (m == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
    if (i >= m->num_inputs)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "input %zu of %u", i,
                               (unsigned)m->num_inputs);
    *out = &m->values[m->inputs[i]];
    if ((*out)->tag != tag)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "input %zu has kind %u, not %u", i,
                               (unsigned)((*out)->tag), (unsigned)tag);
    return EMBER_OK;
}

ember_status ember_method_set_input_tensor(ember_method *method, size_t i, ember_dtype dtype,
                                           const int64_t *sizes, size_t dim, const void *data,
                                           size_t nbytes) {
    ember_value *v = NULL;
    EMBER_TRY(input_value(method, i, EMBER_TAG_TENSOR, &v));
    ember_tensor *t = v->u.t;
    if ((int)dtype != t->dtype)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "input %zu is %s, got %s", i,
                               ember_dtype_name(t->dtype), ember_dtype_name(dtype));
    if (t->storage == EMBER_STORAGE_CONSTANT)
        return ember_set_error(EMBER_ERR_INVALID_STATE, "input %zu is a constant", i);
    if (dim > EMBER_MAX_DIM || (sizes == NULL && dim > 0))
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "input %zu: bad rank %zu", i, dim);
    int32_t s32[EMBER_MAX_DIM];
    for (size_t d = 0; d < dim; d++) {
        if (sizes[d] < 0 || sizes[d] > INT32_MAX)
            return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "input %zu: size %lld of dim %zu", i,
                                   (long long)sizes[d], d);
        s32[d] = (int32_t)sizes[d];
    }
    int64_t numel;
    size_t expected;
    if (!ember_shape_bytes(s32, dim, ember_dtype_size(dtype), &numel, &expected))
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "input %zu: size overflows", i);
    if (expected != nbytes)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "input %zu: shape needs %zu bytes, got %zu", i, expected, nbytes);
    if (data == NULL && nbytes > 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "input %zu: NULL data", i);
    if (t->storage == EMBER_STORAGE_NONE) t->data = NULL; /* rebinding: no capacity check */
    ember_status st = ember_tensor_resize(t, sizes, dim);
    if (st != EMBER_OK) {
        ember_error_prefix("input %zu", i);
        return st;
    }
    if (t->storage == EMBER_STORAGE_PLANNED) {
        if (nbytes > 0) memcpy(t->data, data, nbytes);
    } else {
        t->data = (void *)(uintptr_t)data;
        t->capacity = nbytes;
    }
    return EMBER_OK;
}

ember_status ember_method_set_input_int(ember_method *method, size_t i, int64_t v) {
    ember_value *val = NULL;
    EMBER_TRY(input_value(method, i, EMBER_TAG_INT, &val));
    val->u.i = v;
    return EMBER_OK;
}

ember_status ember_method_set_input_double(ember_method *method, size_t i, double v) {
    ember_value *val = NULL;
    EMBER_TRY(input_value(method, i, EMBER_TAG_DOUBLE, &val));
    val->u.d = v;
    return EMBER_OK;
}

ember_status ember_method_set_input_bool(ember_method *method, size_t i, bool v) {
    ember_value *val = NULL;
    EMBER_TRY(input_value(method, i, EMBER_TAG_BOOL, &val));
    val->u.b = v;
    return EMBER_OK;
}

ember_status ember_method_set_output_buffer(ember_method *method, size_t i, void *data,
                                            size_t capacity) {
    if (method == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
    if (i >= method->num_outputs)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "output %zu of %u", i,
                               (unsigned)method->num_outputs);
    ember_value *v = &method->values[method->outputs[i]];
    if (v->tag != EMBER_TAG_TENSOR)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "output %zu is not a tensor", i);
    if (v->u.t->storage != EMBER_STORAGE_NONE)
        return ember_set_error(EMBER_ERR_INVALID_STATE, "output %zu already has planned storage",
                               i);
    if (data == NULL && capacity > 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "output %zu: NULL data", i);
    if (capacity < v->u.t->nbytes)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "output %zu: %zu bytes given, current shape needs %zu", i, capacity,
                               v->u.t->nbytes);
    v->u.t->data = data;
    v->u.t->capacity = capacity;
    return EMBER_OK;
}

ember_status ember_method_output(const ember_method *method, size_t i, const ember_value **out) {
    if (method == NULL || out == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    if (i >= method->num_outputs)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "output %zu of %u", i,
                               (unsigned)method->num_outputs);
    *out = &method->values[method->outputs[i]];
    return EMBER_OK;
}

ember_status ember_method_input(const ember_method *method, size_t i, const ember_value **out) {
    if (method == NULL || out == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    if (i >= method->num_inputs)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "input %zu of %u", i,
                               (unsigned)method->num_inputs);
    *out = &method->values[method->inputs[i]];
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Execute                                                                */
/* ---------------------------------------------------------------------- */

/* Reads a jump condition: a Bool, or a bool tensor true only if all are. */
static ember_status condition(const ember_value *v, bool *out) {
    if (v->tag == EMBER_TAG_BOOL) {
        *out = v->u.b;
        return EMBER_OK;
    }
    const ember_tensor *t = v->u.t;
    if (v->tag != EMBER_TAG_TENSOR || t->dtype != EMBER_BOOL)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "jump condition is not a bool");
    const uint8_t *data = t->data;
    *out = true;
    for (int64_t k = 0; k < t->numel; k++)
        if (data[k] == 0) *out = false;
    return EMBER_OK;
}

static ember_status check_bound(const ember_method *m) {
    for (uint32_t k = 0; k < m->num_inputs + m->num_outputs; k++) {
        bool input = k < m->num_inputs;
        uint32_t idx = input ? m->inputs[k] : m->outputs[k - m->num_inputs];
        const ember_value *v = &m->values[idx];
        if (v->tag == EMBER_TAG_TENSOR && v->u.t->data == NULL && v->u.t->nbytes > 0)
            return ember_set_error(EMBER_ERR_INVALID_STATE, "%s %u has no data bound",
                                   input ? "input" : "output",
                                   (unsigned)(input ? k : k - m->num_inputs));
    }
    return EMBER_OK;
}

#if EMBER_EVENT_TRACER
/* A kernel call with its time and (on request) its output recorded. */
static ember_status traced_kernel(ember_method *m, uint32_t ci, uint32_t pc, const instr *in) {
    ember_event_tracer *t = m->tracer;
    uint64_t start = ember_ticks_ns();
    ember_status st = in->fn(&m->kctx, in->args, in->nargs);
    uint64_t end = ember_ticks_ns();
    if (t->flags & EMBER_TRACE_PROFILE)
        ember_trace_profile(t, in->op_name, (int32_t)ci, (int32_t)pc, -1, NULL, start, end, NULL,
                            0);
    if (st == EMBER_OK && (t->flags & (EMBER_TRACE_DEBUG_OUTPUTS | EMBER_TRACE_DEBUG_STATS)) &&
        in->nargs > 0)
        ember_trace_value(t, in->op_name, (int32_t)ci, (int32_t)pc, in->args[in->nargs - 1], false);
    return st;
}

/* A delegate call: the backend reports its own events under this
 * instruction (ember_backend_log_event), then the call itself is recorded. */
static ember_status traced_delegate(ember_method *m, uint32_t ci, uint32_t pc, const instr *in,
                                    const delegate *d) {
    ember_event_tracer *t = m->tracer;
    t->chain = (int32_t)ci;
    t->instruction = (int32_t)pc;
    ember_trace_delegate_begin(t);
    uint64_t start = ember_ticks_ns();
    ember_status st = d->backend->execute(d->handle, in->args, in->nargs);
    uint64_t end = ember_ticks_ns();
    ember_trace_delegate_end();
    t->chain = -1;
    t->instruction = -1;
    if (t->flags & EMBER_TRACE_PROFILE)
        ember_trace_profile(t, "DELEGATE_CALL", (int32_t)ci, (int32_t)pc, -1, NULL, start, end,
                            NULL, 0);
    if (st == EMBER_OK && (t->flags & (EMBER_TRACE_DEBUG_OUTPUTS | EMBER_TRACE_DEBUG_STATS)) &&
        in->nargs > 0)
        ember_trace_value(t, "DELEGATE_CALL", (int32_t)ci, (int32_t)pc, in->args[in->nargs - 1],
                          false);
    return st;
}
#endif

static ember_status run_chain(ember_method *m, uint32_t ci, const chain *c) {
    (void)ci; /* the chain index is only recorded by the event tracer */
    uint32_t pc = 0;
    uint32_t back_jumps = 0;
    while (pc < c->len) {
        const instr *in = &c->instrs[pc];
        ember_status st = EMBER_OK;
        switch (in->kind) {
        case INSTR_KERNEL:
            m->kctx.instruction = pc;
            m->kctx.op_name = in->op_name;
            ember_clear_error();
#if EMBER_EVENT_TRACER
            if (m->tracer != NULL)
                st = traced_kernel(m, ci, pc, in);
            else
#endif
                st = in->fn(&m->kctx, in->args, in->nargs);
            ember_arena_reset(&m->scratch);
            if (st != EMBER_OK) {
                if (ember_last_error()[0] == '\0') ember_set_error(st, "%s", ember_status_str(st));
                ember_error_prefix("instruction %u (%s)", (unsigned)pc, in->op_name);
                return st;
            }
            break;
        case INSTR_DELEGATE: {
            const delegate *d = &m->delegates[in->a];
            ember_clear_error();
#if EMBER_EVENT_TRACER
            if (m->tracer != NULL)
                st = traced_delegate(m, ci, pc, in, d);
            else
#endif
                st = d->backend->execute(d->handle, in->args, in->nargs);
            ember_arena_reset(&m->scratch);
            if (st != EMBER_OK) {
                if (ember_last_error()[0] == '\0') ember_set_error(st, "%s", ember_status_str(st));
                ember_error_prefix("instruction %u (delegate %d, %s)",
                        (unsigned)pc, (int)in->a, d->id);
                return st;
            }
            break;
        }
        case INSTR_MOVE:
            /* Tensors alias: the destination now names the same tensor. */
            m->values[in->b] = m->values[in->a];
            break;
        case INSTR_JUMP_FALSE: {
            bool cond = false;
            st = condition(&m->values[in->a], &cond);
            if (st != EMBER_OK) {
                ember_error_prefix("instruction %u", (unsigned)pc);
                return st;
            }
            if (!cond) {
                if ((uint32_t)in->b <= pc && ++back_jumps > EMBER_MAX_BACKWARD_JUMPS)
                    return ember_set_error(EMBER_ERR_LOOP_LIMIT,
                                           "instruction %u: more than %d backward jumps",
                                           (unsigned)pc, EMBER_MAX_BACKWARD_JUMPS);
                pc = (uint32_t)in->b;
                continue;
            }
            break;
        }
        case INSTR_FREE:
            /* Storage belongs to the memory plan or to the caller: nothing to do. */
            break;
        default:
            return ember_set_error(EMBER_ERR_INVALID_PROGRAM, "instruction %u: bad kind",
                                   (unsigned)pc);
        }
        pc++;
    }
    return EMBER_OK;
}

ember_status ember_method_execute(ember_method *method) {
    if (method == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
    EMBER_TRY(check_bound(method));
#if EMBER_EVENT_TRACER
    uint32_t token = 0;
    if (method->tracer != NULL) {
        ember_trace_begin_run(method->tracer, NULL, method->plan->name);
        if (tracing(method, EMBER_TRACE_PROFILE))
            token = ember_trace_start(method->tracer, "Method::execute", -1, -1);
    }
#endif
    ember_status st = EMBER_OK;
    for (uint32_t c = 0; c < method->num_chains && st == EMBER_OK; c++)
        st = run_chain(method, c, &method->chains[c]);
#if EMBER_EVENT_TRACER
    if (method->tracer != NULL) {
        ember_trace_end(method->tracer, token);
        if (st == EMBER_OK && tracing(method, EMBER_TRACE_PROGRAM_OUTPUTS))
            for (uint32_t k = 0; k < method->num_outputs; k++)
                ember_trace_value(method->tracer, NULL, -1, -1,
                                  &method->values[method->outputs[k]], true);
    }
#endif
    if (st != EMBER_OK) ember_error_prefix("method '%.64s'", method->plan->name);
    return st;
}

ember_status ember_method_set_event_tracer(ember_method *method, ember_event_tracer *tracer) {
    if (method == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
#if EMBER_EVENT_TRACER
    if (tracer != NULL && tracer->magic != TRACE_MAGIC)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "not an initialized event tracer");
    method->tracer = tracer;
    return EMBER_OK;
#else
    if (tracer == NULL) return EMBER_OK;
    return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                           "the event tracer is not in this build (EMBER_EVENT_TRACER=0)");
#endif
}
