/*
 * libFuzzer target: an XNNPACK delegate payload from the fuzzer's bytes.
 *
 * The fuzzer's mutations all land in the payload (XH00 header, XNNGraph
 * flatbuffer, inline constant data) instead of being spread over a whole
 * .pte: the input replaces the payload of a delegate of each host program
 * in turn: tests/fixtures/xnnpack_cnn.pte (float32), xnnpack_qd8_mlp.pte and
 * xnnpack_8da4w_mlp.pte (dynamically quantized: their named data holds the
 * int8 and int4 weights and scales that quantized payloads name, so those
 * get past weight loading into packing and execution). Each program stays
 * as it is, except that the delegate's segment now points at the input,
 * appended at the end of the file (DataSegment offset and size, and the
 * extended header's segment_data_size, patched in place). Then, as
 * fuzz_program: load through the exact-copy loader, load the method
 * (XnnpackBackend init: reader, planner, weight packing, named data by
 * key), bind generated inputs, execute twice, destroy; the same contract
 * checks. (The delegate is the first whose DataSegment table stores both
 * fields. A program whose only delegate segment is the first, at offset 0,
 * leaves that offset out and cannot move it: there the input takes the
 * segment's place at offset 0, and the segments after it move back by a
 * multiple of 4096 bytes, their offsets patched, so that they keep their
 * alignment.) Seeds: tests/fuzz/corpus_xnnpack (the payloads of the xnnpack
 * fixtures).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "format/flatbuffer.h"
#include "../c/robust_util.h"
#include "fuzz_fixtures.h"

#define FUZZ_HEAP_CAP ((size_t)64 << 20)
#define FUZZ_IO_CAP ((size_t)16 << 20)
#define FUZZ_MAX_PAYLOAD ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_violation(const char *what, ember_status st) {
    fprintf(stderr, "fuzz: %s (status %s 0x%04x, message \"%s\")\n", what,
            ember_status_str(st), (unsigned)st, ember_last_error());
    abort();
}

/* Where to patch the host program. */
typedef struct host {
    const char *name;
    ff_file pte;
    size_t segment_offset_pos; /* u64 DataSegment.offset of the payload's segment */
    size_t segment_size_pos;   /* u64 DataSegment.size */
    uint64_t segment_base;     /* extended header */
    uint8_t *buf;              /* scratch: the patched program */
    size_t cap;
    /* the payload's segment is at offset 0: the others move after the input */
    bool at_front;
    size_t moved_pos[16];      /* u64 DataSegment.offset of every other segment */
    uint64_t moved_offset[16];
    size_t nmoved;
    uint64_t rest;             /* where the first of them starts */
} host;

static void die(const char *host, const char *what) {
    fprintf(stderr, "fuzz: %s: %s\n", host, what);
    abort();
}

/* Position of field `id` of table t; 0 if the table leaves it out. */
static size_t field_pos(const fb_reader *r, const fb_table *t, unsigned id) {
    if (4u + 2u * id + 2u > t->vt_size) return 0;
    uint16_t off = fb_rd_u16(r->buf + t->vt + 4 + 2 * id);
    return off == 0 ? 0 : (size_t)t->pos + off;
}

/* Reads a host program; false (with a message) if none of its delegates can
 * take the input. */
static bool host_init(host *h, const char *name) {
    fb_reader r;
    fb_table root, plan, del, ref, seg;
    fb_vec plans, dels, segs;
    bool present;
    uint8_t location;
    uint32_t index;
    uint32_t d;
    h->name = name;
    h->pte = ff_read(name, 1);
    r.buf = h->pte.data;
    r.size = h->pte.size;
    if (r.size < 40 || memcmp(r.buf + 8, "eh00", 4) != 0) die(name, "no extended header");
    h->segment_base = fb_rd_u64(r.buf + 24);
    if (!fb_root(&r, &root) || !fb_vec_field(&r, &root, 1, 4, &plans, &present) || plans.len == 0 ||
        !fb_vec_table(&r, &plans, 0, &plan) || !fb_vec_field(&r, &plan, 7, 4, &dels, &present) ||
        !fb_vec_field(&r, &root, 4, 4, &segs, &present))
        die(name, "no delegates");
    for (d = 0; d < dels.len; d++) {
        if (!fb_vec_table(&r, &dels, d, &del) || !fb_table_field(&r, &del, 1, &ref, &present) ||
            !present || !fb_u8(&r, &ref, 0, 0, &location) || !fb_u32(&r, &ref, 1, 0, &index) ||
            location != 1 || index >= segs.len || !fb_vec_table(&r, &segs, index, &seg))
            continue;
        h->segment_offset_pos = field_pos(&r, &seg, 0);
        h->segment_size_pos = field_pos(&r, &seg, 1);
        if (h->segment_offset_pos != 0 && h->segment_size_pos != 0) break;
    }
    if (d == dels.len && dels.len == 1 && fb_vec_table(&r, &dels, 0, &del) &&
        fb_table_field(&r, &del, 1, &ref, &present) && present &&
        fb_u32(&r, &ref, 1, 0, &index) && index < segs.len &&
        fb_vec_table(&r, &segs, index, &seg) && field_pos(&r, &seg, 0) == 0 &&
        field_pos(&r, &seg, 1) != 0 && segs.len <= 16) {
        /* the payload first, at offset 0: every other segment must say where it is */
        h->segment_size_pos = field_pos(&r, &seg, 1);
        h->rest = UINT64_MAX;
        uint32_t empty = 0;
        for (uint32_t k = 0; k < segs.len; k++) {
            fb_table other;
            if (k == index) continue;
            if (!fb_vec_table(&r, &segs, k, &other)) break;
            if (field_pos(&r, &other, 1) == 0) { /* empty: nothing to move */
                empty++;
                continue;
            }
            if (field_pos(&r, &other, 0) == 0) break;
            h->moved_pos[h->nmoved] = field_pos(&r, &other, 0);
            h->moved_offset[h->nmoved] = fb_rd_u64(r.buf + h->moved_pos[h->nmoved]);
            if (h->moved_offset[h->nmoved] < h->rest) h->rest = h->moved_offset[h->nmoved];
            h->nmoved++;
        }
        if (h->nmoved + empty + 1 == segs.len && h->rest != UINT64_MAX &&
            h->segment_base + h->rest <= h->pte.size) {
            h->at_front = true;
            d = 0;
        }
    }
    if (d == dels.len) {
        fprintf(stderr, "fuzz: %s: no delegate whose payload segment can be patched in place; "
                        "not a host\n", name);
        return false;
    }
    fprintf(stderr, "fuzz: %s: the input replaces the payload of delegate %u\n", name, d);
    h->cap = h->pte.size + 4096 + FUZZ_MAX_PAYLOAD;
    h->buf = malloc(h->cap);
    if (h->buf == NULL) die(name, "out of memory");
    return true;
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* Runs the input as the payload of host h. */
static void run_in(host *h, const uint8_t *data, size_t size) {
    ru_exact_loader loader;
    ru_result res;
    size_t total;
    if (h->at_front) {
        /* the program up to its segments, the input, then the other segments
         * moved back by delta (a multiple of 4096) */
        const size_t base = (size_t)h->segment_base, rest = (size_t)h->rest;
        const size_t over = size > rest ? size - rest : 0;
        const size_t delta = (over + 4095) & ~(size_t)4095;
        memcpy(h->buf, h->pte.data, base);
        memset(h->buf + base, 0, rest + delta);
        if (size > 0) memcpy(h->buf + base, data, size);
        memcpy(h->buf + base + rest + delta, h->pte.data + base + rest, h->pte.size - base - rest);
        total = h->pte.size + delta;
        for (size_t k = 0; k < h->nmoved; k++)
            put_u64(h->buf + h->moved_pos[k], h->moved_offset[k] + delta);
        put_u64(h->buf + h->segment_size_pos, size);
        put_u64(h->buf + 32, fb_rd_u64(h->pte.data + 32) + delta); /* segment_data_size */
    } else {
        /* The program, then the payload at the next 64-byte boundary. */
        size_t at = (h->pte.size + 63) & ~(size_t)63;
        memcpy(h->buf, h->pte.data, h->pte.size);
        memset(h->buf + h->pte.size, 0, at - h->pte.size);
        if (size > 0) memcpy(h->buf + at, data, size);
        put_u64(h->buf + h->segment_offset_pos, at - h->segment_base);
        put_u64(h->buf + h->segment_size_pos, size);
        put_u64(h->buf + 32, at + size - h->segment_base); /* segment_data_size */
        total = at + size;
    }
    ru_exact_loader_init(&loader, h->buf, total, 1);
    ru_run_program(&loader.base, 2, FUZZ_IO_CAP, &res);
    if (getenv("EMBER_FUZZ_VERBOSE") != NULL) /* replaying seeds: how far each got */
        fprintf(stderr, "fuzz: %s: loaded %d, methods %zu of %zu, executions ok %zu, failed %zu (%s)\n",
                h->name, res.program_loaded, res.methods_loaded, res.methods, res.executed_ok,
                res.execute_failed, ember_last_error());
    if (ru_heap_state.live != 0 || loader.live != 0) {
        fprintf(stderr, "fuzz: %lld platform blocks leaked, %lld loaded buffers not released\n",
                (long long)ru_heap_state.live, (long long)loader.live);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const names[] = {"xnnpack_cnn.pte", "xnnpack_qd8_mlp.pte",
                                        "xnnpack_8da4w_mlp.pte"};
    static host hosts[sizeof names / sizeof names[0]];
    static size_t nhosts;
    static int ready;
    if (!ready) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (host_init(&hosts[nhosts], names[i])) nhosts++;
            else if (i == 0) die(names[i], "the float32 host must take the input");
        ru_heap_install(FUZZ_HEAP_CAP);
        ru_violation = fuzz_violation;
        if (!ru_register()) {
            fprintf(stderr, "fuzz: cannot register the kernels and backends: %s\n",
                    ember_last_error());
            abort();
        }
        ready = 1;
    }
    if (size > FUZZ_MAX_PAYLOAD) return 0;
    for (size_t i = 0; i < nhosts; i++) run_in(&hosts[i], data, size);
    return 0;
}
