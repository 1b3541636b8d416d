/*
 * hf_decoders.c — tokenizer.json decoders, run one token at a time.
 *
 * The library decodes a whole list: each decoder maps the list of token
 * strings to a new list (ByteFallback turns a run of byte tokens into one
 * string, Fuse joins everything into one, ByteLevel turns everything into
 * bytes and then one string), and the last list is concatenated. Here the
 * decoders form a chain of stages that events flow through:
 *
 *   TOKEN  a whole new token of the stage's input list (its index counts)
 *   CHUNK  more text of the current token: after Fuse or ByteLevel the list
 *          is one token that grows as tokens arrive
 *   END    the end of the text
 *
 * Each stage does to a TOKEN what the library does to a list item. On
 * CHUNKs (one token growing) a stage whose rule only looks at characters
 * (Metaspace, a one-character Replace, Strip, Fuse) works on each chunk; any
 * other holds the text until END and then works on the whole, so the output
 * always equals the library's. ByteFallback holds a run of byte tokens until
 * the run ends (an ill-formed run becomes one U+FFFD per byte, as the library
 * makes it, so no byte of it can be printed early), and ByteLevel holds the
 * bytes of a character split across tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

typedef enum {
    DEC_BYTELEVEL,
    DEC_BYTEFALLBACK,
    DEC_METASPACE,
    DEC_REPLACE,
    DEC_STRIP,
    DEC_FUSE,
    DEC_WORDPIECE,
    DEC_BPE
} dec_kind;

typedef struct dec_stage {
    dec_kind kind;
    char repl[4];     /* Metaspace: the replacement character's bytes */
    size_t repl_len;
    bool prepend;     /* Metaspace: prepend_scheme is not "never" */
    hf_pattern pattern; /* Replace */
    char *content;    /* Replace: the new text; WordPiece: prefix; BPE: suffix */
    size_t content_len;
    char strip[4];    /* Strip: the character */
    size_t strip_len;
    size_t start, stop; /* Strip */
    bool cleanup;     /* WordPiece */
} dec_stage;

struct hf_decoder {
    dec_stage stage[TOK_MAX_STAGES];
    size_t n;
    bool join_spaces; /* no decoder: tokens joined with " " */
};

typedef enum { EV_TOKEN, EV_CHUNK, EV_END } ev_kind;

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

static ember_status one_char(const ember_json *obj, const char *key, const char *where, char *out,
                             size_t *out_len) {
    const char *s;
    size_t n;
    ember_status st = hf_get_string(obj, key, &s, &n, where);
    if (st != EMBER_OK) return st;
    uint32_t cp;
    if (s == NULL || n == 0 || n > 4 || tok_utf8_char(s, n, 0, &cp) != n)
        return hf_bad(where, "expected one character");
    memcpy(out, s, n);
    *out_len = n;
    return EMBER_OK;
}

static ember_status read_prepend(const ember_json *j, const char *where, bool *prepend) {
    const char *scheme;
    size_t n;
    ember_status st = hf_get_string(j, "prepend_scheme", &scheme, &n, where);
    if (st != EMBER_OK) return st;
    if (scheme != NULL) {
        if (strcmp(scheme, "always") == 0 || strcmp(scheme, "first") == 0) *prepend = true;
        else if (strcmp(scheme, "never") == 0) *prepend = false;
        else return hf_bad(where, "prepend_scheme is not always, first or never");
        return EMBER_OK;
    }
    /* files from before prepend_scheme: add_prefix_space */
    return hf_get_bool(j, "add_prefix_space", true, prepend, where);
}

static ember_status dup_string(const ember_json *j, const char *key, const char *where,
                               const char *def, char **out, size_t *len) {
    const char *s;
    size_t n;
    ember_status st = hf_get_string(j, key, &s, &n, where);
    if (st != EMBER_OK) return st;
    if (s == NULL) {
        s = def;
        n = strlen(def);
    }
    *out = malloc(n + 1);
    if (*out == NULL) return tok_oom("decoder");
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    *len = n;
    return EMBER_OK;
}

static ember_status read_stage(hf_decoder *d, const ember_json *j, int depth);

static ember_status read_stage(hf_decoder *d, const ember_json *j, int depth) {
    const char *where = "tokenizer.json: decoder";
    const char *type;
    ember_status st = hf_type(j, where, &type);
    if (st != EMBER_OK) return st;
    if (strcmp(type, "Sequence") == 0) {
        const ember_json *list = ember_json_find(j, "decoders");
        if (ember_json_type_of(list) != EMBER_JSON_ARRAY)
            return hf_bad(where, "a Sequence without a \"decoders\" list");
        if (depth > 4) return hf_unsupported(where, "Sequences nested this deep");
        for (size_t i = 0; i < ember_json_array_size(list) && st == EMBER_OK; i++)
            st = read_stage(d, ember_json_array_at(list, i), depth + 1);
        return st;
    }
    if (d->n == TOK_MAX_STAGES) return hf_unsupported(where, "more than 8 decoders in a chain");
    dec_stage *s = &d->stage[d->n];
    memset(s, 0, sizeof *s);
    if (strcmp(type, "ByteLevel") == 0) {
        s->kind = DEC_BYTELEVEL;
    } else if (strcmp(type, "ByteFallback") == 0) {
        s->kind = DEC_BYTEFALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        s->kind = DEC_FUSE;
    } else if (strcmp(type, "Metaspace") == 0) {
        s->kind = DEC_METASPACE;
        st = one_char(j, "replacement", where, s->repl, &s->repl_len);
        if (st == EMBER_OK) st = read_prepend(j, where, &s->prepend);
    } else if (strcmp(type, "Replace") == 0) {
        s->kind = DEC_REPLACE;
        st = hf_pattern_read(ember_json_find(j, "pattern"), where, &s->pattern);
        if (st == EMBER_OK) st = dup_string(j, "content", where, "", &s->content, &s->content_len);
    } else if (strcmp(type, "Strip") == 0) {
        s->kind = DEC_STRIP;
        int64_t a = 0, b = 0;
        bool ea = false, eb = false;
        st = one_char(j, "content", where, s->strip, &s->strip_len);
        if (st == EMBER_OK && (ember_json_int64(ember_json_find(j, "start"), &a, &ea) != EMBER_OK ||
                               ember_json_int64(ember_json_find(j, "stop"), &b, &eb) != EMBER_OK ||
                               !ea || !eb || a < 0 || b < 0 || a > 1000000 || b > 1000000))
            st = hf_bad(where, "Strip needs whole numbers start and stop");
        s->start = (size_t)a;
        s->stop = (size_t)b;
    } else if (strcmp(type, "WordPiece") == 0) {
        s->kind = DEC_WORDPIECE;
        st = dup_string(j, "prefix", where, "##", &s->content, &s->content_len);
        if (st == EMBER_OK) st = hf_get_bool(j, "cleanup", true, &s->cleanup, where);
    } else if (strcmp(type, "BPEDecoder") == 0) {
        s->kind = DEC_BPE;
        st = dup_string(j, "suffix", where, "</w>", &s->content, &s->content_len);
    } else {
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                               "tokenizer.json: the %s decoder is not supported (ember has "
                               "ByteLevel, ByteFallback, Metaspace, Replace, Strip, Fuse, "
                               "WordPiece, BPEDecoder and Sequence)",
                               type);
    }
    d->n++; /* counted before a failure too, so that free releases it */
    return st;
}

ember_status hf_decoder_read(const ember_json *j, hf_decoder **out) {
    hf_decoder *d = calloc(1, sizeof *d);
    if (d == NULL) return tok_oom("decoder");
    ember_status st = EMBER_OK;
    if (j == NULL || ember_json_type_of(j) == EMBER_JSON_NULL) d->join_spaces = true;
    else st = read_stage(d, j, 0);
    if (st != EMBER_OK) {
        hf_decoder_free(d);
        return st;
    }
    *out = d;
    return EMBER_OK;
}

void hf_decoder_free(hf_decoder *d) {
    if (d == NULL) return;
    for (size_t k = 0; k < d->n; k++) {
        hf_pattern_free(&d->stage[k].pattern);
        free(d->stage[k].content);
    }
    free(d);
}

/* ------------------------------------------------------------------------ */
/* The chain                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct chain {
    const hf_decoder *d;
    tok_decode_state *st;
    tok_buf *out;
} chain;

static ember_status run(const chain *c, size_t k, ev_kind ev, const char *s, size_t n);

/* Passes text on from stage k as a new token (after Fuse-like stages the
 * first piece of text starts token 0 and the rest continue it). */
static ember_status emit(const chain *c, size_t k, ev_kind ev, const char *s, size_t n) {
    return run(c, k + 1, ev, s, n);
}

/* Whether the decoder of stage k works on chunks as they come. */
static bool chunk_safe(const dec_stage *s) {
    switch (s->kind) {
    case DEC_METASPACE:
    case DEC_STRIP:
    case DEC_FUSE:
        return true;
    case DEC_REPLACE: {
        uint32_t cp;
        return s->pattern.re == NULL && s->pattern.literal_len > 0 &&
               tok_utf8_char(s->pattern.literal, s->pattern.literal_len, 0, &cp) ==
                   s->pattern.literal_len;
    }
    default:
        return false;
    }
}

/* ---- per-token rules (the library's, for one item of the list) ---- */

/* Metaspace: the replacement character becomes a space, or nothing in the
 * first token where a prefix space was added. */
static ember_status metaspace(const dec_stage *s, bool first, const char *t, size_t n,
                              tok_buf *o) {
    for (size_t i = 0; i < n;) {
        if (n - i >= s->repl_len && memcmp(t + i, s->repl, s->repl_len) == 0) {
            ember_status st = first && s->prepend ? EMBER_OK : tok_buf_append(o, " ", 1);
            if (st != EMBER_OK) return st;
            i += s->repl_len;
            continue;
        }
        size_t j = i + 1;
        while (j < n && !(n - j >= s->repl_len && memcmp(t + j, s->repl, s->repl_len) == 0)) j++;
        ember_status st = tok_buf_append(o, t + i, j - i);
        if (st != EMBER_OK) return st;
        i = j;
    }
    return EMBER_OK;
}

static ember_status replace(const dec_stage *s, const char *t, size_t n, tok_buf *o) {
    hf_spans spans = {0};
    ember_status st = hf_pattern_spans(&s->pattern, t, n, &spans);
    for (size_t i = 0; i < spans.len && st == EMBER_OK; i++) {
        const hf_span *sp = &spans.data[i];
        st = sp->is_match ? tok_buf_append(o, s->content, s->content_len)
                          : tok_buf_append(o, t + sp->start, sp->end - sp->start);
    }
    hf_spans_free(&spans);
    return st;
}

/* Strip: up to start copies of the character from the front, up to stop
 * from the back. */
static ember_status strip(const dec_stage *s, const char *t, size_t n, tok_buf *o) {
    size_t a = 0, b = n;
    for (size_t k = 0; k < s->start && n - a >= s->strip_len &&
                       memcmp(t + a, s->strip, s->strip_len) == 0;
         k++)
        a += s->strip_len;
    for (size_t k = 0; k < s->stop && b - a >= s->strip_len &&
                       memcmp(t + b - s->strip_len, s->strip, s->strip_len) == 0;
         k++)
        b -= s->strip_len;
    return tok_buf_append(o, t + a, b - a);
}

/* WordPiece's cleanup of tokenization spaces. */
static ember_status cleanup(const char *t, size_t n, tok_buf *o) {
    static const struct { const char *from, *to; } rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    /* the library applies each rule to the whole string in turn */
    tok_buf a = {0}, b = {0};
    ember_status st = tok_buf_append(&a, t, n);
    for (size_t r = 0; r < sizeof rules / sizeof rules[0] && st == EMBER_OK; r++) {
        size_t fl = strlen(rules[r].from), tl = strlen(rules[r].to);
        b.len = 0;
        for (size_t i = 0; i < a.len && st == EMBER_OK;) {
            if (a.len - i >= fl && memcmp(a.data + i, rules[r].from, fl) == 0) {
                st = tok_buf_append(&b, rules[r].to, tl);
                i += fl;
            } else {
                st = tok_buf_append(&b, a.data + i, 1);
                i++;
            }
        }
        tok_buf t2 = a;
        a = b;
        b = t2;
    }
    if (st == EMBER_OK) st = tok_buf_append(o, a.data, a.len);
    tok_buf_free(&a);
    tok_buf_free(&b);
    return st;
}

/* "<0xHH>": the library reads the two digits in either case. */
static bool byte_token(const char *t, size_t n, uint8_t *b) {
    if (n != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>') return false;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        char c = t[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return false;
        v = v * 16 + d;
    }
    *b = (uint8_t)v;
    return true;
}

/* Whether bytes are well-formed UTF-8 as a whole. */
static bool utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_char(s, n, i, &cp);
        if (cp == TOK_INVALID_CP) return false;
        i += k;
    }
    return true;
}

/* ByteFallback: the held run of bytes goes out as one token, or as one
 * U+FFFD token a byte where it is not UTF-8. */
static ember_status flush_bytes(const chain *c, size_t k) {
    tok_buf *run_buf = &c->st->held[k];
    if (run_buf->len == 0) return EMBER_OK;
    ember_status st = EMBER_OK;
    if (utf8_valid(run_buf->data, run_buf->len)) {
        st = emit(c, k, EV_TOKEN, run_buf->data, run_buf->len);
    } else {
        for (size_t i = 0; i < run_buf->len && st == EMBER_OK; i++)
            st = emit(c, k, EV_TOKEN, "\xEF\xBF\xBD", 3);
    }
    run_buf->len = 0;
    return st;
}

/* ByteLevel: a token's characters back to the bytes they stand for (all of
 * them, or the token's own bytes where one is not a byte character). */
static ember_status bytelevel_bytes(const char *t, size_t n, tok_buf *o) {
    size_t start = o->len;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_char(t, n, i, &cp);
        int b = tok_bytelevel_byte(cp);
        if (b < 0) {
            o->len = start;
            return tok_buf_append(o, t, n);
        }
        uint8_t byte = (uint8_t)b;
        ember_status st = tok_buf_append(o, &byte, 1);
        if (st != EMBER_OK) return st;
        i += k;
    }
    return EMBER_OK;
}

/* BPEDecoder: every copy of the suffix becomes with. */
static ember_status bpe_suffix(const dec_stage *s, const char *t, size_t n, const char *with,
                               tok_buf *o) {
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        if (s->content_len > 0 && n - i >= s->content_len &&
            memcmp(t + i, s->content, s->content_len) == 0) {
            st = tok_buf_append(o, with, strlen(with));
            i += s->content_len;
        } else {
            st = tok_buf_append(o, t + i, 1);
            i++;
        }
    }
    return st;
}

/* ---- the stages ---- */

/* A stage that cannot work on chunks holds the growing token until END. */
static ember_status hold_chunk(const chain *c, size_t k, ev_kind ev, const char *s, size_t n,
                               ember_status (*rule)(const chain *, size_t, const char *, size_t,
                                                    tok_buf *)) {
    tok_buf *h = &c->st->held[k];
    if (ev == EV_CHUNK) {
        c->st->aux[k] = 1; /* a growing token is held */
        return tok_buf_append(h, s, n);
    }
    if (!c->st->aux[k]) return emit(c, k, EV_END, NULL, 0); /* whole tokens only: none held */
    /* END: the whole token, then the end */
    tok_buf o = {0};
    ember_status st = rule(c, k, h->data ? h->data : "", h->len, &o);
    if (st == EMBER_OK && (o.len > 0 || h->len > 0)) st = emit(c, k, EV_TOKEN, o.data ? o.data : "", o.len);
    h->len = 0;
    tok_buf_free(&o);
    if (st == EMBER_OK) st = emit(c, k, EV_END, NULL, 0);
    return st;
}

/* The per-token rule of stage k applied to one whole token. */
static ember_status token_rule(const chain *c, size_t k, const char *t, size_t n, tok_buf *o) {
    const dec_stage *s = &c->d->stage[k];
    bool first = c->st->count[k] == 0;
    switch (s->kind) {
    case DEC_METASPACE: return metaspace(s, first, t, n, o);
    case DEC_REPLACE: return replace(s, t, n, o);
    case DEC_STRIP: return strip(s, t, n, o);
    case DEC_WORDPIECE: {
        ember_status st = EMBER_OK;
        tok_buf tmp = {0};
        if (!first) {
            if (n >= s->content_len && memcmp(t, s->content, s->content_len) == 0) {
                t += s->content_len;
                n -= s->content_len;
            } else {
                st = tok_buf_append(&tmp, " ", 1);
            }
        }
        if (st == EMBER_OK) st = tok_buf_append(&tmp, t, n);
        if (st == EMBER_OK)
            st = s->cleanup ? cleanup(tmp.data ? tmp.data : "", tmp.len, o)
                            : tok_buf_append(o, tmp.data, tmp.len);
        tok_buf_free(&tmp);
        return st;
    }
    case DEC_BYTEFALLBACK: { /* the whole text is one token: a byte token alone */
        uint8_t b;
        if (!byte_token(t, n, &b)) return tok_buf_append(o, t, n);
        return b < 0x80 ? tok_buf_append(o, &b, 1) : tok_append_replacement(o);
    }
    case DEC_BYTELEVEL: { /* the whole text is one token */
        tok_buf bytes = {0};
        tok_utf8 u = {{0}, 0};
        ember_status st = bytelevel_bytes(t, n, &bytes);
        if (st == EMBER_OK) st = tok_utf8_push(&u, bytes.data, bytes.len, o);
        if (st == EMBER_OK) st = tok_utf8_finish(&u, o);
        tok_buf_free(&bytes);
        return st;
    }
    default: return tok_buf_append(o, t, n);
    }
}

static ember_status run(const chain *c, size_t k, ev_kind ev, const char *s, size_t n) {
    const hf_decoder *d = c->d;
    tok_decode_state *st = c->st;
    if (k == d->n) { /* the sink: the last list, concatenated */
        if (ev == EV_END) return EMBER_OK;
        if (d->join_spaces && ev == EV_TOKEN && st->count[0]++ > 0) {
            ember_status e = tok_buf_append(c->out, " ", 1);
            if (e != EMBER_OK) return e;
        }
        return tok_buf_append(c->out, s, n);
    }
    const dec_stage *sg = &d->stage[k];
    ember_status e = EMBER_OK;
    switch (sg->kind) {
    case DEC_FUSE:
        return ev == EV_END ? emit(c, k, EV_END, NULL, 0) : emit(c, k, EV_CHUNK, s, n);
    case DEC_BYTELEVEL: {
        if (st->aux[k]) return hold_chunk(c, k, ev, s, n, token_rule); /* after a fuse */
        if (ev == EV_END) {
            tok_buf o = {0};
            e = tok_utf8_finish(&st->utf8, &o);
            if (e == EMBER_OK && o.len > 0) e = emit(c, k, EV_CHUNK, o.data, o.len);
            tok_buf_free(&o);
            return e == EMBER_OK ? emit(c, k, EV_END, NULL, 0) : e;
        }
        tok_buf bytes = {0}, o = {0};
        e = bytelevel_bytes(s, n, &bytes);
        if (e == EMBER_OK) e = tok_utf8_push(&st->utf8, bytes.data, bytes.len, &o);
        if (e == EMBER_OK && o.len > 0) e = emit(c, k, EV_CHUNK, o.data, o.len);
        tok_buf_free(&bytes);
        tok_buf_free(&o);
        return e;
    }
    case DEC_BYTEFALLBACK: {
        uint8_t b;
        if (ev == EV_CHUNK) return hold_chunk(c, k, ev, s, n, token_rule);
        if (ev == EV_END) {
            if (st->aux[k]) return hold_chunk(c, k, ev, s, n, token_rule); /* chunk mode */
            e = flush_bytes(c, k);
            return e == EMBER_OK ? emit(c, k, EV_END, NULL, 0) : e;
        }
        if (byte_token(s, n, &b)) return tok_buf_append(&st->held[k], &b, 1);
        e = flush_bytes(c, k);
        return e == EMBER_OK ? emit(c, k, EV_TOKEN, s, n) : e;
    }
    case DEC_BPE: {
        /* the suffix becomes a space, or nothing in the last token: one token
         * is held until the next one (or the end) tells which */
        tok_buf *h = &st->held[k];
        if (ev == EV_CHUNK) {
            st->count[k] = 1;
            return tok_buf_append(h, s, n);
        }
        if (st->count[k]) {
            tok_buf o = {0};
            e = bpe_suffix(sg, h->data ? h->data : "", h->len, ev == EV_END ? "" : " ", &o);
            if (e == EMBER_OK) e = emit(c, k, EV_TOKEN, o.data ? o.data : "", o.len);
            tok_buf_free(&o);
            h->len = 0;
            st->count[k] = 0;
        }
        if (e != EMBER_OK) return e;
        if (ev == EV_TOKEN) {
            st->count[k] = 1;
            return tok_buf_append(h, s, n);
        }
        return emit(c, k, EV_END, NULL, 0);
    }
    default:
        break;
    }
    /* Metaspace, Replace, Strip, WordPiece: per token */
    if (ev == EV_TOKEN) {
        tok_buf o = {0};
        e = token_rule(c, k, s, n, &o);
        st->count[k]++;
        if (e == EMBER_OK) e = emit(c, k, EV_TOKEN, o.data ? o.data : "", o.len);
        tok_buf_free(&o);
        return e;
    }
    if (!chunk_safe(sg)) return hold_chunk(c, k, ev, s, n, token_rule);
    if (ev == EV_END) {
        if (sg->kind == DEC_STRIP && st->held[k].len > 0) { /* trailing characters held */
            size_t keep = st->held[k].len, drop = 0;
            while (drop < sg->stop && keep >= sg->strip_len) {
                keep -= sg->strip_len;
                drop++;
            }
            if (keep > 0) e = emit(c, k, EV_CHUNK, st->held[k].data, keep);
            st->held[k].len = 0;
        }
        return e == EMBER_OK ? emit(c, k, EV_END, NULL, 0) : e;
    }
    /* a chunk of token 0 */
    tok_buf o = {0};
    if (sg->kind == DEC_METASPACE) {
        e = metaspace(sg, true, s, n, &o);
    } else if (sg->kind == DEC_REPLACE) {
        e = replace(sg, s, n, &o);
    } else { /* Strip on a growing token: the front as it comes, the back held */
        size_t a = 0;
        while (st->aux[k] < sg->start && n - a >= sg->strip_len &&
               memcmp(s + a, sg->strip, sg->strip_len) == 0) {
            a += sg->strip_len;
            st->aux[k]++;
        }
        if (a < n) st->aux[k] = sg->start; /* the front ends at the first other character */
        tok_buf *h = &st->held[k];
        for (size_t i = a; i < n && e == EMBER_OK;) {
            if (sg->stop > 0 && n - i >= sg->strip_len && memcmp(s + i, sg->strip, sg->strip_len) == 0) {
                e = tok_buf_append(h, s + i, sg->strip_len);
                i += sg->strip_len;
                continue;
            }
            if (h->len > 0) {
                e = tok_buf_append(&o, h->data, h->len);
                h->len = 0;
            }
            if (e == EMBER_OK) e = tok_buf_append(&o, s + i, 1);
            i++;
        }
    }
    if (e == EMBER_OK && o.len > 0) e = emit(c, k, EV_CHUNK, o.data, o.len);
    tok_buf_free(&o);
    return e;
}

/* A stage's input is in chunk mode once an earlier stage fuses. */
static void mark_chunk_modes(const hf_decoder *d, tok_decode_state *st) {
    bool fused = false;
    for (size_t k = 0; k < d->n; k++) {
        if (fused && (d->stage[k].kind == DEC_BYTEFALLBACK || d->stage[k].kind == DEC_BYTELEVEL))
            st->aux[k] = 1;
        if (d->stage[k].kind == DEC_FUSE || d->stage[k].kind == DEC_BYTELEVEL) fused = true;
    }
}

ember_status hf_decoder_push(const hf_decoder *d, tok_decode_state *st, const char *token,
                             size_t len, tok_buf *out) {
    if (st->n_tokens++ == 0) mark_chunk_modes(d, st);
    chain c = {d, st, out};
    return run(&c, 0, EV_TOKEN, token, len);
}

ember_status hf_decoder_finish(const hf_decoder *d, tok_decode_state *st, tok_buf *out) {
    chain c = {d, st, out};
    if (st->n_tokens == 0) return EMBER_OK;
    return run(&c, 0, EV_END, NULL, 0);
}
