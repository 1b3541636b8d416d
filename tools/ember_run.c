/*
 * ember-run — load a .pte program, describe it, run one method, show outputs;
 * or run and verify every test case of a bundled program.
 *
 *   ember-run MODEL.pte [--data FILE.ptd]... [--method NAME] [--input FILE.npy]...
 *                       [--output-dir DIR] [--iterations N] [--threads N]
 *                       [--etdump FILE.etdp [--debug-outputs[=full|stats]]
 *                        [--trace-bytes N] [--debug-bytes N]]
 *   ember-run --bundled FILE.bpte [--rtol R] [--atol A] [--threads N]
 *   ember-run --list-ops MODEL.pte [--method NAME]
 *
 * A bundled program given as MODEL runs its embedded program like a .pte.
 *
 * Any failure prints exactly one line, "ember-run: error: ...", to stderr
 * and exits with status 1 (2 for usage errors).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ember/ember.h"
#include "ember/backend.h"
#include "ember/devtools.h"
#include "ember/bundled_program.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"
#include "npy.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_ITERATIONS 10000000L
#define SHOW_VALUES 8

static const char k_usage[] =
    "usage: ember-run MODEL.pte [--data FILE.ptd]... [--method NAME] [--input FILE.npy]...\n"
    "                 [--output-dir DIR] [--iterations N] [--threads N]\n"
    "                 [--etdump FILE.etdp [--debug-outputs[=full|stats]]\n"
    "                  [--trace-bytes N] [--debug-bytes N]]\n"
    "       ember-run --bundled FILE.bpte [--rtol R] [--atol A] [--threads N]\n"
    "       ember-run --list-ops MODEL.pte [--method NAME]\n"
    "\n"
    "Loads MODEL.pte (memory-mapped), prints what its method needs, runs it and\n"
    "prints a summary of each output. MODEL may also be a bundled program (.bpte):\n"
    "its embedded program is run.\n"
    "\n"
    "  --model FILE       the program (the same as giving it without an option)\n"
    "  --bundled FILE     run every test case of every method suite of a bundled\n"
    "                     program, compare the outputs with the expected ones and\n"
    "                     print pass or fail per case with the largest absolute and\n"
    "                     relative error; exits 1 if any case fails\n"
    "  --rtol R, --atol A tolerances for --bundled (default 1e-5 and 1e-8): a float\n"
    "                     matches when |got - expected| <= A + R * |expected|\n"
    "  --data FILE.ptd    a data file holding weights the program keeps outside\n"
    "                     itself (external constants, delegate data); repeatable,\n"
    "                     searched in order\n"
    "  --list-ops         print the kernel keys (\"aten::add.out\") that the program's\n"
    "                     methods call, one a line, sorted, and exit without loading\n"
    "                     any method: the operator list of a selective build\n"
    "                     (EMBER_SELECT_OPS). Delegated subgraphs run inside their\n"
    "                     backend and call no kernel, so their operators are not\n"
    "                     listed. With --method, only that method's\n"
    "  --method NAME      method to run (default: forward, else the first method)\n"
    "  --input FILE.npy   one per method input, in order; without them, inputs are\n"
    "                     generated at their largest shape (floats: fixed-seed\n"
    "                     uniform in [-1, 1); integers and bools: zeros)\n"
    "  --output-dir DIR   write each output as DIR/out<i>.npy\n"
    "  --iterations N     run N times and report min and median latency (default 1)\n"
    "  --threads N        threads for kernels and delegates (default: one per core)\n"
    "  --etdump FILE      trace the load and every iteration (each instruction, each\n"
    "                     delegate node) and write an ETDump for ExecuTorch's Inspector\n"
    "  --debug-outputs    also record every instruction's output and the method's\n"
    "                     outputs, into FILE.debug (the Inspector's debug_buffer_path);\n"
    "                     =stats records [hash, numel, min, max, mean] per tensor instead\n"
    "  --trace-bytes N    event buffer size (default 16777216); events beyond are dropped\n"
    "  --debug-bytes N    debug buffer size (default 268435456)\n"
    "  -h, --help         show this help\n";

/* Everything the run owns, released by cleanup() on every exit path. */
typedef struct run {
    const char *model;
    const char *method_name;
    const char **inputs; /* (num_inputs) --input paths */
    size_t num_inputs;
    const char **data_files; /* (num_data) --data paths */
    size_t num_data;
    ember_mmap_loader *data_loaders; /* (num_data) */
    ember_data_map **maps; /* (num_data), NULL until open */
    size_t num_maps_open;
    const char *output_dir;
    bool bundled;          /* --bundled: verify test cases */
    bool list_ops;         /* --list-ops: print the operator keys and exit */
    double rtol, atol;
    long iterations;
    long threads;          /* 0: one per core */
    ember_threadpool *pool;

    ember_mmap_loader loader;
    bool loader_open;
    ember_buffer file;     /* the whole file, a view of the mapping */
    bool have_file;
    ember_bundled_program bp; /* when the file is a bundled program */
    bool is_bundled;
    ember_buffer_loader inner; /* over bp.program */
    ember_program *program;
    ember_method *method;
    npy_array *in_arrays;  /* (method inputs) data bound to inputs */
    ember_value_meta *in_meta; /* (method inputs) */
    size_t num_in_arrays;
    void **out_buffers;    /* (method outputs) storage for unplanned outputs */
    size_t num_out_buffers;
    uint64_t *times_ns;    /* (iterations) */
    const char *etdump;    /* --etdump path, or NULL */
    int debug_outputs;     /* 0 none, 1 full, 2 stats */
    long long trace_bytes, debug_bytes;
    void *trace_mem, *debug_mem;
    ember_event_tracer *tracer;
} run;

static run *g_run;

static void cleanup(run *r) {
    if (r == NULL) return;
    ember_method_destroy(r->method);
    ember_threadpool_destroy(r->pool);
    r->method = NULL;
    ember_program_destroy(r->program);
    r->program = NULL;
    if (r->have_file && r->loader.base.release != NULL)
        r->loader.base.release(r->loader.base.ctx, &r->file);
    r->have_file = false;
    if (r->loader_open) ember_mmap_loader_close(&r->loader);
    r->loader_open = false;
    for (size_t i = 0; i < r->num_maps_open; i++) {
        ember_data_map_close(r->maps[i]);
        ember_mmap_loader_close(&r->data_loaders[i]);
    }
    r->num_maps_open = 0;
    free(r->maps);
    r->maps = NULL;
    free(r->data_loaders);
    r->data_loaders = NULL;
    free(r->data_files);
    r->data_files = NULL;
    for (size_t i = 0; i < r->num_in_arrays; i++) npy_free(&r->in_arrays[i]);
    free(r->in_arrays);
    r->in_arrays = NULL;
    free(r->in_meta);
    r->in_meta = NULL;
    for (size_t i = 0; i < r->num_out_buffers; i++) free(r->out_buffers[i]);
    free(r->out_buffers);
    r->out_buffers = NULL;
    free(r->inputs);
    r->inputs = NULL;
    free(r->times_ns);
    r->times_ns = NULL;
    free(r->trace_mem);
    r->trace_mem = NULL;
    free(r->debug_mem);
    r->debug_mem = NULL;
}

/* Prints one error line (newlines in messages become "; "), cleans up, exits. */
static _Noreturn void die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static _Noreturn void die(int code, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fputs("ember-run: error: ", stderr);
    for (const char *p = msg; *p; p++) {
        if (*p == '\n') {
            if (p[1] != '\0') fputs("; ", stderr);
        } else if (*p != '\r') {
            fputc(*p, stderr);
        }
    }
    fputc('\n', stderr);
    cleanup(g_run);
    exit(code);
}

/* die() for a failed library call: "<what>: <status>[: <message>]". */
static _Noreturn void die_status(ember_status st, const char *what) {
    const char *detail = ember_last_error();
    if (detail != NULL && detail[0] != '\0')
        die(EXIT_RUNTIME, "%s: %s: %s", what, ember_status_str(st), detail);
    die(EXIT_RUNTIME, "%s: %s", what, ember_status_str(st));
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL) die(EXIT_RUNTIME, "out of memory");
    return p;
}

/* 16-byte aligned, zeroed storage of n bytes (kernels may use aligned loads). */
static void *xalloc_aligned(size_t n) {
    size_t rounded = (n + 15u) & ~(size_t)15u;
    if (rounded < n) die(EXIT_RUNTIME, "out of memory (%zu bytes)", n);
    if (rounded == 0) rounded = 16;
    void *p = aligned_alloc(16, rounded);
    if (p == NULL) die(EXIT_RUNTIME, "out of memory (%zu bytes)", n);
    memset(p, 0, rounded);
    return p;
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

/* A byte count option from 1 KiB to 1 TiB. */
static long long parse_bytes(const char *name, const char *v) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1024 || n > (1LL << 40))
        die(EXIT_USAGE, "%s must be a byte count from 1024 to 2^40, not '%s'", name, v);
    return n;
}

static void parse_args(run *r, int argc, char **argv) {
    r->iterations = 1;
    r->trace_bytes = 16LL << 20;
    r->debug_bytes = 256LL << 20;
    r->rtol = 1e-5;
    r->atol = 1e-8;
    r->inputs = xcalloc((size_t)argc, sizeof *r->inputs);
    r->data_files = xcalloc((size_t)argc, sizeof *r->data_files);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *v;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(k_usage, stdout);
            cleanup(r);
            exit(0);
        } else if ((v = option_value(argc, argv, &i, "--model")) != NULL ||
                   (v = option_value(argc, argv, &i, "--bundled")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "%s is empty", arg);
            if (r->model != NULL) die(EXIT_USAGE, "more than one model given ('%s', '%s')", r->model, v);
            r->model = v;
            if (strncmp(arg, "--bundled", 9) == 0) r->bundled = true;
        } else if ((v = option_value(argc, argv, &i, "--rtol")) != NULL ||
                   (v = option_value(argc, argv, &i, "--atol")) != NULL) {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (errno != 0 || end == v || *end != '\0' || !(x >= 0.0) || x > 1e30)
                die(EXIT_USAGE, "%.6s must be a non-negative number, not '%s'", arg, v);
            if (strncmp(arg, "--rtol", 6) == 0) r->rtol = x;
            else r->atol = x;
        } else if ((v = option_value(argc, argv, &i, "--method")) != NULL) {
            r->method_name = v;
        } else if ((v = option_value(argc, argv, &i, "--input")) != NULL) {
            r->inputs[r->num_inputs++] = v;
        } else if ((v = option_value(argc, argv, &i, "--data")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--data is empty");
            r->data_files[r->num_data++] = v;
        } else if ((v = option_value(argc, argv, &i, "--output-dir")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--output-dir is empty");
            r->output_dir = v;
        } else if ((v = option_value(argc, argv, &i, "--iterations")) != NULL) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || n < 1 || n > MAX_ITERATIONS)
                die(EXIT_USAGE, "--iterations must be an integer from 1 to %ld, not '%s'",
                    MAX_ITERATIONS, v);
            r->iterations = n;
        } else if ((v = option_value(argc, argv, &i, "--threads")) != NULL) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || n < 1 || n > 256)
                die(EXIT_USAGE, "--threads must be an integer from 1 to 256, not '%s'", v);
            r->threads = n;
        } else if ((v = option_value(argc, argv, &i, "--etdump")) != NULL) {
            if (v[0] == '\0') die(EXIT_USAGE, "--etdump is empty");
            r->etdump = v;
        } else if (strcmp(arg, "--debug-outputs") == 0 ||
                   strcmp(arg, "--debug-outputs=full") == 0) {
            r->debug_outputs = 1;
        } else if (strcmp(arg, "--debug-outputs=stats") == 0) {
            r->debug_outputs = 2;
        } else if (strncmp(arg, "--debug-outputs=", 16) == 0) {
            die(EXIT_USAGE, "--debug-outputs takes full or stats, not '%s'", arg + 16);
        } else if (strcmp(arg, "--list-ops") == 0) {
            r->list_ops = true;
        } else if ((v = option_value(argc, argv, &i, "--trace-bytes")) != NULL) {
            r->trace_bytes = parse_bytes("--trace-bytes", v);
        } else if ((v = option_value(argc, argv, &i, "--debug-bytes")) != NULL) {
            r->debug_bytes = parse_bytes("--debug-bytes", v);
        } else if (arg[0] == '-' && arg[1] != '\0') {
            die(EXIT_USAGE, "unknown option '%s' (try --help)", arg);
        } else if (r->model == NULL) {
            r->model = arg;
        } else {
            die(EXIT_USAGE, "more than one model given ('%s', '%s')", r->model, arg);
        }
    }
    if (r->model == NULL) die(EXIT_USAGE, "no model given (usage: ember-run MODEL.pte [options]; try --help)");
    if (r->bundled && (r->num_inputs > 0 || r->output_dir != NULL || r->iterations != 1))
        die(EXIT_USAGE, "--bundled takes its inputs from the test cases: drop --input, "
                        "--output-dir and --iterations");
    if (r->list_ops && (r->bundled || r->num_inputs > 0 || r->output_dir != NULL ||
                        r->iterations != 1 || r->etdump != NULL))
        die(EXIT_USAGE, "--list-ops takes only the model, --data and --method");
    if (r->debug_outputs != 0 && r->etdump == NULL)
        die(EXIT_USAGE, "--debug-outputs needs --etdump FILE");
}

/* ------------------------------------------------------------------------ */
/* Tracing                                                                   */
/* ------------------------------------------------------------------------ */

static void start_tracer(run *r) {
    uint32_t flags = EMBER_TRACE_PROFILE;
    if (r->debug_outputs != 0)
        flags |= EMBER_TRACE_PROGRAM_OUTPUTS |
                 (r->debug_outputs == 1 ? EMBER_TRACE_DEBUG_OUTPUTS : EMBER_TRACE_DEBUG_STATS);
    if ((unsigned long long)r->trace_bytes > SIZE_MAX ||
        (unsigned long long)r->debug_bytes > SIZE_MAX)
        die(EXIT_USAGE, "trace buffers too large for this machine");
    r->trace_mem = malloc((size_t)r->trace_bytes);
    if (r->trace_mem == NULL) die(EXIT_RUNTIME, "out of memory (%lld trace bytes)", r->trace_bytes);
    ember_status st =
        ember_event_tracer_init(r->trace_mem, (size_t)r->trace_bytes, flags, &r->tracer);
    if (st != EMBER_OK) die_status(st, "starting the event tracer");
    if (r->debug_outputs != 0) {
        r->debug_mem = malloc((size_t)r->debug_bytes);
        if (r->debug_mem == NULL)
            die(EXIT_RUNTIME, "out of memory (%lld debug bytes)", r->debug_bytes);
        st = ember_event_tracer_set_debug_buffer(r->tracer, r->debug_mem, (size_t)r->debug_bytes);
        if (st != EMBER_OK) die_status(st, "starting the event tracer");
    }
}

static void write_bytes(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) die(EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok) die(EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
}

static void write_trace(run *r) {
    size_t need = 0;
    ember_status st = ember_etdump_write(r->tracer, NULL, 0, &need);
    if (st != EMBER_OK) die_status(st, "writing the ETDump");
    void *buf = aligned_alloc(8, (need + 7) & ~(size_t)7);
    if (buf == NULL) die(EXIT_RUNTIME, "out of memory (%zu bytes of ETDump)", need);
    st = ember_etdump_write(r->tracer, buf, need, &need);
    if (st != EMBER_OK) {
        free(buf);
        die_status(st, "writing the ETDump");
    }
    FILE *f = fopen(r->etdump, "wb");
    bool ok = f != NULL && fwrite(buf, 1, need, f) == need;
    if (f != NULL) ok = fclose(f) == 0 && ok;
    free(buf);
    if (!ok) die(EXIT_RUNTIME, "cannot write '%s': %s", r->etdump, strerror(errno));
    ember_event_tracer_stats s;
    ember_event_tracer_get_stats(r->tracer, &s);
    printf("etdump: %s (%zu bytes, %zu runs, %zu events)\n", r->etdump, need, s.runs, s.events);
    if (r->debug_outputs != 0) {
        const void *data;
        size_t size;
        char path[4200];
        snprintf(path, sizeof path, "%s.debug", r->etdump);
        ember_event_tracer_debug_data(r->tracer, &data, &size);
        write_bytes(path, data, size);
        printf("debug buffer: %s (%zu bytes)\n", path, size);
    }
    if (ember_event_tracer_status(r->tracer) != EMBER_OK) {
        fflush(stdout);
        fprintf(stderr, "ember-run: warning: %s (raise --trace-bytes or --debug-bytes)\n",
                ember_last_error());
    }
}

/* ------------------------------------------------------------------------ */
/* Describing the method                                                     */
/* ------------------------------------------------------------------------ */

static const char *tag_name(uint32_t tag) {
    switch (tag) {
    case EMBER_TAG_NONE: return "none";
    case EMBER_TAG_INT: return "int";
    case EMBER_TAG_BOOL: return "bool";
    case EMBER_TAG_DOUBLE: return "double";
    case EMBER_TAG_TENSOR: return "tensor";
    case EMBER_TAG_STRING: return "string";
    case EMBER_TAG_INT_LIST: return "int list";
    case EMBER_TAG_DOUBLE_LIST: return "double list";
    case EMBER_TAG_BOOL_LIST: return "bool list";
    case EMBER_TAG_TENSOR_LIST: return "tensor list";
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: return "optional tensor list";
    default: return "unknown";
    }
}

static const char *dynamism_name(uint8_t d) {
    switch (d) {
    case EMBER_SHAPE_STATIC: return "static";
    case EMBER_SHAPE_DYNAMIC_BOUND: return "dynamic (bounded)";
    case EMBER_SHAPE_DYNAMIC_UNBOUND: return "dynamic (unbounded)";
    default: return "unknown dynamism";
    }
}

static void print_shape32(const int32_t *sizes, uint32_t dim) {
    putchar('[');
    for (uint32_t d = 0; d < dim && d < EMBER_MAX_DIM; d++) printf(d ? ", %d" : "%d", (int)sizes[d]);
    putchar(']');
}

static void print_value_meta(const char *kind, size_t i, const ember_value_meta *vm) {
    printf("  %s %zu: ", kind, i);
    if (vm->tag != EMBER_TAG_TENSOR) {
        printf("%s\n", tag_name(vm->tag));
        return;
    }
    printf("%s ", ember_dtype_name(vm->dtype));
    if (vm->dynamism != EMBER_SHAPE_STATIC) printf("up to ");
    print_shape32(vm->sizes, vm->dim);
    printf(" %s, %s, %zu bytes\n", dynamism_name(vm->dynamism), vm->planned ? "planned" : "unplanned",
           vm->nbytes);
}

static void describe(run *r, const ember_method_meta *mm) {
    printf("method %s: %zu inputs, %zu outputs, %zu instructions, %zu operators, %zu delegates, "
           "%zu values\n",
           mm->name, mm->num_inputs, mm->num_outputs, mm->num_instructions, mm->num_operators,
           mm->num_delegates, mm->num_values);
    ember_status st;
    for (size_t i = 0; i < mm->num_inputs; i++) {
        ember_value_meta vm;
        if ((st = ember_program_input_meta(r->program, r->method_name, i, &vm)) != EMBER_OK)
            die_status(st, "reading input meta");
        print_value_meta("input", i, &vm);
    }
    for (size_t i = 0; i < mm->num_outputs; i++) {
        ember_value_meta vm;
        if ((st = ember_program_output_meta(r->program, r->method_name, i, &vm)) != EMBER_OK)
            die_status(st, "reading output meta");
        print_value_meta("output", i, &vm);
    }

    size_t total = 0;
    printf("  planned memory: %zu buffer%s", mm->num_planned_buffers,
           mm->num_planned_buffers == 1 ? "" : "s");
    for (size_t i = 0; i < mm->num_planned_buffers; i++) {
        size_t bytes;
        if ((st = ember_program_planned_buffer_size(r->program, r->method_name, i, &bytes)) != EMBER_OK)
            die_status(st, "reading planned buffer sizes");
        printf("%s%zu", i == 0 ? " (" : ", ", bytes);
        if (ember_add_overflow(total, bytes, &total)) total = SIZE_MAX;
    }
    printf("%s, %zu bytes in all\n", mm->num_planned_buffers ? " bytes)" : "", total);

    size_t arena;
    if ((st = ember_program_method_arena_size(r->program, r->method_name, &arena)) != EMBER_OK)
        die_status(st, "reading method arena size");
    printf("  method memory: %zu bytes\n", arena);

    printf("  operators (%zu):", mm->num_operators);
    for (size_t i = 0; i < mm->num_operators; i++) {
        char name[EMBER_MAX_NAME + 1];
        if ((st = ember_program_operator_name(r->program, r->method_name, i, name, sizeof name)) !=
            EMBER_OK)
            die_status(st, "reading operator names");
        printf("%s %s", i == 0 ? "" : ",", name);
    }
    printf("\n");
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), from the top 24 bits. */
static float next_uniform(uint64_t *state) {
    return (float)(splitmix64(state) >> 40) / 8388608.0f - 1.0f;
}

/* Fills an array of the input's largest shape: floats from a fixed-seed
 * generator, everything else zeros. */
static void generate_input(size_t i, const ember_value_meta *vm, npy_array *a) {
    size_t elsize = ember_dtype_size(vm->dtype);
    if (elsize == 0) die(EXIT_RUNTIME, "input %zu: unknown dtype %d", i, (int)vm->dtype);
    if (vm->dim > EMBER_MAX_DIM) die(EXIT_RUNTIME, "input %zu: rank %u is too large", i, (unsigned)vm->dim);
    memset(a, 0, sizeof *a);
    a->dtype = vm->dtype;
    a->dim = vm->dim;
    a->numel = 1;
    for (uint32_t d = 0; d < vm->dim; d++) {
        if (vm->sizes[d] < 0) die(EXIT_RUNTIME, "input %zu: negative size in dimension %u", i, (unsigned)d);
        a->shape[d] = vm->sizes[d];
        if (ember_mul_overflow(a->numel, (size_t)vm->sizes[d], &a->numel))
            die(EXIT_RUNTIME, "input %zu: shape is too large", i);
    }
    if (ember_mul_overflow(a->numel, elsize, &a->nbytes))
        die(EXIT_RUNTIME, "input %zu: shape is too large", i);
    a->data = xalloc_aligned(a->nbytes);

    uint64_t state = 0x656d626572ull + i; /* "ember" + index: same inputs every run */
    if (vm->dtype == EMBER_FLOAT32) {
        for (size_t k = 0; k < a->numel; k++) ((float *)a->data)[k] = next_uniform(&state);
    } else if (vm->dtype == EMBER_FLOAT64) {
        for (size_t k = 0; k < a->numel; k++) ((double *)a->data)[k] = next_uniform(&state);
    } else if (vm->dtype == EMBER_FLOAT16) {
        for (size_t k = 0; k < a->numel; k++)
            ((uint16_t *)a->data)[k] = ember_float_to_half(next_uniform(&state));
    } else if (vm->dtype == EMBER_BFLOAT16) {
        for (size_t k = 0; k < a->numel; k++)
            ((uint16_t *)a->data)[k] = ember_float_to_bf16(next_uniform(&state));
    }
    /* Integers and bools stay zero: always a valid index or mask. */
}

static bool dtype_is_int(int dtype) {
    switch (dtype) {
    case EMBER_INT8: case EMBER_INT16: case EMBER_INT32: case EMBER_INT64:
    case EMBER_UINT8: case EMBER_UINT16: case EMBER_UINT32: case EMBER_UINT64:
        return true;
    default:
        return false;
    }
}

/* Element k (in storage order) of raw data as double / int64. */
static double element_as_double(int dtype, const void *data, size_t k) {
    switch (dtype) {
    case EMBER_FLOAT32: return ((const float *)data)[k];
    case EMBER_FLOAT64: return ((const double *)data)[k];
    case EMBER_FLOAT16: return ember_half_to_float(((const uint16_t *)data)[k]);
    case EMBER_BFLOAT16: return ember_bf16_to_float(((const uint16_t *)data)[k]);
    case EMBER_INT8: return ((const int8_t *)data)[k];
    case EMBER_INT16: return ((const int16_t *)data)[k];
    case EMBER_INT32: return ((const int32_t *)data)[k];
    case EMBER_INT64: return (double)((const int64_t *)data)[k];
    case EMBER_UINT8: return ((const uint8_t *)data)[k];
    case EMBER_UINT16: return ((const uint16_t *)data)[k];
    case EMBER_UINT32: return ((const uint32_t *)data)[k];
    case EMBER_UINT64: return (double)((const uint64_t *)data)[k];
    case EMBER_BOOL: return ((const uint8_t *)data)[k] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

static int64_t element_as_int(int dtype, const void *data, size_t k) {
    switch (dtype) {
    case EMBER_INT8: return ((const int8_t *)data)[k];
    case EMBER_INT16: return ((const int16_t *)data)[k];
    case EMBER_INT32: return ((const int32_t *)data)[k];
    case EMBER_INT64: return ((const int64_t *)data)[k];
    case EMBER_UINT8: return ((const uint8_t *)data)[k];
    case EMBER_UINT16: return ((const uint16_t *)data)[k];
    case EMBER_UINT32: return ((const uint32_t *)data)[k];
    case EMBER_UINT64: return (int64_t)((const uint64_t *)data)[k];
    case EMBER_BOOL: return ((const uint8_t *)data)[k] ? 1 : 0;
    default: return 0;
    }
}

/* Sets a scalar input (Int, Double, Bool) from a one-element array. */
static void set_scalar_input(run *r, size_t i, const ember_value_meta *vm, const npy_array *a,
                             const char *src) {
    ember_status st;
    if (a->numel != 1) die(EXIT_RUNTIME, "input %zu (%s): the method wants one %s, the array has %zu elements",
                           i, src, tag_name(vm->tag), a->numel);
    char what[64];
    snprintf(what, sizeof what, "setting input %zu", i);
    if (vm->tag == EMBER_TAG_INT) {
        if (!dtype_is_int(a->dtype) && a->dtype != EMBER_BOOL)
            die(EXIT_RUNTIME, "input %zu (%s): the method wants an int, the array is %s", i, src,
                ember_dtype_name(a->dtype));
        st = ember_method_set_input_int(r->method, i, element_as_int(a->dtype, a->data, 0));
    } else if (vm->tag == EMBER_TAG_DOUBLE) {
        st = ember_method_set_input_double(r->method, i, element_as_double(a->dtype, a->data, 0));
    } else {
        if (a->dtype != EMBER_BOOL)
            die(EXIT_RUNTIME, "input %zu (%s): the method wants a bool, the array is %s", i, src,
                ember_dtype_name(a->dtype));
        st = ember_method_set_input_bool(r->method, i, ((const uint8_t *)a->data)[0] != 0);
    }
    if (st != EMBER_OK) die_status(st, what);
}

/* Binds input i's array to the method. Planned inputs are copied in; the
 * method may reuse their memory during execute, so this runs before every
 * execute. */
static void apply_input(run *r, size_t i) {
    const ember_value_meta *vm = &r->in_meta[i];
    const npy_array *a = &r->in_arrays[i];
    const char *src = r->num_inputs ? r->inputs[i] : "generated";
    if (vm->tag == EMBER_TAG_NONE) return;
    if (vm->tag != EMBER_TAG_TENSOR) {
        set_scalar_input(r, i, vm, a, src);
        return;
    }
    ember_status st = ember_method_set_input_tensor(r->method, i, (ember_dtype)a->dtype, a->shape,
                                                    a->dim, a->data, a->nbytes);
    if (st != EMBER_OK) {
        char what[4200];
        snprintf(what, sizeof what, "setting input %zu (%s)", i, src);
        die_status(st, what);
    }
}

static void apply_inputs(run *r) {
    for (size_t i = 0; i < r->num_in_arrays; i++) apply_input(r, i);
}

/* Loads (or generates) every input, checks it against the method's meta,
 * binds it once and says where it came from. */
static void set_inputs(run *r, size_t num_inputs) {
    if (r->num_inputs != 0 && r->num_inputs != num_inputs)
        die(EXIT_RUNTIME, "method '%s' has %zu input%s, %zu --input file%s given", r->method_name,
            num_inputs, num_inputs == 1 ? "" : "s", r->num_inputs, r->num_inputs == 1 ? "" : "s");
    printf("inputs: %s\n", r->num_inputs ? "from files" : "generated (fixed seed)");
    r->in_arrays = xcalloc(num_inputs, sizeof *r->in_arrays);
    r->in_meta = xcalloc(num_inputs, sizeof *r->in_meta);
    r->num_in_arrays = num_inputs;

    for (size_t i = 0; i < num_inputs; i++) {
        ember_value_meta *vm = &r->in_meta[i];
        ember_status st = ember_program_input_meta(r->program, r->method_name, i, vm);
        if (st != EMBER_OK) die_status(st, "reading input meta");
        npy_array *a = &r->in_arrays[i];
        const char *src = r->num_inputs ? r->inputs[i] : "generated";

        if (vm->tag == EMBER_TAG_NONE) {
            if (r->num_inputs) die(EXIT_RUNTIME, "input %zu is None; it takes no file", i);
            continue;
        }
        if (vm->tag != EMBER_TAG_TENSOR && vm->tag != EMBER_TAG_INT &&
            vm->tag != EMBER_TAG_DOUBLE && vm->tag != EMBER_TAG_BOOL)
            die(EXIT_RUNTIME, "input %zu is a %s; ember-run can only set tensors and scalars", i,
                tag_name(vm->tag));

        if (r->num_inputs) {
            char err[512];
            if (npy_load(r->inputs[i], a, err, sizeof err) != 0)
                die(EXIT_RUNTIME, "input %zu: %s", i, err);
        } else if (vm->tag == EMBER_TAG_TENSOR) {
            generate_input(i, vm, a);
        } else {
            /* Scalars: zero / false. */
            memset(a, 0, sizeof *a);
            a->dtype = vm->tag == EMBER_TAG_DOUBLE ? EMBER_FLOAT64
                       : vm->tag == EMBER_TAG_BOOL ? EMBER_BOOL
                                                   : EMBER_INT64;
            a->numel = 1;
            a->nbytes = 8;
            a->data = xalloc_aligned(8);
        }

        if (vm->tag == EMBER_TAG_TENSOR) {
            if (a->dtype != vm->dtype)
                die(EXIT_RUNTIME, "input %zu (%s): dtype %s, the method wants %s", i, src,
                    ember_dtype_name(a->dtype), ember_dtype_name(vm->dtype));
            if (a->dim != vm->dim)
                die(EXIT_RUNTIME, "input %zu (%s): rank %zu, the method wants rank %u", i, src,
                    a->dim, (unsigned)vm->dim);
        }
        apply_input(r, i);
        if (vm->tag != EMBER_TAG_TENSOR) {
            printf("  input %zu: %s <- %s\n", i, tag_name(vm->tag), src);
        } else {
            printf("  input %zu: %s [", i, ember_dtype_name(a->dtype));
            for (size_t d = 0; d < a->dim; d++) printf(d ? ", %lld" : "%lld", (long long)a->shape[d]);
            printf("] <- %s\n", src);
        }
    }
}

/* Gives unplanned tensor outputs storage for their largest shape. */
static void bind_outputs(run *r, size_t num_outputs) {
    r->out_buffers = xcalloc(num_outputs, sizeof *r->out_buffers);
    r->num_out_buffers = num_outputs;
    for (size_t i = 0; i < num_outputs; i++) {
        ember_value_meta vm;
        ember_status st = ember_program_output_meta(r->program, r->method_name, i, &vm);
        if (st != EMBER_OK) die_status(st, "reading output meta");
        if (vm.tag != EMBER_TAG_TENSOR || vm.planned) continue;
        r->out_buffers[i] = xalloc_aligned(vm.nbytes);
        st = ember_method_set_output_buffer(r->method, i, r->out_buffers[i], vm.nbytes);
        if (st != EMBER_OK) {
            char what[64];
            snprintf(what, sizeof what, "binding output %zu", i);
            die_status(st, what);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Running and outputs                                                       */
/* ------------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void execute(run *r) {
    size_t n = (size_t)r->iterations;
    r->times_ns = xcalloc(n, sizeof *r->times_ns);
    for (size_t k = 0; k < n; k++) {
        /* Inputs were bound by set_inputs(); bind them again for later runs
         * (outside the timed region). */
        if (k > 0) apply_inputs(r);
        uint64_t t0 = ember_ticks_ns();
        ember_status st = ember_method_execute(r->method);
        uint64_t t1 = ember_ticks_ns();
        if (st != EMBER_OK) {
            char what[96];
            snprintf(what, sizeof what, "executing '%s' (iteration %zu)", r->method_name, k + 1);
            die_status(st, what);
        }
        r->times_ns[k] = t1 - t0;
    }
    qsort(r->times_ns, n, sizeof *r->times_ns, cmp_u64);
    double median = n % 2 ? (double)r->times_ns[n / 2]
                          : ((double)r->times_ns[n / 2 - 1] + (double)r->times_ns[n / 2]) / 2.0;
    printf("ran %zu iteration%s: latency min %.3f ms, median %.3f ms\n", n, n == 1 ? "" : "s",
           (double)r->times_ns[0] / 1e6, median / 1e6);
}

/* Byte offset of the element at row-major position k of a tensor. */
static size_t element_offset(const ember_tensor *t, size_t k, size_t elsize) {
    size_t off = 0;
    for (size_t d = t->dim; d-- > 0;) {
        size_t size = t->sizes[d] > 0 ? (size_t)t->sizes[d] : 1;
        size_t idx = k % size;
        k /= size;
        off += idx * (size_t)t->strides[d];
    }
    return off * elsize;
}

static void print_tensor(size_t i, const ember_tensor *t) {
    printf("output %zu: %s [", i, ember_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->dim; d++) printf(d ? ", %d" : "%d", (int)t->sizes[d]);
    printf("]");
    size_t elsize = ember_dtype_size(t->dtype);
    bool printable = elsize > 0 && elsize <= 8 && t->data != NULL &&
                     (t->dtype <= EMBER_FLOAT64 || t->dtype == EMBER_BOOL || t->dtype == EMBER_BFLOAT16 ||
                      t->dtype == EMBER_UINT16 || t->dtype == EMBER_UINT32 || t->dtype == EMBER_UINT64);
    if (printable && t->numel > 0) {
        size_t shown = t->numel < SHOW_VALUES ? (size_t)t->numel : SHOW_VALUES;
        printf(" = [");
        for (size_t k = 0; k < shown; k++) {
            const void *p = (const char *)t->data + element_offset(t, k, elsize);
            if (dtype_is_int(t->dtype))
                printf("%s%lld", k ? ", " : "", (long long)element_as_int(t->dtype, p, 0));
            else if (t->dtype == EMBER_BOOL)
                printf("%s%s", k ? ", " : "", *(const uint8_t *)p ? "true" : "false");
            else
                printf("%s%.6g", k ? ", " : "", element_as_double(t->dtype, p, 0));
        }
        printf("%s]", (size_t)t->numel > shown ? ", ..." : "");
    }
    printf("\n");
}

static void print_output(size_t i, const ember_value *v) {
    switch (v->tag) {
    case EMBER_TAG_TENSOR: print_tensor(i, v->u.t); break;
    case EMBER_TAG_INT: printf("output %zu: int = %lld\n", i, (long long)v->u.i); break;
    case EMBER_TAG_DOUBLE: printf("output %zu: double = %.6g\n", i, v->u.d); break;
    case EMBER_TAG_BOOL: printf("output %zu: bool = %s\n", i, v->u.b ? "true" : "false"); break;
    default: printf("output %zu: %s\n", i, tag_name(v->tag)); break;
    }
}

/* mkdir -p */
static void make_dirs(const char *dir) {
    size_t n = strlen(dir);
    char *path = xcalloc(n + 1, 1);
    memcpy(path, dir, n + 1);
    for (size_t k = 1; k <= n; k++) {
        if (path[k] != '/' && path[k] != '\0') continue;
        char saved = path[k];
        path[k] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(path);
            die(EXIT_RUNTIME, "cannot create directory '%s': %s", dir, strerror(e));
        }
        path[k] = saved;
    }
    free(path);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        die(EXIT_RUNTIME, "'%s' is not a directory", dir);
}

static void write_output(run *r, size_t i, const ember_value *v) {
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/out%zu.npy", r->output_dir, i);
    if (len < 0 || (size_t)len >= sizeof path) die(EXIT_RUNTIME, "output path too long");
    char err[512];
    int rc;
    if (v->tag == EMBER_TAG_TENSOR) {
        const ember_tensor *t = v->u.t;
        if (npy_descr(t->dtype) == NULL)
            die(EXIT_RUNTIME, "output %zu: dtype %s cannot be written as .npy", i, ember_dtype_name(t->dtype));
        int64_t shape[EMBER_MAX_DIM];
        for (uint32_t d = 0; d < t->dim && d < EMBER_MAX_DIM; d++) shape[d] = t->sizes[d];
        if (ember_tensor_is_contiguous(t)) {
            rc = npy_save(path, t->dtype, shape, t->dim, t->data, err, sizeof err);
        } else {
            /* Non-default dim order: gather into row-major order first. */
            size_t elsize = ember_dtype_size(t->dtype);
            char *buf = xalloc_aligned(t->nbytes);
            for (size_t k = 0; k < (size_t)t->numel; k++)
                memcpy(buf + k * elsize, (const char *)t->data + element_offset(t, k, elsize), elsize);
            rc = npy_save(path, t->dtype, shape, t->dim, buf, err, sizeof err);
            free(buf);
        }
    } else if (v->tag == EMBER_TAG_INT) {
        rc = npy_save(path, EMBER_INT64, NULL, 0, &v->u.i, err, sizeof err);
    } else if (v->tag == EMBER_TAG_DOUBLE) {
        rc = npy_save(path, EMBER_FLOAT64, NULL, 0, &v->u.d, err, sizeof err);
    } else if (v->tag == EMBER_TAG_BOOL) {
        uint8_t b = v->u.b;
        rc = npy_save(path, EMBER_BOOL, NULL, 0, &b, err, sizeof err);
    } else {
        printf("  (output %zu is a %s; not written)\n", i, tag_name(v->tag));
        return;
    }
    if (rc != 0) die(EXIT_RUNTIME, "output %zu: %s", i, err);
    printf("  wrote %s\n", path);
}

/* ------------------------------------------------------------------------ */
/* Bundled programs                                                          */
/* ------------------------------------------------------------------------ */

/* Frees the storage bind_outputs() gave the current method. */
static void unbind_outputs(run *r) {
    for (size_t i = 0; i < r->num_out_buffers; i++) free(r->out_buffers[i]);
    free(r->out_buffers);
    r->out_buffers = NULL;
    r->num_out_buffers = 0;
}

/* Runs and verifies every test case (of --method's suite only, if given);
 * returns the number of cases that failed. */
static size_t run_bundled(run *r, const ember_method_options *mo) {
    size_t total = 0, failed = 0;
    const char *only = r->method_name;
    printf("bundled: schema version %u, %u method suite%s; rtol %g, atol %g\n", r->bp.version,
           r->bp.num_suites, r->bp.num_suites == 1 ? "" : "s", r->rtol, r->atol);
    for (size_t s = 0; s < r->bp.num_suites; s++) {
        const char *name;
        size_t num_cases;
        ember_status st = ember_bundled_program_suite(&r->bp, s, &name, &num_cases);
        if (st != EMBER_OK) die_status(st, "reading bundled suites");
        if (only != NULL && strcmp(only, name) != 0) continue;
        r->method_name = name;
        if ((st = ember_method_load_with(r->program, name, mo, &r->method)) != EMBER_OK) {
            char what[512];
            snprintf(what, sizeof what, "loading method '%.256s'", name);
            die_status(st, what);
        }
        bind_outputs(r, ember_method_output_count(r->method));
        for (size_t k = 0; k < num_cases; k++) {
            ember_bundled_compare cmp;
            memset(&cmp, 0, sizeof cmp);
            cmp.struct_size = sizeof cmp;
            ember_clear_error();
            st = ember_bundled_program_load_test_inputs(r->method, &r->bp, name, k);
            if (st == EMBER_OK) st = ember_method_execute(r->method);
            if (st == EMBER_OK)
                st = ember_bundled_program_verify_outputs(r->method, &r->bp, name, k, r->rtol,
                                                          r->atol, &cmp);
            total++;
            if (st == EMBER_OK && cmp.num_outputs == 0) {
                printf("%s case %zu: ran (no expected outputs to compare)\n", name, k);
            } else if (st == EMBER_OK) {
                printf("%s case %zu: pass (%zu output%s, max abs error %.3g, max rel error %.3g)\n",
                       name, k, cmp.num_outputs, cmp.num_outputs == 1 ? "" : "s",
                       cmp.max_abs_error, cmp.max_rel_error);
            } else {
                failed++;
                if (st == EMBER_ERR_OUTPUT_MISMATCH)
                    printf("%s case %zu: FAIL (max abs error %.3g, max rel error %.3g): %s\n", name,
                           k, cmp.max_abs_error, cmp.max_rel_error, ember_last_error());
                else
                    printf("%s case %zu: FAIL: %s: %s\n", name, k, ember_status_str(st),
                           ember_last_error());
            }
        }
        unbind_outputs(r);
        ember_method_destroy(r->method);
        r->method = NULL;
    }
    if (only != NULL && total == 0) die(EXIT_RUNTIME, "the bundled program has no suite for '%s'", only);
    printf("bundled: %zu of %zu case%s passed\n", total - failed, total, total == 1 ? "" : "s");
    return failed;
}

/* ------------------------------------------------------------------------ */
/* --list-ops                                                                */
/* ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Prints the kernel keys that the methods (or only `only`) call, sorted and
 * without repeats. Reads the operator tables: no method is loaded, so it
 * works for a program whose kernels this build lacks.
 */
static void list_ops(run *r, const char *only) {
    size_t num_methods = ember_program_method_count(r->program), total = 0, cap = 0;
    char **keys = NULL;
    bool found = false;
    ember_status st;
    for (size_t m = 0; m < num_methods; m++) {
        const char *name;
        ember_method_meta mm;
        if ((st = ember_program_method_name(r->program, m, &name)) != EMBER_OK ||
            (st = ember_program_method_meta(r->program, name, &mm)) != EMBER_OK)
            die_status(st, "reading the methods");
        if (only != NULL && strcmp(only, name) != 0) continue;
        found = true;
        for (size_t i = 0; i < mm.num_operators; i++) {
            char key[512];
            if ((st = ember_program_operator_name(r->program, name, i, key, sizeof key)) != EMBER_OK)
                die_status(st, "reading the operators");
            if (total == cap) {
                cap = cap ? 2 * cap : 64;
                char **grown = realloc(keys, cap * sizeof *keys);
                if (grown == NULL) die(EXIT_RUNTIME, "out of memory");
                keys = grown;
            }
            size_t len = strlen(key) + 1;
            keys[total] = malloc(len);
            if (keys[total] == NULL) die(EXIT_RUNTIME, "out of memory");
            memcpy(keys[total++], key, len);
        }
    }
    if (only != NULL && !found) die(EXIT_RUNTIME, "'%s' has no method '%s'", r->model, only);
    if (total > 0) qsort(keys, total, sizeof *keys, cmp_str);
    for (size_t i = 0; i < total; i++)
        if (i == 0 || strcmp(keys[i], keys[i - 1]) != 0) printf("%s\n", keys[i]);
    for (size_t i = 0; i < total; i++) free(keys[i]);
    free(keys);
}

int main(int argc, char **argv) {
    static run r;
    g_run = &r;
    parse_args(&r, argc, argv);

    ember_status st = ember_mmap_loader_open(&r.loader, r.model);
    if (st != EMBER_OK) {
        char what[4200];
        snprintf(what, sizeof what, "cannot open '%s'", r.model);
        die_status(st, what);
    }
    r.loader_open = true;

    if ((st = ember_portable_kernels_register()) != EMBER_OK ||
        (st = ember_optimized_kernels_register()) != EMBER_OK)
        die_status(st, "registering kernels");
    if ((st = ember_xnnpack_backend_register()) != EMBER_OK ||
        (st = ember_vulkan_backend_register()) != EMBER_OK)
        die_status(st, "registering backends");

    /* A bundled program (identifier BP08) runs the program it carries. */
    uint64_t whole = 0;
    if ((st = r.loader.base.size(r.loader.base.ctx, &whole)) != EMBER_OK) die_status(st, "reading the size");
    if (whole > SIZE_MAX) die(EXIT_RUNTIME, "'%s' is too large", r.model);
    if ((st = r.loader.base.load(r.loader.base.ctx, 0, (size_t)whole, EMBER_SEGMENT_PROGRAM, &r.file)) !=
        EMBER_OK)
        die_status(st, "reading the file");
    r.have_file = true;
    const ember_data_loader *program_loader = &r.loader.base;
    if (r.bundled || ember_bundled_program_is_bundled(r.file.data, r.file.size)) {
        if ((st = ember_bundled_program_open(&r.bp, r.file.data, r.file.size)) != EMBER_OK) {
            char what[4200];
            snprintf(what, sizeof what, "loading bundled program '%s'", r.model);
            die_status(st, what);
        }
        r.is_bundled = true;
        ember_buffer_loader_init(&r.inner, r.bp.program, r.bp.program_size);
        program_loader = &r.inner.base;
    }

    if ((st = ember_program_load(program_loader, NULL, &r.program)) != EMBER_OK) {
        char what[4200];
        snprintf(what, sizeof what, "loading '%s'", r.model);
        die_status(st, what);
    }

    if (r.list_ops) {
        list_ops(&r, r.method_name);
        cleanup(&r);
        return 0;
    }

    /* Data files: each a memory-mapped, verified data map. */
    r.data_loaders = xcalloc(r.num_data, sizeof *r.data_loaders);
    r.maps = xcalloc(r.num_data, sizeof *r.maps);
    for (size_t i = 0; i < r.num_data; i++) {
        char what[4200];
        snprintf(what, sizeof what, "cannot open data file '%s'", r.data_files[i]);
        if ((st = ember_mmap_loader_open(&r.data_loaders[i], r.data_files[i])) != EMBER_OK)
            die_status(st, what);
        snprintf(what, sizeof what, "loading data file '%s'", r.data_files[i]);
        if ((st = ember_data_map_open(&r.data_loaders[i].base, NULL, &r.maps[i])) != EMBER_OK) {
            ember_mmap_loader_close(&r.data_loaders[i]);
            die_status(st, what);
        }
        r.num_maps_open = i + 1;
        printf("data: %s, %zu key%s\n", r.data_files[i], ember_data_map_key_count(r.maps[i]),
               ember_data_map_key_count(r.maps[i]) == 1 ? "" : "s");
    }

    size_t num_methods = ember_program_method_count(r.program);
    if (r.is_bundled)
        printf("program: %s (bundled, %zu-byte program in %llu bytes), %zu method%s:", r.model,
               r.bp.program_size, (unsigned long long)whole, num_methods, num_methods == 1 ? "" : "s");
    else
        printf("program: %s (%llu bytes), %zu method%s:", r.model, (unsigned long long)whole,
               num_methods, num_methods == 1 ? "" : "s");
    const char *first = NULL;
    bool have_forward = false;
    for (size_t i = 0; i < num_methods; i++) {
        const char *name;
        if ((st = ember_program_method_name(r.program, i, &name)) != EMBER_OK)
            die_status(st, "reading method names");
        if (i == 0) first = name;
        if (strcmp(name, "forward") == 0) have_forward = true;
        printf("%s %s", i ? "," : "", name);
    }
    printf("\n");
    if (r.bundled) {
        size_t threads = r.threads > 0 ? (size_t)r.threads : ember_cpu_count();
        if (threads > 1 && (st = ember_threadpool_create(threads, &r.pool)) != EMBER_OK)
            die_status(st, "starting threads");
        ember_method_options bo;
        memset(&bo, 0, sizeof bo);
        bo.struct_size = sizeof bo;
        bo.threadpool = r.pool;
        bo.data_maps = (const ember_data_map *const *)r.maps;
        bo.num_data_maps = r.num_data;
        size_t failed = run_bundled(&r, &bo);
        cleanup(&r);
        return failed > 0 ? EXIT_RUNTIME : 0;
    }
    if (r.method_name == NULL) {
        if (first == NULL) die(EXIT_RUNTIME, "'%s' has no methods", r.model);
        r.method_name = have_forward ? "forward" : first;
    }

    ember_method_meta mm;
    if ((st = ember_program_method_meta(r.program, r.method_name, &mm)) != EMBER_OK) {
        char what[512];
        snprintf(what, sizeof what, "method '%s'", r.method_name);
        die_status(st, what);
    }
    describe(&r, &mm);

    size_t threads = r.threads > 0 ? (size_t)r.threads : ember_cpu_count();
    if (threads > 1 && (st = ember_threadpool_create(threads, &r.pool)) != EMBER_OK)
        die_status(st, "starting threads");
    printf("threads: %zu\n", threads);
    ember_method_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.threadpool = r.pool;
    mo.data_maps = (const ember_data_map *const *)r.maps;
    mo.num_data_maps = r.num_data;
    if (r.etdump != NULL) {
        start_tracer(&r);
        mo.event_tracer = r.tracer;
    }
    if ((st = ember_method_load_with(r.program, r.method_name, &mo, &r.method)) != EMBER_OK) {
        char what[512];
        snprintf(what, sizeof what, "loading method '%s'", r.method_name);
        die_status(st, what);
    }
    size_t num_inputs = ember_method_input_count(r.method);
    size_t num_outputs = ember_method_output_count(r.method);
    set_inputs(&r, num_inputs);
    bind_outputs(&r, num_outputs);
    execute(&r);

    if (r.output_dir != NULL) make_dirs(r.output_dir);
    for (size_t i = 0; i < num_outputs; i++) {
        const ember_value *v;
        if ((st = ember_method_output(r.method, i, &v)) != EMBER_OK) {
            char what[64];
            snprintf(what, sizeof what, "reading output %zu", i);
            die_status(st, what);
        }
        print_output(i, v);
        if (r.output_dir != NULL) write_output(&r, i, v);
    }

    if (r.etdump != NULL) write_trace(&r);

    cleanup(&r);
    return 0;
}
