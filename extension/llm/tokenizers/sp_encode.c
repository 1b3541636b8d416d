/*
 * extension/llm/tokenizers/sp_encode.c — text to ids: normalize, segment
 * (Unigram, BPE, or here WORD and CHAR: a word or character that is not a
 * normal or user-defined piece is unknown), then the library's last step:
 * unknown pieces become their bytes' <0xNN> pieces with byte fallback, else
 * a run of unknown pieces becomes one unk id.
 */
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

bool sp_segs_push(sp_segs *s, uint32_t start, uint32_t len, int32_t id) {
    if (s->n == s->cap) {
        size_t ncap = s->cap == 0 ? 64 : s->cap * 2, bytes;
        if (!sp_mul_ok(ncap, sizeof *s->p, &bytes)) return false;
        sp_seg *p = realloc(s->p, bytes);
        if (p == NULL) return false;
        s->p = p;
        s->cap = ncap;
    }
    s->p[s->n++] = (sp_seg){start, len, id};
    return true;
}

/* CHAR: a user-defined symbol or one character per piece. */
static ember_status char_segment(const ember_sp_model *m, const uint8_t *t, size_t n,
                                 sp_segs *out) {
    for (size_t i = 0; i < n;) {
        size_t len = sp_user_match(m, t + i, n - i);
        if (len == 0) {
            len = sp_one_char_len(t[i]);
            if (len > n - i) len = n - i;
        }
        int32_t id = sp_text_piece_h(m, t + i, len, sp_hash(t + i, len), false);
        if (!sp_segs_push(out, (uint32_t)i, (uint32_t)len, id))
            return sp_oom("encoder");
        i += len;
    }
    return EMBER_OK;
}

/* WORD: a new piece at the start and at every "▁". */
static ember_status word_segment(const ember_sp_model *m, const uint8_t *t, size_t n,
                                 sp_segs *out) {
    size_t start = 0;
    for (size_t i = 0; i <= n;) {
        size_t len = 0;
        bool is_ws = false;
        if (i < n) {
            len = sp_one_char_len(t[i]);
            if (len > n - i) len = n - i;
            is_ws = len == SP_SPACE_LEN && memcmp(t + i, SP_SPACE, SP_SPACE_LEN) == 0;
        }
        if (i > start && (i == n || is_ws)) {
            size_t n_word = i - start;
            int32_t id = sp_text_piece_h(m, t + start, n_word, sp_hash(t + start, n_word), false);
            if (!sp_segs_push(out, (uint32_t)start, (uint32_t)n_word, id))
                return sp_oom("encoder");
            start = i;
        }
        if (i == n) break;
        i += len;
    }
    return EMBER_OK;
}

ember_status sp_encode_pieces(const ember_sp_model *m, const uint8_t *text, size_t len,
                              sp_buf *normalized, sp_segs *out) {
    if (!sp_normalize(&m->norm, m->has_user ? &m->user : NULL, text, len, normalized))
        return sp_oom("normalizer");
    size_t n = normalized->n;
    if (n >= (size_t)INT32_MAX)
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                               "ember_sp_encode: the normalized text has %zu bytes (at most %d)",
                               n, INT32_MAX - 1);
    const uint8_t *t = (const uint8_t *)normalized->p;
    sp_segs segs = {0};
    ember_status st;
    switch (m->model_type) {
    case EMBER_SP_MODEL_BPE: st = sp_bpe_segment(m, t, n, &segs); break;
    case EMBER_SP_MODEL_WORD: st = word_segment(m, t, n, &segs); break;
    case EMBER_SP_MODEL_CHAR: st = char_segment(m, t, n, &segs); break;
    default: st = sp_unigram_segment(m, t, n, &segs); break;
    }

    bool prev_unk = false;
    for (size_t i = 0; i < segs.n && st == EMBER_OK; i++) {
        const sp_seg *g = &segs.p[i];
        bool is_unk = m->type[g->id] == EMBER_SP_PIECE_UNKNOWN;
        if (is_unk && m->byte_fallback) {
            for (uint32_t k = 0; k < g->len && st == EMBER_OK; k++)
                if (!sp_segs_push(out, g->start + k, 1, m->byte_id[t[g->start + k]]))
                    st = sp_oom("encoder");
        } else if (is_unk && prev_unk) {
            out->p[out->n - 1].len += g->len; /* runs of unknowns become one piece */
        } else if (!sp_segs_push(out, g->start, g->len, g->id)) {
            st = sp_oom("encoder");
        }
        prev_unk = is_unk;
    }
    free(segs.p);
    return st;
}

ember_status ember_sp_encode(const ember_sp_model *m, const char *text, size_t text_len,
                             int32_t *ids, size_t cap, size_t *n_ids) {
    if (m == NULL || n_ids == NULL || (text == NULL && text_len != 0) || (ids == NULL && cap != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_encode: NULL argument");
    sp_buf norm = {0};
    sp_segs segs = {0};
    ember_status st = sp_encode_pieces(m, (const uint8_t *)(text == NULL ? "" : text), text_len,
                                       &norm, &segs);
    if (st == EMBER_OK) {
        *n_ids = segs.n;
        if (segs.n > cap)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "ember_sp_encode: %zu ids do not hold this text (it needs %zu)",
                                 cap, segs.n);
        for (size_t i = 0; st == EMBER_OK && i < segs.n; i++) ids[i] = segs.p[i].id;
    }
    free(norm.p);
    free(segs.p);
    return st;
}

ember_status ember_sp_normalize(const ember_sp_model *m, const char *text, size_t text_len,
                                char *out, size_t cap, size_t *len) {
    if (m == NULL || len == NULL || (text == NULL && text_len != 0) || (out == NULL && cap != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_normalize: NULL argument");
    sp_buf norm = {0};
    if (!sp_normalize(&m->norm, m->has_user ? &m->user : NULL,
                      (const uint8_t *)(text == NULL ? "" : text), text_len, &norm)) {
        free(norm.p);
        return sp_oom("normalizer");
    }
    *len = norm.n;
    ember_status st = EMBER_OK;
    if (norm.n >= cap)
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                             "ember_sp_normalize: %zu bytes do not hold the %zu-byte text and its "
                             "NUL",
                             cap, norm.n);
    else {
        if (norm.n > 0) memcpy(out, norm.p, norm.n);
        out[norm.n] = '\0';
    }
    free(norm.p);
    return st;
}
