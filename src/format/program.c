/*
 * Program load: header, segments, and full verification of every method.
 */
#include <string.h>

#include "format/program.h"

/* Extended header: "eh00", length, program_size, segment_base, segment_size. */
#define HEADER_OFFSET 8
#define HEADER_MIN_LENGTH 24
#define HEADER_BYTES (HEADER_OFFSET + 32)

/* ---------------------------------------------------------------------- */
/* Decoders                                                               */
/* ---------------------------------------------------------------------- */

ember_status pte_value_tag(const ember_program *p, const pte_plan *plan, int64_t i, uint32_t *tag) {
    fb_table v;
    uint8_t t;
    if (i < 0 || i >= plan->values.len)
        return ember_invalid_program("value index %lld out of range", (long long)i);
    if (!fb_vec_table(&p->r, &plan->values, (uint32_t)i, &v) ||
        !fb_u8(&p->r, &v, EVALUE_TYPE, 0, &t))
        return ember_invalid_program("value %lld is malformed", (long long)i);
    *tag = t == 1 ? EMBER_TAG_NONE : t;
    return EMBER_OK;
}

/* Checks that every item of a list indexes a value of the wanted kind. */
static ember_status check_list_items(const ember_program *p, const pte_plan *plan, uint32_t self,
                                     const fb_vec *items, bool is_i64, uint32_t want,
                                     bool allow_none) {
    for (uint32_t k = 0; k < items->len; k++) {
        int64_t idx = is_i64 ? fb_vec_i64(&p->r, items, k) : fb_vec_i32(&p->r, items, k);
        uint32_t tag;
        if (allow_none && idx == -1) continue;
        if (idx < 0 || idx >= plan->values.len || (uint32_t)idx == self)
            return ember_invalid_program("value %u: list item %u indexes value %lld (of %u)",
                                         (unsigned)self, (unsigned)k, (long long)idx,
                                         (unsigned)plan->values.len);
        EMBER_TRY(pte_value_tag(p, plan, idx, &tag));
        if (tag != want)
            return ember_invalid_program(
                "value %u: list item %u indexes value %lld of kind %u, expected %u", (unsigned)self,
                (unsigned)k, (long long)idx, (unsigned)tag, (unsigned)want);
    }
    return EMBER_OK;
}

static ember_status decode_tensor(const ember_program *p, const pte_plan *plan, uint32_t vi,
                                  const fb_table *t, pte_tensor *out) {
    const fb_reader *r = &p->r;
    uint8_t dtype, dynamism;
    int32_t storage_offset;
    uint32_t buffer_idx;
    fb_vec sizes, dim_order;
    bool has_sizes, has_order, has_alloc, has_extra;
    fb_table alloc, extra;

    memset(out, 0, sizeof *out);
    if (!fb_u8(r, t, TENSOR_SCALAR_TYPE, 0, &dtype) ||
        !fb_i32(r, t, TENSOR_STORAGE_OFFSET, 0, &storage_offset) ||
        !fb_u32(r, t, TENSOR_DATA_BUFFER_IDX, 0, &buffer_idx) ||
        !fb_u8(r, t, TENSOR_DYNAMISM, 0, &dynamism) ||
        !fb_vec_field(r, t, TENSOR_SIZES, 4, &sizes, &has_sizes) ||
        !fb_vec_field(r, t, TENSOR_DIM_ORDER, 1, &dim_order, &has_order) ||
        !fb_table_field(r, t, TENSOR_ALLOCATION, &alloc, &has_alloc) ||
        !fb_table_field(r, t, TENSOR_EXTRA, &extra, &has_extra))
        return ember_invalid_program("value %u: tensor table is malformed", (unsigned)vi);
    size_t elem = ember_dtype_size(dtype);
    if (elem == 0)
        return ember_invalid_program("value %u: unknown scalar type %u", (unsigned)vi, dtype);
    if (storage_offset != 0)
        return ember_invalid_program("value %u: storage_offset %d is not 0", (unsigned)vi,
                                     (int)storage_offset);
    if (dynamism > EMBER_SHAPE_DYNAMIC_UNBOUND)
        return ember_invalid_program("value %u: unknown shape dynamism %u", (unsigned)vi, dynamism);
    if (sizes.len > EMBER_MAX_DIM)
        return ember_invalid_program("value %u: rank %u exceeds %d", (unsigned)vi,
                                     (unsigned)sizes.len, EMBER_MAX_DIM);
    out->dtype = dtype;
    out->dynamism = dynamism;
    out->dim = sizes.len;
    for (uint32_t d = 0; d < sizes.len; d++) {
        out->sizes[d] = fb_vec_i32(r, &sizes, d);
        if (out->sizes[d] < 0)
            return ember_invalid_program("value %u: size %d of dim %u", (unsigned)vi,
                                         (int)out->sizes[d], (unsigned)d);
    }
    /* dim_order must be a permutation of 0..dim-1 (absent: contiguous). */
    if (has_order && dim_order.len != sizes.len)
        return ember_invalid_program("value %u: dim_order has %u entries for rank %u", (unsigned)vi,
                                     (unsigned)dim_order.len, (unsigned)sizes.len);
    uint32_t seen = 0;
    for (uint32_t d = 0; d < out->dim; d++) {
        uint8_t o = has_order ? fb_vec_u8(r, &dim_order, d) : (uint8_t)d;
        if (o >= out->dim || (seen & (1u << o)) != 0)
            return ember_invalid_program("value %u: dim_order is not a permutation", (unsigned)vi);
        seen |= 1u << o;
        out->dim_order[d] = o;
    }
    if (!ember_shape_bytes(out->sizes, out->dim, elem, &out->numel, &out->nbytes))
        return ember_invalid_program("value %u: tensor size overflows", (unsigned)vi);
    if (has_extra) {
        uint8_t location;
        bool has_fqn;
        if (!fb_u8(r, &extra, EXTRA_LOCATION, 0, &location) ||
            !fb_str_field(r, &extra, EXTRA_FQN, &out->fqn, &has_fqn))
            return ember_invalid_program("value %u: extra_tensor_info is malformed", (unsigned)vi);
        if (location > 1)
            return ember_invalid_program("value %u: unknown tensor data location %u", (unsigned)vi,
                                         location);
        /* EXTERNAL: the data lives in a data map under the tensor's name;
         * data_buffer_idx then indexes the exporter's own list and is unused. */
        if (location == 1) {
            if (!has_fqn || out->fqn.len == 0)
                return ember_invalid_program(
                    "value %u: external tensor without a fully_qualified_name", (unsigned)vi);
            out->external = true;
        }
    }

    if (has_alloc) {
        uint32_t id, lo, hi;
        size_t cap, end;
        if (!fb_u32(r, &alloc, ALLOC_MEMORY_ID, 0, &id) ||
            !fb_u32(r, &alloc, ALLOC_OFFSET_LOW, 0, &lo) ||
            !fb_u32(r, &alloc, ALLOC_OFFSET_HIGH, 0, &hi))
            return ember_invalid_program("value %u: allocation_info is malformed", (unsigned)vi);
        if (id == 0 || id >= plan->buffer_sizes.len)
            return ember_invalid_program(
                "value %u: memory_id %u out of range (1..%u)", (unsigned)vi, (unsigned)id,
                (unsigned)(plan->buffer_sizes.len > 0 ? plan->buffer_sizes.len - 1 : 0));
        uint64_t offset = (uint64_t)lo | ((uint64_t)hi << 32);
        EMBER_TRY(pte_buffer_size(p, plan, id, &cap));
        if (offset > cap || ember_add_overflow((size_t)offset, out->nbytes, &end) || end > cap)
            return ember_invalid_program(
                "value %u: %zu bytes at offset %llu overflow planned buffer %u (%zu bytes)",
                (unsigned)vi, out->nbytes, (unsigned long long)offset, (unsigned)id, cap);
        if ((offset & ((elem < 8 ? elem : 8) - 1)) != 0)
            return ember_invalid_program("value %u: planned offset %llu is misaligned for %s",
                                         (unsigned)vi, (unsigned long long)offset,
                                         ember_dtype_name(dtype));
        out->storage = EMBER_STORAGE_PLANNED;
        out->memory_id = id;
        out->memory_offset = offset;
        if (buffer_idx > 0 && !out->external) {
            fb_table seg;
            uint64_t seg_size, off;
            if (!p->has_mutable || buffer_idx >= p->mutable_offsets.len)
                return ember_invalid_program("value %u: mutable data index %u out of range",
                                             (unsigned)vi, (unsigned)buffer_idx);
            if (!fb_vec_table(r, &p->segments, p->mutable_segment, &seg) ||
                !fb_u64(r, &seg, SEGMENT_SIZE, 0, &seg_size))
                return ember_invalid_program("value %u: mutable data segment is malformed",
                                             (unsigned)vi);
            off = fb_vec_u64(r, &p->mutable_offsets, buffer_idx);
            if (off > seg_size || out->nbytes > seg_size - off)
                return ember_invalid_program(
                    "value %u: initial data (%zu bytes at %llu) overflows its segment",
                    (unsigned)vi, out->nbytes, (unsigned long long)off);
            out->mutable_index = buffer_idx;
        }
    } else if (out->external) {
        out->storage = EMBER_STORAGE_CONSTANT; /* bound from a data map at method load */
    } else if (buffer_idx > 0) {
        const uint8_t *data;
        if (p->use_constant_segment) {
            if (buffer_idx >= p->constant_offsets.len)
                return ember_invalid_program("value %u: constant index %u out of range (%u)",
                                             (unsigned)vi, (unsigned)buffer_idx,
                                             (unsigned)p->constant_offsets.len);
            uint64_t off = fb_vec_u64(r, &p->constant_offsets, buffer_idx);
            if (off > p->constants.size || out->nbytes > p->constants.size - off)
                return ember_invalid_program(
                    "value %u: constant (%zu bytes at %llu) overflows the constant segment",
                    (unsigned)vi, out->nbytes, (unsigned long long)off);
            data = (const uint8_t *)p->constants.data + off;
        } else {
            fb_table buf;
            fb_vec storage;
            bool present;
            if (buffer_idx >= p->constant_buffers.len)
                return ember_invalid_program("value %u: constant buffer %u out of range (%u)",
                                             (unsigned)vi, (unsigned)buffer_idx,
                                             (unsigned)p->constant_buffers.len);
            if (!fb_vec_table(r, &p->constant_buffers, buffer_idx, &buf) ||
                !fb_vec_field(r, &buf, 0, 1, &storage, &present) || storage.len < out->nbytes)
                return ember_invalid_program("value %u: constant buffer %u is malformed or short",
                                             (unsigned)vi, (unsigned)buffer_idx);
            data = fb_vec_bytes(r, &storage);
        }
        size_t align = elem < 8 ? elem : 8;
        if (((uintptr_t)data & (align - 1)) != 0)
            return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                                   "value %u: constant data is misaligned; load the program from "
                                   "memory aligned to 16 bytes",
                                   (unsigned)vi);
        out->storage = EMBER_STORAGE_CONSTANT;
        out->constant = data;
    } else {
        out->storage = EMBER_STORAGE_NONE;
    }
    return EMBER_OK;
}

ember_status pte_decode_value(const ember_program *p, const pte_plan *plan, uint32_t i, pte_value *out) {
    const fb_reader *r = &p->r;
    fb_table v, val;
    uint8_t type;
    bool present;
    memset(out, 0, sizeof *out);
    if (i >= plan->values.len)
        return ember_invalid_program("value index %u out of range", (unsigned)i);
    if (!fb_vec_table(r, &plan->values, i, &v) || !fb_u8(r, &v, EVALUE_TYPE, 0, &type) ||
        !fb_table_field(r, &v, EVALUE_VAL, &val, &present))
        return ember_invalid_program("value %u is malformed", (unsigned)i);
    if (type <= 1) {
        out->tag = EMBER_TAG_NONE;
        return EMBER_OK;
    }
    if (!present)
        return ember_invalid_program("value %u (kind %u) has no payload", (unsigned)i, type);
    out->tag = type;
    switch (type) {
    case EMBER_TAG_INT:
        if (!fb_i64(r, &val, 0, 0, &out->u.i))
            return ember_invalid_program("value %u: bad int", (unsigned)i);
        return EMBER_OK;
    case EMBER_TAG_BOOL: {
        uint8_t b;
        if (!fb_u8(r, &val, 0, 0, &b))
            return ember_invalid_program("value %u: bad bool", (unsigned)i);
        out->u.b = b != 0;
        return EMBER_OK;
    }
    case EMBER_TAG_DOUBLE:
        if (!fb_f64(r, &val, 0, 0.0, &out->u.d))
            return ember_invalid_program("value %u: bad double", (unsigned)i);
        return EMBER_OK;
    case EMBER_TAG_STRING:
        if (!fb_str_field(r, &val, 0, &out->u.s, &present))
            return ember_invalid_program("value %u: bad string", (unsigned)i);
        return EMBER_OK;
    case EMBER_TAG_TENSOR:
        return decode_tensor(p, plan, i, &val, &out->u.t);
    case EMBER_TAG_INT_LIST:
        if (!fb_vec_field(r, &val, 0, 8, &out->u.list, &present))
            return ember_invalid_program("value %u: bad int list", (unsigned)i);
        return check_list_items(p, plan, i, &out->u.list, true, EMBER_TAG_INT, false);
    case EMBER_TAG_DOUBLE_LIST:
        if (!fb_vec_field(r, &val, 0, 8, &out->u.list, &present))
            return ember_invalid_program("value %u: bad double list", (unsigned)i);
        return EMBER_OK;
    case EMBER_TAG_BOOL_LIST:
        if (!fb_vec_field(r, &val, 0, 1, &out->u.list, &present))
            return ember_invalid_program("value %u: bad bool list", (unsigned)i);
        return EMBER_OK;
    case EMBER_TAG_TENSOR_LIST:
    case EMBER_TAG_OPTIONAL_TENSOR_LIST:
        if (!fb_vec_field(r, &val, 0, 4, &out->u.list, &present))
            return ember_invalid_program("value %u: bad tensor list", (unsigned)i);
        return check_list_items(p, plan, i, &out->u.list, false, EMBER_TAG_TENSOR,
                                type == EMBER_TAG_OPTIONAL_TENSOR_LIST);
    default: return ember_invalid_program("value %u: unknown value kind %u", (unsigned)i, type);
    }
}

/* Checks that every entry of an int vector indexes a value. */
static ember_status check_indices(const ember_program *p, const pte_plan *plan, const fb_vec *v,
                                  const char *what, uint32_t owner) {
    for (uint32_t k = 0; k < v->len; k++) {
        int32_t idx = fb_vec_i32(&p->r, v, k);
        if (idx < 0 || (uint32_t)idx >= plan->values.len)
            return ember_invalid_program("%s %u: argument %u indexes value %d (of %u)", what,
                                         (unsigned)owner, (unsigned)k, (int)idx,
                                         (unsigned)plan->values.len);
    }
    return EMBER_OK;
}

ember_status pte_instruction(const ember_program *p, const pte_plan *plan, uint32_t chain,
                             uint32_t i, pte_instr *out, uint32_t *chain_len) {
    const fb_reader *r = &p->r;
    fb_table c, ins, args;
    fb_vec list;
    bool present;
    uint8_t type;
    memset(out, 0, sizeof *out);
    if (!fb_vec_table(r, &plan->chains, chain, &c) ||
        !fb_vec_field(r, &c, CHAIN_INSTRUCTIONS, 4, &list, &present))
        return ember_invalid_program("chain %u is malformed", (unsigned)chain);
    *chain_len = list.len;
    if (i >= list.len) return EMBER_OK;
    if (!fb_vec_table(r, &list, i, &ins) || !fb_u8(r, &ins, INSTR_TYPE, 0, &type) ||
        !fb_table_field(r, &ins, INSTR_ARGS, &args, &present) || !present)
        return ember_invalid_program("chain %u instruction %u is malformed", (unsigned)chain,
                                     (unsigned)i);
    out->kind = type;
    switch (type) {
    case INSTR_KERNEL:
    case INSTR_DELEGATE: {
        uint32_t limit = type == INSTR_KERNEL ? plan->operators.len : plan->delegates.len;
        if (!fb_i32(r, &args, 0, 0, &out->a) || !fb_vec_field(r, &args, 1, 4, &out->args, &present))
            return ember_invalid_program("instruction %u is malformed", (unsigned)i);
        if (out->a < 0 || (uint32_t)out->a >= limit)
            return ember_invalid_program(
                "instruction %u: %s index %d out of range (%u)", (unsigned)i,
                type == INSTR_KERNEL ? "operator" : "delegate", (int)out->a, (unsigned)limit);
        return check_indices(p, plan, &out->args, "instruction", i);
    }
    case INSTR_MOVE: {
        uint32_t from_tag, to_tag;
        if (!fb_i32(r, &args, 0, 0, &out->a) || !fb_i32(r, &args, 1, 0, &out->b))
            return ember_invalid_program("instruction %u is malformed", (unsigned)i);
        EMBER_TRY(pte_value_tag(p, plan, out->a, &from_tag));
        EMBER_TRY(pte_value_tag(p, plan, out->b, &to_tag));
        /* Kinds never change at run time: list items rely on it. */
        if (from_tag != to_tag)
            return ember_invalid_program("instruction %u: move between values of kinds %u and %u",
                                         (unsigned)i, (unsigned)from_tag, (unsigned)to_tag);
        return EMBER_OK;
    }
    case INSTR_JUMP_FALSE: {
        uint32_t tag;
        if (!fb_i32(r, &args, 0, 0, &out->a) || !fb_i32(r, &args, 1, 0, &out->b))
            return ember_invalid_program("instruction %u is malformed", (unsigned)i);
        EMBER_TRY(pte_value_tag(p, plan, out->a, &tag));
        if (tag != EMBER_TAG_BOOL && tag != EMBER_TAG_TENSOR)
            return ember_invalid_program("instruction %u: jump condition value %d is not a bool",
                                         (unsigned)i, (int)out->a);
        /* Jumping to the chain's length ends the chain (skips the last branch). */
        if (out->b < 0 || (uint32_t)out->b > list.len)
            return ember_invalid_program("instruction %u: jump destination %d out of range (0..%u)",
                                         (unsigned)i, (int)out->b, (unsigned)list.len);
        return EMBER_OK;
    }
    case INSTR_FREE: {
        uint32_t tag;
        if (!fb_i32(r, &args, 0, 0, &out->a))
            return ember_invalid_program("instruction %u is malformed", (unsigned)i);
        return pte_value_tag(p, plan, out->a, &tag);
    }
    default: return ember_invalid_program("instruction %u: unknown kind %u", (unsigned)i, type);
    }
}

ember_status pte_operator(const ember_program *p, const pte_plan *plan, uint32_t i, fb_str *name,
                          fb_str *overload) {
    fb_table op;
    bool has_name, has_overload;
    if (!fb_vec_table(&p->r, &plan->operators, i, &op) ||
        !fb_str_field(&p->r, &op, OPERATOR_NAME, name, &has_name) ||
        !fb_str_field(&p->r, &op, OPERATOR_OVERLOAD, overload, &has_overload) || !has_name ||
        name->len == 0)
        return ember_invalid_program("operator %u is malformed", (unsigned)i);
    if ((size_t)name->len + overload->len + 2 > EMBER_MAX_NAME)
        return ember_invalid_program("operator %u: name longer than %d bytes", (unsigned)i,
                                     EMBER_MAX_NAME);
    return EMBER_OK;
}

ember_status pte_delegate_ref(const ember_program *p, const pte_plan *plan, uint32_t i,
                              pte_delegate *out) {
    const fb_reader *r = &p->r;
    fb_table d, ref;
    bool has_id, has_ref, present;
    memset(out, 0, sizeof *out);
    if (!fb_vec_table(r, &plan->delegates, i, &d) ||
        !fb_str_field(r, &d, DELEGATE_ID, &out->id, &has_id) ||
        !fb_table_field(r, &d, DELEGATE_PROCESSED, &ref, &has_ref) || !has_id || !has_ref ||
        !fb_u8(r, &ref, DATAREF_LOCATION, 0, &out->location) ||
        !fb_u32(r, &ref, DATAREF_INDEX, 0, &out->index) ||
        !fb_vec_field(r, &d, DELEGATE_SPECS, 4, &out->specs, &present))
        return ember_invalid_program("delegate %u is malformed", (unsigned)i);
    if (out->id.len == 0 || out->id.len >= EMBER_MAX_NAME)
        return ember_invalid_program("delegate %u: bad id", (unsigned)i);
    if (out->location > 1)
        return ember_invalid_program("delegate %u: unknown data location %u", (unsigned)i,
                                     out->location);
    uint32_t limit = out->location == 0 ? p->delegate_data.len : p->segments.len;
    if (out->index >= limit)
        return ember_invalid_program("delegate %u: data index %u out of range (%u)", (unsigned)i,
                                     (unsigned)out->index, (unsigned)limit);
    if (out->location == 0) {
        fb_table inl;
        fb_vec data;
        if (!fb_vec_table(r, &p->delegate_data, out->index, &inl) ||
            !fb_vec_field(r, &inl, 0, 1, &data, &present))
            return ember_invalid_program("delegate %u: inline data is malformed", (unsigned)i);
    }
    for (uint32_t k = 0; k < out->specs.len; k++) {
        fb_table spec;
        fb_str key;
        fb_vec value;
        if (!fb_vec_table(r, &out->specs, k, &spec) ||
            !fb_str_field(r, &spec, SPEC_KEY, &key, &present) ||
            !fb_vec_field(r, &spec, SPEC_VALUE, 1, &value, &present))
            return ember_invalid_program("delegate %u: compile spec %u is malformed", (unsigned)i,
                                         (unsigned)k);
    }
    return EMBER_OK;
}

ember_status pte_buffer_size(const ember_program *p, const pte_plan *plan, uint32_t id,
                             size_t *bytes) {
    if (id >= plan->buffer_sizes.len)
        return ember_invalid_program("planned buffer %u out of range", (unsigned)id);
    int64_t v = fb_vec_i64(&p->r, &plan->buffer_sizes, id);
    if (v < 0 || (uint64_t)v > SIZE_MAX)
        return ember_invalid_program("planned buffer %u has size %lld", (unsigned)id, (long long)v);
    *bytes = (size_t)v;
    return EMBER_OK;
}

/* Loads through the program's data loader. A loader written by a user may
 * fail without setting a message; the failure still gets one. */
static ember_status loader_load(const ember_program *p, uint64_t offset, size_t size,
                                ember_segment_kind kind, ember_buffer *out) {
    ember_clear_error();
    ember_status st = p->loader->load(p->loader->ctx, offset, size, kind, out);
    if (st != EMBER_OK && ember_last_error()[0] == '\0')
        ember_set_error(st, "data loader failed (%s) to load %zu bytes at offset %llu",
                        ember_status_str(st), size, (unsigned long long)offset);
    return st;
}

ember_status pte_load_segment(const ember_program *p, uint32_t index, ember_segment_kind kind,
                              ember_buffer *out) {
    fb_table seg;
    uint64_t offset, size;
    if (!fb_vec_table(&p->r, &p->segments, index, &seg) ||
        !fb_u64(&p->r, &seg, SEGMENT_OFFSET, 0, &offset) ||
        !fb_u64(&p->r, &seg, SEGMENT_SIZE, 0, &size))
        return ember_invalid_program("segment %u is malformed", (unsigned)index);
    /* Checked against segment_data_size at load. */
    return loader_load(p, p->segment_base + offset, (size_t)size, kind, out);
}

void pte_release(const ember_program *p, ember_buffer *buf) {
    if (buf->data != NULL && p->loader->release != NULL) p->loader->release(p->loader->ctx, buf);
    buf->data = NULL;
    buf->size = 0;
}

bool pte_find_named_data(const ember_program *p, const char *key, size_t len, uint32_t *segment) {
    /* Entries were checked at load. */
    for (uint32_t i = 0; i < p->named_data.len; i++) {
        fb_table t;
        fb_str k;
        bool present;
        fb_vec_table(&p->r, &p->named_data, i, &t);
        fb_str_field(&p->r, &t, NAMED_DATA_KEY, &k, &present);
        if (k.len == len && memcmp(k.data, key, len) == 0) {
            fb_u32(&p->r, &t, NAMED_DATA_SEGMENT, 0, segment);
            return true;
        }
    }
    return false;
}

ember_status pte_named_data(const ember_program *p, const char *key, size_t len,
                            uint32_t *segment) {
    if (pte_find_named_data(p, key, len, segment)) return EMBER_OK;
    return ember_set_error(EMBER_ERR_NOT_FOUND, "no named data '%.*s'",
                           (int)(len < 256 ? len : 256), key);
}

ember_status pte_find_plan(const ember_program *p, const char *name, const pte_plan **out) {
    if (p == NULL || name == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    for (size_t i = 0; i < p->num_plans; i++) {
        if (strcmp(p->plans[i].name, name) == 0) {
            *out = &p->plans[i];
            return EMBER_OK;
        }
    }
    return ember_set_error(EMBER_ERR_NOT_FOUND, "no method named '%s'", name);
}

/* ---------------------------------------------------------------------- */
/* Load                                                                   */
/* ---------------------------------------------------------------------- */

/* Reads the fixed header and the optional extended header. */
static ember_status read_header(ember_program *p, uint64_t *program_size) {
    ember_buffer head;
    size_t n = p->file_size < HEADER_BYTES ? (size_t)p->file_size : HEADER_BYTES;
    if (p->file_size < 8)
        return ember_set_error(EMBER_ERR_TRUNCATED,
                               "file has %llu bytes, a program needs at least 8",
                               (unsigned long long)p->file_size);
    EMBER_TRY(loader_load(p, 0, n, EMBER_SEGMENT_PROGRAM, &head));
    const uint8_t *h = head.data;
    ember_status st = EMBER_OK;
    *program_size = p->file_size;
    if (memcmp(h + 4, "ET12", 4) != 0) {
        st = ember_set_error(EMBER_ERR_BAD_IDENTIFIER, "file identifier is not ET12");
    } else if (n >= HEADER_OFFSET + 16 && memcmp(h + HEADER_OFFSET, "eh00", 4) == 0) {
        uint32_t len = fb_rd_u32(h + HEADER_OFFSET + 4);
        if (len < HEADER_MIN_LENGTH || n < HEADER_OFFSET + 32) {
            st = ember_set_error(EMBER_ERR_TRUNCATED, "extended header is truncated");
        } else {
            *program_size = fb_rd_u64(h + HEADER_OFFSET + 8);
            p->segment_base = fb_rd_u64(h + HEADER_OFFSET + 16);
            p->segment_data_size = fb_rd_u64(h + HEADER_OFFSET + 24);
            if (*program_size < 8 || *program_size > p->file_size)
                st = ember_set_error(
                    EMBER_ERR_TRUNCATED, "program size %llu does not fit the %llu-byte file",
                    (unsigned long long)*program_size, (unsigned long long)p->file_size);
            else if (p->segment_base != 0 &&
                     (p->segment_base < *program_size || p->segment_base > p->file_size ||
                      p->segment_data_size > p->file_size - p->segment_base))
                st = ember_set_error(EMBER_ERR_TRUNCATED,
                                     "segments (%llu bytes at %llu) do not fit the %llu-byte file",
                                     (unsigned long long)p->segment_data_size,
                                     (unsigned long long)p->segment_base,
                                     (unsigned long long)p->file_size);
        }
    }
    pte_release(p, &head);
    if (st == EMBER_OK && *program_size > SIZE_MAX)
        st = ember_set_error(EMBER_ERR_NOT_SUPPORTED, "program too large for this machine");
    return st;
}

/* Locates the segment table, constants and mutable data. */
static ember_status read_segments(ember_program *p) {
    const fb_reader *r = &p->r;
    fb_table cs;
    fb_vec muts;
    bool present, has_cs;
    if (!fb_vec_field(r, &p->root, PROGRAM_SEGMENTS, 4, &p->segments, &present) ||
        !fb_vec_field(r, &p->root, PROGRAM_CONSTANT_BUFFER, 4, &p->constant_buffers, &present) ||
        !fb_vec_field(r, &p->root, PROGRAM_DELEGATE_DATA, 4, &p->delegate_data, &present) ||
        !fb_table_field(r, &p->root, PROGRAM_CONSTANT_SEGMENT, &cs, &has_cs) ||
        !fb_vec_field(r, &p->root, PROGRAM_MUTABLE_SEGMENTS, 4, &muts, &present) ||
        !fb_vec_field(r, &p->root, PROGRAM_NAMED_DATA, 4, &p->named_data, &present))
        return ember_invalid_program("program table is malformed");
    /* Without an extended header segment_data_size is 0, so only empty
     * segments pass the check below (the exporter writes one for a program
     * without constants). */
    for (uint32_t i = 0; i < p->segments.len; i++) {
        fb_table seg;
        uint64_t offset, size;
        if (!fb_vec_table(r, &p->segments, i, &seg) || !fb_u64(r, &seg, SEGMENT_OFFSET, 0, &offset) ||
            !fb_u64(r, &seg, SEGMENT_SIZE, 0, &size))
            return ember_invalid_program("segment %u is malformed", (unsigned)i);
        if (offset > p->segment_data_size || size > p->segment_data_size - offset ||
            size > SIZE_MAX)
            return ember_invalid_program(
                "segment %u (%llu bytes at %llu) overflows the segment data (%llu bytes)",
                (unsigned)i, (unsigned long long)size, (unsigned long long)offset,
                (unsigned long long)p->segment_data_size);
    }
    for (uint32_t i = 0; i < p->delegate_data.len; i++) {
        fb_table t;
        if (!fb_vec_table(r, &p->delegate_data, i, &t))
            return ember_invalid_program("inline delegate data %u is malformed", (unsigned)i);
    }
    for (uint32_t i = 0; i < p->named_data.len; i++) {
        fb_table t;
        fb_str key;
        uint32_t segment;
        if (!fb_vec_table(r, &p->named_data, i, &t) ||
            !fb_str_field(r, &t, NAMED_DATA_KEY, &key, &present) || !present ||
            !fb_u32(r, &t, NAMED_DATA_SEGMENT, 0, &segment))
            return ember_invalid_program("named data %u is malformed", (unsigned)i);
        if (segment >= p->segments.len)
            return ember_invalid_program("named data %u ('%s'): segment %u out of range (%u)",
                                         (unsigned)i, key.data, (unsigned)segment,
                                         (unsigned)p->segments.len);
    }
    for (uint32_t i = 0; i < p->constant_buffers.len; i++) {
        fb_table t;
        fb_vec storage;
        if (!fb_vec_table(r, &p->constant_buffers, i, &t) ||
            !fb_vec_field(r, &t, 0, 1, &storage, &present))
            return ember_invalid_program("constant buffer %u is malformed", (unsigned)i);
    }
    if (has_cs) {
        uint32_t index;
        if (!fb_u32(r, &cs, SUBSEG_INDEX, 0, &index) ||
            !fb_vec_field(r, &cs, SUBSEG_OFFSETS, 8, &p->constant_offsets, &present))
            return ember_invalid_program("constant_segment is malformed");
        if (p->constant_offsets.len > 0) {
            if (index >= p->segments.len)
                return ember_invalid_program("constant segment index %u out of range (%u)",
                                             (unsigned)index, (unsigned)p->segments.len);
            p->use_constant_segment = true;
            EMBER_TRY(pte_load_segment(p, index, EMBER_SEGMENT_CONSTANT, &p->constants));
        }
    }
    if (muts.len > 0) {
        fb_table m;
        if (!fb_vec_table(r, &muts, 0, &m) || !fb_u32(r, &m, SUBSEG_INDEX, 0, &p->mutable_segment) ||
            !fb_vec_field(r, &m, SUBSEG_OFFSETS, 8, &p->mutable_offsets, &present))
            return ember_invalid_program("mutable_data_segments is malformed");
        if (p->mutable_segment >= p->segments.len)
            return ember_invalid_program("mutable data segment index %u out of range (%u)",
                                         (unsigned)p->mutable_segment, (unsigned)p->segments.len);
        p->has_mutable = true;
    }
    return EMBER_OK;
}

/* Verifies one execution plan completely. */
static ember_status verify_plan(ember_program *p, pte_plan *plan) {
    const fb_reader *r = &p->r;
    for (uint32_t i = 0; i < plan->buffer_sizes.len; i++) {
        size_t bytes;
        EMBER_TRY(pte_buffer_size(p, plan, i, &bytes));
    }
    plan->num_external = 0;
    for (uint32_t i = 0; i < plan->values.len; i++) {
        pte_value v;
        EMBER_TRY(pte_decode_value(p, plan, i, &v));
        if (v.tag == EMBER_TAG_TENSOR && v.u.t.external && v.u.t.storage == EMBER_STORAGE_CONSTANT)
            plan->num_external++;
    }
    EMBER_TRY(check_indices(p, plan, &plan->inputs, "inputs", 0));
    EMBER_TRY(check_indices(p, plan, &plan->outputs, "outputs", 0));
    for (uint32_t i = 0; i < plan->operators.len; i++) {
        fb_str name, overload;
        EMBER_TRY(pte_operator(p, plan, i, &name, &overload));
    }
    for (uint32_t i = 0; i < plan->delegates.len; i++) {
        pte_delegate d;
        EMBER_TRY(pte_delegate_ref(p, plan, i, &d));
    }
    plan->num_instructions = 0;
    for (uint32_t c = 0; c < plan->chains.len; c++) {
        uint32_t len = 0;
        pte_instr ins;
        EMBER_TRY(pte_instruction(p, plan, c, 0, &ins, &len));
        for (uint32_t i = 1; i < len; i++) EMBER_TRY(pte_instruction(p, plan, c, i, &ins, &len));
        plan->num_instructions += len;
    }
    (void)r;
    return EMBER_OK;
}

static ember_status read_plans(ember_program *p, ember_allocator *alloc) {
    const fb_reader *r = &p->r;
    fb_vec plans;
    bool present;
    if (!fb_vec_field(r, &p->root, PROGRAM_EXECUTION_PLAN, 4, &plans, &present))
        return ember_invalid_program("execution_plan is malformed");
    size_t bytes;
    if (ember_mul_overflow(plans.len, sizeof(pte_plan), &bytes))
        return ember_invalid_program("too many execution plans");
    p->plans = ember_alloc(alloc, bytes, _Alignof(pte_plan));
    if (p->plans == NULL)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate %u method tables",
                               (unsigned)plans.len);
    for (uint32_t i = 0; i < plans.len; i++) {
        pte_plan *plan = &p->plans[i];
        fb_str name;
        memset(plan, 0, sizeof *plan);
        if (!fb_vec_table(r, &plans, i, &plan->table) ||
            !fb_str_field(r, &plan->table, PLAN_NAME, &name, &present) || !present ||
            !fb_vec_field(r, &plan->table, PLAN_VALUES, 4, &plan->values, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_INPUTS, 4, &plan->inputs, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_OUTPUTS, 4, &plan->outputs, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_CHAINS, 4, &plan->chains, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_OPERATORS, 4, &plan->operators, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_DELEGATES, 4, &plan->delegates, &present) ||
            !fb_vec_field(r, &plan->table, PLAN_BUFFER_SIZES, 8, &plan->buffer_sizes, &present))
            return ember_invalid_program("execution plan %u is malformed", (unsigned)i);
        plan->name = name.data;
        ember_status st = verify_plan(p, plan);
        if (st != EMBER_OK) {
            ember_error_prefix("method '%.64s'", plan->name);
            return st;
        }
        p->num_plans = i + 1;
    }
    return EMBER_OK;
}

ember_status ember_program_load(const ember_data_loader *loader,
                                const ember_program_options *options, ember_program **out) {
    ember_heap_allocator heap;
    ember_allocator *alloc;
    ember_program *p;
    uint64_t program_size = 0;
    ember_status st;

    if (out == NULL || loader == NULL || loader->load == NULL || loader->size == NULL ||
        loader->struct_size < sizeof(ember_data_loader))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "program load: bad loader or NULL output");
    *out = NULL;
    ember_heap_allocator_init(&heap);
    alloc = options != NULL && options->allocator != NULL ? options->allocator : &heap.base;
    p = ember_alloc(alloc, sizeof *p, _Alignof(ember_program));
    if (p == NULL) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate the program");
    memset(p, 0, sizeof *p);
    /* The heap's block list moves into the program it now owns. */
    p->heap = heap;
    p->heap.base.ctx = &p->heap;
    if (alloc == &heap.base) alloc = &p->heap.base;
    p->loader = loader;

    ember_clear_error();
    st = loader->size(loader->ctx, &p->file_size);
    if (st != EMBER_OK && ember_last_error()[0] == '\0')
        ember_set_error(st, "data loader failed (%s) to report the size", ember_status_str(st));
    if (st == EMBER_OK) st = read_header(p, &program_size);
    if (st == EMBER_OK)
        st = loader_load(p, 0, (size_t)program_size, EMBER_SEGMENT_PROGRAM, &p->flatbuffer);
    if (st == EMBER_OK) {
        p->r.buf = p->flatbuffer.data;
        p->r.size = p->flatbuffer.size;
        if (!fb_root(&p->r, &p->root))
            st = ember_invalid_program("flatbuffer root table is malformed");
    }
    if (st == EMBER_OK) st = read_segments(p);
    if (st == EMBER_OK) st = read_plans(p, alloc);
    if (st != EMBER_OK) {
        ember_program_destroy(p);
        return st;
    }
    *out = p;
    return EMBER_OK;
}

void ember_program_destroy(ember_program *program) {
    if (program == NULL) return;
    pte_release(program, &program->constants);
    pte_release(program, &program->flatbuffer);
    ember_heap_allocator heap = program->heap;
    ember_heap_allocator_release(&heap);
}

/* ---------------------------------------------------------------------- */
/* Meta                                                                   */
/* ---------------------------------------------------------------------- */

uint64_t ember_program_hash(const ember_program *program) {
    if (program == NULL) return 0;
    const uint8_t *b = program->flatbuffer.data;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, 64 bits */
    for (size_t i = 0; i < program->flatbuffer.size; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

size_t ember_program_method_count(const ember_program *program) {
    return program != NULL ? program->num_plans : 0;
}

ember_status ember_program_method_name(const ember_program *program, size_t i, const char **name) {
    if (program == NULL || name == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL argument");
    if (i >= program->num_plans)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "method %zu of %zu", i,
                               program->num_plans);
    *name = program->plans[i].name;
    return EMBER_OK;
}

ember_status ember_program_method_meta(const ember_program *program, const char *method,
                                       ember_method_meta *meta) {
    const pte_plan *plan;
    if (meta == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL meta");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    meta->name = plan->name;
    meta->num_inputs = plan->inputs.len;
    meta->num_outputs = plan->outputs.len;
    meta->num_planned_buffers = plan->buffer_sizes.len > 0 ? plan->buffer_sizes.len - 1 : 0;
    meta->num_operators = plan->operators.len;
    meta->num_delegates = plan->delegates.len;
    meta->num_instructions = plan->num_instructions;
    meta->num_values = plan->values.len;
    return EMBER_OK;
}

static ember_status io_meta(const ember_program *program, const char *method, size_t i, bool input,
                            ember_value_meta *meta) {
    const pte_plan *plan;
    pte_value v;
    if (meta == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL meta");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    const fb_vec *list = input ? &plan->inputs : &plan->outputs;
    if (i >= list->len)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "%s %zu of %u",
                               input ? "input" : "output", i, (unsigned)list->len);
    EMBER_TRY(pte_decode_value(program, plan, (uint32_t)fb_vec_i32(&program->r, list, (uint32_t)i), &v));
    memset(meta, 0, sizeof *meta);
    meta->tag = v.tag;
    if (v.tag == EMBER_TAG_TENSOR) {
        meta->dtype = v.u.t.dtype;
        meta->dynamism = v.u.t.dynamism;
        meta->planned = v.u.t.storage == EMBER_STORAGE_PLANNED;
        meta->dim = v.u.t.dim;
        memcpy(meta->sizes, v.u.t.sizes, sizeof meta->sizes);
        memcpy(meta->dim_order, v.u.t.dim_order, sizeof meta->dim_order);
        meta->nbytes = v.u.t.nbytes;
    }
    return EMBER_OK;
}

ember_status ember_program_input_meta(const ember_program *program, const char *method, size_t i,
                                      ember_value_meta *meta) {
    return io_meta(program, method, i, true, meta);
}

ember_status ember_program_output_meta(const ember_program *program, const char *method, size_t i,
                                       ember_value_meta *meta) {
    return io_meta(program, method, i, false, meta);
}

ember_status ember_program_planned_buffer_size(const ember_program *program, const char *method,
                                               size_t i, size_t *bytes) {
    const pte_plan *plan;
    if (bytes == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL output");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    if (i + 1 >= plan->buffer_sizes.len)
        return ember_set_error(
            EMBER_ERR_INDEX_OUT_OF_RANGE, "planned buffer %zu of %u", i,
            (unsigned)(plan->buffer_sizes.len > 0 ? plan->buffer_sizes.len - 1 : 0));
    return pte_buffer_size(program, plan, (uint32_t)(i + 1), bytes);
}

ember_status ember_program_delegate_name(const ember_program *program, const char *method,
                                         size_t i, char *buf, size_t cap) {
    const pte_plan *plan;
    pte_delegate d;
    if (buf == NULL || cap == 0) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "no buffer");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    if (i >= plan->delegates.len)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "delegate %zu of %u", i,
                               (unsigned)plan->delegates.len);
    EMBER_TRY(pte_delegate_ref(program, plan, (uint32_t)i, &d));
    size_t n = 0;
    for (uint32_t k = 0; k < d.id.len && n + 1 < cap; k++) buf[n++] = d.id.data[k];
    buf[n] = '\0';
    return EMBER_OK;
}

ember_status ember_program_operator_name(const ember_program *program, const char *method,
                                         size_t i, char *buf, size_t cap) {
    const pte_plan *plan;
    fb_str name, overload;
    if (buf == NULL || cap == 0) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "no buffer");
    EMBER_TRY(pte_find_plan(program, method, &plan));
    if (i >= plan->operators.len)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "operator %zu of %u", i,
                               (unsigned)plan->operators.len);
    EMBER_TRY(pte_operator(program, plan, (uint32_t)i, &name, &overload));
    size_t n = 0;
    for (uint32_t k = 0; k < name.len && n + 1 < cap; k++) buf[n++] = name.data[k];
    if (overload.len > 0 && n + 1 < cap) buf[n++] = '.';
    for (uint32_t k = 0; k < overload.len && n + 1 < cap; k++) buf[n++] = overload.data[k];
    buf[n] = '\0';
    return EMBER_OK;
}
