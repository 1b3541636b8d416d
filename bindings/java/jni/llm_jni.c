/*
 * bindings/java/jni/llm_jni.c — org.pytorch.executorch.extension.llm.LlmModule
 * over ember's LLM runner (extension/llm/runner.h).
 *
 * generate() encodes the prompt as ember-llm does (the program's BOS token
 * first when its metadata names one), echoes it, and runs the runner with a
 * token callback that hands text to LlmCallback.onResult. Token pieces are
 * bytes, and one UTF-8 character may span tokens: the callback holds back an
 * incomplete character until the token that completes it, so every String
 * handed to Java decodes cleanly.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember_jni.h"
#include "runner.h"

static ember_llm_runner *runner_of(jlong handle) { return (ember_llm_runner *)(intptr_t)handle; }

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
    ember_llm_runner *r;
    ember_status st = ember_llm_runner_open(model, tok, &mo, &r);
    if (st != EMBER_OK) {
        ember_jni_throw_status(env, st, "loading the LLM");
        goto done;
    }
    handle = (jlong)(intptr_t)r;
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
    ember_llm_runner_destroy(runner_of(handle));
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

static void on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)token;
    stream *s = user;
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

JNIEXPORT jint JNICALL Java_org_pytorch_executorch_extension_llm_LlmModule_nativeGenerate(
    JNIEnv *env, jclass cls, jlong handle, jstring jprompt, jbyteArray jutf8, jint seq_len,
    jint max_new_tokens, jfloat temperature, jboolean echo, jobject callback) {
    ember_llm_runner *r = runner_of(handle);
    jint rc = 0;
    stream s;
    memset(&s, 0, sizeof s);
    int32_t *ids = NULL;
    char *prompt = NULL;

    /* The prompt's bytes and tokens (with the BOS the program names). */
    jsize len = (*env)->GetArrayLength(env, jutf8);
    prompt = malloc((size_t)len + 1);
    if (prompt == NULL) {
        rc = report_error(env, callback, EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt");
        goto done;
    }
    (*env)->GetByteArrayRegion(env, jutf8, 0, len, (jbyte *)prompt);
    size_t n = 0;
    ember_status st = ember_llm_runner_encode(r, prompt, (size_t)len, &ids, &n);
    if (st != EMBER_OK) {
        rc = report_status(env, callback, st, "encoding the prompt");
        goto done;
    }
    int32_t *tokens = ids;

    /* New tokens: seqLen counts the prompt; maxNewTokens does not. */
    long long limit = LLONG_MAX;
    if (seq_len >= 0)
        limit = (long long)seq_len - (long long)n;
    else if (max_new_tokens < 0)
        limit = (long long)ember_llm_runner_max_seq_len(r) - (long long)n;
    if (max_new_tokens >= 0 && max_new_tokens < limit) limit = max_new_tokens;
    if (limit < 0 || (limit == 0 && max_new_tokens != 0)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the prompt is %zu tokens: a sequence length of %d leaves no room for new tokens",
                 n, seq_len >= 0 ? (int)seq_len : (int)ember_llm_runner_max_seq_len(r));
        rc = report_error(env, callback, EMBER_ERR_INVALID_ARGUMENT, msg);
        goto done;
    }
    if (n == 0) {
        rc = report_error(env, callback, EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty");
        goto done;
    }
    if (n > ember_llm_runner_max_seq_len(r)) {
        char msg[160];
        snprintf(msg, sizeof msg, "the prompt is %zu tokens; this model takes at most %zu", n,
                 ember_llm_runner_max_seq_len(r));
        rc = report_error(env, callback, EMBER_ERR_INVALID_ARGUMENT, msg);
        goto done;
    }

    s.env = env;
    s.module_class = cls;
    s.callback = callback;
    s.emit = (*env)->GetStaticMethodID(env, cls, "emit",
                                       "(Lorg/pytorch/executorch/extension/llm/LlmCallback;[B)V");
    if (s.emit == NULL) goto done;

    if (echo) {
        jmethodID on_result = callback_method(env, "onResult", "(Ljava/lang/String;)V");
        if (on_result == NULL) goto done;
        (*env)->CallVoidMethod(env, callback, on_result, jprompt);
        if ((*env)->ExceptionCheck(env)) goto done;
    }

    ember_llm_options o = ember_llm_options_default();
    o.max_new_tokens = (size_t)limit;
    o.sampler.temperature = temperature;
    o.on_token = on_token;
    o.user = &s;
    ember_llm_stats stats;
    st = ember_llm_runner_generate_ids(r, tokens, n, &o, &stats);
    if (s.failed) goto done; /* the callback threw: that exception goes to the caller */
    emit_bytes(&s, s.pending, s.len); /* an unfinished character at the end, as it is */
    s.len = 0;
    if (s.failed) goto done;
    if (st != EMBER_OK) {
        rc = report_status(env, callback, st, "generating");
        goto done;
    }
    report_stats(env, callback, r, &stats);
done:
    free(s.pending);
    free(ids);
    free(prompt);
    return rc;
}
