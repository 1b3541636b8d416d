/*
 * Data loaders: the zero-copy buffer loader, the file and mmap loaders, a
 * loader written here (serving copies from memory, counting every load and
 * release), and a program run from read-only memory.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "npy.h"
#include "test_util.h"

#define FIX "tests/fixtures/"

/* Reads a whole file into 64-byte aligned heap memory. */
static bool inside(const void *p, const void *base, size_t size) {
    return (const uint8_t *)p >= (const uint8_t *)base && (const uint8_t *)p < (const uint8_t *)base + size;
}

/* Compares a float32 output with a .npy file (1e-5 relative + 1e-6 absolute). */
static bool output_matches(const ember_value *v, const char *npy_path) {
    npy_array want;
    char err[256];
    if (!CHECK_MSG(npy_load(npy_path, &want, err, sizeof err) == 0, "%s: %s", npy_path, err))
        return false;
    bool ok = CHECK(v->tag == EMBER_TAG_TENSOR) && CHECK(v->u.t->dtype == EMBER_FLOAT32) &&
              CHECK(want.dtype == EMBER_FLOAT32) && CHECK_EQ_INT(v->u.t->numel, want.numel) &&
              CHECK_EQ_INT(v->u.t->dim, want.dim);
    for (size_t d = 0; ok && d < want.dim; d++) ok = CHECK_EQ_INT(v->u.t->sizes[d], want.shape[d]);
    if (ok) {
        const float *g = v->u.t->data, *w = want.data;
        size_t bad = 0;
        for (size_t i = 0; i < want.numel; i++)
            if (!(fabs((double)g[i] - (double)w[i]) <= 1e-6 + 1e-5 * fabs((double)w[i]))) bad++;
        ok = CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ", npy_path, bad, want.numel);
    }
    npy_free(&want);
    return ok;
}

/* Loads `forward` of prog, runs it on the case's inputs in order, checks outputs. */
static void run_case(const ember_program *prog, const char *case_dir, int runs) {
    ember_method *m = NULL;
    if (!CHECK_OK(ember_method_load(prog, "forward", NULL, &m))) return;
    for (int i = 0; i < runs; i++) {
        char path[256];
        npy_array x;
        char err[256];
        snprintf(path, sizeof path, FIX "%s/forward.run%d.in0.npy", case_dir, i);
        if (!CHECK_MSG(npy_load(path, &x, err, sizeof err) == 0, "%s", err)) break;
        CHECK_OK(ember_method_set_input_tensor(m, 0, (ember_dtype)x.dtype, x.shape, x.dim, x.data,
                                               x.nbytes));
        if (CHECK_OK(ember_method_execute(m))) {
            const ember_value *out;
            snprintf(path, sizeof path, FIX "%s/forward.run%d.out0.npy", case_dir, i);
            if (CHECK_OK(ember_method_output(m, 0, &out))) output_matches(out, path);
        }
        npy_free(&x);
    }
    ember_method_destroy(m);
}

/* ---------------------------------------------------------------------- */
/* Buffer loader                                                          */
/* ---------------------------------------------------------------------- */

static void test_buffer_loader(void) {
    size_t n = 0;
    ember_buffer_loader bl;
    ember_buffer b;
    uint64_t size = 0;
    check_section("buffer loader");
    uint8_t *bytes = test_read_file(FIX "mlp.pte", &n);
    if (!CHECK(bytes != NULL && n > 64)) return;

    ember_buffer_loader_init(&bl, bytes, n);
    CHECK_EQ_INT(bl.base.struct_size, sizeof(ember_data_loader));
    CHECK(bl.base.release == NULL);
    CHECK(bl.base.size(bl.base.ctx, &size) == EMBER_OK && size == n);
    /* Zero copy: loads point into the caller's bytes. */
    CHECK_OK(bl.base.load(bl.base.ctx, 0, n, EMBER_SEGMENT_PROGRAM, &b));
    CHECK(b.data == bytes && b.size == n);
    CHECK_OK(bl.base.load(bl.base.ctx, 100, 50, EMBER_SEGMENT_CONSTANT, &b));
    CHECK(b.data == bytes + 100 && b.size == 50);
    CHECK_OK(bl.base.load(bl.base.ctx, n, 0, EMBER_SEGMENT_BACKEND, &b));
    CHECK(b.size == 0);
    CHECK_OK(bl.base.load(bl.base.ctx, n - 1, 1, EMBER_SEGMENT_MUTABLE, &b));
    CHECK(b.data == bytes + n - 1);
    /* Out of range. */
    CHECK_ERR(bl.base.load(bl.base.ctx, n, 1, EMBER_SEGMENT_PROGRAM, &b), EMBER_ERR_TRUNCATED,
              "past end");
    CHECK_STATUS(bl.base.load(bl.base.ctx, n - 10, 11, EMBER_SEGMENT_PROGRAM, &b),
                 EMBER_ERR_TRUNCATED);
    CHECK_STATUS(bl.base.load(bl.base.ctx, n + 1, 0, EMBER_SEGMENT_PROGRAM, &b),
                 EMBER_ERR_TRUNCATED);
    CHECK_STATUS(bl.base.load(bl.base.ctx, UINT64_MAX, 1, EMBER_SEGMENT_PROGRAM, &b),
                 EMBER_ERR_TRUNCATED);
    CHECK_STATUS(bl.base.load(bl.base.ctx, 1, SIZE_MAX, EMBER_SEGMENT_PROGRAM, &b),
                 EMBER_ERR_TRUNCATED);
    CHECK_STATUS(bl.base.load(bl.base.ctx, UINT64_MAX - 5, 10, EMBER_SEGMENT_PROGRAM, &b),
                 EMBER_ERR_TRUNCATED);

    /* A program loaded through it reads its strings in place. */
    ember_program *prog = NULL;
    if (CHECK_OK(ember_program_load(&bl.base, NULL, &prog))) {
        const char *name = NULL;
        CHECK_EQ_INT(ember_program_method_count(prog), 1);
        CHECK_OK(ember_program_method_name(prog, 0, &name));
        CHECK_EQ_STR(name, "forward");
        CHECK_MSG(inside(name, bytes, n), "method name is not read in place");
        run_case(prog, "mlp", 2);
        ember_program_destroy(prog);
    }

    /* Empty and truncated buffers. */
    ember_buffer_loader_init(&bl, NULL, 1000);
    CHECK(bl.base.size(bl.base.ctx, &size) == EMBER_OK && size == 0);
    CHECK_STATUS(ember_program_load(&bl.base, NULL, &prog), EMBER_ERR_TRUNCATED);
    CHECK(prog == NULL);
    ember_buffer_loader_init(&bl, bytes, 100);
    CHECK_STATUS(ember_program_load(&bl.base, NULL, &prog), EMBER_ERR_TRUNCATED);
    ember_buffer_loader_init(&bl, bytes, 7);
    CHECK_STATUS(ember_program_load(&bl.base, NULL, &prog), EMBER_ERR_TRUNCATED);

    /* Bad loader tables. */
    ember_buffer_loader_init(&bl, bytes, n);
    bl.base.struct_size = sizeof(ember_data_loader) - 1;
    CHECK_STATUS(ember_program_load(&bl.base, NULL, &prog), EMBER_ERR_INVALID_ARGUMENT);
    ember_buffer_loader_init(&bl, bytes, n);
    bl.base.load = NULL;
    CHECK_STATUS(ember_program_load(&bl.base, NULL, &prog), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_program_load(NULL, NULL, &prog), EMBER_ERR_INVALID_ARGUMENT);
    ember_buffer_loader_init(&bl, bytes, n);
    CHECK_STATUS(ember_program_load(&bl.base, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    free(bytes);
}

/* ---------------------------------------------------------------------- */
/* File and mmap loaders                                                  */
/* ---------------------------------------------------------------------- */

static void test_file_loader(void) {
    ember_file_loader fl;
    ember_buffer b;
    uint64_t size = 0;
    size_t n = 0;
    check_section("file loader");
    uint8_t *bytes = test_read_file(FIX "mlp.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    if (CHECK_OK(ember_file_loader_open(&fl, FIX "mlp.pte"))) {
        CHECK_EQ_INT(fl.base.struct_size, sizeof(ember_data_loader));
        CHECK(fl.base.size(fl.base.ctx, &size) == EMBER_OK && size == n);
        if (CHECK_OK(fl.base.load(fl.base.ctx, 16, 100, EMBER_SEGMENT_CONSTANT, &b))) {
            CHECK(b.size == 100 && memcmp(b.data, bytes + 16, 100) == 0);
            CHECK(((uintptr_t)b.data & 15) == 0);
            CHECK(fl.base.release != NULL);
            fl.base.release(fl.base.ctx, &b);
        }
        CHECK_OK(fl.base.load(fl.base.ctx, n, 0, EMBER_SEGMENT_CONSTANT, &b));
        fl.base.release(fl.base.ctx, &b);
        CHECK_ERR(fl.base.load(fl.base.ctx, n - 4, 5, EMBER_SEGMENT_PROGRAM, &b),
                  EMBER_ERR_TRUNCATED, "past end");
        CHECK_STATUS(fl.base.load(fl.base.ctx, UINT64_MAX, 2, EMBER_SEGMENT_PROGRAM, &b),
                     EMBER_ERR_TRUNCATED);

        ember_program *prog = NULL;
        if (CHECK_OK(ember_program_load(&fl.base, NULL, &prog))) {
            const char *name = NULL;
            CHECK_OK(ember_program_method_name(prog, 0, &name));
            CHECK_EQ_STR(name, "forward");
            run_case(prog, "mlp", 2);
            ember_program_destroy(prog);
        }
        ember_file_loader_close(&fl);
        CHECK_EQ_INT(fl.fd, -1);
        ember_file_loader_close(&fl); /* twice is harmless */
    }

    CHECK_ERR(ember_file_loader_open(&fl, FIX "does-not-exist.pte"), EMBER_ERR_IO,
              "does-not-exist.pte");
    CHECK_EQ_INT(fl.fd, -1);
    CHECK_ERR(ember_file_loader_open(&fl, FIX), EMBER_ERR_IO, "fixtures");
    CHECK_STATUS(ember_file_loader_open(&fl, NULL), EMBER_ERR_INVALID_ARGUMENT);
    free(bytes);
}

static void test_mmap_loader(void) {
    ember_mmap_loader ml;
    ember_buffer b;
    uint64_t size = 0;
    size_t n = 0;
    check_section("mmap loader");
    uint8_t *bytes = test_read_file(FIX "mutable_buffer.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    if (CHECK_OK(ember_mmap_loader_open(&ml, FIX "mutable_buffer.pte"))) {
        CHECK(ml.map != NULL);
        CHECK(ml.base.size(ml.base.ctx, &size) == EMBER_OK && size == n);
        CHECK(ml.base.release != NULL);
        CHECK_OK(ml.base.load(ml.base.ctx, 0, n, EMBER_SEGMENT_PROGRAM, &b));
        CHECK(b.data == ml.map && memcmp(b.data, bytes, n) == 0);
        ml.base.release(ml.base.ctx, &b); /* the program's bytes: kept */
        CHECK(memcmp(ml.map, bytes, n) == 0);
        /* named data (delegate weights) is given back after packing: its
         * pages are dropped, and a later read faults them in unchanged */
        CHECK_OK(ml.base.load(ml.base.ctx, 0, n, EMBER_SEGMENT_NAMED_DATA, &b));
        ml.base.release(ml.base.ctx, &b);
        CHECK(memcmp(ml.map, bytes, n) == 0);
        CHECK_OK(ml.base.load(ml.base.ctx, 40, 8, EMBER_SEGMENT_MUTABLE, &b));
        CHECK(b.data == (const uint8_t *)ml.map + 40);
        CHECK_ERR(ml.base.load(ml.base.ctx, 1, n, EMBER_SEGMENT_PROGRAM, &b), EMBER_ERR_TRUNCATED,
                  "past end");
        ember_program *prog = NULL;
        if (CHECK_OK(ember_program_load(&ml.base, NULL, &prog))) {
            const char *name = NULL;
            CHECK_OK(ember_program_method_name(prog, 0, &name));
            CHECK_MSG(inside(name, ml.map, n), "mmap loads are not zero-copy");
            run_case(prog, "mutable_buffer", 3);
            ember_program_destroy(prog);
        }
        ember_mmap_loader_close(&ml);
        CHECK(ml.map == NULL);
    }
    CHECK_ERR(ember_mmap_loader_open(&ml, "tests/nope/missing.pte"), EMBER_ERR_IO, "missing.pte");
    CHECK_ERR(ember_mmap_loader_open(&ml, FIX), EMBER_ERR_IO, "not a regular file");

    /* An empty file maps to nothing and is not a program. */
    char tmpl[] = "/tmp/ember_empty_XXXXXX";
    int fd = mkstemp(tmpl);
    if (CHECK(fd >= 0)) {
        close(fd);
        if (CHECK_OK(ember_mmap_loader_open(&ml, tmpl))) {
            ember_program *prog = NULL;
            CHECK(ml.base.size(ml.base.ctx, &size) == EMBER_OK && size == 0);
            CHECK_STATUS(ember_program_load(&ml.base, NULL, &prog), EMBER_ERR_TRUNCATED);
            ember_mmap_loader_close(&ml);
        }
        ember_file_loader fl;
        if (CHECK_OK(ember_file_loader_open(&fl, tmpl))) {
            ember_program *prog = NULL;
            CHECK_STATUS(ember_program_load(&fl.base, NULL, &prog), EMBER_ERR_TRUNCATED);
            ember_file_loader_close(&fl);
        }
        unlink(tmpl);
    }
    free(bytes);
}

/* ---------------------------------------------------------------------- */
/* A loader written by the user                                           */
/* ---------------------------------------------------------------------- */

/* Serves fresh heap copies (so a use after release is an ASan report). */
typedef struct counting_loader {
    ember_data_loader base;
    const uint8_t *data;
    size_t size;
    int loads, releases, failed;
    int kinds[4];
    int fail_at; /* 1-based load number that fails with EMBER_ERR_IO; 0: never */
    size_t bytes_live;
} counting_loader;

static ember_status cl_size(void *ctx, uint64_t *out) {
    *out = ((counting_loader *)ctx)->size;
    return EMBER_OK;
}

static ember_status cl_load(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                            ember_buffer *out) {
    counting_loader *l = ctx;
    if (l->fail_at > 0 && l->loads + l->failed + 1 == l->fail_at) {
        l->failed++;
        return EMBER_ERR_IO; /* without a message: the runtime must cope */
    }
    if (offset > l->size || size > l->size - offset) return EMBER_ERR_TRUNCATED;
    size_t cap = (size + 63) / 64 * 64;
    uint8_t *copy = aligned_alloc(64, cap ? cap : 64);
    if (copy == NULL) return EMBER_ERR_OUT_OF_MEMORY;
    memcpy(copy, l->data + offset, size);
    l->loads++;
    if ((unsigned)kind < 4) l->kinds[kind]++;
    l->bytes_live += size;
    out->data = copy;
    out->size = size;
    out->owner = copy;
    return EMBER_OK;
}

static void cl_release(void *ctx, ember_buffer *buf) {
    counting_loader *l = ctx;
    l->releases++;
    l->bytes_live -= buf->size;
    free(buf->owner);
    buf->owner = NULL;
}

static void cl_init(counting_loader *l, const uint8_t *data, size_t size) {
    memset(l, 0, sizeof *l);
    l->base.struct_size = sizeof(ember_data_loader);
    l->base.ctx = l;
    l->base.size = cl_size;
    l->base.load = cl_load;
    l->base.release = cl_release;
    l->data = data;
    l->size = size;
}

static ember_status cl_size_fails(void *ctx, uint64_t *out) {
    (void)ctx;
    (void)out;
    return EMBER_ERR_IO;
}

static void test_user_loader(void) {
    static const char *const progs[] = {"mlp", "mutable_buffer", "two_methods", "transformer"};
    check_section("user-defined loader: every load released");
    for (size_t p = 0; p < sizeof progs / sizeof progs[0]; p++) {
        char path[128];
        size_t n = 0;
        counting_loader cl;
        snprintf(path, sizeof path, FIX "%s.pte", progs[p]);
        uint8_t *bytes = test_read_file(path, &n);
        if (!CHECK_MSG(bytes != NULL, "%s", path)) continue;
        cl_init(&cl, bytes, n);
        ember_program *prog = NULL;
        if (CHECK_OK(ember_program_load(&cl.base, NULL, &prog))) {
            CHECK(cl.loads >= 2); /* header, flatbuffer (and segments) */
            CHECK(cl.kinds[EMBER_SEGMENT_PROGRAM] >= 1);
            CHECK_MSG(cl.kinds[EMBER_SEGMENT_CONSTANT] == 1, "%s: %d constant loads", progs[p],
                      cl.kinds[EMBER_SEGMENT_CONSTANT]);
            /* Method load may load (mutable data) and must give it back. */
            for (size_t k = 0; k < ember_program_method_count(prog); k++) {
                const char *name;
                ember_method *m = NULL;
                int before = cl.loads - cl.releases;
                CHECK_OK(ember_program_method_name(prog, k, &name));
                if (CHECK_OK(ember_method_load(prog, name, NULL, &m))) {
                    CHECK_MSG(cl.loads - cl.releases == before, "%s: method %s keeps %d loads",
                              progs[p], name, cl.loads - cl.releases - before);
                    ember_method_destroy(m);
                }
            }
            if (strcmp(progs[p], "mutable_buffer") == 0) {
                CHECK(cl.kinds[EMBER_SEGMENT_MUTABLE] >= 1);
                run_case(prog, "mutable_buffer", 3); /* data copied, not aliased */
            }
            ember_program_destroy(prog);
        }
        CHECK_MSG(cl.loads == cl.releases, "%s: %d loads, %d releases", progs[p], cl.loads,
                  cl.releases);
        CHECK_EQ_INT(cl.bytes_live, 0);

        /* A load failing at each point: a clean status, nothing kept. */
        int total = cl.loads;
        for (int k = 1; k <= total; k++) {
            cl_init(&cl, bytes, n);
            cl.fail_at = k;
            prog = NULL;
            ember_clear_error();
            ember_status st = ember_program_load(&cl.base, NULL, &prog);
            if (st == EMBER_OK) {
                /* The failing load belongs to a method (mutable data). */
                ember_method *m = NULL;
                for (size_t j = 0; j < ember_program_method_count(prog); j++) {
                    const char *name;
                    ember_program_method_name(prog, j, &name);
                    ember_clear_error();
                    st = ember_method_load(prog, name, NULL, &m);
                    ember_method_destroy(m);
                    if (st != EMBER_OK) break;
                }
                ember_program_destroy(prog);
            } else {
                CHECK(prog == NULL);
            }
            CHECK_MSG(cl.failed == 0 || st == EMBER_ERR_IO, "%s: load %d fails: status 0x%x",
                      progs[p], k, (unsigned)st);
            CHECK_MSG(cl.loads == cl.releases, "%s: load %d fails: %d loads, %d releases",
                      progs[p], k, cl.loads, cl.releases);
            CHECK_MSG(st == EMBER_OK || ember_last_error()[0] != '\0', "no message");
        }
        free(bytes);
    }

    /* A loader that cannot tell its size, without a message. */
    counting_loader cl;
    ember_program *prog = NULL;
    static const uint8_t none[1] = {0};
    cl_init(&cl, none, 0);
    cl.base.size = cl_size_fails;
    ember_clear_error();
    CHECK_ERR(ember_program_load(&cl.base, NULL, &prog), EMBER_ERR_IO, "size");
    CHECK(prog == NULL);
    CHECK_EQ_INT(cl.loads, 0);
}

/* ---------------------------------------------------------------------- */
/* Read-only memory                                                       */
/* ---------------------------------------------------------------------- */

static void test_read_only(void) {
    static const struct { const char *file; const char *case_dir; int runs; } cases[] = {
        {"mlp.pte", "mlp", 2},
        {"mutable_buffer.pte", "mutable_buffer", 3},
        {"transformer.pte", "transformer", 4},
    };
    check_section("program in read-only memory (PROT_READ mapping, buffer loader)");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[128];
        struct stat st;
        snprintf(path, sizeof path, FIX "%s", cases[c].file);
        int fd = open(path, O_RDONLY);
        if (!CHECK_MSG(fd >= 0, "%s", path)) continue;
        if (!CHECK(fstat(fd, &st) == 0 && st.st_size > 0)) {
            close(fd);
            continue;
        }
        size_t n = (size_t)st.st_size;
        void *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (!CHECK(map != MAP_FAILED)) continue;
        ember_buffer_loader bl;
        ember_program *prog = NULL;
        ember_buffer_loader_init(&bl, map, n);
        if (CHECK_OK(ember_program_load(&bl.base, NULL, &prog))) {
            run_case(prog, cases[c].case_dir, cases[c].runs);
            /* Twice: the first run must not have changed the program. */
            run_case(prog, cases[c].case_dir, cases[c].runs);
            ember_program_destroy(prog);
        }
        munmap(map, n);
    }
}

int main(void) {
    ember_status st = ember_portable_kernels_register();
    CHECK_OK(st);
    test_buffer_loader();
    test_file_loader();
    test_mmap_loader();
    test_user_loader();
    test_read_only();
    return check_finish();
}
