/*
 * Named data maps: `.ptd` files (ExecuTorch's "flat tensor" format), read
 * through a data loader and verified completely when opened.
 *
 *   [0..3]   u32  offset of the flatbuffer root table
 *   [4..7]   "FT01"                    file identifier
 *   [8..11]  "FH01"                    header magic
 *   [12..15] u32  header length (40 now; longer headers keep these fields)
 *   [16..23] u64  flatbuffer_offset: bytes the header takes (padded)
 *   [24..31] u64  flatbuffer_size: bytes of the flatbuffer without the header
 *   [32..39] u64  segment_base_offset: absolute offset of the segment data
 *   [40..47] u64  segment_data_size
 *   ...           flatbuffer body, up to flatbuffer_offset + flatbuffer_size
 *   ...           segments (DataSegment offsets are relative to the base)
 *
 * FlatTensor { version:uint, segments:[DataSegment{offset:ulong, size:ulong}],
 *              named_data:[NamedData{key:string, segment_index:uint,
 *                          tensor_layout:TensorLayout{scalar_type:byte,
 *                          sizes:[int], dim_order:[ubyte]}}] }
 */
#include <string.h>

#include "format/data_map.h"

#define PTD_HEAD_BYTES 48          /* root offset, identifier, the 40 header bytes */
#define PTD_HEADER_MIN_LENGTH 40
#define PTD_MAX_VERSION 0          /* the newest schema version this reader knows */

enum {
    FT_VERSION = 0, FT_SEGMENTS = 1, FT_NAMED_DATA = 2,
    SEG_OFFSET = 0, SEG_SIZE = 1,
    ND_KEY = 0, ND_SEGMENT = 1, ND_LAYOUT = 2,
    LAYOUT_SCALAR_TYPE = 0, LAYOUT_SIZES = 1, LAYOUT_DIM_ORDER = 2
};

static ember_status bad(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static ember_status bad(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ember_set_error_v(EMBER_ERR_INVALID_PROGRAM, fmt, ap);
    va_end(ap);
    ember_error_prefix("data map");
    return EMBER_ERR_INVALID_PROGRAM;
}

/* Loads through the map's loader; a failure always gets a message. */
static ember_status map_load(const ember_data_map *m, uint64_t offset, size_t size,
                             ember_segment_kind kind, ember_buffer *out) {
    ember_clear_error();
    ember_status st = m->loader->load(m->loader->ctx, offset, size, kind, out);
    if (st != EMBER_OK && ember_last_error()[0] == '\0')
        ember_set_error(st, "data loader failed (%s) to load %zu bytes at offset %llu",
                        ember_status_str(st), size, (unsigned long long)offset);
    return st;
}

static void map_release(const ember_data_map *m, ember_buffer *buf) {
    if (buf->data != NULL && m->loader->release != NULL) m->loader->release(m->loader->ctx, buf);
    buf->data = NULL;
    buf->size = 0;
}

/* ---------------------------------------------------------------------- */
/* Verification                                                           */
/* ---------------------------------------------------------------------- */

static ember_status read_header(ember_data_map *m, uint64_t *fb_end) {
    ember_buffer head;
    if (m->file_size < 8)
        return ember_set_error(EMBER_ERR_TRUNCATED,
                               "data map: file has %llu bytes, a header needs %d",
                               (unsigned long long)m->file_size, PTD_HEAD_BYTES);
    size_t n = m->file_size < PTD_HEAD_BYTES ? (size_t)m->file_size : PTD_HEAD_BYTES;
    EMBER_TRY(map_load(m, 0, n, EMBER_SEGMENT_PROGRAM, &head));
    const uint8_t *h = head.data;
    ember_status st = EMBER_OK;
    if (memcmp(h + 4, "FT01", 4) != 0) {
        st = ember_set_error(EMBER_ERR_BAD_IDENTIFIER, "data map: file identifier is not FT01");
    } else if (n < PTD_HEAD_BYTES) {
        st =
            ember_set_error(EMBER_ERR_TRUNCATED, "data map: file has %llu bytes, a header needs %d",
                            (unsigned long long)m->file_size, PTD_HEAD_BYTES);
    } else if (memcmp(h + 8, "FH01", 4) != 0) {
        st = ember_set_error(EMBER_ERR_BAD_IDENTIFIER, "data map: no FH01 header at offset 8");
    } else {
        uint32_t length = fb_rd_u32(h + 12);
        uint64_t fb_offset = fb_rd_u64(h + 16), fb_size = fb_rd_u64(h + 24);
        m->segment_base = fb_rd_u64(h + 32);
        m->segment_data_size = fb_rd_u64(h + 40);
        if (length < PTD_HEADER_MIN_LENGTH)
            st = bad("header length %u is below %d", (unsigned)length, PTD_HEADER_MIN_LENGTH);
        else if (fb_offset < length || fb_size > UINT64_MAX - fb_offset)
            st = bad("flatbuffer_offset %llu / flatbuffer_size %llu are inconsistent",
                     (unsigned long long)fb_offset, (unsigned long long)fb_size);
        else if ((*fb_end = fb_offset + fb_size) < PTD_HEAD_BYTES || *fb_end > m->file_size)
            st =
                ember_set_error(EMBER_ERR_TRUNCATED,
                                "data map: flatbuffer (%llu bytes) does not fit the %llu-byte file",
                                (unsigned long long)*fb_end, (unsigned long long)m->file_size);
        else if (*fb_end > SIZE_MAX || *fb_end > UINT32_MAX)
            st = ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                                 "data map: flatbuffer of %llu bytes is too large",
                                 (unsigned long long)*fb_end);
        else if (m->segment_base > m->file_size ||
                 m->segment_data_size > m->file_size - m->segment_base ||
                 (m->segment_data_size > 0 && m->segment_base < *fb_end))
            st = ember_set_error(EMBER_ERR_TRUNCATED,
                                 "data map: segments (%llu bytes at %llu) do not fit the %llu-byte "
                                 "file after the %llu-byte flatbuffer",
                                 (unsigned long long)m->segment_data_size,
                                 (unsigned long long)m->segment_base,
                                 (unsigned long long)m->file_size, (unsigned long long)*fb_end);
    }
    map_release(m, &head);
    return st;
}

/* A segment's offset and size (checked at open to lie in the segment data). */
static bool segment_at(const ember_data_map *m, uint32_t i, uint64_t *offset, uint64_t *size) {
    fb_table seg;
    return fb_vec_table(&m->r, &m->segments, i, &seg) &&
           fb_u64(&m->r, &seg, SEG_OFFSET, 0, offset) && fb_u64(&m->r, &seg, SEG_SIZE, 0, size);
}

/* Decodes entry i: key, segment, and tensor layout if any (all checked). */
static ember_status decode_entry(const ember_data_map *m, uint32_t i, fb_str *key,
                                 uint32_t *segment, ember_data_info *info) {
    const fb_reader *r = &m->r;
    fb_table t, layout;
    bool has_key, has_layout;
    uint64_t offset, size;
    memset(info, 0, sizeof *info);
    if (!fb_vec_table(r, &m->named_data, i, &t) ||
        !fb_str_field(r, &t, ND_KEY, key, &has_key) ||
        !fb_u32(r, &t, ND_SEGMENT, 0, segment) ||
        !fb_table_field(r, &t, ND_LAYOUT, &layout, &has_layout))
        return bad("named_data %u is malformed", (unsigned)i);
    if (!has_key) return bad("named_data %u has no key", (unsigned)i);
    if (*segment >= m->segments.len)
        return bad("named_data %u ('%.64s'): segment_index %u out of range (%u segments)",
                   (unsigned)i, key->data, (unsigned)(*segment), (unsigned)m->segments.len);
    if (!segment_at(m, *segment, &offset, &size))
        return bad("segment %u is malformed", (unsigned)(*segment));
    info->size = (size_t)size;
    if (!has_layout) return EMBER_OK;

    uint8_t dtype;
    fb_vec sizes, order;
    bool has_sizes, has_order;
    if (!fb_u8(r, &layout, LAYOUT_SCALAR_TYPE, 0, &dtype) ||
        !fb_vec_field(r, &layout, LAYOUT_SIZES, 4, &sizes, &has_sizes) ||
        !fb_vec_field(r, &layout, LAYOUT_DIM_ORDER, 1, &order, &has_order))
        return bad("named_data %u ('%.64s'): tensor_layout is malformed", (unsigned)i, key->data);
    size_t elem = ember_dtype_size(dtype);
    if (elem == 0)
        return bad("named_data %u ('%.64s'): unknown scalar type %u", (unsigned)i, key->data,
                   dtype);
    if (sizes.len > EMBER_MAX_DIM)
        return bad("named_data %u ('%.64s'): rank %u exceeds %d", (unsigned)i, key->data,
                   (unsigned)sizes.len, EMBER_MAX_DIM);
    if (order.len != sizes.len)
        return bad("named_data %u ('%.64s'): dim_order has %u entries for rank %u", (unsigned)i,
                   key->data, (unsigned)order.len, (unsigned)sizes.len);
    info->has_layout = true;
    info->dtype = dtype;
    info->dim = sizes.len;
    uint32_t seen = 0;
    for (uint32_t d = 0; d < sizes.len; d++) {
        info->sizes[d] = fb_vec_i32(r, &sizes, d);
        if (info->sizes[d] < 0)
            return bad("named_data %u ('%.64s'): size %d of dim %u", (unsigned)i, key->data,
                       (int)info->sizes[d], (unsigned)d);
        uint8_t o = fb_vec_u8(r, &order, d);
        if (o >= sizes.len || (seen & (1u << o)) != 0)
            return bad("named_data %u ('%.64s'): dim_order is not a permutation", (unsigned)i,
                       key->data);
        seen |= 1u << o;
        info->dim_order[d] = o;
    }
    int64_t numel;
    if (!ember_shape_bytes(info->sizes, info->dim, elem, &numel, &info->nbytes))
        return bad("named_data %u ('%.64s'): tensor size overflows", (unsigned)i, key->data);
    if (info->nbytes > size)
        return bad("named_data %u ('%.64s'): a %s tensor of %zu bytes in a %llu-byte segment",
                   (unsigned)i, key->data, ember_dtype_name(dtype), info->nbytes,
                   (unsigned long long)size);
    /* Tensors are read in place: their file offset keeps their alignment. */
    size_t align = elem < 8 ? elem : 8;
    if (((m->segment_base + offset) & (align - 1)) != 0)
        return bad("named_data %u ('%.64s'): data at offset %llu is misaligned for %s", (unsigned)i,
                   key->data, (unsigned long long)(m->segment_base + offset),
                   ember_dtype_name(dtype));
    return EMBER_OK;
}

static ember_status verify(ember_data_map *m) {
    const fb_reader *r = &m->r;
    uint32_t version;
    bool has_segments, has_named;
    if (!fb_u32(r, &m->root, FT_VERSION, 0, &version) ||
        !fb_vec_field(r, &m->root, FT_SEGMENTS, 4, &m->segments, &has_segments) ||
        !fb_vec_field(r, &m->root, FT_NAMED_DATA, 4, &m->named_data, &has_named))
        return bad("FlatTensor table is malformed");
    if (version > PTD_MAX_VERSION)
        return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                               "data map: schema version %u is newer than this reader (%d)",
                               (unsigned)version, PTD_MAX_VERSION);
    if (!has_segments) return bad("no segments vector");
    if (!has_named) return bad("no named_data vector");
    for (uint32_t i = 0; i < m->segments.len; i++) {
        uint64_t offset, size;
        if (!segment_at(m, i, &offset, &size)) return bad("segment %u is malformed", (unsigned)i);
        if (offset > m->segment_data_size || size > m->segment_data_size - offset ||
            size > SIZE_MAX)
            return bad("segment %u (%llu bytes at %llu) overflows the segment data (%llu bytes)",
                       (unsigned)i, (unsigned long long)size, (unsigned long long)offset,
                       (unsigned long long)m->segment_data_size);
    }
    for (uint32_t i = 0; i < m->named_data.len; i++) {
        fb_str key;
        uint32_t segment;
        ember_data_info info;
        EMBER_TRY(decode_entry(m, i, &key, &segment, &info));
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Public API                                                             */
/* ---------------------------------------------------------------------- */

ember_status ember_data_map_open(const ember_data_loader *loader,
                                 const ember_data_map_options *options, ember_data_map **out) {
    ember_heap_allocator heap;
    ember_allocator *alloc;
    ember_data_map *m;
    uint64_t fb_end = 0;
    ember_status st;

    if (out != NULL) *out = NULL;
    if (out == NULL || loader == NULL || loader->load == NULL || loader->size == NULL ||
        loader->struct_size < sizeof(ember_data_loader))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "data map open: bad loader or NULL output");
    if (options != NULL && options->struct_size < sizeof(ember_data_map_options))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_data_map_options.struct_size is wrong");
    ember_heap_allocator_init(&heap);
    alloc = options != NULL && options->allocator != NULL ? options->allocator : &heap.base;
    m = ember_alloc(alloc, sizeof *m, _Alignof(ember_data_map));
    if (m == NULL) return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate the data map");
    memset(m, 0, sizeof *m);
    /* The heap's block list moves into the map it now owns. */
    m->heap = heap;
    m->heap.base.ctx = &m->heap;
    m->loader = loader;

    ember_clear_error();
    st = loader->size(loader->ctx, &m->file_size);
    if (st != EMBER_OK && ember_last_error()[0] == '\0')
        ember_set_error(st, "data loader failed (%s) to report the size", ember_status_str(st));
    if (st == EMBER_OK) st = read_header(m, &fb_end);
    if (st == EMBER_OK) st = map_load(m, 0, (size_t)fb_end, EMBER_SEGMENT_PROGRAM, &m->flatbuffer);
    if (st == EMBER_OK) {
        m->r.buf = m->flatbuffer.data;
        m->r.size = m->flatbuffer.size;
        if (m->r.size != fb_end || !fb_root(&m->r, &m->root))
            st = bad("flatbuffer root table is malformed");
    }
    if (st == EMBER_OK) st = verify(m);
    if (st != EMBER_OK) {
        ember_data_map_close(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void ember_data_map_close(ember_data_map *map) {
    if (map == NULL) return;
    map_release(map, &map->flatbuffer);
    ember_heap_allocator heap = map->heap;
    ember_heap_allocator_release(&heap);
}

size_t ember_data_map_key_count(const ember_data_map *map) {
    return map != NULL ? map->named_data.len : 0;
}

ember_status ember_data_map_key(const ember_data_map *map, size_t i, const char **key) {
    fb_str k;
    uint32_t segment;
    ember_data_info info;
    if (map == NULL || key == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "data map key: NULL argument");
    if (i >= map->named_data.len)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "data map key %zu of %u", i,
                               (unsigned)map->named_data.len);
    EMBER_TRY(decode_entry(map, (uint32_t)i, &k, &segment, &info));
    *key = k.data;
    return EMBER_OK;
}

/* The first entry whose key is key[0..len). */
static bool map_find(const ember_data_map *m, const char *key, size_t len, uint32_t *entry) {
    for (uint32_t i = 0; i < m->named_data.len; i++) {
        fb_table t;
        fb_str k;
        bool present;
        if (fb_vec_table(&m->r, &m->named_data, i, &t) &&
            fb_str_field(&m->r, &t, ND_KEY, &k, &present) && present && k.len == len &&
            memcmp(k.data, key, len) == 0) {
            *entry = i;
            return true;
        }
    }
    return false;
}

ember_status ember_data_map_info(const ember_data_map *map, const char *key,
                                 ember_data_info *info) {
    named_ref ref;
    if (map == NULL || key == NULL || info == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "data map info: NULL argument");
    EMBER_TRY(named_find(NULL, &map, 1, key, strlen(key), &ref));
    named_info(NULL, &ref, info);
    return EMBER_OK;
}

ember_status ember_data_map_load(const ember_data_map *map, const char *key, ember_buffer *out) {
    named_ref ref;
    const ember_data_loader *loader;
    if (out != NULL) memset(out, 0, sizeof *out);
    if (map == NULL || key == NULL || out == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "data map load: NULL argument");
    EMBER_TRY(named_find(NULL, &map, 1, key, strlen(key), &ref));
    return named_load(NULL, &ref, EMBER_SEGMENT_NAMED_DATA, out, &loader);
}

void ember_data_map_release(const ember_data_map *map, ember_buffer *buf) {
    if (map == NULL || buf == NULL) return;
    map_release(map, buf);
}

/* ---------------------------------------------------------------------- */
/* Lookup across a program and its data maps                              */
/* ---------------------------------------------------------------------- */

ember_status named_find(const ember_program *p, const ember_data_map *const *maps, size_t n,
                        const char *key, size_t len, named_ref *out) {
    if (p != NULL && pte_find_named_data(p, key, len, &out->index)) {
        out->map = NULL;
        return EMBER_OK;
    }
    for (size_t k = 0; k < n; k++) {
        if (maps[k] != NULL && map_find(maps[k], key, len, &out->index)) {
            out->map = maps[k];
            return EMBER_OK;
        }
    }
    int shown = (int)(len < 200 ? len : 200);
    if (p != NULL && n == 0)
        return ember_set_error(EMBER_ERR_NOT_FOUND,
                               "no named data '%.*s' in the program, and no data map was given "
                               "(load the .ptd file that holds it)",
                               shown, key);
    return ember_set_error(EMBER_ERR_NOT_FOUND, "no named data '%.*s' in the %s%zu data map%s",
                           shown, key, p != NULL ? "program or its " : "", n, n == 1 ? "" : "s");
}

void named_info(const ember_program *p, const named_ref *ref, ember_data_info *info) {
    memset(info, 0, sizeof *info);
    if (ref->map != NULL) {
        fb_str key;
        uint32_t segment;
        /* Verified at open: cannot fail. */
        (void)decode_entry(ref->map, ref->index, &key, &segment, info);
        return;
    }
    fb_table seg;
    uint64_t size = 0;
    if (fb_vec_table(&p->r, &p->segments, ref->index, &seg))
        (void)fb_u64(&p->r, &seg, SEGMENT_SIZE, 0, &size);
    info->size = (size_t)size;
}

ember_status named_load(const ember_program *p, const named_ref *ref, ember_segment_kind kind,
                        ember_buffer *out, const ember_data_loader **loader) {
    memset(out, 0, sizeof *out);
    if (ref->map == NULL) {
        *loader = p->loader;
        return pte_load_segment(p, ref->index, kind, out);
    }
    const ember_data_map *m = ref->map;
    fb_str key;
    uint32_t segment;
    uint64_t offset = 0, size = 0;
    ember_data_info info;
    *loader = m->loader;
    EMBER_TRY(decode_entry(m, ref->index, &key, &segment, &info));
    (void)segment_at(m, segment, &offset, &size);
    /* Checked at open: base + offset + size lies inside the file. */
    return map_load(m, m->segment_base + offset, (size_t)size, kind, out);
}

/* ---------------------------------------------------------------------- */
/* Named data for backends                                                */
/* ---------------------------------------------------------------------- */

ember_status ember_backend_get_data(const ember_backend_init_ctx *ctx, const char *key,
                                    size_t key_len, ember_backend_data *out) {
    named_ref ref;
    if (out != NULL) memset(out, 0, sizeof *out);
    if (ctx == NULL || ctx->program == NULL || key == NULL || out == NULL ||
        (ctx->data_maps == NULL && ctx->num_data_maps > 0))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "named data: NULL argument");
    EMBER_TRY(named_find(ctx->program, ctx->data_maps, ctx->num_data_maps, key, key_len, &ref));
    EMBER_TRY(
        named_load(ctx->program, &ref, EMBER_SEGMENT_NAMED_DATA, &out->buffer_, &out->loader_));
    out->data = out->buffer_.data;
    out->size = out->buffer_.size;
    return EMBER_OK;
}

const void *ember_backend_find_packed(const ember_backend_init_ctx *ctx, const void *key,
                                      size_t key_len, size_t size) {
    if (ctx == NULL || ctx->weight_cache == NULL || ctx->weight_cache->find == NULL ||
        key == NULL || key_len == 0)
        return NULL;
    const void *p = ctx->weight_cache->find(ctx->weight_cache->ctx, key, key_len, size);
    return p != NULL && (uintptr_t)p % 64 == 0 ? p : NULL;
}

void ember_backend_add_packed(const ember_backend_init_ctx *ctx, const void *key, size_t key_len,
                              const void *data, size_t size) {
    if (ctx == NULL || ctx->weight_cache == NULL || ctx->weight_cache->add == NULL ||
        key == NULL || key_len == 0 || data == NULL)
        return;
    ctx->weight_cache->add(ctx->weight_cache->ctx, key, key_len, data, size);
}

void ember_backend_release_data(ember_backend_data *data) {
    if (data == NULL) return;
    if (data->loader_ != NULL && data->buffer_.data != NULL && data->loader_->release != NULL)
        data->loader_->release(data->loader_->ctx, &data->buffer_);
    memset(data, 0, sizeof *data);
}
