/*
 * extension/llm/runner.c — the generation loop and chats over an LLM
 * program (see runner.h).
 *
 * For a program with a KV cache the runner remembers the tokens the cache
 * holds (cache_ids: the token at each position run so far). A generation
 * whose prompt begins with some of them runs only the rest, from the first
 * position where they differ; a chat's turns begin with the conversation so
 * far, so each turn runs only its new tokens.
 */
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/module.h"

#define METHOD "forward"
#define MAX_EOS 8
#define MAX_STOP 32

struct ember_llm_runner {
    ember_module *module;
    ember_method *method;
    ember_tokenizer *tok;
    ember_token_decoder *dec;
    ember_llm_kind kind;
    bool pos_is_int;       /* kv: the start position is an Int value, not a tensor */
    size_t max_seq_len;    /* T bound of input 0 */
    size_t vocab;          /* last dim of output 0 */
    int32_t bos_id;        /* the file's get_bos_id, or -1 */
    int32_t eos_ids[MAX_EOS]; /* the file's get_eos_ids (or get_eos_id) */
    size_t num_eos;
    int32_t stop[MAX_STOP]; /* those and the tokenizer's end ids */
    size_t num_stop;
    void *out_buffer;      /* storage for an unplanned output 0, or NULL */
    int64_t *window;       /* (max_seq_len) tokens fed to the model */
    float *logits;         /* (vocab) the last position's logits, for the sampler */
    int32_t *cache_ids;    /* (max_seq_len) kv: the token at each position run */
    size_t cache_len;      /* kv: positions the cache holds */
    double load_ms;
};

static double ms_since(uint64_t t0) {
    return (double)(ember_ticks_ns() - t0) / 1e6;
}

ember_llm_options ember_llm_options_default(void) {
    ember_llm_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_new_tokens = 128;
    o.sampler = ember_sampler_config_default();
    return o;
}

/* Prefixes the last error message with the model's path. */
static ember_status with_path(ember_status st, const char *path) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ember_last_error());
    return ember_error_set(st, "%s: %s", path, msg);
}

static ember_status bad_model(const char *path, const char *what) {
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: method \"" METHOD "\" %s", path, what);
}

/* Reads the method's form, window and vocabulary from the program meta. */
static ember_status check_program(ember_llm_runner *r, const char *path) {
    const ember_program *prog = ember_module_program(r->module);
    ember_method_meta mm;
    ember_status st = ember_program_method_meta(prog, METHOD, &mm);
    if (st != EMBER_OK)
        return ember_error_set(st, "%s: the program has no method \"" METHOD "\"", path);
    if (mm.num_inputs != 1 && mm.num_inputs != 2)
        return bad_model(path, "must take 1 input (tokens) or 2 (tokens, start position)");
    if (mm.num_outputs < 1) return bad_model(path, "has no output");

    ember_value_meta in, out;
    if ((st = ember_program_input_meta(prog, METHOD, 0, &in)) != EMBER_OK) return st;
    if (in.tag != EMBER_TAG_TENSOR || in.dtype != EMBER_INT64 || in.dim != 2 || in.sizes[0] != 1 ||
        in.sizes[1] < 1)
        return bad_model(path, "input 0 must be tokens, an int64 tensor [1, T]");
    r->max_seq_len = (size_t)in.sizes[1];

    if (mm.num_inputs == 2) {
        ember_value_meta pos;
        if ((st = ember_program_input_meta(prog, METHOD, 1, &pos)) != EMBER_OK) return st;
        if (pos.tag == EMBER_TAG_INT) {
            r->pos_is_int = true;
        } else if (pos.tag != EMBER_TAG_TENSOR || pos.dtype != EMBER_INT64 || pos.dim != 1 ||
                   pos.sizes[0] != 1) {
            return bad_model(path, "input 1 must be the start position, an int64 tensor [1]");
        }
        r->kind = EMBER_LLM_KV;
    } else {
        r->kind = EMBER_LLM_SEQ;
    }

    if ((st = ember_program_output_meta(prog, METHOD, 0, &out)) != EMBER_OK) return st;
    if (out.tag != EMBER_TAG_TENSOR || out.dtype != EMBER_FLOAT32 || out.dim < 1 ||
        out.sizes[out.dim - 1] < 1)
        return bad_model(path, "output 0 must be logits, a float32 tensor [1, 1, vocab]");
    r->vocab = (size_t)out.sizes[out.dim - 1];
    if (!out.planned) {
        r->out_buffer = malloc(out.nbytes == 0 ? 1 : out.nbytes);
        if (r->out_buffer == NULL)
            return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the logits");
        if ((st = ember_method_set_output_buffer(r->method, 0, r->out_buffer, out.nbytes)) != EMBER_OK)
            return st;
    }
    return EMBER_OK;
}

/* Runs a metadata method, as ExecuTorch's LLM exports carry them (methods
 * without inputs whose outputs are constants: get_max_seq_len, get_bos_id,
 * use_kv_cache, ...): its Int or Bool outputs, at most cap, into v[0..*n).
 * *n = 0 when the program has no method of that name. */
static ember_status read_meta(ember_llm_runner *r, const char *path, const char *name, int64_t *v,
                              size_t cap, size_t *n) {
    *n = 0;
    ember_method_meta mm;
    if (ember_program_method_meta(ember_module_program(r->module), name, &mm) != EMBER_OK) {
        ember_clear_error();
        return EMBER_OK;
    }
    if (mm.num_inputs != 0 || mm.num_outputs == 0 || mm.num_outputs > cap)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: metadata method \"%s\" has %zu inputs and %zu outputs; "
                               "expected none and 1 to %zu",
                               path, name, mm.num_inputs, mm.num_outputs, cap);
    ember_method *m;
    ember_status st = ember_module_method(r->module, name, &m);
    if (st == EMBER_OK) st = ember_method_execute(m);
    if (st != EMBER_OK) return with_path(st, path);
    for (size_t i = 0; i < mm.num_outputs; i++) {
        const ember_value *o;
        if ((st = ember_method_output(m, i, &o)) != EMBER_OK) return with_path(st, path);
        if (o->tag == EMBER_TAG_INT) v[i] = o->u.i;
        else if (o->tag == EMBER_TAG_BOOL) v[i] = o->u.b;
        else
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: metadata method \"%s\" output %zu is not an int or a bool",
                                   path, name, i);
    }
    *n = mm.num_outputs;
    return EMBER_OK;
}

/* What an ExecuTorch LLM export says about itself, checked against the
 * method's form: the sequence limit, KV cache use, vocabulary, BOS and EOS. */
static ember_status read_metadata(ember_llm_runner *r, const char *path) {
    int64_t v[MAX_EOS];
    size_t n;
    ember_status st;
    if ((st = read_meta(r, path, "get_max_seq_len", v, 1, &n)) != EMBER_OK) return st;
    if (n == 1) {
        if (v[0] < 1)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: get_max_seq_len is %lld", path,
                                   (long long)v[0]);
        if ((uint64_t)v[0] < r->max_seq_len) r->max_seq_len = (size_t)v[0];
    }
    if ((st = read_meta(r, path, "use_kv_cache", v, 1, &n)) != EMBER_OK) return st;
    if (n == 1 && (v[0] != 0) != (r->kind == EMBER_LLM_KV))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: use_kv_cache is %s, but \"" METHOD "\" takes %s", path,
                               v[0] ? "true" : "false",
                               r->kind == EMBER_LLM_KV ? "a start position (a cache)"
                                                       : "tokens only (no cache)");
    if ((st = read_meta(r, path, "get_vocab_size", v, 1, &n)) != EMBER_OK) return st;
    if (n == 1 && (v[0] < 1 || (uint64_t)v[0] > r->vocab))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: get_vocab_size is %lld, but \"" METHOD "\" returns %zu logits",
                               path, (long long)v[0], r->vocab);
    if ((st = read_meta(r, path, "get_bos_id", v, 1, &n)) != EMBER_OK) return st;
    if (n == 1) {
        if (v[0] < 0 || (uint64_t)v[0] >= r->vocab)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: get_bos_id %lld is not a token",
                                   path, (long long)v[0]);
        r->bos_id = (int32_t)v[0];
    }
    if ((st = read_meta(r, path, "get_eos_ids", v, MAX_EOS, &n)) != EMBER_OK) return st;
    if (n == 0 && (st = read_meta(r, path, "get_eos_id", v, 1, &n)) != EMBER_OK) return st;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 0 || (uint64_t)v[i] >= r->vocab)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: end-of-sequence id %lld is not "
                                   "a token", path, (long long)v[i]);
        r->eos_ids[i] = (int32_t)v[i];
    }
    r->num_eos = n;
    return EMBER_OK;
}

static bool is_end(const ember_llm_runner *r, int32_t token) {
    for (size_t i = 0; i < r->num_stop; i++)
        if (token == r->stop[i]) return true;
    return false;
}

static void add_stop(ember_llm_runner *r, int32_t id) {
    if (id < 0 || (size_t)id >= r->vocab || r->num_stop == MAX_STOP) return;
    for (size_t i = 0; i < r->num_stop; i++)
        if (r->stop[i] == id) return;
    r->stop[r->num_stop++] = id;
}

ember_status ember_llm_runner_load(const char *model_path, const char *tokenizer_dir,
                                   ember_llm_runner **out) {
    return ember_llm_runner_load_with(model_path, tokenizer_dir, 0, out);
}

ember_status ember_llm_runner_load_with(const char *model_path, const char *tokenizer_dir,
                                        size_t num_threads, ember_llm_runner **out) {
    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.num_threads = num_threads;
    return ember_llm_runner_open(model_path, tokenizer_dir, &mo, out);
}

ember_status ember_llm_runner_open(const char *model_path, const char *tokenizer_dir,
                                   const ember_module_options *options, ember_llm_runner **out) {
    if (model_path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_runner_load: NULL argument");
    uint64_t t0 = ember_ticks_ns();
    ember_llm_runner *r = calloc(1, sizeof *r);
    if (r == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the runner");
    r->bos_id = -1;

    ember_status st = EMBER_OK;
    if (tokenizer_dir != NULL) {
        st = ember_tokenizer_load(tokenizer_dir, NULL, &r->tok);
        if (st == EMBER_OK) st = ember_token_decoder_create(r->tok, &r->dec);
    }
    if (st == EMBER_OK) {
        st = ember_module_load_with(model_path, options, &r->module);
        if (st != EMBER_OK) st = with_path(st, model_path);
    }
    if (st == EMBER_OK) {
        st = ember_module_method(r->module, METHOD, &r->method);
        if (st != EMBER_OK) st = with_path(st, model_path);
    }
    if (st == EMBER_OK) st = check_program(r, model_path);
    if (st == EMBER_OK) st = read_metadata(r, model_path);
    if (st == EMBER_OK && r->tok != NULL) {
        /* a model may have more logits than its tokenizer has tokens
         * (padded embeddings), never fewer */
        size_t n_tok = ember_tokenizer_vocab_size(r->tok);
        if (n_tok > r->vocab)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "the tokenizer has %zu tokens but %s has only %zu logits: they "
                                 "do not belong together",
                                 n_tok, model_path, r->vocab);
    }
    if (st == EMBER_OK) {
        if (r->max_seq_len <= SIZE_MAX / sizeof *r->window) {
            r->window = malloc(r->max_seq_len * sizeof *r->window);
            r->cache_ids = malloc(r->max_seq_len * sizeof *r->cache_ids);
        }
        if (r->vocab <= SIZE_MAX / sizeof *r->logits)
            r->logits = malloc(r->vocab * sizeof *r->logits);
        if (r->window == NULL || r->cache_ids == NULL || r->logits == NULL)
            st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the runner");
    }
    if (st != EMBER_OK) {
        ember_llm_runner_destroy(r);
        return st;
    }
    for (size_t i = 0; i < r->num_eos; i++) add_stop(r, r->eos_ids[i]);
    if (r->tok != NULL) {
        int32_t ids[MAX_STOP];
        size_t n = ember_tokenizer_eos_ids(r->tok, ids, MAX_STOP);
        for (size_t i = 0; i < n && i < MAX_STOP; i++) add_stop(r, ids[i]);
    }
    ember_clear_error();
    r->load_ms = ms_since(t0);
    *out = r;
    return EMBER_OK;
}

void ember_llm_runner_destroy(ember_llm_runner *runner) {
    if (runner == NULL) return;
    ember_module_destroy(runner->module);
    ember_token_decoder_destroy(runner->dec);
    ember_tokenizer_destroy(runner->tok);
    free(runner->out_buffer);
    free(runner->window);
    free(runner->cache_ids);
    free(runner->logits);
    free(runner);
}

ember_llm_kind ember_llm_runner_kind(const ember_llm_runner *runner) { return runner->kind; }

size_t ember_llm_runner_max_seq_len(const ember_llm_runner *runner) { return runner->max_seq_len; }

size_t ember_llm_runner_vocab_size(const ember_llm_runner *runner) { return runner->vocab; }

const ember_tokenizer *ember_llm_runner_tokenizer(const ember_llm_runner *runner) {
    return runner->tok;
}

size_t ember_llm_runner_stop_ids(const ember_llm_runner *runner, int32_t *ids, size_t cap) {
    for (size_t i = 0; i < runner->num_stop && i < cap; i++) ids[i] = runner->stop[i];
    return runner->num_stop;
}

double ember_llm_runner_load_ms(const ember_llm_runner *runner) { return runner->load_ms; }

const ember_module *ember_llm_runner_module(const ember_llm_runner *runner) {
    return runner->module;
}

ember_method *ember_llm_runner_method(ember_llm_runner *runner) {
    return runner != NULL ? runner->method : NULL;
}

int32_t ember_llm_runner_bos_id(const ember_llm_runner *runner) { return runner->bos_id; }

/* Text collected as it is generated (a chat's reply). */
typedef struct tok_text_sink {
    char *data; /* NUL-terminated when not NULL */
    size_t len, cap;
    bool failed;
} tok_text_sink;

static void sink_add(tok_text_sink *s, const char *p, size_t n) {
    if (s->failed || n == 0) return;
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *d = realloc(s->data, cap);
        if (d == NULL) {
            s->failed = true;
            return;
        }
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, p, n);
    s->len += n;
    s->data[s->len] = '\0';
}

/* Runs the model on tokens[0..n) starting at position pos (kv; ignored for
 * seq) and copies the last position's logits into r->logits. For kv the
 * cache then holds tokens at positions pos .. pos + n - 1. */
static ember_status run_model(ember_llm_runner *r, const int32_t *tokens, size_t n, size_t pos) {
    for (size_t i = 0; i < n; i++) r->window[i] = tokens[i];
    int64_t sizes[2] = {1, (int64_t)n};
    ember_status st = ember_method_set_input_tensor(r->method, 0, EMBER_INT64, sizes, 2, r->window,
                                                    n * sizeof *r->window);
    if (st != EMBER_OK) return st;
    if (r->kind == EMBER_LLM_KV) {
        int64_t p = (int64_t)pos;
        int64_t psize[1] = {1};
        st = r->pos_is_int ? ember_method_set_input_int(r->method, 1, p)
                           : ember_method_set_input_tensor(r->method, 1, EMBER_INT64, psize, 1, &p,
                                                           sizeof p);
        if (st != EMBER_OK) return st;
        /* what the cache holds is unknown until this run succeeds */
        r->cache_len = pos < r->cache_len ? pos : r->cache_len;
    }
    if ((st = ember_method_execute(r->method)) != EMBER_OK) return st;
    if (r->kind == EMBER_LLM_KV) {
        memcpy(r->cache_ids + pos, tokens, n * sizeof *tokens);
        r->cache_len = pos + n;
    }
    const ember_value *v;
    if ((st = ember_method_output(r->method, 0, &v)) != EMBER_OK) return st;
    const ember_tensor *t = v->u.t;
    if (v->tag != EMBER_TAG_TENSOR || t->dtype != EMBER_FLOAT32 || t->numel < (int64_t)r->vocab ||
        (size_t)t->numel % r->vocab != 0 || t->data == NULL)
        return ember_error_set(EMBER_ERR_SHAPE_MISMATCH,
                               "the model returned %lld logits, not a multiple of its vocabulary "
                               "(%zu)",
                               (long long)t->numel, r->vocab);
    const float *last = (const float *)t->data + ((size_t)t->numel - r->vocab);
    memcpy(r->logits, last, r->vocab * sizeof *r->logits);
    return EMBER_OK;
}

/* Hands a token and the text it completes to on_token. */
static void hand_out(ember_llm_runner *r, const ember_llm_options *o, int32_t token,
                     tok_text_sink *sink) {
    const char *piece = "";
    size_t plen = 0;
    if (r->dec != NULL && ember_token_decoder_push(r->dec, token, &piece, &plen) != EMBER_OK) {
        piece = "";
        plen = 0;
    }
    if (sink != NULL) sink_add(sink, piece, plen);
    if (o->on_token != NULL) o->on_token(o->user, token, piece, plen);
}

/* The text the decoder still holds at the end, as a last on_token(-1). */
static void hand_out_rest(ember_llm_runner *r, const ember_llm_options *o, tok_text_sink *sink) {
    const char *piece;
    size_t plen;
    if (r->dec == NULL || ember_token_decoder_finish(r->dec, &piece, &plen) != EMBER_OK || plen == 0)
        return;
    if (sink != NULL) sink_add(sink, piece, plen);
    if (o->on_token != NULL) o->on_token(o->user, -1, piece, plen);
}

/* The generation loop. reuse: for kv, the cache may keep the positions it
 * holds where they equal the prompt's first tokens (only the rest is run);
 * else the cache starts over. The reply's text goes to sink (may be NULL). */
static ember_status generate(ember_llm_runner *r, const int32_t *prompt, size_t n_prompt,
                             bool reuse, const ember_llm_options *options, ember_llm_stats *stats,
                             tok_text_sink *sink) {
    ember_llm_options o = ember_llm_options_default();
    if (options != NULL) {
        if (options->struct_size < sizeof o)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_llm_options.struct_size is %zu, expected %zu",
                                   options->struct_size, sizeof o);
        o = *options;
    }
    if (n_prompt == 0)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "the prompt is empty (no tokens)");
    if (n_prompt > r->max_seq_len)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "the prompt is %zu tokens; this model takes at most %zu", n_prompt,
                               r->max_seq_len);
    for (size_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || (size_t)prompt[i] >= r->vocab)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "prompt token %zu is id %d, outside the model's %zu", i,
                                   (int)prompt[i], r->vocab);

    if (o.kv_keep > r->max_seq_len)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "kv_keep is %zu; this model's cache holds %zu tokens", o.kv_keep,
                               r->max_seq_len);

    size_t cap, bytes;
    if (o.max_new_tokens > SIZE_MAX - n_prompt ||
        (cap = n_prompt + o.max_new_tokens) > SIZE_MAX / sizeof(int32_t))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "max_new_tokens %zu is too large",
                               o.max_new_tokens);
    bytes = cap * sizeof(int32_t);
    ember_sampler *sampler = NULL;
    ember_status st = ember_sampler_create(r->vocab, &o.sampler, &sampler);
    if (st != EMBER_OK) return st;
    int32_t *history = malloc(bytes); /* (n_prompt + max_new_tokens) */
    if (history == NULL) {
        ember_sampler_destroy(sampler);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for %zu tokens", cap);
    }
    memcpy(history, prompt, n_prompt * sizeof *history);
    size_t len = n_prompt;
    if (r->dec != NULL) ember_token_decoder_reset(r->dec);

    /* kv: the positions the cache holds that equal the prompt's start are
     * kept; at least the last prompt token runs, for its logits */
    size_t keep = 0;
    if (r->kind == EMBER_LLM_KV && reuse) {
        while (keep < r->cache_len && keep < n_prompt && r->cache_ids[keep] == prompt[keep]) keep++;
        if (keep == n_prompt) keep--;
    }
    if (r->kind == EMBER_LLM_KV && !reuse) r->cache_len = 0;

    ember_llm_stats s;
    memset(&s, 0, sizeof s);
    s.prompt_tokens = n_prompt - keep;
    uint64_t t_start = ember_ticks_ns(), t_first = t_start;

    /* Prefill: the prompt from the first position the cache does not hold. */
    size_t pos = n_prompt; /* kv: cache positions filled */
    if (o.max_new_tokens > 0 || (r->kind == EMBER_LLM_KV && reuse))
        st = run_model(r, history + keep, n_prompt - keep, keep);
    s.prefill_ms = ms_since(t_start);

    for (size_t step = 0; st == EMBER_OK && step < o.max_new_tokens; step++) {
        if (step > 0) {
            /* The next step's logits from the token just chosen. */
            if (r->kind == EMBER_LLM_SEQ) {
                size_t w = len < r->max_seq_len ? len : r->max_seq_len;
                st = run_model(r, history + (len - w), w, 0);
            } else if (pos < r->max_seq_len) {
                st = run_model(r, history + len - 1, 1, pos);
                pos++;
            } else {
                /* The cache is full: start it over from the last tokens
                 * (len > max_seq_len >= kept here). */
                size_t kept = o.kv_keep == 0 ? r->max_seq_len : o.kv_keep;
                st = run_model(r, history + (len - kept), kept, 0);
                pos = kept;
                s.cache_restarts++;
            }
            s.decode_steps++;
            if (st != EMBER_OK) break;
        }
        int32_t token;
        st = ember_sampler_sample(sampler, r->logits, history, len, &token);
        if (st != EMBER_OK) break;
        if (step == 0) {
            t_first = ember_ticks_ns();
            s.ttft_ms = (double)(t_first - t_start) / 1e6;
        }
        if (is_end(r, token)) break;
        history[len++] = token;
        s.generated_tokens++;
        hand_out(r, &o, token, sink);
    }
    if (st == EMBER_OK) hand_out_rest(r, &o, sink);
    if (s.generated_tokens > 0 || s.decode_steps > 0) s.decode_ms = ms_since(t_first);
    free(history);
    ember_sampler_destroy(sampler);
    if (st == EMBER_OK && sink != NULL && sink->failed)
        st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the reply");
    if (st != EMBER_OK) return st;
    ember_clear_error();
    if (stats != NULL) *stats = s;
    return EMBER_OK;
}

ember_status ember_llm_runner_generate_ids(ember_llm_runner *r, const int32_t *prompt,
                                           size_t n_prompt, const ember_llm_options *options,
                                           ember_llm_stats *stats) {
    if (r == NULL || (prompt == NULL && n_prompt != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_runner_generate: NULL argument");
    return generate(r, prompt, n_prompt, false, options, stats, NULL);
}

ember_status ember_llm_runner_continue_ids(ember_llm_runner *r, const int32_t *tokens,
                                           size_t n_tokens, const ember_llm_options *options,
                                           ember_llm_stats *stats) {
    if (r == NULL || (tokens == NULL && n_tokens != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_llm_runner_continue_ids: NULL argument");
    return generate(r, tokens, n_tokens, true, options, stats, NULL);
}

ember_status ember_llm_runner_encode(const ember_llm_runner *r, const char *text, size_t len,
                                     int32_t **ids, size_t *n) {
    if (r == NULL || (text == NULL && len != 0) || ids == NULL || n == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_runner_encode: NULL argument");
    if (r->tok == NULL)
        return ember_error_set(EMBER_ERR_INVALID_STATE,
                               "the runner has no tokenizer: generate from token ids");
    int32_t *enc = NULL;
    size_t m = 0;
    ember_status st = ember_tokenizer_encode(r->tok, text, len, EMBER_ENCODE_SPECIAL, &enc, &m);
    if (st != EMBER_OK) return st;
    bool add_bos = r->bos_id >= 0 && (m == 0 || enc[0] != r->bos_id);
    int32_t *out = malloc((m + 1) * sizeof *out);
    if (out == NULL) {
        free(enc);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the prompt's tokens");
    }
    if (add_bos) out[0] = r->bos_id;
    if (m > 0) memcpy(out + add_bos, enc, m * sizeof *out);
    free(enc);
    *ids = out;
    *n = m + add_bos;
    return EMBER_OK;
}

ember_status ember_llm_runner_generate(ember_llm_runner *r, const char *prompt, size_t prompt_len,
                                       const ember_llm_options *options, ember_llm_stats *stats) {
    int32_t *ids;
    size_t n;
    ember_status st = ember_llm_runner_encode(r, prompt, prompt_len, &ids, &n);
    if (st != EMBER_OK) return st;
    st = generate(r, ids, n, false, options, stats, NULL);
    free(ids);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Chat                                                                      */
/* ------------------------------------------------------------------------ */

struct ember_llm_chat {
    ember_llm_runner *r;
    ember_chat_template *tpl;
    ember_llm_chat_options opt;
    ember_chat_message *msgs; /* (n_msgs) contents and roles malloc'd */
    size_t n_msgs, cap_msgs;
    bool has_system;
};

ember_llm_chat_options ember_llm_chat_options_default(void) {
    ember_llm_chat_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

static char *dup_cstr(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d != NULL) memcpy(d, s, n + 1);
    return d;
}

static ember_status push_message(ember_llm_chat *c, const char *role, const char *content) {
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? c->cap_msgs * 2 : 8;
        ember_chat_message *m = realloc(c->msgs, cap * sizeof *m);
        if (m == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the chat");
        c->msgs = m;
        c->cap_msgs = cap;
    }
    char *r = dup_cstr(role), *t = dup_cstr(content);
    if (r == NULL || t == NULL) {
        free(r);
        free(t);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the chat");
    }
    c->msgs[c->n_msgs].role = r;
    c->msgs[c->n_msgs].content = t;
    c->n_msgs++;
    return EMBER_OK;
}

static void drop_message(ember_llm_chat *c, size_t i) {
    free((char *)c->msgs[i].role);
    free((char *)c->msgs[i].content);
    memmove(c->msgs + i, c->msgs + i + 1, (c->n_msgs - i - 1) * sizeof *c->msgs);
    c->n_msgs--;
}

ember_status ember_llm_chat_create(ember_llm_runner *runner, const ember_llm_chat_options *options,
                                   ember_llm_chat **out) {
    if (runner == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_chat_create: NULL argument");
    if (runner->tok == NULL)
        return ember_error_set(EMBER_ERR_INVALID_STATE, "a chat needs the runner's tokenizer");
    ember_llm_chat_options o = ember_llm_chat_options_default();
    if (options != NULL) {
        if (options->struct_size < sizeof o)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_llm_chat_options.struct_size is %zu, expected %zu",
                                   options->struct_size, sizeof o);
        o = *options;
    }
    ember_llm_chat *c = calloc(1, sizeof *c);
    if (c == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the chat");
    c->r = runner;
    c->opt = o;
    c->opt.system = NULL;
    c->opt.chat_template = NULL;
    ember_status st = ember_chat_template_create(o.chat_template,
                                                 o.chat_template ? strlen(o.chat_template) : 0,
                                                 runner->tok, &c->tpl);
    if (st == EMBER_OK && o.system != NULL) {
        st = push_message(c, "system", o.system);
        c->has_system = st == EMBER_OK;
    }
    if (st != EMBER_OK) {
        ember_llm_chat_destroy(c);
        return st;
    }
    *out = c;
    return EMBER_OK;
}

void ember_llm_chat_destroy(ember_llm_chat *chat) {
    if (chat == NULL) return;
    while (chat->n_msgs > 0) drop_message(chat, chat->n_msgs - 1);
    free(chat->msgs);
    ember_chat_template_destroy(chat->tpl);
    free(chat);
}

size_t ember_llm_chat_messages(const ember_llm_chat *chat) { return chat ? chat->n_msgs : 0; }

static void note(const ember_llm_chat *c, const char *line) {
    if (c->opt.on_note != NULL) c->opt.on_note(c->opt.note_user, line);
}

/* The conversation rendered for the next reply, and its tokens. */
static ember_status render_prompt(const ember_llm_chat *c, int32_t **ids, size_t *n) {
    char *text = NULL;
    size_t len = 0;
    ember_status st = ember_chat_template_render(c->tpl, c->msgs, c->n_msgs, true,
                                                 c->opt.thinking, &text, &len);
    if (st == EMBER_OK)
        st = ember_tokenizer_encode(c->r->tok, text, len, EMBER_ENCODE_SPECIAL, ids, n);
    free(text);
    return st;
}

ember_status ember_llm_chat_add(ember_llm_chat *c, const char *role, const char *content) {
    if (c == NULL || role == NULL || content == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_chat_add: NULL argument");
    ember_status st = push_message(c, role, content);
    if (st == EMBER_OK && c->n_msgs == 1 && strcmp(role, "system") == 0) c->has_system = true;
    return st;
}

/* The reply to the conversation as it stands; added to it on success. */
static ember_status chat_reply(ember_llm_chat *c, const ember_llm_options *options, char **reply,
                               ember_llm_stats *stats) {
    ember_llm_options o = ember_llm_options_default();
    if (options != NULL && options->struct_size >= sizeof o) o = *options;
    size_t first = c->has_system ? 1 : 0;
    /* room for the reply: as many tokens as asked, up to half the context */
    size_t room = o.max_new_tokens < c->r->max_seq_len / 2 ? o.max_new_tokens
                                                           : c->r->max_seq_len / 2;
    int32_t *ids = NULL;
    size_t n = 0, dropped = 0;
    ember_status st;
    for (;;) {
        free(ids);
        ids = NULL;
        st = render_prompt(c, &ids, &n);
        if (st != EMBER_OK || n + room <= c->r->max_seq_len || c->n_msgs - first <= 1) break;
        drop_message(c, first); /* the oldest message after the system prompt */
        dropped++;
    }
    char line[160];
    if (st == EMBER_OK && dropped > 0) {
        snprintf(line, sizeof line,
                 "the context is full: the oldest %zu message%s of the conversation dropped",
                 dropped, dropped == 1 ? " was" : "s were");
        note(c, line);
    }
    if (st == EMBER_OK && n + room > c->r->max_seq_len) {
        /* one message alone is too long: its end is kept */
        size_t cut = n + room - c->r->max_seq_len;
        if (cut >= n) cut = n - 1;
        memmove(ids, ids + cut, (n - cut) * sizeof *ids);
        n -= cut;
        snprintf(line, sizeof line,
                 "the message is too long for the context: its first %zu tokens were dropped",
                 cut);
        note(c, line);
    }
    tok_text_sink sink = {NULL, 0, 0, false};
    if (st == EMBER_OK) st = generate(c->r, ids, n, true, &o, stats, &sink);
    free(ids);
    if (st == EMBER_OK) st = push_message(c, "assistant", sink.data ? sink.data : "");
    if (st != EMBER_OK) {
        free(sink.data);
        return st;
    }
    if (reply != NULL) *reply = sink.data;
    else free(sink.data);
    return EMBER_OK;
}

ember_status ember_llm_chat_reply(ember_llm_chat *c, const ember_llm_options *options,
                                  char **reply, ember_llm_stats *stats) {
    if (c == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_chat_reply: NULL argument");
    return chat_reply(c, options, reply, stats);
}

ember_status ember_llm_chat_send(ember_llm_chat *c, const char *user,
                                 const ember_llm_options *options, char **reply,
                                 ember_llm_stats *stats) {
    if (c == NULL || user == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_llm_chat_send: NULL argument");
    ember_status st = push_message(c, "user", user);
    if (st == EMBER_OK) st = chat_reply(c, options, reply, stats);
    /* on failure the user message goes (dropped messages stay dropped) */
    size_t first = c->has_system ? 1 : 0;
    if (st != EMBER_OK && c->n_msgs > first && strcmp(c->msgs[c->n_msgs - 1].role, "user") == 0)
        drop_message(c, c->n_msgs - 1);
    return st;
}
