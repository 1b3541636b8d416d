/*
 * Decoding and verification of a Vulkan delegate payload (vk_graph.h).
 *
 * Everything in the payload is input from outside: the header's offsets and
 * sizes, every value's kind, dims and constant index, every operator's
 * argument ids, list lengths and constant byte ranges are checked here with
 * overflow-safe arithmetic before anything else reads them. Absent scalar
 * fields read as the schema's defaults.
 */
#include <string.h>

#include "format/flatbuffer.h"
#include "vk_graph.h"

enum {
    GRAPH_CHAIN = 1, GRAPH_VALUES = 2, GRAPH_INPUT_IDS = 3, GRAPH_OUTPUT_IDS = 4,
    GRAPH_CONSTANTS = 5,
    OPCALL_NODE_ID = 0, OPCALL_NAME = 1, OPCALL_ARGS = 2,
    VALUE_TYPE = 0, VALUE_VALUE = 1,
    TENSOR_DATATYPE = 0, TENSOR_DIMS = 1, TENSOR_CONSTANT_ID = 2,
    BYTES_OFFSET = 0, BYTES_LENGTH = 1, BYTES_NAMED_KEY = 2
};

#define HEADER_BYTES 30
/* Most values, operators or list items a payload may declare. */
#define VK_MAX_COUNT (1u << 24)

/* A defect of the payload: "vulkan payload: <detail>", EMBER_ERR_INVALID_PROGRAM. */
#define bad(...) ember_backend_bad_payload("vulkan", __VA_ARGS__)

typedef struct reader {
    fb_reader r;
    const uint8_t *payload;
    size_t consts_at, consts_size;
    vk_graph *g;
    ember_allocator *a;
} reader;

static ember_status read_header(reader *rd, size_t size) {
    const uint8_t *p = rd->payload;
    if (size < HEADER_BYTES || memcmp(p + 4, "VH00", 4) != 0)
        return bad("no VH00 header (%zu bytes)", size);
    if (fb_rd_u16(p + 8) != HEADER_BYTES)
        return bad("header length %u, expected %d", fb_rd_u16(p + 8), HEADER_BYTES);
    uint64_t fb_at = fb_rd_u32(p + 10), fb_size = fb_rd_u32(p + 14);
    uint64_t c_at = fb_rd_u32(p + 18), c_size = fb_rd_u64(p + 22);
    if (fb_size < 8 || fb_at > size || fb_size > size - fb_at)
        return bad("flatbuffer (%llu bytes at %llu) does not fit the %zu-byte payload",
                   (unsigned long long)fb_size, (unsigned long long)fb_at, size);
    if (c_at > size || c_size > size - c_at)
        return bad("constant bytes (%llu at %llu) do not fit the %zu-byte payload",
                   (unsigned long long)c_size, (unsigned long long)c_at, size);
    rd->r.buf = p + fb_at;
    rd->r.size = (size_t)fb_size;
    rd->consts_at = (size_t)c_at;
    rd->consts_size = (size_t)c_size;
    if (memcmp(rd->r.buf + 4, "VK00", 4) != 0) return bad("flatbuffer identifier is not VK00");
    return EMBER_OK;
}

/* Checks a list's vector (and a ValueList's ids); its items are copied into
 * the graph's pools once every value is known. */
static ember_status read_list(reader *rd, uint32_t vi, const fb_table *t, uint8_t kind,
                              vk_value *v) {
    const fb_reader *r = &rd->r;
    const size_t elem = kind == VK_V_BOOLLIST ? 1 : kind == VK_V_VALUELIST ? 4 : 8;
    fb_vec items;
    bool present;
    if (!fb_vec_field(r, t, 0, elem, &items, &present))
        return bad("value %u: list is malformed", vi);
    if (!present) items.len = 0;
    if (items.len > VK_MAX_COUNT) return bad("value %u: list of %u items", vi, items.len);
    v->list_len = items.len;
    if (kind == VK_V_VALUELIST)
        for (uint32_t k = 0; k < items.len; k++) {
            int32_t id = fb_vec_i32(r, &items, k);
            if (id < 0 || (uint32_t)id >= rd->g->num_values)
                return bad("value %u: list item %u names value %d (%u values)", vi, k, (int)id,
                           rd->g->num_values);
        }
    return EMBER_OK;
}

static ember_status read_value(reader *rd, uint32_t vi, const fb_table *vv) {
    const fb_reader *r = &rd->r;
    vk_value *v = &rd->g->values[vi];
    uint8_t type;
    fb_table t;
    bool present;
    if (!fb_u8(r, vv, VALUE_TYPE, 0, &type) || !fb_table_field(r, vv, VALUE_VALUE, &t, &present))
        return bad("value %u is malformed", vi);
    if (type == VK_V_NONE || type >= VK_V_COUNT || (!present && type != VK_V_NULL))
        return bad("value %u has unknown kind %u", vi, type);
    v->kind = type;
    v->constant_id = -1;
    switch (type) {
    case VK_V_NULL: return EMBER_OK;
    case VK_V_INT: {
        if (!fb_i64(r, &t, 0, 0, &v->i)) return bad("value %u: int is malformed", vi);
        return EMBER_OK;
    }
    case VK_V_SYMINT: {
        int32_t x;
        if (!fb_i32(r, &t, 0, 0, &x)) return bad("value %u: symint is malformed", vi);
        v->i = x;
        return EMBER_OK;
    }
    case VK_V_BOOL: {
        uint8_t b;
        if (!fb_u8(r, &t, 0, 0, &b)) return bad("value %u: bool is malformed", vi);
        v->i = b != 0;
        return EMBER_OK;
    }
    case VK_V_DOUBLE:
        if (!fb_f64(r, &t, 0, 0.0, &v->d)) return bad("value %u: double is malformed", vi);
        return EMBER_OK;
    case VK_V_STRING: {
        fb_str s;
        if (!fb_str_field(r, &t, 0, &s, &present)) return bad("value %u: string is malformed", vi);
        if (present) {
            size_t n = s.len < sizeof v->str - 1 ? s.len : sizeof v->str - 1;
            memcpy(v->str, s.data, n);
            v->str[n] = '\0';
        }
        return EMBER_OK;
    }
    case VK_V_TENSOR: {
        uint8_t dtype;
        fb_vec dims;
        if (!fb_u8(r, &t, TENSOR_DATATYPE, 0, &dtype) ||
            !fb_vec_field(r, &t, TENSOR_DIMS, 4, &dims, &present) ||
            !fb_i32(r, &t, TENSOR_CONSTANT_ID, 0, &v->constant_id))
            return bad("value %u: tensor is malformed", vi);
        if (dtype > VK_DT_INT64) return bad("value %u: unknown datatype %u", vi, dtype);
        /* int8 and uint8 only as weights */
        if (dtype == VK_DT_FLOAT64 ||
            ((dtype == VK_DT_INT8 || dtype == VK_DT_UINT8) && v->constant_id < 0))
            return ember_backend_fail(EMBER_ERR_NOT_SUPPORTED,
                                      "vulkan: value %u is %s; the backend holds float32, "
                                      "float16, int32, int64 and bool tensors (and int8 and "
                                      "uint8 weights)",
                                      vi, vk_dtype_name(dtype));
        if (!present) dims.len = 0;
        if (dims.len > VK_MAX_DIMS)
            return bad("value %u: rank %u (at most %d)", vi, dims.len, VK_MAX_DIMS);
        v->dtype = dtype;
        v->rank = (uint8_t)dims.len;
        size_t numel = 1;
        for (uint32_t d = 0; d < dims.len; d++) {
            v->bound[d] = v->dims[d] = fb_vec_u32(r, &dims, d);
            if (v->bound[d] > INT32_MAX || ember_mul_overflow(numel, v->bound[d], &numel))
                return bad("value %u: dims overflow", vi);
        }
        size_t bytes;
        if (ember_mul_overflow(numel, 4, &bytes) || bytes > ((size_t)1 << 40))
            return bad("value %u: %zu elements is too large", vi, numel);
        v->bound_numel = numel;
        v->is_const = v->constant_id >= 0;
        return EMBER_OK;
    }
    default:
        return read_list(rd, vi, &t, type, v);
    }
}

ember_status vk_read(const ember_backend_init_ctx *ctx, const void *payload, size_t size,
                     vk_graph *g, vk_const_source **consts_out, uint32_t *num_consts) {
    reader rd;
    memset(&rd, 0, sizeof rd);
    rd.payload = payload;
    rd.g = g;
    rd.a = ctx->allocator;
    TRY_RET(read_header(&rd, size));
    const fb_reader *r = &rd.r;
    fb_table root;
    fb_vec chain, values, ins, outs, consts;
    bool p_chain, p_values, p_ins, p_outs, p_consts;
    if (!fb_root(r, &root) || !fb_vec_field(r, &root, GRAPH_CHAIN, 4, &chain, &p_chain) ||
        !fb_vec_field(r, &root, GRAPH_VALUES, 4, &values, &p_values) ||
        !fb_vec_field(r, &root, GRAPH_INPUT_IDS, 4, &ins, &p_ins) ||
        !fb_vec_field(r, &root, GRAPH_OUTPUT_IDS, 4, &outs, &p_outs) ||
        !fb_vec_field(r, &root, GRAPH_CONSTANTS, 4, &consts, &p_consts))
        return bad("the VkGraph table is malformed");
    if (!p_chain) chain.len = 0;
    if (!p_values) values.len = 0;
    if (!p_ins) ins.len = 0;
    if (!p_outs) outs.len = 0;
    if (!p_consts) consts.len = 0;
    if (values.len > VK_MAX_COUNT || chain.len > VK_MAX_COUNT)
        return bad("%u values, %u operators: too many", values.len, chain.len);
    g->num_values = values.len;
    g->num_nodes = chain.len;
    g->num_inputs = ins.len;
    g->num_outputs = outs.len;
    g->values = ember_alloc(rd.a, sizeof(vk_value) * (values.len + 1u), _Alignof(vk_value));
    g->nodes = ember_alloc(rd.a, sizeof(vk_node) * (chain.len + 1u), _Alignof(vk_node));
    g->inputs = ember_alloc(rd.a, sizeof(uint32_t) * (ins.len + 1u), _Alignof(uint32_t));
    g->outputs = ember_alloc(rd.a, sizeof(uint32_t) * (outs.len + 1u), _Alignof(uint32_t));
    vk_const_source *cs =
        ember_alloc(rd.a, sizeof(vk_const_source) * (consts.len + 1u), _Alignof(vk_const_source));
    if (!g->values || !g->nodes || !g->inputs || !g->outputs || !cs)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for the graph");
    memset(g->values, 0, sizeof(vk_value) * values.len);
    memset(cs, 0, sizeof(vk_const_source) * consts.len);

    /* constants */
    for (uint32_t c = 0; c < consts.len; c++) {
        fb_table t;
        uint64_t offset, length;
        fb_str key;
        bool has_key;
        if (!fb_vec_table(r, &consts, c, &t) || !fb_u64(r, &t, BYTES_OFFSET, 0, &offset) ||
            !fb_u64(r, &t, BYTES_LENGTH, 0, &length) ||
            !fb_str_field(r, &t, BYTES_NAMED_KEY, &key, &has_key))
            return bad("constant %u is malformed", c);
        if (has_key && key.len > 0) {
            cs[c].key = key.data;
            cs[c].key_len = key.len;
            cs[c].size = length > SIZE_MAX ? SIZE_MAX : (size_t)length;
            continue;
        }
        if (offset > rd.consts_size || length > rd.consts_size - offset)
            return bad("constant %u (%llu bytes at %llu) overflows the %zu constant bytes", c,
                       (unsigned long long)length, (unsigned long long)offset, rd.consts_size);
        cs[c].bytes = rd.payload + rd.consts_at + offset;
        cs[c].size = (size_t)length;
    }

    /* values */
    for (uint32_t vi = 0; vi < values.len; vi++) {
        fb_table vv;
        if (!fb_vec_table(r, &values, vi, &vv)) return bad("value %u is malformed", vi);
        TRY_RET(read_value(&rd, vi, &vv));
        vk_value *v = &g->values[vi];
        if (v->kind == VK_V_TENSOR && v->is_const && (uint32_t)v->constant_id >= consts.len)
            return bad("value %u: constant %d out of range (%u constants)", vi,
                       (int)v->constant_id, consts.len);
    }

    /* list items, into the graph's pools */
    size_t total = 0;
    for (uint32_t vi = 0; vi < values.len; vi++) {
        vk_value *v = &g->values[vi];
        if (v->kind == VK_V_INTLIST || v->kind == VK_V_BOOLLIST || v->kind == VK_V_VALUELIST ||
            v->kind == VK_V_DOUBLELIST)
            if (ember_add_overflow(total, v->list_len, &total)) return bad("lists overflow");
    }
    if (total > VK_MAX_COUNT) return bad("%zu list items: too many", total);
    g->ints = ember_alloc(rd.a, sizeof(int64_t) * (total + 1), _Alignof(int64_t));
    g->doubles = ember_alloc(rd.a, sizeof(double) * (total + 1), _Alignof(double));
    if (g->ints == NULL || g->doubles == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for lists");
    size_t at = 0;
    for (uint32_t vi = 0; vi < values.len; vi++) {
        vk_value *v = &g->values[vi];
        if (!(v->kind == VK_V_INTLIST || v->kind == VK_V_BOOLLIST ||
              v->kind == VK_V_VALUELIST || v->kind == VK_V_DOUBLELIST))
            continue;
        fb_table vv, t;
        fb_vec items;
        bool present;
        if (!fb_vec_table(r, &values, vi, &vv) ||
            !fb_table_field(r, &vv, VALUE_VALUE, &t, &present) || !present ||
            !fb_vec_field(r, &t, 0, v->kind == VK_V_BOOLLIST ? 1 : v->kind == VK_V_VALUELIST ? 4 : 8,
                          &items, &present))
            return bad("value %u: list is malformed", vi);
        v->list_at = (uint32_t)at;
        for (uint32_t k = 0; k < v->list_len; k++) {
            if (v->kind == VK_V_INTLIST) g->ints[at + k] = fb_vec_i64(r, &items, k);
            else if (v->kind == VK_V_BOOLLIST) g->ints[at + k] = fb_vec_u8(r, &items, k) != 0;
            else if (v->kind == VK_V_VALUELIST) g->ints[at + k] = fb_vec_i32(r, &items, k);
            else g->doubles[at + k] = fb_vec_f64(r, &items, k);
        }
        at += v->list_len;
    }

    /* inputs and outputs */
    for (uint32_t k = 0; k < ins.len + outs.len; k++) {
        bool is_in = k < ins.len;
        uint32_t id = is_in ? fb_vec_u32(r, &ins, k) : fb_vec_u32(r, &outs, k - ins.len);
        if (id >= values.len)
            return bad("%s %u names value %u (%u values)", is_in ? "input" : "output",
                       is_in ? k : k - ins.len, id, values.len);
        uint8_t kind = g->values[id].kind;
        if (kind != VK_V_TENSOR && kind != VK_V_SYMINT && kind != VK_V_INT)
            return bad("%s %u (value %u) is neither a tensor nor an int",
                       is_in ? "input" : "output", is_in ? k : k - ins.len, id);
        if (kind == VK_V_TENSOR && g->values[id].is_const)
            return bad("%s %u (value %u) is a constant", is_in ? "input" : "output",
                       is_in ? k : k - ins.len, id);
        if (is_in) {
            g->inputs[k] = id;
            g->values[id].written = true;
        } else {
            g->outputs[k - ins.len] = id;
        }
    }

    /* operators */
    size_t nargs_total = 0;
    for (uint32_t ni = 0; ni < chain.len; ni++) {
        fb_table t;
        fb_vec args;
        bool present;
        if (!fb_vec_table(r, &chain, ni, &t) || !fb_vec_field(r, &t, OPCALL_ARGS, 4, &args, &present))
            return bad("operator %u is malformed", ni);
        if (present && ember_add_overflow(nargs_total, args.len, &nargs_total))
            return bad("operator arguments overflow");
    }
    if (nargs_total > VK_MAX_COUNT) return bad("%zu operator arguments: too many", nargs_total);
    g->args = ember_alloc(rd.a, sizeof(uint32_t) * (nargs_total + 1), _Alignof(uint32_t));
    if (g->args == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory");
    size_t arg_at = 0;
    for (uint32_t ni = 0; ni < chain.len; ni++) {
        vk_node *n = &g->nodes[ni];
        fb_table t;
        fb_vec args;
        fb_str name;
        bool has_args, has_name;
        memset(n, 0, sizeof *n);
        if (!fb_vec_table(r, &chain, ni, &t) || !fb_u32(r, &t, OPCALL_NODE_ID, 0, &n->node_id) ||
            !fb_str_field(r, &t, OPCALL_NAME, &name, &has_name) ||
            !fb_vec_field(r, &t, OPCALL_ARGS, 4, &args, &has_args))
            return bad("operator %u is malformed", ni);
        if (!has_name) return bad("operator %u has no name", ni);
        n->op = vk_op_find(name.data, name.len);
        if (n->op == NULL)
            return ember_backend_fail_at(EMBER_ERR_NOT_SUPPORTED, n->node_id,
                                         "vulkan: operator %u (%.*s, node %u) is not supported",
                                         ni, (int)(name.len > 80 ? 80 : name.len), name.data,
                                         n->node_id);
        n->args_at = (uint32_t)arg_at;
        n->nargs = has_args ? args.len : 0;
        for (uint32_t k = 0; k < n->nargs; k++) {
            int32_t id = fb_vec_i32(r, &args, k);
            if (id < 0 || (uint32_t)id >= values.len)
                return ember_backend_fail_at(EMBER_ERR_INVALID_PROGRAM, n->node_id,
                                             "vulkan payload: operator %u (%s, node %u): argument "
                                             "%u names value %d (%u values)",
                                             ni, n->op->name, n->node_id, k, (int)id, values.len);
            g->args[arg_at + k] = (uint32_t)id;
        }
        arg_at += n->nargs;
    }
    *consts_out = cs;
    *num_consts = consts.len;
    return EMBER_OK;
}
