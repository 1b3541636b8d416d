/*
 * Runs the programs that tests/python/ops/test_op_samples.py exported from
 * PyTorch's OpInfo samples of the core ATen ops, and compares every output
 * with eager PyTorch's, at the tolerance the manifest gives (floats:
 * |got - want| <= atol + rtol * |want|, NaN where and only where eager has
 * NaN; integers and bool: exact). Its purpose is to run the whole sample set
 * through the C library alone, so that the sanitizer build sees every
 * kernel on every sample.
 *
 * The directory is $EMBER_OP_SAMPLES, else build/op-samples (relative to the
 * source tree); the test is skipped with a message when it has no manifest
 * (pytest writes it). Manifest (see tests/python/ops/op_harness.py):
 *
 *     program NAME.pte
 *     in FILE.npy DTYPE                     one per method input, in order
 *     out FILE.npy DTYPE RTOL ATOL CHECK    one per output; CHECK is values,
 *     end                                   shape (random or uninitialized
 *                                           data) or skip (failed in Python)
 *
 * DTYPE is the ember dtype code; bfloat16 arrays are stored as uint16 bits.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "npy.h"
#include "test_util.h"

#define MAX_TOK 8
#define PATH_CAP 1024

typedef struct sample_dir {
    const char *root;
    char path[PATH_CAP];
} sample_dir;

/* root/name in d->path; false (with a CHECK failure) if it does not fit. */
static const char *dir_path(sample_dir *d, const char *name) {
    int n = snprintf(d->path, sizeof d->path, "%s/%s", d->root, name);
    if (!CHECK_MSG(n > 0 && (size_t)n < sizeof d->path, "path too long: %s/%s", d->root, name))
        return NULL;
    return d->path;
}

/* One program being run: its method and the inputs it aliases. */
typedef struct program_run {
    char name[256];
    ember_mmap_loader loader;
    bool loader_open;
    ember_program *program;
    ember_method *method;
    npy_array *inputs; /* inputs[0..ninputs), owned */
    size_t ninputs, cap_inputs;
    size_t noutputs;
    bool executed, broken;
} program_run;

typedef struct totals {
    size_t programs, outputs_values, outputs_shape, outputs_skipped, failed_programs;
} totals;

static void run_close(program_run *r) {
    ember_method_destroy(r->method);
    ember_program_destroy(r->program);
    if (r->loader_open) ember_mmap_loader_close(&r->loader);
    for (size_t i = 0; i < r->ninputs; i++) npy_free(&r->inputs[i]);
    free(r->inputs);
    memset(r, 0, sizeof *r);
}

static bool run_open(program_run *r, sample_dir *d, const char *name) {
    memset(r, 0, sizeof *r);
    if (!CHECK_MSG(strlen(name) < sizeof r->name, "program name too long: %s", name)) return false;
    memcpy(r->name, name, strlen(name) + 1);
    const char *path = dir_path(d, name);
    if (path == NULL || !CHECK_OK(ember_mmap_loader_open(&r->loader, path))) return false;
    r->loader_open = true;
    return CHECK_OK(ember_program_load(&r->loader.base, NULL, &r->program)) &&
           CHECK_OK(ember_method_load(r->program, "forward", NULL, &r->method));
}

static int parse_dtype(const char *s) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return end != s && *end == '\0' && v >= 0 && v < 64 ? (int)v : -1;
}

/* The npy reader sees bfloat16 bits as uint16; anything else must match. */
static bool dtype_matches(const npy_array *a, int dtype) {
    return a->dtype == dtype || (dtype == EMBER_BFLOAT16 && a->dtype == EMBER_UINT16);
}

static bool add_input(program_run *r, sample_dir *d, const char *file, int dtype) {
    char err[256];
    if (r->ninputs == r->cap_inputs) {
        size_t cap = r->cap_inputs ? r->cap_inputs * 2 : 64;
        npy_array *grown = realloc(r->inputs, cap * sizeof *grown);
        if (!CHECK_MSG(grown != NULL, "out of memory")) return false;
        r->inputs = grown;
        r->cap_inputs = cap;
    }
    npy_array *a = &r->inputs[r->ninputs];
    const char *path = dir_path(d, file);
    if (path == NULL || !CHECK_MSG(npy_load(path, a, err, sizeof err) == 0, "%s: %s", file, err))
        return false;
    r->ninputs++;
    if (!CHECK_MSG(dtype_matches(a, dtype), "%s: dtype %d in the manifest, %s in the file", file,
                   dtype, ember_dtype_name(a->dtype)))
        return false;
    /* Unplanned inputs alias the array, which lives until the program closes. */
    return CHECK_OK(ember_method_set_input_tensor(r->method, r->ninputs - 1, (ember_dtype)dtype,
                                                  a->shape, a->dim, a->data, a->nbytes));
}

static bool is_float(int dtype) {
    return dtype == EMBER_FLOAT32 || dtype == EMBER_FLOAT64 || dtype == EMBER_FLOAT16 ||
           dtype == EMBER_BFLOAT16;
}

/* Element offset of the i-th element in row-major order, for any dim order. */
static int64_t strided_offset(const ember_tensor *t, size_t i) {
    int64_t off = 0;
    for (size_t d = t->dim; d-- > 0;) {
        int64_t size = t->sizes[d];
        off += (int64_t)(i % (size_t)size) * t->strides[d];
        i /= (size_t)size;
    }
    return off;
}

/* Compares output k of r with the expected array at the given tolerance. */
static bool compare(const program_run *r, size_t k, const ember_tensor *t, const npy_array *want,
                    int dtype, double rtol, double atol, bool values) {
    if (!CHECK_MSG(t->dtype == dtype, "%s output %zu: dtype %s, expected %s", r->name, k,
                   ember_dtype_name(t->dtype), ember_dtype_name(dtype)) ||
        !CHECK_MSG(t->dim == want->dim, "%s output %zu: rank %u, expected %zu", r->name, k,
                   t->dim, want->dim))
        return false;
    for (size_t d = 0; d < want->dim; d++)
        if (!CHECK_MSG(t->sizes[d] == want->shape[d], "%s output %zu: dim %zu is %d, expected %lld",
                       r->name, k, d, t->sizes[d], (long long)want->shape[d]))
            return false;
    if (!values) return true;
    /* An output may have another dim order (channels-last); the expected
     * array is row-major, so walk the output by its strides. */
    size_t bad = 0, first = 0;
    if (is_float(dtype)) {
        for (size_t i = 0; i < want->numel; i++) {
            double g = test_elem_as_double(t->data, dtype, (size_t)strided_offset(t, i));
            double w = test_elem_as_double(want->data, dtype, i);
            bool ok = isnan(w) ? isnan(g) : (g == w || fabs(g - w) <= atol + rtol * fabs(w));
            if (!ok && bad++ == 0) first = i;
        }
        double g = bad ? test_elem_as_double(t->data, dtype, (size_t)strided_offset(t, first)) : 0.0;
        double w = bad ? test_elem_as_double(want->data, dtype, first) : 0.0;
        return CHECK_MSG(bad == 0, "%s output %zu: %zu of %zu elements differ (first at %zu: got "
                         "%.9g, want %.9g)", r->name, k, bad, want->numel, first, g, w);
    }
    /* Integers and bool: bit-exact, element by element. */
    size_t es = ember_dtype_size(dtype);
    const unsigned char *g = t->data, *w = want->data;
    for (size_t i = 0; i < want->numel; i++)
        if (memcmp(g + (size_t)strided_offset(t, i) * es, w + i * es, es) != 0 && bad++ == 0)
            first = i;
    return CHECK_MSG(bad == 0, "%s output %zu: %zu of %zu elements differ (first at %zu)", r->name,
                     k, bad, want->numel, first);
}

static bool check_output(program_run *r, sample_dir *d, char **tok, totals *tot) {
    char err[256];
    int dtype = parse_dtype(tok[2]);
    double rtol = strtod(tok[3], NULL), atol = strtod(tok[4], NULL);
    const char *mode = tok[5];
    bool values = strcmp(mode, "values") == 0;
    size_t k = r->noutputs++;
    if (!CHECK_MSG(dtype >= 0, "bad dtype %s", tok[2]) ||
        !CHECK_MSG(values || strcmp(mode, "shape") == 0 || strcmp(mode, "skip") == 0,
                   "bad check %s", mode))
        return false;
    if (!r->executed) {
        if (!CHECK_MSG(r->ninputs == ember_method_input_count(r->method),
                       "%s: %zu inputs in the manifest, method has %zu", r->name, r->ninputs,
                       ember_method_input_count(r->method)) ||
            !CHECK_OK(ember_method_execute(r->method)))
            return false;
        r->executed = true;
    }
    const ember_value *v;
    if (!CHECK_OK(ember_method_output(r->method, k, &v)) ||
        !CHECK_MSG(v->tag == EMBER_TAG_TENSOR, "%s output %zu is not a tensor", r->name, k))
        return false;
    if (strcmp(mode, "skip") == 0) {
        tot->outputs_skipped++;
        return true;
    }
    npy_array want;
    const char *path = dir_path(d, tok[1]);
    if (path == NULL ||
        !CHECK_MSG(npy_load(path, &want, err, sizeof err) == 0, "%s: %s", tok[1], err))
        return false;
    bool ok = CHECK_MSG(dtype_matches(&want, dtype), "%s: dtype %d in the manifest, %s in the file",
                        tok[1], dtype, ember_dtype_name(want.dtype)) &&
              compare(r, k, v->u.t, &want, dtype, rtol, atol, values);
    npy_free(&want);
    if (values) tot->outputs_values++;
    else tot->outputs_shape++;
    return ok;
}

/* Splits line into whitespace-separated tokens (in place). */
static size_t tokenize(char *line, char **tok, size_t max) {
    size_t n = 0;
    for (char *p = strtok(line, " \t\r\n"); p != NULL; p = strtok(NULL, " \t\r\n")) {
        if (n == max) return max + 1;
        tok[n++] = p;
    }
    return n;
}

static void run_manifest(FILE *f, sample_dir *d, totals *tot) {
    char line[2048];
    int lineno = 0;
    program_run run;
    bool open = false;
    memset(&run, 0, sizeof run);
    while (fgets(line, sizeof line, f) != NULL) {
        char *tok[MAX_TOK + 1];
        lineno++;
        if (line[0] == '#') continue;
        size_t n = tokenize(line, tok, MAX_TOK);
        if (n == 0) continue;
        if (strcmp(tok[0], "program") == 0 && n == 2) {
            if (!CHECK_MSG(!open, "line %d: program inside a program", lineno)) break;
            open = true;
            tot->programs++;
            run.broken = !run_open(&run, d, tok[1]);
        } else if (strcmp(tok[0], "in") == 0 && n == 3 && open) {
            int dtype = parse_dtype(tok[2]);
            if (!run.broken)
                run.broken = !CHECK_MSG(dtype >= 0, "line %d: bad dtype", lineno) ||
                             !CHECK_MSG(!run.executed, "line %d: input after an output", lineno) ||
                             !add_input(&run, d, tok[1], dtype);
        } else if (strcmp(tok[0], "out") == 0 && n == 6 && open) {
            if (!run.broken && !check_output(&run, d, tok, tot)) run.broken = true;
        } else if (strcmp(tok[0], "end") == 0 && n == 1 && open) {
            if (!run.broken)
                run.broken = !CHECK_MSG(run.noutputs == ember_method_output_count(run.method),
                                        "%s: %zu outputs in the manifest, method has %zu",
                                        run.name, run.noutputs,
                                        ember_method_output_count(run.method));
            if (run.broken) tot->failed_programs++;
            run_close(&run);
            open = false;
        } else {
            CHECK_MSG(false, "line %d: cannot read '%s'", lineno, tok[0]);
            break;
        }
    }
    if (open) {
        CHECK_MSG(false, "the manifest ends inside program %s", run.name);
        run_close(&run);
    }
}

int main(void) {
    sample_dir d;
    const char *env = getenv("EMBER_OP_SAMPLES");
    d.root = env != NULL && env[0] != '\0' ? env : "build/op-samples";
    if (dir_path(&d, "manifest.txt") == NULL) return check_finish();
    FILE *f = fopen(d.path, "r");
    if (f == NULL) {
        printf("skipped: %s not found; the Python tests (tests/python/ops) write it\n", d.path);
        return 0;
    }
    totals tot;
    memset(&tot, 0, sizeof tot);
    CHECK_OK(ember_portable_kernels_register());
    check_section("OpInfo sample programs");
    run_manifest(f, &d, &tot);
    fclose(f);
    printf("%zu programs (%zu failed), outputs: %zu compared, %zu shape only, %zu skipped\n",
           tot.programs, tot.failed_programs, tot.outputs_values, tot.outputs_shape,
           tot.outputs_skipped);
    CHECK_MSG(tot.programs > 0, "the manifest lists no program");
    return check_finish();
}
