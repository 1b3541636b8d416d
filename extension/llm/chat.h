/*
 * extension/llm/chat.h — a model's chat template over a conversation.
 *
 * The template is the Jinja text the model ships (tokenizer_config.json's
 * chat_template, or chat_template.jinja), rendered by ember's Jinja engine
 * (jinja/jinja.h) with the variables transformers' apply_chat_template
 * gives it: messages (a list of {"role", "content"}), add_generation_prompt,
 * tools and documents (None), the tokenizer's bos_token and eos_token where
 * it names them, and enable_thinking where the caller sets it (Qwen 3).
 * The text it makes holds the special tokens as text; encode it with
 * EMBER_ENCODE_SPECIAL.
 *
 * This is an extension: it allocates with malloc. A chat template is
 * immutable once made; renders may run on several threads at once.
 */
#ifndef EMBER_LLM_CHAT_H
#define EMBER_LLM_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "ember/ember.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One message of a conversation (UTF-8, NUL-terminated strings). */
typedef struct ember_chat_message {
    const char *role;    /**< "system", "user", "assistant", ... */
    const char *content; /**< its text */
} ember_chat_message;

/** A parsed chat template (opaque). */
typedef struct ember_chat_template ember_chat_template;

/** enable_thinking: left out (the template's default), false or true. */
typedef enum ember_chat_thinking {
    EMBER_CHAT_THINKING_DEFAULT = 0,
    EMBER_CHAT_THINKING_OFF = 1,
    EMBER_CHAT_THINKING_ON = 2
} ember_chat_thinking;

/**
 * Parses a chat template.
 *
 * @param[in]  source  the template text, len bytes; NULL for the one tok
 *                     carries (ember_tokenizer_chat_template())
 * @param[in]  len     its length (ignored when source is NULL)
 * @param[in]  tok     gives bos_token and eos_token; may be NULL (they are
 *                     then left out) unless source is NULL
 * @param[out] out     the template (release with ember_chat_template_destroy())
 * @return EMBER_OK; EMBER_ERR_NOT_FOUND (source is NULL and the tokenizer has
 *         no chat template); EMBER_ERR_INVALID_ARGUMENT (NULL, or a syntax
 *         error: "chat template:LINE:COL: what"); EMBER_ERR_NOT_SUPPORTED (a
 *         Jinja construct ember's engine does not have, named);
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates.
 */
ember_status ember_chat_template_create(const char *source, size_t len, const ember_tokenizer *tok,
                                        ember_chat_template **out);

/** Releases a template. NULL is a no-op. */
void ember_chat_template_destroy(ember_chat_template *tpl);

/**
 * Renders a conversation.
 *
 * @param[in]  tpl                    the template
 * @param[in]  messages               n messages
 * @param[in]  n                      their count
 * @param[in]  add_generation_prompt  end with the header of the assistant's turn
 * @param[in]  thinking               Qwen 3's enable_thinking
 * @param[out] text                   malloc'd, NUL-terminated (free() it)
 * @param[out] len                    its length in bytes
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL, a message that is not
 *         UTF-8, or the template refusing the conversation through
 *         raise_exception: the message is the template's);
 *         EMBER_ERR_LOOP_LIMIT; EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_chat_template_render(const ember_chat_template *tpl,
                                        const ember_chat_message *messages, size_t n,
                                        bool add_generation_prompt, ember_chat_thinking thinking,
                                        char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_CHAT_H */
