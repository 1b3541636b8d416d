/*
 * The bounded front-to-back flatbuffer writer (fb_builder.h).
 */
#include "ember/config.h"
#include "devtools/fb_builder.h"

#if EMBER_EVENT_TRACER

#include <string.h>

void fbb_init(fbb *b, void *buf, size_t cap) {
    b->buf = buf;
    b->cap = buf != NULL ? cap : 0;
    b->pos = 0;
    b->full = false;
}

/* Reserves n bytes at the end; false (and full) when they do not fit. The
 * position is counted either way, so the final pos is the size needed. */
static bool reserve(fbb *b, size_t n, size_t *at) {
    *at = b->pos;
    if (n > SIZE_MAX - b->pos) {
        b->full = true;
        return false;
    }
    b->pos += n;
    if (b->buf == NULL || b->pos > b->cap) {
        b->full = true;
        return false;
    }
    return true;
}

void fbb_put_at(fbb *b, size_t at, uint64_t v, size_t size) {
    if (b->buf == NULL || at > b->cap || size > b->cap - at) return;
    for (size_t k = 0; k < size; k++) b->buf[at + k] = (uint8_t)(v >> (8 * k));
}

size_t fbb_put(fbb *b, uint64_t v, size_t size) {
    size_t at;
    if (reserve(b, size, &at)) fbb_put_at(b, at, v, size);
    return at;
}

void fbb_pad(fbb *b, size_t align, size_t extra) {
    while (((b->pos + extra) & (align - 1)) != 0) fbb_put(b, 0, 1);
}

void fbb_patch(fbb *b, size_t slot, size_t target) {
    /* Offsets are 32-bit: a trace past 4 GiB cannot be written. */
    if (target - slot > UINT32_MAX) {
        b->full = true;
        return;
    }
    fbb_put_at(b, slot, (uint64_t)(target - slot), 4);
}

size_t fbb_table(fbb *b, const fbb_field *fields, size_t n, size_t *slots) {
    uint16_t offs[FBB_MAX_FIELDS];
    size_t cursor = 4, align = 4;
    unsigned max_id = 0;
    memset(offs, 0, sizeof offs);
    /* Lay out the widest fields first, so each is aligned to its size when
     * the table starts on an 8-byte boundary. */
    for (size_t width = 8; width >= 1; width /= 2) {
        for (size_t k = 0; k < n; k++) {
            if (fields[k].size != width) continue;
            cursor = (cursor + width - 1) & ~(width - 1);
            offs[fields[k].id] = (uint16_t)cursor;
            cursor += width;
            if (width > align) align = width;
        }
    }
    for (size_t k = 0; k < n; k++)
        if (fields[k].id + 1u > max_id) max_id = fields[k].id + 1u;
    size_t vt_size = 4 + 2 * (size_t)max_id;
    fbb_pad(b, align, vt_size);
    fbb_put(b, vt_size, 2);
    fbb_put(b, cursor, 2);
    for (unsigned id = 0; id < max_id; id++) fbb_put(b, offs[id], 2);
    size_t table = fbb_put(b, (uint64_t)(uint32_t)(int32_t)vt_size, 4);
    /* the table's body, zeroed, then each field at its offset */
    for (size_t k = 4; k < cursor; k++) fbb_put(b, 0, 1);
    for (size_t k = 0; k < n; k++) {
        size_t at = table + offs[fields[k].id];
        slots[k] = at;
        if (!fields[k].is_ref) fbb_put_at(b, at, fields[k].value, fields[k].size);
    }
    return table;
}

size_t fbb_string(fbb *b, const char *s, size_t len) {
    fbb_pad(b, 4, 0);
    size_t at = fbb_put(b, len, 4);
    for (size_t k = 0; k < len; k++) fbb_put(b, (uint8_t)s[k], 1);
    fbb_put(b, 0, 1);
    return at;
}

size_t fbb_bytes_vec(fbb *b, const uint8_t *data, size_t n) {
    fbb_pad(b, 4, 0);
    size_t at = fbb_put(b, n, 4);
    for (size_t k = 0; k < n; k++) fbb_put(b, data[k], 1);
    return at;
}

size_t fbb_i64_vec(fbb *b, const int64_t *data, size_t n) {
    fbb_pad(b, 8, 4);
    size_t at = fbb_put(b, n, 4);
    for (size_t k = 0; k < n; k++) fbb_put(b, (uint64_t)data[k], 8);
    return at;
}

size_t fbb_ref_vec(fbb *b, size_t n) {
    fbb_pad(b, 4, 0);
    size_t at = fbb_put(b, n, 4);
    for (size_t k = 0; k < n; k++) fbb_put(b, 0, 4);
    return at;
}

#else
typedef int ember_fb_builder_unused;
#endif /* EMBER_EVENT_TRACER */
