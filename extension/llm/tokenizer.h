/*
 * extension/llm/tokenizer.h — one interface for the tokenizers LLMs ship.
 *
 * ember_tokenizer_load() reads a tokenizer from a file or a model directory
 * and tells its format from the content, not the file name:
 *
 *   tiktoken        a rank file: one "<base64 token> <rank>" per line (Llama
 *                   3's tokenizer.model). The split pattern and the special
 *                   tokens are not in the file: the caller gives them
 *                   (ember_tokenizer_options), else Llama 3's are used;
 *   Hugging Face    tokenizer.json: normalizer, pre-tokenizer, model (BPE,
 *                   Unigram, WordPiece), decoder and added tokens; with
 *                   tokenizer_config.json beside it for the bos and eos
 *                   tokens and the chat template;
 *   SentencePiece   a ModelProto (Gemma's, Llama 2's tokenizer.model): BPE
 *                   or Unigram, byte fallback, its normalization rules;
 *   GPT-2 BPE       vocab.json and merges.txt (a directory holding both, or
 *                   the vocab.json beside its merges.txt).
 *
 * A directory is searched for tokenizer.json, then tokenizer.model, then
 * vocab.json + merges.txt. A feature a file uses and ember does not
 * implement fails the load with EMBER_ERR_NOT_SUPPORTED and a message that
 * names the file and the feature; a malformed file fails with
 * EMBER_ERR_INVALID_ARGUMENT naming the file and the place.
 *
 * Encoding turns text into ids as the format's reference library does
 * without adding special tokens (Hugging Face `encode(text,
 * add_special_tokens=False)`, tiktoken `encode(text, allowed_special=
 * "all")`, SentencePiece `encode(text)`): with EMBER_ENCODE_SPECIAL, the
 * spellings of special tokens written in the text become their ids (chat
 * templates write them so); without it they are ordinary text. Decoding is
 * per token and streaming-safe (ember_token_decoder): bytes of a character
 * split across tokens are held until the character is complete, and the
 * whole output equals the reference library's decode of the same ids.
 *
 * This is an extension: it allocates with malloc. A loaded tokenizer is
 * immutable; encode and decode may run on several threads at once.
 */
#ifndef EMBER_LLM_TOKENIZER_H
#define EMBER_LLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded tokenizer (opaque). */
typedef struct ember_tokenizer ember_tokenizer;

/** The file format a tokenizer came from. */
typedef enum ember_tokenizer_format {
    EMBER_TOKENIZER_TIKTOKEN = 1,      /**< base64 rank file */
    EMBER_TOKENIZER_HUGGINGFACE = 2,   /**< tokenizer.json */
    EMBER_TOKENIZER_SENTENCEPIECE = 3, /**< SentencePiece ModelProto */
    EMBER_TOKENIZER_GPT2 = 4           /**< vocab.json + merges.txt */
} ember_tokenizer_format;

/** Load settings; start from ember_tokenizer_options_default(). */
typedef struct ember_tokenizer_options {
    size_t struct_size; /**< sizeof(ember_tokenizer_options) */
    /** tiktoken: the split pattern (UTF-8, NUL-terminated); NULL: Llama 3's. */
    const char *pattern;
    /** tiktoken: the special tokens, ids from the number of ranks on in this
     *  order; NULL: Llama 3's 256 (<|begin_of_text|>, <|end_of_text|>, ...,
     *  <|eot_id|>, ...). */
    const char *const *special_tokens;
    size_t num_special_tokens; /**< entries of special_tokens */
} ember_tokenizer_options;

/** Default options (Llama 3's pattern and special tokens for tiktoken). */
ember_tokenizer_options ember_tokenizer_options_default(void);

/**
 * Loads a tokenizer from a file or a model directory (see the top of this
 * file for the formats and the search order).
 *
 * @param[in]  path     file or directory; not kept
 * @param[in]  options  NULL for the defaults
 * @param[out] out      the tokenizer (release with ember_tokenizer_destroy());
 *                      untouched on failure
 * @return EMBER_OK; EMBER_ERR_IO (cannot open or read); EMBER_ERR_NOT_FOUND
 *         (a directory with no tokenizer file); EMBER_ERR_INVALID_ARGUMENT
 *         (a NULL argument, or a malformed file: the message names the file
 *         and the place); EMBER_ERR_NOT_SUPPORTED (a format or feature ember
 *         does not implement, named in the message); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_tokenizer_load(const char *path, const ember_tokenizer_options *options,
                                  ember_tokenizer **out);

/**
 * Loads a tokenizer from a file's contents in memory; the format is told
 * from the content as for ember_tokenizer_load(). GPT-2's two files and
 * tokenizer_config.json need ember_tokenizer_load().
 *
 * @param[in]  data     the file's bytes (need not be NUL-terminated); not kept
 * @param[in]  len      their count
 * @param[in]  name     what messages call the file (e.g. "tokenizer.json")
 * @param[in]  options  NULL for the defaults
 * @param[out] out      the tokenizer; untouched on failure
 * @return as ember_tokenizer_load(), without EMBER_ERR_IO and NOT_FOUND.
 * Allocates.
 */
ember_status ember_tokenizer_load_memory(const void *data, size_t len, const char *name,
                                         const ember_tokenizer_options *options,
                                         ember_tokenizer **out);

/** Releases a tokenizer. NULL is a no-op. */
void ember_tokenizer_destroy(ember_tokenizer *tok);

/** The format the tokenizer was read from. */
ember_tokenizer_format ember_tokenizer_get_format(const ember_tokenizer *tok);

/** Number of ids: one more than the largest id (special tokens included). */
size_t ember_tokenizer_vocab_size(const ember_tokenizer *tok);

/**
 * The id of a token by its spelling (e.g. "<|eot_id|>", "<end_of_turn>", or
 * an ordinary token in the file's own spelling).
 * @return EMBER_OK; EMBER_ERR_NOT_FOUND; EMBER_ERR_INVALID_ARGUMENT (NULL).
 * Never allocates.
 */
ember_status ember_tokenizer_token_id(const ember_tokenizer *tok, const char *token, size_t len,
                                      int32_t *id);

/**
 * The spelling of a token as the file has it (byte-level or "▁" forms
 * included), for display and lookups; not what decoding prints.
 * @param[out] text  owned by the tokenizer, valid until it is destroyed
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (no such id);
 *         EMBER_ERR_INVALID_ARGUMENT (NULL).
 */
ember_status ember_tokenizer_token_text(const ember_tokenizer *tok, int32_t id, const char **text,
                                        size_t *len);

/** Whether id is a special (control) token: bos, eos, end of turn, padding... */
bool ember_tokenizer_is_special(const ember_tokenizer *tok, int32_t id);

/**
 * The beginning-of-sequence id the tokenizer names (tokenizer_config.json's
 * bos_token, SentencePiece's bos piece, <|begin_of_text|> for tiktoken), or
 * -1 where it names none.
 */
int32_t ember_tokenizer_bos_id(const ember_tokenizer *tok);

/**
 * The ids that end generation as far as the tokenizer knows: its eos token
 * and the end-of-turn tokens it has (<|eot_id|>, <|eom_id|>, <|im_end|>,
 * <end_of_turn>, <|end|>, <|endoftext|>, ...). A model's program may name
 * more (its get_eos_ids method); the runner takes both.
 * @param[out] ids  room for cap ids
 * @return the number of ids (may exceed cap: only cap are written).
 */
size_t ember_tokenizer_eos_ids(const ember_tokenizer *tok, int32_t *ids, size_t cap);

/**
 * The chat template tokenizer_config.json (or chat_template.jinja beside it)
 * carries, NUL-terminated, owned by the tokenizer; NULL where there is none.
 */
const char *ember_tokenizer_chat_template(const ember_tokenizer *tok);

/**
 * The spelling of the bos / eos token tokenizer_config.json names (for chat
 * templates' bos_token and eos_token), NUL-terminated, owned by the
 * tokenizer; "" where it names none.
 */
const char *ember_tokenizer_bos_text(const ember_tokenizer *tok);
const char *ember_tokenizer_eos_text(const ember_tokenizer *tok);

/** ember_tokenizer_encode() flags. */
enum {
    /** Special tokens written in the text become their ids. */
    EMBER_ENCODE_SPECIAL = 1u << 0
};

/**
 * Encodes text into ids (no bos or eos is added).
 *
 * @param[in]  tok    the tokenizer
 * @param[in]  text   UTF-8 text, len bytes (may hold NUL bytes; invalid
 *                    UTF-8 is encoded as the format's reference does with
 *                    its bytes, or fails with EMBER_ERR_INVALID_ARGUMENT
 *                    where the format cannot hold it)
 * @param[in]  flags  EMBER_ENCODE_* bits
 * @param[out] ids    malloc'd array of *n ids (free() it; may be NULL when
 *                    *n is 0)
 * @param[out] n      number of ids
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT; EMBER_ERR_OUT_OF_MEMORY;
 *         EMBER_ERR_DATA_OUT_OF_BOUNDS (the text is beyond the pre-tokenizer's
 *         matching budget: a pathological pattern).
 * Allocates. Thread-safe.
 */
ember_status ember_tokenizer_encode(const ember_tokenizer *tok, const char *text, size_t len,
                                    unsigned flags, int32_t **ids, size_t *n);

/**
 * Decodes ids into text, as the reference library's decode does (invalid
 * UTF-8 becomes U+FFFD as it does).
 * @param[out] text  malloc'd, NUL-terminated (free() it)
 * @param[out] len   bytes before the NUL
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (an id the tokenizer does not
 *         have); EMBER_ERR_INVALID_ARGUMENT; EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_tokenizer_decode(const ember_tokenizer *tok, const int32_t *ids, size_t n,
                                    char **text, size_t *len);

/**
 * Streaming decode: ids go in one at a time, text comes out as soon as it is
 * certain. Bytes of a UTF-8 character split across tokens are held until it
 * is complete; an invalid sequence becomes U+FFFD once no later byte can
 * complete it (at the latest by ember_token_decoder_finish()). The
 * concatenated output equals ember_tokenizer_decode() of the same ids.
 */
typedef struct ember_token_decoder ember_token_decoder;

/**
 * A decoder for tok (which must outlive it).
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT; EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_token_decoder_create(const ember_tokenizer *tok, ember_token_decoder **out);

/** Releases a decoder. NULL is a no-op. */
void ember_token_decoder_destroy(ember_token_decoder *dec);

/** Starts a new text (as after create): held bytes are dropped. */
void ember_token_decoder_reset(ember_token_decoder *dec);

/**
 * Adds one id.
 * @param[out] text  the text now certain (may be empty), owned by the
 *                   decoder, valid until its next call
 * @param[out] len   its length
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (no such id: nothing changes);
 *         EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_token_decoder_push(ember_token_decoder *dec, int32_t id, const char **text,
                                      size_t *len);

/**
 * Ends the text: what is still held comes out (an incomplete character as
 * U+FFFD, as the reference does), and the decoder starts a new text.
 * @param[out] text, len  as ember_token_decoder_push()
 * @return EMBER_OK; EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_token_decoder_finish(ember_token_decoder *dec, const char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_TOKENIZER_H */
