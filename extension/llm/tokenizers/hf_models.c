/*
 * hf_models.c — tokenizer.json models: BPE, Unigram, WordPiece, WordLevel.
 *
 * Each turns one pre-tokenized piece into ids as the `tokenizers` library
 * does:
 *   BPE        the piece's characters (with continuing_subword_prefix and
 *              end_of_word_suffix where set) are the first symbols; a
 *              character not in the vocabulary becomes its bytes' <0xHH>
 *              tokens (byte_fallback) or the unknown token (consecutive ones
 *              fused with fuse_unk) or nothing; then tok_bpe_merge by the
 *              merges' ranks. ignore_merges: a piece that is a token as a
 *              whole is that token.
 *   Unigram    the best-scoring segmentation (Viterbi over every vocabulary
 *              piece that starts at each character), a character no piece
 *              covers scoring min_score - 10 as the unknown token, runs of
 *              unknown fused, then byte fallback for them where set.
 *   WordPiece  greedy longest match from the left, later pieces with the
 *              "##" prefix; a word it cannot cover, or one longer than
 *              max_input_chars_per_word characters, is the unknown token.
 *   WordLevel  the piece's id, or the unknown token.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"

typedef enum { M_BPE, M_UNIGRAM, M_WORDPIECE, M_WORDLEVEL } model_kind;

struct hf_model {
    model_kind kind;
    tok_vocab vocab;
    int32_t unk_id;        /* TOK_NO_ID where there is none */
    bool byte_fallback, fuse_unk, ignore_merges;
    char *prefix;          /* BPE continuing_subword_prefix, WordPiece's prefix */
    size_t prefix_len;
    char *suffix;          /* BPE end_of_word_suffix */
    size_t suffix_len;
    int32_t byte_id[256];  /* the <0xHH> tokens (TOK_NO_ID where missing) */
    tok_pairs merges;      /* BPE */
    double *scores;        /* Unigram: (vocab.n_ids) */
    double min_score;
    size_t max_piece;      /* Unigram: bytes of the longest piece */
    size_t max_chars;      /* WordPiece: max_input_chars_per_word */
};

static const char *WHERE = "tokenizer.json: model";

static ember_status dup_member(const ember_json *j, const char *key, char **out, size_t *len) {
    const char *s;
    size_t n;
    ember_status st = hf_get_string(j, key, &s, &n, WHERE);
    *out = NULL;
    *len = 0;
    if (st != EMBER_OK || s == NULL) return st;
    *out = malloc(n + 1);
    if (*out == NULL) return tok_oom("model");
    memcpy(*out, s, n + 1);
    *len = n;
    return EMBER_OK;
}

/* The id of the "unk_token" member (a string) where the model has one. */
static ember_status unk_by_name(hf_model *m, const ember_json *j) {
    const char *s;
    size_t n;
    ember_status st = hf_get_string(j, "unk_token", &s, &n, WHERE);
    if (st != EMBER_OK || s == NULL) return st;
    m->unk_id = tok_vocab_find(&m->vocab, s, n);
    if (m->unk_id == TOK_NO_ID)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: the unk_token \"%.*s\" is not in the vocabulary", WHERE,
                               (int)(n < 60 ? n : 60), s);
    return EMBER_OK;
}

/* Ids of the "<0xHH>" tokens. */
static void find_byte_ids(hf_model *m) {
    for (int b = 0; b < 256; b++) {
        char name[7];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = tok_vocab_find(&m->vocab, name, 6);
    }
}

/* {"token": id, ...} into m->vocab. */
static ember_status read_vocab_object(hf_model *m, const ember_json *vocab) {
    if (ember_json_type_of(vocab) != EMBER_JSON_OBJECT)
        return hf_bad(WHERE, "\"vocab\" is not an object of token: id");
    size_t n = ember_json_object_size(vocab), n_ids = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t kl;
        int64_t id;
        bool exact;
        const ember_json *v = ember_json_object_at(vocab, i, NULL, &kl);
        if (ember_json_int64(v, &id, &exact) != EMBER_OK || !exact || id < 0 ||
            (uint64_t)id >= TOK_MAX_IDS)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: vocab entry %zu: the id is not a whole number in 0 .. %zu",
                                   WHERE, i, TOK_MAX_IDS - 1);
        if ((size_t)id + 1 > n_ids) n_ids = (size_t)id + 1;
        bytes += kl;
    }
    ember_status st = tok_vocab_init(&m->vocab, n_ids, bytes + 1);
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        const char *key;
        size_t kl;
        int64_t id;
        int32_t dup;
        ember_json_int64(ember_json_object_at(vocab, i, &key, &kl), &id, NULL);
        if (tok_vocab_set(&m->vocab, (int32_t)id, key, kl, &dup) != EMBER_OK)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: vocab entry \"%.*s\" (id %lld) repeats id or token %d",
                                 WHERE, (int)(kl < 60 ? kl : 60), key, (long long)id, (int)dup);
    }
    return st;
}

/* One merge: "a b" or ["a", "b"]. */
static ember_status merge_parts(const ember_json *item, size_t rank, const char **a, size_t *an,
                                const char **b, size_t *bn) {
    const char *s;
    size_t n;
    if (ember_json_type_of(item) == EMBER_JSON_ARRAY && ember_json_array_size(item) == 2 &&
        ember_json_string(ember_json_array_at(item, 0), a, an) == EMBER_OK &&
        ember_json_string(ember_json_array_at(item, 1), b, bn) == EMBER_OK)
        return EMBER_OK;
    if (ember_json_string(item, &s, &n) == EMBER_OK) {
        const char *sp = memchr(s, ' ', n);
        if (sp != NULL && memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)) == NULL) {
            *a = s;
            *an = (size_t)(sp - s);
            *b = sp + 1;
            *bn = n - *an - 1;
            return EMBER_OK;
        }
    }
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                           "%s: merge %zu is not \"left right\" or [\"left\", \"right\"]", WHERE,
                           rank);
}

static ember_status read_bpe(hf_model *m, const ember_json *j) {
    ember_status st = read_vocab_object(m, ember_json_find(j, "vocab"));
    if (st == EMBER_OK) st = unk_by_name(m, j);
    if (st == EMBER_OK) st = hf_get_bool(j, "byte_fallback", false, &m->byte_fallback, WHERE);
    if (st == EMBER_OK) st = hf_get_bool(j, "fuse_unk", false, &m->fuse_unk, WHERE);
    if (st == EMBER_OK) st = hf_get_bool(j, "ignore_merges", false, &m->ignore_merges, WHERE);
    if (st == EMBER_OK) st = dup_member(j, "continuing_subword_prefix", &m->prefix, &m->prefix_len);
    if (st == EMBER_OK) st = dup_member(j, "end_of_word_suffix", &m->suffix, &m->suffix_len);
    const ember_json *dropout = ember_json_find(j, "dropout");
    double p = 0;
    if (st == EMBER_OK && dropout != NULL && ember_json_type_of(dropout) != EMBER_JSON_NULL &&
        (ember_json_number(dropout, &p) != EMBER_OK || p != 0.0))
        st = hf_unsupported(WHERE, "BPE dropout (sampling) at encode");
    const ember_json *merges = ember_json_find(j, "merges");
    size_t n = ember_json_array_size(merges);
    if (st == EMBER_OK && merges != NULL && ember_json_type_of(merges) != EMBER_JSON_ARRAY)
        st = hf_bad(WHERE, "\"merges\" is not a list");
    if (st == EMBER_OK) st = tok_pairs_init(&m->merges, n);
    tok_buf merged = {0};
    for (size_t r = 0; r < n && st == EMBER_OK; r++) {
        const char *a, *b;
        size_t an, bn;
        st = merge_parts(ember_json_array_at(merges, r), r, &a, &an, &b, &bn);
        if (st != EMBER_OK) break;
        int32_t ia = tok_vocab_find(&m->vocab, a, an), ib = tok_vocab_find(&m->vocab, b, bn);
        /* the merged token: b loses its continuing prefix */
        size_t skip = m->prefix_len && bn >= m->prefix_len &&
                              memcmp(b, m->prefix, m->prefix_len) == 0
                          ? m->prefix_len
                          : 0;
        merged.len = 0;
        st = tok_buf_append(&merged, a, an);
        if (st == EMBER_OK) st = tok_buf_append(&merged, b + skip, bn - skip);
        if (st != EMBER_OK) break;
        int32_t im = tok_vocab_find(&m->vocab, merged.data ? merged.data : "", merged.len);
        if (ia == TOK_NO_ID || ib == TOK_NO_ID || im == TOK_NO_ID)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: merge %zu (\"%.*s\" + \"%.*s\") names a token that is not "
                                 "in the vocabulary",
                                 WHERE, r, (int)(an < 40 ? an : 40), a, (int)(bn < 40 ? bn : 40), b);
        else
            tok_pairs_add(&m->merges, ia, ib, (uint32_t)r, im);
    }
    tok_buf_free(&merged);
    find_byte_ids(m);
    return st;
}

static ember_status read_unigram(hf_model *m, const ember_json *j) {
    const ember_json *vocab = ember_json_find(j, "vocab");
    if (ember_json_type_of(vocab) != EMBER_JSON_ARRAY)
        return hf_bad(WHERE, "a Unigram \"vocab\" is a list of [piece, score]");
    size_t n = ember_json_array_size(vocab), bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t sl;
        double score;
        const ember_json *e = ember_json_array_at(vocab, i);
        if (ember_json_array_size(e) != 2 ||
            ember_json_string(ember_json_array_at(e, 0), &s, &sl) != EMBER_OK ||
            ember_json_number(ember_json_array_at(e, 1), &score) != EMBER_OK || !isfinite(score))
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: vocab entry %zu is not [piece, score]", WHERE, i);
        bytes += sl;
    }
    if (n == 0) return hf_bad(WHERE, "the Unigram vocabulary is empty");
    ember_status st = tok_vocab_init(&m->vocab, n, bytes + 1);
    if (st == EMBER_OK && (m->scores = tok_alloc_array(n, sizeof *m->scores)) == NULL)
        st = tok_oom("model");
    m->min_score = INFINITY;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        const char *s;
        size_t sl;
        int32_t dup;
        const ember_json *e = ember_json_array_at(vocab, i);
        ember_json_string(ember_json_array_at(e, 0), &s, &sl);
        ember_json_number(ember_json_array_at(e, 1), &m->scores[i]);
        if (m->scores[i] < m->min_score) m->min_score = m->scores[i];
        if (sl > m->max_piece) m->max_piece = sl;
        if (tok_vocab_set(&m->vocab, (int32_t)i, s, sl, &dup) != EMBER_OK)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: piece \"%.*s\" (id %zu) repeats piece %d", WHERE,
                                 (int)(sl < 60 ? sl : 60), s, i, (int)dup);
    }
    const ember_json *unk = ember_json_find(j, "unk_id");
    int64_t uid;
    bool exact;
    if (st == EMBER_OK && unk != NULL && ember_json_type_of(unk) != EMBER_JSON_NULL) {
        if (ember_json_int64(unk, &uid, &exact) != EMBER_OK || !exact || uid < 0 ||
            (uint64_t)uid >= n)
            st = hf_bad(WHERE, "unk_id is not an id of the vocabulary");
        else
            m->unk_id = (int32_t)uid;
    }
    if (st == EMBER_OK) st = hf_get_bool(j, "byte_fallback", false, &m->byte_fallback, WHERE);
    m->fuse_unk = true; /* the library always fuses Unigram's unknown runs */
    find_byte_ids(m);
    return st;
}

static ember_status read_wordpiece(hf_model *m, const ember_json *j) {
    ember_status st = read_vocab_object(m, ember_json_find(j, "vocab"));
    if (st == EMBER_OK) st = unk_by_name(m, j);
    if (st == EMBER_OK) st = dup_member(j, "continuing_subword_prefix", &m->prefix, &m->prefix_len);
    if (st == EMBER_OK && m->prefix == NULL) {
        m->prefix = malloc(3);
        if (m->prefix == NULL) return tok_oom("model");
        memcpy(m->prefix, "##", 3);
        m->prefix_len = 2;
    }
    m->max_chars = 100;
    const ember_json *mx = ember_json_find(j, "max_input_chars_per_word");
    int64_t v;
    bool exact;
    if (st == EMBER_OK && mx != NULL) {
        if (ember_json_int64(mx, &v, &exact) != EMBER_OK || !exact || v < 0)
            st = hf_bad(WHERE, "max_input_chars_per_word is not a whole number");
        else
            m->max_chars = (size_t)v;
    }
    return st;
}

ember_status hf_model_read(const ember_json *j, hf_model **out) {
    const char *type;
    ember_status st = hf_type(j, WHERE, &type);
    if (st != EMBER_OK) return st;
    hf_model *m = calloc(1, sizeof *m);
    if (m == NULL) return tok_oom("model");
    m->unk_id = TOK_NO_ID;
    if (strcmp(type, "BPE") == 0) {
        m->kind = M_BPE;
        st = read_bpe(m, j);
    } else if (strcmp(type, "Unigram") == 0) {
        m->kind = M_UNIGRAM;
        st = read_unigram(m, j);
    } else if (strcmp(type, "WordPiece") == 0) {
        m->kind = M_WORDPIECE;
        st = read_wordpiece(m, j);
    } else if (strcmp(type, "WordLevel") == 0) {
        m->kind = M_WORDLEVEL;
        st = read_vocab_object(m, ember_json_find(j, "vocab"));
        if (st == EMBER_OK) st = unk_by_name(m, j);
    } else {
        st = ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                             "%s: the %s model is not supported (ember has BPE, Unigram, "
                             "WordPiece and WordLevel)",
                             WHERE, type);
    }
    if (st != EMBER_OK) {
        hf_model_free(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void hf_model_free(hf_model *m) {
    if (m == NULL) return;
    tok_vocab_free(&m->vocab);
    tok_pairs_free(&m->merges);
    free(m->scores);
    free(m->prefix);
    free(m->suffix);
    free(m);
}

const tok_vocab *hf_model_vocab(const hf_model *m) { return &m->vocab; }

/* ------------------------------------------------------------------------ */
/* BPE                                                                       */
/* ------------------------------------------------------------------------ */

static bool bpe_rank(const void *ctx, int32_t left, int32_t right, uint32_t *rank,
                     int32_t *merged) {
    const tok_pair_slot *s = tok_pairs_find(ctx, left, right);
    if (s == NULL) return false;
    *rank = s->rank;
    *merged = s->merged;
    return true;
}

/* Flushes a pending unknown token into syms. */
static ember_status add_unk(tok_ids *syms, int32_t *pending) {
    if (*pending == TOK_NO_ID) return EMBER_OK;
    ember_status st = tok_ids_push(syms, *pending);
    *pending = TOK_NO_ID;
    return st;
}

static ember_status bpe_tokenize(const hf_model *m, const char *p, size_t n, tok_ids *out) {
    if (n == 0) return EMBER_OK;
    if (m->ignore_merges) {
        int32_t whole = tok_vocab_find(&m->vocab, p, n);
        if (whole != TOK_NO_ID) return tok_ids_push(out, whole);
    }
    tok_ids syms = {0};
    tok_buf sym = {0};
    int32_t unk = TOK_NO_ID;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        uint32_t cp;
        size_t k = tok_utf8_char(p, n, i, &cp);
        bool first = i == 0, last = i + k == n;
        sym.len = 0;
        if (!first && m->prefix_len) st = tok_buf_append(&sym, m->prefix, m->prefix_len);
        if (st == EMBER_OK) st = tok_buf_append(&sym, p + i, k);
        if (st == EMBER_OK && last && m->suffix_len) st = tok_buf_append(&sym, m->suffix, m->suffix_len);
        if (st != EMBER_OK) break;
        int32_t id = tok_vocab_find(&m->vocab, sym.data, sym.len);
        if (id != TOK_NO_ID) {
            st = add_unk(&syms, &unk);
            if (st == EMBER_OK) st = tok_ids_push(&syms, id);
        } else {
            bool bytes_ok = m->byte_fallback;
            for (size_t b = 0; b < sym.len && bytes_ok; b++)
                bytes_ok = m->byte_id[(uint8_t)sym.data[b]] != TOK_NO_ID;
            if (bytes_ok) { /* the library does not flush a pending unknown here */
                for (size_t b = 0; b < sym.len && st == EMBER_OK; b++)
                    st = tok_ids_push(&syms, m->byte_id[(uint8_t)sym.data[b]]);
            } else if (m->unk_id != TOK_NO_ID) {
                if (unk == TOK_NO_ID || !m->fuse_unk) st = add_unk(&syms, &unk);
                unk = m->unk_id;
            }
        }
        i += k;
    }
    if (st == EMBER_OK) st = add_unk(&syms, &unk);
    size_t cnt = syms.len;
    if (st == EMBER_OK) st = tok_bpe_merge(syms.data, &cnt, bpe_rank, &m->merges);
    for (size_t i = 0; i < cnt && st == EMBER_OK; i++) st = tok_ids_push(out, syms.data[i]);
    tok_ids_free(&syms);
    tok_buf_free(&sym);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Unigram                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct best_node {
    double score;
    size_t from; /* SIZE_MAX: not reached */
    int32_t id;
} best_node;

static ember_status push_piece(const hf_model *m, const char *s, size_t n, tok_ids *out) {
    int32_t id = tok_vocab_find(&m->vocab, s, n);
    if (id != TOK_NO_ID) return tok_ids_push(out, id);
    if (m->byte_fallback) {
        bool ok = true;
        for (size_t b = 0; b < n && ok; b++) ok = m->byte_id[(uint8_t)s[b]] != TOK_NO_ID;
        if (ok) {
            ember_status st = EMBER_OK;
            for (size_t b = 0; b < n && st == EMBER_OK; b++)
                st = tok_ids_push(out, m->byte_id[(uint8_t)s[b]]);
            return st;
        }
    }
    if (m->unk_id == TOK_NO_ID)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "tokenizer.json: the Unigram model has no unk_id for \"%.*s\"",
                               (int)(n < 40 ? n : 40), s);
    return tok_ids_push(out, m->unk_id);
}

static ember_status unigram_tokenize(const hf_model *m, const char *p, size_t n, tok_ids *out) {
    if (n == 0) return EMBER_OK;
    best_node *best = tok_alloc_array(n + 1, sizeof *best);
    if (best == NULL) return tok_oom("Unigram lattice");
    for (size_t i = 0; i <= n; i++) best[i] = (best_node){0.0, SIZE_MAX, TOK_NO_ID};
    best[0].from = 0;
    double unk_score = m->min_score - 10.0;
    for (size_t at = 0; at < n;) {
        uint32_t cp;
        size_t mb = tok_utf8_char(p, n, at, &cp);
        double here = best[at].score;
        bool single = false;
        /* every vocabulary piece starting here, shortest first */
        for (size_t len = 1; len <= m->max_piece && at + len <= n; len++) {
            int32_t id = tok_vocab_find(&m->vocab, p + at, len);
            if (id == TOK_NO_ID) continue;
            double cand = here + m->scores[id];
            best_node *t = &best[at + len];
            if (t->from == SIZE_MAX || cand > t->score) *t = (best_node){cand, at, id};
            if (len == mb) single = true;
        }
        if (!single) {
            best_node *t = &best[at + mb];
            double cand = here + unk_score;
            if (t->from == SIZE_MAX || cand > t->score) *t = (best_node){cand, at, m->unk_id};
        }
        at += mb;
    }
    /* back from the end; the unknown runs fused, then each piece's ids */
    size_t count = 0;
    for (size_t e = n; e > 0; e = best[e].from) count++;
    size_t *cut = tok_alloc_array(count + 1, sizeof *cut);
    int32_t *ids = tok_alloc_array(count, sizeof *ids);
    ember_status st = EMBER_OK;
    if (cut == NULL || ids == NULL) st = tok_oom("Unigram lattice");
    size_t k = count;
    for (size_t e = n; e > 0 && st == EMBER_OK; e = best[e].from) {
        cut[k] = e;
        ids[--k] = best[e].id;
    }
    if (st == EMBER_OK) cut[0] = 0;
    for (size_t i = 0; i < count && st == EMBER_OK;) {
        size_t j = i + 1;
        if (ids[i] == m->unk_id && m->unk_id != TOK_NO_ID && m->fuse_unk)
            while (j < count && ids[j] == m->unk_id) j++;
        st = push_piece(m, p + cut[i], cut[j] - cut[i], out);
        i = j;
    }
    free(cut);
    free(ids);
    free(best);
    return st;
}

/* ------------------------------------------------------------------------ */
/* WordPiece, WordLevel                                                      */
/* ------------------------------------------------------------------------ */

static ember_status unk_or_fail(const hf_model *m, tok_ids *out) {
    if (m->unk_id == TOK_NO_ID)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "tokenizer.json: a word has no token and the model no unk_token");
    return tok_ids_push(out, m->unk_id);
}

static ember_status wordpiece_tokenize(const hf_model *m, const char *p, size_t n, tok_ids *out) {
    size_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        uint32_t cp;
        i += tok_utf8_char(p, n, i, &cp);
    }
    if (chars > m->max_chars) return unk_or_fail(m, out);
    tok_ids found = {0};
    tok_buf sub = {0};
    ember_status st = EMBER_OK;
    bool bad = false;
    for (size_t start = 0; start < n && st == EMBER_OK && !bad;) {
        size_t end = n;
        int32_t cur = TOK_NO_ID;
        while (start < end && st == EMBER_OK) {
            sub.len = 0;
            if (start > 0) st = tok_buf_append(&sub, m->prefix, m->prefix_len);
            if (st == EMBER_OK) st = tok_buf_append(&sub, p + start, end - start);
            if (st != EMBER_OK) break;
            cur = tok_vocab_find(&m->vocab, sub.data, sub.len);
            if (cur != TOK_NO_ID) break;
            /* one character shorter */
            do end--;
            while (end > start && ((uint8_t)p[end] & 0xC0) == 0x80);
        }
        if (cur == TOK_NO_ID) bad = true;
        else if (st == EMBER_OK) st = tok_ids_push(&found, cur);
        start = end;
    }
    if (st == EMBER_OK) {
        if (bad) st = unk_or_fail(m, out);
        for (size_t i = 0; i < found.len && st == EMBER_OK && !bad; i++)
            st = tok_ids_push(out, found.data[i]);
    }
    tok_ids_free(&found);
    tok_buf_free(&sub);
    return st;
}

ember_status hf_model_tokenize(const hf_model *m, const char *piece, size_t len, tok_ids *out) {
    switch (m->kind) {
    case M_BPE: return bpe_tokenize(m, piece, len, out);
    case M_UNIGRAM: return unigram_tokenize(m, piece, len, out);
    case M_WORDPIECE: return len == 0 ? EMBER_OK : wordpiece_tokenize(m, piece, len, out);
    default: {
        if (len == 0) return EMBER_OK;
        int32_t id = tok_vocab_find(&m->vocab, piece, len);
        return id != TOK_NO_ID ? tok_ids_push(out, id) : unk_or_fail(m, out);
    }
    }
}
