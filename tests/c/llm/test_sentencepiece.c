/*
 * Tests of the SentencePiece reader (extension/llm/tokenizers/sentencepiece.h).
 *
 * Without arguments: unit tests on models built here byte by byte (a small
 * protobuf writer, and a small double-array builder for charsmaps): every
 * piece type, BPE merge order (ties, signed zeros, unused pieces and their
 * resegmentation depth), the Unigram best path (ties, the unknown penalty,
 * scores rebased far from zero), user-defined symbols, byte fallback,
 * unknown runs, the charsmap, the whitespace options, WORD and CHAR models,
 * decoding (the first-piece rule, U+FFFD for invalid bytes, streaming),
 * protobuf details (unknown fields, groups, merged messages, nesting), every
 * load error, and truncated / byte-flipped files (never a crash).
 *
 * With arguments it is the harness of tests/python/test_llm_sentencepiece.py,
 * which compares it with the `sentencepiece` library on trained models:
 *
 *   --encode MODEL JSONL     ids of each line (a JSON string) on one line
 *   --decode MODEL IDS       each line of ids decoded, as a JSON string
 *   --stream MODEL IDS       the same through ember_sp_stream
 *   --normalize MODEL JSONL  each line normalized, as a JSON string
 *   --pieces MODEL           a header line, then "type score-bits piece" per id
 *   --dump-models DIR        writes the models built here (DIR/<name>.model)
 *   --bench MODEL JSONL N    load time and encoding speed (not a test)
 *
 * JSON strings carry bytes that are not UTF-8 as lone surrogates \uDC80..\uDCFF
 * (Python's "surrogateescape"), so both sides see the same bytes. A line that
 * fails to encode or decode prints "ERROR <message>"; a model that fails to
 * load exits with status 2 and "error: <message>" on stderr.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "tokenizers/sentencepiece.h"

/* ------------------------------------------------------------------------ */
/* Byte buffers and a protobuf writer                                        */
/* ------------------------------------------------------------------------ */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void reserve(buf *b, size_t n);

static void put(buf *b, const void *s, size_t n) {
    reserve(b, n);
    if (n > 0) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* Room for n more bytes (and a NUL) without writing them. */
static void reserve(buf *b, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL) abort();
    }
}

static void put_varint(buf *b, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    do {
        t[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    put(b, t, n);
}

static void put_tag(buf *b, unsigned field, unsigned wire) { put_varint(b, (uint64_t)field << 3 | wire); }

static void put_bytes(buf *b, unsigned field, const void *s, size_t n) {
    put_tag(b, field, 2);
    put_varint(b, n);
    put(b, s, n);
}

static void put_str(buf *b, unsigned field, const char *s) { put_bytes(b, field, s, strlen(s)); }

static void put_msg(buf *b, unsigned field, const buf *m) { put_bytes(b, field, m->p, m->n); }

static void put_uint(buf *b, unsigned field, uint64_t v) {
    put_tag(b, field, 0);
    put_varint(b, v);
}

static void put_float(buf *b, unsigned field, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    unsigned char t[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 24)};
    put_tag(b, field, 5);
    put(b, t, 4);
}

/* One ModelProto.pieces entry (type 0: leave the field out, NORMAL). */
static void put_piece_n(buf *model, const char *piece, size_t len, float score, int type) {
    buf p = {0};
    put_bytes(&p, 1, piece, len);
    put_float(&p, 2, score);
    if (type != 0) put_uint(&p, 3, (uint64_t)type);
    put_msg(model, 1, &p);
    free(p.p);
}

static void put_piece(buf *model, const char *piece, float score, int type) {
    put_piece_n(model, piece, strlen(piece), score, type);
}

static void put_byte_pieces(buf *model) {
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        put_piece(model, s, 0.0f, EMBER_SP_PIECE_BYTE);
    }
}

/* The usual first three pieces: <unk>, <s>, </s>. */
static void put_specials(buf *model) {
    put_piece(model, "<unk>", 0.0f, EMBER_SP_PIECE_UNKNOWN);
    put_piece(model, "<s>", 0.0f, EMBER_SP_PIECE_CONTROL);
    put_piece(model, "</s>", 0.0f, EMBER_SP_PIECE_CONTROL);
}

typedef struct spec {
    int model_type;     /* 0: leave out (UNIGRAM) */
    bool byte_fallback;
    bool ws_suffix;
    int dummy_prefix;   /* -1: leave out (true) */
    int remove_extra;   /* -1: leave out (true) */
    int escape;         /* -1: leave out (true) */
    const buf *charsmap;
    const char *unk_surface;
} spec;

#define SPEC_DEFAULT {0, false, false, -1, -1, -1, NULL, NULL}

static void put_specs(buf *model, const spec *s) {
    buf t = {0}, n = {0};
    if (s->model_type) put_uint(&t, 3, (uint64_t)s->model_type);
    if (s->byte_fallback) put_uint(&t, 35, 1);
    if (s->ws_suffix) put_uint(&t, 24, 1);
    if (s->unk_surface) put_str(&t, 44, s->unk_surface);
    put_msg(model, 2, &t);
    put_str(&n, 1, s->charsmap ? "custom" : "identity");
    if (s->charsmap) put_bytes(&n, 2, s->charsmap->p, s->charsmap->n);
    if (s->dummy_prefix >= 0) put_uint(&n, 3, (uint64_t)s->dummy_prefix);
    if (s->remove_extra >= 0) put_uint(&n, 4, (uint64_t)s->remove_extra);
    if (s->escape >= 0) put_uint(&n, 5, (uint64_t)s->escape);
    put_msg(model, 3, &n);
    free(t.p);
    free(n.p);
}

/* ------------------------------------------------------------------------ */
/* A small double-array builder for charsmaps (darts-clone's unit layout)    */
/* ------------------------------------------------------------------------ */

typedef struct rule {
    const char *from, *to;
} rule;

#define DA_SIZE 4096

typedef struct da {
    uint32_t unit[DA_SIZE];
    bool used[DA_SIZE];
} da;

/* Places the children of the node for prefix key[0..depth) of the rules
 * matching it; returns the base for that node. */
static uint32_t da_place(da *d, const rule *rules, size_t n, const char *prefix, size_t depth,
                         buf *strings, uint32_t node_id) {
    bool child[256] = {false};
    bool leaf = false;
    size_t leaf_rule = 0;
    for (size_t i = 0; i < n; i++) {
        if (strlen(rules[i].from) < depth || memcmp(rules[i].from, prefix, depth) != 0) continue;
        if (strlen(rules[i].from) == depth) leaf = true, leaf_rule = i;
        else child[(unsigned char)rules[i].from[depth]] = true;
    }
    uint32_t base = 1;
    for (;; base++) {
        bool ok = !d->used[base] && (base ^ node_id) < (1u << 21);
        for (unsigned c = 1; ok && c < 256; c++)
            if (child[c] && ((base ^ c) >= DA_SIZE || d->used[base ^ c])) ok = false;
        if (ok) break;
    }
    d->used[base] = true; /* the value slot (label 0), used or not */
    if (leaf) {
        d->unit[base] = (1u << 31) | (uint32_t)strings->n;
        put(strings, rules[leaf_rule].to, strlen(rules[leaf_rule].to) + 1);
    }
    for (unsigned c = 1; c < 256; c++)
        if (child[c]) d->used[base ^ c] = true;
    for (unsigned c = 1; c < 256; c++) {
        if (!child[c]) continue;
        uint32_t id = base ^ c;
        char next[64];
        memcpy(next, prefix, depth);
        next[depth] = (char)c;
        bool has_leaf = false;
        for (size_t i = 0; i < n; i++)
            if (strlen(rules[i].from) == depth + 1 && memcmp(rules[i].from, next, depth + 1) == 0)
                has_leaf = true;
        uint32_t cbase = da_place(d, rules, n, next, depth + 1, strings, id);
        d->unit[id] = ((cbase ^ id) << 10) | (has_leaf ? 1u << 8 : 0) | c;
    }
    return base;
}

/* A precompiled charsmap for rules (keys of at most 60 bytes). */
static buf make_charsmap(const rule *rules, size_t n) {
    static da d;
    memset(&d, 0, sizeof d);
    buf strings = {0};
    d.used[0] = true;
    uint32_t base = da_place(&d, rules, n, "", 0, &strings, 0);
    d.unit[0] = base << 10;
    /* Whole blocks of 256 units, as darts-clone writes them. */
    size_t units = DA_SIZE;
    while (units > 1 && !d.used[units - 1]) units--;
    units = (units + 255) / 256 * 256;
    buf out = {0};
    uint32_t size = (uint32_t)units * 4;
    unsigned char h[4] = {(unsigned char)size, (unsigned char)(size >> 8), (unsigned char)(size >> 16),
                          (unsigned char)(size >> 24)};
    put(&out, h, 4);
    for (size_t i = 0; i < units; i++) {
        uint32_t u = d.unit[i];
        unsigned char t[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        put(&out, t, 4);
    }
    put(&out, strings.p, strings.n);
    free(strings.p);
    return out;
}

/* ------------------------------------------------------------------------ */
/* JSON strings (harness)                                                    */
/* ------------------------------------------------------------------------ */

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t utf8_put(unsigned cp, unsigned char *o) {
    if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
        o[2] = (unsigned char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[3] = (unsigned char)(0x80 | (cp & 63));
    return 4;
}

static bool hex4(const char **s, unsigned *v) {
    unsigned x = 0;
    for (int k = 0; k < 4; k++) {
        int d = hexval((*s)[k]);
        if (d < 0) return false;
        x = x << 4 | (unsigned)d;
    }
    *s += 4;
    *v = x;
    return true;
}

/* Parses the JSON string at s (a whole line) into out. */
static bool json_parse(const char *s, buf *out) {
    out->n = 0;
    put(out, "", 0);
    if (*s++ != '"') return false;
    for (;;) {
        char c = *s++;
        if (c == '\0') return false;
        if (c == '"') return true;
        if (c != '\\') {
            put(out, &c, 1);
            continue;
        }
        unsigned char u[4];
        char e = *s++;
        switch (e) {
        case '"': case '\\': case '/': put(out, &e, 1); break;
        case 'b': put(out, "\b", 1); break;
        case 'f': put(out, "\f", 1); break;
        case 'n': put(out, "\n", 1); break;
        case 'r': put(out, "\r", 1); break;
        case 't': put(out, "\t", 1); break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(&s, &cp)) return false;
            if (cp >= 0xDC80 && cp <= 0xDCFF) { /* an escaped raw byte */
                u[0] = (unsigned char)(cp - 0xDC00);
                put(out, u, 1);
                break;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF && s[0] == '\\' && s[1] == 'u') {
                const char *t = s + 2;
                if (hex4(&t, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    s = t;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
            }
            put(out, u, utf8_put(cp, u));
            break;
        }
        default: return false;
        }
    }
}

/* Writes bytes as an ASCII JSON string (see the top of the file). */
static void json_print(const unsigned char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
            i++;
        } else if (c >= 0x20 && c < 0x7F) {
            putchar((int)c);
            i++;
        } else if (c < 0x80) {
            printf("\\u%04x", c);
            i++;
        } else {
            /* Strict UTF-8: else the byte goes out as \uDCxx. */
            size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            unsigned cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
            bool ok = len > 0 && i + len <= n;
            for (size_t k = 1; ok && k < len; k++) {
                if ((s[i + k] & 0xC0) != 0x80) ok = false;
                cp = cp << 6 | (s[i + k] & 0x3F);
            }
            if (ok) {
                static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
                ok = cp >= min[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
            }
            if (!ok) {
                printf("\\udc%02x", c);
                i++;
            } else if (cp >= 0x10000) {
                cp -= 0x10000;
                printf("\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
                i += len;
            } else {
                printf("\\u%04x", cp);
                i += len;
            }
        }
    }
    putchar('"');
}

/* ------------------------------------------------------------------------ */
/* Harness modes                                                             */
/* ------------------------------------------------------------------------ */

static ember_sp_model *harness_load(const char *path) {
    ember_sp_model *m = NULL;
    if (ember_sp_model_load(path, &m) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        return NULL;
    }
    return m;
}

static char *read_line(FILE *f, buf *line) {
    line->n = 0;
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n') {
        char ch = (char)c;
        put(line, &ch, 1);
    }
    if (c == EOF && line->n == 0) return NULL;
    put(line, "", 0);
    return (char *)line->p;
}

static int harness_encode(const char *model, const char *input, bool normalize_only) {
    ember_sp_model *m = harness_load(model);
    FILE *f = fopen(input, "rb");
    if (m == NULL || f == NULL) {
        if (f == NULL) fprintf(stderr, "error: cannot open %s\n", input);
        ember_sp_model_destroy(m);
        return 2;
    }
    buf line = {0}, text = {0};
    int32_t *ids = NULL;
    char *norm = NULL;
    int rc = 0;
    while (read_line(f, &line) != NULL) {
        if (!json_parse((const char *)line.p, &text)) {
            fprintf(stderr, "error: not a JSON string: %s\n", (const char *)line.p);
            rc = 2;
            break;
        }
        size_t n = 0;
        ember_status st;
        if (normalize_only) {
            st = ember_sp_normalize(m, (const char *)text.p, text.n, NULL, 0, &n);
            norm = realloc(norm, n + 1);
            if (st == EMBER_ERR_INVALID_ARGUMENT)
                st = ember_sp_normalize(m, (const char *)text.p, text.n, norm, n + 1, &n);
            if (st == EMBER_OK) json_print((const unsigned char *)norm, n);
        } else {
            st = ember_sp_encode(m, (const char *)text.p, text.n, NULL, 0, &n);
            ids = realloc(ids, (n + 1) * sizeof *ids);
            if (st == EMBER_ERR_INVALID_ARGUMENT)
                st = ember_sp_encode(m, (const char *)text.p, text.n, ids, n, &n);
            for (size_t i = 0; st == EMBER_OK && i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
        }
        if (st != EMBER_OK) printf("ERROR %s", ember_last_error());
        putchar('\n');
    }
    fclose(f);
    free(line.p);
    free(text.p);
    free(ids);
    free(norm);
    ember_sp_model_destroy(m);
    return rc;
}

static int harness_decode(const char *model, const char *input, bool stream) {
    ember_sp_model *m = harness_load(model);
    FILE *f = fopen(input, "rb");
    if (m == NULL || f == NULL) {
        if (f == NULL) fprintf(stderr, "error: cannot open %s\n", input);
        ember_sp_model_destroy(m);
        return 2;
    }
    ember_sp_stream *s = NULL;
    if (stream && ember_sp_stream_create(m, &s) != EMBER_OK) abort();
    buf line = {0}, text = {0};
    int32_t *ids = NULL;
    size_t cap = 0;
    while (read_line(f, &line) != NULL) {
        size_t n = 0;
        for (char *p = (char *)line.p, *end; *p; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                ids = realloc(ids, cap * sizeof *ids);
            }
            ids[n++] = (int32_t)v;
        }
        ember_status st = EMBER_OK;
        text.n = 0;
        if (stream) {
            const char *t;
            size_t l;
            for (size_t i = 0; i < n && st == EMBER_OK; i++)
                if ((st = ember_sp_stream_push(s, ids[i], &t, &l)) == EMBER_OK) put(&text, t, l);
            if (st == EMBER_OK && (st = ember_sp_stream_finish(s, &t, &l)) == EMBER_OK) put(&text, t, l);
            ember_sp_stream_reset(s);
        } else {
            size_t len = 0;
            st = ember_sp_decode(m, ids, n, NULL, 0, &len);
            if (st == EMBER_ERR_INVALID_ARGUMENT) {
                reserve(&text, len + 1);
                st = ember_sp_decode(m, ids, n, (char *)text.p, len + 1, &len);
                text.n = len;
            }
        }
        if (st == EMBER_OK) json_print(text.p, text.n);
        else printf("ERROR %s", ember_last_error());
        putchar('\n');
    }
    fclose(f);
    free(line.p);
    free(text.p);
    free(ids);
    ember_sp_stream_destroy(s);
    ember_sp_model_destroy(m);
    return 0;
}

static int harness_pieces(const char *model) {
    ember_sp_model *m = harness_load(model);
    if (m == NULL) return 2;
    size_t n = ember_sp_model_vocab_size(m);
    printf("vocab %zu kind %d bos %d eos %d unk %d pad %d\n", n, (int)ember_sp_model_kind(m),
           (int)ember_sp_model_bos_id(m), (int)ember_sp_model_eos_id(m),
           (int)ember_sp_model_unk_id(m), (int)ember_sp_model_pad_id(m));
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t len;
        ember_sp_piece_type type;
        float score;
        uint32_t bits;
        if (ember_sp_id_to_piece(m, (int32_t)i, &p, &len) != EMBER_OK ||
            ember_sp_piece_info(m, (int32_t)i, &type, &score) != EMBER_OK)
            abort();
        memcpy(&bits, &score, 4);
        printf("%d %08x ", (int)type, (unsigned)bits);
        json_print((const unsigned char *)p, len);
        putchar('\n');
    }
    ember_sp_model_destroy(m);
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int harness_bench(const char *model, const char *input, int repeat) {
    double t0 = now_s();
    ember_sp_model *m = harness_load(model);
    double t1 = now_s();
    FILE *f = fopen(input, "rb");
    if (m == NULL || f == NULL) {
        ember_sp_model_destroy(m);
        if (f) fclose(f);
        return 2;
    }
    buf line = {0}, text = {0};
    buf *lines = NULL;
    size_t n_lines = 0, bytes = 0;
    while (read_line(f, &line) != NULL) {
        if (!json_parse((const char *)line.p, &text)) continue;
        lines = realloc(lines, (n_lines + 1) * sizeof *lines);
        lines[n_lines] = (buf){0};
        put(&lines[n_lines], text.p, text.n);
        bytes += text.n;
        n_lines++;
    }
    fclose(f);
    size_t cap = 1 << 16, total_ids = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    double t2 = now_s();
    for (int r = 0; r < repeat; r++) {
        for (size_t i = 0; i < n_lines; i++) {
            size_t n;
            if (ember_sp_encode(m, (const char *)lines[i].p, lines[i].n, ids, cap, &n) != EMBER_OK)
                abort();
            total_ids += n;
        }
    }
    double t3 = now_s();
    printf("load_s %.6f lines %zu bytes %zu repeat %d encode_s %.6f mb_per_s %.3f ids %zu\n",
           t1 - t0, n_lines, bytes, repeat, t3 - t2,
           (double)bytes * repeat / (t3 - t2) / 1e6, total_ids);
    for (size_t i = 0; i < n_lines; i++) free(lines[i].p);
    free(lines);
    free(line.p);
    free(text.p);
    free(ids);
    ember_sp_model_destroy(m);
    return 0;
}


/* ------------------------------------------------------------------------ */
/* Models built here                                                         */
/* ------------------------------------------------------------------------ */

#define SP "\xE2\x96\x81" /* "▁" */
#define FFFD "\xEF\xBF\xBD"
#define BYTE(b) (3 + (b)) /* id of <0xNN> in the models with byte pieces */

/* Llama-style BPE with byte fallback and no extra-whitespace removal. */
enum {
    B_SP = 259, B_A, B_B, B_C, B_AB, B_BC, B_ABC, B_SPA, B_MASK, B_X, B_Y, B_XY, B_Z, B_XYZ,
    B_CTRL, B_N
};

static buf bpe_model(void) {
    buf m = {0};
    put_specials(&m);
    put_byte_pieces(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "a", -2.0f, 0);
    put_piece(&m, "b", -3.0f, 0);
    put_piece(&m, "c", -4.0f, 0);
    put_piece(&m, "ab", -5.0f, 0);   /* ties with "bc": the leftmost pair merges first */
    put_piece(&m, "bc", -5.0f, 0);
    put_piece(&m, "abc", -6.0f, 0);
    put_piece(&m, SP "a", -7.0f, 0);
    put_piece(&m, "<mask>", 0.0f, EMBER_SP_PIECE_USER_DEFINED);
    put_piece(&m, "x", -8.0f, 0);
    put_piece(&m, "y", -9.0f, 0);
    put_piece(&m, "xy", -0.5f, EMBER_SP_PIECE_UNUSED); /* merged, then split back */
    put_piece(&m, "z", -10.0f, 0);
    put_piece(&m, "xyz", -0.25f, 0);
    put_piece(&m, "<ctrl>", 0.0f, EMBER_SP_PIECE_CONTROL);
    spec s = SPEC_DEFAULT;
    s.model_type = EMBER_SP_MODEL_BPE;
    s.byte_fallback = true;
    s.remove_extra = 0;
    put_specs(&m, &s);
    return m;
}

/* T5-style Unigram: no byte fallback, default whitespace handling. */
enum { U_SP = 3, U_A, U_B, U_AB, U_SPA, U_SEP, U_C, U_X, U_Y, U_XY, U_N };

static buf unigram_model(void) {
    buf m = {0};
    put_specials(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "a", -2.0f, 0);
    put_piece(&m, "b", -2.0f, 0);
    put_piece(&m, "ab", -5.0f, 0);
    put_piece(&m, SP "a", -2.5f, 0);
    put_piece(&m, "<sep>", 0.0f, EMBER_SP_PIECE_USER_DEFINED);
    put_piece(&m, "c", -1.0f, EMBER_SP_PIECE_UNUSED);
    put_piece(&m, "x", -1.0f, 0);
    put_piece(&m, "y", -1.0f, 0);
    put_piece(&m, "xy", -2.0f, 0); /* ties with "x" + "y" */
    spec s = SPEC_DEFAULT;
    put_specs(&m, &s);
    return m;
}

/* A Unigram model with one piece of score -1e20: running scores far from 0
 * are rebased as the library does, so later choices stay exact. */
static buf huge_score_model(float xy) {
    buf m = {0};
    put_specials(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "a", -1e20f, 0);
    put_piece(&m, "x", -1.0f, 0);
    put_piece(&m, "y", -1.0f, 0);
    put_piece(&m, "xy", xy, 0);
    spec s = SPEC_DEFAULT;
    put_specs(&m, &s);
    return m;
}

/* Normalization rules for the charsmap model. */
static const rule k_rules[] = {
    {"a", "A"},
    {"ab", "X"},
    {"abc", "Y Z"},            /* the replacement has a space */
    {"d", ""},                 /* deletion */
    {"\xE3\x80\x80", " "},     /* U+3000 -> space */
    {"\xEF\xBC\xA1", "A"},     /* U+FF21 -> A */
    {"\xEF\xAC\x81", "fi"},    /* U+FB01 -> fi */
};

static buf charsmap_model(void) {
    buf cm = make_charsmap(k_rules, sizeof k_rules / sizeof k_rules[0]);
    buf m = {0};
    put_specials(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "A", -2.0f, 0);
    put_piece(&m, "X", -2.0f, 0);
    put_piece(&m, "Y", -2.0f, 0);
    put_piece(&m, "Z", -2.0f, 0);
    put_piece(&m, "b", -2.0f, 0);
    put_piece(&m, "f", -2.0f, 0);
    put_piece(&m, "i", -2.0f, 0);
    put_piece(&m, "fi", -3.0f, 0);
    put_piece(&m, "<a>", 0.0f, EMBER_SP_PIECE_USER_DEFINED); /* kept as written: no "A" */
    spec s = SPEC_DEFAULT;
    s.charsmap = &cm;
    put_specs(&m, &s);
    free(cm.p);
    return m;
}

/* WORD and CHAR models. */
static buf word_model(int type) {
    buf m = {0};
    put_specials(&m);
    put_piece(&m, SP "hello", -1.0f, 0);
    put_piece(&m, SP "world", -1.0f, 0);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "h", -1.0f, 0);
    put_piece(&m, "i", -1.0f, 0);
    put_piece(&m, "<tag>", 0.0f, EMBER_SP_PIECE_USER_DEFINED);
    spec s = SPEC_DEFAULT;
    s.model_type = type;
    put_specs(&m, &s);
    return m;
}

/* Whitespace options: escape off, dummy prefix as a suffix. */
static buf options_model(bool escape, bool suffix, bool dummy) {
    buf m = {0};
    put_specials(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, " ", -1.0f, 0);
    put_piece(&m, "a", -1.0f, 0);
    put_piece(&m, "a" SP, -1.0f, 0);
    put_piece(&m, SP "a", -1.5f, 0);
    spec s = SPEC_DEFAULT;
    s.escape = escape ? -1 : 0;
    s.ws_suffix = suffix;
    s.dummy_prefix = dummy ? -1 : 0;
    s.unk_surface = "<?>";
    put_specs(&m, &s);
    return m;
}

static ember_sp_model *load_buf(const buf *b) {
    ember_sp_model *m = NULL;
    if (!CHECK_OK(ember_sp_model_load_memory(b->p, b->n, &m))) return NULL;
    return m;
}

/* Encodes s and compares with want[0..n). */
static void check_encode(const ember_sp_model *m, const char *s, size_t len, const int32_t *want,
                         size_t n) {
    int32_t ids[256];
    size_t got = 0;
    if (!CHECK_OK(ember_sp_encode(m, s, len, ids, 256, &got))) return;
    bool same = got == n;
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    if (!CHECK_MSG(same, "encoding \"%s\"", s)) {
        printf("   got:");
        for (size_t i = 0; i < got; i++) printf(" %d", (int)ids[i]);
        printf("\n  want:");
        for (size_t i = 0; i < n; i++) printf(" %d", (int)want[i]);
        printf("\n");
    }
}

#define ENCODES(m, s, ...)                                                                        \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        check_encode(m, s, strlen(s), want_, sizeof want_ / sizeof want_[0]);                     \
    } while (0)

#define ENCODES_NOTHING(m, s)                                                                     \
    do {                                                                                          \
        size_t n_ = 99;                                                                           \
        CHECK_OK(ember_sp_encode(m, s, strlen(s), NULL, 0, &n_));                                 \
        CHECK_EQ_INT(n_, 0);                                                                      \
    } while (0)

/* Decodes ids both ways (whole and streamed); compares with want[0..want_len). */
static void check_decode(const ember_sp_model *m, const int32_t *ids, size_t n, const char *want,
                         size_t want_len) {
    char out[512];
    size_t len = 0;
    if (!CHECK_OK(ember_sp_decode(m, ids, n, out, sizeof out, &len))) return;
    CHECK_MSG(len == want_len && memcmp(out, want, len) == 0, "decode gave \"%.*s\" (%zu bytes), want \"%s\"",
              (int)len, out, len, want);
    ember_sp_stream *s = NULL;
    if (!CHECK_OK(ember_sp_stream_create(m, &s))) return;
    buf text = {0};
    const char *t;
    size_t l;
    for (size_t i = 0; i < n; i++)
        if (CHECK_OK(ember_sp_stream_push(s, ids[i], &t, &l))) put(&text, t, l);
    if (CHECK_OK(ember_sp_stream_finish(s, &t, &l))) put(&text, t, l);
    CHECK_MSG(text.n == want_len && memcmp(text.p, want, want_len) == 0, "stream gave \"%.*s\"",
              (int)text.n, text.p ? (const char *)text.p : "");
    free(text.p);
    ember_sp_stream_destroy(s);
}

#define DECODES(m, want, ...)                                                                     \
    do {                                                                                          \
        const int32_t ids_[] = {__VA_ARGS__};                                                     \
        check_decode(m, ids_, sizeof ids_ / sizeof ids_[0], want, sizeof want - 1);               \
    } while (0)

static void check_normalize(const ember_sp_model *m, const char *s, size_t n, const char *want) {
    char out[256];
    size_t len = 0;
    if (!CHECK_OK(ember_sp_normalize(m, s, n, out, sizeof out, &len))) return;
    CHECK_MSG(len == strlen(want) && memcmp(out, want, len) == 0, "normalize \"%s\" gave \"%.*s\", want \"%s\"",
              s, (int)len, out, want);
}

#define NORMALIZES(m, s, want) check_normalize(m, s, sizeof s - 1, want)

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

static void test_bpe(void) {
    check_section("BPE merges, user-defined and unused pieces, byte fallback");
    buf b = bpe_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    CHECK_EQ_INT(ember_sp_model_vocab_size(m), B_N);
    CHECK_EQ_INT(ember_sp_model_kind(m), EMBER_SP_MODEL_BPE);
    /* "ab" and "bc" tie: the leftmost merges, then "abc". */
    ENCODES(m, "abc", B_SP, B_ABC);
    ENCODES(m, "bc", B_SP, B_BC);
    ENCODES(m, "a", B_SPA);
    ENCODES(m, "ab ab", B_SP, B_AB, B_SP, B_AB);
    /* A user-defined symbol is frozen: it never merges with its neighbours. */
    ENCODES(m, "a<mask>b", B_SPA, B_MASK, B_B);
    /* "xy" is unused: it may merge on the way to "xyz", but never stays. */
    ENCODES(m, "xy", B_SP, B_X, B_Y);
    ENCODES(m, "xyz", B_SP, B_XYZ);
    /* Characters outside the vocabulary become their UTF-8 bytes. */
    ENCODES(m, "\xC3\xA9", B_SP, BYTE(0xC3), BYTE(0xA9));
    ENCODES(m, "a\xF0\x9F\x98\x80", B_SPA, BYTE(0xF0), BYTE(0x9F), BYTE(0x98), BYTE(0x80));
    /* Control pieces are never produced from text. */
    ENCODES(m, "<ctrl>", B_SP, BYTE('<'), B_C, BYTE('t'), BYTE('r'), BYTE('l'), BYTE('>'));
    /* No extra-whitespace removal: every space stays. */
    ENCODES(m, " ", B_SP, B_SP);
    ENCODES(m, "a  ", B_SPA, B_SP, B_SP);
    /* Invalid UTF-8 is U+FFFD per byte, then its bytes. */
    ENCODES(m, "\xFF" "a", B_SP, BYTE(0xEF), BYTE(0xBF), BYTE(0xBD), B_A);
    /* NUL is an ordinary character. */
    const int32_t nul_ids[] = {B_SPA, BYTE(0), B_A};
    check_encode(m, "a\0a", 3, nul_ids, 3);
    ENCODES_NOTHING(m, "");
    ember_sp_model_destroy(m);
}

static void test_unigram(void) {
    check_section("Unigram best path, unknowns, user-defined and unused pieces");
    buf b = unigram_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    CHECK_EQ_INT(ember_sp_model_kind(m), EMBER_SP_MODEL_UNIGRAM);
    /* "▁a" + "b" (-4.5) beats "▁" + "a" + "b" (-5) and "▁" + "ab" (-6). */
    ENCODES(m, "ab", U_SPA, U_B);
    /* An unknown character costs min_score - 10; a run of them is one unk. */
    ENCODES(m, "q", U_SP, 0);
    ENCODES(m, "qq", U_SP, 0);
    ENCODES(m, "q q", U_SP, 0, U_SP, 0);
    ENCODES(m, "\xE6\x97\xA5\xE6\x9C\xAC", U_SP, 0);
    ENCODES(m, "a<sep>b", U_SPA, U_SEP, U_B);
    /* Extra spaces go: leading, trailing and repeated. */
    ENCODES(m, "  a   b  ", U_SPA, U_SP, U_B);
    /* The unused "c" is never chosen. */
    ENCODES(m, "c", U_SP, 0);
    /* "x" + "y" and "xy" tie: the first path found stays. */
    ENCODES(m, "xy", U_SP, U_XY);
    ENCODES(m, "<s>", U_SP, 0);
    ENCODES_NOTHING(m, "");
    ENCODES_NOTHING(m, "   ");
    ember_sp_model_destroy(m);

    /* After a score of -1e20, "x" + "y" (-2) against "xy": a float sum that
     * large could not tell -2 from -2.0625; the rebased one can. */
    static const float xy[] = {-2.0625f, -2.0f, -1.9375f};
    static const bool split[] = {true, false, false};
    for (size_t k = 0; k < 3; k++) {
        b = huge_score_model(xy[k]);
        m = load_buf(&b);
        free(b.p);
        if (m == NULL) continue;
        if (split[k]) ENCODES(m, "axy", 3, 4, 5, 6);
        else ENCODES(m, "axy", 3, 4, 7);
        ember_sp_model_destroy(m);
    }
}

static void test_charsmap(void) {
    check_section("precompiled charsmap");
    buf b = charsmap_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    NORMALIZES(m, "a", SP "A");
    NORMALIZES(m, "ab", SP "X");               /* the longest key wins */
    NORMALIZES(m, "abc", SP "Y" SP "Z");       /* replacement spaces are escaped too */
    NORMALIZES(m, "abd", SP "X");              /* "d" is deleted */
    NORMALIZES(m, "d", "");
    NORMALIZES(m, "\xE3\x80\x80\xE3\x80\x80" "a\xE3\x80\x80", SP "A");
    NORMALIZES(m, "b\xE3\x80\x80\xE3\x80\x80" "b", SP "b" SP "b");
    NORMALIZES(m, "\xEF\xBC\xA1" "b", SP "Ab");
    NORMALIZES(m, "\xEF\xAC\x81", SP "fi");
    NORMALIZES(m, "<a>a", SP "<a>A");          /* user-defined symbols are not normalized */
    NORMALIZES(m, "\xFF", SP FFFD);
    NORMALIZES(m, "\xEF\xBC", SP FFFD FFFD);   /* a cut-off key is no match */
    NORMALIZES(m, "", "");
    ENCODES(m, "abc", 3, 6, 3, 7);
    ENCODES(m, "\xEF\xAC\x81", 3, 11);
    ENCODES(m, "<a>a", 3, 12, 4);
    DECODES(m, "Y Z", 3, 6, 3, 7);
    ember_sp_model_destroy(m);
}

static void test_word_char(void) {
    check_section("WORD and CHAR models");
    buf b = word_model(EMBER_SP_MODEL_WORD);
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        CHECK_EQ_INT(ember_sp_model_kind(m), EMBER_SP_MODEL_WORD);
        ENCODES(m, "hello world", 3, 4);
        ENCODES(m, "hello there", 3, 0);
        ENCODES(m, "hi", 0);
        ENCODES(m, "<tag>hello", 0);
        DECODES(m, "hello world", 3, 4);
        ember_sp_model_destroy(m);
    }
    b = word_model(EMBER_SP_MODEL_CHAR);
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        CHECK_EQ_INT(ember_sp_model_kind(m), EMBER_SP_MODEL_CHAR);
        ENCODES(m, "hi", 5, 6, 7);
        ENCODES(m, "<tag>hi", 5, 8, 6, 7);
        ENCODES(m, "hey", 5, 6, 0);
        ember_sp_model_destroy(m);
    }
}

static void test_whitespace_options(void) {
    check_section("escape_whitespaces, treat_whitespace_as_suffix, add_dummy_prefix");
    buf b = options_model(false, false, true);
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        NORMALIZES(m, "a  a", " a a");
        ENCODES(m, "a  a", 4, 5, 4, 5);
        DECODES(m, "<?>", 0); /* trainer_spec.unk_surface */
        ember_sp_model_destroy(m);
    }
    b = options_model(true, true, true);
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        NORMALIZES(m, "a a", "a" SP "a" SP);
        ENCODES(m, "a a", 6, 6);
        DECODES(m, "a a ", 6, 6);
        ember_sp_model_destroy(m);
    }
    b = options_model(true, false, false);
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        NORMALIZES(m, "a", "a");
        NORMALIZES(m, " a", "a");
        ENCODES(m, "a a", 6, 5); /* "a▁" + "a" (-2) beats "a" + "▁a" (-2.5) */
        /* No dummy prefix, but extra whitespace is removed: still stripped. */
        DECODES(m, "a", 7);
        CHECK(ember_sp_model_strips_leading_space(m));
        ember_sp_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */
/* ------------------------------------------------------------------------ */

static void test_decode(void) {
    check_section("decode: first piece, byte runs, control and unknown pieces");
    buf b = bpe_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    DECODES(m, "abc", B_SP, B_ABC);
    DECODES(m, "a", 1, B_SPA, 2);
    DECODES(m, " a", B_SP, B_SP, B_A); /* only one leading space goes */
    DECODES(m, "a ", B_A, B_SP);
    DECODES(m, "  a", BYTE(' '), B_SPA); /* text before it: the space stays */
    DECODES(m, "\xC3\xA9", BYTE(0xC3), BYTE(0xA9));
    DECODES(m, "\xE3\x81\x82", BYTE(0xE3), BYTE(0x81), BYTE(0x82));
    DECODES(m, "\xF0\x9F\x98\x80", BYTE(0xF0), BYTE(0x9F), BYTE(0x98), BYTE(0x80));
    DECODES(m, "A", BYTE(0x41));
    DECODES(m, "\0", BYTE(0));
    /* Bytes that are not UTF-8: U+FFFD for each byte that starts nothing valid. */
    DECODES(m, FFFD, BYTE(0xC3));
    DECODES(m, FFFD "a", BYTE(0xC3), B_A);
    DECODES(m, FFFD FFFD, BYTE(0xE3), BYTE(0x81));
    DECODES(m, FFFD, BYTE(0xFF));
    DECODES(m, FFFD, BYTE(0xEF), BYTE(0xBF), BYTE(0xBD)); /* U+FFFD itself is valid */
    DECODES(m, FFFD FFFD FFFD, BYTE(0xED), BYTE(0xA0), BYTE(0x80)); /* a surrogate */
    DECODES(m, FFFD FFFD, BYTE(0xC0), BYTE(0x80));                 /* overlong */
    DECODES(m, FFFD FFFD FFFD FFFD, BYTE(0xF4), BYTE(0x90), BYTE(0x80), BYTE(0x80));
    DECODES(m, FFFD "\xC3\xA9", BYTE(0x80), BYTE(0xC3), BYTE(0xA9));
    /* A control piece ends a byte run, and prints nothing. */
    DECODES(m, "a" FFFD FFFD, B_SPA, BYTE(0xE3), B_CTRL, BYTE(0x81));
    DECODES(m, " \xE2\x81\x87 ", 0); /* the unk piece */
    DECODES(m, "xy<mask>", B_XY, B_MASK);
    DECODES(m, "", 1, 2);
    char out[8];
    size_t len = 0;
    CHECK_OK(ember_sp_decode(m, NULL, 0, out, sizeof out, &len));
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_STR(out, "");

    /* The stateless piece text. */
    const char *t;
    size_t l;
    CHECK_OK(ember_sp_decode_piece(m, B_SPA, true, &t, &l));
    CHECK(l == 1 && memcmp(t, "a", 1) == 0);
    CHECK_OK(ember_sp_decode_piece(m, B_SPA, false, &t, &l));
    CHECK(l == 2 && memcmp(t, " a", 2) == 0);
    CHECK_OK(ember_sp_decode_piece(m, BYTE(0xC3), false, &t, &l));
    CHECK(l == 1 && (unsigned char)t[0] == 0xC3);
    CHECK_OK(ember_sp_decode_piece(m, 1, true, &t, &l));
    CHECK_EQ_INT(l, 0);
    CHECK_OK(ember_sp_decode_piece(m, 0, true, &t, &l));
    CHECK(l == 5 && memcmp(t, " \xE2\x81\x87 ", 5) == 0);
    CHECK(ember_sp_model_strips_leading_space(m));
    ember_sp_model_destroy(m);

    b = unigram_model();
    m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    /* Removing extra whitespace: leading "▁" go while nothing is printed. */
    DECODES(m, "a", U_SP, U_SP, U_A);
    DECODES(m, "a b", U_A, U_SP, U_B);
    DECODES(m, "a", 1, U_SPA);
    ember_sp_model_destroy(m);
}

/* Random id sequences: the stream equals the whole decode. */
static void test_stream_random(void) {
    check_section("streaming equals whole-sequence decoding");
    buf b = bpe_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    ember_sp_stream *s = NULL;
    if (!CHECK_OK(ember_sp_stream_create(m, &s))) {
        ember_sp_model_destroy(m);
        return;
    }
    uint64_t x = 88172645463325252ull;
    int bad = 0;
    char whole[1024];
    buf text = {0};
    for (int k = 0; k < 3000; k++) {
        int32_t ids[24];
        size_t n = (size_t)(k % 24);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned r = (unsigned)(x >> 32);
            /* Mostly byte pieces (UTF-8 lead and trail bytes), some others. */
            static const int32_t lead[] = {0x41, 0xC3, 0xE3, 0xF0, 0x80, 0x81, 0x9F, 0xBF, 0xFF, 0xED};
            ids[i] = (r & 3) != 0 ? BYTE(lead[(r >> 4) % 10]) : (int32_t)((r >> 8) % B_N);
        }
        size_t len = 0;
        if (ember_sp_decode(m, ids, n, whole, sizeof whole, &len) != EMBER_OK) {
            bad++;
            continue;
        }
        text.n = 0;
        const char *t;
        size_t l;
        for (size_t i = 0; i < n; i++)
            if (ember_sp_stream_push(s, ids[i], &t, &l) == EMBER_OK) put(&text, t, l);
        if (ember_sp_stream_finish(s, &t, &l) == EMBER_OK) put(&text, t, l);
        if (text.n != len || (len > 0 && memcmp(text.p, whole, len) != 0)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* Reset forgets held bytes and the first-piece state. */
    const char *t;
    size_t l;
    CHECK_OK(ember_sp_stream_push(s, B_SPA, &t, &l));
    CHECK(l == 1);
    CHECK_OK(ember_sp_stream_push(s, BYTE(0xC3), &t, &l));
    CHECK_EQ_INT(l, 0); /* held: the character may go on */
    ember_sp_stream_reset(s);
    CHECK_OK(ember_sp_stream_push(s, B_SPA, &t, &l));
    CHECK(l == 1 && t[0] == 'a');
    CHECK_ERR(ember_sp_stream_push(s, B_N, &t, &l), EMBER_ERR_INDEX_OUT_OF_RANGE, "outside");
    CHECK_ERR(ember_sp_stream_push(s, -1, &t, &l), EMBER_ERR_INDEX_OUT_OF_RANGE, "-1");
    free(text.p);
    ember_sp_stream_destroy(s);
    ember_sp_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */
/* ------------------------------------------------------------------------ */

/* A Unigram model whose special pieces are renamed in trainer_spec, with a
 * spelling that is both a normal and a control piece. */
static buf renamed_model(void) {
    buf m = {0}, t = {0};
    put_piece(&m, "<pad>", 0.0f, EMBER_SP_PIECE_CONTROL);
    put_piece(&m, "[UNK]", 0.0f, EMBER_SP_PIECE_UNKNOWN);
    put_piece(&m, "<bos>", 0.0f, EMBER_SP_PIECE_CONTROL);
    put_piece(&m, "<eos>", 0.0f, 0); /* named eos, but not a control piece */
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "q", -1.0f, 0);
    put_piece(&m, "q", 0.0f, EMBER_SP_PIECE_CONTROL); /* allowed: another table */
    put_str(&t, 45, "[UNK]");
    put_bytes(&t, 46, "<s>\0x", 5); /* names are whole strings: this names nothing */
    put_str(&t, 46, "<bos>");      /* ... and the last one counts */
    put_str(&t, 47, "<eos>");
    put_bytes(&t, 44, "<\0>", 3);  /* the unk surface may hold a NUL */
    put_msg(&m, 2, &t);
    free(t.p);
    return m;
}

static void test_vocabulary(void) {
    check_section("vocabulary: pieces, types, scores, special ids");
    buf b = bpe_model();
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    int32_t id = -1;
    CHECK_OK(ember_sp_piece_to_id(m, SP "a", 4, &id));
    CHECK_EQ_INT(id, B_SPA);
    CHECK_OK(ember_sp_piece_to_id(m, "<0x41>", 6, &id));
    CHECK_EQ_INT(id, BYTE(0x41));
    CHECK_OK(ember_sp_piece_to_id(m, "<ctrl>", 6, &id));
    CHECK_EQ_INT(id, B_CTRL);
    CHECK_ERR(ember_sp_piece_to_id(m, "nope", 4, &id), EMBER_ERR_NOT_FOUND, "\"nope\"");
    CHECK_ERR(ember_sp_piece_to_id(m, "<0x41", 5, &id), EMBER_ERR_NOT_FOUND, "not in the vocabulary");
    const char *p;
    size_t l;
    CHECK_OK(ember_sp_id_to_piece(m, B_SPA, &p, &l));
    CHECK(l == 4 && memcmp(p, SP "a", 4) == 0);
    CHECK_OK(ember_sp_id_to_piece(m, BYTE(0x0A), &p, &l));
    CHECK(l == 6 && memcmp(p, "<0x0A>", 6) == 0);
    static const struct {
        int32_t id;
        ember_sp_piece_type type;
        float score;
    } want[] = {
        {0, EMBER_SP_PIECE_UNKNOWN, 0.0f},       {1, EMBER_SP_PIECE_CONTROL, 0.0f},
        {BYTE(7), EMBER_SP_PIECE_BYTE, 0.0f},    {B_A, EMBER_SP_PIECE_NORMAL, -2.0f},
        {B_MASK, EMBER_SP_PIECE_USER_DEFINED, 0.0f}, {B_XY, EMBER_SP_PIECE_UNUSED, -0.5f},
        {B_XYZ, EMBER_SP_PIECE_NORMAL, -0.25f},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ember_sp_piece_type type = 0;
        float score = 1.0f;
        CHECK_OK(ember_sp_piece_info(m, want[i].id, &type, &score));
        CHECK_EQ_INT(type, want[i].type);
        CHECK(score == want[i].score);
    }
    CHECK_OK(ember_sp_piece_info(m, 0, NULL, NULL));
    CHECK_EQ_INT(ember_sp_model_bos_id(m), 1);
    CHECK_EQ_INT(ember_sp_model_eos_id(m), 2);
    CHECK_EQ_INT(ember_sp_model_unk_id(m), 0);
    CHECK_EQ_INT(ember_sp_model_pad_id(m), -1);
    ember_sp_model_destroy(m);

    b = renamed_model();
    m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    CHECK_EQ_INT(ember_sp_model_unk_id(m), 1);
    CHECK_EQ_INT(ember_sp_model_bos_id(m), 2);
    CHECK_EQ_INT(ember_sp_model_eos_id(m), -1); /* not a control piece */
    CHECK_EQ_INT(ember_sp_model_pad_id(m), 0);
    /* Control pieces are looked up first; text encodes to the normal "q";
     * each id decodes as its own type. */
    CHECK_OK(ember_sp_piece_to_id(m, "q", 1, &id));
    CHECK_EQ_INT(id, 6);
    ENCODES(m, "q", 4, 5);
    DECODES(m, "q", 5);
    DECODES(m, "", 6);
    DECODES(m, "<\0>", 1);
    ember_sp_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* Protobuf details                                                          */
/* ------------------------------------------------------------------------ */

/* Unknown fields of every wire type (a group with a nested group too). */
static void put_unknown_fields(buf *b) {
    put_uint(b, 1000, 12345);
    put_tag(b, 1001, 1);
    put(b, "12345678", 8);
    put_str(b, 1002, "ignored");
    put_tag(b, 1003, 3);
    put_uint(b, 1, 7);
    put_tag(b, 7, 3);
    put_str(b, 2, "inner");
    put_tag(b, 7, 4);
    put_tag(b, 1003, 4);
    put_tag(b, 1004, 5);
    put(b, "1234", 4);
}

static void test_protobuf(void) {
    check_section("protobuf: unknown fields, wire types, merged messages, enums");
    buf m = {0}, p = {0}, t1 = {0}, t2 = {0}, n = {0};
    put_unknown_fields(&m);
    put_specials(&m);
    /* A piece with unknown fields, its score sent twice (the last counts). */
    put_str(&p, 1, "a");
    put_float(&p, 2, -9.0f);
    put_unknown_fields(&p);
    put_float(&p, 2, -1.0f);
    put_msg(&m, 1, &p);
    p.n = 0;
    /* Score as a varint and type as bytes: wrong wire types are skipped. */
    put_str(&p, 1, "b");
    put_uint(&p, 2, 5);
    put_bytes(&p, 3, "\x03", 1);
    put_msg(&m, 1, &p);
    p.n = 0;
    /* An enum value the schema lacks leaves the type NORMAL. */
    put_str(&p, 1, SP);
    put_float(&p, 2, -1.0f);
    put_uint(&p, 3, 9);
    put_msg(&m, 1, &p);
    put_piece(&m, "<0x00>", 0.0f, EMBER_SP_PIECE_BYTE); /* needs byte_fallback below */
    /* trainer_spec in two parts, merged; an unknown model type is ignored. */
    put_uint(&t1, 3, EMBER_SP_MODEL_BPE);
    put_unknown_fields(&t1);
    put_msg(&m, 2, &t1);
    put_uint(&t2, 35, 0);
    put_uint(&t2, 3, 7);
    put_uint(&t2, 35, 1);
    put_msg(&m, 2, &t2);
    put_str(&n, 1, "identity");
    put_unknown_fields(&n);
    put_uint(&n, 4, 0);
    put_msg(&m, 3, &n);
    put_unknown_fields(&m);
    ember_sp_model *sp = NULL;
    /* byte_fallback without the 256 byte pieces: the merge took effect. */
    CHECK_ERR(ember_sp_model_load_memory(m.p, m.n, &sp), EMBER_ERR_INVALID_ARGUMENT,
              "<0x01> is missing");
    for (int b = 1; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        put_piece(&m, s, 0.0f, EMBER_SP_PIECE_BYTE);
    }
    if (CHECK_OK(ember_sp_model_load_memory(m.p, m.n, &sp))) {
        CHECK_EQ_INT(ember_sp_model_kind(sp), EMBER_SP_MODEL_BPE);
        ember_sp_piece_type type;
        float score;
        CHECK_OK(ember_sp_piece_info(sp, 3, &type, &score));
        CHECK(score == -1.0f);
        CHECK_OK(ember_sp_piece_info(sp, 4, &type, &score));
        CHECK(score == 0.0f && type == EMBER_SP_PIECE_NORMAL);
        CHECK_OK(ember_sp_piece_info(sp, 5, &type, &score));
        CHECK_EQ_INT(type, EMBER_SP_PIECE_NORMAL);
        /* remove_extra_whitespaces = 0 was read from among unknown fields. */
        ENCODES(sp, " a", 5, 5, 3);
        ember_sp_model_destroy(sp);
    }
    free(m.p), free(p.p), free(t1.p), free(t2.p), free(n.p);
}

/* ------------------------------------------------------------------------ */
/* Load errors                                                               */
/* ------------------------------------------------------------------------ */

static void load_fails(const void *data, size_t n, ember_status want, const char *msg) {
    ember_sp_model *m = NULL;
    CHECK_ERR(ember_sp_model_load_memory(data, n, &m), want, msg);
    CHECK(m == NULL);
    ember_sp_model_destroy(m);
}

#define WIRE_FAILS(bytes, msg) load_fails(bytes, sizeof bytes - 1, EMBER_ERR_INVALID_ARGUMENT, msg)

static void buf_fails(buf *b, ember_status want, const char *msg) {
    load_fails(b->p, b->n, want, msg);
    free(b->p);
    *b = (buf){0};
}

static void test_wire_errors(void) {
    check_section("malformed protobuf");
    load_fails(NULL, 0, EMBER_ERR_INVALID_ARGUMENT, "tokenizer.model: no piece of type UNKNOWN");
    WIRE_FAILS("\x0A\x80", "truncated varint");
    WIRE_FAILS("\x0A\x05" "ab", "length 5 runs past the end (2 bytes left)");
    WIRE_FAILS("\x0A\x03\x0A\x05" "a", "ModelProto.pieces[0] at byte 2");
    WIRE_FAILS("\x0E", "invalid wire type");
    WIRE_FAILS("\x0F", "invalid wire type");
    WIRE_FAILS("\x00", "invalid field tag");
    WIRE_FAILS("\x02\x00", "invalid field tag");
    WIRE_FAILS("\xFF\xFF\xFF\xFF\x7F", "invalid field tag");
    WIRE_FAILS("\x0C", "end-group tag without a group");
    WIRE_FAILS("\x0B\x14", "mismatched end-group tag");
    WIRE_FAILS("\x0B", "truncated varint");
    WIRE_FAILS("\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01", "varint longer than 10 bytes");
    WIRE_FAILS("\x09" "1234567", "truncated 64-bit field");
    WIRE_FAILS("\x0D" "123", "truncated 32-bit field");
    WIRE_FAILS("\x12\x02\x19\x01", "ModelProto.trainer_spec at byte 2: truncated 64-bit");
    WIRE_FAILS("\x1A\x01\x0A", "ModelProto.normalizer_spec at byte 2: truncated varint");
    /* self_test_data (field 4) is not read at all, as in the library. */
    WIRE_FAILS("\x22\x02\x0A\x05", "no piece of type UNKNOWN");
    /* Messages and groups nest 100 deep at most, as in the protobuf runtime. */
    buf deep = {0}, piece = {0};
    for (int i = 0; i < 101; i++) put_tag(&deep, 5, 3);
    buf_fails(&deep, EMBER_ERR_INVALID_ARGUMENT, "groups nested too deeply");
    put_str(&piece, 1, "q");
    for (int i = 0; i < 100; i++) put_tag(&piece, 8, 3);
    for (int i = 0; i < 100; i++) put_tag(&piece, 8, 4);
    put_msg(&deep, 1, &piece);
    buf_fails(&deep, EMBER_ERR_INVALID_ARGUMENT, "ModelProto.pieces[0] at byte");
    piece.n = 0;
    put_str(&piece, 1, "q");
    for (int i = 0; i < 99; i++) put_tag(&piece, 8, 3);
    for (int i = 0; i < 99; i++) put_tag(&piece, 8, 4);
    put_msg(&deep, 1, &piece);
    buf_fails(&deep, EMBER_ERR_INVALID_ARGUMENT, "no piece of type UNKNOWN"); /* parsed fine */
    free(piece.p);
    /* A valid 10-byte varint (a negative int32) is fine: the type stays NORMAL. */
    buf ok = unigram_model();
    put(&ok, "\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01", 11);
    ember_sp_model *m = load_buf(&ok);
    ember_sp_model_destroy(m);
    free(ok.p);
}

static void test_model_errors(void) {
    check_section("invalid models");
    buf b = {0};
    spec s = SPEC_DEFAULT;

    put_specials(&b);
    put_piece(&b, "", -1.0f, 0);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 is empty");

    put_specials(&b);
    put_piece(&b, "a", -1.0f, 0);
    put_piece(&b, "a", -2.0f, EMBER_SP_PIECE_USER_DEFINED);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 4 \"a\" is already defined (piece 3)");

    put_specials(&b);
    put_piece(&b, "<s>", 0.0f, EMBER_SP_PIECE_UNKNOWN);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 \"<s>\" is already defined (piece 1)");

    put_specials(&b);
    put_piece(&b, "<unk2>", 0.0f, EMBER_SP_PIECE_UNKNOWN);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "pieces 0 and 3 are both of type UNKNOWN");

    put_piece(&b, "a", -1.0f, 0);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "no piece of type UNKNOWN");

    put_specials(&b);
    put_piece(&b, "<0x41>", 0.0f, EMBER_SP_PIECE_BYTE);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "byte piece 3 \"<0x41>\" in a model without");

    put_specials(&b);
    put_piece(&b, "<0x4a>", 0.0f, EMBER_SP_PIECE_BYTE);
    s.byte_fallback = true;
    put_specs(&b, &s);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "\"<0x4a>\" is not one of <0x00>..<0xFF>");

    put_specials(&b);
    put_byte_pieces(&b);
    put_piece(&b, "<0x100>", 0.0f, EMBER_SP_PIECE_BYTE);
    put_specs(&b, &s);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "\"<0x100>\" is not one of");

    put_specials(&b);
    put_piece(&b, "a", -1.0f, 0);
    put_specs(&b, &s);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "byte_fallback is set but byte piece <0x00> is missing");
    s.byte_fallback = false;

    put_specials(&b);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "a Unigram model needs at least one normal");

    /* Charsmaps, checked as the library checks them. */
    static const struct {
        const char *what;
        size_t at;        /* where to write value (SIZE_MAX: nothing) */
        uint32_t value;
        size_t cut;       /* bytes to cut from the end */
        const char *msg;
    } broken[] = {
        {"trie size 512", 0, 512, 0, "the trie size 512 is not a positive multiple of 1024"},
        {"trie size 1025", 0, 1025, 0, "the trie size 1025 is not a positive multiple"},
        {"trie as large as the blob", 0, 0x7FFFFFF0u, 0, "leaves no replacement strings"},
        {"no strings", SIZE_MAX, 0, 18, "leaves no replacement strings"},
        {"no final NUL", SIZE_MAX, 0, 1, "do not end with a NUL"},
        {"root with a leaf bit", 4, 0x80000000u | (0x200000u << 10), 0, "points outside itself"},
        {"child block outside", 8, (0x1FFFFu << 10) | 'x', 0, "points outside itself"},
        {"value outside the strings", 8, 0xFFFFFFFFu, 0, "points outside itself"},
    };
    const rule one[] = {{"a", "bb"}, {"\xEF\xBC\xA1", "A"}};
    for (size_t k = 0; k < sizeof broken / sizeof broken[0]; k++) {
        buf cm = make_charsmap(one, 2);
        if (broken[k].at != SIZE_MAX) {
            uint32_t v = broken[k].value;
            unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                   (unsigned char)(v >> 24)};
            memcpy(cm.p + broken[k].at, le, 4);
        }
        cm.n -= broken[k].cut;
        put_specials(&b);
        put_piece(&b, "a", -1.0f, 0);
        s.charsmap = &cm;
        put_specs(&b, &s);
        printf("   %s\n", broken[k].what);
        buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, broken[k].msg);
        free(cm.p);
    }
    buf cm = {0};
    put(&cm, "\x04\x00\x00", 3);
    put_specials(&b);
    put_piece(&b, "a", -1.0f, 0);
    s.charsmap = &cm;
    put_specs(&b, &s);
    s.charsmap = NULL;
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "normalizer_spec.precompiled_charsmap is broken (3 bytes");

    /* The denormalizer's charsmap is checked too. */
    put_specials(&b);
    put_piece(&b, "a", -1.0f, 0);
    put_specs(&b, &s);
    buf dn = {0};
    put_bytes(&dn, 2, "\x00\x04\x00\x00" "ab", 6);
    put_msg(&b, 5, &dn);
    free(dn.p);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "denormalizer_spec.precompiled_charsmap: a trie of 1024");
    free(cm.p);

    /* A Unigram model needs finite scores (a BPE model does not). */
    put_specials(&b);
    put_piece(&b, "a", -1.0f, 0);
    put_piece(&b, "b", NAN, EMBER_SP_PIECE_CONTROL);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 4 has a score that is NaN or infinite");
    put_specials(&b);
    put_piece(&b, "a", -INFINITY, 0);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 has a score that is NaN or infinite");
    put_specials(&b);
    put_piece(&b, "a", NAN, 0);
    s.model_type = EMBER_SP_MODEL_BPE;
    put_specs(&b, &s);
    s.model_type = 0;
    {
        ember_sp_model *nan_bpe = load_buf(&b);
        ember_sp_model_destroy(nan_bpe);
        free(b.p);
        b = (buf){0};
    }

    /* No NUL bytes in pieces, and no piece of 8000 bytes or more. */
    put_specials(&b);
    put_piece_n(&b, "a\0b", 3, -1.0f, 0);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 contains a NUL byte");
    put_specials(&b);
    put_piece_n(&b, "<\0>", 3, 0.0f, EMBER_SP_PIECE_CONTROL);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 contains a NUL byte");
    char *longest = malloc(8001);
    if (longest != NULL) {
        memset(longest, 'a', 8000);
        put_specials(&b);
        put_piece_n(&b, longest, 7999, -1.0f, 0);
        ember_sp_model *m = load_buf(&b);
        ember_sp_model_destroy(m);
        free(b.p);
        b = (buf){0};
        put_specials(&b);
        put_piece_n(&b, longest, 8000, -1.0f, EMBER_SP_PIECE_CONTROL);
        buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 3 is 8000 bytes long (at most 7999)");
        free(longest);
    }
    ember_sp_model *m = NULL;

    /* Self-test samples are ignored (the library dropped them): a failing
     * sample and a malformed one both load. */
    buf u = unigram_model(), st = {0}, sample = {0};
    put_str(&sample, 1, "ab");
    put_str(&sample, 2, "not what it gives");
    put_msg(&st, 1, &sample);
    put_msg(&u, 4, &st);
    put(&u, "\x22\x03\x0A\x05" "a", 5);
    m = load_buf(&u);
    ember_sp_model_destroy(m);
    free(u.p);
    free(st.p);
    free(sample.p);
}

/* ------------------------------------------------------------------------ */
/* Truncated and corrupted files                                             */
/* ------------------------------------------------------------------------ */

/* A loaded (possibly corrupted) model must still encode and decode safely. */
static void exercise(const ember_sp_model *m, uint64_t *x) {
    static const char *texts[] = {"abc xyz", "  a\xE3\x80\x80\x62<mask><a>",
                                  "\xFF\xC3\xA9\xF0\x9F\x98\x80", "<sep>hello world", ""};
    int32_t ids[256];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t n = 0;
        ember_status st = ember_sp_encode(m, texts[i], strlen(texts[i]), ids, 256, &n);
        if (st == EMBER_OK) {
            char out[2048];
            size_t len;
            (void)ember_sp_decode(m, ids, n, out, sizeof out, &len);
        }
    }
    size_t v = ember_sp_model_vocab_size(m);
    for (size_t i = 0; i < 16 && v > 0; i++) {
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        ids[i] = (int32_t)(*x % v);
    }
    char out[4096];
    size_t len;
    (void)ember_sp_decode(m, ids, v > 0 ? 16 : 0, out, sizeof out, &len);
    ember_sp_stream *s = NULL;
    if (ember_sp_stream_create(m, &s) == EMBER_OK) {
        const char *t;
        size_t l;
        for (size_t i = 0; i < 16 && v > 0; i++) (void)ember_sp_stream_push(s, ids[i], &t, &l);
        (void)ember_sp_stream_finish(s, &t, &l);
        ember_sp_stream_destroy(s);
    }
}

/* Loads data[0..n): a model (then exercised) or a clean error. Returns
 * 1 when it loaded, 0 on a clean error, -1 on anything else. */
static int try_load(const unsigned char *data, size_t n, uint64_t *x) {
    ember_sp_model *m = NULL;
    ember_clear_error();
    ember_status st = ember_sp_model_load_memory(data, n, &m);
    if (st == EMBER_OK) {
        exercise(m, x);
        ember_sp_model_destroy(m);
        return 1;
    }
    bool clean = (st == EMBER_ERR_INVALID_ARGUMENT || st == EMBER_ERR_NOT_SUPPORTED) &&
                 m == NULL && ember_last_error()[0] != '\0';
    if (!clean) printf("   load of %zu bytes: status 0x%04x \"%s\"\n", n, (unsigned)st, ember_last_error());
    return clean ? 0 : -1;
}

static void mutate(const char *name, buf b) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    size_t loaded = 0, failed = 0, bad = 0;
    /* Every truncation. */
    for (size_t n = 0; n < b.n; n++) {
        int r = try_load(b.p, n, &x);
        if (r == 1) loaded++;
        else if (r == 0) failed++;
        else bad++;
    }
    CHECK_MSG(bad == 0, "%s: %zu truncations failed badly", name, bad);
    CHECK_MSG(failed > 0, "%s: no truncation failed", name);
    /* Byte flips: every byte with several masks, plus random bytes. */
    static const unsigned char masks[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF};
    size_t flips = 0;
    bad = 0;
    for (size_t i = 0; i < b.n; i++) {
        for (size_t k = 0; k < sizeof masks; k++) {
            unsigned char saved = b.p[i];
            b.p[i] ^= masks[k];
            if (try_load(b.p, b.n, &x) < 0) bad++;
            b.p[i] = saved;
            flips++;
        }
    }
    for (int k = 0; k < 2000; k++) {
        unsigned char saved[4];
        size_t at[4];
        for (int j = 0; j < 4; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            at[j] = (size_t)(x % b.n);
            saved[j] = b.p[at[j]];
            b.p[at[j]] = (unsigned char)(x >> 40);
        }
        if (try_load(b.p, b.n, &x) < 0) bad++;
        for (int j = 3; j >= 0; j--) b.p[at[j]] = saved[j];
        flips++;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu corrupted files failed badly", name, bad, flips);
    printf("   %s: %zu bytes, %zu truncations (%zu load), %zu corruptions\n", name, b.n, b.n, loaded,
           flips);
    free(b.p);
}

static void test_mutations(void) {
    check_section("truncated and corrupted files never crash");
    mutate("bpe", bpe_model());
    mutate("unigram", unigram_model());
    mutate("charsmap", charsmap_model());
    mutate("word", word_model(EMBER_SP_MODEL_WORD));
    mutate("options", options_model(false, true, true));
}

/* ------------------------------------------------------------------------ */
/* Files and API misuse                                                      */
/* ------------------------------------------------------------------------ */

static void test_files(void) {
    check_section("files");
    ember_sp_model *m = NULL;
    CHECK_ERR(ember_sp_model_load("no-such-dir/tokenizer.model", &m), EMBER_ERR_IO,
              "cannot open no-such-dir/tokenizer.model");
    CHECK(m == NULL);
    const char *dir = getenv("EMBER_BINARY_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/llm-sentencepiece-test.model", dir ? dir : ".");
    buf b = bpe_model();
    FILE *f = fopen(path, "wb");
    if (CHECK(f != NULL)) {
        fwrite(b.p, 1, b.n / 2, f);
        fclose(f);
        /* A truncated file names itself. */
        CHECK_ERR(ember_sp_model_load(path, &m), EMBER_ERR_INVALID_ARGUMENT, path);
        f = fopen(path, "wb");
        fwrite(b.p, 1, b.n, f);
        fclose(f);
        if (CHECK_OK(ember_sp_model_load(path, &m))) {
            ENCODES(m, "abc", B_SP, B_ABC);
            ember_sp_model_destroy(m);
        }
        remove(path);
    }
    free(b.p);
}

static void test_api(void) {
    check_section("API misuse");
    ember_sp_model *m = NULL;
    CHECK_STATUS(ember_sp_model_load(NULL, &m), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_model_load("x", NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_model_load_memory(NULL, 3, &m), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_model_load_memory("", 0, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_sp_model_destroy(NULL);
    CHECK_EQ_INT(ember_sp_model_vocab_size(NULL), 0);
    CHECK_EQ_INT(ember_sp_model_bos_id(NULL), -1);
    CHECK(!ember_sp_model_strips_leading_space(NULL));
    buf b = bpe_model();
    m = load_buf(&b);
    free(b.p);
    if (m == NULL) return;
    int32_t ids[4];
    size_t n = 0;
    CHECK_STATUS(ember_sp_encode(NULL, "a", 1, ids, 4, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_encode(m, NULL, 1, ids, 4, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_encode(m, "a", 1, NULL, 4, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_encode(m, "a", 1, ids, 4, NULL), EMBER_ERR_INVALID_ARGUMENT);
    /* Too small an array: an error, and the count it needs. */
    CHECK_ERR(ember_sp_encode(m, "\xC3\xA9\xC3\xA9", 4, ids, 4, &n), EMBER_ERR_INVALID_ARGUMENT,
              "4 ids do not hold this text (it needs 5)");
    CHECK_EQ_INT(n, 5);
    CHECK_OK(ember_sp_encode(m, NULL, 0, NULL, 0, &n));
    CHECK_EQ_INT(n, 0);
    char out[4];
    size_t len = 0;
    const int32_t abc[] = {B_SP, B_ABC, B_SPA};
    CHECK_ERR(ember_sp_decode(m, abc, 3, out, sizeof out, &len), EMBER_ERR_INVALID_ARGUMENT,
              "4 bytes do not hold the 5-byte text");
    CHECK_EQ_INT(len, 5);
    CHECK_STATUS(ember_sp_decode(m, abc, 3, NULL, 0, &len), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(len, 5);
    const int32_t bad_ids[] = {B_A, B_N};
    CHECK_ERR(ember_sp_decode(m, bad_ids, 2, out, sizeof out, &len), EMBER_ERR_INDEX_OUT_OF_RANGE,
              "id 274 at position 1 is outside the vocabulary (274 pieces)");
    const int32_t neg[] = {-5};
    CHECK_STATUS(ember_sp_decode(m, neg, 1, out, sizeof out, &len), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_sp_decode(m, NULL, 1, out, sizeof out, &len), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(ember_sp_normalize(m, "abc", 3, out, sizeof out, &len), EMBER_ERR_INVALID_ARGUMENT,
              "4 bytes do not hold the 6-byte text");
    CHECK_EQ_INT(len, 6);
    const char *p;
    size_t l;
    CHECK_STATUS(ember_sp_id_to_piece(m, B_N, &p, &l), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_sp_id_to_piece(m, -1, &p, &l), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_sp_id_to_piece(m, 0, NULL, &l), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_piece_info(m, B_N, NULL, NULL), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_sp_piece_info(NULL, 0, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_decode_piece(m, B_N, true, &p, &l), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_sp_decode_piece(m, 0, true, NULL, &l), EMBER_ERR_INVALID_ARGUMENT);
    int32_t id;
    CHECK_STATUS(ember_sp_piece_to_id(m, NULL, 1, &id), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_piece_to_id(m, NULL, 0, &id), EMBER_ERR_NOT_FOUND);
    ember_sp_stream *s = NULL;
    CHECK_STATUS(ember_sp_stream_create(NULL, &s), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_stream_create(m, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_stream_push(NULL, 0, &p, &l), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sp_stream_finish(NULL, &p, &l), EMBER_ERR_INVALID_ARGUMENT);
    ember_sp_stream_destroy(NULL);
    ember_sp_stream_reset(NULL);
    ember_sp_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* Models for the Python test                                                */
/* ------------------------------------------------------------------------ */

/* CHAR and BPE models whose pieces text could spell: control, byte and
 * unused pieces. */
static buf reserved_text_model(int type, bool fallback) {
    buf m = {0};
    put_specials(&m);
    if (fallback) put_byte_pieces(&m);
    put_piece(&m, SP, -1.0f, 0);
    put_piece(&m, "a", -1.0f, 0);
    put_piece(&m, "q", 0.0f, EMBER_SP_PIECE_CONTROL);
    put_piece(&m, "u", -1.0f, EMBER_SP_PIECE_UNUSED);
    spec s = SPEC_DEFAULT;
    s.model_type = type;
    s.byte_fallback = fallback;
    s.dummy_prefix = 0;
    put_specs(&m, &s);
    return m;
}

/* BPE merge order by score bits: +0.0 merges before -0.0. */
static buf signed_zero_model(void) {
    buf m = {0};
    put_specials(&m);
    put_piece(&m, "a", -5.0f, 0);
    put_piece(&m, "b", -5.0f, 0);
    put_piece(&m, "c", -5.0f, 0);
    put_piece(&m, "ab", -0.0f, 0);
    put_piece(&m, "bc", 0.0f, 0);
    spec s = SPEC_DEFAULT;
    s.model_type = EMBER_SP_MODEL_BPE;
    s.dummy_prefix = 0;
    put_specs(&m, &s);
    return m;
}

/* BPE with a chain of unused pieces "aa" .. "a" x 129 (each outscoring the
 * shorter ones) below one normal "a" x 130: the library splits unused
 * pieces back at most 100 levels deep. */
static buf deep_unused_model(void) {
    buf m = {0};
    put_specials(&m);
    char a[131];
    memset(a, 'a', sizeof a);
    put_piece_n(&m, a, 1, -1.0f, 0);
    for (size_t k = 2; k < 130; k++) put_piece_n(&m, a, k, (float)k, EMBER_SP_PIECE_UNUSED);
    put_piece_n(&m, a, 130, 200.0f, 0);
    spec s = SPEC_DEFAULT;
    s.model_type = EMBER_SP_MODEL_BPE;
    s.dummy_prefix = 0;
    put_specs(&m, &s);
    return m;
}

static void test_reserved_text(void) {
    check_section("text never becomes a control, byte or unused piece");
    buf b = reserved_text_model(EMBER_SP_MODEL_CHAR, false);
    ember_sp_model *m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        ENCODES(m, "q", 0);
        ENCODES(m, "qu", 0);          /* one run of unknowns */
        ENCODES(m, "aqa", 4, 0, 4);
        ember_sp_model_destroy(m);
    }
    b = reserved_text_model(EMBER_SP_MODEL_BPE, true);
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        ENCODES(m, "q", BYTE('q'));
        ENCODES(m, "<0x41>", BYTE('<'), BYTE('0'), BYTE('x'), BYTE('4'), BYTE('1'), BYTE('>'));
        ember_sp_model_destroy(m);
    }
    /* A BPE model keeps all pieces in one table: a spelling only once. */
    b = (buf){0};
    put_specials(&b);
    put_piece(&b, "q", -1.0f, 0);
    put_piece(&b, "q", 0.0f, EMBER_SP_PIECE_CONTROL);
    spec s = SPEC_DEFAULT;
    s.model_type = EMBER_SP_MODEL_BPE;
    put_specs(&b, &s);
    buf_fails(&b, EMBER_ERR_INVALID_ARGUMENT, "piece 4 \"q\" is already defined (piece 3)");

    b = signed_zero_model();
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        ENCODES(m, "abc", 3, 7);
        ember_sp_model_destroy(m);
    }
    b = deep_unused_model();
    m = load_buf(&b);
    free(b.p);
    if (m != NULL) {
        char a[131];
        memset(a, 'a', sizeof a);
        int32_t ids[200];
        size_t n = 0;
        CHECK_OK(ember_sp_encode(m, a, 101, ids, 200, &n));
        CHECK_EQ_INT(n, 101); /* split back to single "a"s */
        CHECK_OK(ember_sp_encode(m, a, 103, ids, 200, &n));
        CHECK_EQ_INT(n, 102); /* one unused "aa" stays, 100 levels down */
        CHECK_EQ_INT(ids[0], 4);
        CHECK_OK(ember_sp_encode(m, a, 130, ids, 200, &n));
        CHECK(n == 1 && ids[0] == 132);
        ember_sp_model_destroy(m);
    }
}

static int dump_models(const char *dir) {
    struct {
        const char *name;
        buf b;
    } models[] = {
        {"bpe", bpe_model()},
        {"unigram", unigram_model()},
        {"charsmap", charsmap_model()},
        {"word", word_model(EMBER_SP_MODEL_WORD)},
        {"char", word_model(EMBER_SP_MODEL_CHAR)},
        {"noescape", options_model(false, false, true)},
        {"suffix", options_model(true, true, true)},
        {"nodummy", options_model(true, false, false)},
        {"renamed", renamed_model()},
        {"reserved_char", reserved_text_model(EMBER_SP_MODEL_CHAR, false)},
        {"reserved_word", reserved_text_model(EMBER_SP_MODEL_WORD, true)},
        {"reserved_bpe", reserved_text_model(EMBER_SP_MODEL_BPE, true)},
        {"signed_zero", signed_zero_model()},
        {"huge_score", huge_score_model(-2.0625f)},
        {"deep_unused", deep_unused_model()},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.model", dir, models[i].name);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(models[i].b.p, 1, models[i].b.n, f) != models[i].b.n) rc = 2;
        if (f) fclose(f);
        free(models[i].b.p);
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--encode") == 0) return harness_encode(argv[2], argv[3], false);
    if (argc == 4 && strcmp(argv[1], "--normalize") == 0) return harness_encode(argv[2], argv[3], true);
    if (argc == 4 && strcmp(argv[1], "--decode") == 0) return harness_decode(argv[2], argv[3], false);
    if (argc == 4 && strcmp(argv[1], "--stream") == 0) return harness_decode(argv[2], argv[3], true);
    if (argc == 3 && strcmp(argv[1], "--pieces") == 0) return harness_pieces(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--dump-models") == 0) return dump_models(argv[2]);
    if (argc == 5 && strcmp(argv[1], "--bench") == 0) return harness_bench(argv[2], argv[3], atoi(argv[4]));
    if (argc > 1) {
        fprintf(stderr, "usage: %s [--encode|--normalize MODEL JSONL | --decode|--stream MODEL IDS | "
                        "--pieces MODEL | --dump-models DIR | --bench MODEL JSONL N]\n", argv[0]);
        return 2;
    }
    test_bpe();
    test_unigram();
    test_charsmap();
    test_word_char();
    test_whitespace_options();
    test_decode();
    test_stream_random();
    test_vocabulary();
    test_protobuf();
    test_wire_errors();
    test_model_errors();
    test_reserved_text();
    test_mutations();
    test_files();
    test_api();
    return check_finish();
}
