/*
 * libFuzzer target: an XNNPACK delegate payload from the fuzzer's bytes.
 *
 * The fuzzer's mutations all land in the payload (XH00 header, XNNGraph
 * flatbuffer, inline constant data) instead of being spread over a whole
 * .pte: the input replaces the payload of a delegate of
 * tests/fixtures/xnnpack_cnn.pte. The program stays as it is, except that
 * the delegate's segment now points at the input, appended at the end of the
 * file (DataSegment offset and size, and the extended header's
 * segment_data_size, patched in place). Then, as fuzz_program: load through
 * the exact-copy loader, load the method (XnnpackBackend init: reader,
 * planner, weight packing, named data by key), bind generated inputs,
 * execute twice, destroy; the same contract checks. (The delegate is the
 * first whose DataSegment table stores both fields: a segment at offset 0
 * leaves its offset out, and could not be patched in place.) Seeds:
 * tests/fuzz/corpus_xnnpack (the payloads of the xnnpack fixtures).
 */
#define _POSIX_C_SOURCE 200809L

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
    ff_file pte;
    size_t segment_offset_pos; /* u64 DataSegment.offset of the payload's segment */
    size_t segment_size_pos;   /* u64 DataSegment.size */
    uint64_t segment_base;     /* extended header */
    uint8_t *buf;              /* scratch: the patched program */
    size_t cap;
} host;

static void die(const char *what) {
    fprintf(stderr, "fuzz: xnnpack_cnn.pte: %s\n", what);
    abort();
}

/* Position of field `id` of table t; 0 if the table leaves it out. */
static size_t field_pos(const fb_reader *r, const fb_table *t, unsigned id) {
    if (4u + 2u * id + 2u > t->vt_size) return 0;
    uint16_t off = fb_rd_u16(r->buf + t->vt + 4 + 2 * id);
    return off == 0 ? 0 : (size_t)t->pos + off;
}

static void host_init(host *h) {
    fb_reader r;
    fb_table root, plan, del, ref, seg;
    fb_vec plans, dels, segs;
    bool present;
    uint8_t location;
    uint32_t index;
    uint32_t d;
    h->pte = ff_read("xnnpack_cnn.pte", 1);
    r.buf = h->pte.data;
    r.size = h->pte.size;
    if (r.size < 40 || memcmp(r.buf + 8, "eh00", 4) != 0) die("no extended header");
    h->segment_base = fb_rd_u64(r.buf + 24);
    if (!fb_root(&r, &root) || !fb_vec_field(&r, &root, 1, 4, &plans, &present) || plans.len == 0 ||
        !fb_vec_table(&r, &plans, 0, &plan) || !fb_vec_field(&r, &plan, 7, 4, &dels, &present) ||
        !fb_vec_field(&r, &root, 4, 4, &segs, &present))
        die("no delegates");
    for (d = 0; d < dels.len; d++) {
        if (!fb_vec_table(&r, &dels, d, &del) || !fb_table_field(&r, &del, 1, &ref, &present) ||
            !present || !fb_u8(&r, &ref, 0, 0, &location) || !fb_u32(&r, &ref, 1, 0, &index) ||
            location != 1 || index >= segs.len || !fb_vec_table(&r, &segs, index, &seg))
            continue;
        h->segment_offset_pos = field_pos(&r, &seg, 0);
        h->segment_size_pos = field_pos(&r, &seg, 1);
        if (h->segment_offset_pos != 0 && h->segment_size_pos != 0) break;
    }
    if (d == dels.len) die("no delegate whose payload segment can be patched in place");
    fprintf(stderr, "fuzz: the input replaces the payload of delegate %u\n", d);
    h->cap = h->pte.size + 64 + FUZZ_MAX_PAYLOAD;
    h->buf = malloc(h->cap);
    if (h->buf == NULL) die("out of memory");
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    static host h;
    ru_exact_loader loader;
    ru_result res;
    if (!ready) {
        host_init(&h);
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
    /* The program, then the payload at the next 64-byte boundary. */
    size_t at = (h.pte.size + 63) & ~(size_t)63;
    memcpy(h.buf, h.pte.data, h.pte.size);
    memset(h.buf + h.pte.size, 0, at - h.pte.size);
    if (size > 0) memcpy(h.buf + at, data, size);
    put_u64(h.buf + h.segment_offset_pos, at - h.segment_base);
    put_u64(h.buf + h.segment_size_pos, size);
    put_u64(h.buf + 32, at + size - h.segment_base); /* segment_data_size */
    ru_exact_loader_init(&loader, h.buf, at + size, 1);
    ru_run_program(&loader.base, 2, FUZZ_IO_CAP, &res);
    if (ru_heap_state.live != 0 || loader.live != 0) {
        fprintf(stderr, "fuzz: %lld platform blocks leaked, %lld loaded buffers not released\n",
                (long long)ru_heap_state.live, (long long)loader.live);
        abort();
    }
    return 0;
}
