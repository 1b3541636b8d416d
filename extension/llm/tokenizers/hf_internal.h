/*
 * hf_internal.h — Hugging Face tokenizer.json inside ember (not public).
 *
 * One file per stage family, as the `tokenizers` library names them:
 *   hf_tokenizer.c      the file (added tokens, the pipeline, decode order)
 *   hf_normalizers.c    NFC NFKC NFD NFKD Lowercase Replace Prepend Strip
 *                       StripAccents Precompiled Sequence ...
 *   hf_pretokenizers.c  ByteLevel Split Digits Metaspace Punctuation
 *                       Whitespace WhitespaceSplit Sequence ...
 *   hf_models.c         BPE Unigram WordPiece WordLevel
 *   hf_decoders.c       ByteLevel ByteFallback Metaspace Replace Strip Fuse
 *                       WordPiece Sequence, run one token at a time
 *
 * Text between stages is a list of pieces (hf_pieces): byte ranges of one
 * arena, each remembering whether it starts at the beginning of the input
 * (Metaspace's prepend_scheme "first" asks).
 */
#ifndef EMBER_LLM_HF_INTERNAL_H
#define EMBER_LLM_HF_INTERNAL_H

#include "text/json.h"
#include "text/regex.h"
#include "tok_internal.h"

/* ---- patterns: Split, Replace ---- */
typedef struct hf_pattern {
    char *literal; /* a String pattern (matched as is) */
    size_t literal_len;
    ember_regex *re; /* a Regex pattern; NULL for a String one */
} hf_pattern;

/* One stretch of a text: a match of the pattern or the text between. */
typedef struct hf_span {
    size_t start, end;
    bool is_match;
} hf_span;

typedef struct hf_spans {
    hf_span *data;
    size_t len, cap;
} hf_spans;

/* Compiles a tokenizer.json pattern as the library runs it: Oniguruma's
 * Ruby syntax, where ^ and $ match at line breaks. */
ember_status hf_regex_compile(const char *pattern, size_t len, ember_regex **out);
/* Reads {"String": s} or {"Regex": r}; where names the place for messages. */
ember_status hf_pattern_read(const ember_json *j, const char *where, hf_pattern *p);
void hf_pattern_free(hf_pattern *p);
/* The spans of text, as tokenizers' Pattern::find_matches gives them. */
ember_status hf_pattern_spans(const hf_pattern *p, const char *text, size_t len, hf_spans *out);
/* Appends span [a, b) (m: a match) to s; what names the caller in an
 * out-of-memory error. */
ember_status hf_spans_add(hf_spans *s, size_t a, size_t b, bool m, const char *what);
void hf_spans_free(hf_spans *s);

/* ---- pieces ---- */
typedef struct hf_piece {
    size_t off, len;
    bool at_start; /* begins at the start of the original input */
} hf_piece;

typedef struct hf_pieces {
    tok_buf text;   /* every piece's bytes */
    hf_piece *data;
    size_t len, cap;
} hf_pieces;

ember_status hf_pieces_add(hf_pieces *p, const char *bytes, size_t n, bool at_start);
void hf_pieces_clear(hf_pieces *p);
void hf_pieces_free(hf_pieces *p);

/* ---- normalizers ---- */
typedef struct hf_normalizer hf_normalizer;
/* NULL j (or null): none (*out NULL). */
ember_status hf_normalizer_read(const ember_json *j, hf_normalizer **out);
void hf_normalizer_free(hf_normalizer *n);
/* out = the normalized text (out is cleared first). */
ember_status hf_normalize(const hf_normalizer *n, const char *text, size_t len, tok_buf *out);

/* ---- pre-tokenizers ---- */
typedef struct hf_pretokenizer hf_pretokenizer;
ember_status hf_pretokenizer_read(const ember_json *j, hf_pretokenizer **out);
void hf_pretokenizer_free(hf_pretokenizer *p);
/* Splits (and transforms) every piece of in into out. */
ember_status hf_pretokenize(const hf_pretokenizer *p, const hf_pieces *in, hf_pieces *out);

/* ---- models ---- */
typedef struct hf_model hf_model;
/* Reads the model with its own vocabulary. */
ember_status hf_model_read(const ember_json *model, hf_model **out);
void hf_model_free(hf_model *m);
/* The model's own vocabulary (token string -> id). */
const tok_vocab *hf_model_vocab(const hf_model *m);
/* Appends the ids of one pre-tokenized piece. */
ember_status hf_model_tokenize(const hf_model *m, const char *piece, size_t len, tok_ids *out);

/* ---- decoders ---- */
typedef struct hf_decoder hf_decoder;
/* NULL j: none (tokens joined with spaces, as the library does). */
ember_status hf_decoder_read(const ember_json *j, hf_decoder **out);
void hf_decoder_free(hf_decoder *d);
/* Streaming: one token's string in, text out; finish at the end. */
ember_status hf_decoder_push(const hf_decoder *d, tok_decode_state *st, const char *token,
                             size_t len, tok_buf *out);
ember_status hf_decoder_finish(const hf_decoder *d, tok_decode_state *st, tok_buf *out);

/* ---- small helpers shared by the stages ---- */
/* "where: what" messages for a malformed tokenizer.json. */
ember_status hf_bad(const char *where, const char *what);
ember_status hf_unsupported(const char *where, const char *what);
/* Member reads with defaults; EMBER_ERR_INVALID_ARGUMENT on the wrong type. */
ember_status hf_get_bool(const ember_json *obj, const char *key, bool def, bool *out,
                         const char *where);
ember_status hf_get_string(const ember_json *obj, const char *key, const char **s, size_t *len,
                           const char *where);
/* The "type" of a stage object. */
ember_status hf_type(const ember_json *obj, const char *where, const char **type);

#endif /* EMBER_LLM_HF_INTERNAL_H */
