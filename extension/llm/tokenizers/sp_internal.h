/*
 * extension/llm/tokenizers/sp_internal.h — what the SentencePiece sources
 * share (not part of the public API; see sentencepiece.h).
 *
 *   sp_proto.c       protobuf wire format -> sp_raw_model (views into the file)
 *   sp_model.c       sp_raw_model -> ember_sp_model: checks, tables, lookups
 *   sp_trie.c        byte tries (vocabulary, user-defined symbols) and the
 *                    piece hash maps
 *   sp_normalizer.c  UTF-8 rules, the precompiled charsmap, Normalize()
 *   sp_unigram.c     Viterbi segmentation
 *   sp_bpe.c         score-ordered merges
 *   sp_encode.c      WORD/CHAR segmentation, unknowns, byte fallback, ids
 *   sp_decode.c      whole-sequence and streaming decode
 */
#ifndef EMBER_LLM_TOKENIZERS_SP_INTERNAL_H
#define EMBER_LLM_TOKENIZERS_SP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "sentencepiece.h"

#define SP_MEMORY_NAME "tokenizer.model"

/* Files larger than this are refused (real models are a few MB). */
#define SP_MAX_FILE_BYTES ((size_t)1 << 30)

/* The library refuses pieces longer than this. */
#define SP_MAX_PIECE_BYTES 7999

/* "▁" (U+2581), the escaped space. */
#define SP_SPACE "\xE2\x96\x81"
#define SP_SPACE_LEN 3

/* ------------------------------------------------------------------------ */
/* Checked sizes                                                             */
/* ------------------------------------------------------------------------ */

static inline bool sp_add_ok(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

static inline bool sp_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* malloc of n * size bytes (at least one byte); NULL on overflow or failure. */
void *sp_alloc_array(size_t n, size_t size);

ember_status sp_oom(const char *what);

/* A growable byte buffer. */
typedef struct sp_buf {
    char *p;
    size_t n, cap;
} sp_buf;

bool sp_buf_reserve(sp_buf *b, size_t extra);
bool sp_buf_put(sp_buf *b, const void *s, size_t n);

/* ------------------------------------------------------------------------ */
/* Protobuf (sp_proto.c)                                                     */
/* ------------------------------------------------------------------------ */

typedef struct sp_view {
    const uint8_t *p;
    size_t n;
} sp_view;

typedef struct sp_raw_piece {
    sp_view piece;
    float score;
    int type; /* ember_sp_piece_type */
} sp_raw_piece;

typedef struct sp_raw_normalizer {
    bool present;
    sp_view charsmap;
    bool add_dummy_prefix;         /* default true */
    bool remove_extra_whitespaces; /* default true */
    bool escape_whitespaces;       /* default true */
} sp_raw_normalizer;

/* The fields of ModelProto that change what the library does at inference. */
typedef struct sp_raw_model {
    sp_raw_piece *pieces;
    size_t n_pieces, pieces_cap;
    int model_type; /* ember_sp_model_type; default UNIGRAM */
    bool byte_fallback;
    bool treat_whitespace_as_suffix;
    sp_view unk_piece, bos_piece, eos_piece, pad_piece; /* empty: the default */
    sp_view unk_surface;
    bool has_unk_surface;
    sp_raw_normalizer normalizer, denormalizer;
} sp_raw_model;

/* Parses a serialized ModelProto; *out holds views into data. Messages name
 * the input `name`. On failure *out is freed. */
ember_status sp_proto_parse(const uint8_t *data, size_t len, const char *name, sp_raw_model *out);
void sp_raw_model_free(sp_raw_model *raw);

/* ------------------------------------------------------------------------ */
/* Tries and maps (sp_trie.c)                                                */
/* ------------------------------------------------------------------------ */

#define SP_NO_ID (-1)
#define SP_NO_NODE UINT32_MAX

/* A byte trie as a double array: the child of slot s by byte b is slot
 * base of s + b when that slot's check is s. Slot 0 is the root. One slot
 * is one cache line access for a step of a walk. */
typedef struct sp_trie_slot {
    uint32_t base;
    uint32_t check; /* parent slot, SP_NO_NODE when free */
    int32_t value;  /* piece id ending here, or SP_NO_ID */
    float score;    /* the key's score (what the Unigram walk needs) */
} sp_trie_slot;

typedef struct sp_trie {
    sp_trie_slot *slots; /* (n_slots) */
    size_t n_slots;
} sp_trie;

typedef struct sp_key {
    const uint8_t *p;
    uint32_t n;
    int32_t value;
    float score;
} sp_key;

/* Builds a trie of keys (sorted here; keys must be distinct). */
ember_status sp_trie_build(sp_trie *t, sp_key *keys, size_t n_keys);
void sp_trie_free(sp_trie *t);

/* The child of slot node by byte b, or SP_NO_NODE. */
static inline uint32_t sp_trie_child(const sp_trie *t, uint32_t node, uint8_t b) {
    size_t c = (size_t)t->slots[node].base + b;
    return c < t->n_slots && t->slots[c].check == node ? (uint32_t)c : SP_NO_NODE;
}

/* Length of the longest key that prefixes s[0..n), 0 if none. */
size_t sp_trie_longest(const sp_trie *t, const uint8_t *s, size_t n);

/* Open-addressing map from a piece's bytes to its id. */
typedef struct sp_map_slot {
    int32_t id;   /* SP_NO_ID when free */
    uint32_t tag; /* high bits of the key's hash */
} sp_map_slot;

typedef struct sp_map {
    sp_map_slot *slots; /* (cap) */
    size_t cap;         /* power of two, 0 when empty */
} sp_map;

/* Keys hash as mix(poly(s)), poly(s) = sum of (s[i] + 1) * SP_POLY^(n-1-i)
 * mod 2^64, so the hash of a concatenation comes from its parts' in O(1):
 * poly(a b) = poly(a) * SP_POLY^len(b) + poly(b). */
#define SP_POLY 0x100000001B3ull

static inline uint64_t sp_poly(const uint8_t *s, size_t n) {
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) h = h * SP_POLY + s[i] + 1;
    return h;
}

static inline uint64_t sp_mix(uint64_t h) {
    h ^= h >> 31; /* splitmix64's finalizer */
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

static inline uint64_t sp_hash(const uint8_t *s, size_t n) { return sp_mix(sp_poly(s, n)); }

/* ------------------------------------------------------------------------ */
/* Normalizer (sp_normalizer.c)                                              */
/* ------------------------------------------------------------------------ */

typedef struct sp_normalizer {
    const uint8_t *trie;       /* (n_units * 4) little-endian darts units, or NULL */
    size_t n_units;
    const uint8_t *replacements; /* (n_repl) NUL-separated strings */
    size_t n_repl;
    bool may_start[256];       /* some charsmap key starts with this byte */
    bool add_dummy_prefix;
    bool remove_extra_whitespaces;
    bool escape_whitespaces;
    bool treat_whitespace_as_suffix;
} sp_normalizer;

/* Sets up n from a spec; the charsmap bytes must stay alive (the model
 * keeps its own copy). Fails when the charsmap is malformed. */
ember_status sp_normalizer_init(sp_normalizer *n, const char *name, const char *field,
                                const sp_raw_normalizer *spec, const uint8_t *charsmap,
                                size_t charsmap_len, bool treat_whitespace_as_suffix);

/* Normalizes text into out (appended). user_defined may be NULL. */
bool sp_normalize(const sp_normalizer *n, const sp_trie *user_defined, const uint8_t *text,
                  size_t len, sp_buf *out);

/* UTF-8 as the library reads it. */
static inline size_t sp_one_char_len(uint8_t lead) {
    static const uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[lead >> 4];
}

/* Length of the valid UTF-8 character at s[0..n) (n >= 1), or 0 when the
 * library calls it malformed (it then stands for U+FFFD over one byte). */
size_t sp_utf8_valid_len(const uint8_t *s, size_t n);

/* How many bytes the library's decoder wants for a lead byte: 1..4, or 0
 * when the byte can start no character. */
size_t sp_utf8_want(uint8_t lead);

/* ------------------------------------------------------------------------ */
/* The model (sp_model.c)                                                    */
/* ------------------------------------------------------------------------ */

/* How decode treats an id. */
enum { SP_DEC_TEXT, SP_DEC_CONTROL, SP_DEC_UNKNOWN, SP_DEC_BYTE };

typedef struct sp_dec_entry {
    uint32_t off, len; /* surface ("▁" as a space) in model->surfaces */
    uint8_t kind;      /* SP_DEC_* */
    uint8_t byte;      /* for SP_DEC_BYTE */
    bool leading_space; /* the spelling starts with "▁" */
} sp_dec_entry;

struct ember_sp_model {
    int model_type;
    bool byte_fallback;
    bool has_unused;             /* any UNUSED piece (BPE resegmentation) */
    bool strip_leading_space;    /* add_dummy_prefix || remove_extra_whitespaces */

    uint8_t *strings;            /* every piece's bytes, back to back */
    size_t n_pieces;
    uint32_t *piece_off;         /* (n_pieces) */
    uint32_t *piece_len;         /* (n_pieces) */
    float *score;                /* (n_pieces) */
    uint32_t *rank;              /* (n_pieces) BPE: 0 for the best score, equal for equal */
    uint8_t *type;               /* (n_pieces) ember_sp_piece_type */

    sp_map normal;               /* NORMAL, USER_DEFINED, UNUSED pieces */
    sp_map reserved;             /* CONTROL, UNKNOWN, BYTE pieces */
    sp_trie vocab;               /* Unigram: NORMAL and USER_DEFINED pieces */
    sp_trie user;                /* USER_DEFINED pieces (n_slots 0 if none) */
    bool has_user;

    int32_t unk;                 /* the UNKNOWN piece */
    int32_t byte_id[256];        /* <0xNN> pieces, SP_NO_ID without fallback */
    int32_t bos_id, eos_id, pad_id, unk_id; /* as the library reports them */
    float min_score;             /* over NORMAL pieces (FLT_MAX if none), as the library */

    uint8_t *charsmaps;          /* copies of the normalizer's and denormalizer's */
    sp_normalizer norm;
    sp_normalizer denorm;
    bool has_denorm;

    char *surfaces;              /* decode surfaces, back to back */
    sp_dec_entry *dec;           /* (n_pieces) */
    size_t max_surface;          /* longest surface */
    char byte_chars[256];        /* byte b is byte_chars[b], for byte pieces */
    char *unk_surface;           /* (unk_surface_len) */
    size_t unk_surface_len;
};

static inline const uint8_t *sp_piece(const ember_sp_model *m, int32_t id, size_t *len) {
    *len = m->piece_len[id];
    return m->strings + m->piece_off[id];
}

/* Id of a piece in map, or SP_NO_ID; h is sp_hash(s, n). */
int32_t sp_map_find_h(const ember_sp_model *m, const sp_map *map, const uint8_t *s, size_t n,
                      uint64_t h);

static inline int32_t sp_map_find(const ember_sp_model *m, const sp_map *map, const uint8_t *s,
                                  size_t n) {
    return sp_map_find_h(m, map, s, n, sp_hash(s, n));
}

/* The library's PieceToId: reserved pieces first, then the others, else unk. */
static inline int32_t sp_piece_to_id_h(const ember_sp_model *m, const uint8_t *s, size_t n,
                                       uint64_t h) {
    int32_t id = sp_map_find_h(m, &m->reserved, s, n, h);
    if (id == SP_NO_ID) id = sp_map_find_h(m, &m->normal, s, n, h);
    return id == SP_NO_ID ? m->unk : id;
}

static inline int32_t sp_piece_to_id(const ember_sp_model *m, const uint8_t *s, size_t n) {
    return sp_piece_to_id_h(m, s, n, sp_hash(s, n));
}

/* The id a segment of text gets: its normal or user-defined piece (or unused
 * piece, when allow_unused), else the unk piece. Text never becomes a
 * control or byte piece this way. h is sp_hash(s, n). */
static inline int32_t sp_text_piece_h(const ember_sp_model *m, const uint8_t *s, size_t n,
                                      uint64_t h, bool allow_unused) {
    int32_t id = sp_map_find_h(m, &m->normal, s, n, h);
    if (id == SP_NO_ID) return m->unk;
    int type = m->type[id];
    return type == EMBER_SP_PIECE_UNUSED && !allow_unused ? m->unk : id;
}

/* ------------------------------------------------------------------------ */
/* Segmentation (sp_unigram.c, sp_bpe.c, sp_encode.c)                        */
/* ------------------------------------------------------------------------ */

/* One piece of the segmentation of a normalized text. */
typedef struct sp_seg {
    uint32_t start, len; /* bytes of the normalized text */
    int32_t id;
} sp_seg;

typedef struct sp_segs {
    sp_seg *p;
    size_t n, cap;
} sp_segs;

bool sp_segs_push(sp_segs *s, uint32_t start, uint32_t len, int32_t id);

/* Segments a normalized text (len < INT32_MAX) into out. */
ember_status sp_unigram_segment(const ember_sp_model *m, const uint8_t *t, size_t len,
                                sp_segs *out);
ember_status sp_bpe_segment(const ember_sp_model *m, const uint8_t *t, size_t len, sp_segs *out);

/* Length of the user-defined symbol at s[0..n) (n >= 1), or 0. */
static inline size_t sp_user_match(const ember_sp_model *m, const uint8_t *s, size_t n) {
    return m->has_user ? sp_trie_longest(&m->user, s, n) : 0;
}

/* Normalizes and segments text: out gets the library's final pieces (byte
 * fallback expanded, unknown runs merged); each piece's bytes are in
 * normalized (for a byte-fallback piece: its one byte). */
ember_status sp_encode_pieces(const ember_sp_model *m, const uint8_t *text, size_t len,
                              sp_buf *normalized, sp_segs *out);

#endif /* EMBER_LLM_TOKENIZERS_SP_INTERNAL_H */
