/*
 * hf_pretokenizers.c — tokenizer.json pre-tokenizers.
 *
 *   ByteLevel        optional prefix space, GPT-2's split pattern (use_regex),
 *                    then every byte as its byte-level character
 *   Split            a String or Regex pattern, one of five behaviours
 *                    (removed, isolated, merged_with_previous,
 *                    merged_with_next, contiguous), optionally inverted
 *   Digits           numeric characters (Unicode N) isolated, one by one or
 *                    in runs
 *   Metaspace        spaces become the replacement character, which is
 *                    prepended (always, or first: at the start of the input)
 *                    and split on (merged with the next piece)
 *   Punctuation      ASCII punctuation and Unicode P* split off
 *   Whitespace       runs of word characters and runs of other non-space
 *                    characters (the library's \w+|[^\w\s]+)
 *   WhitespaceSplit  split on White_Space, which is dropped
 *   BertPreTokenizer WhitespaceSplit, then punctuation isolated
 *   CharDelimiterSplit  split on one character, which is dropped
 *   Sequence         the above in order
 *
 * Splitting follows the library's NormalizedString::split: the text becomes
 * spans (matches and the text between), the behaviour merges or drops them,
 * and empty pieces vanish.
 */
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

typedef enum {
    P_BYTELEVEL, P_SPLIT, P_DIGITS, P_METASPACE, P_PUNCT, P_WHITESPACE, P_WSSPLIT, P_BERT,
    P_CHARSPLIT
} pre_kind;

typedef enum { B_REMOVED, B_ISOLATED, B_PREVIOUS, B_NEXT, B_CONTIGUOUS } behavior;

typedef struct pre_step {
    pre_kind kind;
    bool prefix_space, use_regex; /* ByteLevel */
    hf_pattern pattern;           /* Split; ByteLevel's GPT-2 pattern */
    behavior how;                 /* Split, Punctuation */
    bool invert;                  /* Split */
    bool individual;              /* Digits */
    char repl[4];                 /* Metaspace replacement; CharDelimiterSplit delimiter */
    size_t repl_len;
    int prepend;                  /* Metaspace: 0 never, 1 first, 2 always */
    bool split;                   /* Metaspace */
} pre_step;

#define MAX_STEPS 16

struct hf_pretokenizer {
    pre_step step[MAX_STEPS];
    size_t n;
};

static const char *WHERE = "tokenizer.json: pre_tokenizer";

/* GPT-2's pattern, which ByteLevel splits with. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

static ember_status read_behavior(const ember_json *j, behavior def, behavior *out) {
    const char *s;
    size_t n;
    ember_status st = hf_get_string(j, "behavior", &s, &n, WHERE);
    if (st != EMBER_OK) return st;
    if (s == NULL) {
        *out = def;
        return EMBER_OK;
    }
    static const struct { const char *name; behavior b; } names[] = {
        {"Removed", B_REMOVED}, {"Isolated", B_ISOLATED}, {"MergedWithPrevious", B_PREVIOUS},
        {"MergedWithNext", B_NEXT}, {"Contiguous", B_CONTIGUOUS},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(s, names[k].name) == 0) {
            *out = names[k].b;
            return EMBER_OK;
        }
    return hf_bad(WHERE, "behavior is not Removed, Isolated, MergedWithPrevious, "
                         "MergedWithNext or Contiguous");
}

static ember_status read_char(const ember_json *j, const char *key, pre_step *s) {
    const char *t;
    size_t n;
    uint32_t cp;
    ember_status st = hf_get_string(j, key, &t, &n, WHERE);
    if (st != EMBER_OK) return st;
    if (t == NULL || n == 0 || n > 4 || tok_utf8_char(t, n, 0, &cp) != n)
        return hf_bad(WHERE, "expected one character");
    memcpy(s->repl, t, n);
    s->repl_len = n;
    return EMBER_OK;
}

static ember_status read_step(hf_pretokenizer *p, const ember_json *j, int depth) {
    const char *type;
    ember_status st = hf_type(j, WHERE, &type);
    if (st != EMBER_OK) return st;
    if (strcmp(type, "Sequence") == 0) {
        const ember_json *list = ember_json_find(j, "pretokenizers");
        if (ember_json_type_of(list) != EMBER_JSON_ARRAY)
            return hf_bad(WHERE, "a Sequence without a \"pretokenizers\" list");
        if (depth > 4) return hf_unsupported(WHERE, "Sequences nested this deep");
        for (size_t i = 0; i < ember_json_array_size(list) && st == EMBER_OK; i++)
            st = read_step(p, ember_json_array_at(list, i), depth + 1);
        return st;
    }
    if (p->n == MAX_STEPS) return hf_unsupported(WHERE, "more than 16 pre-tokenizers");
    pre_step *s = &p->step[p->n];
    memset(s, 0, sizeof *s);
    if (strcmp(type, "ByteLevel") == 0) {
        s->kind = P_BYTELEVEL;
        st = hf_get_bool(j, "add_prefix_space", true, &s->prefix_space, WHERE);
        if (st == EMBER_OK) st = hf_get_bool(j, "use_regex", true, &s->use_regex, WHERE);
        if (st == EMBER_OK && s->use_regex) {
            s->pattern.re = NULL;
            st = hf_regex_compile(GPT2_PATTERN, sizeof GPT2_PATTERN - 1, &s->pattern.re);
        }
    } else if (strcmp(type, "Split") == 0) {
        s->kind = P_SPLIT;
        st = hf_pattern_read(ember_json_find(j, "pattern"), WHERE, &s->pattern);
        if (st == EMBER_OK) st = read_behavior(j, B_REMOVED, &s->how);
        if (st == EMBER_OK) st = hf_get_bool(j, "invert", false, &s->invert, WHERE);
    } else if (strcmp(type, "Digits") == 0) {
        s->kind = P_DIGITS;
        st = hf_get_bool(j, "individual_digits", false, &s->individual, WHERE);
    } else if (strcmp(type, "Metaspace") == 0) {
        s->kind = P_METASPACE;
        st = read_char(j, "replacement", s);
        const char *scheme;
        size_t sl;
        if (st == EMBER_OK) st = hf_get_string(j, "prepend_scheme", &scheme, &sl, WHERE);
        if (st == EMBER_OK) {
            if (scheme == NULL) { /* files from before prepend_scheme */
                bool add = true;
                st = hf_get_bool(j, "add_prefix_space", true, &add, WHERE);
                s->prepend = add ? 2 : 0;
            } else if (strcmp(scheme, "always") == 0) {
                s->prepend = 2;
            } else if (strcmp(scheme, "first") == 0) {
                s->prepend = 1;
            } else if (strcmp(scheme, "never") == 0) {
                s->prepend = 0;
            } else {
                st = hf_bad(WHERE, "prepend_scheme is not always, first or never");
            }
        }
        if (st == EMBER_OK) st = hf_get_bool(j, "split", true, &s->split, WHERE);
    } else if (strcmp(type, "Punctuation") == 0) {
        s->kind = P_PUNCT;
        st = read_behavior(j, B_ISOLATED, &s->how);
    } else if (strcmp(type, "Whitespace") == 0) {
        s->kind = P_WHITESPACE;
    } else if (strcmp(type, "WhitespaceSplit") == 0) {
        s->kind = P_WSSPLIT;
    } else if (strcmp(type, "BertPreTokenizer") == 0) {
        s->kind = P_BERT;
    } else if (strcmp(type, "CharDelimiterSplit") == 0) {
        s->kind = P_CHARSPLIT;
        st = read_char(j, "delimiter", s);
    } else {
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                               "%s: the %s pre-tokenizer is not supported (ember has ByteLevel, "
                               "Split, Digits, Metaspace, Punctuation, Whitespace, "
                               "WhitespaceSplit, BertPreTokenizer, CharDelimiterSplit and "
                               "Sequence)",
                               WHERE, type);
    }
    p->n++; /* counted before a failure too, so that free releases it */
    return st;
}

ember_status hf_pretokenizer_read(const ember_json *j, hf_pretokenizer **out) {
    *out = NULL;
    if (j == NULL || ember_json_type_of(j) == EMBER_JSON_NULL) return EMBER_OK;
    hf_pretokenizer *p = calloc(1, sizeof *p);
    if (p == NULL) return tok_oom("pre-tokenizer");
    ember_status st = read_step(p, j, 0);
    if (st != EMBER_OK) {
        hf_pretokenizer_free(p);
        return st;
    }
    *out = p;
    return EMBER_OK;
}

void hf_pretokenizer_free(hf_pretokenizer *p) {
    if (p == NULL) return;
    for (size_t k = 0; k < p->n; k++) hf_pattern_free(&p->step[k].pattern);
    free(p);
}

/* ------------------------------------------------------------------------ */
/* Spans and behaviours                                                      */
/* ------------------------------------------------------------------------ */

/* A character predicate as a pattern: each matching character one span. */
static ember_status char_spans(bool (*pred)(uint32_t, const pre_step *), const pre_step *s,
                               const char *t, size_t n, hf_spans *out) {
    out->len = 0;
    if (n == 0) return hf_spans_add(out, 0, 0, false, "pre-tokenizer");
    size_t last = 0;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        uint32_t cp;
        size_t k = tok_utf8_char(t, n, i, &cp);
        if (pred(cp, s)) {
            if (last < i) st = hf_spans_add(out, last, i, false, "pre-tokenizer");
            if (st == EMBER_OK) st = hf_spans_add(out, i, i + k, true, "pre-tokenizer");
            last = i + k;
        }
        i += k;
    }
    if (st == EMBER_OK && last < n) st = hf_spans_add(out, last, n, false, "pre-tokenizer");
    return st;
}

/* Cuts piece p of in by spans and behaviour into out. */
static ember_status cut(const hf_pieces *in, const hf_piece *p, hf_spans *sp, behavior how,
                        hf_pieces *out) {
    /* the behaviour's merges, as (start, end, removed) in sp itself */
    size_t w = 0;
    bool prev = false;
    if (how == B_NEXT) {
        /* folded from the back: a match joins the piece after it. The
         * result is built from the back of the array, which the fold only
         * ever reads at or below the place it writes. */
        size_t k = sp->len, top = sp->len;
        while (k-- > 0) {
            hf_span s = sp->data[k];
            bool m = s.is_match;
            if (m && !prev && top < sp->len) sp->data[top].start = s.start;
            else sp->data[--top] = (hf_span){s.start, s.end, false};
            prev = m;
        }
        w = sp->len - top;
        memmove(sp->data, sp->data + top, w * sizeof *sp->data);
    } else {
        for (size_t k = 0; k < sp->len; k++) {
            hf_span s = sp->data[k];
            bool m = s.is_match;
            switch (how) {
            case B_ISOLATED: sp->data[w++] = (hf_span){s.start, s.end, false}; break;
            case B_REMOVED: sp->data[w++] = s; break; /* is_match: removed */
            case B_CONTIGUOUS:
                if (m == prev && w > 0) sp->data[w - 1].end = s.end;
                else sp->data[w++] = (hf_span){s.start, s.end, false};
                break;
            default: /* merged with previous */
                if (m && !prev && w > 0) sp->data[w - 1].end = s.end;
                else sp->data[w++] = (hf_span){s.start, s.end, false};
                break;
            }
            prev = m;
        }
    }
    const char *t = in->text.data + p->off;
    ember_status st = EMBER_OK;
    for (size_t k = 0; k < w && st == EMBER_OK; k++) {
        hf_span s = sp->data[k];
        if (s.is_match || s.end == s.start) continue; /* removed, or empty */
        st = hf_pieces_add(out, t + s.start, s.end - s.start, p->at_start && s.start == 0);
    }
    return st;
}

static bool is_numeric(uint32_t cp, const pre_step *s) {
    (void)s;
    return tok_is_numeric(cp);
}

static bool is_punct(uint32_t cp, const pre_step *s) {
    (void)s;
    return tok_is_punctuation(cp);
}

static bool is_space(uint32_t cp, const pre_step *s) {
    (void)s;
    return tok_is_whitespace(cp);
}

static bool is_delim(uint32_t cp, const pre_step *s) {
    uint32_t d;
    tok_utf8_char(s->repl, s->repl_len, 0, &d);
    return cp == d;
}

/* Whitespace: runs of word characters, runs of other non-space ones. */
static ember_status whitespace_pieces(const hf_pieces *in, const hf_piece *p, hf_pieces *out) {
    const char *t = in->text.data + p->off;
    size_t n = p->len;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        uint32_t cp;
        size_t k = tok_utf8_char(t, n, i, &cp);
        if (tok_is_whitespace(cp)) {
            i += k;
            continue;
        }
        bool word = tok_is_rust_word(cp);
        size_t j = i + k;
        while (j < n) {
            size_t kk = tok_utf8_char(t, n, j, &cp);
            if (tok_is_whitespace(cp) || tok_is_rust_word(cp) != word) break;
            j += kk;
        }
        st = hf_pieces_add(out, t + i, j - i, p->at_start && i == 0);
        i = j;
    }
    return st;
}

/* ------------------------------------------------------------------------ */
/* Running the steps                                                         */
/* ------------------------------------------------------------------------ */

/* One step over every piece of in, into out. */
static ember_status step(const pre_step *s, const hf_pieces *in, hf_pieces *out) {
    hf_spans sp = {0};
    tok_buf tmp = {0};
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < in->len && st == EMBER_OK; i++) {
        const hf_piece *p = &in->data[i];
        const char *t = in->text.data + p->off;
        switch (s->kind) {
        case P_BYTELEVEL: {
            /* prefix space, GPT-2 split, then the bytes as characters */
            tmp.len = 0;
            if (s->prefix_space && (p->len == 0 || t[0] != ' ')) st = tok_buf_append(&tmp, " ", 1);
            if (st == EMBER_OK) st = tok_buf_append(&tmp, t, p->len);
            if (st != EMBER_OK) break;
            hf_pieces one = {0};
            st = hf_pieces_add(&one, tmp.data, tmp.len, p->at_start);
            hf_pieces split = {0};
            if (st == EMBER_OK && s->use_regex) {
                st = hf_pattern_spans(&s->pattern, one.text.data, one.text.len, &sp);
                if (st == EMBER_OK) st = cut(&one, &one.data[0], &sp, B_ISOLATED, &split);
            } else if (st == EMBER_OK) {
                st = hf_pieces_add(&split, one.text.data, one.text.len, p->at_start);
            }
            for (size_t k = 0; k < split.len && st == EMBER_OK; k++) {
                const hf_piece *q = &split.data[k];
                tmp.len = 0;
                for (size_t b = 0; b < q->len && st == EMBER_OK; b++) {
                    char c[4];
                    size_t cl = tok_utf8_put(tok_byte_char((uint8_t)split.text.data[q->off + b]), c);
                    st = tok_buf_append(&tmp, c, cl);
                }
                if (st == EMBER_OK) st = hf_pieces_add(out, tmp.data, tmp.len, q->at_start);
            }
            hf_pieces_free(&one);
            hf_pieces_free(&split);
            break;
        }
        case P_SPLIT:
            st = hf_pattern_spans(&s->pattern, t, p->len, &sp);
            if (st == EMBER_OK && s->invert)
                for (size_t k = 0; k < sp.len; k++) sp.data[k].is_match = !sp.data[k].is_match;
            if (st == EMBER_OK) st = cut(in, p, &sp, s->how, out);
            break;
        case P_DIGITS:
            st = char_spans(is_numeric, s, t, p->len, &sp);
            if (st == EMBER_OK) st = cut(in, p, &sp, s->individual ? B_ISOLATED : B_CONTIGUOUS, out);
            break;
        case P_PUNCT:
            st = char_spans(is_punct, s, t, p->len, &sp);
            if (st == EMBER_OK) st = cut(in, p, &sp, s->how, out);
            break;
        case P_WSSPLIT:
        case P_CHARSPLIT:
            st = char_spans(s->kind == P_WSSPLIT ? is_space : is_delim, s, t, p->len, &sp);
            if (st == EMBER_OK) st = cut(in, p, &sp, B_REMOVED, out);
            break;
        case P_BERT: {
            hf_pieces words = {0};
            st = char_spans(is_space, s, t, p->len, &sp);
            if (st == EMBER_OK) st = cut(in, p, &sp, B_REMOVED, &words);
            for (size_t k = 0; k < words.len && st == EMBER_OK; k++) {
                const hf_piece *q = &words.data[k];
                st = char_spans(is_punct, s, words.text.data + q->off, q->len, &sp);
                if (st == EMBER_OK) st = cut(&words, q, &sp, B_ISOLATED, out);
            }
            hf_pieces_free(&words);
            break;
        }
        case P_WHITESPACE:
            st = whitespace_pieces(in, p, out);
            break;
        case P_METASPACE: {
            /* spaces -> replacement, the prefix, then split before each */
            tmp.len = 0;
            bool starts = p->len >= s->repl_len && memcmp(t, s->repl, s->repl_len) == 0;
            bool starts_space = p->len > 0 && t[0] == ' ';
            if ((s->prepend == 2 || (s->prepend == 1 && p->at_start)) && !starts && !starts_space)
                st = tok_buf_append(&tmp, s->repl, s->repl_len);
            for (size_t b = 0; b < p->len && st == EMBER_OK; b++)
                st = t[b] == ' ' ? tok_buf_append(&tmp, s->repl, s->repl_len)
                                 : tok_buf_append(&tmp, t + b, 1);
            if (st != EMBER_OK) break;
            if (!s->split) {
                st = hf_pieces_add(out, tmp.data, tmp.len, p->at_start);
                break;
            }
            hf_pieces one = {0};
            st = hf_pieces_add(&one, tmp.data, tmp.len, p->at_start);
            /* spans of the replacement character */
            sp.len = 0;
            size_t last = 0;
            const char *u = one.text.data;
            for (size_t b = 0; b < tmp.len && st == EMBER_OK;) {
                if (tmp.len - b >= s->repl_len && memcmp(u + b, s->repl, s->repl_len) == 0) {
                    if (last < b) st = hf_spans_add(&sp, last, b, false, "pre-tokenizer");
                    if (st == EMBER_OK)
                        st = hf_spans_add(&sp, b, b + s->repl_len, true, "pre-tokenizer");
                    b += s->repl_len;
                    last = b;
                } else {
                    b++;
                }
            }
            if (st == EMBER_OK && (last < tmp.len || tmp.len == 0))
                st = hf_spans_add(&sp, last, tmp.len, false, "pre-tokenizer");
            if (st == EMBER_OK) st = cut(&one, &one.data[0], &sp, B_NEXT, out);
            hf_pieces_free(&one);
            break;
        }
        }
    }
    hf_spans_free(&sp);
    tok_buf_free(&tmp);
    return st;
}

ember_status hf_pretokenize(const hf_pretokenizer *p, const hf_pieces *in, hf_pieces *out) {
    hf_pieces_clear(out);
    if (p == NULL || p->n == 0) {
        ember_status st = EMBER_OK;
        for (size_t i = 0; i < in->len && st == EMBER_OK; i++)
            st = hf_pieces_add(out, in->text.data + in->data[i].off, in->data[i].len,
                               in->data[i].at_start);
        return st;
    }
    hf_pieces a = {0}, b = {0};
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < in->len && st == EMBER_OK; i++)
        st = hf_pieces_add(&a, in->text.data + in->data[i].off, in->data[i].len,
                           in->data[i].at_start);
    for (size_t k = 0; k < p->n && st == EMBER_OK; k++) {
        hf_pieces_clear(&b);
        st = step(&p->step[k], &a, &b);
        hf_pieces t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < a.len && st == EMBER_OK; i++)
        st = hf_pieces_add(out, a.text.data + a.data[i].off, a.data[i].len, a.data[i].at_start);
    hf_pieces_free(&a);
    hf_pieces_free(&b);
    return st;
}
