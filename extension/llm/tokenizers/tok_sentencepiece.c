/*
 * tok_sentencepiece.c — SentencePiece models behind ember_tokenizer: the model
 * (sentencepiece.h) encodes and decodes; this file gives its pieces to the
 * shared parts: every piece's spelling, its control pieces as the special
 * tokens EMBER_ENCODE_SPECIAL finds in text (chat templates write "<s>",
 * "<bos>", ...), bos and eos, and a streaming decoder per decode state.
 */
#include <stdlib.h>
#include <string.h>

#include "sentencepiece.h"
#include "tok_internal.h"

typedef struct sp_tok {
    ember_sp_model *model;
    tok_vocab spellings;
} sp_tok;

static ember_status sp_encode(const void *impl, const char *text, size_t len, unsigned flags,
                              tok_ids *out) {
    (void)flags; /* control pieces are split off by the caller */
    const sp_tok *s = impl;
    /* the first call sizes the ids (cap 0 is too small unless there are none) */
    size_t n = 0;
    ember_status st = ember_sp_encode(s->model, text, len, NULL, 0, &n);
    if (n == 0) return st;
    size_t start = out->len;
    for (size_t i = 0; i < n && st != EMBER_ERR_OUT_OF_MEMORY; i++) st = tok_ids_push(out, 0);
    if (st != EMBER_OK) return st;
    size_t got = 0;
    st = ember_sp_encode(s->model, text, len, out->data + start, n, &got);
    out->len = start + (st == EMBER_OK ? got : 0);
    return st;
}

static ember_status sp_decode(const void *impl, tok_decode_state *st, int32_t id, tok_buf *out) {
    const sp_tok *s = impl;
    if (st->fmt == NULL) {
        ember_sp_stream *stream;
        ember_status e = ember_sp_stream_create(s->model, &stream);
        if (e != EMBER_OK) return e;
        st->fmt = stream;
    }
    const char *text;
    size_t len;
    ember_status e = ember_sp_stream_push(st->fmt, id, &text, &len);
    if (e == EMBER_OK) {
        st->n_tokens++;
        e = tok_buf_append(out, text, len);
    }
    return e;
}

static ember_status sp_decode_finish(const void *impl, tok_decode_state *st, tok_buf *out) {
    (void)impl;
    if (st->fmt == NULL) return EMBER_OK;
    const char *text;
    size_t len;
    ember_status e = ember_sp_stream_finish(st->fmt, &text, &len);
    return e == EMBER_OK ? tok_buf_append(out, text, len) : e;
}

static void sp_destroy(void *impl) {
    sp_tok *s = impl;
    if (s == NULL) return;
    ember_sp_model_destroy(s->model);
    tok_vocab_free(&s->spellings);
    free(s);
}

static void sp_state_reset(void *fmt) { ember_sp_stream_reset(fmt); }

static void sp_state_free(void *fmt) { ember_sp_stream_destroy(fmt); }

static const tok_ops SP_OPS = {sp_encode, sp_decode, sp_decode_finish, sp_destroy,
                               sp_state_reset, sp_state_free};

ember_status tok_sp_load(const char *data, size_t len, const char *name, tok_common *c) {
    sp_tok *s = calloc(1, sizeof *s);
    if (s == NULL) return tok_oom("SentencePiece model");
    ember_status st = ember_sp_model_load_memory(data, len, &s->model);
    if (st != EMBER_OK) {
        free(s);
        return ember_error_set(st, "%s: %s", name, ember_last_error());
    }
    size_t n = ember_sp_model_vocab_size(s->model), n_control = 0;
    st = tok_vocab_init(&s->spellings, n, len);
    if (st == EMBER_OK && (c->is_special = calloc(n ? n : 1, sizeof *c->is_special)) == NULL)
        st = tok_oom("SentencePiece model");
    for (size_t id = 0; id < n && st == EMBER_OK; id++) {
        const char *piece;
        size_t pl;
        int32_t dup;
        ember_sp_piece_type type;
        st = ember_sp_id_to_piece(s->model, (int32_t)id, &piece, &pl);
        if (st == EMBER_OK) st = ember_sp_piece_info(s->model, (int32_t)id, &type, NULL);
        /* the library lets a control piece share a normal piece's spelling:
         * lookups by spelling then find the first */
        if (st == EMBER_OK) {
            ember_status vs = tok_vocab_set(&s->spellings, (int32_t)id, piece, pl, &dup);
            if (vs != EMBER_OK)
                st = dup != TOK_NO_ID ? tok_vocab_set_alias(&s->spellings, (int32_t)id, piece, pl)
                                      : vs;
        }
        if (st == EMBER_OK && (type == EMBER_SP_PIECE_CONTROL || type == EMBER_SP_PIECE_UNKNOWN)) {
            c->is_special[id] = true;
            n_control += type == EMBER_SP_PIECE_CONTROL && pl > 0;
        }
    }
    if (st == EMBER_OK && n_control > 0 &&
        (c->specials.items = tok_alloc_array(n_control, sizeof *c->specials.items)) == NULL)
        st = tok_oom("SentencePiece model");
    for (size_t id = 0; id < n && st == EMBER_OK && n_control > 0; id++) {
        ember_sp_piece_type type;
        ember_sp_piece_info(s->model, (int32_t)id, &type, NULL);
        tok_special *sp = &c->specials.items[c->specials.n];
        if (type != EMBER_SP_PIECE_CONTROL ||
            !tok_vocab_get(&s->spellings, (int32_t)id, &sp->text, &sp->len) || sp->len == 0)
            continue;
        sp->id = (int32_t)id;
        c->specials.n++;
    }
    if (st != EMBER_OK) {
        sp_destroy(s);
        return st;
    }
    tok_specials_index(&c->specials);
    c->format = EMBER_TOKENIZER_SENTENCEPIECE;
    c->ops = &SP_OPS;
    c->impl = s;
    c->vocab_size = n;
    c->spellings = &s->spellings;
    int32_t bos = ember_sp_model_bos_id(s->model), eos = ember_sp_model_eos_id(s->model);
    c->bos_id = bos >= 0 && (size_t)bos < n ? bos : TOK_NO_ID;
    if (eos >= 0 && (size_t)eos < n) st = tok_ids_push(&c->eos_ids, eos);
    return st;
}
