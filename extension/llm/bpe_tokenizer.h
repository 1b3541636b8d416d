/*
 * extension/llm/bpe_tokenizer.h — GPT-2's byte-level BPE tokenizer.
 *
 * Reads the two files GPT-2 and Hugging Face tokenizers ship:
 *
 *   vocab.json   {"token": id, ...}: every token in its byte-level form, in
 *                which each byte is one printable code point (GPT-2's
 *                bytes-to-unicode map: "Ġ" is the space byte, ...)
 *   merges.txt   one merge "left right" per line, best (lowest rank) first;
 *                lines starting "#version" and empty lines are skipped
 *
 * and encodes text exactly as GPT-2's tokenizer does (the `tokenizers`
 * library's ByteLevel pre-tokenizer without prefix space plus its BPE model):
 *
 *   1. special tokens (vocabulary entries written "<|...|>", such as
 *      "<|endoftext|>") are split off first and become their own ids;
 *   2. the rest is cut into pieces by GPT-2's pattern
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      (matched by hand, with Unicode class tables; bytes that are not valid
 *      UTF-8 count as one "other" character each);
 *   3. each piece's bytes become their byte tokens, merged pair by pair,
 *      lowest merge rank first, leftmost first among equal ranks.
 *
 * Decoding maps a token back to its bytes. Every byte must have its own
 * token in vocab.json (GPT-2's and every byte-level trained vocabulary do),
 * so any text can be encoded and decode(encode(text)) == text.
 *
 * This is an extension: it allocates with malloc. A loaded tokenizer is
 * immutable; encode and decode may run on several threads at once.
 */
#ifndef EMBER_LLM_BPE_TOKENIZER_H
#define EMBER_LLM_BPE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest token id accepted in vocab.json (GPT-2 has 50257 tokens). */
#define EMBER_BPE_MAX_ID ((1 << 24) - 1)

/** A loaded byte-level BPE tokenizer (opaque). */
typedef struct ember_bpe_tokenizer ember_bpe_tokenizer;

/**
 * Loads a tokenizer from vocab.json and merges.txt.
 *
 * @param[in]  vocab_path   path of vocab.json; not kept
 * @param[in]  merges_path  path of merges.txt; not kept
 * @param[out] out          the tokenizer (release with
 *                          ember_bpe_tokenizer_destroy()); untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or a file
 *         that is not a valid vocabulary / merge list: the message names the
 *         file, the line and what is wrong); EMBER_ERR_IO (a file cannot be
 *         opened or read); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_bpe_tokenizer_load(const char *vocab_path, const char *merges_path,
                                      ember_bpe_tokenizer **out);

/**
 * Loads DIR/vocab.json and DIR/merges.txt (see ember_bpe_tokenizer_load()).
 *
 * @param[in]  dir  directory holding both files; not kept
 * @param[out] out  the tokenizer; untouched on failure
 * @return as ember_bpe_tokenizer_load().
 */
ember_status ember_bpe_tokenizer_load_dir(const char *dir, ember_bpe_tokenizer **out);

/**
 * Loads a tokenizer from the two files' contents in memory.
 *
 * @param[in]  vocab       contents of vocab.json (need not be NUL-terminated)
 * @param[in]  vocab_len   its length in bytes
 * @param[in]  merges      contents of merges.txt (may be NULL when merges_len is 0)
 * @param[in]  merges_len  its length in bytes
 * @param[out] out         the tokenizer; untouched on failure
 * @return as ember_bpe_tokenizer_load(), without EMBER_ERR_IO. Messages call
 *         the inputs "vocab.json" and "merges.txt".
 * Allocates; keeps no pointer into the inputs.
 */
ember_status ember_bpe_tokenizer_load_memory(const char *vocab, size_t vocab_len,
                                             const char *merges, size_t merges_len,
                                             ember_bpe_tokenizer **out);

/** Releases a tokenizer. NULL is a no-op. */
void ember_bpe_tokenizer_destroy(ember_bpe_tokenizer *tok);

/**
 * Number of token ids: the largest id in vocab.json plus one (ids without a
 * token, if any, count too). 0 if tok is NULL.
 */
size_t ember_bpe_tokenizer_vocab_size(const ember_bpe_tokenizer *tok);

/** Number of merges read from merges.txt. 0 if tok is NULL. */
size_t ember_bpe_tokenizer_merge_count(const ember_bpe_tokenizer *tok);

/**
 * Looks up the id of a token by its vocab.json spelling, e.g. "<|endoftext|>".
 *
 * @param[in]  tok    the tokenizer
 * @param[in]  token  the spelling (byte-level form), len bytes
 * @param[in]  len    its length
 * @param[out] id     the id when found
 * @return EMBER_OK; EMBER_ERR_NOT_FOUND (no such token);
 *         EMBER_ERR_INVALID_ARGUMENT (a NULL argument).
 * Never allocates.
 */
ember_status ember_bpe_tokenizer_token_id(const ember_bpe_tokenizer *tok, const char *token,
                                          size_t len, int32_t *id);

/**
 * Encodes text into token ids. A text of n bytes never needs more than n ids,
 * so an ids array of text_len entries always suffices.
 *
 * @param[in]  tok       the tokenizer
 * @param[in]  text      UTF-8 text (invalid bytes are encoded as themselves),
 *                       text_len bytes; may contain NUL bytes
 * @param[in]  text_len  its length
 * @param[out] ids       room for cap ids
 * @param[in]  cap       capacity of ids
 * @param[out] n_ids     number of ids written
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or cap too
 *         small for this text); EMBER_ERR_OUT_OF_MEMORY (scratch memory).
 * Allocates scratch memory for the call and frees it. Thread-safe.
 */
ember_status ember_bpe_tokenizer_encode(const ember_bpe_tokenizer *tok, const char *text,
                                        size_t text_len, int32_t *ids, size_t cap,
                                        size_t *n_ids);

/**
 * The bytes one token stands for (special tokens give their spelling). Bytes
 * of one UTF-8 character may be split across consecutive tokens: print the
 * pieces in order and the text comes out right.
 *
 * @param[in]  tok    the tokenizer
 * @param[in]  id     token id
 * @param[out] bytes  the token's bytes, owned by the tokenizer, valid until it
 *                    is destroyed; not NUL-terminated
 * @param[out] len    their count
 * @return EMBER_OK; EMBER_ERR_INDEX_OUT_OF_RANGE (id is negative, too large,
 *         or an id that vocab.json leaves unused); EMBER_ERR_INVALID_ARGUMENT.
 * Never allocates. Thread-safe.
 */
ember_status ember_bpe_tokenizer_decode(const ember_bpe_tokenizer *tok, int32_t id,
                                        const char **bytes, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_BPE_TOKENIZER_H */
