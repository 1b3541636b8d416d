/*
 * extension/llm/chat.c — a model's chat template over a conversation (chat.h).
 */
#include "chat.h"

#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"

struct ember_chat_template {
    ember_jinja_template *tpl;
    char *bos, *eos; /* "" where the tokenizer names none: then left out */
};

static char *dup_text(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d != NULL) memcpy(d, s, n + 1);
    return d;
}

ember_status ember_chat_template_create(const char *source, size_t len, const ember_tokenizer *tok,
                                        ember_chat_template **out) {
    if (out == NULL || (source == NULL && tok == NULL))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_chat_template_create: NULL");
    if (source == NULL) {
        source = ember_tokenizer_chat_template(tok);
        if (source == NULL)
            return ember_error_set(EMBER_ERR_NOT_FOUND,
                                   "the tokenizer has no chat template (tokenizer_config.json's "
                                   "chat_template, or chat_template.jinja)");
        len = strlen(source);
    }
    ember_chat_template *t = calloc(1, sizeof *t);
    if (t == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for a chat template");
    ember_jinja_parse_options po;
    memset(&po, 0, sizeof po);
    po.struct_size = sizeof po;
    po.name = "chat template";
    ember_status st = ember_jinja_parse(source, len, &po, &t->tpl);
    if (st == EMBER_OK) {
        t->bos = dup_text(tok ? ember_tokenizer_bos_text(tok) : "");
        t->eos = dup_text(tok ? ember_tokenizer_eos_text(tok) : "");
        if (t->bos == NULL || t->eos == NULL)
            st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for a chat template");
    }
    if (st != EMBER_OK) {
        ember_chat_template_destroy(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

void ember_chat_template_destroy(ember_chat_template *tpl) {
    if (tpl == NULL) return;
    ember_jinja_template_destroy(tpl->tpl);
    free(tpl->bos);
    free(tpl->eos);
    free(tpl);
}

/* ctx[name] = a string. */
static ember_status set_string(ember_jinja_context *ctx, const char *name, const char *s) {
    ember_jinja_value *v;
    ember_status st = ember_jinja_value_string(ctx, s, strlen(s), &v);
    return st == EMBER_OK ? ember_jinja_context_set(ctx, name, v) : st;
}

static ember_status set_bool(ember_jinja_context *ctx, const char *name, bool b) {
    ember_jinja_value *v;
    ember_status st = ember_jinja_value_bool(ctx, b, &v);
    return st == EMBER_OK ? ember_jinja_context_set(ctx, name, v) : st;
}

static ember_status set_none(ember_jinja_context *ctx, const char *name) {
    ember_jinja_value *v;
    ember_status st = ember_jinja_value_none(ctx, &v);
    return st == EMBER_OK ? ember_jinja_context_set(ctx, name, v) : st;
}

/* messages: a list of {"role": ..., "content": ...}. */
static ember_status set_messages(ember_jinja_context *ctx, const ember_chat_message *m, size_t n) {
    ember_jinja_value *list;
    ember_status st = ember_jinja_value_list(ctx, &list);
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        ember_jinja_value *d, *role, *content;
        if (m[i].role == NULL || m[i].content == NULL)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "message %zu has no role or content",
                                   i);
        st = ember_jinja_value_dict(ctx, &d);
        if (st == EMBER_OK) st = ember_jinja_value_string(ctx, m[i].role, strlen(m[i].role), &role);
        if (st == EMBER_OK)
            st = ember_jinja_value_string(ctx, m[i].content, strlen(m[i].content), &content);
        if (st == EMBER_OK) st = ember_jinja_dict_set(ctx, d, "role", 4, role);
        if (st == EMBER_OK) st = ember_jinja_dict_set(ctx, d, "content", 7, content);
        if (st == EMBER_OK) st = ember_jinja_list_append(ctx, list, d);
    }
    return st == EMBER_OK ? ember_jinja_context_set(ctx, "messages", list) : st;
}

ember_status ember_chat_template_render(const ember_chat_template *tpl,
                                        const ember_chat_message *messages, size_t n,
                                        bool add_generation_prompt, ember_chat_thinking thinking,
                                        char **text, size_t *len) {
    if (tpl == NULL || (messages == NULL && n > 0) || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_chat_template_render: NULL");
    ember_jinja_context *ctx;
    ember_status st = ember_jinja_context_create(&ctx);
    if (st != EMBER_OK) return st;
    st = set_messages(ctx, messages, n);
    if (st == EMBER_OK) st = set_bool(ctx, "add_generation_prompt", add_generation_prompt);
    if (st == EMBER_OK) st = set_none(ctx, "tools");
    if (st == EMBER_OK) st = set_none(ctx, "documents");
    if (st == EMBER_OK && tpl->bos[0] != '\0') st = set_string(ctx, "bos_token", tpl->bos);
    if (st == EMBER_OK && tpl->eos[0] != '\0') st = set_string(ctx, "eos_token", tpl->eos);
    if (st == EMBER_OK && thinking != EMBER_CHAT_THINKING_DEFAULT)
        st = set_bool(ctx, "enable_thinking", thinking == EMBER_CHAT_THINKING_ON);
    if (st == EMBER_OK) st = ember_jinja_render(tpl->tpl, ctx, NULL, text, len);
    ember_jinja_context_destroy(ctx);
    return st;
}
