/*
 * Every case of tests/fixtures/manifest.txt: load the program, run the
 * case's runs in order on one loaded method, and compare each output with
 * the expected .npy (float: 1e-5 relative + 1e-6 absolute; other dtypes:
 * exact). Prints the largest absolute and relative error per case. Cases
 * that need a backend (backend=ID) run only if that backend is registered;
 * test_backend.c registers EmberTestBackend and runs them. Cases whose
 * weights live in .ptd files (data=FILE.ptd, repeatable) load each file as a
 * data map (memory-mapped) and pass the maps to the method.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/threadpool.h"
#include "kernels/optimized/cpu.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "npy.h"
#include "test_util.h"

#define FIX "tests/fixtures/"
#define MAX_IO 8
#define MAX_DATA 4
#define MAX_TOK 32

typedef struct run_spec {
    char *in[MAX_IO];
    size_t nin;
    char *out[MAX_IO];
    size_t nout;
} run_spec;

typedef struct case_spec {
    char name[64], program[128], method[64], backend[64];
    char data[MAX_DATA][128]; /* .ptd files */
    size_t ndata;
    double atol;              /* atol=X: float outputs within X (0: by dtype) */
    run_spec runs[16];
    size_t nruns;
} case_spec;

/* Splits line into whitespace-separated tokens (in place). */
static size_t tokenize(char *line, char **tok, size_t max) {
    size_t n = 0;
    for (char *p = strtok(line, " \t\r\n"); p != NULL; p = strtok(NULL, " \t\r\n")) {
        if (n == max) return max + 1;
        tok[n++] = p;
    }
    return n;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

static bool copy_field(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) return false;
    memcpy(dst, src, n + 1);
    return true;
}

/* Parses the manifest strictly; false (with a CHECK failure) on any oddity. */
static bool parse_manifest(const char *path, case_spec *cases, size_t cap, size_t *ncases) {
    FILE *f = fopen(path, "r");
    char line[2048];
    int lineno = 0;
    case_spec *cur = NULL;
    *ncases = 0;
    if (!CHECK_MSG(f != NULL, "cannot open %s", path)) return false;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f) != NULL) {
        char *tok[MAX_TOK + 1];
        lineno++;
        if (!CHECK_MSG(strchr(line, '\n') != NULL || feof(f), "%s:%d: line too long", path, lineno)) {
            ok = false;
            break;
        }
        if (line[0] == '#') continue;
        size_t n = tokenize(line, tok, MAX_TOK);
        if (n == 0) continue;
        if (n > MAX_TOK) {
            ok = CHECK_MSG(false, "%s:%d: too many tokens", path, lineno);
        } else if (strcmp(tok[0], "case") == 0) {
            ok = CHECK_MSG(cur == NULL, "%s:%d: case inside a case", path, lineno) &&
                 CHECK_MSG(n >= 4 && n <= 5 + MAX_DATA,
                           "%s:%d: case NAME PROGRAM METHOD [backend=ID] [data=FILE]...", path,
                           lineno) &&
                 CHECK_MSG(*ncases < cap, "%s:%d: too many cases", path, lineno);
            if (!ok) break;
            cur = &cases[(*ncases)++];
            memset(cur, 0, sizeof *cur);
            ok = CHECK(copy_field(cur->name, sizeof cur->name, tok[1])) &&
                 CHECK(copy_field(cur->program, sizeof cur->program, tok[2])) &&
                 CHECK(copy_field(cur->method, sizeof cur->method, tok[3]));
            for (size_t k = 4; ok && k < n; k++) {
                if (strncmp(tok[k], "backend=", 8) == 0 && tok[k][8] != '\0' && cur->backend[0] == '\0')
                    ok = CHECK(copy_field(cur->backend, sizeof cur->backend, tok[k] + 8));
                else if (strncmp(tok[k], "data=", 5) == 0 && tok[k][5] != '\0' && cur->ndata < MAX_DATA)
                    ok = CHECK(copy_field(cur->data[cur->ndata], sizeof cur->data[0], tok[k] + 5)) &&
                         (cur->ndata++, true);
                else if (strncmp(tok[k], "atol=", 5) == 0 && tok[k][5] != '\0')
                    ok = CHECK_MSG(sscanf(tok[k] + 5, "%lf", &cur->atol) == 1 && cur->atol > 0,
                                   "%s:%d: bad tolerance %s", path, lineno, tok[k]);
                else
                    ok = CHECK_MSG(false, "%s:%d: bad flag %s", path, lineno, tok[k]);
            }
        } else if (strcmp(tok[0], "run") == 0) {
            ok = CHECK_MSG(cur != NULL, "%s:%d: run outside a case", path, lineno) &&
                 CHECK_MSG(cur->nruns < sizeof cur->runs / sizeof cur->runs[0], "%s:%d: too many runs",
                           path, lineno);
            if (!ok) break;
            run_spec *r = &cur->runs[cur->nruns++];
            bool outputs = false;
            for (size_t k = 1; ok && k < n; k++) {
                if (strcmp(tok[k], "--") == 0) {
                    ok = CHECK_MSG(!outputs, "%s:%d: two separators", path, lineno);
                    outputs = true;
                } else if (!outputs) {
                    ok = CHECK(r->nin < MAX_IO);
                    if (ok) r->in[r->nin++] = dup_str(tok[k]);
                } else {
                    ok = CHECK(r->nout < MAX_IO);
                    if (ok) r->out[r->nout++] = dup_str(tok[k]);
                }
            }
            if (ok) ok = CHECK_MSG(outputs && r->nout > 0, "%s:%d: run without outputs", path, lineno);
        } else if (strcmp(tok[0], "end") == 0) {
            ok = CHECK_MSG(cur != NULL && n == 1, "%s:%d: stray end", path, lineno) &&
                 CHECK_MSG(cur->nruns > 0, "%s:%d: case without runs", path, lineno);
            cur = NULL;
        } else {
            ok = CHECK_MSG(false, "%s:%d: unknown line '%s'", path, lineno, tok[0]);
        }
    }
    fclose(f);
    if (ok) ok = CHECK_MSG(cur == NULL, "%s: last case has no end", path);
    return ok && CHECK_MSG(*ncases > 0, "%s: no cases", path);
}

static void free_cases(case_spec *cases, size_t n) {
    for (size_t c = 0; c < n; c++)
        for (size_t r = 0; r < cases[c].nruns; r++) {
            for (size_t k = 0; k < cases[c].runs[r].nin; k++) free(cases[c].runs[r].in[k]);
            for (size_t k = 0; k < cases[c].runs[r].nout; k++) free(cases[c].runs[r].out[k]);
        }
}

/* Compares an output with the expected array; tracks the largest errors. */
static bool compare(const ember_value *v, const npy_array *want, double case_atol,
                    const char *what, double *max_abs, double *max_rel) {
    if (!CHECK_MSG(v->tag == EMBER_TAG_TENSOR, "%s: output is not a tensor", what)) return false;
    const ember_tensor *t = v->u.t;
    if (!CHECK_MSG(t->dtype == want->dtype, "%s: dtype %s, expected %s", what,
                   ember_dtype_name(t->dtype), ember_dtype_name(want->dtype)) ||
        !CHECK_MSG(t->dim == want->dim, "%s: rank %u, expected %zu", what, t->dim, want->dim))
        return false;
    for (size_t d = 0; d < want->dim; d++)
        if (!CHECK_MSG(t->sizes[d] == want->shape[d], "%s: dim %zu is %d, expected %lld", what, d,
                       t->sizes[d], (long long)want->shape[d]))
            return false;
    if (!CHECK_MSG(ember_tensor_is_contiguous(t), "%s: output is not contiguous", what)) return false;
    bool is_float = want->dtype == EMBER_FLOAT32 || want->dtype == EMBER_FLOAT64 ||
                    want->dtype == EMBER_FLOAT16 || want->dtype == EMBER_BFLOAT16;
    double rtol = want->dtype == EMBER_FLOAT16 || want->dtype == EMBER_BFLOAT16 ? 1e-2 : 1e-5;
    double atol = want->dtype == EMBER_FLOAT16 || want->dtype == EMBER_BFLOAT16 ? 1e-3 : 1e-6;
    if (case_atol > 0) atol = case_atol; /* quantized programs: one output step */
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < want->numel; i++) {
        double g = test_elem_as_double(t->data, t->dtype, i), w = test_elem_as_double(want->data, want->dtype, i);
        double err = fabs(g - w);
        bool ok;
        if (is_float) {
            ok = err <= atol + rtol * fabs(w) || (isnan(g) && isnan(w)) || (g == w);
        } else {
            ok = g == w;
        }
        if (!isnan(err)) {
            if (err > *max_abs) *max_abs = err;
            double rel = err / (fabs(w) > 1e-30 ? fabs(w) : 1e-30);
            if (fabs(w) > atol && rel > *max_rel) *max_rel = rel;
        } else if (!ok) {
            *max_abs = INFINITY;
        }
        if (!ok && bad++ == 0) first_bad = i;
    }
    return CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ (first at %zu: got %.9g, want %.9g)",
                     what, bad, want->numel, first_bad,
                     bad ? test_elem_as_double(t->data, t->dtype, first_bad) : 0.0,
                     bad ? test_elem_as_double(want->data, want->dtype, first_bad) : 0.0);
}

/* Runs one case; returns false if it was skipped. */
static bool run_case(const case_spec *c, ember_threadpool *pool) {
    char path[512], err[256], what[512];
    ember_mmap_loader ml, data_loaders[MAX_DATA];
    ember_data_map *maps[MAX_DATA] = {NULL};
    size_t nmaps = 0;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    double max_abs = 0, max_rel = 0;
    bool all_ok = true;

    if (c->backend[0] != '\0' && ember_backend_find(c->backend, strlen(c->backend)) == NULL) {
        printf("  %-22s skipped: needs backend %s (run by test_backend)\n", c->name, c->backend);
        return false;
    }
    for (; nmaps < c->ndata; nmaps++) {
        snprintf(path, sizeof path, FIX "%s", c->data[nmaps]);
        if (!CHECK_OK(ember_mmap_loader_open(&data_loaders[nmaps], path))) break;
        if (!CHECK_OK(ember_data_map_open(&data_loaders[nmaps].base, NULL, &maps[nmaps]))) {
            ember_mmap_loader_close(&data_loaders[nmaps]);
            break;
        }
    }
    snprintf(path, sizeof path, FIX "%s", c->program);
    if (nmaps < c->ndata || !CHECK_OK(ember_mmap_loader_open(&ml, path))) {
        for (size_t k = 0; k < nmaps; k++) {
            ember_data_map_close(maps[k]);
            ember_mmap_loader_close(&data_loaders[k]);
        }
        return true;
    }
    if (CHECK_OK(ember_program_load(&ml.base, NULL, &prog)) &&
        CHECK_OK(ember_method_load_with(
            prog, c->method,
            &(ember_method_options){.struct_size = sizeof(ember_method_options), .threadpool = pool,
                                    .data_maps = (const ember_data_map *const *)maps,
                                    .num_data_maps = nmaps},
            &m))) {
        for (size_t r = 0; r < c->nruns; r++) {
            const run_spec *rs = &c->runs[r];
            npy_array in[MAX_IO];
            size_t loaded = 0;
            bool ok = CHECK_MSG(rs->nin == ember_method_input_count(m), "%s run %zu: %zu inputs, method has %zu",
                                c->name, r, rs->nin, ember_method_input_count(m)) &&
                      CHECK_MSG(rs->nout == ember_method_output_count(m),
                                "%s run %zu: %zu outputs, method has %zu", c->name, r, rs->nout,
                                ember_method_output_count(m));
            for (size_t k = 0; ok && k < rs->nin; k++) {
                snprintf(path, sizeof path, FIX "%s", rs->in[k]);
                ok = CHECK_MSG(npy_load(path, &in[k], err, sizeof err) == 0, "%s: %s", path, err);
                if (!ok) break;
                loaded++;
                ok = CHECK_OK(ember_method_set_input_tensor(m, k, (ember_dtype)in[k].dtype, in[k].shape,
                                                            in[k].dim, in[k].data, in[k].nbytes));
            }
            ok = ok && CHECK_OK(ember_method_execute(m));
            for (size_t k = 0; ok && k < rs->nout; k++) {
                npy_array want;
                const ember_value *v;
                snprintf(path, sizeof path, FIX "%s", rs->out[k]);
                if (!CHECK_MSG(npy_load(path, &want, err, sizeof err) == 0, "%s: %s", path, err)) {
                    ok = false;
                    break;
                }
                snprintf(what, sizeof what, "%s run %zu output %zu", c->name, r, k);
                ok = CHECK_OK(ember_method_output(m, k, &v)) &&
                     compare(v, &want, c->atol, what, &max_abs, &max_rel);
                npy_free(&want);
            }
            for (size_t k = 0; k < loaded; k++) npy_free(&in[k]);
            all_ok = all_ok && ok;
        }
    } else {
        all_ok = false;
    }
    printf("  %-22s %zu runs  max abs err %.3g  max rel err %.3g  %s\n", c->name, c->nruns, max_abs,
           max_rel, all_ok ? "ok" : "FAILED");
    ember_method_destroy(m);
    ember_program_destroy(prog);
    ember_mmap_loader_close(&ml);
    for (size_t k = 0; k < nmaps; k++) {
        ember_data_map_close(maps[k]);
        ember_mmap_loader_close(&data_loaders[k]);
    }
    return true;
}

int main(void) {
    static case_spec cases[64];
    size_t n = 0, ran = 0, plain = 0;
    CHECK_OK(ember_portable_kernels_register());
    CHECK_OK(ember_xnnpack_backend_register());
    check_section("fixtures of tests/fixtures/manifest.txt");
    if (parse_manifest(FIX "manifest.txt", cases, sizeof cases / sizeof cases[0], &n)) {
        for (size_t c = 0; c < n; c++) {
            if (cases[c].backend[0] == '\0') plain++;
            if (run_case(&cases[c], NULL)) ran++;
        }
        /* Every case that needs no backend ran. */
        CHECK_MSG(ran >= plain && plain >= 6, "%zu of %zu cases ran", ran, n);
        /* The CPU backend's cases again at every instruction-set level this
         * CPU has (weights are packed for the level in use at method load),
         * and on a pool of three threads. */
        ember_threadpool *pool = NULL;
        CHECK_OK(ember_threadpool_create(3, &pool));
        ember_threadpool_set_grain(pool, 1); /* split even the small fixtures */
        const eko_isa best = eko_isa_active();
        for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
            if (!eko_isa_supported((eko_isa)isa)) continue;
            char name[96];
            snprintf(name, sizeof name, "XnnpackBackend cases at %s, 1 and 3 threads",
                     eko_isa_name((eko_isa)isa));
            check_section(name);
            eko_isa_set((eko_isa)isa);
            for (size_t c = 0; c < n; c++)
                if (strcmp(cases[c].backend, "XnnpackBackend") == 0) {
                    run_case(&cases[c], NULL);
                    run_case(&cases[c], pool);
                }
        }
        eko_isa_set(best);
        ember_threadpool_destroy(pool);
    }
    free_cases(cases, n);
    return check_finish();
}
