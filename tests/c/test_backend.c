/*
 * Delegates, with the demo backend EmberTestBackend (backends/embt_backend.c),
 * the runtime half of the demo backend of tests/fixtures/gen_fixtures.py.
 *
 * Checked: delegated programs (payloads in segments and inline) run end to
 * end and match eager; payloads are released right after init; a missing or
 * unavailable backend, a failing or malformed init, and a failing execute
 * all come back as statuses with messages naming the delegate; destroy runs
 * exactly once per successful init, on every path.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/platform.h"
#include "npy.h"

#define FIX "tests/fixtures/"

#include "backends/embt_backend.c"
#include "test_util.h"

static void be_reset(void) {
    memset(&g_be, 0, sizeof g_be);
    g_be.available = true;
}

/* Destroys balance successful inits, and nothing was destroyed twice. */
static void check_balanced(const char *what) {
    CHECK_MSG(g_be.destroys == g_be.init_ok, "%s: %d inits, %d destroys", what, g_be.init_ok,
              g_be.destroys);
    CHECK_MSG(g_be.double_destroys == 0, "%s: %d double destroys", what, g_be.double_destroys);
}

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/* Runs one run of a delegated case on m: inputs in0, in1; output out0. */
static bool run_delegated(ember_method *m, const char *case_dir, int run) {
    char path[256], err[256];
    npy_array x[2], want;
    bool ok = true;
    int loaded = 0;
    for (int k = 0; ok && k < 2; k++) {
        snprintf(path, sizeof path, FIX "%s/forward.run%d.in%d.npy", case_dir, run, k);
        ok = CHECK_MSG(npy_load(path, &x[k], err, sizeof err) == 0, "%s: %s", path, err);
        if (ok) loaded++;
        ok = ok && CHECK_OK(ember_method_set_input_tensor(m, (size_t)k, EMBER_FLOAT32, x[k].shape, x[k].dim,
                                                          x[k].data, x[k].nbytes));
    }
    ok = ok && CHECK_OK(ember_method_execute(m));
    snprintf(path, sizeof path, FIX "%s/forward.run%d.out0.npy", case_dir, run);
    if (ok && CHECK_MSG(npy_load(path, &want, err, sizeof err) == 0, "%s: %s", path, err)) {
        const ember_value *v = NULL;
        ok = CHECK_OK(ember_method_output(m, 0, &v)) && CHECK(v->u.t->numel == (int64_t)want.numel) &&
             CHECK(v->u.t->dim == 2 && v->u.t->sizes[0] == 2 && v->u.t->sizes[1] == 4);
        if (ok) {
            const float *g = v->u.t->data, *w = want.data;
            double max_abs = 0;
            size_t bad = 0;
            for (size_t i = 0; i < want.numel; i++) {
                double e = fabs((double)g[i] - (double)w[i]);
                if (e > max_abs) max_abs = e;
                if (!(e <= 1e-6 + 1e-5 * fabs((double)w[i]))) bad++;
            }
            ok = CHECK_MSG(bad == 0, "%s run %d: %zu elements differ (max abs err %.3g)", case_dir, run,
                           bad, max_abs);
        }
        npy_free(&want);
    }
    for (int k = 0; k < loaded; k++) npy_free(&x[k]);
    return ok;
}

/* ---------------------------------------------------------------------- */
/* End to end                                                             */
/* ---------------------------------------------------------------------- */

/* The manifest flags the delegated cases with the backend they need. */
static void test_manifest_flags(void) {
    size_t n = 0;
    check_section("manifest names the backend of delegated cases");
    char *text = (char *)test_read_file(FIX "manifest.txt", &n);
    if (!CHECK(text != NULL)) return;
    text[n] = '\0';
    CHECK(strstr(text, "case delegated delegated.pte forward backend=EmberTestBackend\n") != NULL);
    CHECK(strstr(text, "case delegated_inline delegated_inline.pte forward backend=EmberTestBackend\n") !=
          NULL);
    CHECK(strstr(text, "case mlp mlp.pte forward\n") != NULL);
    free(text);
}

static void test_end_to_end(void) {
    static const char *const cases[] = {"delegated", "delegated_inline"};
    check_section("delegated programs run end to end");
    for (size_t c = 0; c < 2; c++) {
        char path[128];
        ember_mmap_loader ml;
        ember_program *prog = NULL;
        ember_method *m = NULL;
        ember_method_meta mm;
        char op[64];
        be_reset();
        snprintf(path, sizeof path, FIX "%s.pte", cases[c]);
        if (!CHECK_OK(ember_mmap_loader_open(&ml, path))) continue;
        if (CHECK_OK(ember_program_load(&ml.base, NULL, &prog))) {
            if (CHECK_OK(ember_program_method_meta(prog, "forward", &mm))) {
                CHECK_EQ_INT(mm.num_delegates, 2);
                CHECK_EQ_INT(mm.num_inputs, 2);
                CHECK_EQ_INT(mm.num_outputs, 1);
                CHECK_EQ_INT(mm.num_operators, 2); /* permute_copy and addmm: the linears */
                CHECK_EQ_INT(mm.num_instructions, 8);
                for (size_t i = 0; i < mm.num_operators; i++) {
                    CHECK_OK(ember_program_operator_name(prog, "forward", i, op, sizeof op));
                    CHECK(strstr(op, "relu") == NULL && strstr(op, "sub") == NULL); /* delegated */
                }
                for (size_t i = 0; i < mm.num_delegates; i++) {
                    CHECK_OK(ember_program_delegate_name(prog, "forward", i, op, sizeof op));
                    CHECK_MSG(strcmp(op, "EmberTestBackend") == 0, "%s", op);
                }
                char small[6];
                CHECK_OK(ember_program_delegate_name(prog, "forward", 0, small, sizeof small));
                CHECK_MSG(strcmp(small, "Ember") == 0, "%s", small); /* truncated */
                CHECK_ERR(ember_program_delegate_name(prog, "forward", mm.num_delegates, op,
                                                      sizeof op),
                          EMBER_ERR_INDEX_OUT_OF_RANGE, "delegate");
                CHECK_STATUS(ember_program_delegate_name(prog, "forward", 0, NULL, 0),
                             EMBER_ERR_INVALID_ARGUMENT);
                CHECK_STATUS(ember_program_delegate_name(prog, "nope", 0, op, sizeof op),
                             EMBER_ERR_NOT_FOUND);
            }
            if (CHECK_OK(ember_method_load(prog, "forward", NULL, &m))) {
                CHECK_EQ_INT(g_be.init_calls, 2);
                CHECK_EQ_INT(g_be.init_ok, 2);
                CHECK_EQ_INT(g_be.specs_seen, 2);
                CHECK_EQ_INT(g_be.destroys, 0);
                for (int r = 0; r < 3; r++) CHECK_MSG(run_delegated(m, cases[c], r), "%s run %d", cases[c], r);
                CHECK(run_delegated(m, cases[c], 0)); /* again: delegates keep no stale state */
                CHECK_EQ_INT(g_be.executes, 8);       /* two delegates per execute */
                ember_method_destroy(m);
                CHECK_EQ_INT(g_be.destroys, 2);
            }
            ember_program_destroy(prog);
        }
        ember_mmap_loader_close(&ml);
        check_balanced(cases[c]);
    }
}

/* The delegates share one workspace, as large as the largest request. */
static void test_shared_workspace(void) {
    check_section("delegates share one workspace");
    ember_mmap_loader ml;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    if (!CHECK_OK(ember_mmap_loader_open(&ml, FIX "delegated.pte"))) return;
    if (CHECK_OK(ember_program_load(&ml.base, NULL, &prog))) {
        for (int big = 0; big < 2; big++) {
            size_t used[2];
            for (int strict = 0; strict < 2; strict++) {
                static _Alignas(4096) uint8_t arena_mem[1 << 20], planned_mem[4096];
                void *planned[1] = {planned_mem};
                ember_arena arena;
                be_reset();
                g_be.workspace_extra = big ? 100000 : 0;
                g_be.workspace_align = strict ? 4096 : 0;
                ember_arena_init(&arena, arena_mem, sizeof arena_mem);
                ember_memory mem = {sizeof(ember_memory), &arena.base, planned, 1, NULL, 0};
                if (!CHECK_OK(ember_method_load(prog, "forward", &mem, &m))) continue;
                used[strict] = arena.used;
                CHECK(run_delegated(m, "delegated", 0));
                CHECK(run_delegated(m, "delegated", 1));
                CHECK(g_be.workspace_seen[0] != NULL);
                CHECK(g_be.workspace_seen[0] == g_be.workspace_seen[1]);
                CHECK((uintptr_t)g_be.workspace_seen[0] % (strict ? 4096 : 64) == 0);
                ember_method_destroy(m);
            }
            /* one region of the largest request (2 x 100000), not the sum (300000) */
            if (big) CHECK_MSG(used[0] > 200000 && used[0] < 250000, "%zu", used[0]);
            CHECK(used[1] >= used[0]);
        }
        be_reset();
        g_be.workspace_align = 48; /* not a power of two */
        CHECK_ERR(ember_method_load(prog, "forward", NULL, &m), EMBER_ERR_INVALID_ARGUMENT,
                  "power of two");
        CHECK(m == NULL);
        be_reset();
        ember_program_destroy(prog);
    }
    ember_mmap_loader_close(&ml);
    check_balanced("shared workspace");
    CHECK_STATUS(ember_backend_request_workspace(NULL, 16, 16, NULL), EMBER_ERR_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------------------- */
/* Payload lifetime                                                       */
/* ---------------------------------------------------------------------- */

typedef struct counting_loader {
    ember_data_loader base;
    const uint8_t *data;
    size_t size;
    int loads, releases, backend_loads, backend_releases;
} counting_loader;

static ember_status cl_size(void *ctx, uint64_t *out) {
    *out = ((counting_loader *)ctx)->size;
    return EMBER_OK;
}
static ember_status cl_load(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                            ember_buffer *out) {
    counting_loader *l = ctx;
    if (offset > l->size || size > l->size - offset) return EMBER_ERR_TRUNCATED;
    uint8_t *copy = aligned_alloc(64, (size + 64) / 64 * 64);
    if (copy == NULL) return EMBER_ERR_OUT_OF_MEMORY;
    memcpy(copy, l->data + offset, size);
    l->loads++;
    if (kind == EMBER_SEGMENT_BACKEND) l->backend_loads++;
    out->data = copy;
    out->size = size;
    out->owner = copy;
    /* Remember the kind with the buffer: size is ours to keep. */
    return EMBER_OK;
}
static void cl_release(void *ctx, ember_buffer *buf) {
    counting_loader *l = ctx;
    l->releases++;
    /* A backend payload is the only load of exactly its size that starts with EMBT. */
    if (buf->size >= 4 && memcmp(buf->data, "EMBT", 4) == 0) l->backend_releases++;
    /* Poison before freeing, so a backend reading it later sees garbage even without ASan. */
    memset(buf->owner, 0xdd, buf->size);
    free(buf->owner);
    buf->owner = NULL;
}

static void test_payload_released(void) {
    size_t n = 0;
    counting_loader cl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    check_section("segment payloads are released right after init");
    uint8_t *bytes = test_read_file(FIX "delegated.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    memset(&cl, 0, sizeof cl);
    cl.base.struct_size = sizeof(ember_data_loader);
    cl.base.ctx = &cl;
    cl.base.size = cl_size;
    cl.base.load = cl_load;
    cl.base.release = cl_release;
    cl.data = bytes;
    cl.size = n;
    be_reset();
    if (CHECK_OK(ember_program_load(&cl.base, NULL, &prog))) {
        int live = cl.loads - cl.releases;
        CHECK_EQ_INT(cl.backend_loads, 0); /* payloads are loaded by method load, not before */
        if (CHECK_OK(ember_method_load(prog, "forward", NULL, &m))) {
            CHECK_EQ_INT(cl.backend_loads, 2);
            CHECK_EQ_INT(cl.backend_releases, 2);
            CHECK_EQ_INT(cl.loads - cl.releases, live);
            CHECK_EQ_INT(g_be.last_payload_size, 60); /* delegate 1: 20 + 4 + 3 * 12 */
            /* The delegates run from their own copies. */
            CHECK(run_delegated(m, "delegated", 0));
            CHECK(run_delegated(m, "delegated", 1));
            ember_method_destroy(m);
        }
        ember_program_destroy(prog);
    }
    CHECK_EQ_INT(cl.loads, cl.releases);
    check_balanced("payload lifetime");
    free(bytes);
}

/* ---------------------------------------------------------------------- */
/* Failures                                                               */
/* ---------------------------------------------------------------------- */

/* Loads delegated(.pte|_inline.pte) from bytes (maybe edited) and its method. */
static ember_status load_method_from(const uint8_t *bytes, size_t n, ember_program **prog,
                                     ember_method **m, ember_buffer_loader *bl) {
    ember_buffer_loader_init(bl, bytes, n);
    *prog = NULL;
    *m = NULL;
    ember_status st = ember_program_load(&bl->base, NULL, prog);
    if (!CHECK_OK(st)) return st;
    return ember_method_load(*prog, "forward", NULL, m);
}

static void test_backend_missing(void) {
    size_t n = 0;
    ember_buffer_loader bl;
    ember_program *prog;
    ember_method *m;
    check_section("backend missing or unavailable");
    uint8_t *bytes = test_read_file(FIX "delegated.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    be_reset();
    ember_backends_clear();
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_BACKEND_MISSING,
              "EmberTestBackend");
    CHECK_CONTAINS(ember_last_error(), "not registered");
    CHECK_CONTAINS(ember_last_error(), "forward");
    CHECK(m == NULL);
    CHECK_EQ_INT(g_be.init_calls, 0);
    ember_program_destroy(prog);

    /* A backend with another id does not stand in. */
    static ember_backend other;
    other = g_embt;
    other.id = "EmberTestBackendX";
    CHECK_OK(ember_backend_register(&other));
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_BACKEND_MISSING,
              "'EmberTestBackend'");
    ember_program_destroy(prog);

    CHECK_OK(ember_backend_register(&g_embt));
    g_be.available = false;
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_BACKEND_MISSING,
              "not available");
    CHECK_CONTAINS(ember_last_error(), "EmberTestBackend");
    CHECK(m == NULL);
    CHECK_EQ_INT(g_be.init_calls, 0);
    ember_program_destroy(prog);
    g_be.available = true;
    CHECK_OK(load_method_from(bytes, n, &prog, &m, &bl));
    ember_method_destroy(m);
    ember_program_destroy(prog);
    check_balanced("missing backend");
    free(bytes);
}

static void test_init_failures(void) {
    size_t n = 0;
    ember_buffer_loader bl;
    ember_program *prog;
    ember_method *m;
    check_section("init failures: status, message, destroy once");
    uint8_t *bytes = test_read_file(FIX "delegated.pte", &n);
    if (!CHECK(bytes != NULL)) return;

    /* The second delegate fails: the first is destroyed, once. */
    be_reset();
    g_be.fail_init_at = 2;
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_DELEGATE_FAILED,
              "injected init failure");
    CHECK_CONTAINS(ember_last_error(), "delegate 1");
    CHECK_CONTAINS(ember_last_error(), "EmberTestBackend");
    CHECK_CONTAINS(ember_last_error(), "forward");
    CHECK(m == NULL);
    CHECK_EQ_INT(g_be.init_calls, 2);
    CHECK_EQ_INT(g_be.init_ok, 1);
    CHECK_EQ_INT(g_be.destroys, 1);
    check_balanced("second init fails");
    ember_program_destroy(prog);

    /* The first fails: nothing to destroy, the second is never tried. */
    be_reset();
    g_be.fail_init_at = 1;
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_DELEGATE_FAILED, "delegate 0");
    CHECK_EQ_INT(g_be.init_calls, 1);
    CHECK_EQ_INT(g_be.destroys, 0);
    ember_program_destroy(prog);

    /* A backend that fails without a message still gets one. */
    be_reset();
    g_be.fail_init_at = 1;
    g_be.fail_init_silently = true;
    CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_DELEGATE_FAILED, "delegate 0");
    CHECK_CONTAINS(ember_last_error(), "EmberTestBackend");
    ember_program_destroy(prog);
    check_balanced("silent init failure");

    /* Delegate memory comes from the method allocator: an arena sized for
     * the method alone leaves the backend out of memory, cleanly. */
    be_reset();
    ember_buffer_loader_init(&bl, bytes, n);
    if (CHECK_OK(ember_program_load(&bl.base, NULL, &prog))) {
        size_t need = 0, planned_bytes = 0;
        static _Alignas(64) uint8_t arena_mem[64 * 1024], planned_mem[4096];
        void *planned[1] = {planned_mem};
        ember_arena arena;
        CHECK_OK(ember_program_method_arena_size(prog, "forward", &need));
        CHECK_OK(ember_program_planned_buffer_size(prog, "forward", 0, &planned_bytes));
        CHECK(planned_bytes <= sizeof planned_mem && need + 1024 <= sizeof arena_mem);
        ember_memory mem = {sizeof(ember_memory), &arena.base, planned, 1, NULL, 0};
        ember_arena_init(&arena, arena_mem, need);
        CHECK_ERR(ember_method_load(prog, "forward", &mem, &m), EMBER_ERR_OUT_OF_MEMORY, "delegate 0");
        /* It is the backend that ran out: the runtime's own share was measured. */
        CHECK_CONTAINS(ember_last_error(), "no memory for the program");
        CHECK_EQ_INT(g_be.destroys, 0);
        ember_arena_init(&arena, arena_mem, need + 1024);
        if (CHECK_OK(ember_method_load(prog, "forward", &mem, &m))) {
            CHECK(arena.used > need); /* the delegates' copies live there */
            CHECK(run_delegated(m, "delegated", 2));
            ember_method_destroy(m);
        }
        ember_program_destroy(prog);
    }
    check_balanced("method arena");
    free(bytes);
}

/* Position of the k-th occurrence of pat (len bytes) in bytes, or SIZE_MAX. */
static size_t find_bytes(const uint8_t *bytes, size_t n, const void *pat, size_t len, int k) {
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(bytes + i, pat, len) == 0 && k-- == 0) return i;
    return SIZE_MAX;
}

/* The payload of delegate d: delegate 0 has 4 instructions, delegate 1 has 3
 * (the file order of inline payloads is the writer's business). */
static size_t find_payload(const uint8_t *bytes, size_t n, int d) {
    for (int k = 0; k < 4; k++) {
        size_t at = find_bytes(bytes, n, "EMBT", 4, k);
        if (at == SIZE_MAX || at + HEADER_BYTES > n) return SIZE_MAX;
        if (rd32(bytes + at + 16) == (d == 0 ? 4u : 3u)) return at;
    }
    return SIZE_MAX;
}

/* One edit of a delegated program's bytes and the message it must cause. */
typedef struct edit {
    const char *what;
    int payload;       /* edit in the payload of delegate 0 or 1; -1: at `find` */
    const char *find;  /* anchor string when payload is -1 */
    size_t at;         /* offset from the payload or anchor */
    size_t len;        /* bytes to write */
    const char *bytes; /* replacement */
    const char *msg;   /* expected in the message */
} edit;

static void test_bad_payloads(void) {
    /* Payload of delegate 0: regs 0,1 = h, y; 2 = CONST 2.0; 3 = MUL 0 2;
     * 4 = ADD 3 1; 5 = RELU 4. Delegate 1: 2 = SUB 0 1; 3 = RELU 2; 4 = MUL 3 0. */
    static const edit edits[] = {
        {"bad magic", 0, NULL, 3, 1, "X", "magic"},
        {"bad version", 1, NULL, 4, 2, "\x02\x00", "version"},
        {"more registers than max_regs", 0, NULL, 10, 2, "\x41\x00", "registers"},
        {"fewer registers than inputs", 0, NULL, 10, 2, "\x01\x00", "registers"},
        {"no outputs", 1, NULL, 8, 2, "\x00\x00", "outputs"},
        {"instruction count past the end", 0, NULL, 16, 4, "\x09\x00\x00\x00", "size"},
        {"huge instruction count", 1, NULL, 16, 4, "\xff\xff\xff\xff", "size"},
        {"unknown op", 1, NULL, 24, 1, "\x09", "unknown op"},
        {"op zero", 0, NULL, 24, 1, "\x00", "unknown op"},
        {"writes an input register", 1, NULL, 25, 1, "\x00", "destination"},
        {"reads an unwritten register", 1, NULL, 26, 1, "\x04", "before it is written"},
        {"reads past the registers", 1, NULL, 27, 1, "\xc8", "before it is written"},
        {"output from an unwritten register", 0, NULL, 20, 2, "\x3f\x00", "never written"},
        {"dtype spec float64", -1, "float32", 5, 2, "64", "float32"},
        {"unknown spec key", -1, "ember.max_regs", 13, 1, "x", "unknown compile spec"},
        {"dtype spec key renamed", -1, "ember.dtype", 6, 1, "D", "unknown compile spec"},
    };
    static const char *const files[] = {"delegated.pte", "delegated_inline.pte"};
    check_section("malformed payloads and compile specs fail init cleanly");
    for (size_t f = 0; f < 2; f++) {
        char path[128];
        size_t n = 0;
        snprintf(path, sizeof path, FIX "%s", files[f]);
        uint8_t *orig = test_read_file(path, &n);
        if (!CHECK(orig != NULL)) continue;
        uint8_t *bytes = aligned_alloc(64, (n + 63) / 64 * 64);
        for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
            const edit *ed = &edits[e];
            ember_buffer_loader bl;
            ember_program *prog = NULL;
            ember_method *m = NULL;
            char want_delegate[32];
            memcpy(bytes, orig, n);
            size_t at = ed->payload >= 0 ? find_payload(bytes, n, ed->payload)
                                         : find_bytes(bytes, n, ed->find, strlen(ed->find), 0);
            if (!CHECK_MSG(at != SIZE_MAX && at + ed->at + ed->len <= n, "%s: %s: anchor not found",
                           files[f], ed->what))
                continue;
            memcpy(bytes + at + ed->at, ed->bytes, ed->len);
            snprintf(want_delegate, sizeof want_delegate, "delegate %d", ed->payload);
            be_reset();
            ember_status st = load_method_from(bytes, n, &prog, &m, &bl);
            CHECK_MSG(st == EMBER_ERR_DELEGATE_FAILED, "%s / %s: status 0x%x (%s)", files[f], ed->what,
                      (unsigned)st, ember_last_error());
            CHECK_MSG(strstr(ember_last_error(), ed->msg) != NULL &&
                          strstr(ember_last_error(), ed->payload >= 0 ? want_delegate : "delegate ") != NULL &&
                          strstr(ember_last_error(), "EmberTestBackend") != NULL,
                      "%s / %s: message \"%s\"", files[f], ed->what, ember_last_error());
            CHECK(m == NULL);
            ember_method_destroy(m);
            ember_program_destroy(prog);
            check_balanced(ed->what);
        }
        /* The max_regs value ([u32 len 4][u32 64] in both delegates): 2 is
         * fewer registers than either payload uses. */
        {
            static const uint8_t val64[8] = {4, 0, 0, 0, 64, 0, 0, 0};
            ember_buffer_loader bl;
            ember_program *prog = NULL;
            ember_method *m = NULL;
            memcpy(bytes, orig, n);
            size_t a0 = find_bytes(bytes, n, val64, 8, 0), a1 = find_bytes(bytes, n, val64, 8, 1);
            if (CHECK(a0 != SIZE_MAX && a1 != SIZE_MAX && find_bytes(bytes, n, val64, 8, 2) == SIZE_MAX)) {
                bytes[a0 + 4] = 2;
                bytes[a1 + 4] = 2;
                be_reset();
                CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_DELEGATE_FAILED, "limit 2");
                ember_program_destroy(prog);
                /* And 0 is not a valid limit at all. */
                bytes[a0 + 4] = 0;
                bytes[a1 + 4] = 0;
                CHECK_ERR(load_method_from(bytes, n, &prog, &m, &bl), EMBER_ERR_DELEGATE_FAILED,
                          "ember.max_regs");
                ember_program_destroy(prog);
                check_balanced("max_regs");
            }
        }
        free(bytes);
        free(orig);
    }
}

static void test_execute_failure(void) {
    size_t n = 0;
    ember_buffer_loader bl;
    ember_program *prog;
    ember_method *m;
    check_section("execute failure names the delegate");
    uint8_t *bytes = test_read_file(FIX "delegated.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    be_reset();
    if (CHECK_OK(load_method_from(bytes, n, &prog, &m, &bl))) {
        CHECK(run_delegated(m, "delegated", 0));
        g_be.fail_execute_at = g_be.executes + 2; /* the second delegate of the next run */
        ember_status st = ember_method_execute(m);
        CHECK_STATUS(st, EMBER_ERR_DELEGATE_FAILED);
        const char *msg = ember_last_error();
        CHECK_CONTAINS(msg, "delegate 1");
        CHECK_CONTAINS(msg, "EmberTestBackend");
        CHECK_CONTAINS(msg, "debug handle");
        CHECK_CONTAINS(msg, "instruction");
        CHECK_CONTAINS(msg, "forward");
        /* The method still works afterwards. */
        CHECK(run_delegated(m, "delegated", 1));
        ember_method_destroy(m);
    }
    ember_program_destroy(prog);
    check_balanced("execute failure");
    free(bytes);
}

/* No platform heap: program, method and delegates on caller memory. */
static void *no_alloc(void *user, size_t size, size_t align) {
    (void)size, (void)align;
    ++*(int *)user;
    return NULL;
}

static void test_caller_memory(void) {
    static _Alignas(64) uint8_t prog_mem[32 * 1024], method_mem[64 * 1024], planned_mem[4096],
        scratch[16 * 1024];
    static int refused;
    static const ember_platform no_heap = {sizeof(ember_platform), &refused, NULL, NULL, NULL, no_alloc, NULL};
    size_t n = 0;
    check_section("delegated program on caller memory, no platform heap");
    uint8_t *bytes = test_read_file(FIX "delegated_inline.pte", &n);
    if (!CHECK(bytes != NULL)) return;
    ember_arena pa, ma;
    ember_buffer_loader bl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    ember_program_options opts = {sizeof opts, &pa.base};
    void *planned[1] = {planned_mem};
    ember_memory mem = {sizeof mem, &ma.base, planned, 1, scratch, sizeof scratch};
    be_reset();
    refused = 0;
    ember_platform_set(&no_heap);
    ember_arena_init(&pa, prog_mem, sizeof prog_mem);
    ember_arena_init(&ma, method_mem, sizeof method_mem);
    ember_buffer_loader_init(&bl, bytes, n);
    if (CHECK_OK(ember_program_load(&bl.base, &opts, &prog))) {
        size_t pb = 0;
        CHECK_OK(ember_program_planned_buffer_size(prog, "forward", 0, &pb));
        if (CHECK(pb <= sizeof planned_mem) && CHECK_OK(ember_method_load(prog, "forward", &mem, &m))) {
            for (int r = 0; r < 3; r++) CHECK(run_delegated(m, "delegated_inline", r));
            ember_method_destroy(m);
        }
        ember_program_destroy(prog);
    }
    ember_platform_set(NULL);
    CHECK_EQ_INT(refused, 0);
    check_balanced("caller memory");
    free(bytes);
}

int main(void) {
    CHECK_OK(ember_portable_kernels_register());
    CHECK_OK(ember_backend_register(&g_embt));
    CHECK(ember_backend_find("EmberTestBackend", 16) == &g_embt);
    test_manifest_flags();
    test_end_to_end();
    test_shared_workspace();
    test_payload_released();
    test_backend_missing();
    test_init_failures();
    test_bad_payloads();
    test_execute_failure();
    test_caller_memory();
    return check_finish();
}
