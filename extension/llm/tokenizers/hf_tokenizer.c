/*
 * hf_tokenizer.c — Hugging Face tokenizer.json.
 *
 * Encoding follows the `tokenizers` library's encode(text,
 * add_special_tokens=False):
 *   1. added tokens whose "normalized" is false are found in the text as it
 *      is (leftmost, longest; single_word, lstrip and rstrip as the library
 *      applies them); special ones only with EMBER_ENCODE_SPECIAL;
 *   2. each stretch between them is normalized, and added tokens whose
 *      "normalized" is true are found in the result;
 *   3. the remaining stretches are pre-tokenized and each piece goes
 *      through the model.
 * Decoding gives each id its token string (an added token's content, else
 * the model's) and runs the decoder chain over them (hf_decoders.c).
 */
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

typedef struct added_token {
    const char *content; /* in the document's memory until load ends, then spellings */
    size_t len;
    int32_t id;
    bool special, single_word, lstrip, rstrip, normalized;
    char *norm;          /* the normalized content (normalized tokens) */
    size_t norm_len;
} added_token;

typedef struct hf_tok {
    hf_normalizer *normalizer;
    hf_pretokenizer *pre;
    hf_model *model;
    hf_decoder *decoder;
    tok_vocab spellings;  /* every id's token string */
    added_token *added;   /* (n_added) */
    size_t n_added;
    tok_specials raw;      /* non-normalized added tokens, as matched in the text */
    tok_specials normed;   /* normalized ones, by their normalized content */
} hf_tok;

static const char *WHERE = "tokenizer.json";

/* ------------------------------------------------------------------------ */
/* Added tokens in text                                                      */
/* ------------------------------------------------------------------------ */

/* Whether the character before text[at] (or after it, ahead) is a word
 * character, as the library's \w checks. */
static bool word_before(const char *t, size_t at) {
    if (at == 0) return false;
    size_t p = at - 1;
    while (p > 0 && ((uint8_t)t[p] & 0xC0) == 0x80) p--;
    uint32_t cp;
    tok_utf8_char(t, at, p, &cp);
    return tok_is_rust_word(cp);
}

static bool word_after(const char *t, size_t n, size_t at) {
    if (at >= n) return false;
    uint32_t cp;
    tok_utf8_char(t, n, at, &cp);
    return tok_is_rust_word(cp);
}

/* White_Space characters ending at / starting at a place. */
static size_t space_run_back(const char *t, size_t at) {
    size_t p = at;
    while (p > 0) {
        size_t q = p - 1;
        while (q > 0 && ((uint8_t)t[q] & 0xC0) == 0x80) q--;
        uint32_t cp;
        tok_utf8_char(t, p, q, &cp);
        if (!tok_is_whitespace(cp)) break;
        p = q;
    }
    return p;
}

static size_t space_run_fwd(const char *t, size_t n, size_t at) {
    size_t p = at;
    while (p < n) {
        uint32_t cp;
        size_t k = tok_utf8_char(t, n, p, &cp);
        if (!tok_is_whitespace(cp)) break;
        p += k;
    }
    return p;
}

/* A stretch of text: an added token's id, or TOK_NO_ID for text. */
typedef struct stretch {
    size_t start, end;
    int32_t id;
} stretch;

typedef struct stretches {
    stretch *data;
    size_t len, cap;
} stretches;

static ember_status stretch_add(stretches *s, size_t a, size_t b, int32_t id) {
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        stretch *d = cap > s->cap ? tok_alloc_array(cap, sizeof *d) : NULL;
        if (d == NULL) return tok_oom("added tokens");
        if (s->len) memcpy(d, s->data, s->len * sizeof *d);
        free(s->data);
        s->data = d;
        s->cap = cap;
    }
    s->data[s->len++] = (stretch){a, b, id};
    return EMBER_OK;
}

static const added_token *added_of(const hf_tok *h, int32_t id) {
    for (size_t i = 0; i < h->n_added; i++)
        if (h->added[i].id == id) return &h->added[i];
    return NULL;
}

/* The library's find_matches: matches found leftmost-longest without
 * overlap; a match that is not a single word, or a special token when they
 * are not wanted, is skipped (its text stays text). */
static ember_status find_added(const hf_tok *h, const tok_specials *set, const char *t, size_t n,
                               bool specials, stretches *out) {
    out->len = 0;
    size_t from = 0, done = 0;
    ember_status st = EMBER_OK;
    while (st == EMBER_OK && set->n > 0) {
        size_t at;
        const tok_special *m;
        if (!tok_specials_next(set, t, n, from, &at, &m)) break;
        from = at + m->len;
        const added_token *a = added_of(h, m->id);
        if (a->special && !specials) continue;
        if (a->single_word && (word_before(t, at) || word_after(t, n, at + m->len))) continue;
        size_t start = at, stop = at + m->len;
        if (a->lstrip) {
            start = space_run_back(t, at);
            if (start < done) start = done;
        }
        if (a->rstrip) stop = space_run_fwd(t, n, stop);
        if (done < start) st = stretch_add(out, done, start, TOK_NO_ID);
        if (st == EMBER_OK) st = stretch_add(out, start, stop, m->id);
        done = stop;
    }
    if (st == EMBER_OK && done < n) st = stretch_add(out, done, n, TOK_NO_ID);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

/* Pre-tokenizes and tokenizes one normalized stretch. */
static ember_status model_stretch(const hf_tok *h, const char *t, size_t n, bool at_start,
                                  tok_ids *out) {
    hf_pieces in = {0}, pieces = {0};
    ember_status st = hf_pieces_add(&in, t, n, at_start);
    if (st == EMBER_OK) st = hf_pretokenize(h->pre, &in, &pieces);
    for (size_t i = 0; i < pieces.len && st == EMBER_OK; i++)
        st = hf_model_tokenize(h->model, pieces.text.data + pieces.data[i].off,
                               pieces.data[i].len, out);
    hf_pieces_free(&in);
    hf_pieces_free(&pieces);
    return st;
}

static ember_status hf_encode(const void *impl, const char *text, size_t len, unsigned flags,
                              tok_ids *out) {
    const hf_tok *h = impl;
    bool specials = (flags & EMBER_ENCODE_SPECIAL) != 0;
    stretches raw = {0}, inner = {0};
    tok_buf norm = {0};
    ember_status st = find_added(h, &h->raw, text, len, specials, &raw);
    for (size_t i = 0; i < raw.len && st == EMBER_OK; i++) {
        const stretch *r = &raw.data[i];
        if (r->id != TOK_NO_ID) {
            st = tok_ids_push(out, r->id);
            continue;
        }
        st = hf_normalize(h->normalizer, text + r->start, r->end - r->start, &norm);
        if (st == EMBER_OK) st = find_added(h, &h->normed, norm.data ? norm.data : "", norm.len, specials, &inner);
        for (size_t k = 0; k < inner.len && st == EMBER_OK; k++) {
            const stretch *s = &inner.data[k];
            if (s->id != TOK_NO_ID) st = tok_ids_push(out, s->id);
            else
                st = model_stretch(h, norm.data + s->start, s->end - s->start,
                                   r->start == 0 && s->start == 0, out);
        }
    }
    free(raw.data);
    free(inner.data);
    tok_buf_free(&norm);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */
/* ------------------------------------------------------------------------ */

static ember_status hf_decode(const void *impl, tok_decode_state *st, int32_t id, tok_buf *out) {
    const hf_tok *h = impl;
    const char *s;
    size_t n;
    if (!tok_vocab_get(&h->spellings, id, &s, &n))
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE, "token id %d is not in the vocabulary",
                               (int)id);
    return hf_decoder_push(h->decoder, st, s, n, out);
}

static ember_status hf_decode_finish(const void *impl, tok_decode_state *st, tok_buf *out) {
    const hf_tok *h = impl;
    return hf_decoder_finish(h->decoder, st, out);
}

static void hf_destroy(void *impl) {
    hf_tok *h = impl;
    if (h == NULL) return;
    hf_normalizer_free(h->normalizer);
    hf_pretokenizer_free(h->pre);
    hf_model_free(h->model);
    hf_decoder_free(h->decoder);
    tok_vocab_free(&h->spellings);
    for (size_t i = 0; i < h->n_added; i++) free(h->added[i].norm);
    free(h->added);
    free(h->raw.items);
    free(h->normed.items);
    free(h);
}

static const tok_ops HF_OPS = {hf_encode, hf_decode, hf_decode_finish, hf_destroy, NULL, NULL};

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

static ember_status read_added(hf_tok *h, const ember_json *list) {
    size_t n = ember_json_array_size(list);
    if (list != NULL && ember_json_type_of(list) != EMBER_JSON_ARRAY)
        return hf_bad(WHERE, "\"added_tokens\" is not a list");
    h->added = tok_alloc_array(n, sizeof *h->added);
    if (h->added == NULL) return tok_oom("added tokens");
    for (size_t i = 0; i < n; i++) {
        const ember_json *a = ember_json_array_at(list, i);
        added_token *t = &h->added[i];
        memset(t, 0, sizeof *t);
        int64_t id;
        bool exact;
        const char *where = "tokenizer.json: added_tokens";
        if (ember_json_int64(ember_json_find(a, "id"), &id, &exact) != EMBER_OK || !exact ||
            id < 0 || (uint64_t)id >= TOK_MAX_IDS ||
            ember_json_string(ember_json_find(a, "content"), &t->content, &t->len) != EMBER_OK)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: entry %zu needs an \"id\" and a \"content\"", where, i);
        if (t->len == 0)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: entry %zu is empty", where, i);
        t->id = (int32_t)id;
        ember_status st = hf_get_bool(a, "special", false, &t->special, where);
        if (st == EMBER_OK) st = hf_get_bool(a, "single_word", false, &t->single_word, where);
        if (st == EMBER_OK) st = hf_get_bool(a, "lstrip", false, &t->lstrip, where);
        if (st == EMBER_OK) st = hf_get_bool(a, "rstrip", false, &t->rstrip, where);
        if (st == EMBER_OK) st = hf_get_bool(a, "normalized", !t->special, &t->normalized, where);
        if (st != EMBER_OK) return st;
        h->n_added = i + 1;
    }
    return EMBER_OK;
}

/* The spellings: the model's tokens, then the added tokens' contents at
 * their ids (an added token the model has too keeps the model's entry). */
static ember_status build_spellings(hf_tok *h, size_t *n_ids) {
    const tok_vocab *mv = hf_model_vocab(h->model);
    size_t n = mv->n_ids, bytes = mv->arena_len + 1;
    for (size_t i = 0; i < h->n_added; i++) {
        if ((size_t)h->added[i].id + 1 > n) n = (size_t)h->added[i].id + 1;
        bytes += h->added[i].len;
    }
    ember_status st = tok_vocab_init(&h->spellings, n, bytes);
    for (size_t i = 0; i < h->n_added && st == EMBER_OK; i++) {
        const added_token *a = &h->added[i];
        const char *s;
        size_t sl;
        int32_t dup;
        if (tok_vocab_get(&h->spellings, a->id, &s, &sl)) {
            if (sl != a->len || memcmp(s, a->content, sl) != 0)
                st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                     "%s: added token id %d is given twice", WHERE, (int)a->id);
            continue;
        }
        if (tok_vocab_set(&h->spellings, a->id, a->content, a->len, &dup) != EMBER_OK)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: added token \"%.*s\" (id %d) is also token %d", WHERE,
                                 (int)(a->len < 60 ? a->len : 60), a->content, (int)a->id,
                                 (int)dup);
    }
    for (size_t id = 0; id < mv->n_ids && st == EMBER_OK; id++) {
        const char *s;
        size_t sl;
        int32_t dup;
        if (!tok_vocab_get(mv, (int32_t)id, &s, &sl)) continue;
        if (tok_vocab_get(&h->spellings, (int32_t)id, &s, &sl)) continue; /* an added token */
        tok_vocab_get(mv, (int32_t)id, &s, &sl);
        if (tok_vocab_find(&h->spellings, s, sl) != TOK_NO_ID) continue; /* shadowed by an added one */
        st = tok_vocab_set(&h->spellings, (int32_t)id, s, sl, &dup);
    }
    *n_ids = n;
    return st;
}

/* The matchers: non-normalized tokens by their content, normalized ones by
 * their normalized content. */
static ember_status build_matchers(hf_tok *h) {
    h->raw.items = tok_alloc_array(h->n_added, sizeof *h->raw.items);
    h->normed.items = tok_alloc_array(h->n_added, sizeof *h->normed.items);
    if (h->raw.items == NULL || h->normed.items == NULL) return tok_oom("added tokens");
    tok_buf norm = {0};
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < h->n_added && st == EMBER_OK; i++) {
        added_token *a = &h->added[i];
        /* from here on the content lives in the spellings */
        size_t sl;
        tok_vocab_get(&h->spellings, a->id, &a->content, &sl);
        if (!a->normalized) {
            h->raw.items[h->raw.n++] = (tok_special){a->content, a->len, a->id};
            continue;
        }
        st = hf_normalize(h->normalizer, a->content, a->len, &norm);
        if (st != EMBER_OK) break;
        if (norm.len == 0) continue;
        a->norm = malloc(norm.len);
        if (a->norm == NULL) {
            st = tok_oom("added tokens");
            break;
        }
        memcpy(a->norm, norm.data, norm.len);
        a->norm_len = norm.len;
        h->normed.items[h->normed.n++] = (tok_special){a->norm, a->norm_len, a->id};
    }
    tok_buf_free(&norm);
    tok_specials_index(&h->raw);
    tok_specials_index(&h->normed);
    return st;
}

ember_status tok_hf_load_json(const ember_json *root, tok_common *c) {
    if (ember_json_type_of(root) != EMBER_JSON_OBJECT || ember_json_find(root, "model") == NULL)
        return hf_bad(WHERE, "no \"model\": not a Hugging Face tokenizer.json");
    hf_tok *h = calloc(1, sizeof *h);
    if (h == NULL) return tok_oom("tokenizer.json");
    size_t n_ids = 0;
    ember_status st = hf_model_read(ember_json_find(root, "model"), &h->model);
    if (st == EMBER_OK) st = hf_normalizer_read(ember_json_find(root, "normalizer"), &h->normalizer);
    if (st == EMBER_OK) st = hf_pretokenizer_read(ember_json_find(root, "pre_tokenizer"), &h->pre);
    if (st == EMBER_OK) st = hf_decoder_read(ember_json_find(root, "decoder"), &h->decoder);
    if (st == EMBER_OK) st = read_added(h, ember_json_find(root, "added_tokens"));
    if (st == EMBER_OK) st = build_spellings(h, &n_ids);
    if (st == EMBER_OK) st = build_matchers(h);
    if (st == EMBER_OK && (c->is_special = calloc(n_ids ? n_ids : 1, sizeof *c->is_special)) == NULL)
        st = tok_oom("tokenizer.json");
    if (st != EMBER_OK) {
        hf_destroy(h);
        return st;
    }
    for (size_t i = 0; i < h->n_added; i++)
        if (h->added[i].special) c->is_special[h->added[i].id] = true;
    c->format = EMBER_TOKENIZER_HUGGINGFACE;
    c->ops = &HF_OPS;
    c->impl = h;
    c->vocab_size = n_ids;
    c->spellings = &h->spellings;
    return EMBER_OK;
}
