/*
 * hf_common.c — what the tokenizer.json stages share: member reads with
 * messages, String/Regex patterns and their spans, piece lists.
 */
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

ember_status hf_bad(const char *where, const char *what) {
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: %s", where, what);
}

ember_status hf_unsupported(const char *where, const char *what) {
    return ember_error_set(EMBER_ERR_NOT_SUPPORTED, "%s: %s is not supported", where, what);
}

ember_status hf_get_bool(const ember_json *obj, const char *key, bool def, bool *out,
                         const char *where) {
    const ember_json *v = ember_json_find(obj, key);
    if (v == NULL || ember_json_type_of(v) == EMBER_JSON_NULL) {
        *out = def;
        return EMBER_OK;
    }
    if (ember_json_bool(v, out) != EMBER_OK)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: \"%s\" is not true or false", where,
                               key);
    return EMBER_OK;
}

ember_status hf_get_string(const ember_json *obj, const char *key, const char **s, size_t *len,
                           const char *where) {
    const ember_json *v = ember_json_find(obj, key);
    *s = NULL;
    *len = 0;
    if (v == NULL || ember_json_type_of(v) == EMBER_JSON_NULL) return EMBER_OK;
    if (ember_json_string(v, s, len) != EMBER_OK)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: \"%s\" is not a string", where,
                               key);
    return EMBER_OK;
}

ember_status hf_type(const ember_json *obj, const char *where, const char **type) {
    size_t n;
    if (ember_json_type_of(obj) != EMBER_JSON_OBJECT)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: expected an object", where);
    if (ember_json_string(ember_json_find(obj, "type"), type, &n) != EMBER_OK)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: no \"type\"", where);
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Patterns                                                                  */
/* ------------------------------------------------------------------------ */

ember_status hf_regex_compile(const char *pattern, size_t len, ember_regex **out) {
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = EMBER_REGEX_MULTILINE;
    return ember_regex_compile_ex(pattern, len, &o, out);
}

ember_status hf_pattern_read(const ember_json *j, const char *where, hf_pattern *p) {
    memset(p, 0, sizeof *p);
    const char *s;
    size_t n;
    const ember_json *lit = ember_json_find(j, "String"), *re = ember_json_find(j, "Regex");
    if (lit != NULL && ember_json_string(lit, &s, &n) == EMBER_OK) {
        p->literal = malloc(n + 1);
        if (p->literal == NULL) return tok_oom("pattern");
        memcpy(p->literal, s, n + 1);
        p->literal_len = n;
        return EMBER_OK;
    }
    if (re != NULL && ember_json_string(re, &s, &n) == EMBER_OK) {
        ember_status st = hf_regex_compile(s, n, &p->re);
        if (st != EMBER_OK)
            return ember_error_set(st, "%s: the pattern /%.*s/: %s", where,
                                   (int)(n < 120 ? n : 120), s, ember_last_error());
        return EMBER_OK;
    }
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                           "%s: a pattern is {\"String\": ...} or {\"Regex\": ...}", where);
}

void hf_pattern_free(hf_pattern *p) {
    free(p->literal);
    ember_regex_destroy(p->re);
    memset(p, 0, sizeof *p);
}

ember_status hf_spans_add(hf_spans *s, size_t a, size_t b, bool m, const char *what) {
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        hf_span *d = cap > s->cap ? tok_alloc_array(cap, sizeof *d) : NULL;
        if (d == NULL) return tok_oom(what);
        if (s->len) memcpy(d, s->data, s->len * sizeof *d);
        free(s->data);
        s->data = d;
        s->cap = cap;
    }
    s->data[s->len++] = (hf_span){a, b, m};
    return EMBER_OK;
}

ember_status hf_pattern_spans(const hf_pattern *p, const char *text, size_t len, hf_spans *out) {
    out->len = 0;
    if (len == 0) return hf_spans_add(out, 0, 0, false, "pattern");
    if (p->re == NULL && p->literal_len == 0) return hf_spans_add(out, 0, len, false, "pattern");
    size_t prev = 0, pos = 0;
    ember_status st = EMBER_OK;
    while (pos <= len && st == EMBER_OK) {
        size_t ms, me;
        bool found = false;
        if (p->re != NULL) {
            st = ember_regex_search(p->re, text, len, pos, &ms, &me, &found);
        } else {
            for (size_t i = pos; i + p->literal_len <= len && !found; i++)
                if (memcmp(text + i, p->literal, p->literal_len) == 0) {
                    found = true;
                    ms = i;
                    me = i + p->literal_len;
                }
        }
        if (st != EMBER_OK || !found) break;
        if (prev != ms) st = hf_spans_add(out, prev, ms, false, "pattern");
        if (st == EMBER_OK) st = hf_spans_add(out, ms, me, true, "pattern");
        prev = me;
        if (me > ms) {
            pos = me;
        } else { /* an empty match: search again one character on */
            if (ms >= len) break;
            uint32_t cp;
            pos = ms + tok_utf8_char(text, len, ms, &cp);
        }
    }
    if (st == EMBER_OK && prev != len) st = hf_spans_add(out, prev, len, false, "pattern");
    return st;
}

void hf_spans_free(hf_spans *s) {
    free(s->data);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------------ */
/* Pieces                                                                    */
/* ------------------------------------------------------------------------ */

ember_status hf_pieces_add(hf_pieces *p, const char *bytes, size_t n, bool at_start) {
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        hf_piece *d = cap > p->cap ? tok_alloc_array(cap, sizeof *d) : NULL;
        if (d == NULL) return tok_oom("pieces");
        if (p->len) memcpy(d, p->data, p->len * sizeof *d);
        free(p->data);
        p->data = d;
        p->cap = cap;
    }
    size_t off = p->text.len;
    ember_status st = tok_buf_append(&p->text, bytes, n);
    if (st != EMBER_OK) return st;
    p->data[p->len++] = (hf_piece){off, n, at_start};
    return EMBER_OK;
}

void hf_pieces_clear(hf_pieces *p) {
    p->len = 0;
    p->text.len = 0;
}

void hf_pieces_free(hf_pieces *p) {
    tok_buf_free(&p->text);
    free(p->data);
    memset(p, 0, sizeof *p);
}
