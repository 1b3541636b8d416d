/*
 * extension/llm/tokenizers/sp_decode.c — ids to text, whole or streaming.
 *
 * The library decodes piece by piece: a run of byte pieces is collected and
 * read as UTF-8 (a valid character gives its bytes, each byte that starts no
 * valid character gives U+FFFD); control pieces give nothing; the unk piece
 * gives the unk surface; other pieces give their spelling with "▁" as a
 * space. While nothing has been written (and no earlier piece dropped one),
 * a piece loses one leading "▁" when the model adds a dummy prefix or
 * removes extra whitespace. The whole-sequence decode then applies the
 * model's denormalizer, if it has one.
 *
 * The streaming decoder runs the same state machine, holding back at most
 * the bytes of one unfinished UTF-8 character.
 */
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

#define REPLACEMENT_CHAR "\xEF\xBF\xBD" /* U+FFFD */

typedef struct dec_state {
    bool is_bos_ws;     /* the next piece may still drop a leading "▁" */
    bool bos_ws_seen;   /* the previous piece dropped one */
    size_t written;     /* bytes of text so far */
    uint8_t held[4];    /* byte pieces not yet decided */
    size_t n_held;
} dec_state;

static void state_reset(dec_state *s) {
    memset(s, 0, sizeof *s);
    s->is_bos_ws = true;
}

static bool emit(dec_state *s, sp_buf *out, const void *p, size_t n) {
    s->written += n;
    return sp_buf_put(out, p, n);
}

/* Decides the held bytes that can be decided; with end_of_run, all. */
static bool drain(dec_state *s, sp_buf *out, bool end_of_run) {
    while (s->n_held > 0) {
        size_t want = sp_utf8_want(s->held[0]);
        if (!end_of_run && want > s->n_held) break; /* the character may go on */
        size_t len = sp_utf8_valid_len(s->held, s->n_held);
        bool ok = len > 0 ? emit(s, out, s->held, len) : emit(s, out, REPLACEMENT_CHAR, 3);
        if (!ok) return false;
        if (len == 0) len = 1;
        memmove(s->held, s->held + len, s->n_held - len);
        s->n_held -= len;
    }
    return true;
}

/* Decodes one (checked) id. */
static bool step(const ember_sp_model *m, dec_state *s, int32_t id, sp_buf *out) {
    const sp_dec_entry *e = &m->dec[id];
    if (e->kind == SP_DEC_BYTE) {
        s->held[s->n_held++] = e->byte;
        return drain(s, out, false);
    }
    if (!drain(s, out, true)) return false;
    if (s->bos_ws_seen || s->written > 0) s->is_bos_ws = false;
    bool dropped = false;
    switch (e->kind) {
    case SP_DEC_CONTROL: break;
    case SP_DEC_UNKNOWN:
        if (!emit(s, out, m->unk_surface, m->unk_surface_len)) return false;
        break;
    default: {
        const char *p = m->surfaces + e->off;
        size_t n = e->len;
        if (s->is_bos_ws && m->strip_leading_space && e->leading_space) {
            p++, n--;
            /* Removing extra whitespace keeps dropping while nothing is written. */
            dropped = !m->norm.remove_extra_whitespaces;
        }
        if (!emit(s, out, p, n)) return false;
        break;
    }
    }
    s->bos_ws_seen = dropped;
    return true;
}

static ember_status check_id(const ember_sp_model *m, int32_t id) {
    if (id < 0 || (size_t)id >= m->n_pieces)
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE,
                               "piece id %d is outside the vocabulary (%zu pieces)", (int)id,
                               m->n_pieces);
    return EMBER_OK;
}

ember_status ember_sp_decode(const ember_sp_model *m, const int32_t *ids, size_t n, char *out,
                             size_t cap, size_t *len) {
    if (m == NULL || len == NULL || (ids == NULL && n != 0) || (out == NULL && cap != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_decode: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= m->n_pieces)
            return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE,
                                   "ember_sp_decode: id %d at position %zu is outside the "
                                   "vocabulary (%zu pieces)",
                                   (int)ids[i], i, m->n_pieces);
    dec_state s;
    state_reset(&s);
    sp_buf text = {0}, denorm = {0};
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) ok = step(m, &s, ids[i], &text);
    ok = ok && drain(&s, &text, true);
    const sp_buf *result = &text;
    if (ok && m->has_denorm) {
        ok = sp_normalize(&m->denorm, NULL, (const uint8_t *)text.p, text.n, &denorm);
        result = &denorm;
    }
    ember_status st = EMBER_OK;
    if (!ok) {
        st = sp_oom("decoder");
    } else {
        *len = result->n;
        if (result->n >= cap) {
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "ember_sp_decode: %zu bytes do not hold the %zu-byte text and "
                                 "its NUL",
                                 cap, result->n);
        } else {
            if (result->n > 0) memcpy(out, result->p, result->n);
            out[result->n] = '\0';
        }
    }
    free(text.p);
    free(denorm.p);
    return st;
}

ember_status ember_sp_decode_piece(const ember_sp_model *m, int32_t id, bool at_start,
                                   const char **text, size_t *len) {
    if (m == NULL || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_decode_piece: NULL argument");
    ember_status st = check_id(m, id);
    if (st != EMBER_OK) return st;
    const sp_dec_entry *e = &m->dec[id];
    switch (e->kind) {
    case SP_DEC_BYTE:
        *text = &m->byte_chars[e->byte];
        *len = 1;
        break;
    case SP_DEC_UNKNOWN:
        *text = m->unk_surface;
        *len = m->unk_surface_len;
        break;
    default: /* control pieces have an empty surface */
        *text = m->surfaces + e->off;
        *len = e->len;
        if (at_start && m->strip_leading_space && e->leading_space) ++*text, --*len;
        break;
    }
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */
/* ------------------------------------------------------------------------ */

struct ember_sp_stream {
    const ember_sp_model *m;
    dec_state state;
    sp_buf out; /* capacity: one piece's surface and four held bytes as U+FFFD */
};

ember_status ember_sp_stream_create(const ember_sp_model *m, ember_sp_stream **out) {
    if (m == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_stream_create: NULL argument");
    ember_sp_stream *s = calloc(1, sizeof *s);
    if (s == NULL) return sp_oom("stream");
    s->m = m;
    state_reset(&s->state);
    if (!sp_buf_reserve(&s->out, m->max_surface + 16)) {
        free(s);
        return sp_oom("stream");
    }
    *out = s;
    return EMBER_OK;
}

void ember_sp_stream_destroy(ember_sp_stream *s) {
    if (s == NULL) return;
    free(s->out.p);
    free(s);
}

void ember_sp_stream_reset(ember_sp_stream *s) {
    if (s == NULL) return;
    state_reset(&s->state);
    s->out.n = 0;
}

ember_status ember_sp_stream_push(ember_sp_stream *s, int32_t id, const char **text, size_t *len) {
    if (s == NULL || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_stream_push: NULL argument");
    ember_status st = check_id(s->m, id);
    if (st != EMBER_OK) return st;
    s->out.n = 0;
    /* The buffer was sized for the largest output, so this never grows it. */
    if (!step(s->m, &s->state, id, &s->out)) return sp_oom("stream");
    *text = s->out.p;
    *len = s->out.n;
    return EMBER_OK;
}

ember_status ember_sp_stream_finish(ember_sp_stream *s, const char **text, size_t *len) {
    if (s == NULL || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_stream_finish: NULL argument");
    s->out.n = 0;
    if (!drain(&s->state, &s->out, true)) return sp_oom("stream");
    *text = s->out.p;
    *len = s->out.n;
    state_reset(&s->state);
    return EMBER_OK;
}
