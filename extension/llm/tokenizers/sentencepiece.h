/*
 * extension/llm/tokenizers/sentencepiece.h — SentencePiece `.model` files.
 *
 * Reads the serialized ModelProto that the `sentencepiece` library writes
 * (Llama 2, Mistral, Gemma, T5 and the other families that ship a
 * tokenizer.model) and encodes and decodes exactly as its
 * SentencePieceProcessor (version 0.2.3) does with default options (no
 * sampling, no BOS/EOS added by the encoder):
 *
 *   normalize  user-defined symbols are kept as written; the rest goes through
 *              the precompiled charsmap (longest match in its double-array
 *              trie; an empty charsmap, as "identity" models have, changes
 *              nothing); invalid UTF-8 becomes U+FFFD one byte at a time;
 *              remove_extra_whitespaces drops leading, trailing and repeated
 *              spaces; add_dummy_prefix puts one space in front (after the
 *              text with treat_whitespace_as_suffix); escape_whitespaces
 *              writes each space as U+2581 "▁".
 *   segment    Unigram: the Viterbi best path over the pieces' scores, an
 *              unknown character costing (lowest score - 10); BPE: adjacent
 *              symbols merged by the score of the merged piece, best first,
 *              leftmost among equals; WORD and CHAR models too. User-defined
 *              symbols are matched whole first; text never becomes a
 *              control or byte piece, nor (except past the library's BPE
 *              resegmentation depth of 100) an unused one.
 *   unknowns   a character outside the vocabulary becomes its UTF-8 bytes'
 *              <0xNN> pieces when the model has byte_fallback, else the unk
 *              id (a run of unknown characters gives one unk id).
 *   decode     control pieces give nothing, the unk piece gives the model's
 *              unk surface (" ⁇ " by default), byte pieces give their bytes
 *              (a run of them that is not valid UTF-8 gives U+FFFD for each
 *              offending byte), other pieces give their text with "▁" as a
 *              space; the first piece loses one leading "▁" when the model
 *              adds a dummy prefix or removes extra whitespace; the model's
 *              denormalizer, if any, is applied last.
 *
 * Text is bytes: it need not be valid UTF-8 and may contain NUL bytes.
 *
 * This is an extension: it allocates with malloc. A loaded model is
 * immutable; every function taking a const model may run on several threads
 * at once. A stream (ember_sp_stream) is used by one thread at a time.
 */
#ifndef EMBER_LLM_TOKENIZERS_SENTENCEPIECE_H
#define EMBER_LLM_TOKENIZERS_SENTENCEPIECE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded SentencePiece model (opaque). */
typedef struct ember_sp_model ember_sp_model;

/** The kind of a piece; values as in sentencepiece_model.proto. */
typedef enum ember_sp_piece_type {
    EMBER_SP_PIECE_NORMAL = 1,       /**< ordinary vocabulary entry */
    EMBER_SP_PIECE_UNKNOWN = 2,      /**< the unk piece (exactly one per model) */
    EMBER_SP_PIECE_CONTROL = 3,      /**< <s>, </s>, ...: never produced from text */
    EMBER_SP_PIECE_USER_DEFINED = 4, /**< matched whole, before anything else */
    EMBER_SP_PIECE_UNUSED = 5,       /**< in the vocabulary but never produced */
    EMBER_SP_PIECE_BYTE = 6          /**< <0x00>..<0xFF>, for byte fallback */
} ember_sp_piece_type;

/** The segmentation algorithm; values as in sentencepiece_model.proto. */
typedef enum ember_sp_model_type {
    EMBER_SP_MODEL_UNIGRAM = 1,
    EMBER_SP_MODEL_BPE = 2,
    EMBER_SP_MODEL_WORD = 3, /**< whole words split at "▁" */
    EMBER_SP_MODEL_CHAR = 4  /**< one piece per character */
} ember_sp_model_type;

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Loads a model from a `.model` file.
 *
 * The file is checked as the library (0.2.3) checks it: every piece
 * non-empty, without NUL bytes, shorter than 8000 bytes and unique (among
 * normal, user-defined and unused pieces; and among control, unknown and
 * byte pieces), exactly one unknown piece, byte pieces only with
 * byte_fallback and then all 256 of them, a Unigram model with at least one
 * piece and finite scores, and well-formed precompiled charsmaps (sizes, final NUL, every
 * trie unit in range); like the library, it ignores self_test_data. Beyond
 * that every length, varint and offset is checked, so a truncated or
 * corrupted file fails with a message and never crashes.
 *
 * @param[in]  path  the file; not kept
 * @param[out] out   the model (release with ember_sp_model_destroy());
 *                   untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or a file
 *         that is not a valid SentencePiece model: the message names the
 *         file, the field or piece and what is wrong); EMBER_ERR_IO (cannot
 *         open or read the file); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_sp_model_load(const char *path, ember_sp_model **out);

/**
 * Loads a model from the bytes of a `.model` file in memory (see
 * ember_sp_model_load(); messages call the input "tokenizer.model").
 *
 * @param[in]  data  the serialized ModelProto (may be NULL when len is 0)
 * @param[in]  len   its length in bytes
 * @param[out] out   the model; untouched on failure
 * @return as ember_sp_model_load(), without EMBER_ERR_IO.
 * Allocates; keeps no pointer into data. Thread-safe.
 */
ember_status ember_sp_model_load_memory(const void *data, size_t len, ember_sp_model **out);

/** Releases a model. NULL is a no-op. */
void ember_sp_model_destroy(ember_sp_model *m);

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */
/* ------------------------------------------------------------------------ */

/** Number of pieces (ids are 0 .. size - 1). 0 if m is NULL. Never allocates. */
size_t ember_sp_model_vocab_size(const ember_sp_model *m);

/** The model's segmentation algorithm (EMBER_SP_MODEL_UNIGRAM if m is NULL). */
ember_sp_model_type ember_sp_model_kind(const ember_sp_model *m);

/**
 * Ids of the special pieces, found as the library finds them: by the piece
 * names in trainer_spec ("<s>", "</s>", "<pad>", "<unk>" unless renamed),
 * and only when that piece is a control piece (bos, eos, pad) or the unknown
 * piece (unk). -1 when the model has none, or m is NULL. Never allocate.
 */
int32_t ember_sp_model_bos_id(const ember_sp_model *m);
int32_t ember_sp_model_eos_id(const ember_sp_model *m);
int32_t ember_sp_model_pad_id(const ember_sp_model *m);
int32_t ember_sp_model_unk_id(const ember_sp_model *m);

/**
 * Looks up a piece by its spelling (spaces written "▁", e.g. "▁the").
 * Control, unknown and byte pieces are found first, as the library does.
 * Unlike the library's PieceToId, a spelling that is no piece is an error,
 * not the unk id.
 *
 * @param[in]  m      the model
 * @param[in]  piece  the spelling, len bytes
 * @param[in]  len    its length
 * @param[out] id     the id when found
 * @return EMBER_OK; EMBER_ERR_NOT_FOUND; EMBER_ERR_INVALID_ARGUMENT (NULL).
 * Never allocates. Thread-safe.
 */
ember_status ember_sp_piece_to_id(const ember_sp_model *m, const char *piece, size_t len,
                                  int32_t *id);

/**
 * The spelling of a piece, as stored in the model ("▁the", "<0x0A>", "<s>").
 *
 * @param[in]  m      the model
 * @param[in]  id     0 .. vocab size - 1
 * @param[out] piece  its bytes, owned by the model, valid until it is
 *                    destroyed; not NUL-terminated
 * @param[out] len    their count
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE; EMBER_ERR_INVALID_ARGUMENT.
 * Never allocates. Thread-safe.
 */
ember_status ember_sp_id_to_piece(const ember_sp_model *m, int32_t id, const char **piece,
                                  size_t *len);

/**
 * The type and score of a piece.
 *
 * @param[in]  m      the model
 * @param[in]  id     0 .. vocab size - 1
 * @param[out] type   its type (may be NULL)
 * @param[out] score  its score, a log probability for Unigram models and
 *                    the merge priority for BPE (may be NULL)
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE; EMBER_ERR_INVALID_ARGUMENT.
 * Never allocates. Thread-safe.
 */
ember_status ember_sp_piece_info(const ember_sp_model *m, int32_t id, ember_sp_piece_type *type,
                                 float *score);

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Encodes text into piece ids, as `SentencePieceProcessor.encode(text)`.
 *
 * The number of ids can exceed the text's length (a charsmap can expand a
 * character, and byte fallback gives one id per byte), so *n_ids always
 * receives the number the text needs: call with cap 0 to size the array.
 *
 * @param[in]  m         the model
 * @param[in]  text      the text, text_len bytes (any bytes; NUL allowed);
 *                       may be NULL when text_len is 0
 * @param[in]  text_len  its length
 * @param[out] ids       room for cap ids (may be NULL when cap is 0)
 * @param[in]  cap       capacity of ids
 * @param[out] n_ids     the number of ids of this text (set on EMBER_OK and
 *                       when cap is too small)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or cap too
 *         small: nothing useful in ids then); EMBER_ERR_NOT_SUPPORTED (the
 *         normalized text is 2 GiB or more); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates scratch memory for the call and frees it. Thread-safe.
 */
ember_status ember_sp_encode(const ember_sp_model *m, const char *text, size_t text_len,
                             int32_t *ids, size_t cap, size_t *n_ids);

/**
 * The normalized form of a text, as `SentencePieceProcessor.normalize(text)`:
 * the first step of ember_sp_encode(), spaces written "▁" (with
 * escape_whitespaces). Same buffer convention as ember_sp_decode().
 *
 * @param[in]  m         the model
 * @param[in]  text      the text, text_len bytes (may be NULL when 0)
 * @param[in]  text_len  its length
 * @param[out] out       room for cap bytes (may be NULL when cap is 0)
 * @param[in]  cap       capacity of out
 * @param[out] len       the normalized length (set on EMBER_OK and when cap
 *                       is too small)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL, or cap < *len + 1);
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates scratch memory for the call and frees it. Thread-safe.
 */
ember_status ember_sp_normalize(const ember_sp_model *m, const char *text, size_t text_len,
                                char *out, size_t cap, size_t *len);

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Decodes ids into text, byte for byte as `SentencePieceProcessor.decode(ids)`
 * (see the rules at the top of this file).
 *
 * @param[in]  m      the model
 * @param[in]  ids    n ids (may be NULL when n is 0)
 * @param[in]  n      their count
 * @param[out] out    room for cap bytes: the text and a terminating NUL (the
 *                    text itself may contain NUL bytes; use *len). May be
 *                    NULL when cap is 0
 * @param[in]  cap    capacity of out
 * @param[out] len    the text's length without the NUL (set on EMBER_OK and
 *                    when cap is too small: call with cap 0 to size out)
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (an id outside the
 *         vocabulary: the message names it and its position);
 *         EMBER_ERR_INVALID_ARGUMENT (NULL, or cap < *len + 1);
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates scratch memory for the call and frees it. Thread-safe.
 */
ember_status ember_sp_decode(const ember_sp_model *m, const int32_t *ids, size_t n, char *out,
                             size_t cap, size_t *len);

/**
 * The text of one piece on its own, without state: what a streaming caller
 * prints for it. Normal, user-defined and unused pieces give their spelling
 * with "▁" as a space; control pieces give nothing; the unknown piece gives
 * the unk surface; a byte piece gives its one raw byte (possibly part of a
 * UTF-8 character, or invalid UTF-8: ember_sp_stream replaces invalid runs
 * as ember_sp_decode() does).
 *
 * The first-piece rule: pass at_start = true while nothing has been printed
 * yet and the previous piece did not already drop a leading "▁" (check
 * ember_sp_model_strips_leading_space(): when it is false, at_start changes
 * nothing). Then a piece starting with "▁" loses that one space, as the
 * library does for the space that add_dummy_prefix put in front.
 *
 * @param[in]  m         the model
 * @param[in]  id        0 .. vocab size - 1
 * @param[in]  at_start  whether this piece starts the text (see above)
 * @param[out] text      its bytes, owned by the model, valid until it is
 *                       destroyed; not NUL-terminated
 * @param[out] len       their count (0 for control pieces)
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE; EMBER_ERR_INVALID_ARGUMENT.
 * Never allocates. Thread-safe.
 */
ember_status ember_sp_decode_piece(const ember_sp_model *m, int32_t id, bool at_start,
                                   const char **text, size_t *len);

/**
 * Whether decoding drops one leading "▁" from the first piece (the model
 * adds a dummy prefix or removes extra whitespace). false if m is NULL.
 */
bool ember_sp_model_strips_leading_space(const ember_sp_model *m);

/** Incremental decoder: ids in, text out, as generation produces them (opaque). */
typedef struct ember_sp_stream ember_sp_stream;

/**
 * Starts a stream. The text of all ember_sp_stream_push() calls followed by
 * ember_sp_stream_finish() equals ember_sp_decode() of the same ids, except
 * that a model's denormalizer (rare; none of the common LLM families has
 * one) is not applied. Bytes of a UTF-8 character split across byte pieces
 * are held back until the character is complete.
 *
 * @param[in]  m    the model; must outlive the stream
 * @param[out] out  the stream (release with ember_sp_stream_destroy());
 *                  untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe (each stream is used by one thread at a time).
 */
ember_status ember_sp_stream_create(const ember_sp_model *m, ember_sp_stream **out);

/** Releases a stream. NULL is a no-op. */
void ember_sp_stream_destroy(ember_sp_stream *s);

/** Forgets everything pushed so far: the next id starts a new text. NULL is a no-op. */
void ember_sp_stream_reset(ember_sp_stream *s);

/**
 * Adds one id; gives the text that is now final.
 *
 * @param[in]  s     the stream
 * @param[in]  id    0 .. vocab size - 1
 * @param[out] text  the new text (possibly empty), owned by the stream,
 *                   valid until its next call; not NUL-terminated
 * @param[out] len   its length
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (the stream is unchanged);
 *         EMBER_ERR_INVALID_ARGUMENT (NULL).
 * Never allocates.
 */
ember_status ember_sp_stream_push(ember_sp_stream *s, int32_t id, const char **text, size_t *len);

/**
 * Ends the text: gives the bytes still held back (an unfinished UTF-8
 * character from byte pieces, as U+FFFD per byte) and resets the stream.
 *
 * @param[in]  s     the stream
 * @param[out] text  the text (possibly empty), owned by the stream, valid
 *                   until its next call
 * @param[out] len   its length
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL). Never allocates.
 */
ember_status ember_sp_stream_finish(ember_sp_stream *s, const char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_TOKENIZERS_SENTENCEPIECE_H */
