/*
 * bindings/java/jni/llm_jni.c — org.pytorch.executorch.extension.llm.LlmModule
 * over ember's LLM runner (extension/llm/runner.h).
 *
 * A module keeps its conversation as ExecuTorch's runner does: the tokens
 * run so far, so that each generate() or prefillPrompt() continues it and
 * runs only its new tokens, until resetContext(). The first text of a
 * conversation is encoded as ember-llm does (the program's BOS token first
 * when its metadata names one); later texts follow without one.
 *
 * generate() echoes the prompt and runs the runner with a token callback
 * that hands text to LlmCallback.onResult. Token pieces are bytes, and one
 * UTF-8 character may span tokens: the callback holds back an incomplete
 * character until the token that completes it, so every String handed to
 * Java decodes cleanly.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember_jni.h"
#include "runner.h"

/* A module's native state: the runner and the conversation's tokens. */
typedef struct llm_state {
    ember_llm_runner *r;
    int32_t *ctx; /* (n_ctx) the tokens run so far, then the ones chosen */
    size_t n_ctx, cap;
} llm_state;

static llm_state *state_of(jlong handle) { return (llm_state *)(intptr_t)handle; }

/* Appends ids to the conversation; false when out of memory. */
static bool ctx_append(llm_state *m, const int32_t *ids, size_t n) {
    if (n > SIZE_MAX / sizeof *ids - m->n_ctx) return false;
    if (m->n_ctx + n > m->cap) {
        size_t cap = m->cap * 2 > m->n_ctx + n ? m->cap * 2 : m->n_ctx + n;
        if (cap > SIZE_MAX / sizeof *ids) cap = m->n_ctx + n;
        int32_t *p = realloc(m->ctx, cap * sizeof *p);
        if (p == NULL) return false;
        m->ctx = p;
        m->cap = cap;
    }
    if (n > 0) memcpy(m->ctx + m->n_ctx, ids, n * sizeof *ids);
    m->n_ctx += n;
    return true;
}

JNIEXPORT jlong JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativeLoad(
    JNIEnv *env, jclass cls, jstring jmodel, jstring jtokenizer, jstring jdata) {
    (void)cls;
    const char *model = (*env)->GetStringUTFChars(env, jmodel, NULL);
    const char *tok = model != NULL ? (*env)->GetStringUTFChars(env, jtokenizer, NULL) : NULL;
    const char *data = tok != NULL && jdata != NULL ? (*env)->GetStringUTFChars(env, jdata, NULL)
                                                    : NULL;
    jlong handle = 0;
    if (model == NULL || tok == NULL || (jdata != NULL && data == NULL)) goto done;

    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.num_threads = 0;
    mo.data_files = data != NULL ? &data : NULL;
    mo.num_data_files = data != NULL ? 1 : 0;
    llm_state *m = calloc(1, sizeof *m);
    if (m == NULL) {
        ember_jni_throw_status(env, EMBER_ERR_OUT_OF_MEMORY, "loading the LLM");
        goto done;
    }
    ember_status st = ember_llm_runner_open(model, tok, &mo, &m->r);
    if (st != EMBER_OK) {
        free(m);
        ember_jni_throw_status(env, st, "loading the LLM");
        goto done;
    }
    handle = (jlong)(intptr_t)m;
done:
    if (data != NULL) (*env)->ReleaseStringUTFChars(env, jdata, data);
    if (tok != NULL) (*env)->ReleaseStringUTFChars(env, jtokenizer, tok);
    if (model != NULL) (*env)->ReleaseStringUTFChars(env, jmodel, model);
    return handle;
}

JNIEXPORT void JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativeDestroy(
    JNIEnv *env, jclass cls, jlong handle) {
    (void)env;
    (void)cls;
    llm_state *m = state_of(handle);
    if (m == NULL) return;
    ember_llm_runner_destroy(m->r);
    free(m->ctx);
    free(m);
}

JNIEXPORT void JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativeResetContext(
    JNIEnv *env, jclass cls, jlong handle) {
    (void)env;
    (void)cls;
    state_of(handle)->n_ctx = 0;
}

/* ------------------------------------------------------------------------ */
/* Streaming text to the callback                                            */
/* ------------------------------------------------------------------------ */

typedef struct stream {
    JNIEnv *env;
    jclass module_class; /* LlmModule, for its static emit(callback, byte[]) */
    jmethodID emit;
    jobject callback;
    char *pending; /* bytes not handed out yet: at most one incomplete character */
    size_t len, cap;
    bool failed;   /* a Java exception is pending: hand out nothing more */
    int32_t *chosen; /* (n_chosen) the tokens generated, for the conversation */
    size_t n_chosen, cap_chosen;
    bool lost;     /* out of memory for chosen */
} stream;

/* Bytes of pending[0..len) that form complete UTF-8 characters (invalid
 * bytes count as complete: the decoder replaces them). */
static size_t complete_prefix(const unsigned char *b, size_t len) {
    size_t start = len;
    size_t back = 0;
    while (start > 0 && back < 4 && (b[start - 1] & 0xC0) == 0x80) {
        start--;
        back++;
    }
    if (start == 0) return len; /* only continuation bytes: invalid, send them */
    unsigned char lead = b[start - 1];
    size_t need = lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > 1 && back + 1 < need) return start - 1; /* hold the unfinished character */
    return len;
}

static void emit_bytes(stream *s, const char *bytes, size_t n) {
    if (s->failed || n == 0) return;
    JNIEnv *env = s->env;
    jbyteArray arr = (*env)->NewByteArray(env, (jsize)n);
    if (arr == NULL) {
        s->failed = true;
        return;
    }
    (*env)->SetByteArrayRegion(env, arr, 0, (jsize)n, (const jbyte *)bytes);
    (*env)->CallStaticVoidMethod(env, s->module_class, s->emit, s->callback, arr);
    (*env)->DeleteLocalRef(env, arr);
    if ((*env)->ExceptionCheck(env)) s->failed = true;
}

/* Keeps a generated token for the conversation. */
static void keep_token(stream *s, int32_t token) {
    if (token < 0 || s->lost) return;
    if (s->n_chosen == s->cap_chosen) {
        size_t cap = s->cap_chosen ? s->cap_chosen * 2 : 64;
        int32_t *p = cap <= SIZE_MAX / sizeof *p ? realloc(s->chosen, cap * sizeof *p) : NULL;
        if (p == NULL) {
            s->lost = true;
            return;
        }
        s->chosen = p;
        s->cap_chosen = cap;
    }
    s->chosen[s->n_chosen++] = token;
}

static void on_token(void *user, int32_t token, const char *piece, size_t len) {
    stream *s = user;
    keep_token(s, token);
    if (s->failed || len == 0) return;
    if (s->len + len > s->cap) {
        size_t cap = s->cap * 2 > s->len + len ? s->cap * 2 : s->len + len;
        char *p = realloc(s->pending, cap);
        if (p == NULL) {
            /* Out of memory: hand out what there is, unbuffered. */
            emit_bytes(s, s->pending, s->len);
            s->len = 0;
            emit_bytes(s, piece, len);
            return;
        }
        s->pending = p;
        s->cap = cap;
    }
    memcpy(s->pending + s->len, piece, len);
    s->len += len;
    size_t ready = complete_prefix((const unsigned char *)s->pending, s->len);
    emit_bytes(s, s->pending, ready);
    memmove(s->pending, s->pending + ready, s->len - ready);
    s->len -= ready;
}

/* ------------------------------------------------------------------------ */
/* generate                                                                  */
/* ------------------------------------------------------------------------ */

/* A method of interface LlmCallback (called virtually on the user's object),
 * or NULL with an exception pending. */
static jmethodID callback_method(JNIEnv *env, const char *name, const char *sig) {
    jclass c = (*env)->FindClass(env, "org/pytorch/executorch/extension/llm/LlmCallback");
    if (c == NULL) return NULL;
    jmethodID id = (*env)->GetMethodID(env, c, name, sig);
    (*env)->DeleteLocalRef(env, c);
    return id;
}

/* Calls callback.onError(code, message); returns code. */
static jint report_error(JNIEnv *env, jobject callback, ember_status st, const char *msg) {
    if ((*env)->ExceptionCheck(env)) return (jint)st;
    jmethodID on_error = callback_method(env, "onError", "(ILjava/lang/String;)V");
    if (on_error == NULL) return (jint)st;
    jstring jmsg = ember_jni_string(env, msg, strlen(msg));
    if (jmsg == NULL) return (jint)st;
    (*env)->CallVoidMethod(env, callback, on_error, (jint)st, jmsg);
    (*env)->DeleteLocalRef(env, jmsg);
    return (jint)st;
}

static jint report_status(JNIEnv *env, jobject callback, ember_status st, const char *what) {
    char msg[EMBER_ERROR_MESSAGE_SIZE + 128];
    const char *detail = ember_last_error();
    if (detail != NULL && detail[0] != '\0')
        snprintf(msg, sizeof msg, "%s: %s: %s", what, ember_status_str(st), detail);
    else
        snprintf(msg, sizeof msg, "%s: %s", what, ember_status_str(st));
    return report_error(env, callback, st, msg);
}

static void report_stats(JNIEnv *env, jobject callback, ember_llm_runner *r,
                         const ember_llm_stats *s) {
    char json[512];
    double tps = s->decode_ms > 0 ? (double)s->decode_steps * 1e3 / s->decode_ms : 0.0;
    snprintf(json, sizeof json,
             "{\"prompt_tokens\":%zu,\"generated_tokens\":%zu,\"model_load_ms\":%.3f,"
             "\"prefill_ms\":%.3f,\"ttft_ms\":%.3f,\"decode_ms\":%.3f,\"decode_steps\":%zu,"
             "\"cache_restarts\":%zu,\"tokens_per_second\":%.3f}",
             s->prompt_tokens, s->generated_tokens, ember_llm_runner_load_ms(r), s->prefill_ms,
             s->ttft_ms, s->decode_ms, s->decode_steps, s->cache_restarts, tps);
    jmethodID on_stats = callback_method(env, "onStats", "(Ljava/lang/String;)V");
    if (on_stats == NULL) return;
    jstring js = ember_jni_string(env, json, strlen(json));
    if (js == NULL) return;
    (*env)->CallVoidMethod(env, callback, on_stats, js);
    (*env)->DeleteLocalRef(env, js);
}

/* The tokens of a text for the conversation: encoded as ember-llm encodes a
 * prompt (the program's BOS first) when the conversation is empty, else the
 * text's own tokens (special tokens written in it become their ids). */
static ember_status encode_turn(const llm_state *m, const char *text, size_t len, bool first,
                                int32_t **ids, size_t *n) {
    if (first) return ember_llm_runner_encode(m->r, text, len, ids, n);
    return ember_tokenizer_encode(ember_llm_runner_tokenizer(m->r), text, len,
                                  EMBER_ENCODE_SPECIAL, ids, n);
}

/* A Java byte[] as a malloc'd buffer (NUL-terminated), or NULL. */
static char *bytes_of(JNIEnv *env, jbyteArray arr, size_t *len) {
    jsize n = (*env)->GetArrayLength(env, arr);
    char *p = malloc((size_t)n + 1);
    if (p == NULL) return NULL;
    (*env)->GetByteArrayRegion(env, arr, 0, n, (jbyte *)p);
    p[n] = '\0';
    *len = (size_t)n;
    return p;
}

/* Checks that n more tokens fit after the conversation; else sets the error. */
static ember_status check_room(const llm_state *m, size_t n) {
    size_t max = ember_llm_runner_max_seq_len(m->r);
    if (n == 0) return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty");
    if (m->n_ctx == 0 && n > max)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "the prompt is %zu tokens; this model takes at most %zu", n, max);
    if (m->n_ctx > 0 && (m->n_ctx >= max || n > max - m->n_ctx))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "the conversation holds %zu tokens and the prompt %zu: this model "
                               "takes at most %zu (resetContext() starts a new one)",
                               m->n_ctx, n, max);
    return EMBER_OK;
}

JNIEXPORT jint JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativeGenerate(
    JNIEnv *env, jclass cls, jlong handle, jstring jprompt, jbyteArray jutf8, jint seq_len,
    jint max_new_tokens, jfloat temperature, jboolean echo, jobject callback) {
    llm_state *m = state_of(handle);
    size_t before = m->n_ctx; /* the conversation's length before this turn */
    jint rc = 0;
    stream s;
    memset(&s, 0, sizeof s);
    int32_t *ids = NULL;
    char *prompt = NULL;

    /* The prompt's bytes and tokens. */
    size_t len = 0;
    prompt = bytes_of(env, jutf8, &len);
    if (prompt == NULL) {
        rc = report_error(env, callback, EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt");
        goto done;
    }
    size_t n = 0;
    ember_status st = encode_turn(m, prompt, len, before == 0, &ids, &n);
    if (st != EMBER_OK) {
        rc = report_status(env, callback, st, "encoding the prompt");
        goto done;
    }

    /* New tokens: seqLen counts this prompt; maxNewTokens does not; without
     * either, up to the end of the model's context. */
    size_t max = ember_llm_runner_max_seq_len(m->r);
    long long limit = LLONG_MAX;
    if (seq_len >= 0)
        limit = (long long)seq_len - (long long)n;
    else if (max_new_tokens < 0)
        limit = (long long)max - (long long)(before + n);
    if (max_new_tokens >= 0 && max_new_tokens < limit) limit = max_new_tokens;
    if (limit < 0 || (limit == 0 && max_new_tokens != 0)) {
        char msg[200];
        if (seq_len >= 0)
            snprintf(msg, sizeof msg,
                     "the prompt is %zu tokens: a sequence length of %d leaves no room for new "
                     "tokens", n, (int)seq_len);
        else
            snprintf(msg, sizeof msg,
                     "the conversation holds %zu tokens and the prompt %zu: the model's %zu "
                     "leave no room for new tokens (resetContext() starts a new one)",
                     before, n, max);
        rc = report_error(env, callback, EMBER_ERR_INVALID_ARGUMENT, msg);
        goto done;
    }
    if ((st = check_room(m, n)) != EMBER_OK) {
        rc = report_error(env, callback, st, ember_last_error());
        goto done;
    }
    if (!ctx_append(m, ids, n)) {
        rc = report_error(env, callback, EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt");
        goto done;
    }

    s.env = env;
    s.module_class = cls;
    s.callback = callback;
    s.emit = (*env)->GetStaticMethodID(env, cls, "emit",
                                       "(Lorg/pytorch/executorch/extension/llm/LlmCallback;[B)V");
    if (s.emit == NULL) goto undo;

    if (echo) {
        jmethodID on_result = callback_method(env, "onResult", "(Ljava/lang/String;)V");
        if (on_result == NULL) goto undo;
        (*env)->CallVoidMethod(env, callback, on_result, jprompt);
        if ((*env)->ExceptionCheck(env)) goto undo;
    }

    ember_llm_options o = ember_llm_options_default();
    o.max_new_tokens = (size_t)limit;
    o.sampler.temperature = temperature;
    o.on_token = on_token;
    o.user = &s;
    ember_llm_stats stats;
    st = ember_llm_runner_continue_ids(m->r, m->ctx, m->n_ctx, &o, &stats);
    if (st != EMBER_OK) {
        if (!s.failed) rc = report_status(env, callback, st, "generating");
        goto undo;
    }
    /* The reply belongs to the conversation, even where the callback threw. */
    if (s.lost || !ctx_append(m, s.chosen, s.n_chosen)) {
        m->n_ctx = 0; /* cannot be continued: the next turn starts a new one */
        if (!s.failed)
            rc = report_error(env, callback, EMBER_ERR_OUT_OF_MEMORY,
                              "out of memory for the conversation's tokens");
        goto done;
    }
    if (s.failed) goto done; /* the callback threw: that exception goes to the caller */
    emit_bytes(&s, s.pending, s.len); /* an unfinished character at the end, as it is */
    s.len = 0;
    if (s.failed) goto done;
    report_stats(env, callback, m->r, &stats);
    goto done;
undo:
    m->n_ctx = before;
done:
    free(s.chosen);
    free(s.pending);
    free(ids);
    free(prompt);
    return rc;
}

JNIEXPORT jint JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativePrefill(
    JNIEnv *env, jclass cls, jlong handle, jbyteArray jutf8, jint bos, jint eos) {
    (void)cls;
    llm_state *m = state_of(handle);
    const ember_tokenizer *tok = ember_llm_runner_tokenizer(m->r);
    size_t before = m->n_ctx;
    int32_t *ids = NULL;
    size_t len = 0, n = 0;
    ember_status st = EMBER_OK;
    char *text = bytes_of(env, jutf8, &len);
    if (text == NULL) {
        st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt");
        goto done;
    }
    if (bos < 0 || eos < 0) {
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                             "bos and eos are token counts, 0 or more: %d and %d", (int)bos,
                             (int)eos);
        goto done;
    }
    /* bos BOS ids, the text's own tokens, eos EOS ids */
    int32_t bos_id = ember_llm_runner_bos_id(m->r);
    if (bos_id < 0) bos_id = ember_tokenizer_bos_id(tok);
    int32_t eos_id = -1;
    if (ember_tokenizer_eos_ids(tok, &eos_id, 1) == 0 &&
        ember_llm_runner_stop_ids(m->r, &eos_id, 1) == 0)
        eos_id = -1;
    if ((bos > 0 && bos_id < 0) || (eos > 0 && eos_id < 0)) {
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                             "neither the program nor the tokenizer names a%s token",
                             bos > 0 && bos_id < 0 ? " BOS" : "n EOS");
        goto done;
    }
    if ((st = encode_turn(m, text, len, false, &ids, &n)) != EMBER_OK) goto done;
    size_t extra = (size_t)bos + (size_t)eos;
    if ((st = check_room(m, n + extra)) != EMBER_OK) goto done;
    bool ok = true;
    for (jint i = 0; ok && i < bos; i++) ok = ctx_append(m, &bos_id, 1);
    ok = ok && ctx_append(m, ids, n);
    for (jint i = 0; ok && i < eos; i++) ok = ctx_append(m, &eos_id, 1);
    if (!ok) {
        st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt");
        goto done;
    }
    ember_llm_options o = ember_llm_options_default();
    o.max_new_tokens = 0;
    st = ember_llm_runner_continue_ids(m->r, m->ctx, m->n_ctx, &o, NULL);
done:
    if (st != EMBER_OK) {
        m->n_ctx = before;
        ember_jni_throw_status(env, st, "prefilling the prompt");
    }
    free(ids);
    free(text);
    return (jint)st;
}
