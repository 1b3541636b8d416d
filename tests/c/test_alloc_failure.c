/*
 * Allocation failure at every point of load and init, for every fixture and
 * method:
 *   1. an ember_allocator that fails its Nth call, given as the program
 *      options allocator, then as ember_memory.method_allocator;
 *   2. a platform table whose alloc fails its Nth call, while a program is
 *      loaded through the file loader and a method on the platform heap
 *      (file buffers, heap chains, planned buffers, scratch);
 * for N = 1, 2, ... until the load no longer reaches the Nth call, once
 * failing only the Nth call and once every call from the Nth on
 * (printed as "one-shot + from-N-on" case counts). Every
 * failure must be a clean EMBER_ERR_OUT_OF_MEMORY with a message, and every
 * platform block must be freed once everything is destroyed. Also checks
 * that execute allocates nothing, and that ember_program_method_arena_size()
 * is exact: an arena of that many bytes (plus what delegates ask for) loads
 * the method with caller-supplied planned buffers and scratch, touching the
 * platform heap not at all, and one byte less fails with
 * EMBER_ERR_OUT_OF_MEMORY.
 *
 * Fixtures: every tests/fixtures/ .pte file (or the files named on the command
 * line); delegated ones run with the stand-in EmberTestBackend of
 * robust_util.h, whose init takes memory from the method allocator, so
 * failures inside delegate init are covered too. A fixture with a .ptd data
 * file beside it runs with that file as its data map; in case 2 the map is
 * opened through a file loader inside the loop, so failures while opening
 * it (its structure, its flatbuffer) and while binding its tensors (each a
 * heap copy) are injected too, and 1c fails the map's own allocator.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "robust_util.h"

#define IO_CAP ((size_t)64 << 20)
#define SCRATCH_SIZE ((size_t)256 << 10)
/* No load of the fixtures comes near this many allocations. */
#define MAX_N 1000000

static size_t g_failures;
static size_t g_cases;
/* The data map of the fixture being run (NULL: it has none). */
static const ember_data_map *g_map;
static char g_ptd_path[512];
static size_t g_tolerated; /* loads that succeeded although an allocation failed */

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            g_failures++;                                                                         \
            if (g_failures <= 30) {                                                               \
                fprintf(stderr, "FAIL [%s] %s:%d: ", ru_case, __FILE__, __LINE__);                \
                fprintf(stderr, __VA_ARGS__);                                                     \
                fprintf(stderr, "\n");                                                            \
            }                                                                                     \
        }                                                                                         \
    } while (0)

static void violation(const char *what, ember_status st) {
    CHECK(0, "%s (status %s)", what, ember_status_str(st));
}

/* An injected failure must surface as OUT_OF_MEMORY with a message. */
static void check_oom(const char *what, ember_status st) {
    CHECK(st == EMBER_ERR_OUT_OF_MEMORY, "%s returned %s (\"%s\"), expected out of memory", what,
          ember_status_str(st), ember_last_error());
    CHECK(ember_last_error()[0] != '\0', "%s returned %s with no message", what,
          ember_status_str(st));
}

/* ---------------------------------------------------------------------- */
/* An ember_allocator that fails its Nth call                             */
/* ---------------------------------------------------------------------- */

typedef struct failing_alloc {
    ember_allocator base;
    uint64_t calls;
    uint64_t fail_at; /* 1-based; 0: never */
    int sticky;       /* fail every call from fail_at on */
    void **blocks;    /* every block handed out, freed by fa_release() */
    size_t count, cap;
} failing_alloc;

static void *fa_alloc(void *ctx, size_t size, size_t align) {
    failing_alloc *fa = ctx;
    void *p = NULL;
    fa->calls++;
    if (fa->fail_at != 0 && (fa->calls == fa->fail_at || (fa->sticky && fa->calls > fa->fail_at)))
        return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    /* Exact-size blocks, so that ASan sees a write past any of them. */
    if (posix_memalign(&p, align, size == 0 ? 1 : size) != 0) return NULL;
    if (fa->count == fa->cap) {
        fa->cap = fa->cap ? fa->cap * 2 : 256;
        fa->blocks = realloc(fa->blocks, fa->cap * sizeof *fa->blocks);
        if (fa->blocks == NULL) abort();
    }
    fa->blocks[fa->count++] = p;
    return p;
}

static void fa_init(failing_alloc *fa, uint64_t fail_at, int sticky) {
    memset(fa, 0, sizeof *fa);
    fa->base.ctx = fa;
    fa->base.alloc = fa_alloc;
    fa->fail_at = fail_at;
    fa->sticky = sticky;
}

static void fa_release(failing_alloc *fa) {
    for (size_t i = 0; i < fa->count; i++) free(fa->blocks[i]);
    free(fa->blocks);
    fa->blocks = NULL;
    fa->count = fa->cap = 0;
}

/* Binds generated inputs and executes; execute must allocate nothing. */
static void bind_and_execute(const ember_program *p, const char *name, ember_method *m,
                             int executions) {
    ru_io io;
    ember_status st = ru_bind_io(p, name, m, &io, IO_CAP, 7);
    CHECK(st == EMBER_OK, "binding inputs: %s (%s)", ember_status_str(st), ember_last_error());
    for (int e = 0; st == EMBER_OK && e < executions; e++) {
        uint64_t calls = ru_heap_state.calls;
        int64_t live = ru_heap_state.live;
        ember_clear_error();
        st = ember_method_execute(m);
        CHECK(st == EMBER_OK, "execute: %s (%s)", ember_status_str(st), ember_last_error());
        CHECK(ru_heap_state.calls == calls && ru_heap_state.live == live,
              "execute made %llu platform allocations", (unsigned long long)(ru_heap_state.calls - calls));
    }
    ru_io_free(&io);
}

/* ember_method_load() with the fixture's data map, if it has one. */
static ember_status load_method(const ember_program *p, const char *name, const ember_memory *mem,
                                ember_method **m) {
    ember_method_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.memory = mem;
    o.data_maps = g_map != NULL ? &g_map : NULL;
    o.num_data_maps = g_map != NULL ? 1 : 0;
    return ember_method_load_with(p, name, &o, m);
}

/* ---------------------------------------------------------------------- */
/* 1a. Program options allocator                                          */
/* ---------------------------------------------------------------------- */

static size_t program_allocator_failures(const char *path, const uint8_t *file, size_t size,
                                         int executions, int sticky) {
    size_t cases = 0;
    int64_t live0 = ru_heap_state.live; /* the caller's own program */
    for (uint64_t n = 1; n < MAX_N; n++) {
        failing_alloc fa;
        ember_buffer_loader loader;
        ember_program_options opts;
        ember_program *p = NULL;
        fa_init(&fa, n, sticky);
        memset(&opts, 0, sizeof opts);
        opts.struct_size = sizeof opts;
        opts.allocator = &fa.base;
        ember_buffer_loader_init(&loader, file, size);
        snprintf(ru_case, sizeof ru_case, "%s: program allocator fails call %llu%s", path,
                 (unsigned long long)n, sticky ? " and after" : "");
        ember_clear_error();
        ember_status st = ember_program_load(&loader.base, &opts, &p);
        int injected = fa.calls >= n;
        cases++;
        if (injected) {
            check_oom("ember_program_load", st);
            CHECK(p == NULL, "program set on failure");
        } else {
            CHECK(st == EMBER_OK, "load without an injected failure: %s (%s)", ember_status_str(st),
                  ember_last_error());
            /* The program built in this allocator runs. */
            for (size_t i = 0; st == EMBER_OK && i < ember_program_method_count(p); i++) {
                const char *name = NULL;
                ember_method *m = NULL;
                ember_program_method_name(p, i, &name);
                ember_clear_error();
                ember_status ms = load_method(p, name, NULL, &m);
                CHECK(ms == EMBER_OK, "method '%s': %s (%s)", name, ember_status_str(ms),
                      ember_last_error());
                if (ms == EMBER_OK) bind_and_execute(p, name, m, executions);
                ember_method_destroy(m);
            }
        }
        ember_program_destroy(p);
        fa_release(&fa);
        CHECK(ru_heap_state.live == live0, "%lld platform blocks leaked",
              (long long)(ru_heap_state.live - live0));
        if (!injected) break;
    }
    return cases;
}

/* ---------------------------------------------------------------------- */
/* 1b. Method allocator                                                   */
/* ---------------------------------------------------------------------- */

static size_t method_allocator_failures(const char *path, const ember_program *p, const char *name,
                                        int executions, int sticky) {
    size_t cases = 0;
    int64_t live0 = ru_heap_state.live;
    for (uint64_t n = 1; n < MAX_N; n++) {
        failing_alloc fa;
        ember_memory mem;
        ember_method *m = NULL;
        fa_init(&fa, n, sticky);
        memset(&mem, 0, sizeof mem);
        mem.struct_size = sizeof mem;
        mem.method_allocator = &fa.base;
        snprintf(ru_case, sizeof ru_case, "%s '%s': method allocator fails call %llu%s", path, name,
                 (unsigned long long)n, sticky ? " and after" : "");
        ember_clear_error();
        ember_status st = load_method(p, name, &mem, &m);
        int injected = fa.calls >= n;
        cases++;
        if (st != EMBER_OK) {
            if (injected)
                check_oom("ember_method_load", st);
            else
                CHECK(0, "method load without an injected failure: %s (%s)", ember_status_str(st),
                      ember_last_error());
            CHECK(m == NULL, "method set on failure");
        } else {
            CHECK(!injected, "method loaded although allocation %llu failed", (unsigned long long)n);
            bind_and_execute(p, name, m, executions);
        }
        ember_method_destroy(m);
        fa_release(&fa);
        CHECK(ru_heap_state.live == live0, "%lld platform blocks leaked",
              (long long)(ru_heap_state.live - live0));
        if (!injected) break;
    }
    return cases;
}

/* ---------------------------------------------------------------------- */
/* 2. Platform heap, with the file loader                                 */
/* ---------------------------------------------------------------------- */

static size_t platform_failures(const char *path, const char *name, int executions, int sticky,
                                uint64_t *allocs_per_load) {
    size_t cases = 0;
    int64_t live0 = ru_heap_state.live; /* the caller's own program */
    for (uint64_t n = 1; n < MAX_N; n++) {
        ember_file_loader fl, dl;
        ember_program *p = NULL;
        ember_method *m = NULL;
        ember_data_map *map = NULL;
        bool data = g_map != NULL;
        ember_status st;
        snprintf(ru_case, sizeof ru_case, "%s '%s': platform alloc fails call %llu%s", path, name,
                 (unsigned long long)n, sticky ? " and after" : "");
        ru_heap_arm(n, sticky);
        ember_clear_error();
        st = ember_file_loader_open(&fl, path);
        CHECK(st == EMBER_OK, "cannot open %s: %s", path, ember_last_error());
        if (st != EMBER_OK) return cases;
        if (data) {
            st = ember_file_loader_open(&dl, g_ptd_path);
            CHECK(st == EMBER_OK, "cannot open %s: %s", g_ptd_path, ember_last_error());
            if (st != EMBER_OK) {
                ember_file_loader_close(&fl);
                return cases;
            }
        }
        ember_clear_error();
        st = ember_program_load(&fl.base, NULL, &p);
        const char *what = "ember_program_load";
        if (st == EMBER_OK && data) {
            ember_clear_error();
            st = ember_data_map_open(&dl.base, NULL, &map);
            what = "ember_data_map_open";
        }
        if (st == EMBER_OK) {
            const ember_data_map *maps[1] = {map};
            ember_method_options o;
            memset(&o, 0, sizeof o);
            o.struct_size = sizeof o;
            o.data_maps = data ? maps : NULL;
            o.num_data_maps = data ? 1 : 0;
            ember_clear_error();
            st = ember_method_load_with(p, name, &o, &m);
            what = "ember_method_load";
        }
        int injected = ru_heap_state.injected > 0;
        uint64_t calls = ru_heap_state.calls;
        cases++;
        if (st != EMBER_OK) {
            if (injected)
                check_oom(what, st);
            else
                CHECK(0, "%s without an injected failure: %s (%s)", what, ember_status_str(st),
                      ember_last_error());
        } else {
            /* A failed scratch allocation is tolerated (kernels then get no
             * scratch); execute must then still end in a status. */
            ru_heap_arm(0, 0);
            if (!injected) {
                bind_and_execute(p, name, m, executions);
            } else {
                ru_io io;
                g_tolerated++;
                st = ru_bind_io(p, name, m, &io, IO_CAP, 7);
                CHECK(st == EMBER_OK, "binding inputs: %s", ember_status_str(st));
                for (int e = 0; st == EMBER_OK && e < executions; e++) {
                    ember_clear_error();
                    st = ember_method_execute(m);
                    CHECK(st == EMBER_OK || ember_last_error()[0] != '\0', "execute failed silently");
                }
                ru_io_free(&io);
            }
        }
        ember_method_destroy(m);
        ember_data_map_close(map);
        ember_program_destroy(p);
        ember_file_loader_close(&fl);
        if (data) ember_file_loader_close(&dl);
        CHECK(ru_heap_state.live == live0, "%lld platform blocks leaked",
              (long long)(ru_heap_state.live - live0));
        ru_heap_state.live = live0;
        if (!injected) {
            *allocs_per_load = calls;
            break;
        }
    }
    ru_heap_arm(0, 0);
    return cases;
}

/* ---------------------------------------------------------------------- */
/* 3. ember_program_method_arena_size() is exact                          */
/* ---------------------------------------------------------------------- */

static void arena_exact(const char *path, const ember_program *p, const char *name, int executions,
                        size_t *arena_bytes) {
    ember_method_meta meta;
    size_t bytes = 0;
    ember_status st;
    snprintf(ru_case, sizeof ru_case, "%s '%s': arena of the measured size", path, name);
    ember_clear_error();
    st = ember_program_method_meta(p, name, &meta);
    CHECK(st == EMBER_OK, "method meta: %s", ember_last_error());
    if (st != EMBER_OK) return;
    st = ember_program_method_arena_size(p, name, &bytes);
    CHECK(st == EMBER_OK && bytes > 0, "arena size: %s (%s)", ember_status_str(st), ember_last_error());
    if (st != EMBER_OK) return;
    *arena_bytes = bytes;
    /* The measure excludes what backends ask for at init: the stand-in
     * backend asks for exactly RU_DELEGATE_BYTES (alignment 1) each. */
    bytes += meta.num_delegates * RU_DELEGATE_BYTES;
    /* The real CPU backend (xnnpack_* fixtures) asks for what its payload
     * needs, some of it aligned to 64: measure it with a load into a large
     * arena aligned so, then hold loads into the same alignment to exactly
     * that. */
    const bool real_backend = strstr(path, "xnnpack_") != NULL;
    const size_t align = real_backend ? 64 : 16;

    void **planned = calloc(meta.num_planned_buffers + 1, sizeof *planned);
    void *scratch = malloc(SCRATCH_SIZE);
    if (planned == NULL || scratch == NULL) abort();
    for (size_t i = 0; i < meta.num_planned_buffers; i++) {
        size_t pb = 0;
        st = ember_program_planned_buffer_size(p, name, i, &pb);
        CHECK(st == EMBER_OK, "planned buffer %zu size: %s", i, ember_last_error());
        if (posix_memalign(&planned[i], 16, pb > 0 ? pb : 16) != 0) abort();
        memset(planned[i], 0, pb > 0 ? pb : 16);
    }

    if (real_backend) {
        size_t big = bytes + ((size_t)64 << 20);
        void *buf = NULL;
        if (posix_memalign(&buf, align, big) != 0) abort();
        ember_arena arena;
        ember_memory mem;
        ember_method *m = NULL;
        ember_arena_init(&arena, buf, big);
        memset(&mem, 0, sizeof mem);
        mem.struct_size = sizeof mem;
        mem.method_allocator = &arena.base;
        mem.planned_buffers = planned;
        mem.num_planned_buffers = meta.num_planned_buffers;
        mem.scratch = scratch;
        mem.scratch_size = SCRATCH_SIZE;
        st = load_method(p, name, &mem, &m);
        CHECK(st == EMBER_OK, "load into a large arena: %s (%s)", ember_status_str(st),
              ember_last_error());
        bytes = arena.used;
        ember_method_destroy(m);
        free(buf);
    }
    for (int less = 0; less <= 1; less++) {
        size_t size = bytes - (size_t)less;
        void *buf = NULL;
        ember_arena arena;
        ember_memory mem;
        ember_method *m = NULL;
        /* Exactly `size` bytes, aligned to 16: ASan sees any overrun. */
        if (posix_memalign(&buf, align, size > 0 ? size : 1) != 0) abort();
        ember_arena_init(&arena, buf, size);
        memset(&mem, 0, sizeof mem);
        mem.struct_size = sizeof mem;
        mem.method_allocator = &arena.base;
        mem.planned_buffers = planned;
        mem.num_planned_buffers = meta.num_planned_buffers;
        mem.scratch = scratch;
        mem.scratch_size = SCRATCH_SIZE;
        snprintf(ru_case, sizeof ru_case, "%s '%s': arena of %zu bytes (measured %zu)", path, name,
                 size, bytes);
        ru_heap_arm(0, 0);
        ember_clear_error();
        st = load_method(p, name, &mem, &m);
        if (less) {
            CHECK(st == EMBER_ERR_OUT_OF_MEMORY, "one byte less: %s (%s), expected out of memory",
                  ember_status_str(st), ember_last_error());
            CHECK(ember_last_error()[0] != '\0', "no message");
        } else {
            CHECK(st == EMBER_OK, "exact arena: %s (%s)", ember_status_str(st), ember_last_error());
            CHECK(arena.used == bytes, "arena used %zu of the measured %zu", arena.used, bytes);
            /* Everything was supplied: the platform heap is not touched. */
            CHECK(ru_heap_state.calls == 0, "method load with supplied memory made %llu platform "
                  "allocations", (unsigned long long)ru_heap_state.calls);
            if (st == EMBER_OK) bind_and_execute(p, name, m, executions);
        }
        ember_method_destroy(m);
        free(buf);
    }
    for (size_t i = 0; i < meta.num_planned_buffers; i++) free(planned[i]);
    free(planned);
    free(scratch);
}

/* ---------------------------------------------------------------------- */

static int run_fixture(const char *path) {
    size_t size = 0;
    uint8_t *file = ru_read_file(path, &size);
    ember_buffer_loader loader;
    ember_program *p = NULL;
    ember_status st;
    int executions = strstr(path, "mutable_buffer") != NULL ? 2 : 1;
    if (file == NULL) {
        fprintf(stderr, "FAIL: cannot read %s (run from the repository root)\n", path);
        return 1;
    }
    ember_buffer_loader_init(&loader, file, size);
    snprintf(ru_case, sizeof ru_case, "%s: plain load", path);
    ember_clear_error();
    st = ember_program_load(&loader.base, NULL, &p);
    CHECK(st == EMBER_OK, "load: %s (%s)", ember_status_str(st), ember_last_error());
    if (st != EMBER_OK) {
        free(file);
        return 1;
    }
    /* The data file, if any: one map (platform heap) for cases 1 and 3. */
    uint8_t *ptd = NULL;
    size_t ptd_size = 0;
    ember_buffer_loader ptd_loader;
    ember_data_map *map = NULL;
    g_map = NULL;
    if (ru_data_path(path, g_ptd_path, sizeof g_ptd_path)) {
        ptd = ru_read_file(g_ptd_path, &ptd_size);
        CHECK(ptd != NULL, "cannot read %s", g_ptd_path);
        if (ptd == NULL) {
            ember_program_destroy(p);
            free(file);
            return 1;
        }
        ember_buffer_loader_init(&ptd_loader, ptd, ptd_size);
        st = ember_data_map_open(&ptd_loader.base, NULL, &map);
        CHECK(st == EMBER_OK, "data map: %s (%s)", ember_status_str(st), ember_last_error());
        /* 1c. The map's own allocator fails (its one allocation). */
        for (int sticky = 0; sticky <= 1; sticky++) {
            failing_alloc fa;
            ember_data_map_options mo = {sizeof mo, &fa.base};
            ember_data_map *m1 = NULL;
            fa_init(&fa, 1, sticky);
            snprintf(ru_case, sizeof ru_case, "%.150s: data map allocator fails call 1", g_ptd_path);
            ember_clear_error();
            check_oom("ember_data_map_open", ember_data_map_open(&ptd_loader.base, &mo, &m1));
            CHECK(m1 == NULL, "map set on failure");
            fa_release(&fa);
            g_cases++;
        }
        g_map = map;
    }
    size_t n1 = program_allocator_failures(path, file, size, executions, 0);
    size_t n1s = program_allocator_failures(path, file, size, executions, 1);
    printf("alloc_failure: %-34s program allocator: %zu + %zu cases\n", path, n1, n1s);
    g_cases += n1 + n1s;
    for (size_t i = 0; i < ember_program_method_count(p); i++) {
        const char *name = NULL;
        uint64_t allocs = 0;
        size_t arena_bytes = 0;
        ember_program_method_name(p, i, &name);
        size_t n2 = method_allocator_failures(path, p, name, executions, 0);
        size_t n2s = method_allocator_failures(path, p, name, executions, 1);
        size_t n3 = platform_failures(path, name, executions, 0, &allocs);
        size_t n3s = platform_failures(path, name, executions, 1, &allocs);
        arena_exact(path, p, name, executions, &arena_bytes);
        printf("alloc_failure: %-34s '%s': method allocator %zu + %zu cases, platform alloc "
               "%zu + %zu cases (%llu platform allocations per load), arena of %zu bytes exact\n",
               path, name, n2, n2s, n3, n3s, (unsigned long long)allocs, arena_bytes);
        g_cases += n2 + n2s + n3 + n3s + 2;
    }
    fflush(stdout);
    ember_program_destroy(p);
    ember_data_map_close(map);
    g_map = NULL;
    free(ptd);
    free(file);
    return 0;
}

int main(int argc, char **argv) {
    int failed = 0;
    ru_install_crash_report("alloc_failure");
    ru_heap_install(0);
    ru_violation = violation;
    if (!ru_register()) {
        fprintf(stderr, "FAIL: cannot register the kernels and backend: %s\n", ember_last_error());
        return 1;
    }
    if (argc > 1) {
        for (int i = 1; i < argc; i++) failed |= run_fixture(argv[i]);
    } else {
        char *paths[64];
        size_t n = ru_list_fixtures("tests/fixtures", paths, sizeof paths / sizeof paths[0]);
        if (n == 0) {
            fprintf(stderr, "FAIL: no tests/fixtures/*.pte (run from the repository root)\n");
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            failed |= run_fixture(paths[i]);
            free(paths[i]);
        }
    }
    CHECK(ru_heap_state.live == 0, "%lld platform blocks still live at exit",
          (long long)ru_heap_state.live);
    printf("alloc_failure: %zu cases, %zu failures (%zu loads went on without default scratch "
           "after its allocation failed)\n",
           g_cases, g_failures, g_tolerated);
    return failed || g_failures > 0 ? 1 : 0;
}
