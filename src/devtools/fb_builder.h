/*
 * A small bounded flatbuffer writer: it writes front to back into a
 * caller-supplied buffer, parents before children, so every reference
 * (a forward uoffset) is patched once its target is written. Vtables are
 * placed right before their tables (a positive soffset). Nothing allocates.
 *
 * When the buffer is too small (or NULL, to measure), writing goes on
 * counting bytes without storing them: `pos` at the end is the size needed
 * and `full` says whether it fit.
 */
#ifndef EMBER_DEVTOOLS_FB_BUILDER_H
#define EMBER_DEVTOOLS_FB_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fbb {
    uint8_t *buf;   /* NULL: count only */
    size_t cap;
    size_t pos;     /* bytes written (or that would be) */
    bool full;      /* something did not fit; pos still counts it */
} fbb;

/** One field of a table: its id, its size in bytes (1, 4 or 8) and value. A
 * reference field (is_ref) is 4 bytes whose slot the caller patches later. */
typedef struct fbb_field {
    uint8_t id;
    uint8_t size;
    bool is_ref;
    uint64_t value;
} fbb_field;

#define FBB_MAX_FIELDS 12

void fbb_init(fbb *b, void *buf, size_t cap);

/** Writes zeros until (pos + extra) is a multiple of align (a power of two). */
void fbb_pad(fbb *b, size_t align, size_t extra);

/** Appends v little-endian in size bytes; returns its position. */
size_t fbb_put(fbb *b, uint64_t v, size_t size);

/** Stores v little-endian in size bytes at position at (if it fits). */
void fbb_put_at(fbb *b, size_t at, uint64_t v, size_t size);

/** Makes the reference slot at `slot` point at target (target > slot). */
void fbb_patch(fbb *b, size_t slot, size_t target);

/**
 * Writes a vtable and its table. slots[k] receives the position of field k
 * (reference fields are written as 0, to patch). Returns the table's position.
 */
size_t fbb_table(fbb *b, const fbb_field *fields, size_t n, size_t *slots);

/** A string (length, bytes, NUL); returns its position. */
size_t fbb_string(fbb *b, const char *s, size_t len);

/** A vector of bytes; returns its position. */
size_t fbb_bytes_vec(fbb *b, const uint8_t *data, size_t n);

/** A vector of int64 (8-aligned elements); returns its position. */
size_t fbb_i64_vec(fbb *b, const int64_t *data, size_t n);

/** A vector of n references to patch: element k's slot is pos + 4 + 4k. */
size_t fbb_ref_vec(fbb *b, size_t n);

#endif /* EMBER_DEVTOOLS_FB_BUILDER_H */
