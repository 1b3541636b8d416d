/*
 * hf_normalizers.c — tokenizer.json normalizers.
 *
 *   NFC NFD NFKC NFKD   Unicode normalization forms
 *   Lowercase           full lowercase mapping, character by character
 *   Strip               White_Space removed from the left and/or right
 *   Replace             every match of a String or Regex pattern replaced
 *   Prepend             a prefix added to a text that is not empty
 *   StripAccents        combining marks (M: Mn, Mc, Me) removed
 *   ByteLevel           each byte as its byte-level character
 *   Sequence            the above in order
 */
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

typedef enum { N_NFC, N_NFD, N_NFKC, N_NFKD, N_LOWER, N_STRIP, N_REPLACE, N_PREPEND, N_ACCENTS, N_BYTELEVEL } norm_kind;

typedef struct norm_step {
    norm_kind kind;
    bool left, right;  /* Strip */
    hf_pattern pattern; /* Replace */
    char *text;        /* Replace: content; Prepend: prefix */
    size_t text_len;
} norm_step;

#define MAX_STEPS 16

struct hf_normalizer {
    norm_step step[MAX_STEPS];
    size_t n;
};

static const char *WHERE = "tokenizer.json: normalizer";

static ember_status read_step(hf_normalizer *nz, const ember_json *j, int depth) {
    const char *type;
    ember_status st = hf_type(j, WHERE, &type);
    if (st != EMBER_OK) return st;
    if (strcmp(type, "Sequence") == 0) {
        const ember_json *list = ember_json_find(j, "normalizers");
        if (ember_json_type_of(list) != EMBER_JSON_ARRAY)
            return hf_bad(WHERE, "a Sequence without a \"normalizers\" list");
        if (depth > 4) return hf_unsupported(WHERE, "Sequences nested this deep");
        for (size_t i = 0; i < ember_json_array_size(list) && st == EMBER_OK; i++)
            st = read_step(nz, ember_json_array_at(list, i), depth + 1);
        return st;
    }
    if (nz->n == MAX_STEPS) return hf_unsupported(WHERE, "more than 16 normalizers");
    norm_step *s = &nz->step[nz->n];
    memset(s, 0, sizeof *s);
    static const struct { const char *name; norm_kind kind; } simple[] = {
        {"NFC", N_NFC}, {"NFD", N_NFD}, {"NFKC", N_NFKC}, {"NFKD", N_NFKD},
        {"Lowercase", N_LOWER}, {"StripAccents", N_ACCENTS}, {"ByteLevel", N_BYTELEVEL},
    };
    for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++)
        if (strcmp(type, simple[k].name) == 0) {
            s->kind = simple[k].kind;
            nz->n++;
            return EMBER_OK;
        }
    if (strcmp(type, "Strip") == 0) {
        s->kind = N_STRIP;
        st = hf_get_bool(j, "strip_left", true, &s->left, WHERE);
        if (st == EMBER_OK) st = hf_get_bool(j, "strip_right", true, &s->right, WHERE);
    } else if (strcmp(type, "Replace") == 0 || strcmp(type, "Prepend") == 0) {
        bool replace = type[0] == 'R';
        s->kind = replace ? N_REPLACE : N_PREPEND;
        if (replace) st = hf_pattern_read(ember_json_find(j, "pattern"), WHERE, &s->pattern);
        const char *t;
        size_t tl;
        if (st == EMBER_OK) st = hf_get_string(j, replace ? "content" : "prepend", &t, &tl, WHERE);
        if (st == EMBER_OK && t == NULL) st = hf_bad(WHERE, replace ? "Replace without content"
                                                                    : "Prepend without prepend");
        if (st == EMBER_OK) {
            s->text = malloc(tl + 1);
            if (s->text == NULL) st = tok_oom("normalizer");
            else {
                memcpy(s->text, t, tl + 1);
                s->text_len = tl;
            }
        }
    } else {
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                               "%s: the %s normalizer is not supported (ember has NFC, NFD, NFKC, "
                               "NFKD, Lowercase, Strip, Replace, Prepend, StripAccents, "
                               "ByteLevel and Sequence)",
                               WHERE, type);
    }
    nz->n++; /* counted before a failure too, so that free releases it */
    return st;
}

ember_status hf_normalizer_read(const ember_json *j, hf_normalizer **out) {
    *out = NULL;
    if (j == NULL || ember_json_type_of(j) == EMBER_JSON_NULL) return EMBER_OK;
    hf_normalizer *nz = calloc(1, sizeof *nz);
    if (nz == NULL) return tok_oom("normalizer");
    ember_status st = read_step(nz, j, 0);
    if (st != EMBER_OK) {
        hf_normalizer_free(nz);
        return st;
    }
    *out = nz;
    return EMBER_OK;
}

void hf_normalizer_free(hf_normalizer *nz) {
    if (nz == NULL) return;
    for (size_t k = 0; k < nz->n; k++) {
        hf_pattern_free(&nz->step[k].pattern);
        free(nz->step[k].text);
    }
    free(nz);
}

/* One step: in -> out (out cleared first). */
static ember_status apply(const norm_step *s, const char *t, size_t n, tok_buf *out) {
    out->len = 0;
    ember_status st = EMBER_OK;
    switch (s->kind) {
    case N_NFC: return tok_normalize(TOK_NFC, t, n, out);
    case N_NFD: return tok_normalize(TOK_NFD, t, n, out);
    case N_NFKC: return tok_normalize(TOK_NFKC, t, n, out);
    case N_NFKD: return tok_normalize(TOK_NFKD, t, n, out);
    case N_LOWER: return tok_lowercase(t, n, out);
    case N_STRIP: {
        size_t a = 0, b = n;
        while (s->left && a < b) {
            uint32_t cp;
            size_t k = tok_utf8_char(t, n, a, &cp);
            if (!tok_is_whitespace(cp)) break;
            a += k;
        }
        while (s->right && b > a) {
            size_t p = b - 1;
            while (p > a && ((uint8_t)t[p] & 0xC0) == 0x80) p--;
            uint32_t cp;
            tok_utf8_char(t, b, p, &cp);
            if (!tok_is_whitespace(cp)) break;
            b = p;
        }
        return tok_buf_append(out, t + a, b - a);
    }
    case N_PREPEND:
        if (n > 0) st = tok_buf_append(out, s->text, s->text_len);
        return st == EMBER_OK ? tok_buf_append(out, t, n) : st;
    case N_REPLACE: {
        hf_spans spans = {0};
        st = hf_pattern_spans(&s->pattern, t, n, &spans);
        for (size_t i = 0; i < spans.len && st == EMBER_OK; i++)
            st = spans.data[i].is_match
                     ? tok_buf_append(out, s->text, s->text_len)
                     : tok_buf_append(out, t + spans.data[i].start,
                                      spans.data[i].end - spans.data[i].start);
        hf_spans_free(&spans);
        return st;
    }
    case N_ACCENTS:
        for (size_t i = 0; i < n && st == EMBER_OK;) {
            uint32_t cp;
            size_t k = tok_utf8_char(t, n, i, &cp);
            if (!tok_is_mark(cp)) st = tok_buf_append(out, t + i, k);
            i += k;
        }
        return st;
    case N_BYTELEVEL:
        for (size_t i = 0; i < n && st == EMBER_OK; i++) {
            char c[4];
            size_t k = tok_utf8_put(tok_byte_char((uint8_t)t[i]), c);
            st = tok_buf_append(out, c, k);
        }
        return st;
    }
    return st;
}

ember_status hf_normalize(const hf_normalizer *nz, const char *text, size_t len, tok_buf *out) {
    out->len = 0;
    if (nz == NULL || nz->n == 0) return tok_buf_append(out, text, len);
    tok_buf a = {0};
    ember_status st = tok_buf_append(&a, text, len);
    for (size_t k = 0; k < nz->n && st == EMBER_OK; k++) {
        st = apply(&nz->step[k], a.data ? a.data : "", a.len, out);
        tok_buf t = a;
        a = *out;
        *out = t;
    }
    /* a holds the result */
    if (st == EMBER_OK) {
        out->len = 0;
        st = tok_buf_append(out, a.data, a.len);
    }
    tok_buf_free(&a);
    return st;
}
