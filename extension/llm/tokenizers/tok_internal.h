/*
 * tok_internal.h — what the tokenizer formats share (not a public header).
 *
 *   tok_buf        growable bytes; tok_ids growable ids
 *   tok_vocab      id <-> bytes: every token's bytes in one arena, and an
 *                  open-addressing hash from bytes to id
 *   tok_pairs      (left id, right id) -> (rank, merged id)
 *   tok_bpe_merge  the one BPE merge loop: adjacent symbols merge lowest
 *                  rank first, leftmost first among equal ranks (tiktoken,
 *                  Hugging Face BPE and GPT-2 all merge this way; they
 *                  differ only in where a pair's rank comes from)
 *   tok_specials   special-token spellings matched in text, longest first
 *   tok_utf8       the decoders' UTF-8 assembly: complete characters out,
 *                  split ones held, ill-formed ones replaced by U+FFFD
 *   tok_ops        what each format implements behind ember_tokenizer
 */
#ifndef EMBER_LLM_TOK_INTERNAL_H
#define EMBER_LLM_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

#define TOK_NO_ID (-1)
/* Ids are below this (2^24: room for every vocabulary ember has met, and
 * small enough that sizes derived from them cannot overflow). */
#define TOK_MAX_IDS ((size_t)1 << 24)
/* Tokenizer files are at most this large. */
#define TOK_MAX_FILE_BYTES ((size_t)1 << 30)

/* ---- checked sizes ---- */
bool tok_mul_ok(size_t a, size_t b, size_t *out);
bool tok_add_ok(size_t a, size_t b, size_t *out);
/* malloc of n * size bytes; NULL on overflow or failure (never of size 0). */
void *tok_alloc_array(size_t n, size_t size);
ember_status tok_oom(const char *what);

/* ---- growable buffers ---- */
typedef struct tok_buf {
    char *data;
    size_t len, cap;
} tok_buf;

ember_status tok_buf_append(tok_buf *b, const void *bytes, size_t n);
ember_status tok_buf_reserve(tok_buf *b, size_t extra);
void tok_buf_free(tok_buf *b);

typedef struct tok_ids {
    int32_t *data;
    size_t len, cap;
} tok_ids;

ember_status tok_ids_push(tok_ids *v, int32_t id);
void tok_ids_free(tok_ids *v);

/* ---- vocabulary: id <-> bytes ---- */
typedef struct tok_vocab {
    char *arena;         /* every token's bytes, back to back */
    size_t arena_len, arena_cap;
    uint32_t *off, *len; /* (n_ids) where each id's bytes are; len UINT32_MAX: no token */
    size_t n_ids;
    int32_t *slots;      /* (cap) open-addressing hash of bytes -> id; TOK_NO_ID free */
    size_t cap;
} tok_vocab;

/* An empty vocabulary with ids 0 .. n_ids-1, none of them set yet. */
ember_status tok_vocab_init(tok_vocab *v, size_t n_ids, size_t arena_hint);
void tok_vocab_free(tok_vocab *v);
/* Sets id's bytes. EMBER_ERR_INVALID_ARGUMENT where id already has bytes or
 * another id has the same bytes (*dup then names it). */
ember_status tok_vocab_set(tok_vocab *v, int32_t id, const char *bytes, size_t n, int32_t *dup);
/* Sets id's bytes where another id already has them: tok_vocab_find()
 * keeps naming the other. */
ember_status tok_vocab_set_alias(tok_vocab *v, int32_t id, const char *bytes, size_t n);
/* The id of these bytes, or TOK_NO_ID. */
int32_t tok_vocab_find(const tok_vocab *v, const char *bytes, size_t n);
/* Whether id has bytes; *bytes and *n where it does. */
bool tok_vocab_get(const tok_vocab *v, int32_t id, const char **bytes, size_t *n);

/* ---- merge pairs: (left, right) -> (rank, merged) ---- */
typedef struct tok_pair_slot {
    uint64_t key; /* left << 32 | right; UINT64_MAX free */
    uint32_t rank;
    int32_t merged;
} tok_pair_slot;

typedef struct tok_pairs {
    tok_pair_slot *slots;
    size_t cap, n;
} tok_pairs;

ember_status tok_pairs_init(tok_pairs *p, size_t n_hint);
void tok_pairs_free(tok_pairs *p);
/* Adds a pair; false (and nothing changes) where the pair is there already. */
bool tok_pairs_add(tok_pairs *p, int32_t left, int32_t right, uint32_t rank, int32_t merged);
const tok_pair_slot *tok_pairs_find(const tok_pairs *p, int32_t left, int32_t right);

/* ---- the BPE merge loop ---- */
/* Whether left and right merge, and into what at which rank (lower first). */
typedef bool (*tok_rank_fn)(const void *ctx, int32_t left, int32_t right, uint32_t *rank,
                            int32_t *merged);

/* Merges syms[0..*n) in place; *n becomes the number left. */
ember_status tok_bpe_merge(int32_t *syms, size_t *n, tok_rank_fn rank, const void *ctx);

/* ---- special tokens in text ---- */
typedef struct tok_special {
    const char *text; /* owned by the tokenizer */
    size_t len;
    int32_t id;
} tok_special;

typedef struct tok_specials {
    tok_special *items; /* (n) sorted by text */
    size_t n;
    uint8_t first[32];  /* bit set of the items' first bytes */
} tok_specials;

/* Sorts the items and indexes their first bytes (items are kept). */
void tok_specials_index(tok_specials *s);
/* The leftmost special token in text[from..len), longest at that place:
 * true with its place and entry, false where there is none. */
bool tok_specials_next(const tok_specials *s, const char *text, size_t len, size_t from,
                       size_t *at, const tok_special **which);

/* ---- UTF-8 assembly for decoders ---- */
/* Bytes go in; complete well-formed characters come out. An ill-formed
 * sequence becomes one U+FFFD per maximal subpart (Unicode's practice, which
 * Python's errors="replace" and Rust's from_utf8_lossy follow); a sequence
 * that could still be completed is held. */
typedef struct tok_utf8 {
    uint8_t held[4];
    size_t n_held;
} tok_utf8;

/* Appends to out what bytes[0..n) completes. */
ember_status tok_utf8_push(tok_utf8 *u, const char *bytes, size_t n, tok_buf *out);
/* Appends U+FFFD for a held incomplete sequence and empties u. */
ember_status tok_utf8_finish(tok_utf8 *u, tok_buf *out);
/* Appends U+FFFD. */
ember_status tok_append_replacement(tok_buf *out);

/* ---- Unicode, as the tokenizers need it (tok_unicode.c) ---- */
/* Returned for a byte that does not start a well-formed UTF-8 character. */
#define TOK_INVALID_CP UINT32_MAX
/* The character at t[i] (i < n): its bytes (1 for an ill-formed byte, with
 * *cp = TOK_INVALID_CP). */
size_t tok_utf8_char(const char *t, size_t n, size_t i, uint32_t *cp);
/* Writes cp as UTF-8; returns its length (1 to 4). */
size_t tok_utf8_put(uint32_t cp, char out[4]);
/* GPT-2's byte-level alphabet: the character that stands for a byte, and
 * the byte a character stands for (-1 for any other character). */
uint32_t tok_byte_char(uint8_t b);
int tok_bytelevel_byte(uint32_t cp);
/* Character classes as Rust's char methods and regex \w define them (the
 * `tokenizers` library's pre-tokenizers use these). */
bool tok_is_whitespace(uint32_t cp);       /* White_Space */
bool tok_is_numeric(uint32_t cp);          /* general category N* */
bool tok_is_punctuation(uint32_t cp);      /* ASCII punctuation or P* */
bool tok_is_rust_word(uint32_t cp);        /* Rust regex \w */
bool tok_is_mark(uint32_t cp);            /* M*: Mn, Mc, Me */
enum { TOK_NFC, TOK_NFD, TOK_NFKC, TOK_NFKD };
/* out = the text in a normalization form / lowercased (out cleared first). */
ember_status tok_normalize(int form, const char *t, size_t n, tok_buf *out);
ember_status tok_lowercase(const char *t, size_t n, tok_buf *out);

/* ---- files ---- */
/* Reads a whole file (at most TOK_MAX_FILE_BYTES) into malloc'd memory with
 * a NUL after it. EMBER_ERR_IO / EMBER_ERR_INVALID_ARGUMENT with the path. */
ember_status tok_read_file(const char *path, char **data, size_t *len);

/* ---- the formats behind ember_tokenizer ---- */
typedef struct tok_decode_state tok_decode_state;

typedef struct tok_ops {
    /* Encodes text (special tokens already split off by the caller where
     * the format leaves that to it, see ember_tokenizer.specials). */
    ember_status (*encode)(const void *impl, const char *text, size_t len, unsigned flags,
                           tok_ids *out);
    /* Appends the text id decodes to, given the decoding so far (st). */
    ember_status (*decode)(const void *impl, tok_decode_state *st, int32_t id, tok_buf *out);
    /* Appends what the decoding still holds at the end of a text. */
    ember_status (*decode_finish)(const void *impl, tok_decode_state *st, tok_buf *out);
    void (*destroy)(void *impl);
    /* A format's own decode state (tok_decode_state.fmt), where it keeps
     * one: reset for a new text, and freed; NULL where it keeps none. */
    void (*state_reset)(void *fmt);
    void (*state_free)(void *fmt);
} tok_ops;

/* Stages of a decoder chain a format may keep state for. */
#define TOK_MAX_STAGES 8

/* Streaming decode state every format may use. */
struct tok_decode_state {
    size_t n_tokens; /* tokens decoded so far in this text */
    tok_utf8 utf8;   /* bytes of a split character */
    /* per stage of a decoder chain: tokens seen, a count, held text */
    size_t count[TOK_MAX_STAGES];
    size_t aux[TOK_MAX_STAGES];
    tok_buf held[TOK_MAX_STAGES];
    /* a format's own state, made by its decode on first use */
    void *fmt;
    const tok_ops *fmt_ops;
};

/* Empties st for a new text (held buffers are kept for reuse). */
void tok_decode_state_reset(tok_decode_state *st);
/* Frees st's buffers. */
void tok_decode_state_free(tok_decode_state *st);

/* What a format fills in at load; ember_tokenizer owns it. */
typedef struct tok_common {
    ember_tokenizer_format format;
    const tok_ops *ops;
    void *impl;
    size_t vocab_size;
    /* spelling of every id (for token_id / token_text); may be shared with impl */
    const tok_vocab *spellings;
    /* special tokens ember splits off before ops->encode (formats that handle
     * their own added tokens leave it empty and look at flags themselves) */
    tok_specials specials;
    bool *is_special;     /* (vocab_size) or NULL */
    int32_t bos_id;       /* TOK_NO_ID where none */
    tok_ids eos_ids;      /* eos and end-of-turn ids */
    char *bos_text, *eos_text, *chat_template; /* malloc'd or NULL */
} tok_common;

/* The formats' loaders: fill c from the file's contents (name for messages). */
ember_status tok_tiktoken_load(const char *data, size_t len, const char *name,
                               const ember_tokenizer_options *opt, tok_common *c);
struct ember_json;
ember_status tok_hf_load_json(const struct ember_json *root, tok_common *c);
ember_status tok_sp_load(const char *data, size_t len, const char *name, tok_common *c);

#endif /* EMBER_LLM_TOK_INTERNAL_H */
