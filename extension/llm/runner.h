/*
 * extension/llm/runner.h — text generation and chat with an LLM program.
 *
 * The runner loads a `.pte` (through the module helper) and a tokenizer
 * (tokenizer.h: tiktoken, tokenizer.json, SentencePiece or GPT-2's files),
 * encodes a prompt, and generates tokens one at a time, handing each to a
 * callback as soon as it is chosen with the text it completes. It stops at
 * an end-of-generation id (which it does not hand out): the program's
 * get_eos_ids / get_eos_id and the tokenizer's eos and end-of-turn tokens
 * (<|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>, ...), or after
 * max_new_tokens.
 *
 * A chat (ember_llm_chat) keeps a conversation: each message is rendered
 * with the model's chat template (chat.h) and only the tokens the program's
 * cache does not hold yet are run; when the context fills, the oldest
 * messages after the system prompt are dropped (with a note to the caller).
 *
 * The program's method "forward" takes one of two forms, told apart by its
 * input count:
 *
 *   1 input  "seq": tokens int64 [1, T], T in 1..max_seq_len
 *            -> logits float32 [1, 1, vocab] (or [1, T, vocab]: the last row
 *            is used). Every step re-runs the last max_seq_len tokens (the
 *            window slides once the text is longer than that).
 *   2 inputs "kv":  tokens int64 [1, T] and start position int64 [1] (or an
 *            int) -> logits of the last of the T positions. The key/value
 *            cache lives in the program's mutable buffers and holds
 *            max_seq_len positions. The prompt is run once (prefill, start
 *            position 0), then one token per step at the next position. When
 *            the cache is full, the runner starts it over: it prefills the
 *            last kv_keep tokens at position 0 and goes on decoding. With
 *            kv_keep = max_seq_len (the default) every token is predicted
 *            from the same window as with "seq" (and as nanoGPT's generate),
 *            at the price of a full prefill per token once the cache is full;
 *            a smaller kv_keep makes room for max_seq_len - kv_keep decode
 *            steps per prefill, with less context right after it.
 *
 * max_seq_len is the upper bound of input 0's dimension 1 in the program;
 * vocab is the last dimension of output 0.
 *
 * This is an extension: it allocates with malloc.
 */
#ifndef EMBER_LLM_RUNNER_H
#define EMBER_LLM_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "chat.h"
#include "ember/ember.h"
#include "ember/module.h"
#include "sampler.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which form of "forward" the program has. */
typedef enum ember_llm_kind {
    EMBER_LLM_SEQ = 1, /**< tokens only: sliding window, full re-run each step */
    EMBER_LLM_KV = 2   /**< tokens and start position: KV cache, prefill then decode */
} ember_llm_kind;

/** A program, its tokenizer and the generation state (opaque). */
typedef struct ember_llm_runner ember_llm_runner;

/**
 * Called with each generated token as soon as it is chosen.
 * @param user   ember_llm_options.user
 * @param token  the token id
 * @param piece  the text this token completes (a character split across
 *               tokens comes with the token that completes it, so piece may
 *               be empty); empty too when the runner has no tokenizer. After
 *               the last token, where the decoder still held bytes, one more
 *               call with token -1 brings them (an unfinished character as
 *               U+FFFD)
 * @param len    its length in bytes
 */
typedef void (*ember_llm_token_fn)(void *user, int32_t token, const char *piece, size_t len);

/** Generation settings; start from ember_llm_options_default(). */
typedef struct ember_llm_options {
    size_t struct_size;           /**< sizeof(ember_llm_options) */
    size_t max_new_tokens;        /**< at most this many tokens (default 128) */
    ember_sampler_config sampler; /**< how to pick each token */
    size_t kv_keep;               /**< kv: tokens kept when the cache is full,
                                       1 .. max_seq_len; 0 means max_seq_len
                                       (the default) */
    ember_llm_token_fn on_token;  /**< may be NULL */
    void *user;                   /**< passed to on_token */
} ember_llm_options;

/** Defaults: 128 new tokens, ember_sampler_config_default(), kv_keep 0, no callback. */
ember_llm_options ember_llm_options_default(void);

/** What one generation took. Times in milliseconds. */
typedef struct ember_llm_stats {
    size_t prompt_tokens;    /**< tokens in the prompt */
    size_t generated_tokens; /**< tokens handed out (the end token not counted) */
    double prefill_ms;       /**< running the model on the prompt */
    double ttft_ms;          /**< start of generation to the first token chosen */
    double decode_ms;        /**< first token chosen to the last one chosen */
    size_t decode_steps;     /**< model runs in decode_ms */
    size_t cache_restarts;  /**< kv: times the cache was started over */
} ember_llm_stats;

/**
 * Loads the program and the tokenizer and checks that they fit together.
 *
 * Programs from ExecuTorch's LLM export carry metadata methods (methods
 * without inputs returning constants); the runner reads those it knows:
 * get_max_seq_len (lowers max_seq_len), use_kv_cache and get_vocab_size
 * (checked against "forward"), get_bos_id (see ember_llm_runner_bos_id())
 * and get_eos_ids / get_eos_id (generation also stops at these).
 *
 * @param[in]  model_path     the `.pte` file
 * @param[in]  tokenizer_dir  a tokenizer file or a model directory (see
 *                            ember_tokenizer_load()), or
 *                            NULL for a runner that works on token ids only
 *                            (ember_llm_runner_generate_ids(); pieces handed
 *                            to on_token are then empty)
 * @param[out] out            the runner (release with ember_llm_runner_destroy())
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, a corrupt
 *         tokenizer file, or a program whose "forward" does not have one of
 *         the two forms above, or whose vocabulary is smaller than the
 *         tokenizer's, or metadata that contradicts "forward" or names ids
 *         outside its vocabulary: the message says which); any status of
 *         ember_module_load() and ember_module_method() (EMBER_ERR_IO,
 *         EMBER_ERR_INVALID_PROGRAM, EMBER_ERR_OPERATOR_MISSING, ...);
 *         EMBER_ERR_OUT_OF_MEMORY. ember_last_error() says which file failed.
 * Allocates.
 */
ember_status ember_llm_runner_load(const char *model_path, const char *tokenizer_dir,
                                   ember_llm_runner **out);

/**
 * ember_llm_runner_load() on num_threads threads (0: one per CPU core, the
 * default; 1: the calling thread only).
 */
ember_status ember_llm_runner_load_with(const char *model_path, const char *tokenizer_dir,
                                        size_t num_threads, ember_llm_runner **out);

/**
 * ember_llm_runner_load() with module options: threads, and the `.ptd` data
 * files holding weights the program keeps outside itself (see
 * ember_module_load_with()). options NULL is the same as
 * ember_llm_runner_load().
 * @return as ember_llm_runner_load(), and any status of
 *         ember_module_load_with() for the options and data files.
 */
ember_status ember_llm_runner_open(const char *model_path, const char *tokenizer_dir,
                                   const ember_module_options *options, ember_llm_runner **out);

/** Releases the runner, its program and its tokenizer. NULL is a no-op. */
void ember_llm_runner_destroy(ember_llm_runner *runner);

/** The program's form: EMBER_LLM_SEQ or EMBER_LLM_KV. */
ember_llm_kind ember_llm_runner_kind(const ember_llm_runner *runner);

/** Most tokens the program takes at once (the window, or the cache length). */
size_t ember_llm_runner_max_seq_len(const ember_llm_runner *runner);

/** Logits per step (the model's vocabulary size). */
size_t ember_llm_runner_vocab_size(const ember_llm_runner *runner);

/** The token the program's metadata puts before a prompt (get_bos_id), or -1. */
int32_t ember_llm_runner_bos_id(const ember_llm_runner *runner);

/** The tokenizer, owned by the runner (NULL when loaded without one). */
const ember_tokenizer *ember_llm_runner_tokenizer(const ember_llm_runner *runner);

/**
 * The ids that end generation: the program's get_eos_ids (or get_eos_id)
 * and the tokenizer's eos and end-of-turn ids.
 * @param[out] ids  room for cap ids
 * @return how many there are (only cap are written).
 */
size_t ember_llm_runner_stop_ids(const ember_llm_runner *runner, int32_t *ids, size_t cap);

/**
 * Encodes a prompt as ember_llm_runner_generate() does: special tokens
 * written in the text become their ids, and the program's BOS
 * (get_bos_id) goes in front where it names one and the text does not
 * begin with it.
 * @param[out] ids  malloc'd (free() it)
 * @param[out] n    their count
 * @return EMBER_OK; EMBER_ERR_INVALID_STATE (no tokenizer); any status of
 *         ember_tokenizer_encode().
 */
ember_status ember_llm_runner_encode(const ember_llm_runner *runner, const char *text, size_t len,
                                     int32_t **ids, size_t *n);

/**
 * The runner's loaded method ("forward"), owned by the runner: to attach an
 * event tracer (ember_method_set_event_tracer()) or read its outputs.
 */
ember_method *ember_llm_runner_method(ember_llm_runner *runner);

/** Milliseconds ember_llm_runner_load() took (program, method and tokenizer). */
double ember_llm_runner_load_ms(const ember_llm_runner *runner);

/** The runner's module, owned by the runner: e.g. for
 *  ember_module_weight_cache_info(). */
const ember_module *ember_llm_runner_module(const ember_llm_runner *runner);

/**
 * Encodes prompt and generates from it (see ember_llm_runner_generate_ids()).
 *
 * @param[in,out] runner      the runner
 * @param[in]     prompt      UTF-8 text, prompt_len bytes
 * @param[in]     prompt_len  its length
 * @param[in]     options     settings, or NULL for the defaults
 * @param[out]    stats       filled in on success; may be NULL
 * @return as ember_llm_runner_generate_ids(); EMBER_ERR_INVALID_STATE for a
 *         runner without a tokenizer.
 */
ember_status ember_llm_runner_generate(ember_llm_runner *runner, const char *prompt,
                                       size_t prompt_len, const ember_llm_options *options,
                                       ember_llm_stats *stats);

/**
 * Generates from prompt token ids. Each new token goes to options->on_token
 * as soon as it is chosen. The program's cache (kv) is started over at the
 * beginning of every call.
 *
 * @param[in,out] runner     the runner
 * @param[in]     prompt     token ids, each below the model's vocabulary size
 * @param[in]     n_prompt   their count, 1 .. max_seq_len
 * @param[in]     options    settings, or NULL for the defaults
 * @param[out]    stats      filled in on success; may be NULL
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (empty prompt, a prompt longer
 *         than max_seq_len tokens, an id out of range, kv_keep above
 *         max_seq_len, bad sampler settings:
 *         the message says which); EMBER_ERR_OUT_OF_MEMORY; any status of
 *         ember_method_execute() (the message names the instruction).
 * Allocates the token history for the call.
 */
ember_status ember_llm_runner_generate_ids(ember_llm_runner *runner, const int32_t *prompt,
                                           size_t n_prompt, const ember_llm_options *options,
                                           ember_llm_stats *stats);

/**
 * Generates from token ids as ember_llm_runner_generate_ids() does, except
 * that the program's cache is not started over: the positions it holds
 * where they equal the first of these tokens are kept, and only the rest
 * run. A caller that keeps a conversation's tokens (what ran, the tokens
 * chosen, then the next turn's) passes them all each time and pays only for
 * the new ones, as a chat does. With options->max_new_tokens 0 the tokens
 * are run and nothing is generated (a prefill). For a "seq" program this is
 * ember_llm_runner_generate_ids().
 * @return as ember_llm_runner_generate_ids().
 */
ember_status ember_llm_runner_continue_ids(ember_llm_runner *runner, const int32_t *tokens,
                                           size_t n_tokens, const ember_llm_options *options,
                                           ember_llm_stats *stats);

/* ------------------------------------------------------------------------ */
/* Chat                                                                      */
/* ------------------------------------------------------------------------ */

/** A conversation with a runner's model (opaque). */
typedef struct ember_llm_chat ember_llm_chat;

/** Called with a line for the user (e.g. "the context is full: ..."). */
typedef void (*ember_llm_note_fn)(void *user, const char *note);

/** Chat settings; start from ember_llm_chat_options_default(). */
typedef struct ember_llm_chat_options {
    size_t struct_size;          /**< sizeof(ember_llm_chat_options) */
    const char *system;          /**< the system prompt, or NULL for none */
    const char *chat_template;   /**< Jinja text; NULL: the tokenizer's */
    ember_chat_thinking thinking; /**< Qwen 3's enable_thinking */
    ember_llm_note_fn on_note;   /**< may be NULL */
    void *note_user;             /**< passed to on_note */
} ember_llm_chat_options;

/** Defaults: no system prompt, the tokenizer's template, no notes. */
ember_llm_chat_options ember_llm_chat_options_default(void);

/**
 * Starts a conversation. The runner must outlive it, and one chat at a time
 * uses a runner (they share its program's cache).
 * @return EMBER_OK; EMBER_ERR_INVALID_STATE (the runner has no tokenizer);
 *         any status of ember_chat_template_create(); EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_llm_chat_create(ember_llm_runner *runner, const ember_llm_chat_options *options,
                                   ember_llm_chat **out);

/** Ends a conversation. NULL is a no-op. */
void ember_llm_chat_destroy(ember_llm_chat *chat);

/**
 * Adds a user message and generates the assistant's reply, which is added
 * to the conversation. The whole conversation is rendered with the chat
 * template; the tokens the program's cache already holds (the conversation
 * so far, where the template renders it as before) are not run again. Where
 * the conversation no longer fits the model's context with room for the
 * reply, its oldest messages after the system prompt are dropped (on_note
 * says so) and the rest is run again.
 *
 * @param[in,out] chat     the conversation
 * @param[in]     user     the message, UTF-8, NUL-terminated
 * @param[in]     options  generation settings (on_token streams the reply),
 *                         or NULL for the defaults
 * @param[out]    reply    the reply's text, malloc'd and NUL-terminated
 *                         (free() it); may be NULL
 * @param[out]    stats    may be NULL; prompt_tokens counts the tokens run
 * @return EMBER_OK; any status of ember_chat_template_render() (a template
 *         that refuses the conversation), ember_tokenizer_encode() and
 *         ember_llm_runner_generate_ids(). On failure the user message is
 *         not kept.
 */
ember_status ember_llm_chat_send(ember_llm_chat *chat, const char *user,
                                 const ember_llm_options *options, char **reply,
                                 ember_llm_stats *stats);

/**
 * Adds a message without generating: the history of a conversation given as
 * a list (a first "system" message becomes the system prompt).
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL); EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_llm_chat_add(ember_llm_chat *chat, const char *role, const char *content);

/**
 * Generates the assistant's reply to the conversation as it stands (its last
 * message is usually the user's) and adds it, as ember_llm_chat_send() does
 * after adding the user message.
 * @return as ember_llm_chat_send().
 */
ember_status ember_llm_chat_reply(ember_llm_chat *chat, const ember_llm_options *options,
                                  char **reply, ember_llm_stats *stats);

/** Messages in the conversation now (system prompt included). */
size_t ember_llm_chat_messages(const ember_llm_chat *chat);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_RUNNER_H */
