/*
 * Bounds-checked flatbuffer reader (see flatbuffer.h).
 */
#include <string.h>

#include "format/flatbuffer.h"

/* Whether [pos, pos + len) lies inside the buffer. */
static bool in_bounds(const fb_reader *r, uint64_t pos, uint64_t len) {
    return pos <= r->size && len <= r->size - pos;
}

static bool table_at(const fb_reader *r, uint64_t pos, fb_table *out) {
    if (!in_bounds(r, pos, 4)) return false;
    int32_t soff = (int32_t)fb_rd_u32(r->buf + pos);
    int64_t vt = (int64_t)pos - (int64_t)soff;
    if (vt < 0 || !in_bounds(r, (uint64_t)vt, 4)) return false;
    uint16_t vt_size = fb_rd_u16(r->buf + vt);
    uint16_t size = fb_rd_u16(r->buf + vt + 2);
    if (vt_size < 4 || (vt_size & 1) != 0 || !in_bounds(r, (uint64_t)vt, vt_size)) return false;
    if (size < 4 || !in_bounds(r, pos, size)) return false;
    out->pos = (uint32_t)pos;
    out->vt = (uint32_t)vt;
    out->vt_size = vt_size;
    out->size = size;
    return true;
}

bool fb_root(const fb_reader *r, fb_table *out) {
    if (r->size > UINT32_MAX || !in_bounds(r, 0, 4)) return false;
    return table_at(r, fb_rd_u32(r->buf), out);
}

/* Offset of field id inside the table, 0 if absent. */
static uint16_t field_off(const fb_reader *r, const fb_table *t, unsigned id) {
    uint32_t slot = 4u + 2u * id;
    if (slot + 2u > t->vt_size) return 0;
    return fb_rd_u16(r->buf + t->vt + slot);
}

bool fb_has(const fb_reader *r, const fb_table *t, unsigned id) { return field_off(r, t, id) != 0; }

/* Position of a present field of width bytes, checked inside the table. */
static bool field_pos(const fb_reader *r, const fb_table *t, unsigned id, unsigned width,
                      uint32_t *pos, bool *present) {
    uint16_t off = field_off(r, t, id);
    *present = off != 0;
    if (off == 0) return true;
    if (off < 4 || (uint32_t)off + width > t->size) return false;
    *pos = t->pos + off;
    return true;
}

#define SCALAR_FIELD(name, type, width, read)                                                     \
    bool name(const fb_reader *r, const fb_table *t, unsigned id, type def, type *out) {          \
        uint32_t pos = 0;                                                                         \
        bool present;                                                                             \
        if (!field_pos(r, t, id, width, &pos, &present)) return false;                            \
        *out = present ? (type)read : def;                                                        \
        return true;                                                                              \
    }

SCALAR_FIELD(fb_u8, uint8_t, 1, r->buf[pos])
SCALAR_FIELD(fb_i16, int16_t, 2, fb_rd_u16(r->buf + pos))
SCALAR_FIELD(fb_u32, uint32_t, 4, fb_rd_u32(r->buf + pos))
SCALAR_FIELD(fb_i32, int32_t, 4, fb_rd_u32(r->buf + pos))
SCALAR_FIELD(fb_u64, uint64_t, 8, fb_rd_u64(r->buf + pos))
SCALAR_FIELD(fb_i64, int64_t, 8, fb_rd_u64(r->buf + pos))

bool fb_f32(const fb_reader *r, const fb_table *t, unsigned id, float def, float *out) {
    uint32_t bits;
    if (!fb_u32(r, t, id, 0, &bits)) return false;
    if (!fb_has(r, t, id)) {
        *out = def;
        return true;
    }
    memcpy(out, &bits, sizeof *out);
    return true;
}

bool fb_f64(const fb_reader *r, const fb_table *t, unsigned id, double def, double *out) {
    uint64_t bits;
    if (!fb_u64(r, t, id, 0, &bits)) return false;
    if (!fb_has(r, t, id)) {
        *out = def;
        return true;
    }
    memcpy(out, &bits, sizeof *out);
    return true;
}

/* Follows the uoffset stored at pos. */
static bool deref(const fb_reader *r, uint32_t pos, uint64_t *target) {
    if (!in_bounds(r, pos, 4)) return false;
    *target = (uint64_t)pos + fb_rd_u32(r->buf + pos);
    return *target < r->size;
}

bool fb_table_field(const fb_reader *r, const fb_table *t, unsigned id, fb_table *out,
                    bool *present) {
    uint32_t pos = 0;
    uint64_t target;
    if (!field_pos(r, t, id, 4, &pos, present)) return false;
    if (!*present) return true;
    return deref(r, pos, &target) && table_at(r, target, out);
}

static bool vec_at(const fb_reader *r, uint64_t pos, size_t elem_size, fb_vec *out) {
    if (!in_bounds(r, pos, 4)) return false;
    uint32_t len = fb_rd_u32(r->buf + pos);
    if (!in_bounds(r, pos + 4, (uint64_t)len * elem_size)) return false;
    out->pos = (uint32_t)(pos + 4);
    out->len = len;
    return true;
}

bool fb_vec_field(const fb_reader *r, const fb_table *t, unsigned id, size_t elem_size,
                  fb_vec *out, bool *present) {
    uint32_t pos = 0;
    uint64_t target;
    out->pos = 0;
    out->len = 0;
    if (!field_pos(r, t, id, 4, &pos, present)) return false;
    if (!*present) return true;
    return deref(r, pos, &target) && vec_at(r, target, elem_size, out);
}

static bool str_at(const fb_reader *r, uint64_t pos, fb_str *out) {
    fb_vec v;
    /* One byte more than the length: the terminating NUL must be there. */
    if (!vec_at(r, pos, 1, &v) || !in_bounds(r, v.pos, (uint64_t)v.len + 1)) return false;
    if (r->buf[v.pos + v.len] != 0) return false;
    out->data = (const char *)r->buf + v.pos;
    out->len = v.len;
    return memchr(out->data, 0, out->len) == NULL;
}

bool fb_str_field(const fb_reader *r, const fb_table *t, unsigned id, fb_str *out, bool *present) {
    uint32_t pos = 0;
    uint64_t target;
    out->data = "";
    out->len = 0;
    if (!field_pos(r, t, id, 4, &pos, present)) return false;
    if (!*present) return true;
    return deref(r, pos, &target) && str_at(r, target, out);
}

bool fb_vec_table(const fb_reader *r, const fb_vec *v, uint32_t i, fb_table *out) {
    uint64_t target;
    if (i >= v->len) return false;
    return deref(r, v->pos + 4u * i, &target) && table_at(r, target, out);
}

bool fb_vec_str(const fb_reader *r, const fb_vec *v, uint32_t i, fb_str *out) {
    uint64_t target;
    if (i >= v->len) return false;
    return deref(r, v->pos + 4u * i, &target) && str_at(r, target, out);
}

/* Vector element reads: the vector's extent was checked when it was read,
 * so an index below len is inside the buffer. */
uint16_t fb_vec_u16(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? fb_rd_u16(r->buf + v->pos + 2u * i) : 0;
}
uint32_t fb_vec_u32(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? fb_rd_u32(r->buf + v->pos + 4u * i) : 0;
}
float fb_vec_f32(const fb_reader *r, const fb_vec *v, uint32_t i) {
    uint32_t bits = fb_vec_u32(r, v, i);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
int32_t fb_vec_i32(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? (int32_t)fb_rd_u32(r->buf + v->pos + 4u * i) : 0;
}
int64_t fb_vec_i64(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? (int64_t)fb_rd_u64(r->buf + v->pos + 8u * i) : 0;
}
uint64_t fb_vec_u64(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? fb_rd_u64(r->buf + v->pos + 8u * i) : 0;
}
uint8_t fb_vec_u8(const fb_reader *r, const fb_vec *v, uint32_t i) {
    return i < v->len ? r->buf[v->pos + i] : 0;
}
double fb_vec_f64(const fb_reader *r, const fb_vec *v, uint32_t i) {
    uint64_t bits = fb_vec_u64(r, v, i);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}
const uint8_t *fb_vec_bytes(const fb_reader *r, const fb_vec *v) { return r->buf + v->pos; }
