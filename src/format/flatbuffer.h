/*
 * A bounds-checked flatbuffer reader. Every accessor checks that what it
 * reads lies inside the buffer, with 64-bit arithmetic, and reports failure
 * instead of reading past the end; values are read byte-wise (little-endian),
 * so misaligned or hostile buffers are safe.
 */
#ifndef EMBER_FORMAT_FLATBUFFER_H
#define EMBER_FORMAT_FLATBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fb_reader {
    const uint8_t *buf;
    size_t size;
} fb_reader;

/** A table: its start and its vtable. */
typedef struct fb_table {
    uint32_t pos;
    uint32_t vt;
    uint16_t vt_size;
    uint16_t size;
} fb_table;

/** A vector: position of element 0 and element count. */
typedef struct fb_vec {
    uint32_t pos;
    uint32_t len;
} fb_vec;

/** A string: bytes and length; NUL-terminated (checked). */
typedef struct fb_str {
    const char *data;
    uint32_t len;
} fb_str;

static inline uint16_t fb_rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t fb_rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t fb_rd_u64(const uint8_t *p) {
    return (uint64_t)fb_rd_u32(p) | ((uint64_t)fb_rd_u32(p + 4) << 32);
}

/** Root table (offset at byte 0). */
bool fb_root(const fb_reader *r, fb_table *out);

/** Whether field id is present. */
bool fb_has(const fb_reader *r, const fb_table *t, unsigned id);

/* Scalar fields: false if the field lies outside the table or buffer; an
 * absent field yields def. */
bool fb_u8(const fb_reader *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out);
bool fb_i16(const fb_reader *r, const fb_table *t, unsigned id, int16_t def, int16_t *out);
bool fb_u32(const fb_reader *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out);
bool fb_i32(const fb_reader *r, const fb_table *t, unsigned id, int32_t def, int32_t *out);
bool fb_u64(const fb_reader *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out);
bool fb_i64(const fb_reader *r, const fb_table *t, unsigned id, int64_t def, int64_t *out);
bool fb_f32(const fb_reader *r, const fb_table *t, unsigned id, float def, float *out);
bool fb_f64(const fb_reader *r, const fb_table *t, unsigned id, double def, double *out);

/* Reference fields: *present tells whether the field exists. */
bool fb_table_field(const fb_reader *r, const fb_table *t, unsigned id, fb_table *out,
                    bool *present);
bool fb_vec_field(const fb_reader *r, const fb_table *t, unsigned id, size_t elem_size,
                  fb_vec *out, bool *present);
bool fb_str_field(const fb_reader *r, const fb_table *t, unsigned id, fb_str *out, bool *present);

/* Vector elements (i < v->len is the caller's job; checked again here). */
bool fb_vec_table(const fb_reader *r, const fb_vec *v, uint32_t i, fb_table *out);
bool fb_vec_str(const fb_reader *r, const fb_vec *v, uint32_t i, fb_str *out);
uint16_t fb_vec_u16(const fb_reader *r, const fb_vec *v, uint32_t i);
uint32_t fb_vec_u32(const fb_reader *r, const fb_vec *v, uint32_t i);
float fb_vec_f32(const fb_reader *r, const fb_vec *v, uint32_t i);
int32_t fb_vec_i32(const fb_reader *r, const fb_vec *v, uint32_t i);
int64_t fb_vec_i64(const fb_reader *r, const fb_vec *v, uint32_t i);
uint64_t fb_vec_u64(const fb_reader *r, const fb_vec *v, uint32_t i);
uint8_t fb_vec_u8(const fb_reader *r, const fb_vec *v, uint32_t i);
double fb_vec_f64(const fb_reader *r, const fb_vec *v, uint32_t i);
const uint8_t *fb_vec_bytes(const fb_reader *r, const fb_vec *v);

#endif /* EMBER_FORMAT_FLATBUFFER_H */
