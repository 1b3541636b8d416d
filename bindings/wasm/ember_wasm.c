/*
 * ember_wasm.c — the C side of ember's WebAssembly build: a handful of
 * functions that JavaScript calls (ember.js wraps them), over the module
 * helper and the LLM runner. Files (programs, tokenizers) live in
 * Emscripten's in-memory file system, where ember.js writes them.
 *
 * Every function that can fail returns an ember_status (0 is success) and
 * leaves the message in ew_last_error().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <emscripten.h>

#include "ember/ember.h"
#include "ember/module.h"
#include "runner.h"

/* A loaded method of a module: what ember.js calls a Model. */
typedef struct ew_model {
    ember_module *module;
    ember_method *method;
} ew_model;

EMSCRIPTEN_KEEPALIVE const char *ew_last_error(void) { return ember_last_error(); }

EMSCRIPTEN_KEEPALIVE const char *ew_status_str(int status) {
    return ember_status_str((ember_status)status);
}

/* Loads the program at path and its method name; *out gets the model. */
EMSCRIPTEN_KEEPALIVE int ew_model_load(const char *path, const char *method, ew_model **out) {
    *out = NULL;
    ew_model *m = calloc(1, sizeof *m);
    if (m == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_module_options opts = {.struct_size = sizeof opts, .num_threads = 1};
    ember_status st = ember_module_load_with(path, &opts, &m->module);
    if (st == EMBER_OK) st = ember_module_method(m->module, method, &m->method);
    if (st != EMBER_OK) {
        if (m->module != NULL) ember_module_destroy(m->module);
        free(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

EMSCRIPTEN_KEEPALIVE void ew_model_free(ew_model *m) {
    if (m == NULL) return;
    ember_module_destroy(m->module);
    free(m);
}

EMSCRIPTEN_KEEPALIVE size_t ew_model_input_count(const ew_model *m) {
    return ember_method_input_count(m->method);
}

EMSCRIPTEN_KEEPALIVE size_t ew_model_output_count(const ew_model *m) {
    return ember_method_output_count(m->method);
}

/*
 * Sets input i to a tensor of the given dtype (an ember_dtype) and sizes
 * (dim of them, as doubles: JavaScript numbers). data must stay valid until
 * ew_model_execute() returns.
 */
EMSCRIPTEN_KEEPALIVE int ew_model_set_input(ew_model *m, size_t i, int dtype, const double *sizes,
                                            size_t dim, const void *data, size_t nbytes) {
    int64_t s[EMBER_MAX_DIM];
    if (dim > EMBER_MAX_DIM)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "input %zu: rank %zu exceeds %d", i,
                               dim, EMBER_MAX_DIM);
    for (size_t d = 0; d < dim; d++) s[d] = (int64_t)sizes[d];
    return ember_method_set_input_tensor(m->method, i, (ember_dtype)dtype, s, dim, data, nbytes);
}

EMSCRIPTEN_KEEPALIVE int ew_model_execute(ew_model *m) { return ember_method_execute(m->method); }

/*
 * Output i, a tensor: its dtype, rank, sizes (into sizes[0..EMBER_MAX_DIM))
 * and data pointer (valid until the next execute).
 */
EMSCRIPTEN_KEEPALIVE int ew_model_output(const ew_model *m, size_t i, int *dtype, size_t *dim,
                                         double *sizes, const void **data, size_t *nbytes) {
    const ember_value *v = NULL;
    ember_status st = ember_method_output(m->method, i, &v);
    if (st != EMBER_OK) return st;
    if (v->tag != EMBER_TAG_TENSOR)
        return ember_error_set(EMBER_ERR_TYPE_MISMATCH, "output %zu is not a tensor", i);
    const ember_tensor *t = v->u.t;
    *dtype = t->dtype;
    *dim = t->dim;
    for (uint32_t d = 0; d < t->dim; d++) sizes[d] = (double)t->sizes[d];
    *data = t->data;
    *nbytes = t->nbytes;
    return EMBER_OK;
}

/* --- text generation ------------------------------------------------------ */

/* Hands each generated piece to Module.onTokenBytes (set by ember.js). */
EM_JS(void, ew_js_on_token, (int32_t token, const char *piece, size_t len), {
    if (Module.onTokenBytes) Module.onTokenBytes(token, HEAPU8.slice(piece, piece + len));
})

static void on_token(void *user, int32_t token, const char *piece, size_t len) {
    (void)user;
    ew_js_on_token(token, piece, len);
}

EMSCRIPTEN_KEEPALIVE int ew_llm_load(const char *model_path, const char *tokenizer_dir,
                                     ember_llm_runner **out) {
    return ember_llm_runner_load_with(model_path, tokenizer_dir, 1, out);
}

EMSCRIPTEN_KEEPALIVE void ew_llm_free(ember_llm_runner *r) { ember_llm_runner_destroy(r); }

/*
 * Generates up to max_new_tokens from prompt (UTF-8). temperature 0 is
 * greedy; top_k 0 keeps every token. Pieces go to Module.onTokenBytes as
 * they are chosen; stats (6 doubles): prompt tokens, generated tokens,
 * prefill ms, time to first token ms, decode ms, decode steps.
 */
EMSCRIPTEN_KEEPALIVE int ew_llm_generate(ember_llm_runner *r, const char *prompt,
                                         int max_new_tokens, double temperature, int top_k,
                                         double seed, double *stats) {
    ember_llm_options o = ember_llm_options_default();
    o.max_new_tokens = max_new_tokens > 0 ? (size_t)max_new_tokens : 0;
    o.sampler.temperature = (float)temperature;
    o.sampler.top_k = top_k > 0 ? top_k : 0;
    o.sampler.seed = (uint64_t)seed;
    o.on_token = on_token;
    ember_llm_stats s;
    memset(&s, 0, sizeof s);
    ember_status st = ember_llm_runner_generate(r, prompt, strlen(prompt), &o, &s);
    if (st == EMBER_OK && stats != NULL) {
        stats[0] = (double)s.prompt_tokens;
        stats[1] = (double)s.generated_tokens;
        stats[2] = s.prefill_ms;
        stats[3] = s.ttft_ms;
        stats[4] = s.decode_ms;
        stats[5] = (double)s.decode_steps;
    }
    return st;
}
