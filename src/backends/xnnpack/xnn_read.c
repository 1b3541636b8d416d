/*
 * Decoding and verification of an XNNPACK delegate payload (xnn_graph.h).
 *
 * Everything in the payload is input from outside: every offset, length,
 * id, rank, dim and datatype is checked here, with overflow-safe sizes,
 * before anything else reads it. Scalars the exporter left at their default
 * are absent from the file (flatc omits them), so an absent field reads as
 * 0 — including external_id, whose "invalid" value internal values carry
 * explicitly.
 *
 * Constant data is located here and loaded by xnn_pack.c: from the
 * program's named data (the key a ConstantDataOffset names), from the
 * payload's own constant section (its offset), or, in files without the
 * XH00 header, from the deprecated buffers inside the flatbuffer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/flatbuffer.h"
#include "xnn_graph.h"

/* Field ids (a union field takes two ids: its type, then its value). */
enum {
    GRAPH_XNODES = 1, GRAPH_XVALUES = 2, GRAPH_NUM_EXTERNS = 3, GRAPH_CONSTANT_BUFFER = 6,
    GRAPH_CONSTANT_DATA = 8,
    XVALUE_TYPE = 0, XVALUE_VALUE = 1,
    TV_DATATYPE = 0, TV_DIMS = 2, TV_CONSTANT_IDX = 3, TV_EXTERNAL_ID = 4, TV_FLAGS = 5,
    TV_ID_OUT = 6,
    QTV_TENSOR = 0, QTV_PARAMS_TYPE = 1, QTV_PARAMS = 2,
    XNODE_TYPE = 0, XNODE_VALUE = 1, XNODE_DEBUG_HANDLE = 2, XNODE_MIN_MAX = 3,
    CDO_OFFSET = 0, CDO_SIZE = 1, CDO_NAMED_KEY = 2,
    BUFFER_STORAGE = 0
};

/* XValueUnion and XNNQuantParams tags. */
enum { XVALUE_TENSOR = 1, XVALUE_QUANTIZED = 2 };

#define HEADER_BYTES 30
#define HEADER_MAGIC_AT 4

typedef struct reader {
    fb_reader r;
    const uint8_t *payload;
    size_t payload_size;
    bool has_header;
    size_t constants_at, constants_size;  /* the payload's constant section */
    fb_vec constant_data;                 /* ConstantDataOffset tables */
    fb_vec constant_buffer;               /* legacy Buffer tables */
    xnn_graph *g;
    xnn_const_source *sources;            /* per value */
    struct id_index *id_sorted;           /* (id, value index), sorted by id */
} reader;

typedef struct id_index {
    uint32_t id, index;
} id_index;

/* A defect of the payload: "xnnpack payload: <detail>", EMBER_ERR_INVALID_PROGRAM. */
#define bad(...) ember_backend_bad_payload("xnnpack", __VA_ARGS__)

size_t xnn_dtype_size(uint8_t dtype) {
    switch (dtype) {
    case XNN_DT_FP32: case XNN_DT_QINT32: case XNN_DT_QCINT32: case XNN_DT_INT32:
    case XNN_DT_PFP32:
        return 4;
    case XNN_DT_FP16: case XNN_DT_BF16:
        return 2;
    case XNN_DT_QINT8: case XNN_DT_QUINT8: case XNN_DT_QCINT8: case XNN_DT_QDINT8:
    case XNN_DT_QPINT8:
        return 1;
    default:
        return 0; /* 4-bit types: see xnn_value_bytes */
    }
}

const char *xnn_dtype_name(uint8_t dtype) {
    static const char *const names[XNN_DT_COUNT] = {
        "invalid", "fp32", "fp16", "qint8", "quint8", "qint32", "qcint8", "qcint32",
        "qcint4", "qdint8", "qbint4", "qpint8", "int32", "pfp32", "bf16"};
    return dtype < XNN_DT_COUNT ? names[dtype] : "unknown";
}

bool xnn_numel(const size_t *dims, size_t rank, size_t *numel) {
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        if (ember_mul_overflow(n, dims[i], &n)) return false;
    *numel = n;
    return true;
}

bool xnn_qd8_layout(const xnn_value *v, const size_t *dims, size_t *data_bytes, size_t *rows) {
    size_t n, padded;
    const size_t lead = v->rank > v->num_nonbatch_dims ? v->rank - v->num_nonbatch_dims : 0;
    if (!xnn_numel(dims, v->rank, &n) || !xnn_numel(dims, lead, rows) ||
        ember_add_overflow(n, EKO_QD8_X_PAD + 15, &padded))
        return false;
    *data_bytes = padded & ~(size_t)15;
    return true;
}

bool xnn_value_bytes(const xnn_value *v, const size_t *dims, size_t *bytes) {
    size_t n;
    if (v->dtype == XNN_DT_QDINT8) {
        size_t data, rows, params;
        return xnn_qd8_layout(v, dims, &data, &rows) &&
               !ember_mul_overflow(rows, sizeof(eko_qd8_row), &params) &&
               !ember_add_overflow(data, params, bytes);
    }
    if (!xnn_numel(dims, v->rank, &n)) return false;
    if (v->dtype == XNN_DT_QCINT4 || v->dtype == XNN_DT_QBINT4) {
        /* two per byte along the last dim, rows padded to a whole byte */
        size_t last = v->rank > 0 ? dims[v->rank - 1] : 1, rows = last > 0 ? n / last : 0;
        return !ember_mul_overflow(rows, last / 2 + last % 2, bytes);
    }
    return !ember_mul_overflow(n, xnn_dtype_size(v->dtype), bytes);
}

/* ---------------------------------------------------------------------- */
/* Header                                                                 */
/* ---------------------------------------------------------------------- */

static ember_status read_header(reader *rd) {
    const uint8_t *p = rd->payload;
    size_t size = rd->payload_size;
    if (size >= 8 && memcmp(p + HEADER_MAGIC_AT, "XH00", 4) == 0) {
        if (size < HEADER_BYTES) return bad("header is truncated (%zu bytes)", size);
        uint64_t fb_at = fb_rd_u32(p + 10), fb_size = fb_rd_u32(p + 14);
        uint64_t c_at = fb_rd_u32(p + 18), c_size = fb_rd_u64(p + 22);
        if (fb_size < 8 || fb_at > size || fb_size > size - fb_at)
            return bad("flatbuffer (%llu bytes at %llu) does not fit the %zu-byte payload",
                       (unsigned long long)fb_size, (unsigned long long)fb_at, size);
        if (c_at > size || c_size > size - c_at)
            return bad("constant data (%llu bytes at %llu) does not fit the %zu-byte payload",
                       (unsigned long long)c_size, (unsigned long long)c_at, size);
        if (c_at < fb_at || c_at - fb_at < fb_size)
            return bad("constant data at %llu overlaps the flatbuffer", (unsigned long long)c_at);
        rd->has_header = true;
        rd->r.buf = p + fb_at;
        rd->r.size = (size_t)fb_size;
        rd->constants_at = (size_t)c_at;
        rd->constants_size = (size_t)c_size;
    } else {
        /* Older exporters wrote the flatbuffer alone, constants inside it. */
        rd->r.buf = p;
        rd->r.size = size;
    }
    if (rd->r.size < 8 || (memcmp(rd->r.buf + 4, "XN01", 4) != 0 &&
                           memcmp(rd->r.buf + 4, "XN00", 4) != 0))
        return bad("flatbuffer identifier is not XN00 or XN01");
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Values                                                                 */
/* ---------------------------------------------------------------------- */

/* Locates constant number idx (>= 1) of a value. */
static ember_status constant_source(reader *rd, uint32_t vi, uint32_t idx, xnn_const_source *src) {
    const fb_reader *r = &rd->r;
    bool present;
    if (rd->has_header) {
        fb_table t;
        fb_str key;
        uint64_t offset, size;
        if (idx >= rd->constant_data.len || !fb_vec_table(r, &rd->constant_data, idx, &t))
            return bad("value %u: constant %u out of range (%u)", vi, idx, rd->constant_data.len);
        if (!fb_u64(r, &t, CDO_OFFSET, 0, &offset) || !fb_u64(r, &t, CDO_SIZE, 0, &size) ||
            !fb_str_field(r, &t, CDO_NAMED_KEY, &key, &present))
            return bad("constant %u is malformed", idx);
        if (present && key.len > 0) {
            src->key = key.data;
            src->key_len = key.len;
            src->size = (size_t)(size > SIZE_MAX ? SIZE_MAX : size);
            return EMBER_OK;
        }
        if (offset > rd->constants_size || size > rd->constants_size - offset)
            return bad("constant %u (%llu bytes at %llu) overflows the payload's constant data "
                       "(%zu bytes)",
                       idx, (unsigned long long)size, (unsigned long long)offset,
                       rd->constants_size);
        src->bytes = rd->payload + rd->constants_at + offset;
        src->size = (size_t)size;
        return EMBER_OK;
    }
    fb_table t;
    fb_vec storage;
    if (idx >= rd->constant_buffer.len || !fb_vec_table(r, &rd->constant_buffer, idx, &t) ||
        !fb_vec_field(r, &t, BUFFER_STORAGE, 1, &storage, &present) || !present)
        return bad("value %u: constant buffer %u missing or malformed", vi, idx);
    src->bytes = fb_vec_bytes(r, &storage);
    src->size = storage.len;
    return EMBER_OK;
}

/* Where the scales of a per-channel or per-group quantized value are: the
 * constant data entry scale_idx (current exporters), else the float32 or
 * bfloat16 vector inside the table (older ones). n: how many there must be. */
static ember_status scale_source(reader *rd, uint32_t vi, const fb_table *q, unsigned f32_field,
                                 int bf16_field, unsigned idx_field, uint32_t n, bool group) {
    const fb_reader *r = &rd->r;
    xnn_value *v = &rd->g->values[vi];
    xnn_const_source *src = &rd->sources[rd->g->num_values + vi];
    fb_vec f32, bf16;
    bool has_f32, has_bf16 = false;
    uint32_t idx;
    memset(&bf16, 0, sizeof bf16);
    if (!fb_vec_field(r, q, f32_field, 4, &f32, &has_f32) ||
        (bf16_field >= 0 && !fb_vec_field(r, q, (unsigned)bf16_field, 2, &bf16, &has_bf16)) ||
        !fb_u32(r, q, idx_field, 0, &idx))
        return bad("value %u: quantization scales are malformed", vi);
    size_t width;
    if (idx != 0) {
        /* exporters store per-group scales as bfloat16, per-channel as float32 */
        EMBER_TRY(constant_source(rd, vi, idx, src));
        v->scales_bf16 = group;
    } else if (has_f32 && f32.len > 0) {
        if (f32.len != n) return bad("value %u: %u scales, %u expected", vi, f32.len, n);
        src->bytes = fb_vec_bytes(r, &f32);
        src->size = (size_t)f32.len * 4;
    } else if (has_bf16 && bf16.len > 0) {
        if (bf16.len != n) return bad("value %u: %u scales, %u expected", vi, bf16.len, n);
        src->bytes = fb_vec_bytes(r, &bf16);
        src->size = (size_t)bf16.len * 2;
        v->scales_bf16 = true;
    } else {
        return bad("value %u: quantized per channel without scales", vi);
    }
    width = v->scales_bf16 ? 2 : 4;
    if (ember_mul_overflow((size_t)n, width, &src->needed))
        return bad("value %u: %u scales overflow", vi, n);
    if (src->key == NULL && src->size < src->needed)
        return bad("value %u: scales have %zu bytes, %u scales need %zu", vi, src->size, n,
                   src->needed);
    src->present = true;
    v->num_scales = n;
    return EMBER_OK;
}

/* Decodes the quantization parameters of a quantized tensor value. */
static ember_status read_quant(reader *rd, uint32_t vi, const fb_table *qtv, xnn_value *v) {
    const fb_reader *r = &rd->r;
    uint8_t type;
    fb_table q;
    bool present;
    if (!fb_u8(r, qtv, QTV_PARAMS_TYPE, 0, &type) ||
        !fb_table_field(r, qtv, QTV_PARAMS, &q, &present))
        return bad("value %u: quantization parameters are malformed", vi);
    if (type == XNN_Q_NONE || !present) return EMBER_OK;
    bool ok = true;
    uint32_t num_scales = 0;
    switch (type) {
    case XNN_Q_PER_TENSOR:
        ok = fb_f32(r, &q, 0, 0.0f, &v->scale) && fb_i32(r, &q, 1, 0, &v->zero_point);
        if (ok && !(v->scale > 0.0f && isfinite(v->scale)))
            return bad("value %u: scale %g is not a positive number", vi, (double)v->scale);
        break;
    case XNN_Q_PER_CHANNEL:
        /* PerChannelQuant: scale, channel_dim, scale_buffer_idx, num_scales */
        ok = fb_i32(r, &q, 1, 0, &v->channel_dim) && fb_u32(r, &q, 3, 0, &num_scales);
        break;
    case XNN_Q_PER_TOKEN: {
        int32_t n;
        ok = fb_i32(r, &q, 0, 0, &n);
        if (ok && (n < 0 || (uint32_t)n > v->rank))
            return bad("value %u: %d non-batch dims for rank %u", vi, (int)n, v->rank);
        v->num_nonbatch_dims = (uint32_t)n;
        break;
    }
    case XNN_Q_PER_CHANNEL_GROUP:
        /* PerChannelGroupQuant: scale, channel_dim, group_size, scale_bf16,
         * scale_buffer_idx, num_scales */
        ok = fb_i32(r, &q, 1, 0, &v->channel_dim) && fb_i32(r, &q, 2, 0, &v->group_size) &&
             fb_u32(r, &q, 5, 0, &num_scales);
        if (ok && v->group_size <= 0)
            return bad("value %u: group size %d", vi, (int)v->group_size);
        break;
    default:
        return bad("value %u: unknown quantization kind %u", vi, type);
    }
    if (!ok) return bad("value %u: quantization parameters are malformed", vi);
    if ((type == XNN_Q_PER_CHANNEL || type == XNN_Q_PER_CHANNEL_GROUP) &&
        (v->channel_dim < 0 || (uint32_t)v->channel_dim >= (v->rank > 0 ? v->rank : 1)))
        return bad("value %u: channel dim %d out of range", vi, (int)v->channel_dim);
    if (type == XNN_Q_PER_CHANNEL) {
        /* one scale per channel (num_scales 0: as many as the scale vector) */
        const size_t channels = v->rank > 0 ? v->dims[v->channel_dim] : 1;
        if (channels > UINT32_MAX || (num_scales != 0 && num_scales != channels))
            return bad("value %u: %u scales for %zu channels", vi, num_scales, channels);
        EMBER_TRY(scale_source(rd, vi, &q, 0, -1, 2, (uint32_t)channels, false));
    }
    if (type == XNN_Q_PER_CHANNEL_GROUP) {
        /* a 2-d [channels, depth] weight, groups along the depth */
        if (v->rank != 2 || v->channel_dim != 0)
            return bad("value %u: per-group quantization of a rank-%u tensor along dim %d", vi,
                       v->rank, (int)v->channel_dim);
        const size_t depth = v->dims[1], gs = (size_t)v->group_size;
        size_t groups;
        if (depth % gs != 0)
            return bad("value %u: group size %zu does not divide the depth %zu", vi, gs, depth);
        if (ember_mul_overflow(v->dims[0], depth / gs, &groups) || groups > UINT32_MAX ||
            (num_scales != 0 && num_scales != groups))
            return bad("value %u: %u scales for %zu groups", vi, num_scales, groups);
        EMBER_TRY(scale_source(rd, vi, &q, 0, 3, 4, (uint32_t)groups, true));
    }
    v->quant = type;
    return EMBER_OK;
}

static ember_status read_value(reader *rd, uint32_t vi, const fb_table *xv) {
    const fb_reader *r = &rd->r;
    xnn_value *v = &rd->g->values[vi];
    uint8_t type;
    fb_table tv, qtv;
    bool present;
    int16_t dtype;
    fb_vec dims;
    uint32_t constant_idx;
    memset(v, 0, sizeof *v);
    v->external_id = XNN_INVALID_ID;
    if (!fb_u8(r, xv, XVALUE_TYPE, 0, &type) || !fb_table_field(r, xv, XVALUE_VALUE, &tv, &present))
        return bad("value %u is malformed", vi);
    if (!present || (type != XVALUE_TENSOR && type != XVALUE_QUANTIZED))
        return bad("value %u: kind %u is not a tensor", vi, type);
    if (type == XVALUE_QUANTIZED) {
        qtv = tv;
        if (!fb_table_field(r, &qtv, QTV_TENSOR, &tv, &present) || !present)
            return bad("value %u: quantized tensor without its tensor", vi);
    }
    uint32_t external_id, flags;
    if (!fb_i16(r, &tv, TV_DATATYPE, 0, &dtype) ||
        !fb_vec_field(r, &tv, TV_DIMS, 4, &dims, &present) ||
        !fb_u32(r, &tv, TV_CONSTANT_IDX, 0, &constant_idx) ||
        !fb_u32(r, &tv, TV_EXTERNAL_ID, 0, &external_id) ||
        !fb_u32(r, &tv, TV_FLAGS, 0, &flags) || !fb_u32(r, &tv, TV_ID_OUT, 0, &v->id))
        return bad("value %u: tensor is malformed", vi);
    if (dtype <= XNN_DT_INVALID || dtype >= XNN_DT_COUNT)
        return bad("value %u: datatype %d is not one of XNNPACK's", vi, (int)dtype);
    v->dtype = (uint8_t)dtype;
    if (dims.len > XNN_MAX_DIMS) return bad("value %u: rank %u > %d", vi, dims.len, XNN_MAX_DIMS);
    v->rank = (uint8_t)dims.len;
    for (uint32_t d = 0; d < dims.len; d++) {
        uint32_t s = fb_vec_u32(r, &dims, d);
        if (s > (uint32_t)INT32_MAX) return bad("value %u: dim %u is %u", vi, d, s);
        v->dims[d] = v->shape[d] = s;
    }
    if ((flags & ~(XNN_VALUE_EXTERNAL_INPUT | XNN_VALUE_EXTERNAL_OUTPUT)) != 0)
        return bad("value %u: unknown flags 0x%x", vi, flags);
    if (flags == (XNN_VALUE_EXTERNAL_INPUT | XNN_VALUE_EXTERNAL_OUTPUT))
        return bad("value %u is both an input and an output of the delegate", vi);
    v->flags = flags;
    if (flags != 0) {
        if (external_id >= rd->g->num_externs)
            return bad("value %u: external id %u out of range (%u externals)", vi, external_id,
                       rd->g->num_externs);
        v->external_id = external_id;
    }
    if (type == XVALUE_QUANTIZED) EMBER_TRY(read_quant(rd, vi, &qtv, v));
    size_t bytes; /* after the quantization: a qdint8 value's size depends on it */
    if (!xnn_value_bytes(v, v->dims, &bytes)) return bad("value %u: size overflows", vi);
    if (constant_idx != 0) {
        v->has_constant = true;
        if (flags != 0) return bad("value %u is both constant and external", vi);
        xnn_const_source *src = &rd->sources[vi];
        EMBER_TRY(constant_source(rd, vi, constant_idx, src));
        /* named data is sized when it is loaded; the rest is checked here */
        if (src->key == NULL && src->size < bytes)
            return bad("value %u: constant has %zu bytes, its shape needs %zu", vi, src->size, bytes);
        src->needed = bytes;
        src->present = true;
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Ids                                                                    */
/* ---------------------------------------------------------------------- */

static int by_id(const void *a, const void *b) {
    uint32_t x = ((const id_index *)a)->id, y = ((const id_index *)b)->id;
    return x < y ? -1 : x > y;
}

/* The value index of file id `id` (XNN_INVALID_ID passes through). */
static ember_status map_id(const reader *rd, uint32_t id, uint32_t node, uint32_t *out) {
    if (id == XNN_INVALID_ID) {
        *out = XNN_INVALID_ID;
        return EMBER_OK;
    }
    size_t lo = 0, hi = rd->g->num_values;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t v = rd->id_sorted[mid].id;
        if (v == id) {
            *out = rd->id_sorted[mid].index;
            return EMBER_OK;
        }
        if (v < id) lo = mid + 1;
        else hi = mid;
    }
    return bad("node %u refers to value id %u, which no value has", node, id);
}

/* ---------------------------------------------------------------------- */
/* Nodes                                                                  */
/* ---------------------------------------------------------------------- */

static const uint8_t g_kinds[XNN_NODE_MAX_TAG + 1] = {
#define XNN_NODE(tag, name, kind) [tag] = (uint8_t)(kind) + 1,
#include "xnn_nodes.def"
#undef XNN_NODE
};

static const char *const g_names[XNN_NODE_MAX_TAG + 1] = {
#define XNN_NODE(tag, name, kind) [tag] = #name,
#include "xnn_nodes.def"
#undef XNN_NODE
};

const char *xnn_node_name(uint8_t type) {
    return type <= XNN_NODE_MAX_TAG && g_names[type] != NULL ? g_names[type] : "unknown";
}

/* Reads uint32 field ids[i] of t into out[i]. */
static bool u32s(const fb_reader *r, const fb_table *t, const unsigned *ids, size_t n,
                 uint32_t *out) {
    for (size_t i = 0; i < n; i++)
        if (!fb_u32(r, t, ids[i], 0, &out[i])) return false;
    return true;
}

/* A uint32 vector of at most XNN_MAX_DIMS entries into out; *n its length. */
static bool dims_vec(const fb_reader *r, const fb_table *t, unsigned id, uint32_t *out,
                     uint32_t *n) {
    fb_vec v;
    bool present;
    if (!fb_vec_field(r, t, id, 4, &v, &present) || v.len > XNN_MAX_DIMS) return false;
    for (uint32_t i = 0; i < v.len; i++) out[i] = fb_vec_u32(r, &v, i);
    *n = v.len;
    return true;
}

static ember_status read_node_table(reader *rd, uint32_t ni, const fb_table *t, xnn_node *n) {
    const fb_reader *r = &rd->r;
    uint32_t ids[8] = {0};
    bool ok = true;
    switch ((xnn_kind)n->kind) {
    case XNN_K_1X1: {
        static const unsigned f[] = {0, 1, 2};
        ok = u32s(r, t, f, 3, ids);
        n->nin = 1, n->nout = 1, n->in[0] = ids[0], n->out[0] = ids[1], n->flags = ids[2];
        break;
    }
    case XNN_K_2X1: {
        static const unsigned f[] = {0, 1, 2, 3};
        ok = u32s(r, t, f, 4, ids);
        n->nin = 2, n->nout = 1, n->in[0] = ids[0], n->in[1] = ids[1], n->out[0] = ids[2];
        n->flags = ids[3];
        break;
    }
    case XNN_K_FC: {
        static const unsigned f[] = {0, 1, 2, 3, 4};
        ok = u32s(r, t, f, 5, ids);
        n->nin = 3, n->nout = 1;
        n->in[0] = ids[0], n->in[1] = ids[1], n->in[2] = ids[2], n->out[0] = ids[3];
        n->flags = ids[4];
        break;
    }
    case XNN_K_CONV: {
        static const unsigned f[] = {15, 16, 17, 18, 19};
        uint32_t c[15];
        static const unsigned cf[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
        ok = u32s(r, t, cf, 15, c) && u32s(r, t, f, 5, ids);
        xnn_conv_params *p = &n->p.conv;
        p->pad_top = c[0], p->pad_right = c[1], p->pad_bottom = c[2], p->pad_left = c[3];
        p->kernel_h = c[4], p->kernel_w = c[5], p->stride_h = c[6], p->stride_w = c[7];
        p->dilation_h = c[8], p->dilation_w = c[9], p->group_in = c[10], p->group_out = c[11];
        p->groups = c[12], p->adj_h = c[13], p->adj_w = c[14];
        n->nin = 3, n->nout = 1;
        n->in[0] = ids[0], n->in[1] = ids[1], n->in[2] = ids[2], n->out[0] = ids[3];
        n->flags = ids[4];
        break;
    }
    case XNN_K_POOL: {
        static const unsigned f[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        uint32_t c[13];
        ok = u32s(r, t, f, 13, c);
        xnn_conv_params *p = &n->p.conv;
        p->pad_top = c[0], p->pad_right = c[1], p->pad_bottom = c[2], p->pad_left = c[3];
        p->kernel_h = c[4], p->kernel_w = c[5], p->stride_h = c[6], p->stride_w = c[7];
        p->dilation_h = c[8], p->dilation_w = c[9];
        n->nin = 1, n->nout = 1, n->in[0] = c[10], n->out[0] = c[11], n->flags = c[12];
        break;
    }
    case XNN_K_ARGMAX: {
        static const unsigned f[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        uint32_t c[10];
        ok = u32s(r, t, f, 10, c);
        xnn_conv_params *p = &n->p.conv;
        p->pad_top = c[0], p->pad_right = c[1], p->pad_bottom = c[2], p->pad_left = c[3];
        p->kernel_h = c[4], p->kernel_w = c[5];
        p->stride_h = c[4], p->stride_w = c[5], p->dilation_h = 1, p->dilation_w = 1;
        n->nin = 1, n->nout = 2, n->in[0] = c[6], n->out[0] = c[7], n->out[1] = c[8];
        n->flags = c[9];
        break;
    }
    case XNN_K_CAT: {
        static const unsigned f[] = {0, 1, 2, 3, 4, 5, 6, 7};
        ok = u32s(r, t, f, 8, ids);
        n->p.axis = ids[0];
        n->nin = (uint8_t)(n->type == XNN_NODE_Concatenate2   ? 2
                           : n->type == XNN_NODE_Concatenate3 ? 3
                           : n->type == XNN_NODE_Concatenate4 ? 4
                                                              : 5);
        n->in[0] = ids[1], n->in[1] = ids[2], n->in[2] = ids[3], n->in[3] = ids[4];
        n->in[4] = ids[7];
        n->nout = 1, n->out[0] = ids[5], n->flags = ids[6];
        break;
    }
    case XNN_K_TRANSPOSE:
    case XNN_K_RESHAPE: {
        static const unsigned f[] = {2, 3, 4};
        ok = dims_vec(r, t, 1, n->p.perm.v, &n->p.perm.n) && u32s(r, t, f, 3, ids);
        n->nin = 1, n->nout = 1, n->in[0] = ids[0], n->out[0] = ids[1], n->flags = ids[2];
        break;
    }
    case XNN_K_SLICE: {
        static const unsigned f[] = {3, 4, 5};
        uint32_t ns;
        ok = dims_vec(r, t, 1, n->p.slice.offsets, &n->p.slice.n) &&
             dims_vec(r, t, 2, n->p.slice.sizes, &ns) && u32s(r, t, f, 3, ids);
        if (ok && ns != n->p.slice.n)
            return bad("node %u: slice has %u offsets and %u sizes", ni, n->p.slice.n, ns);
        n->nin = 1, n->nout = 1, n->in[0] = ids[0], n->out[0] = ids[1], n->flags = ids[2];
        break;
    }
    case XNN_K_PAD: {
        static const unsigned f[] = {3, 4, 5};
        uint32_t npre, npost;
        /* unused entries stay 0; the input's rank decides how many count */
        ok = dims_vec(r, t, 0, n->p.pad.pre, &npre) && dims_vec(r, t, 1, n->p.pad.post, &npost) &&
             fb_f32(r, t, 2, 0.0f, &n->p.pad.value) && u32s(r, t, f, 3, ids);
        n->nin = 1, n->nout = 1, n->in[0] = ids[0], n->out[0] = ids[1], n->flags = ids[2];
        break;
    }
    case XNN_K_RESIZE: {
        static const unsigned f[] = {0, 1, 2, 3, 4};
        ok = u32s(r, t, f, 5, ids);
        n->p.resize.height = ids[0], n->p.resize.width = ids[1];
        n->nin = 1, n->nout = 1, n->in[0] = ids[2], n->out[0] = ids[3], n->flags = ids[4];
        break;
    }
    case XNN_K_ELU:
    case XNN_K_LEAKY: {
        static const unsigned f[] = {1, 2, 3};
        ok = fb_f32(r, t, 0, 0.0f, &n->p.alpha) && u32s(r, t, f, 3, ids);
        if (ok && !isfinite(n->p.alpha)) return bad("node %u: parameter is not finite", ni);
        n->nin = 1, n->nout = 1, n->in[0] = ids[0], n->out[0] = ids[1], n->flags = ids[2];
        break;
    }
    case XNN_K_SDPA: {
        static const unsigned f[] = {0, 1, 2, 3, 4, 5, 6};
        ok = u32s(r, t, f, 7, ids);
        n->nin = 5, n->nout = 1;
        for (int i = 0; i < 5; i++) n->in[i] = ids[i];
        n->out[0] = ids[5], n->flags = ids[6];
        break;
    }
    }
    if (!ok) return bad("node %u (%s) is malformed", ni, xnn_node_name(n->type));
    return EMBER_OK;
}

static ember_status read_node(reader *rd, uint32_t ni, const fb_table *xn) {
    const fb_reader *r = &rd->r;
    xnn_node *n = &rd->g->nodes[ni];
    uint8_t type;
    fb_table t, mm;
    bool present, has_mm;
    memset(n, 0, sizeof *n);
    if (!fb_u8(r, xn, XNODE_TYPE, 0, &type) || !fb_table_field(r, xn, XNODE_VALUE, &t, &present) ||
        !fb_u32(r, xn, XNODE_DEBUG_HANDLE, 0, &n->debug_handle) ||
        !fb_table_field(r, xn, XNODE_MIN_MAX, &mm, &has_mm))
        return bad("node %u is malformed", ni);
    if (type > XNN_NODE_MAX_TAG || g_kinds[type] == 0 || !present)
        return bad("node %u: unknown node type %u", ni, type);
    n->type = type;
    n->kind = (uint8_t)(g_kinds[type] - 1);
    n->out_min = -INFINITY;
    n->out_max = INFINITY;
    if (has_mm && (!fb_f32(r, &mm, 0, 0.0f, &n->out_min) || !fb_f32(r, &mm, 1, 0.0f, &n->out_max)))
        return bad("node %u: output_min_max is malformed", ni);
    if (isnan(n->out_min) || isnan(n->out_max) || n->out_min > n->out_max)
        return bad("node %u (%s): output range [%g, %g] is empty", ni, xnn_node_name(type),
                   (double)n->out_min, (double)n->out_max);
    EMBER_TRY(read_node_table(rd, ni, &t, n));
    for (uint32_t i = 0; i < n->nin; i++) {
        EMBER_TRY(map_id(rd, n->in[i], ni, &n->in[i]));
        /* only a bias may be absent */
        bool optional = (n->kind == XNN_K_FC || n->kind == XNN_K_CONV) && i == 2;
        if (n->in[i] == XNN_INVALID_ID && !optional)
            return bad("node %u (%s): input %u is missing", ni, xnn_node_name(n->type), i);
    }
    for (uint32_t i = 0; i < n->nout; i++) {
        EMBER_TRY(map_id(rd, n->out[i], ni, &n->out[i]));
        if (n->out[i] == XNN_INVALID_ID) return bad("node %u has no output", ni);
    }
    return EMBER_OK;
}

/* Every value read by a node is an input, a constant or made by an earlier
 * node; every value is made at most once, by a node, and never an input's
 * or a constant's; every output is made. */
static ember_status check_dataflow(reader *rd) {
    xnn_graph *g = rd->g;
    for (uint32_t i = 0; i < g->num_values; i++) g->values[i].first = g->values[i].last = -1;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        xnn_node *n = &g->nodes[ni];
        for (uint32_t k = 0; k < n->nin; k++) {
            uint32_t vi = n->in[k];
            if (vi == XNN_INVALID_ID) continue;
            const xnn_value *v = &g->values[vi];
            bool source = (v->flags & XNN_VALUE_EXTERNAL_INPUT) || rd->sources[vi].present;
            if (!source && v->first < 0)
                return bad("node %u (%s) reads value %u before any node makes it", ni,
                           xnn_node_name(n->type), vi);
        }
        for (uint32_t k = 0; k < n->nout; k++) {
            xnn_value *v = &g->values[n->out[k]];
            if ((v->flags & XNN_VALUE_EXTERNAL_INPUT) || rd->sources[n->out[k]].present)
                return bad("node %u (%s) writes value %u, an input or constant", ni,
                           xnn_node_name(n->type), n->out[k]);
            if (v->first >= 0)
                return bad("node %u (%s) writes value %u, which node %d already made", ni,
                           xnn_node_name(n->type), n->out[k], (int)v->first);
            v->first = (int32_t)ni;
        }
    }
    for (uint32_t i = 0; i < g->num_values; i++)
        if ((g->values[i].flags & XNN_VALUE_EXTERNAL_OUTPUT) && g->values[i].first < 0)
            return bad("output value %u is made by no node", i);
    return EMBER_OK;
}

/* Externals: every external id used at most once; inputs and outputs listed
 * by external id (the delegate call's argument order). */
static ember_status index_externals(reader *rd, ember_allocator *a) {
    xnn_graph *g = rd->g;
    uint32_t *owner = ember_alloc(a, sizeof(uint32_t) * (g->num_externs + 1), _Alignof(uint32_t));
    if (owner == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
    for (uint32_t e = 0; e < g->num_externs; e++) owner[e] = XNN_INVALID_ID;
    for (uint32_t i = 0; i < g->num_values; i++) {
        const xnn_value *v = &g->values[i];
        if (v->flags == 0) continue;
        if (owner[v->external_id] != XNN_INVALID_ID)
            return bad("values %u and %u share external id %u", owner[v->external_id], i,
                       v->external_id);
        owner[v->external_id] = i;
        if (v->flags & XNN_VALUE_EXTERNAL_INPUT) g->num_inputs++;
        else g->num_outputs++;
    }
    g->inputs = ember_alloc(a, sizeof(uint32_t) * (g->num_inputs + 1), _Alignof(uint32_t));
    g->outputs = ember_alloc(a, sizeof(uint32_t) * (g->num_outputs + 1), _Alignof(uint32_t));
    if (g->inputs == NULL || g->outputs == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
    uint32_t ni = 0, no = 0;
    for (uint32_t e = 0; e < g->num_externs; e++) {
        uint32_t i = owner[e];
        if (i == XNN_INVALID_ID) continue;
        if (g->values[i].flags & XNN_VALUE_EXTERNAL_INPUT) g->inputs[ni++] = i;
        else g->outputs[no++] = i;
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Entry                                                                  */
/* ---------------------------------------------------------------------- */

ember_status xnn_read(const ember_backend_init_ctx *ctx, const uint8_t *payload, size_t size,
                      xnn_graph *g, xnn_const_source **sources) {
    reader rd;
    memset(&rd, 0, sizeof rd);
    memset(g, 0, sizeof *g);
    rd.payload = payload;
    rd.payload_size = size;
    rd.g = g;
    if (payload == NULL) return bad("empty payload");
    EMBER_TRY(read_header(&rd));
    const fb_reader *r = &rd.r;
    fb_table root;
    fb_vec xnodes, xvalues;
    bool present;
    if (!fb_root(r, &root) || !fb_vec_field(r, &root, GRAPH_XNODES, 4, &xnodes, &present) ||
        !fb_vec_field(r, &root, GRAPH_XVALUES, 4, &xvalues, &present) ||
        !fb_u32(r, &root, GRAPH_NUM_EXTERNS, 0, &g->num_externs) ||
        !fb_vec_field(r, &root, GRAPH_CONSTANT_BUFFER, 4, &rd.constant_buffer, &present) ||
        !fb_vec_field(r, &root, GRAPH_CONSTANT_DATA, 4, &rd.constant_data, &present))
        return bad("graph table is malformed");
    if (g->num_externs > XNN_MAX_EXTERNS)
        return bad("%u externals (at most %d)", g->num_externs, XNN_MAX_EXTERNS);
    ember_allocator *a = ctx->allocator;
    g->num_values = xvalues.len;
    g->num_nodes = xnodes.len;
    g->values = ember_alloc(a, sizeof(xnn_value) * (g->num_values + 1), _Alignof(xnn_value));
    g->nodes = ember_alloc(a, sizeof(xnn_node) * (g->num_nodes + 1), _Alignof(xnn_node));
    /* sources: the values' bytes, then their scales' */
    size_t nsources;
    if (ember_mul_overflow((size_t)g->num_values + 1, 2 * sizeof(xnn_const_source), &nsources))
        return bad("%u values", g->num_values);
    rd.sources = ember_alloc(a, nsources, _Alignof(xnn_const_source));
    rd.id_sorted = ember_alloc(a, sizeof(id_index) * (g->num_values + 1), _Alignof(id_index));
    if (g->values == NULL || g->nodes == NULL || rd.sources == NULL || rd.id_sorted == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY,
                                  "xnnpack: no memory for %u values and %u nodes", g->num_values,
                                  g->num_nodes);
    memset(rd.sources, 0, nsources);
    for (uint32_t i = 0; i < g->num_values; i++) {
        fb_table xv;
        if (!fb_vec_table(r, &xvalues, i, &xv)) return bad("value %u is malformed", i);
        EMBER_TRY(read_value(&rd, i, &xv));
        rd.id_sorted[i].id = g->values[i].id;
        rd.id_sorted[i].index = i;
    }
    qsort(rd.id_sorted, g->num_values, sizeof(id_index), by_id);
    for (uint32_t i = 1; i < g->num_values; i++)
        if (rd.id_sorted[i].id == rd.id_sorted[i - 1].id)
            return bad("two values have id %u", rd.id_sorted[i].id);
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        fb_table xn;
        if (!fb_vec_table(r, &xnodes, i, &xn)) return bad("node %u is malformed", i);
        EMBER_TRY(read_node(&rd, i, &xn));
    }
    EMBER_TRY(check_dataflow(&rd));
    EMBER_TRY(index_externals(&rd, a));
    *sources = rd.sources;
    return EMBER_OK;
}
