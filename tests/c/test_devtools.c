/*
 * The event tracer and its ETDump writer: traces of portable and delegated
 * programs read back with ember's own flatbuffer reader (identifier, runs,
 * events and their fields), debug outputs against the method's outputs,
 * a tracer buffer too small at every size (clean status, a valid ETDump of
 * what was kept), ETDump output buffers too small at every size (nothing
 * written past them), bad arguments, and corrupted programs loaded with a
 * tracer attached.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/devtools.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "format/flatbuffer.h"
#include "npy.h"

#define FIX "tests/fixtures/"

#if EMBER_EVENT_TRACER

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

typedef struct file_bytes {
    uint8_t *bytes;
    size_t size;
} file_bytes;

static bool read_file(const char *rel, file_bytes *out) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s", rel);
    FILE *f = fopen(path, "rb");
    if (!CHECK_MSG(f != NULL, "cannot open %s", path)) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->size = (size_t)n;
    out->bytes = aligned_alloc(64, ((size_t)n + 63) / 64 * 64);
    bool ok = out->bytes != NULL && fread(out->bytes, 1, out->size, f) == out->size;
    fclose(f);
    return CHECK_MSG(ok, "cannot read %s", path);
}

/* Input arrays stay alive until free_inputs(): an unplanned input is bound,
 * not copied. */
static npy_array g_inputs[8];
static size_t g_num_inputs;

static void free_inputs(void) {
    for (size_t k = 0; k < g_num_inputs; k++) npy_free(&g_inputs[k]);
    g_num_inputs = 0;
}

static bool set_input(ember_method *m, size_t i, const char *rel) {
    char path[256], err[256];
    if (!CHECK(g_num_inputs < sizeof g_inputs / sizeof g_inputs[0])) return false;
    npy_array *a = &g_inputs[g_num_inputs];
    snprintf(path, sizeof path, FIX "%s", rel);
    if (!CHECK_MSG(npy_load(path, a, err, sizeof err) == 0, "%s: %s", path, err)) return false;
    g_num_inputs++;
    return CHECK_OK(ember_method_set_input_tensor(m, i, (ember_dtype)a->dtype, a->shape, a->dim,
                                                  a->data, a->nbytes));
}

/* A parsed ETDump: the reader over the bytes after the size prefix. */
typedef struct etdump {
    fb_reader r;
    fb_vec runs;
} etdump;

static bool parse(const uint8_t *buf, size_t size, etdump *d) {
    fb_table root;
    bool present;
    if (!CHECK(size >= 12)) return false;
    if (!CHECK_MSG(fb_rd_u32(buf) == size - 4, "size prefix %u, want %zu", fb_rd_u32(buf),
                   size - 4))
        return false;
    if (!CHECK(memcmp(buf + 8, "ED00", 4) == 0)) return false;
    d->r.buf = buf + 4;
    d->r.size = size - 4;
    uint32_t version = 99;
    return CHECK(fb_root(&d->r, &root)) && CHECK(fb_u32(&d->r, &root, 0, 0, &version)) &&
           CHECK_EQ_INT(version, 0) &&
           CHECK(fb_vec_field(&d->r, &root, 1, 4, &d->runs, &present)) && CHECK(present);
}

/* Run i: its name and events. */
static bool run_at(const etdump *d, uint32_t i, fb_str *name, fb_vec *events) {
    fb_table run;
    bool present;
    return CHECK(fb_vec_table(&d->r, &d->runs, i, &run)) &&
           CHECK(fb_str_field(&d->r, &run, 0, name, &present)) && CHECK(present) &&
           CHECK(fb_vec_field(&d->r, &run, 3, 4, events, &present));
}

/* What one event says, for the checks below. */
typedef struct event_info {
    int kind; /* 0 profile, 1 allocation, 2 debug */
    char name[64];
    int32_t chain, instruction, delegate_int;
    uint64_t start, end;
    uint8_t vtype, dtype, output;
    int64_t offset;
    uint32_t dim;
    int64_t sizes[8];
} event_info;

static bool event_at(const etdump *d, const fb_vec *events, uint32_t i, event_info *e) {
    const fb_reader *r = &d->r;
    fb_table ev, t;
    fb_str s;
    bool present = false;
    memset(e, 0, sizeof *e);
    if (!CHECK(fb_vec_table(r, events, i, &ev))) return false;
    for (e->kind = 0; e->kind < 3; e->kind++) {
        if (!CHECK(fb_table_field(r, &ev, (unsigned)e->kind, &t, &present))) return false;
        if (present) break;
    }
    if (!CHECK_MSG(present, "event %u has no member", i)) return false;
    if (e->kind == 0) {
        if (!CHECK(fb_str_field(r, &t, 0, &s, &present))) return false;
        if (present) snprintf(e->name, sizeof e->name, "%.*s", (int)s.len, s.data);
        return CHECK(fb_i32(r, &t, 1, 0, &e->chain)) &&
               CHECK(fb_i32(r, &t, 2, -1, &e->instruction)) &&
               CHECK(fb_i32(r, &t, 3, -1, &e->delegate_int)) &&
               CHECK(fb_u64(r, &t, 6, 0, &e->start)) && CHECK(fb_u64(r, &t, 7, 0, &e->end));
    }
    if (e->kind == 1) return true;
    uint64_t chain;
    fb_table val, tn, out;
    fb_vec sizes;
    if (!CHECK(fb_u64(r, &t, 0, 0, &chain)) || !CHECK(fb_i32(r, &t, 1, -1, &e->instruction)) ||
        !CHECK(fb_i32(r, &t, 3, -1, &e->delegate_int)) ||
        !CHECK(fb_str_field(r, &t, 5, &s, &present)))
        return false;
    e->chain = (int32_t)chain;
    if (present) snprintf(e->name, sizeof e->name, "%.*s", (int)s.len, s.data);
    if (!CHECK(fb_table_field(r, &t, 2, &val, &present)) || !CHECK(present) ||
        !CHECK(fb_u8(r, &val, 0, 0, &e->vtype)) ||
        !CHECK(fb_table_field(r, &val, 7, &out, &present)) || !CHECK(present) ||
        !CHECK(fb_u8(r, &out, 0, 0, &e->output)))
        return false;
    if (e->vtype != 5) return true;
    if (!CHECK(fb_table_field(r, &val, 1, &tn, &present)) || !CHECK(present) ||
        !CHECK(fb_u8(r, &tn, 0, 0, &e->dtype)) || !CHECK(fb_i64(r, &tn, 3, 0, &e->offset)) ||
        !CHECK(fb_vec_field(r, &tn, 1, 8, &sizes, &present)))
        return false;
    e->dim = sizes.len;
    for (uint32_t k = 0; k < sizes.len && k < 8; k++) e->sizes[k] = fb_vec_i64(r, &sizes, k);
    return true;
}

/* The whole trace as bytes (heap, for the test only). */
static uint8_t *write_all(const ember_event_tracer *t, size_t *size) {
    size_t need = 0;
    if (!CHECK_OK(ember_etdump_write(t, NULL, 0, &need))) return NULL;
    uint8_t *buf = aligned_alloc(8, (need + 7) / 8 * 8);
    if (!CHECK_OK(ember_etdump_write(t, buf, need, size)) || !CHECK_EQ_INT(*size, need)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Loads a fixture's method with a tracer attached at load. */
static bool load_traced(const file_bytes *fb, ember_buffer_loader *bl, ember_program **prog,
                        ember_event_tracer *t, ember_method **m) {
    ember_buffer_loader_init(bl, fb->bytes, fb->size);
    if (!CHECK_OK(ember_program_load(&bl->base, NULL, prog))) return false;
    ember_method_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.event_tracer = t;
    return CHECK_OK(ember_method_load_with(*prog, "forward", &o, m));
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */
/* ---------------------------------------------------------------------- */

static uint8_t g_trace[1 << 20];
static uint8_t g_debug[1 << 20];

static void test_portable_trace(void) {
    check_section("portable program: load, two runs, debug outputs");
    file_bytes fb;
    ember_buffer_loader bl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    ember_event_tracer *t = NULL;
    if (!read_file("mlp.pte", &fb)) return;
    uint32_t flags = EMBER_TRACE_PROFILE | EMBER_TRACE_ALLOCATIONS | EMBER_TRACE_DEBUG_OUTPUTS |
                     EMBER_TRACE_PROGRAM_OUTPUTS;
    /* any alignment will do */
    CHECK_OK(ember_event_tracer_init(g_trace + 3, sizeof g_trace - 3, flags, &t));
    CHECK_OK(ember_event_tracer_set_debug_buffer(t, g_debug, sizeof g_debug));
    if (!load_traced(&fb, &bl, &prog, t, &m)) return;
    for (int run = 0; run < 2; run++) {
        set_input(m, 0, run == 0 ? "mlp/forward.run0.in0.npy" : "mlp/forward.run1.in0.npy");
        CHECK_OK(ember_method_execute(m));
    }
    CHECK_OK(ember_event_tracer_status(t));
    ember_event_tracer_stats stats;
    CHECK_OK(ember_event_tracer_get_stats(t, &stats));
    CHECK_EQ_INT(stats.runs, 3);
    CHECK_EQ_INT(stats.dropped, 0);
    CHECK(stats.debug_used > 0);

    size_t size = 0;
    uint8_t *buf = write_all(t, &size);
    etdump d;
    if (buf == NULL || !parse(buf, size, &d)) return;
    CHECK_EQ_INT(d.runs.len, 3);
    fb_str name;
    fb_vec events;
    event_info e;
    /* the load: method-level events and allocations */
    if (run_at(&d, 0, &name, &events)) {
        CHECK_EQ_STR(name.data, "load:forward");
        int profiles = 0, allocs = 0;
        bool saw_load = false, saw_init = false;
        for (uint32_t i = 0; i < events.len && event_at(&d, &events, i, &e); i++) {
            profiles += e.kind == 0;
            allocs += e.kind == 1;
            saw_load |= e.kind == 0 && strcmp(e.name, "Program::load_method") == 0;
            saw_init |= e.kind == 0 && strcmp(e.name, "Method::init") == 0;
            if (e.kind == 0) CHECK(e.end >= e.start);
        }
        CHECK(saw_load);
        CHECK(saw_init);
        CHECK(profiles >= 2); /* the load and the init, at least */
        CHECK(allocs > 0);
    }
    /* each run: one profile and one debug event per kernel instruction, the
     * execute, and the program output */
    for (uint32_t r = 1; r < 3; r++) {
        if (!run_at(&d, r, &name, &events)) continue;
        CHECK_EQ_STR(name.data, "forward");
        int kernels = 0, debug = 0, outputs = 0, executes = 0;
        for (uint32_t i = 0; i < events.len && event_at(&d, &events, i, &e); i++) {
            if (e.kind == 0 && e.instruction >= 0) {
                kernels++;
                CHECK_CONTAINS(e.name, "aten::");
                CHECK_EQ_INT(e.chain, 0);
                CHECK_EQ_INT(e.delegate_int, -1);
            }
            executes += e.kind == 0 && strcmp(e.name, "Method::execute") == 0;
            if (e.kind == 2 && !e.output) {
                debug++;
                CHECK_EQ_INT(e.vtype, 5);
                CHECK_EQ_INT(e.dtype, EMBER_FLOAT32);
                CHECK(e.offset % 64 == 0);
            }
            if (e.kind == 2 && e.output) {
                outputs++;
                /* the recorded output equals the method's (after the last run) */
                const ember_value *v;
                if (r == 2 && CHECK_OK(ember_method_output(m, 0, &v))) {
                    CHECK_EQ_INT(e.dim, v->u.t->dim);
                    CHECK_EQ_INT(e.sizes[0], v->u.t->sizes[0]);
                    CHECK(memcmp(g_debug + e.offset, v->u.t->data, v->u.t->nbytes) == 0);
                }
            }
        }
        CHECK_EQ_INT(executes, 1);
        CHECK(kernels >= 5); /* 3 linear + 2 relu, at least */
        CHECK_EQ_INT(debug, kernels);
        CHECK_EQ_INT(outputs, 1);
    }
    free(buf);
    /* detached: nothing more is recorded */
    CHECK_OK(ember_method_set_event_tracer(m, NULL));
    CHECK_OK(ember_event_tracer_get_stats(t, &stats));
    size_t before = stats.events;
    CHECK_OK(ember_method_execute(m));
    CHECK_OK(ember_event_tracer_get_stats(t, &stats));
    CHECK_EQ_INT(stats.events, before);
    ember_method_destroy(m);
    ember_program_destroy(prog);
    free_inputs();
    free(fb.bytes);
}

static void test_delegated_trace(void) {
    check_section("delegated program: one event per XNNPACK node, by debug handle");
    file_bytes fb;
    ember_buffer_loader bl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    ember_event_tracer *t = NULL;
    if (!read_file("xnnpack_cnn.pte", &fb)) return;
    CHECK_OK(ember_event_tracer_init(g_trace, sizeof g_trace, EMBER_TRACE_PROFILE, &t));
    if (!load_traced(&fb, &bl, &prog, t, &m)) return;
    set_input(m, 0, "xnnpack_cnn/forward.run0.in0.npy");
    CHECK_OK(ember_method_execute(m));
    size_t size = 0;
    uint8_t *buf = write_all(t, &size);
    etdump d;
    fb_str name;
    fb_vec events;
    event_info e;
    if (buf == NULL || !parse(buf, size, &d) || !CHECK_EQ_INT(d.runs.len, 2) ||
        !run_at(&d, 1, &name, &events))
        return;
    int delegate_calls = 0, nodes = 0;
    int32_t call_instr = -1;
    for (uint32_t i = 0; i < events.len && event_at(&d, &events, i, &e); i++) {
        if (e.kind != 0) continue;
        if (strcmp(e.name, "DELEGATE_CALL") == 0) {
            delegate_calls++;
            call_instr = e.instruction;
        } else if (e.delegate_int >= 0) {
            nodes++;
            CHECK(e.instruction >= 0);
            CHECK(e.name[0] != '\0'); /* the node type */
            CHECK(e.end >= e.start);
        }
    }
    CHECK(delegate_calls >= 1);
    CHECK(nodes >= 3);
    CHECK(call_instr >= 0);
    free(buf);
    ember_method_destroy(m);
    ember_program_destroy(prog);
    free_inputs();
    free(fb.bytes);
}

static void test_delegated_outputs(void) {
    check_section("delegated program: each XNNPACK node's output, by debug handle");
    file_bytes fb;
    ember_buffer_loader bl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    ember_event_tracer *t = NULL;
    if (!read_file("xnnpack_cnn.pte", &fb)) return;
    CHECK_OK(ember_event_tracer_init(g_trace, sizeof g_trace,
                                     EMBER_TRACE_PROFILE | EMBER_TRACE_DEBUG_OUTPUTS, &t));
    CHECK_OK(ember_event_tracer_set_debug_buffer(t, g_debug, sizeof g_debug));
    if (!load_traced(&fb, &bl, &prog, t, &m)) return;
    set_input(m, 0, "xnnpack_cnn/forward.run0.in0.npy");
    CHECK_OK(ember_method_execute(m));
    CHECK_OK(ember_event_tracer_status(t));
    const void *dbg;
    size_t dbg_size;
    CHECK_OK(ember_event_tracer_debug_data(t, &dbg, &dbg_size));
    const ember_tensor *out = NULL;
    const ember_value *ov = NULL;
    if (CHECK_OK(ember_method_output(m, 0, &ov)) && CHECK(ov->tag == EMBER_TAG_TENSOR))
        out = ov->u.t;
    size_t size = 0;
    uint8_t *buf = write_all(t, &size);
    etdump d;
    fb_str name;
    fb_vec events;
    event_info e;
    if (buf == NULL || !parse(buf, size, &d) || !run_at(&d, 1, &name, &events)) return;
    int node_outputs = 0, matched = 0, last_matches = 0;
    int32_t last_profiled = -2;
    for (uint32_t i = 0; i < events.len && event_at(&d, &events, i, &e); i++) {
        if (e.kind == 0) last_profiled = e.delegate_int;
        if (e.kind != 2 || e.delegate_int < 0) continue;
        node_outputs++;
        /* right after the profile event of the node that made it */
        matched += last_profiled == e.delegate_int;
        CHECK(e.instruction >= 0 && e.vtype == 5 && e.dim >= 1);
        size_t numel = 1;
        for (uint32_t k = 0; k < e.dim; k++) numel *= (size_t)e.sizes[k];
        CHECK(e.offset >= 0 && (size_t)e.offset + 4 * numel <= dbg_size);
        /* the delegate's last node writes the method's output */
        if (out != NULL && e.dtype == EMBER_FLOAT32 && numel == (size_t)out->numel &&
            memcmp((const uint8_t *)dbg + e.offset, out->data, out->nbytes) == 0)
            last_matches = 1;
    }
    CHECK(node_outputs >= 5);
    CHECK_EQ_INT(matched, node_outputs);
    CHECK(last_matches);
    free(buf);
    /* outside a delegate call, reporting an output is a no-op */
    CHECK(!ember_backend_tracing_outputs());
    CHECK_OK(ember_backend_log_output("x", 1, NULL, NULL));
    ember_method_destroy(m);
    ember_program_destroy(prog);
    free_inputs();
    free(fb.bytes);
}

/* Every tracer size from the minimum up: execute succeeds, the status says
 * whether events were dropped, and the ETDump of what was kept is valid. */
static void test_buffer_full(const char *pte, const char *input) {
    char title[96];
    snprintf(title, sizeof title, "tracer buffer full at every size: %s", pte);
    check_section(title);
    file_bytes fb;
    ember_buffer_loader bl;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    if (!read_file(pte, &fb)) return;
    ember_buffer_loader_init(&bl, fb.bytes, fb.size);
    if (!CHECK_OK(ember_program_load(&bl.base, NULL, &prog)) ||
        !CHECK_OK(ember_method_load(prog, "forward", NULL, &m)))
        return;
    set_input(m, 0, input);
    static uint8_t small[8192], debug[2048];
    int failures = 0, full = 0;
    for (size_t n = EMBER_EVENT_TRACER_MIN_SIZE; n <= sizeof small; n += 24) {
        ember_event_tracer *t;
        uint32_t flags =
            EMBER_TRACE_PROFILE | EMBER_TRACE_DEBUG_OUTPUTS | EMBER_TRACE_PROGRAM_OUTPUTS;
        memset(small, 0xAB, sizeof small);
        if (!CHECK_OK(ember_event_tracer_init(small, n, flags, &t))) return;
        ember_event_tracer_set_debug_buffer(t, debug, (n / 8) % sizeof debug);
        ember_method_set_event_tracer(m, t);
        failures += ember_method_execute(m) != EMBER_OK;
        failures += ember_method_execute(m) != EMBER_OK;
        /* nothing written past the tracer's buffer */
        for (size_t k = n; k < sizeof small; k++) failures += small[k] != 0xAB;
        ember_status st = ember_event_tracer_status(t);
        ember_event_tracer_stats s;
        ember_event_tracer_get_stats(t, &s);
        full += st != EMBER_OK;
        failures += (st == EMBER_OK) != (s.dropped == 0);
        failures += s.bytes_used > s.bytes_total;
        size_t size = 0;
        uint8_t *buf = write_all(t, &size);
        etdump d;
        if (buf == NULL || !parse(buf, size, &d)) {
            failures++;
        } else {
            fb_str name;
            fb_vec events;
            event_info e;
            for (uint32_t r = 0; r < d.runs.len && run_at(&d, r, &name, &events); r++)
                for (uint32_t i = 0; i < events.len; i++) failures += !event_at(&d, &events, i, &e);
        }
        free(buf);
    }
    CHECK_EQ_INT(failures, 0);
    CHECK(full > 0);
    ember_event_tracer *none = NULL;
    CHECK_ERR(ember_event_tracer_init(small, EMBER_EVENT_TRACER_MIN_SIZE - 1, 0, &none),
              EMBER_ERR_OUT_OF_MEMORY, "at least");
    ember_method_destroy(m);
    ember_program_destroy(prog);
    free_inputs();
    free(fb.bytes);
}

/* ETDump output buffers one byte short, or smaller: a clean status, the
 * size needed, and no byte written past cap. */
static void test_output_too_small(void) {
    check_section("ETDump output buffer too small at every size");
    ember_event_tracer *t;
    uint32_t token;
    CHECK_OK(ember_event_tracer_init(g_trace, 64 * 1024, EMBER_TRACE_PROFILE, &t));
    CHECK_OK(ember_event_tracer_set_bundled_input(t, 3));
    CHECK_OK(ember_event_tracer_begin_run(t, "app"));
    CHECK_OK(ember_event_tracer_start_profiling(t, "step", &token));
    CHECK_OK(ember_event_tracer_end_profiling(t, token));
    CHECK_ERR(ember_event_tracer_end_profiling(t, 999), EMBER_ERR_INVALID_ARGUMENT, "token");
    size_t need = 0, got = 0;
    CHECK_OK(ember_etdump_write(t, NULL, 0, &need));
    static uint8_t out[4096];
    int failures = 0;
    for (size_t cap = 1; cap < need; cap++) {
        memset(out, 0xCD, sizeof out);
        failures += ember_etdump_write(t, out, cap, &got) != EMBER_ERR_OUT_OF_MEMORY;
        failures += got != need;
        for (size_t k = cap; k < sizeof out; k++) failures += out[k] != 0xCD;
    }
    CHECK_EQ_INT(failures, 0);
    CHECK_OK(ember_etdump_write(t, out, need, &got));
    etdump d;
    fb_str name;
    fb_vec events;
    event_info e;
    if (parse(out, got, &d) && CHECK_EQ_INT(d.runs.len, 1) && run_at(&d, 0, &name, &events) &&
        CHECK_EQ_INT(events.len, 1) && event_at(&d, &events, 0, &e)) {
        CHECK_EQ_STR(name.data, "app");
        CHECK_EQ_STR(e.name, "step");
        fb_table run;
        int32_t bundled = -1;
        if (CHECK(fb_vec_table(&d.r, &d.runs, 0, &run)) &&
            CHECK(fb_i32(&d.r, &run, 1, -1, &bundled)))
            CHECK_EQ_INT(bundled, 3);
        CHECK(e.end >= e.start);
    }
    /* reset forgets everything; an empty trace is still a valid ETDump */
    ember_event_tracer_reset(t);
    CHECK_OK(ember_etdump_write(t, out, sizeof out, &got));
    if (parse(out, got, &d)) CHECK_EQ_INT(d.runs.len, 0);
}

static void test_bad_arguments(void) {
    check_section("bad arguments");
    ember_event_tracer *t = NULL;
    size_t n;
    uint64_t num, den;
    CHECK_ERR(ember_event_tracer_init(NULL, 4096, 0, &t), EMBER_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_ERR(ember_event_tracer_init(g_trace, 4096, 0x1000, &t), EMBER_ERR_INVALID_ARGUMENT,
              "flags");
    CHECK_STATUS(ember_event_tracer_init(g_trace, 4096, 0, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_etdump_write(NULL, NULL, 0, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_event_tracer_status(NULL), EMBER_ERR_INVALID_ARGUMENT);
    /* memory that is not a tracer is refused, not trusted */
    uint64_t junk[64];
    memset(junk, 0x5A, sizeof junk);
    CHECK_STATUS(ember_etdump_write((const ember_event_tracer *)(void *)junk, NULL, 0, &n),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_method_set_event_tracer(NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(ember_event_tracer_init(g_trace, 4096, 0, &t));
    CHECK_OK(ember_event_tracer_time_scale(t, &num, &den));
    CHECK(num == 1 && den == 1);
    CHECK_STATUS(ember_event_tracer_set_debug_buffer(t, NULL, 10), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_etdump_write(t, NULL, 10, &n), EMBER_ERR_INVALID_ARGUMENT);
    ember_event_tracer_reset(NULL);
}

/* Corrupted programs loaded with a tracer attached: load fails or succeeds
 * cleanly, and the trace stays writable and valid. */
static void test_corrupted_program(void) {
    check_section("corrupted programs with a tracer");
    file_bytes fb;
    if (!read_file("mlp.pte", &fb)) return;
    uint8_t *copy = aligned_alloc(64, (fb.size + 63) / 64 * 64);
    int failures = 0;
    ember_event_tracer *t;
    CHECK_OK(ember_event_tracer_init(g_trace, sizeof g_trace,
                                     EMBER_TRACE_PROFILE | EMBER_TRACE_ALLOCATIONS, &t));
    for (size_t k = 0; k < fb.size; k += 97) {
        memcpy(copy, fb.bytes, fb.size);
        copy[k] ^= 0xFF;
        ember_buffer_loader bl;
        ember_program *prog = NULL;
        ember_method *m = NULL;
        ember_buffer_loader_init(&bl, copy, fb.size);
        if (ember_program_load(&bl.base, NULL, &prog) != EMBER_OK) continue;
        ember_method_options o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.event_tracer = t;
        if (ember_method_load_with(prog, "forward", &o, &m) == EMBER_OK) ember_method_destroy(m);
        ember_program_destroy(prog);
    }
    size_t size = 0;
    uint8_t *buf = write_all(t, &size);
    etdump d;
    failures += buf == NULL || !parse(buf, size, &d);
    free(buf);
    CHECK_EQ_INT(failures, 0);
    free(copy);
    free(fb.bytes);
}

int main(void) {
    ember_portable_kernels_register();
    ember_xnnpack_backend_register();
    test_portable_trace();
    test_delegated_trace();
    test_delegated_outputs();
    test_buffer_full("mlp.pte", "mlp/forward.run0.in0.npy");
    test_buffer_full("xnnpack_cnn.pte", "xnnpack_cnn/forward.run0.in0.npy");
    test_output_too_small();
    test_bad_arguments();
    test_corrupted_program();
    return check_finish();
}

#else /* !EMBER_EVENT_TRACER */

int main(void) {
    check_section("tracer compiled out");
    ember_event_tracer *t = NULL;
    static uint8_t buf[4096];
    size_t n;
    CHECK_STATUS(ember_event_tracer_init(buf, sizeof buf, EMBER_TRACE_PROFILE, &t),
                 EMBER_ERR_NOT_SUPPORTED);
    CHECK(t == NULL);
    CHECK_STATUS(ember_etdump_write(t, NULL, 0, &n), EMBER_ERR_NOT_SUPPORTED);
    CHECK(!ember_backend_tracing());
    CHECK(!ember_backend_tracing_outputs());
    CHECK_OK(ember_backend_log_event("x", 1, NULL, 0, 1, NULL, 0));
    CHECK_OK(ember_backend_log_output("x", 1, NULL, NULL));
    return check_finish();
}

#endif /* EMBER_EVENT_TRACER */
