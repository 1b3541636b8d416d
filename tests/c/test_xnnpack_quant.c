/*
 * test_xnnpack_quant.c — XnnpackBackend on quantized payloads that are
 * wrong in one named way: each case edits one field of the XNNGraph (or one
 * byte of a weight or a scale in the program's named data) of
 * tests/fixtures/xnnpack_qd8_mlp.pte, xnnpack_8da4w_mlp.pte (dynamically
 * quantized) or xnnpack_qs8_cnn.pte (static int8), loads the method, and
 * expects init to fail with the right status and a message that names the
 * value or the node. The unedited programs load and run.
 * (test_fixtures.c checks the numbers; test_corruption.c every byte.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "format/flatbuffer.h"

#define FIX "tests/fixtures/"

typedef struct file {
    uint8_t *data;
    size_t size;
} file;

static file read_file(const char *path) {
    file f = {NULL, 0};
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) return f;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f.data = malloc((size_t)n + 1);
    if (f.data != NULL && fread(f.data, 1, (size_t)n, fp) == (size_t)n) f.size = (size_t)n;
    fclose(fp);
    return f;
}

/* Input channels of the fixture under test (its input is [2, g_ic]; 0: the
 * static int8 CNN's [2, 3, 10, 10]). */
static int64_t g_ic;

/* Loads method "forward" of the program in bytes; the status of the load,
 * then of one run (an input of ramps, two rows) if it loaded. */
static ember_status load_and_run(const uint8_t *bytes, size_t size) {
    ember_buffer_loader loader;
    ember_program *p = NULL;
    ember_method *m = NULL;
    ember_buffer_loader_init(&loader, bytes, size);
    ember_status st = ember_program_load(&loader.base, NULL, &p);
    if (st != EMBER_OK) return st;
    st = ember_method_load(p, "forward", NULL, &m);
    if (st == EMBER_OK) {
        static float x[2 * 3 * 10 * 10];
        const int64_t sizes[4] = {2, g_ic > 0 ? g_ic : 3, 10, 10};
        const size_t rank = g_ic > 0 ? 2 : 4, n = g_ic > 0 ? 2 * (size_t)g_ic : 600;
        for (size_t i = 0; i < n; i++) x[i] = (float)(i % 17) * 0.1f - 0.8f;
        st = ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, sizes, rank, x,
                                           sizeof(float) * n);
        if (st == EMBER_OK) st = ember_method_execute(m);
        ember_method_destroy(m);
    }
    ember_program_destroy(p);
    return st;
}

/* Position of field id of table t in the buffer; 0 if the table leaves it out. */
static size_t field_pos(const fb_reader *r, const fb_table *t, unsigned id) {
    if (4u + 2u * id + 2u > t->vt_size) return 0;
    uint16_t off = fb_rd_u16(r->buf + t->vt + 4 + 2 * id);
    return off == 0 ? 0 : (size_t)t->pos + off;
}

/* The XNNGraph of the file's first XNNPACK payload. */
static bool graph_of(const file *f, fb_reader *r, fb_table *root) {
    for (size_t at = 0; at + 30 <= f->size; at += 16) {
        if (memcmp(f->data + at + 4, "XH00", 4) != 0) continue;
        uint32_t fb_at = fb_rd_u32(f->data + at + 10), fb_size = fb_rd_u32(f->data + at + 14);
        if (fb_at > f->size - at || fb_size > f->size - at - fb_at) return false;
        r->buf = f->data + at + fb_at;
        r->size = fb_size;
        return fb_root(r, root);
    }
    return false;
}

/* Position in the file of field `id` of the quantization parameters of the
 * n-th quantized value whose datatype is dtype (and of its tensor when
 * tensor_field: id is then a field of XNNTensorValue). 0 if absent. */
static size_t quant_field(const file *f, int16_t dtype, unsigned nth, unsigned id,
                          bool tensor_field) {
    fb_reader r;
    fb_table root, xv, qtv, tv, q;
    fb_vec values;
    bool present;
    if (!graph_of(f, &r, &root) || !fb_vec_field(&r, &root, 2, 4, &values, &present)) return 0;
    for (uint32_t i = 0; i < values.len; i++) {
        uint8_t type;
        int16_t dt;
        if (!fb_vec_table(&r, &values, i, &xv) || !fb_u8(&r, &xv, 0, 0, &type) || type != 2 ||
            !fb_table_field(&r, &xv, 1, &qtv, &present) ||
            !fb_table_field(&r, &qtv, 0, &tv, &present) || !fb_i16(&r, &tv, 0, 0, &dt) ||
            dt != dtype || nth-- > 0)
            continue;
        if (tensor_field) return field_pos(&r, &tv, id) + (size_t)(r.buf - f->data);
        if (!fb_table_field(&r, &qtv, 2, &q, &present) || !present) return 0;
        const size_t pos = field_pos(&r, &q, id);
        return pos == 0 ? 0 : pos + (size_t)(r.buf - f->data);
    }
    return 0;
}

/* Where the bytes of the named data entry whose key starts with prefix are
 * (the n-th such entry); 0 if none. */
static size_t named_data(const file *f, const char *prefix, unsigned nth, size_t *size) {
    fb_reader r = {f->data, f->size};
    fb_table root, nd, seg;
    fb_vec entries, segs;
    bool present;
    if (f->size < 40 || !fb_root(&r, &root) || !fb_vec_field(&r, &root, 7, 4, &entries, &present) ||
        !fb_vec_field(&r, &root, 4, 4, &segs, &present))
        return 0;
    const uint64_t base = fb_rd_u64(f->data + 24);
    for (uint32_t i = 0; i < entries.len; i++) {
        fb_str key;
        uint32_t index;
        uint64_t offset, sz;
        if (!fb_vec_table(&r, &entries, i, &nd) || !fb_str_field(&r, &nd, 0, &key, &present) ||
            !fb_u32(&r, &nd, 1, 0, &index) || key.len < strlen(prefix) ||
            memcmp(key.data, prefix, strlen(prefix)) != 0 || index >= segs.len ||
            !fb_vec_table(&r, &segs, index, &seg) || !fb_u64(&r, &seg, 0, 0, &offset) ||
            !fb_u64(&r, &seg, 1, 0, &sz) || nth-- > 0)
            continue;
        if (base + offset + sz > f->size) return 0;
        *size = (size_t)sz;
        return (size_t)(base + offset);
    }
    return 0;
}

static void put_le(uint8_t *p, uint32_t v, unsigned width) {
    for (unsigned k = 0; k < width; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* Loads a copy of f with the width bytes at pos set to v; expects status
 * want and a message holding both substrings (sub2 may be NULL). */
static void expect_field(const file *f, size_t pos, unsigned width, uint32_t v, ember_status want,
                         const char *what, const char *sub1, const char *sub2) {
    if (!CHECK_MSG(pos != 0, "%s: field not found", what)) return;
    uint8_t *copy = malloc(f->size);
    memcpy(copy, f->data, f->size);
    put_le(copy + pos, v, width);
    ember_clear_error();
    ember_status st = load_and_run(copy, f->size);
    CHECK_MSG(st == want, "%s: status %s, expected %s (%s)", what, ember_status_str(st),
              ember_status_str(want), ember_last_error());
    CHECK_MSG(strstr(ember_last_error(), sub1) != NULL &&
                  (sub2 == NULL || strstr(ember_last_error(), sub2) != NULL),
              "%s: message \"%s\" lacks \"%s\"%s%s", what, ember_last_error(), sub1,
              sub2 ? " or " : "", sub2 ? sub2 : "");
    free(copy);
}

enum {
    DT_QINT8 = 3, DT_QINT32 = 5, DT_QCINT8 = 6, DT_QCINT32 = 7, DT_QCINT4 = 8, DT_QDINT8 = 9,
    DT_QBINT4 = 10
};

static void test_qd8(void) {
    check_section("xnnpack_qd8_mlp: qdint8 x qcint8");
    file f = read_file(FIX "xnnpack_qd8_mlp.pte");
    g_ic = 40;
    if (!CHECK_MSG(f.size > 0, "cannot read the fixture")) return;
    CHECK_OK(load_and_run(f.data, f.size));
    /* PerTokenDynamicQuant.num_nonbatch_dims (field 0) */
    const size_t nnb = quant_field(&f, DT_QDINT8, 0, 0, false);
    expect_field(&f, nnb, 4, 3, EMBER_ERR_INVALID_PROGRAM, "3 non-batch dims of a rank-2 value",
                 "xnnpack payload: value", "non-batch dims for rank 2");
    expect_field(&f, nnb, 4, 2, EMBER_ERR_NOT_SUPPORTED, "rows over 2 dims",
               "FullyConnected, debug handle", "trailing dims");
    /* PerChannelQuant.num_scales (field 3), scale_buffer_idx (field 2) */
    const size_t ns = quant_field(&f, DT_QCINT8, 0, 3, false);
    expect_field(&f, ns, 4, 47, EMBER_ERR_INVALID_PROGRAM, "47 scales for 48 channels",
                 "47 scales for 48 channels", NULL);
    const size_t sb = quant_field(&f, DT_QCINT8, 0, 2, false);
    expect_field(&f, sb, 4, 0, EMBER_ERR_INVALID_PROGRAM, "no scale buffer",
                 "xnnpack payload: value", "without scales");
    expect_field(&f, sb, 4, 999, EMBER_ERR_INVALID_PROGRAM, "scale buffer out of range",
                 "out of range", NULL);
    /* the first filter's scales pointed at the second's: 40 bytes for 48 */
    expect_field(&f, sb, 4, 5, EMBER_ERR_INVALID_PROGRAM, "too few scale bytes",
                 "scales of value 2 have 40 bytes", "192 needed");
    /* a qcint8 filter relabelled qint8 (a static per-tensor type) */
    expect_field(&f, quant_field(&f, DT_QCINT8, 0, 0, true), 2, DT_QINT8,
                 EMBER_ERR_NOT_SUPPORTED, "qint8 filter", "FullyConnected, debug handle 5",
                 "is qint8");
    /* -128 in the first filter's int8 weights (named data, key its sha256) */
    size_t wsize = 0, wpos = 0;
    for (unsigned k = 0; k < 8 && wsize != 40 * 48; k++) wpos = named_data(&f, "", k, &wsize);
    if (CHECK_MSG(wpos != 0 && wsize == 40 * 48, "first filter's bytes not found")) {
        uint8_t *copy = malloc(f.size);
        memcpy(copy, f.data, f.size);
        copy[wpos + 77] = 0x80;
        ember_clear_error();
        CHECK_ERR(load_and_run(copy, f.size), EMBER_ERR_INVALID_PROGRAM, "holds -128");
        free(copy);
    }
    /* a NaN scale */
    size_t ssize = 0, spos = named_data(&f, "scale_", 0, &ssize);
    if (CHECK_MSG(spos != 0 && ssize >= 8, "scales not found")) {
        uint8_t *copy = malloc(f.size);
        memcpy(copy, f.data, f.size);
        put_le(copy + spos + 4, 0x7fc00000u, 4);
        ember_clear_error();
        CHECK_ERR(load_and_run(copy, f.size), EMBER_ERR_INVALID_PROGRAM, "not a positive number");
        free(copy);
    }
    free(f.data);
}

static void test_8da4w(void) {
    check_section("xnnpack_8da4w_mlp: qdint8 x qbint4");
    file f = read_file(FIX "xnnpack_8da4w_mlp.pte");
    g_ic = 96;
    if (!CHECK_MSG(f.size > 0, "cannot read the fixture")) return;
    CHECK_OK(load_and_run(f.data, f.size));
    /* PerChannelGroupQuant: group_size (field 2), num_scales (field 5) */
    const size_t gs = quant_field(&f, DT_QBINT4, 0, 2, false);
    expect_field(&f, gs, 4, 36, EMBER_ERR_INVALID_PROGRAM, "group 36 of 96",
                 "group size 36 does not divide", NULL);
    expect_field(&f, gs, 4, 0, EMBER_ERR_INVALID_PROGRAM, "group 0", "group size 0", NULL);
    expect_field(&f, gs, 4, 0x80000000u, EMBER_ERR_INVALID_PROGRAM, "negative group",
                 "group size", NULL);
    /* groups of 48: 128 of them, the file says 192 scales */
    expect_field(&f, gs, 4, 48, EMBER_ERR_INVALID_PROGRAM, "group 48", "192 scales for 128 groups",
                 NULL);
    expect_field(&f, quant_field(&f, DT_QBINT4, 0, 5, false), 4, 191, EMBER_ERR_INVALID_PROGRAM,
                 "191 scales", "191 scales for 192 groups", NULL);
    /* a qbint4 filter relabelled qcint8: int8 quantized per group */
    expect_field(&f, quant_field(&f, DT_QBINT4, 0, 0, true), 2, DT_QCINT8,
                 EMBER_ERR_NOT_SUPPORTED, "qcint8 quantized per group",
                 "FullyConnected, debug handle 5", "is qcint8");
    free(f.data);
}

static void test_qs8(void) {
    check_section("xnnpack_qs8_cnn: static int8");
    file f = read_file(FIX "xnnpack_qs8_cnn.pte");
    g_ic = 0;
    if (!CHECK_MSG(f.size > 0, "cannot read the fixture")) return;
    CHECK_OK(load_and_run(f.data, f.size));
    /* PerTensorQuant: scale (field 0), zero_point (field 1) of the first
     * qint8 activation (the input's Convert makes it) */
    const size_t sc = quant_field(&f, DT_QINT8, 0, 0, false);
    const size_t zp = quant_field(&f, DT_QINT8, 0, 1, false);
    expect_field(&f, sc, 4, 0, EMBER_ERR_INVALID_PROGRAM, "scale 0", "scale 0 is not a positive",
                 NULL);
    expect_field(&f, sc, 4, 0xbf800000u, EMBER_ERR_INVALID_PROGRAM, "scale -1",
                 "scale -1 is not a positive", NULL);
    expect_field(&f, sc, 4, 0x7f800000u, EMBER_ERR_INVALID_PROGRAM, "scale inf",
                 "scale inf is not a positive", NULL);
    expect_field(&f, zp, 4, 300, EMBER_ERR_INVALID_PROGRAM, "zero point 300",
                 "zero point 300 is outside int8", "debug handle");
    expect_field(&f, zp, 4, (uint32_t)-129, EMBER_ERR_INVALID_PROGRAM, "zero point -129",
                 "zero point -129 is outside int8", "debug handle");
    /* a qcint32 bias relabelled qint32 (per tensor) with its per-channel scales */
    expect_field(&f, quant_field(&f, DT_QCINT32, 0, 0, true), 2, DT_QINT32,
                 EMBER_ERR_INVALID_PROGRAM, "qint32 bias", "Conv2d, debug handle", "is qint32");
    /* a qcint8 filter relabelled qcint4 */
    expect_field(&f, quant_field(&f, DT_QCINT8, 0, 0, true), 2, DT_QCINT4,
                 EMBER_ERR_NOT_SUPPORTED, "qcint4 filter", "Conv2d, debug handle", "is qcint4");
    /* the first bias's scales pointed at the first filter's: not input x filter scale */
    const size_t fsb = quant_field(&f, DT_QCINT8, 0, 2, false);
    const size_t bsb = quant_field(&f, DT_QCINT32, 0, 2, false);
    if (CHECK_MSG(fsb != 0 && bsb != 0, "scale buffer fields not found"))
        expect_field(&f, bsb, 4, fb_rd_u32(f.data + fsb), EMBER_ERR_INVALID_PROGRAM,
                     "bias scales", "channel 0 has scale", "Conv2d, debug handle");
    /* -128 in the first filter's weights ([8, 3, 3, 3], named data) */
    size_t wsize = 0, wpos = 0;
    for (unsigned k = 0; k < 16 && wsize != 8 * 27; k++) wpos = named_data(&f, "", k, &wsize);
    if (CHECK_MSG(wpos != 0 && wsize == 8 * 27, "first filter's bytes not found")) {
        uint8_t *copy = malloc(f.size);
        memcpy(copy, f.data, f.size);
        copy[wpos + 5] = 0x80;
        ember_clear_error();
        CHECK_ERR(load_and_run(copy, f.size), EMBER_ERR_INVALID_PROGRAM, "holds -128");
        free(copy);
    }
    free(f.data);
}

int main(void) {
    CHECK_OK(ember_portable_kernels_register());
    CHECK_OK(ember_xnnpack_backend_register());
    test_qd8();
    test_8da4w();
    test_qs8();
    return check_finish();
}
