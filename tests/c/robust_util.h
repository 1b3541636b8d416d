/*
 * Helpers shared by the robustness tests (test_corruption.c,
 * test_alloc_failure.c) and the fuzz target (tests/fuzz/fuzz_program.c):
 * crash and hang reports that name the running case, a counting platform
 * heap with failure injection, an exact-copy data loader, a stand-in for the
 * fixtures' EmberTestBackend, generated inputs at the upper-bound shape, and
 * one "load, bind, execute, destroy" pass over every method of a program
 * (with its .ptd data maps, if any) that checks the error contract (every
 * failure has a message).
 *
 * Header-only (static inline functions) so that each test stays one
 * translation unit. The including file must define _POSIX_C_SOURCE 200809L
 * before any include (posix_memalign, sigaction, mprotect, opendir).
 */
#ifndef EMBER_TESTS_ROBUST_UTIL_H
#define EMBER_TESTS_ROBUST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/platform.h"

#if defined(__SANITIZE_ADDRESS__)
#define RU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RU_ASAN 1
#endif
#endif
#ifdef RU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* ---------------------------------------------------------------------- */
/* Naming the case that crashed or hung                                   */
/* ---------------------------------------------------------------------- */

/** The running case, printed if the process dies in it; set it per case. */
static char ru_case[256];
static const char *ru_test_name = "robust";

static inline void ru_write_case(const char *what) {
    /* Async-signal-safe: write(2) only. */
    ssize_t r = write(2, "\n", 1);
    r = write(2, ru_test_name, strlen(ru_test_name));
    r = write(2, what, strlen(what));
    r = write(2, ru_case, strlen(ru_case));
    r = write(2, "\n", 1);
    (void)r;
}

static inline void ru_on_alarm(int sig) {
    (void)sig;
    ru_write_case(": HANG (the case ran past its time limit): ");
    _exit(3);
}

#ifdef RU_ASAN
static inline void ru_on_sanitizer_death(void) { ru_write_case(": sanitizer report in case: "); }
#else
static inline void ru_on_crash(int sig) {
    ru_write_case(": CRASH in case: ");
    signal(sig, SIG_DFL);
    raise(sig);
}
#endif

/**
 * Makes a crash (signal, or a sanitizer report) print ru_case first, and
 * SIGALRM (see alarm()) end the process as a hang naming ru_case. Under ASan
 * the sanitizer keeps its own signal handlers and reports.
 */
static inline void ru_install_crash_report(const char *test_name) {
    struct sigaction sa;
    ru_test_name = test_name;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ru_on_alarm;
    sigaction(SIGALRM, &sa, NULL);
#ifdef RU_ASAN
    __sanitizer_set_death_callback(ru_on_sanitizer_death);
#else
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    sa.sa_handler = ru_on_crash;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
#endif
}

/* ---------------------------------------------------------------------- */
/* Counting platform heap                                                 */
/* ---------------------------------------------------------------------- */

/** State of the counting heap installed by ru_heap_install(). */
typedef struct ru_heap {
    uint64_t calls;   /* alloc calls since the last reset */
    uint64_t fail_at; /* 1-based alloc call that returns NULL; 0: none */
    int sticky;       /* fail every call from fail_at on, not just that one */
    uint64_t injected;/* failures injected since the last reset */
    uint64_t refused; /* requests refused for being above cap */
    uint64_t frees;   /* free calls with a non-NULL pointer */
    int64_t live;     /* blocks allocated and not yet freed */
    size_t cap;       /* largest single request granted (0: no cap) */
    uint64_t aborts;  /* calls of the platform abort hook */
} ru_heap;

static ru_heap ru_heap_state;

static inline void *ru_heap_alloc(void *user, size_t size, size_t align) {
    ru_heap *h = user;
    void *p = NULL;
    h->calls++;
    if (h->fail_at != 0 && (h->calls == h->fail_at || (h->sticky && h->calls > h->fail_at))) {
        h->injected++;
        return NULL;
    }
    /* A hostile file can ask for any size; a real device has a finite heap. */
    if (h->cap != 0 && size > h->cap) {
        h->refused++;
        return NULL;
    }
    if (align < sizeof(void *)) align = sizeof(void *);
    if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) return NULL;
    h->live++;
    return p;
}

static inline void ru_heap_free(void *user, void *ptr) {
    ru_heap *h = user;
    if (ptr == NULL) return;
    h->frees++;
    h->live--;
    free(ptr);
}

static inline void ru_heap_abort(void *user) {
    ru_heap *h = user;
    h->aborts++;
    fprintf(stderr, "robust: the runtime called the platform abort hook\n");
    abort();
}

static ember_platform ru_platform_table;

/** Installs the counting heap as the platform table; cap bounds one request. */
static inline void ru_heap_install(size_t cap) {
    memset(&ru_heap_state, 0, sizeof ru_heap_state);
    ru_heap_state.cap = cap;
    memset(&ru_platform_table, 0, sizeof ru_platform_table);
    ru_platform_table.struct_size = sizeof(ember_platform);
    ru_platform_table.user = &ru_heap_state;
    ru_platform_table.log = NULL; /* the robustness tests want silence */
    ru_platform_table.ticks_ns = NULL;
    ru_platform_table.abort = ru_heap_abort;
    ru_platform_table.alloc = ru_heap_alloc;
    ru_platform_table.free = ru_heap_free;
    ember_platform_set(&ru_platform_table);
}

/** Resets the call counters and the injection point (live is kept). */
static inline void ru_heap_arm(uint64_t fail_at, int sticky) {
    ru_heap_state.calls = 0;
    ru_heap_state.fail_at = fail_at;
    ru_heap_state.sticky = sticky;
    ru_heap_state.injected = 0;
    ru_heap_state.refused = 0;
}

/* ---------------------------------------------------------------------- */
/* Files                                                                  */
/* ---------------------------------------------------------------------- */

/** Reads a whole file into malloc'd memory (16-byte aligned). NULL on error. */
static inline uint8_t *ru_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    if (f == NULL) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* ---------------------------------------------------------------------- */
/* Exact-copy loader                                                      */
/* ---------------------------------------------------------------------- */

/*
 * A data loader over an ember_buffer_loader that hands out every load as a
 * fresh heap block of exactly the requested size, freed on release. The
 * zero-copy buffer loader returns pointers into one big buffer, so a read
 * past the end of the flatbuffer region lands in the segments that follow it
 * and no sanitizer sees it; here ASan reports any read past the end of a
 * loaded range, and any use of a buffer after its release.
 *
 * With `readonly` set, the flatbuffer and the constant segment are instead
 * placed in read-only pages that end at an inaccessible guard page, as a
 * mapped file or flash would hold them: a write into them (a kernel writing
 * a constant tensor) faults, and so does a read past their end (the
 * flatbuffer ends exactly at the guard page; the constant segment, which must
 * start 64-byte aligned, within 63 bytes of it). Other segments (mutable
 * data, delegate payloads) stay exact-size heap blocks.
 */
#define RU_MAX_READONLY 16

typedef struct ru_exact_loader {
    ember_data_loader base;
    ember_buffer_loader inner;
    int64_t live;  /* loads not yet released */
    int readonly;  /* program and constant loads in read-only pages */
    struct { void *base; size_t total; } ro[RU_MAX_READONLY]; /* live read-only blocks */
} ru_exact_loader;

static inline ember_status ru_exact_size(void *ctx, uint64_t *out) {
    ru_exact_loader *l = ctx;
    return l->inner.base.size(l->inner.base.ctx, out);
}

static inline void ru_oom(void) {
    fprintf(stderr, "robust: out of test memory\n");
    abort();
}

/* A read-only copy ending at a guard page; NULL if the table is full. */
static inline void *ru_readonly_copy(ru_exact_loader *l, const void *data, size_t size,
                                     size_t align) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (size + page - 1) / page * page;
    size_t slot = 0, lead = (size + align - 1) / align * align;
    void *base = NULL;
    while (slot < RU_MAX_READONLY && l->ro[slot].base != NULL) slot++;
    if (slot == RU_MAX_READONLY || size == 0) return NULL;
    if (posix_memalign(&base, page, span + page) != 0) ru_oom();
    uint8_t *start = (uint8_t *)base + span - lead;
    if (size > 0) memcpy(start, data, size);
    if (mprotect(base, span, PROT_READ) != 0 ||
        mprotect((uint8_t *)base + span, page, PROT_NONE) != 0) {
        perror("robust: mprotect");
        abort();
    }
    l->ro[slot].base = base;
    l->ro[slot].total = span + page;
    return start;
}

static inline ember_status ru_exact_load(void *ctx, uint64_t offset, size_t size,
                                         ember_segment_kind kind, ember_buffer *out) {
    ru_exact_loader *l = ctx;
    ember_buffer b;
    void *copy = NULL;
    ember_status st = l->inner.base.load(l->inner.base.ctx, offset, size, kind, &b);
    if (st != EMBER_OK) return st;
    if (l->readonly && (kind == EMBER_SEGMENT_PROGRAM || kind == EMBER_SEGMENT_CONSTANT))
        copy = ru_readonly_copy(l, b.data, size, kind == EMBER_SEGMENT_PROGRAM ? 1 : 64);
    if (copy == NULL) {
        if (posix_memalign(&copy, 64, size > 0 ? size : 1) != 0) ru_oom();
        if (size > 0) memcpy(copy, b.data, size);
    }
    out->data = copy;
    out->size = size;
    out->owner = copy;
    l->live++;
    return EMBER_OK;
}

static inline void ru_exact_release(void *ctx, ember_buffer *buf) {
    ru_exact_loader *l = ctx;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    l->live--;
    for (size_t i = 0; i < RU_MAX_READONLY; i++) {
        uint8_t *base = l->ro[i].base;
        if (base != NULL && (uint8_t *)buf->owner >= base &&
            (uint8_t *)buf->owner < base + l->ro[i].total - page) {
            mprotect(base, l->ro[i].total, PROT_READ | PROT_WRITE);
            free(base);
            l->ro[i].base = NULL;
            buf->owner = NULL;
        }
    }
    free(buf->owner);
    buf->owner = NULL;
    buf->data = NULL;
}

/** Sets up an exact-copy loader over data[0..size). */
static inline void ru_exact_loader_init(ru_exact_loader *l, const void *data, size_t size,
                                        int readonly) {
    memset(l, 0, sizeof *l);
    ember_buffer_loader_init(&l->inner, data, size);
    l->base.struct_size = sizeof(ember_data_loader);
    l->base.ctx = l;
    l->base.size = ru_exact_size;
    l->base.load = ru_exact_load;
    l->base.release = ru_exact_release;
    l->readonly = readonly;
}

/* ---------------------------------------------------------------------- */
/* Generated inputs                                                       */
/* ---------------------------------------------------------------------- */

static inline uint32_t ru_rand(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* Deterministic data: floats in [-1, 1), integers in [0, 4), bools 0/1. */
static inline void ru_fill(void *buf, size_t nbytes, uint8_t dtype, uint32_t seed) {
    uint8_t *b = buf;
    uint32_t s = seed * 2654435761u + 1u;
    size_t elem = ember_dtype_size(dtype);
    if (elem == 0) elem = 1;
    memset(buf, 0, nbytes);
    for (size_t off = 0; off + elem <= nbytes; off += elem) {
        float f = (float)(ru_rand(&s) % 2048u) / 1024.0f - 1.0f;
        switch (dtype) {
        case EMBER_FLOAT32: memcpy(b + off, &f, 4); break;
        case EMBER_FLOAT64: {
            double d = f;
            memcpy(b + off, &d, 8);
            break;
        }
        case EMBER_FLOAT16: {
            uint16_t h = ember_float_to_half(f);
            memcpy(b + off, &h, 2);
            break;
        }
        case EMBER_BFLOAT16: {
            uint16_t h = ember_float_to_bf16(f);
            memcpy(b + off, &h, 2);
            break;
        }
        case EMBER_BOOL: b[off] = (uint8_t)(ru_rand(&s) & 1u); break;
        default: b[off] = (uint8_t)(ru_rand(&s) & 3u); break; /* little-endian small int */
        }
    }
}

/** Memory the test binds to a method's inputs and unplanned outputs. */
typedef struct ru_io {
    void **bufs;
    size_t count;
    size_t total;      /* bytes bound so far */
    int skip_execute;  /* an input or output was over the cap: not bound */
} ru_io;

static inline void ru_io_free(ru_io *io) {
    for (size_t i = 0; i < io->count; i++) free(io->bufs[i]);
    free(io->bufs);
    memset(io, 0, sizeof *io);
}

/*
 * Sets every input of method `name` to generated data at its upper-bound
 * shape, and gives every unplanned tensor output a buffer of its upper-bound
 * size. At most `cap` bytes are bound in all; beyond that the value is left
 * unbound and io->skip_execute is set. Returns the first failing status (its
 * message is in ember_last_error()), EMBER_OK otherwise.
 */
static inline ember_status ru_bind_io(const ember_program *p, const char *name, ember_method *m,
                               ru_io *io, size_t cap, uint32_t seed) {
    size_t nin = ember_method_input_count(m), nout = ember_method_output_count(m);
    memset(io, 0, sizeof *io);
    io->bufs = calloc(nin + nout + 1, sizeof *io->bufs);
    if (io->bufs == NULL) ru_oom();
    for (size_t i = 0; i < nin + nout; i++) {
        int input = i < nin;
        size_t k = input ? i : i - nin;
        ember_value_meta meta;
        ember_status st;
        ember_clear_error();
        st = input ? ember_program_input_meta(p, name, k, &meta)
                   : ember_program_output_meta(p, name, k, &meta);
        if (st != EMBER_OK) return st;
        if (!input) {
            const ember_value *v;
            ember_clear_error();
            st = ember_method_output(m, k, &v);
            if (st != EMBER_OK) return st;
            /* Planned, constant, or already bound as an input: nothing to give. */
            if (v->tag != EMBER_TAG_TENSOR || v->u.t->storage != EMBER_STORAGE_NONE ||
                v->u.t->data != NULL)
                continue;
        }
        if (meta.tag == EMBER_TAG_TENSOR) {
            int64_t sizes[EMBER_MAX_DIM];
            if (meta.nbytes > cap || io->total > cap - meta.nbytes) {
                io->skip_execute = 1;
                continue;
            }
            void *buf = malloc(meta.nbytes > 0 ? meta.nbytes : 1);
            if (buf == NULL) ru_oom();
            io->bufs[io->count++] = buf;
            io->total += meta.nbytes;
            ember_clear_error();
            if (input) {
                ru_fill(buf, meta.nbytes, meta.dtype, seed + (uint32_t)k);
                for (uint32_t d = 0; d < meta.dim && d < EMBER_MAX_DIM; d++) sizes[d] = meta.sizes[d];
                st = ember_method_set_input_tensor(m, k, (ember_dtype)meta.dtype, sizes, meta.dim,
                                                   buf, meta.nbytes);
            } else {
                memset(buf, 0, meta.nbytes);
                st = ember_method_set_output_buffer(m, k, buf, meta.nbytes);
            }
        } else if (!input) {
            st = EMBER_OK;
        } else if (meta.tag == EMBER_TAG_INT) {
            ember_clear_error();
            st = ember_method_set_input_int(m, k, 1);
        } else if (meta.tag == EMBER_TAG_DOUBLE) {
            ember_clear_error();
            st = ember_method_set_input_double(m, k, 0.5);
        } else if (meta.tag == EMBER_TAG_BOOL) {
            ember_clear_error();
            st = ember_method_set_input_bool(m, k, true);
        } else {
            st = EMBER_OK; /* None or a list: nothing a caller can set */
        }
        if (st != EMBER_OK) return st;
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* A stand-in for EmberTestBackend                                        */
/* ---------------------------------------------------------------------- */

/*
 * The delegated fixtures name "EmberTestBackend" (its real runtime half lives
 * in test_backend.c). This stand-in accepts any payload, so that corrupted
 * delegated programs reach delegate init, execute and destroy: init reads
 * every payload and compile-spec byte (ASan checks the ranges the runtime
 * hands over) and takes exactly RU_DELEGATE_BYTES from the method allocator
 * for its handle; execute reads every byte of every tensor argument; destroy
 * marks the handle, so a second destroy or a use after destroy aborts.
 */
#define RU_DELEGATE_BYTES 1 /* one byte, alignment 1: no padding in an arena */
#define RU_DELEGATE_LIVE 0xA5
#define RU_DELEGATE_DEAD 0x5A

static volatile uint8_t ru_sink;

static inline bool ru_backend_available(void) { return true; }

static inline ember_status ru_backend_init(const ember_backend_init_ctx *ctx, const void *payload,
                                           size_t payload_size, const ember_compile_spec *specs,
                                           size_t num_specs, void **handle) {
    const uint8_t *p = payload;
    uint8_t sum = 0;
    if (payload == NULL && payload_size > 0)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "NULL payload of %zu bytes", payload_size);
    if (specs == NULL && num_specs > 0)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "NULL compile specs");
    for (size_t i = 0; i < payload_size; i++) sum = (uint8_t)(sum + p[i]);
    for (size_t k = 0; k < num_specs; k++) {
        if (specs[k].key == NULL || (specs[k].value == NULL && specs[k].value_size > 0))
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "compile spec %zu is NULL", k);
        sum = (uint8_t)(sum + strlen(specs[k].key));
        for (size_t i = 0; i < specs[k].value_size; i++) sum = (uint8_t)(sum + specs[k].value[i]);
    }
    ru_sink = sum;
    uint8_t *h = ctx->allocator->alloc(ctx->allocator->ctx, RU_DELEGATE_BYTES, 1);
    if (h == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "delegate %zu: no memory for its handle",
                                  ctx->delegate_index);
    *h = RU_DELEGATE_LIVE;
    *handle = h;
    return EMBER_OK;
}

static inline ember_status ru_backend_execute(void *handle, ember_value **args, size_t nargs) {
    uint8_t sum = 0;
    if (handle == NULL || *(uint8_t *)handle != RU_DELEGATE_LIVE) {
        fprintf(stderr, "robust: delegate executed with a bad or destroyed handle\n");
        abort();
    }
    for (size_t i = 0; i < nargs; i++) {
        if (args[i] == NULL) {
            fprintf(stderr, "robust: delegate argument %zu is NULL\n", i);
            abort();
        }
        if (args[i]->tag != EMBER_TAG_TENSOR || args[i]->u.t->data == NULL) continue;
        const uint8_t *d = args[i]->u.t->data;
        for (size_t b = 0; b < args[i]->u.t->nbytes; b++) sum = (uint8_t)(sum + d[b]);
    }
    ru_sink = sum;
    return EMBER_OK;
}

static inline void ru_backend_destroy(void *handle) {
    if (handle == NULL || *(uint8_t *)handle != RU_DELEGATE_LIVE) {
        fprintf(stderr, "robust: delegate destroyed twice or with a bad handle\n");
        abort();
    }
    *(uint8_t *)handle = RU_DELEGATE_DEAD;
}

static const ember_backend ru_backend = {
    sizeof(ember_backend), "EmberTestBackend", ru_backend_available, ru_backend_init,
    ru_backend_execute,    ru_backend_destroy,
};

/** Registers the portable kernels, the stand-in backend and the real CPU
 * backend (whose payloads the suites corrupt); false on error. */
static inline bool ru_register(void) {
    return ember_portable_kernels_register() == EMBER_OK &&
           ember_backend_register(&ru_backend) == EMBER_OK &&
           ember_xnnpack_backend_register() == EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Fixtures                                                               */
/* ---------------------------------------------------------------------- */

static inline int ru_path_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/**
 * Lists dir/ *.pte, sorted, into paths (malloc'd strings, at most max).
 * Returns the count; 0 if the directory cannot be read.
 */
static inline size_t ru_list_fixtures(const char *dir, char **paths, size_t max) {
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    if (d == NULL) return 0;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".pte") != 0) continue;
        paths[n] = malloc(strlen(dir) + len + 2);
        if (paths[n] == NULL) ru_oom();
        sprintf(paths[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(paths, n, sizeof *paths, ru_path_cmp);
    return n;
}

/**
 * The data file of a fixture: "dir/x.pte" -> "dir/x.ptd" in out (cap bytes),
 * true if that file exists (the program keeps its weights there).
 */
static inline bool ru_data_path(const char *pte, char *out, size_t cap) {
    size_t n = strlen(pte);
    if (n < 4 || n + 1 > cap || strcmp(pte + n - 4, ".pte") != 0) return false;
    memcpy(out, pte, n + 1);
    out[n - 1] = 'd';
    return access(out, R_OK) == 0;
}

/* ---------------------------------------------------------------------- */
/* One pass over a program                                                */
/* ---------------------------------------------------------------------- */

/** Called when the runtime breaks the error contract (set by the caller). */
static void (*ru_violation)(const char *what, ember_status st);

/** Outcome counters of ru_run_program(). */
typedef struct ru_result {
    int program_loaded;   /* ember_program_load returned OK */
    size_t methods;       /* methods in the program */
    size_t methods_loaded;/* methods that loaded */
    size_t executed_ok;   /* method executions that returned OK */
    size_t execute_failed;/* ... that returned an error */
    size_t skipped;       /* methods not executed: inputs over the cap */
    ember_status first_error;
} ru_result;

/* Checks the error contract after a failing call. */
static inline void ru_check_error(const char *what, ember_status st) {
    char msg[128];
    if (st == EMBER_OK || ru_violation == NULL) return;
    if (ember_last_error()[0] == '\0') {
        snprintf(msg, sizeof msg, "%s failed without a message", what);
        ru_violation(msg, st);
    }
    if (strcmp(ember_status_str(st), "unknown status") == 0) {
        snprintf(msg, sizeof msg, "%s returned a status outside the enum", what);
        ru_violation(msg, st);
    }
}

/*
 * Loads a program through `loader`, then for every method: load (platform
 * heap, with the data maps maps[0..nmaps)), bind generated inputs (at most
 * io_cap bytes), execute `executions` times, destroy. Destroys the program.
 * Every failure must come with a message (checked through ru_violation).
 */
static inline void ru_run_program_maps(const ember_data_loader *loader,
                                       const ember_data_map *const *maps, size_t nmaps,
                                       int executions, size_t io_cap, ru_result *res) {
    ember_program *p = NULL;
    ember_status st;
    ember_method_options options;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.data_maps = maps;
    options.num_data_maps = nmaps;
    memset(res, 0, sizeof *res);
    ember_clear_error();
    st = ember_program_load(loader, NULL, &p);
    ru_check_error("ember_program_load", st);
    if (st != EMBER_OK) {
        res->first_error = st;
        return;
    }
    res->program_loaded = 1;
    res->methods = ember_program_method_count(p);
    for (size_t i = 0; i < res->methods; i++) {
        const char *name = NULL;
        ember_method *m = NULL;
        ru_io io;
        ember_clear_error();
        st = ember_program_method_name(p, i, &name);
        ru_check_error("ember_program_method_name", st);
        if (st != EMBER_OK) {
            if (res->first_error == EMBER_OK) res->first_error = st;
            continue;
        }
        ember_clear_error();
        st = ember_method_load_with(p, name, &options, &m);
        ru_check_error("ember_method_load", st);
        if (st != EMBER_OK) {
            if (res->first_error == EMBER_OK) res->first_error = st;
            continue;
        }
        res->methods_loaded++;
        st = ru_bind_io(p, name, m, &io, io_cap, (uint32_t)i);
        ru_check_error("binding inputs/outputs", st);
        if (st == EMBER_OK && io.skip_execute) {
            res->skipped++;
        } else if (st == EMBER_OK) {
            for (int e = 0; e < executions && st == EMBER_OK; e++) {
                uint64_t calls = ru_heap_state.calls;
                ember_clear_error();
                st = ember_method_execute(m);
                ru_check_error("ember_method_execute", st);
                /* Execute allocates nothing (DESIGN.md), whatever the file says. */
                if (ru_heap_state.calls != calls && ru_violation != NULL)
                    ru_violation("ember_method_execute allocated from the platform heap", st);
            }
            if (st == EMBER_OK) {
                res->executed_ok++;
            } else {
                res->execute_failed++;
                if (res->first_error == EMBER_OK) res->first_error = st;
            }
        } else {
            res->execute_failed++;
            if (res->first_error == EMBER_OK) res->first_error = st;
        }
        ember_method_destroy(m);
        ru_io_free(&io);
    }
    ember_program_destroy(p);
}

/* ru_run_program_maps() without data maps. */
static inline void ru_run_program(const ember_data_loader *loader, int executions, size_t io_cap,
                                  ru_result *res) {
    ru_run_program_maps(loader, NULL, 0, executions, io_cap, res);
}

/*
 * Opens a data map through `data` (a .ptd file), then runs the program of
 * `loader` with it (ru_run_program_maps). A map that fails to open must fail
 * with a message; the program then does not run (res->first_error holds the
 * status, *map_failed is set).
 */
static inline void ru_run_program_data(const ember_data_loader *loader,
                                       const ember_data_loader *data, int executions,
                                       size_t io_cap, ru_result *res, int *map_failed) {
    ember_data_map *map = NULL;
    ember_clear_error();
    ember_status st = ember_data_map_open(data, NULL, &map);
    ru_check_error("ember_data_map_open", st);
    *map_failed = st != EMBER_OK;
    if (st != EMBER_OK) {
        memset(res, 0, sizeof *res);
        res->first_error = st;
        return;
    }
    /* A map is read-only and answers the same way every time. */
    for (size_t i = 0; i < ember_data_map_key_count(map); i++) {
        const char *key = NULL;
        ember_data_info info;
        ember_clear_error();
        st = ember_data_map_key(map, i, &key);
        ru_check_error("ember_data_map_key", st);
        if (st != EMBER_OK) continue;
        ember_clear_error();
        st = ember_data_map_info(map, key, &info);
        ru_check_error("ember_data_map_info", st);
        if (st == EMBER_OK && info.has_layout && info.nbytes > info.size && ru_violation != NULL)
            ru_violation("a tensor entry larger than its blob passed verification", st);
    }
    const ember_data_map *maps[1] = {map};
    ru_run_program_maps(loader, maps, 1, executions, io_cap, res);
    ember_data_map_close(map);
}

#endif /* EMBER_TESTS_ROBUST_UTIL_H */
