/*
 * ember-llm — generate text and chat with an LLM program.
 *
 *   ember-llm --model MODEL.pte --tokenizer FILE|DIR [--prompt TEXT] [options]
 *   ember-llm --model MODEL.pte --tokenizer FILE|DIR --chat [--system TEXT]
 *   ember-llm --tokenizer FILE|DIR --encode TEXT | --decode IDS
 *
 * Generated text is streamed to stdout as each token is chosen. Any failure
 * prints exactly one line, "ember-llm: error: ...", to stderr and exits with
 * status 1 (2 for usage errors).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ember/backend.h"
#include "ember/devtools.h"
#include "ember/ember.h"
#include "runner.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_PROMPT_BYTES ((size_t)1 << 20)
#define MAX_NEW_TOKENS 1000000L

static const char k_usage[] =
    "usage: ember-llm --model MODEL.pte --tokenizer FILE|DIR [--prompt TEXT] [options]\n"
    "       ember-llm --model MODEL.pte --tokenizer FILE|DIR --chat [--system TEXT] [options]\n"
    "       ember-llm --model MODEL.pte --prompt-ids IDS [--tokenizer FILE|DIR] [options]\n"
    "       ember-llm --tokenizer FILE|DIR --encode TEXT\n"
    "       ember-llm --tokenizer FILE|DIR --decode IDS\n"
    "\n"
    "Generates text with an LLM program, printing each token as it is chosen.\n"
    "The tokenizer is a tiktoken rank file (Llama 3's tokenizer.model), a Hugging\n"
    "Face tokenizer.json, a SentencePiece model or GPT-2's vocab.json with\n"
    "merges.txt, or a model directory holding one (with tokenizer_config.json\n"
    "for the chat template). Generation stops at an end-of-generation token (the\n"
    "program's get_eos_ids and the tokenizer's eos and end-of-turn tokens) or\n"
    "after --max-new-tokens. Without --prompt, the prompt is read from one line\n"
    "of standard input.\n"
    "\n";

/* The options (apart: ISO C caps a string literal's length). */
static const char k_usage_options[] =
    "  --model FILE               the .pte program (method \"forward\")\n"
    "  --data FILE                a .ptd file with weights the program keeps outside\n"
    "                             itself (repeatable)\n"
    "  --tokenizer FILE|DIR       the tokenizer, or the model directory holding it\n"
    "  --prompt TEXT              the prompt; where the tokenizer has a chat\n"
    "                             template it becomes the user's message and the\n"
    "                             reply is printed; otherwise (and with --raw) it is\n"
    "                             printed before the generated text, with the BOS\n"
    "                             token the program's metadata names in front, as\n"
    "                             ExecuTorch's runner does\n"
    "  --raw                      use --prompt as it is, without the chat template\n"
    "  --chat                     a conversation: each line of standard input is a\n"
    "                             message, the model's replies are printed; the\n"
    "                             program's cache keeps the conversation, so each\n"
    "                             turn runs only its new tokens\n"
    "  --system TEXT              the system prompt of --chat or a templated --prompt\n"
    "  --think on|off             Qwen 3's enable_thinking in the chat template\n"
    "  --no-special               --encode: special tokens written in the text are\n"
    "                             ordinary text (by default they are parsed, as the\n"
    "                             Hugging Face and tiktoken libraries do, except for\n"
    "                             SentencePiece models, as its library does)\n"
    "  --prompt-ids IDS           the prompt as token ids (\"1 2 3\"), taken as they\n"
    "                             are; without --tokenizer the output is ids too\n"
    "  --max-new-tokens N         generate at most N tokens (default 128)\n"
    "  --temperature F            0 is greedy (default 0.8)\n"
    "  --top-k N                  keep the N most likely tokens; 0 keeps all (default 0)\n"
    "  --top-p F                  keep the most likely tokens up to probability F (default 1)\n"
    "  --repetition-penalty F     penalize tokens already seen; 1 is off (default 1)\n"
    "  --seed N                   random seed (default: from the clock)\n"
    "  --threads N                threads for kernels and delegates (default: one per core)\n"
    "  --weight-cache DIR|off     keep the weights the program packs at load in DIR\n"
    "                             and map them on later runs (default: $EMBER_CACHE_DIR,\n"
    "                             else $XDG_CACHE_HOME/ember or ~/.cache/ember, for\n"
    "                             programs with 32 MiB of packed weights or more)\n"
    "  --kv-keep N                for a program with a KV cache: tokens to keep when\n"
    "                             the cache is full (default: all it holds, which\n"
    "                             gives the same tokens as re-running the window)\n"
    "  --stats                    print load time, time to first token, prefill and\n"
    "                             decode speed, the weight cache and peak memory to\n"
    "                             stderr\n"
    "  --ids                      print the generated token ids instead of text\n"
    "  --etdump FILE              trace every prefill and decode step (one run each:\n"
    "                             each instruction, each delegate node) and write an\n"
    "                             ETDump for ExecuTorch's Inspector\n"
    "  --trace-bytes N            the trace's buffer (default 67108864); steps beyond\n"
    "                             it are dropped with a warning\n"
    "  --encode TEXT              print TEXT's token ids and exit (TEXT - reads stdin)\n"
    "  --decode IDS               print the text of IDS (\"1 2 3\") and exit\n"
    "  -h, --help                 show this help\n";

/* Everything the run owns, released by cleanup() on every exit path. */
typedef struct app {
    const char *model;
    const char *tokenizer;
    const char *prompt_arg;
    const char *prompt_ids;
    const char *encode;
    const char *decode;
    const char *system;
    ember_chat_thinking thinking;
    bool chat, raw, no_special;
    bool stats;
    bool ids;
    ember_llm_options opts;
    bool seed_given;
    size_t threads; /* 0: one per core */
    const char *weight_cache; /* --weight-cache DIR, "off", or NULL: the default */
    char cache_dir[4096];     /* the default directory */
    bool stats_shown;         /* the first --stats shows the cold start */
    const char **data_files; /* (num_data) --data paths */
    size_t num_data;

    ember_tokenizer *tok;
    ember_llm_runner *runner;
    ember_llm_chat *conversation;
    char *text;       /* prompt or --encode text read from stdin */
    int32_t *tokens;  /* encode / decode ids */
    size_t printed;   /* --ids: ids printed so far */
    const char *etdump;  /* --etdump path, or NULL */
    long trace_bytes;
    void *trace_mem;
    ember_event_tracer *tracer;
} app;

static app *g_app;

static void cleanup(app *a) {
    if (a == NULL) return;
    ember_llm_chat_destroy(a->conversation);
    a->conversation = NULL;
    ember_llm_runner_destroy(a->runner);
    a->runner = NULL;
    ember_tokenizer_destroy(a->tok);
    a->tok = NULL;
    free(a->text);
    a->text = NULL;
    free(a->tokens);
    a->tokens = NULL;
    free(a->data_files);
    a->data_files = NULL;
    free(a->trace_mem);
    a->trace_mem = NULL;
}

static _Noreturn void die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints one error line (newlines in messages become "; "), cleans up, exits. */
static _Noreturn void die(int code, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fputs("ember-llm: error: ", stderr);
    for (const char *p = msg; *p; p++) {
        if (*p == '\n') {
            if (p[1] != '\0') fputs("; ", stderr);
        } else if (*p != '\r') {
            fputc(*p, stderr);
        }
    }
    fputc('\n', stderr);
    cleanup(g_app);
    exit(code);
}

/* die() for a failed library call: "[<what>: ]<the library's message>". */
static _Noreturn void die_status(ember_status st, const char *what) {
    const char *detail = ember_last_error();
    if (detail == NULL || detail[0] == '\0') detail = ember_status_str(st);
    if (what == NULL) die(EXIT_RUNTIME, "%s", detail);
    die(EXIT_RUNTIME, "%s: %s", what, detail);
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */
/* ------------------------------------------------------------------------ */

/* Value of option `name` at argv[*i]: "--name VALUE" or "--name=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *name) {
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return NULL;
    if (arg[n] == '=') return arg + n + 1;
    if (arg[n] != '\0') return NULL;
    if (*i + 1 >= argc) die(EXIT_USAGE, "%s needs a value (try --help)", name);
    return argv[++*i];
}

static long parse_long(const char *name, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi)
        die(EXIT_USAGE, "%s must be an integer from %ld to %ld, not '%s'", name, lo, hi, v);
    return n;
}

static float parse_float(const char *name, const char *v, double lo, double hi) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(x >= lo && x <= hi))
        die(EXIT_USAGE, "%s must be a number from %g to %g, not '%s'", name, lo, hi, v);
    return (float)x;
}

static void parse_args(app *a, int argc, char **argv) {
    a->opts = ember_llm_options_default();
    a->data_files = calloc((size_t)argc, sizeof *a->data_files);
    if (a->data_files == NULL) die(EXIT_RUNTIME, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *v;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(k_usage, stdout);
            fputs(k_usage_options, stdout);
            exit(0);
        } else if (strcmp(arg, "--stats") == 0) {
            a->stats = true;
        } else if (strcmp(arg, "--ids") == 0) {
            a->ids = true;
        } else if (strcmp(arg, "--chat") == 0) {
            a->chat = true;
        } else if (strcmp(arg, "--raw") == 0) {
            a->raw = true;
        } else if (strcmp(arg, "--no-special") == 0) {
            a->no_special = true;
        } else if ((v = option_value(argc, argv, &i, "--system")) != NULL) {
            a->system = v;
        } else if ((v = option_value(argc, argv, &i, "--think")) != NULL) {
            if (strcmp(v, "on") == 0) a->thinking = EMBER_CHAT_THINKING_ON;
            else if (strcmp(v, "off") == 0) a->thinking = EMBER_CHAT_THINKING_OFF;
            else die(EXIT_USAGE, "--think is on or off, not '%s'", v);
        } else if ((v = option_value(argc, argv, &i, "--model")) != NULL) {
            a->model = v;
        } else if ((v = option_value(argc, argv, &i, "--data")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--data is empty");
            a->data_files[a->num_data++] = v;
        } else if ((v = option_value(argc, argv, &i, "--tokenizer")) != NULL) {
            a->tokenizer = v;
        } else if ((v = option_value(argc, argv, &i, "--prompt")) != NULL) {
            a->prompt_arg = v;
        } else if ((v = option_value(argc, argv, &i, "--prompt-ids")) != NULL) {
            a->prompt_ids = v;
        } else if ((v = option_value(argc, argv, &i, "--encode")) != NULL) {
            a->encode = v;
        } else if ((v = option_value(argc, argv, &i, "--decode")) != NULL) {
            a->decode = v;
        } else if ((v = option_value(argc, argv, &i, "--max-new-tokens")) != NULL) {
            a->opts.max_new_tokens = (size_t)parse_long("--max-new-tokens", v, 0, MAX_NEW_TOKENS);
        } else if ((v = option_value(argc, argv, &i, "--temperature")) != NULL) {
            a->opts.sampler.temperature = parse_float("--temperature", v, 0.0, 1e6);
        } else if ((v = option_value(argc, argv, &i, "--top-k")) != NULL) {
            a->opts.sampler.top_k = (int32_t)parse_long("--top-k", v, 0, INT32_MAX);
        } else if ((v = option_value(argc, argv, &i, "--top-p")) != NULL) {
            a->opts.sampler.top_p = parse_float("--top-p", v, FLT_MIN, 1.0);
        } else if ((v = option_value(argc, argv, &i, "--repetition-penalty")) != NULL) {
            a->opts.sampler.repetition_penalty = parse_float("--repetition-penalty", v, FLT_MIN, 1e6);
        } else if ((v = option_value(argc, argv, &i, "--etdump")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--etdump is empty");
            a->etdump = v;
        } else if ((v = option_value(argc, argv, &i, "--trace-bytes")) != NULL) {
            a->trace_bytes = parse_long("--trace-bytes", v, 1024, LONG_MAX);
        } else if ((v = option_value(argc, argv, &i, "--weight-cache")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--weight-cache is empty (a directory, or off)");
            a->weight_cache = v;
        } else if ((v = option_value(argc, argv, &i, "--threads")) != NULL) {
            a->threads = (size_t)parse_long("--threads", v, 1, 256);
        } else if ((v = option_value(argc, argv, &i, "--kv-keep")) != NULL) {
            a->opts.kv_keep = (size_t)parse_long("--kv-keep", v, 1, INT32_MAX);
        } else if ((v = option_value(argc, argv, &i, "--seed")) != NULL) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || v[0] == '-')
                die(EXIT_USAGE, "--seed must be a non-negative integer, not '%s'", v);
            a->opts.sampler.seed = (uint64_t)s;
            a->seed_given = true;
        } else {
            die(EXIT_USAGE, "unknown argument '%s' (try --help)", arg);
        }
    }
    if (a->prompt_arg != NULL && a->prompt_ids != NULL)
        die(EXIT_USAGE, "give --prompt or --prompt-ids, not both");
    if (a->tokenizer == NULL && (a->prompt_ids == NULL || a->encode != NULL || a->decode != NULL))
        die(EXIT_USAGE, "--tokenizer FILE|DIR is required (try --help)");
    if (a->chat && (a->prompt_arg != NULL || a->prompt_ids != NULL || a->raw || a->ids))
        die(EXIT_USAGE, "--chat reads its messages from standard input: no --prompt, --prompt-ids, "
                        "--raw or --ids");
    if (a->tokenizer == NULL) a->ids = true;
    if (a->encode != NULL && a->decode != NULL) die(EXIT_USAGE, "give --encode or --decode, not both");
    if (a->encode == NULL && a->decode == NULL && a->model == NULL)
        die(EXIT_USAGE, "--model FILE is required (try --help)");
    if (!a->seed_given) a->opts.sampler.seed = (uint64_t)time(NULL);
}

/* ------------------------------------------------------------------------ */
/* Input                                                                     */
/* ------------------------------------------------------------------------ */

/* Reads stdin up to the end (all = true) or the end of the first line into
 * a->text; returns its length, or -1 if stdin had nothing at all. */
static long read_stdin(app *a, bool all) {
    size_t cap = 4096, n = 0;
    a->text = malloc(cap);
    if (a->text == NULL) die(EXIT_RUNTIME, "out of memory");
    bool any = false;
    int c;
    while ((c = getchar()) != EOF) {
        any = true;
        if (!all && c == '\n') break;
        if (n + 1 >= cap) {
            if (cap >= MAX_PROMPT_BYTES)
                die(EXIT_RUNTIME, "the prompt is longer than %zu bytes", MAX_PROMPT_BYTES);
            cap *= 2;
            char *p = realloc(a->text, cap);
            if (p == NULL) die(EXIT_RUNTIME, "out of memory");
            a->text = p;
        }
        a->text[n++] = (char)c;
    }
    if (ferror(stdin)) die(EXIT_RUNTIME, "cannot read the prompt from standard input");
    if (!all && n > 0 && a->text[n - 1] == '\r') n--;
    a->text[n] = '\0';
    return any ? (long)n : -1;
}

/* ------------------------------------------------------------------------ */
/* Modes                                                                     */
/* ------------------------------------------------------------------------ */

static void load_tokenizer(app *a) {
    ember_status st = ember_tokenizer_load(a->tokenizer, NULL, &a->tok);
    if (st != EMBER_OK) die_status(st, "tokenizer");
}

static void run_encode(app *a) {
    const char *text = a->encode;
    size_t len = strlen(text);
    if (strcmp(text, "-") == 0) {
        len = (size_t)(read_stdin(a, true) < 0 ? 0 : strlen(a->text));
        text = a->text;
    }
    load_tokenizer(a);
    bool special = !a->no_special &&
                   ember_tokenizer_get_format(a->tok) != EMBER_TOKENIZER_SENTENCEPIECE;
    size_t n;
    ember_status st = ember_tokenizer_encode(a->tok, text, len, special ? EMBER_ENCODE_SPECIAL : 0,
                                             &a->tokens, &n);
    if (st != EMBER_OK) die_status(st, "cannot encode the text");
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)a->tokens[i]);
    printf("\n");
}

/* Parses token ids separated by spaces (or commas) into a->tokens, with one
 * slot to spare in front; returns their count. */
static size_t parse_ids(app *a, const char *text, const char *option) {
    size_t cap = strlen(text) / 2 + 2; /* ids need a separator each; one spare */
    if (cap <= SIZE_MAX / sizeof *a->tokens) a->tokens = malloc(cap * sizeof *a->tokens);
    if (a->tokens == NULL) die(EXIT_RUNTIME, "out of memory");
    size_t n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
        if (*p == '\0') break;
        char *end;
        errno = 0;
        long id = strtol(p, &end, 10);
        if (errno != 0 || end == p || id < 0 || id > INT32_MAX || n + 1 >= cap)
            die(EXIT_USAGE, "%s wants token ids separated by spaces, not '%s'", option, text);
        a->tokens[1 + n++] = (int32_t)id;
        p = end;
    }
    return n;
}

static void run_decode(app *a) {
    load_tokenizer(a);
    size_t n = parse_ids(a, a->decode, "--decode");
    char *text;
    size_t len;
    ember_status st = ember_tokenizer_decode(a->tok, a->tokens + 1, n, &text, &len);
    if (st != EMBER_OK) die_status(st, "cannot decode");
    fwrite(text, 1, len, stdout);
    free(text);
}

static void on_token(void *user, int32_t token, const char *piece, size_t len) {
    app *a = user;
    if (a->ids) {
        if (token >= 0) printf(a->printed++ ? " %d" : "%d", (int)token);
    } else {
        fwrite(piece, 1, len, stdout);
    }
    fflush(stdout);
}

/* Peak resident memory in MiB. Linux keeps getrusage()'s ru_maxrss across
 * exec, so a runner started by a large process would report that process's
 * peak: read this process image's own high-water mark (VmHWM) where there is
 * one, and fall back to getrusage() elsewhere. */
static double peak_rss_mib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        char line[256];
        long kib = -1;
        while (fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
        fclose(f);
        if (kib >= 0) return (double)kib / 1024.0;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
#if defined(__APPLE__)
    return (double)ru.ru_maxrss / (1024.0 * 1024.0); /* bytes */
#else
    return (double)ru.ru_maxrss / 1024.0; /* KiB */
#endif
}

/* The memory "forward" plans (its KV cache, int8 or float, and its
 * activations), the part of RSS the context length sets. */
static void print_planned_memory(const app *a) {
    const ember_program *p = ember_module_program(ember_llm_runner_module(a->runner));
    ember_method_meta meta;
    if (ember_program_method_meta(p, "forward", &meta) != EMBER_OK) return;
    double total = 0.0;
    for (size_t i = 0; i < meta.num_planned_buffers; i++) {
        size_t bytes = 0;
        if (ember_program_planned_buffer_size(p, "forward", i, &bytes) == EMBER_OK)
            total += (double)bytes;
    }
    const bool mib = total >= 1024.0 * 1024.0;
    fprintf(stderr, "planned memory:      %.1f %s (KV cache and activations)\n",
            total / (mib ? 1024.0 * 1024.0 : 1024.0), mib ? "MiB" : "KiB");
}

/* The default weight cache keeps programs with this many packed bytes or more. */
#define DEFAULT_CACHE_MIN_BYTES ((uint64_t)32 << 20)

/* What the weight cache did, in one line (nothing when there was none). */
static void print_weight_cache(const app *a) {
    ember_weight_cache_info w;
    ember_module_weight_cache_info(ember_llm_runner_module(a->runner), &w);
    const double mib = (double)w.bytes / (1024.0 * 1024.0);
    switch (w.state) {
    case EMBER_WEIGHT_CACHE_MAPPED:
        fprintf(stderr, "weight cache:        mapped %.1f MiB of packed weights from %s", mib, w.path);
        if (w.misses > 0) fprintf(stderr, " (%zu weights not there, packed now)", w.misses);
        fputc('\n', stderr);
        break;
    case EMBER_WEIGHT_CACHE_EXTENDED:
        fprintf(stderr,
                "weight cache:        mapped %s; packed %zu weights it lacked and kept them with "
                "its own (%.1f MiB)\n",
                w.path, w.added, mib);
        break;
    case EMBER_WEIGHT_CACHE_MAPPED_ONLY:
        fprintf(stderr,
                "weight cache:        mapped %s; %zu weights not there, packed now, not kept "
                "(%s)\n",
                w.path, w.misses, w.message);
        break;
    case EMBER_WEIGHT_CACHE_WRITTEN:
        fprintf(stderr, "weight cache:        packed %.1f MiB of weights, kept in %s", mib, w.path);
        if (w.message[0] != '\0') fprintf(stderr, " (replacing a file that was %s)", w.message);
        fputc('\n', stderr);
        break;
    case EMBER_WEIGHT_CACHE_NOT_WRITTEN:
        /* a small model under the default directory's threshold: nothing to say */
        if (a->weight_cache == NULL && w.bytes < DEFAULT_CACHE_MIN_BYTES) break;
        fprintf(stderr, "weight cache:        not kept (%s)\n", w.message);
        break;
    default:
        if (w.message[0] != '\0') fprintf(stderr, "weight cache:        none (%s)\n", w.message);
        break;
    }
}

/* The Vulkan device a program with a VulkanBackend delegate runs on (nothing
 * for other programs: asking would open the device). */
static void print_vulkan_device(const app *a) {
    const ember_program *p = ember_module_program(ember_llm_runner_module(a->runner));
    ember_method_meta meta;
    if (ember_program_method_meta(p, "forward", &meta) != EMBER_OK) return;
    bool vulkan = false;
    for (size_t i = 0; i < meta.num_delegates && !vulkan; i++) {
        char id[64];
        vulkan = ember_program_delegate_name(p, "forward", i, id, sizeof id) == EMBER_OK &&
                 strcmp(id, "VulkanBackend") == 0;
    }
    ember_vulkan_info v;
    if (!vulkan || ember_vulkan_info_get(&v) != EMBER_OK) return;
    fprintf(stderr, "vulkan device:       %s (float16 storage %s, weights %.1f MiB)\n",
            v.device != NULL ? v.device : "unknown", v.float16_storage ? "yes" : "no",
            (double)v.weights_bytes / (1024.0 * 1024.0));
}

static void print_stats(app *a, const ember_llm_stats *s) {
    double rss_mib = peak_rss_mib();
    double prefill_tps = s->prefill_ms > 0 ? (double)s->prompt_tokens * 1e3 / s->prefill_ms : 0.0;
    double decode_tps = s->decode_ms > 0 ? (double)s->decode_steps * 1e3 / s->decode_ms : 0.0;
    const double load_ms = ember_llm_runner_load_ms(a->runner);
    fprintf(stderr, "load:                %.2f ms\n", load_ms);
    fprintf(stderr, "prompt tokens:       %zu\n", s->prompt_tokens);
    fprintf(stderr, "prefill:             %.2f ms (%.1f tok/s)\n", s->prefill_ms, prefill_tps);
    fprintf(stderr, "time to first token: %.2f ms\n", s->ttft_ms);
    if (!a->stats_shown) /* the first generation: from the start, load included */
        fprintf(stderr, "load + first token:  %.2f ms\n", load_ms + s->ttft_ms);
    fprintf(stderr, "generated tokens:    %zu\n", s->generated_tokens);
    fprintf(stderr, "decode:              %.2f ms for %zu steps (%.1f tok/s)\n", s->decode_ms,
            s->decode_steps, decode_tps);
    if (s->cache_restarts > 0)
        fprintf(stderr, "cache restarts:      %zu\n", s->cache_restarts);
    if (!a->stats_shown) {
        print_vulkan_device(a);
        print_weight_cache(a);
        print_planned_memory(a);
    }
    fprintf(stderr, "peak RSS:            %.1f MiB\n", rss_mib);
    a->stats_shown = true;
}

static void generate(app *a, const int32_t *tokens, size_t n_tokens);
static void start_chat(app *a);
static void chat_turn(app *a, const char *message);

/* Writes the trace of every step to --etdump's file. */
static void write_trace(app *a) {
    size_t need = 0;
    ember_status st = ember_etdump_write(a->tracer, NULL, 0, &need);
    if (st != EMBER_OK) die_status(st, "writing the ETDump");
    void *buf = malloc(need);
    if (buf == NULL) die(EXIT_RUNTIME, "out of memory (%zu bytes of ETDump)", need);
    st = ember_etdump_write(a->tracer, buf, need, &need);
    if (st != EMBER_OK) {
        free(buf);
        die_status(st, "writing the ETDump");
    }
    FILE *f = fopen(a->etdump, "wb");
    bool ok = f != NULL && fwrite(buf, 1, need, f) == need;
    if (f != NULL) ok = fclose(f) == 0 && ok;
    free(buf);
    if (!ok) die(EXIT_RUNTIME, "cannot write '%s': %s", a->etdump, strerror(errno));
    ember_event_tracer_stats s;
    ember_event_tracer_get_stats(a->tracer, &s);
    fprintf(stderr, "etdump: %s (%zu bytes, %zu runs, %zu events)\n", a->etdump, need, s.runs,
            s.events);
    if (ember_event_tracer_status(a->tracer) != EMBER_OK)
        fprintf(stderr, "ember-llm: warning: %s (raise --trace-bytes)\n", ember_last_error());
}

static void on_note(void *user, const char *note) {
    (void)user;
    fflush(stdout);
    fprintf(stderr, "ember-llm: note: %s\n", note);
}

static void start_chat(app *a) {
    ember_llm_chat_options co = ember_llm_chat_options_default();
    co.system = a->system;
    co.thinking = a->thinking;
    co.on_note = on_note;
    ember_status st = ember_llm_chat_create(a->runner, &co, &a->conversation);
    if (st != EMBER_OK) die_status(st, "cannot start the chat");
}

/* One message and the model's reply, streamed. */
static void chat_turn(app *a, const char *message) {
    a->opts.on_token = on_token;
    a->opts.user = a;
    ember_llm_stats s;
    ember_status st = ember_llm_chat_send(a->conversation, message, &a->opts, NULL, &s);
    printf("\n");
    fflush(stdout);
    if (st != EMBER_OK) die_status(st, "generation failed");
    if (a->stats) print_stats(a, &s);
}

/* --chat: every line of standard input is a message. */
static void run_chat(app *a) {
    start_chat(a);
    bool tty = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        if (tty) {
            printf("> ");
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        if ((size_t)n > MAX_PROMPT_BYTES) {
            free(line);
            die(EXIT_RUNTIME, "a message is longer than %zu bytes", MAX_PROMPT_BYTES);
        }
        chat_turn(a, line);
        if (tty) printf("\n");
    }
    free(line);
    if (tty) printf("\n");
}

/* --weight-cache: a directory given is used for any program; the default
 * one only for programs whose packed weights take long enough to pack. */
static void set_weight_cache(app *a, ember_module_options *mo) {
    if (a->weight_cache != NULL) {
        if (strcmp(a->weight_cache, "off") != 0) mo->weight_cache_dir = a->weight_cache;
        return;
    }
    const char *env = getenv("EMBER_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n = -1;
    if (env != NULL && env[0] != '\0')
        n = snprintf(a->cache_dir, sizeof a->cache_dir, "%s", env);
    else if (xdg != NULL && xdg[0] == '/')
        n = snprintf(a->cache_dir, sizeof a->cache_dir, "%s/ember", xdg);
    else if (home != NULL && home[0] == '/')
        n = snprintf(a->cache_dir, sizeof a->cache_dir, "%s/.cache/ember", home);
    if (n <= 0 || (size_t)n >= sizeof a->cache_dir) return;
    mo->weight_cache_dir = a->cache_dir;
    mo->weight_cache_min_bytes = DEFAULT_CACHE_MIN_BYTES;
}

static void run_generate(app *a) {
    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.num_threads = a->threads;
    mo.data_files = a->data_files;
    mo.num_data_files = a->num_data;
    set_weight_cache(a, &mo);
    /* Token ids are checked before the model is loaded (a usage error). */
    size_t n_ids = a->prompt_ids != NULL ? parse_ids(a, a->prompt_ids, "--prompt-ids") : 0;
    ember_status st = ember_llm_runner_open(a->model, a->tokenizer, &mo, &a->runner);
    if (st != EMBER_OK) die_status(st, NULL);
    if (a->etdump != NULL) {
        size_t bytes = a->trace_bytes > 0 ? (size_t)a->trace_bytes : (size_t)64 << 20;
        a->trace_mem = malloc(bytes);
        if (a->trace_mem == NULL) die(EXIT_RUNTIME, "out of memory (%zu trace bytes)", bytes);
        st = ember_event_tracer_init(a->trace_mem, bytes, EMBER_TRACE_PROFILE, &a->tracer);
        if (st == EMBER_OK)
            st = ember_method_set_event_tracer(ember_llm_runner_method(a->runner), a->tracer);
        if (st != EMBER_OK) die_status(st, "starting the event tracer");
    }
    size_t max_len = ember_llm_runner_max_seq_len(a->runner);
    if (a->chat) {
        run_chat(a);
        return;
    }

    if (a->prompt_ids != NULL) {
        size_t n = n_ids;
        if (n == 0) die(EXIT_RUNTIME, "the prompt is empty");
        if (n > max_len) die(EXIT_RUNTIME, "the prompt is %zu tokens; this model takes at most %zu", n, max_len);
        generate(a, a->tokens + 1, n);
        return;
    }
    const char *prompt = a->prompt_arg;
    size_t len;
    if (prompt == NULL) {
        printf("Enter model prompt: ");
        fflush(stdout);
        long n = read_stdin(a, false);
        if (n < 0) die(EXIT_RUNTIME, "no prompt: standard input is empty (give --prompt TEXT)");
        prompt = a->text;
        len = (size_t)n;
    } else {
        len = strlen(prompt);
    }
    if (len == 0) die(EXIT_RUNTIME, "the prompt is empty");
    if (len > MAX_PROMPT_BYTES) die(EXIT_RUNTIME, "the prompt is longer than %zu bytes", MAX_PROMPT_BYTES);

    /* a model with a chat template: the prompt is the user's message */
    if (!a->raw && ember_tokenizer_chat_template(ember_llm_runner_tokenizer(a->runner)) != NULL) {
        start_chat(a);
        chat_turn(a, prompt);
        return;
    }
    /* Encode first, so that a prompt the model cannot take fails before any
     * output (with the BOS token the program's metadata may name). */
    size_t n_tokens;
    st = ember_llm_runner_encode(a->runner, prompt, len, &a->tokens, &n_tokens);
    if (st != EMBER_OK) die_status(st, "cannot encode the prompt");
    int32_t *tokens = a->tokens;
    if (n_tokens > max_len)
        die(EXIT_RUNTIME, "the prompt is %zu tokens; this model takes at most %zu", n_tokens, max_len);
    if (!a->ids) {
        fwrite(prompt, 1, len, stdout);
        fflush(stdout);
    }
    generate(a, tokens, n_tokens);
}

/* Generates from tokens[0..n) (checked against the model's limit), printing
 * each new token as it comes, then the stats. */
static void generate(app *a, const int32_t *tokens, size_t n_tokens) {
    size_t max_len = ember_llm_runner_max_seq_len(a->runner);
    if (a->opts.kv_keep > max_len)
        die(EXIT_USAGE, "--kv-keep is %zu; this model takes at most %zu tokens", a->opts.kv_keep,
            max_len);
    a->opts.on_token = on_token;
    a->opts.user = a;
    ember_llm_stats s;
    ember_status st = ember_llm_runner_generate_ids(a->runner, tokens, n_tokens, &a->opts, &s);
    if (st != EMBER_OK) {
        printf("\n");
        die_status(st, "generation failed");
    }
    printf("\n");
    fflush(stdout);
    if (a->stats) print_stats(a, &s);
    if (a->tracer != NULL) write_trace(a);
}

int main(int argc, char **argv) {
    static app a;
    g_app = &a;
    parse_args(&a, argc, argv);
    if (a.encode != NULL) run_encode(&a);
    else if (a.decode != NULL) run_decode(&a);
    else run_generate(&a);
    fflush(stdout);
    cleanup(&a);
    return 0;
}
