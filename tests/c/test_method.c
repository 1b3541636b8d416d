/*
 * Methods on the reference fixtures: meta, input checks, dynamic shapes,
 * caller-supplied memory with no platform heap, allocation-free execute,
 * persistent mutable state, missing and overriding kernels.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/platform.h"
#include "npy.h"

#define FIX "tests/fixtures/"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/* A program file in 64-byte aligned memory, with its loader. */
typedef struct loaded {
    uint8_t *bytes;
    size_t size;
    ember_buffer_loader loader;
    ember_program *prog;
} loaded;

static bool load_fixture(const char *file, const ember_program_options *opts, loaded *out) {
    char path[256];
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, FIX "%s", file);
    FILE *f = fopen(path, "rb");
    if (!CHECK_MSG(f != NULL, "cannot open %s", path)) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->bytes = aligned_alloc(64, ((size_t)n + 63) / 64 * 64);
    out->size = (size_t)n;
    bool ok = out->bytes != NULL && fread(out->bytes, 1, out->size, f) == out->size;
    fclose(f);
    if (!CHECK_MSG(ok, "cannot read %s", path)) return false;
    ember_buffer_loader_init(&out->loader, out->bytes, out->size);
    return CHECK_OK(ember_program_load(&out->loader.base, opts, &out->prog));
}

static void unload(loaded *l) {
    ember_program_destroy(l->prog);
    free(l->bytes);
    memset(l, 0, sizeof *l);
}

static bool load_npy(const char *rel, npy_array *a) {
    char path[512], err[256];
    snprintf(path, sizeof path, FIX "%s", rel);
    return CHECK_MSG(npy_load(path, a, err, sizeof err) == 0, "%s: %s", path, err);
}

static bool set_input_npy(ember_method *m, size_t i, const npy_array *a) {
    return CHECK_OK(
        ember_method_set_input_tensor(m, i, (ember_dtype)a->dtype, a->shape, a->dim, a->data, a->nbytes));
}

/* Output i against float data of the given shape (1e-5 rel + 1e-6 abs). */
static bool output_close(const ember_method *m, size_t i, const int64_t *shape, size_t dim,
                         const float *want, const char *what) {
    const ember_value *v = NULL;
    if (!CHECK_OK(ember_method_output(m, i, &v))) return false;
    if (!CHECK_MSG(v->tag == EMBER_TAG_TENSOR && v->u.t->dtype == EMBER_FLOAT32, "%s", what))
        return false;
    const ember_tensor *t = v->u.t;
    if (!CHECK_MSG(t->dim == dim, "%s: rank %u, want %zu", what, t->dim, dim)) return false;
    size_t numel = 1;
    for (size_t d = 0; d < dim; d++) {
        if (!CHECK_MSG(t->sizes[d] == shape[d], "%s: dim %zu is %d, want %lld", what, d,
                       t->sizes[d], (long long)shape[d]))
            return false;
        numel *= (size_t)shape[d];
    }
    const float *got = t->data;
    size_t bad = 0;
    for (size_t k = 0; k < numel; k++)
        if (!(fabs((double)got[k] - (double)want[k]) <= 1e-6 + 1e-5 * fabs((double)want[k]))) bad++;
    return CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ", what, bad, numel);
}

static bool output_matches_npy(const ember_method *m, size_t i, const char *rel) {
    npy_array w;
    if (!load_npy(rel, &w)) return false;
    bool ok = CHECK(w.dtype == EMBER_FLOAT32) && output_close(m, i, w.shape, w.dim, w.data, rel);
    npy_free(&w);
    return ok;
}

/* Runs run `run` of a case (one input, one output) on m. */
static bool run_npy(ember_method *m, const char *case_dir, const char *method, int run) {
    char in[256], out[256];
    npy_array x;
    snprintf(in, sizeof in, "%s/%s.run%d.in0.npy", case_dir, method, run);
    snprintf(out, sizeof out, "%s/%s.run%d.out0.npy", case_dir, method, run);
    if (!load_npy(in, &x)) return false;
    bool ok = set_input_npy(m, 0, &x) && CHECK_OK(ember_method_execute(m)) &&
              output_matches_npy(m, 0, out);
    npy_free(&x);
    return ok;
}

/* A platform that counts heap use; `heap` false makes alloc fail. */
typedef struct counter {
    int allocs, frees, failed;
    bool heap;
} counter;

static counter g_count;

static void *c_alloc(void *user, size_t size, size_t align) {
    counter *c = user;
    if (!c->heap) {
        c->failed++;
        return NULL;
    }
    c->allocs++;
    if (align < sizeof(void *)) align = sizeof(void *);
    return aligned_alloc(align, (size + align - 1) / align * align + (size == 0 ? align : 0));
}
static void c_free(void *user, void *ptr) {
    counter *c = user;
    c->frees++;
    free(ptr);
}
static const ember_platform g_counting = {
    sizeof(ember_platform), &g_count, NULL, NULL, NULL, c_alloc, c_free,
};

static void count_reset(bool heap) {
    memset(&g_count, 0, sizeof g_count);
    g_count.heap = heap;
}

static void register_portable(void) {
    ember_kernels_clear();
    CHECK_OK(ember_portable_kernels_register());
}

/* ---------------------------------------------------------------------- */
/* Meta                                                                   */
/* ---------------------------------------------------------------------- */

static bool has_operator(const ember_program *p, const char *method, const char *name) {
    ember_method_meta mm;
    char buf[EMBER_MAX_NAME];
    if (ember_program_method_meta(p, method, &mm) != EMBER_OK) return false;
    for (size_t i = 0; i < mm.num_operators; i++)
        if (ember_program_operator_name(p, method, i, buf, sizeof buf) == EMBER_OK &&
            strcmp(buf, name) == 0)
            return true;
    return false;
}

static void check_io(const ember_program *p, const char *method, bool input, size_t i,
                     ember_dynamism dyn, const int32_t *sizes, uint32_t dim) {
    ember_value_meta vm;
    ember_status st = input ? ember_program_input_meta(p, method, i, &vm)
                            : ember_program_output_meta(p, method, i, &vm);
    if (!CHECK_OK(st)) return;
    CHECK_EQ_INT(vm.tag, EMBER_TAG_TENSOR);
    CHECK_EQ_INT(vm.dtype, EMBER_FLOAT32);
    CHECK_MSG(vm.dynamism == dyn, "%s %s %zu: dynamism %u", method, input ? "input" : "output",
              i, vm.dynamism);
    CHECK(vm.planned); /* the reference planner plans inputs and outputs */
    if (!CHECK_EQ_INT(vm.dim, dim)) return;
    size_t numel = 1;
    for (uint32_t d = 0; d < dim; d++) {
        CHECK_EQ_INT(vm.sizes[d], sizes[d]);
        CHECK_EQ_INT(vm.dim_order[d], d);
        numel *= (size_t)sizes[d];
    }
    CHECK_EQ_INT(vm.nbytes, numel * 4);
}

static void test_meta(void) {
    loaded l;
    ember_method_meta mm;
    size_t bytes = 0;
    char buf[64];
    check_section("method meta");

    if (load_fixture("mlp.pte", NULL, &l)) {
        const ember_program *p = l.prog;
        const char *name = NULL;
        CHECK_EQ_INT(ember_program_method_count(p), 1);
        CHECK_OK(ember_program_method_name(p, 0, &name));
        CHECK_EQ_STR(name, "forward");
        CHECK_STATUS(ember_program_method_name(p, 1, &name), EMBER_ERR_INDEX_OUT_OF_RANGE);
        if (CHECK_OK(ember_program_method_meta(p, "forward", &mm))) {
            CHECK_EQ_STR(mm.name, "forward");
            CHECK_EQ_INT(mm.num_inputs, 1);
            CHECK_EQ_INT(mm.num_outputs, 1);
            CHECK_EQ_INT(mm.num_planned_buffers, 1);
            CHECK_EQ_INT(mm.num_operators, 3);
            CHECK_EQ_INT(mm.num_delegates, 0);
            CHECK_EQ_INT(mm.num_instructions, 8);
            CHECK_EQ_INT(mm.num_values, 30);
        }
        const int32_t in[2] = {4, 16}, out[2] = {4, 8};
        check_io(p, "forward", true, 0, EMBER_SHAPE_STATIC, in, 2);
        check_io(p, "forward", false, 0, EMBER_SHAPE_STATIC, out, 2);
        ember_value_meta vm;
        CHECK_STATUS(ember_program_input_meta(p, "forward", 1, &vm), EMBER_ERR_INDEX_OUT_OF_RANGE);
        CHECK_STATUS(ember_program_output_meta(p, "forward", 1, &vm), EMBER_ERR_INDEX_OUT_OF_RANGE);
        CHECK_STATUS(ember_program_input_meta(p, "forward", 0, NULL), EMBER_ERR_INVALID_ARGUMENT);
        CHECK_OK(ember_program_planned_buffer_size(p, "forward", 0, &bytes));
        CHECK_EQ_INT(bytes, 5120);
        CHECK_STATUS(ember_program_planned_buffer_size(p, "forward", 1, &bytes),
                     EMBER_ERR_INDEX_OUT_OF_RANGE);
        CHECK_OK(ember_program_operator_name(p, "forward", 0, buf, sizeof buf));
        CHECK_EQ_STR(buf, "aten::permute_copy.out");
        CHECK_OK(ember_program_operator_name(p, "forward", 1, buf, sizeof buf));
        CHECK_EQ_STR(buf, "aten::addmm.out");
        CHECK_OK(ember_program_operator_name(p, "forward", 2, buf, sizeof buf));
        CHECK_EQ_STR(buf, "aten::relu.out");
        CHECK_STATUS(ember_program_operator_name(p, "forward", 3, buf, sizeof buf),
                     EMBER_ERR_INDEX_OUT_OF_RANGE);
        /* Truncated to the buffer, always terminated. */
        CHECK_OK(ember_program_operator_name(p, "forward", 1, buf, 7));
        CHECK_EQ_STR(buf, "aten::");
        CHECK_OK(ember_program_operator_name(p, "forward", 1, buf, 1));
        CHECK_EQ_STR(buf, "");
        CHECK_STATUS(ember_program_operator_name(p, "forward", 1, buf, 0),
                     EMBER_ERR_INVALID_ARGUMENT);
        CHECK_OK(ember_program_method_arena_size(p, "forward", &bytes));
        CHECK(bytes > 0);
        /* Unknown method: NOT_FOUND everywhere, with the name. */
        CHECK_ERR(ember_program_method_meta(p, "backward", &mm), EMBER_ERR_NOT_FOUND, "backward");
        CHECK_STATUS(ember_program_input_meta(p, "backward", 0, &vm), EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_output_meta(p, "backward", 0, &vm), EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_planned_buffer_size(p, "backward", 0, &bytes), EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_operator_name(p, "backward", 0, buf, sizeof buf),
                     EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_method_arena_size(p, "backward", &bytes), EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_method_arena_size(p, "forwar", &bytes), EMBER_ERR_NOT_FOUND);
        CHECK_STATUS(ember_program_method_meta(p, NULL, &mm), EMBER_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(ember_program_method_meta(NULL, "forward", &mm), EMBER_ERR_INVALID_ARGUMENT);
        ember_method *m = (ember_method *)&l; /* must be reset to NULL */
        CHECK_ERR(ember_method_load(p, "backward", NULL, &m), EMBER_ERR_NOT_FOUND, "backward");
        CHECK(m == NULL);
        unload(&l);
    }

    if (load_fixture("transformer.pte", NULL, &l)) {
        const int32_t io[3] = {1, 16, 32};
        if (CHECK_OK(ember_program_method_meta(l.prog, "forward", &mm))) {
            CHECK_EQ_INT(mm.num_operators, 14);
            CHECK_EQ_INT(mm.num_instructions, 49);
            CHECK_EQ_INT(mm.num_values, 218);
            CHECK_EQ_INT(mm.num_planned_buffers, 1);
        }
        check_io(l.prog, "forward", true, 0, EMBER_SHAPE_DYNAMIC_BOUND, io, 3);
        check_io(l.prog, "forward", false, 0, EMBER_SHAPE_DYNAMIC_BOUND, io, 3);
        CHECK_OK(ember_program_planned_buffer_size(l.prog, "forward", 0, &bytes));
        CHECK_EQ_INT(bytes, 34816);
        CHECK(has_operator(l.prog, "forward", "aten::sym_size.int"));
        CHECK(has_operator(l.prog, "forward", "executorch_prim::et_view.default"));
        CHECK(has_operator(l.prog, "forward", "dim_order_ops::_clone_dim_order.out"));
        CHECK(has_operator(l.prog, "forward", "aten::slice_copy.Tensor_out"));
        CHECK(has_operator(l.prog, "forward", "aten::_softmax.out"));
        CHECK(!has_operator(l.prog, "forward", "aten::relu.out"));
        unload(&l);
    }

    if (load_fixture("two_methods.pte", NULL, &l)) {
        const char *n0 = NULL, *n1 = NULL;
        CHECK_EQ_INT(ember_program_method_count(l.prog), 2);
        CHECK_OK(ember_program_method_name(l.prog, 0, &n0));
        CHECK_OK(ember_program_method_name(l.prog, 1, &n1));
        CHECK(n0 != NULL && n1 != NULL &&
              ((strcmp(n0, "forward") == 0 && strcmp(n1, "decode") == 0) ||
               (strcmp(n0, "decode") == 0 && strcmp(n1, "forward") == 0)));
        const int32_t s28[2] = {2, 8}, s24[2] = {2, 4};
        check_io(l.prog, "forward", true, 0, EMBER_SHAPE_STATIC, s28, 2);
        check_io(l.prog, "forward", false, 0, EMBER_SHAPE_STATIC, s24, 2);
        check_io(l.prog, "decode", true, 0, EMBER_SHAPE_STATIC, s24, 2);
        check_io(l.prog, "decode", false, 0, EMBER_SHAPE_STATIC, s28, 2);
        CHECK(has_operator(l.prog, "forward", "aten::tanh.out"));
        CHECK(!has_operator(l.prog, "forward", "aten::sigmoid.out"));
        CHECK(has_operator(l.prog, "decode", "aten::sigmoid.out"));
        CHECK(!has_operator(l.prog, "decode", "aten::tanh.out"));
        CHECK_OK(ember_program_planned_buffer_size(l.prog, "decode", 0, &bytes));
        CHECK_EQ_INT(bytes, 224);
        unload(&l);
    }

    if (load_fixture("mutable_buffer.pte", NULL, &l)) {
        const int32_t s24[2] = {2, 4};
        check_io(l.prog, "forward", true, 0, EMBER_SHAPE_STATIC, s24, 2);
        check_io(l.prog, "forward", false, 0, EMBER_SHAPE_STATIC, s24, 2);
        CHECK(has_operator(l.prog, "forward", "aten::copy_"));
        CHECK(has_operator(l.prog, "forward", "aten::add.out"));
        CHECK(has_operator(l.prog, "forward", "aten::mul.out"));
        CHECK_OK(ember_program_planned_buffer_size(l.prog, "forward", 0, &bytes));
        CHECK_EQ_INT(bytes, 160);
        unload(&l);
    }

    if (load_fixture("cnn.pte", NULL, &l)) {
        const int32_t in[4] = {1, 3, 16, 16}, out[2] = {1, 10};
        check_io(l.prog, "forward", true, 0, EMBER_SHAPE_STATIC, in, 4);
        check_io(l.prog, "forward", false, 0, EMBER_SHAPE_STATIC, out, 2);
        CHECK(has_operator(l.prog, "forward", "aten::convolution.out"));
        CHECK(has_operator(l.prog, "forward", "aten::max_pool2d_with_indices.out"));
        CHECK(has_operator(l.prog, "forward", "aten::_native_batch_norm_legit_no_training.out"));
        CHECK_OK(ember_program_planned_buffer_size(l.prog, "forward", 0, &bytes));
        CHECK_EQ_INT(bytes, 16384);
        unload(&l);
    }
}

/* ---------------------------------------------------------------------- */
/* Inputs                                                                 */
/* ---------------------------------------------------------------------- */

static void test_set_input(void) {
    loaded l;
    ember_method *m = NULL;
    static float x[4 * 17];
    check_section("set input checks");
    if (!load_fixture("mlp.pte", NULL, &l)) return;
    if (!CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m))) {
        unload(&l);
        return;
    }
    CHECK_EQ_INT(ember_method_input_count(m), 1);
    CHECK_EQ_INT(ember_method_output_count(m), 1);
    const int64_t good[2] = {4, 16};
    CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, 2, x, sizeof(float) * 64));
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_INT32, good, 2, x, 4 * 64),
              EMBER_ERR_TYPE_MISMATCH, "float32");
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT64, good, 2, x, 8 * 64),
                 EMBER_ERR_TYPE_MISMATCH);
    const int64_t flat[1] = {64}, r3[3] = {1, 4, 16}, big0[2] = {5, 16}, big1[2] = {4, 17},
                  small[2] = {2, 16}, neg[2] = {-4, -16};
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, flat, 1, x, 256),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, r3, 3, x, 256),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, big0, 2, x, 4 * 80),
              EMBER_ERR_SHAPE_MISMATCH, "input 0");
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, big1, 2, x, 4 * 68),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* Static: smaller is wrong too. */
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, small, 2, x, 4 * 32),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, neg, 2, x, 4 * 64),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, EMBER_MAX_DIM + 1, x, 256),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* nbytes must match the shape exactly. */
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, 2, x, 252),
              EMBER_ERR_INVALID_ARGUMENT, "256");
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, 2, x, 260),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, 2, NULL, 256),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(ember_method_set_input_tensor(m, 1, EMBER_FLOAT32, good, 2, x, 256),
              EMBER_ERR_INDEX_OUT_OF_RANGE, "input 1");
    CHECK_STATUS(ember_method_set_input_tensor(m, SIZE_MAX, EMBER_FLOAT32, good, 2, x, 256),
                 EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_method_set_input_tensor(NULL, 0, EMBER_FLOAT32, good, 2, x, 256),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* Scalar setters on a tensor input. */
    CHECK_STATUS(ember_method_set_input_int(m, 0, 1), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_double(m, 0, 1.0), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_bool(m, 0, true), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_method_set_input_int(m, 3, 1), EMBER_ERR_INDEX_OUT_OF_RANGE);
    /* Outputs. */
    const ember_value *v = NULL;
    CHECK_OK(ember_method_output(m, 0, &v));
    CHECK_STATUS(ember_method_output(m, 1, &v), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_method_output(m, 0, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(ember_method_input(m, 0, &v));
    CHECK(v->tag == EMBER_TAG_TENSOR && v->u.t->sizes[0] == 4 && v->u.t->sizes[1] == 16);
    CHECK_STATUS(ember_method_input(m, 1, &v), EMBER_ERR_INDEX_OUT_OF_RANGE);
    static float obuf[32];
    CHECK_STATUS(ember_method_set_output_buffer(m, 0, obuf, sizeof obuf), EMBER_ERR_INVALID_STATE);
    CHECK_STATUS(ember_method_set_output_buffer(m, 1, obuf, sizeof obuf),
                 EMBER_ERR_INDEX_OUT_OF_RANGE);

    /* A planned input is copied in: changing the caller's array afterwards
     * changes nothing. */
    npy_array a;
    if (load_npy("mlp/forward.run0.in0.npy", &a)) {
        memcpy(x, a.data, a.nbytes);
        CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, good, 2, x, a.nbytes));
        memset(x, 0, sizeof x);
        CHECK_OK(ember_method_execute(m));
        output_matches_npy(m, 0, "mlp/forward.run0.out0.npy");
        npy_free(&a);
    }
    CHECK_EQ_INT(ember_method_input_count(NULL), 0);
    CHECK_EQ_INT(ember_method_output_count(NULL), 0);
    CHECK_STATUS(ember_method_execute(NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_method_destroy(m);
    ember_method_destroy(NULL);
    unload(&l);
}

/* ---------------------------------------------------------------------- */
/* Dynamic shapes                                                         */
/* ---------------------------------------------------------------------- */

static void test_dynamic(void) {
    loaded l;
    ember_method *m = NULL;
    check_section("dynamic transformer input");
    if (!load_fixture("transformer.pte", NULL, &l)) return;
    if (!CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m))) {
        unload(&l);
        return;
    }
    /* The fixture's lengths 3, 8, 16, 1, then again in another order. */
    static const int order[] = {0, 1, 2, 3, 2, 0, 3, 1};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        CHECK_MSG(run_npy(m, "transformer", "forward", order[k]), "run %d", order[k]);

    /* Causal attention: the first T rows of a 16-token run equal a T-token run. */
    npy_array full;
    if (load_npy("transformer/forward.run2.in0.npy", &full) && CHECK_EQ_INT(full.shape[1], 16)) {
        static float out16[16 * 32];
        const int64_t s16[3] = {1, 16, 32};
        const ember_value *v = NULL;
        if (CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, s16, 3, full.data,
                                                   full.nbytes)) &&
            CHECK_OK(ember_method_execute(m)) && CHECK_OK(ember_method_output(m, 0, &v)) &&
            CHECK_EQ_INT(v->u.t->numel, 16 * 32)) {
            memcpy(out16, v->u.t->data, sizeof out16);
            static const int lens[] = {1, 2, 5, 7, 11, 15, 16};
            for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
                const int64_t s[3] = {1, lens[k], 32};
                char what[64];
                snprintf(what, sizeof what, "prefix of length %d", lens[k]);
                if (CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, s, 3, full.data,
                                                           (size_t)lens[k] * 32 * 4)) &&
                    CHECK_OK(ember_method_execute(m)))
                    output_close(m, 0, s, 3, out16, what);
                /* The input value reports the current shape. */
                const ember_value *in = NULL;
                if (CHECK_OK(ember_method_input(m, 0, &in))) CHECK_EQ_INT(in->u.t->sizes[1], lens[k]);
            }
        }
    }

    /* Above the bound in any dimension is rejected, whatever the numel. */
    static float x[2 * 17 * 33];
    const int64_t t17[3] = {1, 17, 32}, b2[3] = {2, 8, 32}, c33[3] = {1, 8, 33}, c31[3] = {1, 8, 31},
                  t0[3] = {1, 0, 32}, r2[2] = {16, 32};
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, t17, 3, x, 17 * 32 * 4),
              EMBER_ERR_SHAPE_MISMATCH, "dim 1");
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, b2, 3, x, 2 * 8 * 32 * 4),
              EMBER_ERR_SHAPE_MISMATCH, "dim 0"); /* numel 512 == the bound's */
    CHECK_ERR(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, c33, 3, x, 8 * 33 * 4),
              EMBER_ERR_SHAPE_MISMATCH, "dim 2");
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, r2, 2, x, 16 * 32 * 4),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* Smaller in a dimension the model did not make dynamic: within the
     * bound, so set_input accepts it; the kernels must then refuse it
     * (LayerNorm over 32 features) with a status, not a crash. */
    if (CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, c31, 3, x, 8 * 31 * 4))) {
        ember_status st = ember_method_execute(m);
        CHECK_MSG(st != EMBER_OK, "a [1,8,31] input ran through a 32-feature model");
        CHECK(ember_last_error()[0] != '\0');
    }
    /* Zero tokens: sizes within bounds; whatever execute says, no crash. */
    if (CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, t0, 3, x, 0)))
        (void)ember_method_execute(m);
    /* A failed set leaves the method usable with good inputs. */
    CHECK(run_npy(m, "transformer", "forward", 1));
    CHECK_STATUS(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, t17, 3, x, 17 * 32 * 4),
                 EMBER_ERR_SHAPE_MISMATCH);
    {
        const ember_value *in = NULL;
        if (CHECK_OK(ember_method_input(m, 0, &in))) CHECK_EQ_INT(in->u.t->sizes[1], 8);
    }
    CHECK(run_npy(m, "transformer", "forward", 0));
    npy_free(&full);
    ember_method_destroy(m);
    unload(&l);
}

/* ---------------------------------------------------------------------- */
/* Caller memory, no platform heap                                        */
/* ---------------------------------------------------------------------- */

static _Alignas(64) uint8_t g_prog_mem[64 * 1024];
static _Alignas(64) uint8_t g_method_mem[512 * 1024];
static _Alignas(64) uint8_t g_planned_mem[256 * 1024];
static _Alignas(64) uint8_t g_scratch_mem[256 * 1024];

static void caller_memory_case(const char *file, const char *case_dir, int runs) {
    loaded l;
    ember_arena prog_arena, method_arena;
    ember_program_options opts = {sizeof(ember_program_options), &prog_arena.base};
    size_t arena_bytes = 0;
    char what[128];
    snprintf(what, sizeof what, "%s", file);

    /* The exact method-arena size is measured up front (on the host, where
     * there is a heap to measure with). */
    {
        loaded probe;
        if (!load_fixture(file, NULL, &probe)) return;
        CHECK_OK(ember_program_method_arena_size(probe.prog, "forward", &arena_bytes));
        unload(&probe);
    }
    if (!CHECK_MSG(arena_bytes > 0 && arena_bytes <= sizeof g_method_mem, "%s: %zu", what,
                   arena_bytes))
        return;

    count_reset(false);
    ember_platform_set(&g_counting);
    ember_arena_init(&prog_arena, g_prog_mem, sizeof g_prog_mem);
    if (!load_fixture(file, &opts, &l)) {
        ember_platform_set(NULL);
        return;
    }
    CHECK(prog_arena.used > 0);

    /* Planned buffers carved from one static array. */
    ember_method_meta mm;
    void *planned[8];
    size_t used = 0;
    if (!CHECK_OK(ember_program_method_meta(l.prog, "forward", &mm)) ||
        !CHECK(mm.num_planned_buffers <= 8)) {
        unload(&l);
        ember_platform_set(NULL);
        return;
    }
    for (size_t k = 0; k < mm.num_planned_buffers; k++) {
        size_t bytes = 0;
        CHECK_OK(ember_program_planned_buffer_size(l.prog, "forward", k, &bytes));
        if (!CHECK(used + bytes <= sizeof g_planned_mem)) break;
        planned[k] = g_planned_mem + used;
        used = (used + bytes + 63) / 64 * 64;
    }
    memset(g_planned_mem, 0xa5, sizeof g_planned_mem); /* the runtime must not rely on zeros */
    ember_memory mem = {sizeof(ember_memory), &method_arena.base, planned, mm.num_planned_buffers,
                        g_scratch_mem, sizeof g_scratch_mem};

    /* One byte short of the measured size: a clean OUT_OF_MEMORY. */
    ember_method *m = NULL;
    ember_arena_init(&method_arena, g_method_mem, arena_bytes - 1);
    CHECK_ERR(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_OUT_OF_MEMORY, "forward");
    CHECK(m == NULL);

    ember_arena_init(&method_arena, g_method_mem, arena_bytes);
    if (CHECK_OK(ember_method_load(l.prog, "forward", &mem, &m))) {
        CHECK_MSG(method_arena.used == arena_bytes, "%s: arena used %zu of the measured %zu", what,
                  method_arena.used, arena_bytes);
        for (int r = 0; r < runs; r++) CHECK_MSG(run_npy(m, case_dir, "forward", r), "%s run %d", what, r);
        /* Outputs live in the caller's planned memory. */
        const ember_value *out = NULL;
        if (CHECK_OK(ember_method_output(m, 0, &out)))
            CHECK((uint8_t *)out->u.t->data >= g_planned_mem &&
                  (uint8_t *)out->u.t->data < g_planned_mem + used);
        ember_method_destroy(m);
    }
    unload(&l);
    CHECK_MSG(g_count.allocs == 0 && g_count.failed == 0 && g_count.frees == 0,
              "%s: platform heap used: %d allocs (%d refused), %d frees", what, g_count.allocs,
              g_count.failed, g_count.frees);
    ember_platform_set(NULL);
}

static void test_caller_memory(void) {
    check_section("caller memory only, no platform heap");
    caller_memory_case("mlp.pte", "mlp", 2);
    caller_memory_case("transformer.pte", "transformer", 4);
    caller_memory_case("mutable_buffer.pte", "mutable_buffer", 3);
    caller_memory_case("cnn.pte", "cnn", 2);

    /* Without a heap, NULL memory is a clean OUT_OF_MEMORY. */
    loaded l;
    ember_arena prog_arena;
    ember_program_options opts = {sizeof(ember_program_options), &prog_arena.base};
    ember_program *p = NULL;
    ember_method *m = NULL;
    count_reset(false);
    ember_platform_set(&g_counting);
    ember_arena_init(&prog_arena, g_prog_mem, sizeof g_prog_mem);
    if (load_fixture("mlp.pte", &opts, &l)) {
        CHECK_STATUS(ember_method_load(l.prog, "forward", NULL, &m), EMBER_ERR_OUT_OF_MEMORY);
        CHECK(m == NULL);
        /* And a program without an allocator cannot load either. */
        CHECK_STATUS(ember_program_load(&l.loader.base, NULL, &p), EMBER_ERR_OUT_OF_MEMORY);
        CHECK(p == NULL);
    }
    unload(&l);
    CHECK_EQ_INT(g_count.allocs, 0);
    CHECK(g_count.failed > 0);
    ember_platform_set(NULL);
}

static void test_memory_arguments(void) {
    loaded l;
    ember_method *m = NULL;
    ember_arena arena;
    check_section("memory argument checks");
    if (!load_fixture("mlp.pte", NULL, &l)) return;
    void *planned[2] = {g_planned_mem, g_planned_mem + 8192};
    ember_memory mem = {sizeof(ember_memory), NULL, planned, 1, NULL, 0};
    CHECK_OK(ember_method_load(l.prog, "forward", &mem, &m));
    ember_method_destroy(m);
    mem.num_planned_buffers = 2;
    CHECK_ERR(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_INVALID_ARGUMENT,
              "planned buffers");
    mem.num_planned_buffers = 0;
    CHECK_STATUS(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_INVALID_ARGUMENT);
    mem.num_planned_buffers = 1;
    planned[0] = g_planned_mem + 8;
    CHECK_ERR(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_INVALID_ARGUMENT, "aligned");
    planned[0] = NULL;
    CHECK_STATUS(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_INVALID_ARGUMENT);
    planned[0] = g_planned_mem;
    mem.struct_size = sizeof(ember_memory) - 1;
    CHECK_STATUS(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_INVALID_ARGUMENT);
    mem.struct_size = sizeof(ember_memory);
    ember_arena_init(&arena, g_method_mem, 64);
    mem.method_allocator = &arena.base;
    CHECK_STATUS(ember_method_load(l.prog, "forward", &mem, &m), EMBER_ERR_OUT_OF_MEMORY);
    CHECK(m == NULL);
    CHECK_STATUS(ember_method_load(l.prog, "forward", NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    unload(&l);
}

/* ---------------------------------------------------------------------- */
/* Execute allocates nothing                                              */
/* ---------------------------------------------------------------------- */

static void test_execute_no_alloc(void) {
    static const struct { const char *file, *method, *case_dir; int runs; } cases[] = {
        {"mlp.pte", "forward", "mlp", 2},
        {"cnn.pte", "forward", "cnn", 2},
        {"transformer.pte", "forward", "transformer", 4},
        {"mutable_buffer.pte", "forward", "mutable_buffer", 3},
        {"two_methods.pte", "forward", "two_methods_forward", 2},
        {"two_methods.pte", "decode", "two_methods_decode", 2},
    };
    check_section("execute allocates nothing");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        loaded l;
        ember_method *m = NULL;
        npy_array x[4];
        int nx = 0;
        /* Inputs are read before counting (the .npy reader uses malloc, not the platform). */
        for (int r = 0; r < cases[c].runs; r++) {
            char rel[256];
            snprintf(rel, sizeof rel, "%s/%s.run%d.in0.npy", cases[c].case_dir, cases[c].method, r);
            if (load_npy(rel, &x[nx])) nx++;
        }
        count_reset(true);
        ember_platform_set(&g_counting);
        if (load_fixture(cases[c].file, NULL, &l) &&
            CHECK_OK(ember_method_load(l.prog, cases[c].method, NULL, &m))) {
            int before = g_count.allocs + g_count.failed;
            CHECK(before > 0); /* the heap was used for loading */
            for (int r = 0; r < nx; r++) {
                CHECK_OK(ember_method_set_input_tensor(m, 0, (ember_dtype)x[r].dtype, x[r].shape,
                                                       x[r].dim, x[r].data, x[r].nbytes));
                CHECK_OK(ember_method_execute(m));
                const ember_value *out;
                CHECK_OK(ember_method_output(m, 0, &out));
            }
            CHECK_MSG(g_count.allocs + g_count.failed == before,
                      "%s/%s: %d allocations during set_input/execute", cases[c].file,
                      cases[c].method, g_count.allocs + g_count.failed - before);
            ember_method_destroy(m);
        }
        unload(&l);
        CHECK_MSG(g_count.allocs == g_count.frees, "%s: %d allocs, %d frees", cases[c].file,
                  g_count.allocs, g_count.frees);
        ember_platform_set(NULL);
        for (int r = 0; r < nx; r++) npy_free(&x[r]);
    }
}

/* ---------------------------------------------------------------------- */
/* Mutable state                                                          */
/* ---------------------------------------------------------------------- */

static void test_mutable_state(void) {
    loaded l;
    ember_method *m1 = NULL, *m2 = NULL;
    check_section("mutable buffers keep state across executes");
    if (!load_fixture("mutable_buffer.pte", NULL, &l)) return;
    if (CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m1))) {
        for (int r = 0; r < 3; r++) CHECK_MSG(run_npy(m1, "mutable_buffer", "forward", r), "run %d", r);
        /* A second method instance starts from the initial state. */
        if (CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m2))) {
            CHECK(run_npy(m2, "mutable_buffer", "forward", 0));
            CHECK(run_npy(m2, "mutable_buffer", "forward", 1));
        }
        /* A fourth run on m1, predicted here: after three runs count = 4
         * and acc = out2 / 4; now count = 5, acc = acc * 0.5 + x. */
        npy_array out2, x;
        if (load_npy("mutable_buffer/forward.run2.out0.npy", &out2) &&
            load_npy("mutable_buffer/forward.run0.in0.npy", &x)) {
            float want[8];
            const float *o = out2.data, *xi = x.data;
            for (int i = 0; i < 8; i++) want[i] = (o[i] / 4.0f * 0.5f + xi[i]) * 5.0f;
            const int64_t s[2] = {2, 4};
            if (set_input_npy(m1, 0, &x) && CHECK_OK(ember_method_execute(m1)))
                output_close(m1, 0, s, 2, want, "fourth run");
            /* m2 is unaffected by m1 and continues from its own state. */
            CHECK(run_npy(m2, "mutable_buffer", "forward", 2));
            npy_free(&out2);
            npy_free(&x);
        }
        ember_method_destroy(m2);
        ember_method_destroy(m1);
    }
    /* Loading after all that still starts fresh: the program's initial data
     * was copied, never written. */
    if (CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m1))) {
        CHECK(run_npy(m1, "mutable_buffer", "forward", 0));
        ember_method_destroy(m1);
    }
    unload(&l);
}

/* ---------------------------------------------------------------------- */
/* Kernels: missing, overridden, failing                                  */
/* ---------------------------------------------------------------------- */

static void test_missing_kernels(void) {
    loaded l;
    ember_method *m = NULL;
    static ember_kernel subset[1024];
    size_t n = 0;
    check_section("missing kernels: every one named");
    size_t count = ember_portable_kernel_count();
    if (!CHECK(count > 0 && count <= 1024)) return;
    for (size_t i = 0; i < count; i++) {
        const ember_kernel *k = ember_portable_kernel_at(i);
        if (strcmp(k->name, "aten::addmm.out") != 0 && strcmp(k->name, "aten::relu.out") != 0)
            subset[n++] = *k;
    }
    CHECK(ember_portable_kernel_at(count) == NULL);
    CHECK_EQ_INT(n, count - 2);
    ember_kernels_clear();
    CHECK_OK(ember_kernels_register(subset, n));
    if (load_fixture("mlp.pte", NULL, &l)) {
        CHECK_ERR(ember_method_load(l.prog, "forward", NULL, &m), EMBER_ERR_OPERATOR_MISSING,
                  "aten::addmm.out");
        CHECK(m == NULL);
        const char *msg = ember_last_error();
        CHECK_CONTAINS(msg, "aten::relu.out");
        CHECK_CONTAINS(msg, "2 operators");
        CHECK_CONTAINS(msg, "forward");
        CHECK(strstr(msg, "permute_copy") == NULL);
        unload(&l);
    }
    /* No kernels at all: every operator of cnn is listed. */
    ember_kernels_clear();
    if (load_fixture("cnn.pte", NULL, &l)) {
        CHECK_ERR(ember_method_load(l.prog, "forward", NULL, &m), EMBER_ERR_OPERATOR_MISSING,
                  "7 operators");
        static const char *const ops[] = {"aten::convolution.out", "relu.out", "max_pool2d",
                                          "aten::mean.out", "permute_copy", "addmm"};
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) CHECK_CONTAINS(ember_last_error(), ops[i]);
        unload(&l);
    }
    /* More names than the message holds: the count is still exact. */
    if (load_fixture("transformer.pte", NULL, &l)) {
        CHECK_ERR(ember_method_load(l.prog, "forward", NULL, &m), EMBER_ERR_OPERATOR_MISSING,
                  "14 operators");
        CHECK_CONTAINS(ember_last_error(), "aten::sym_size.int");
        CHECK(strlen(ember_last_error()) < EMBER_ERROR_MESSAGE_SIZE);
        unload(&l);
    }
    register_portable();
    if (load_fixture("mlp.pte", NULL, &l)) {
        CHECK_OK(ember_method_load(l.prog, "forward", NULL, &m));
        ember_method_destroy(m);
        unload(&l);
    }
}

static int g_relu_calls;
static bool g_relu_fail;

/* relu.out(self, *, out) -> out: args [self, out, out]. */
static ember_status my_relu(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    g_relu_calls++;
    if (g_relu_fail) return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "injected failure %d", 7);
    if (nargs != 3 || args[0]->tag != EMBER_TAG_TENSOR || args[1]->tag != EMBER_TAG_TENSOR)
        return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "bad arguments");
    const ember_tensor *x = args[0]->u.t;
    ember_tensor *out = args[1]->u.t;
    if (x->dtype != EMBER_FLOAT32 || out->dtype != EMBER_FLOAT32)
        return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "float32 only");
    int64_t sizes[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < x->dim; d++) sizes[d] = x->sizes[d];
    ember_status st = ember_tensor_resize(out, sizes, x->dim);
    if (st != EMBER_OK) return st;
    const float *a = x->data;
    float *o = out->data;
    for (int64_t i = 0; i < x->numel; i++) o[i] = a[i] > 0.0f ? a[i] : 0.0f;
    return EMBER_OK;
}

static void test_custom_kernel(void) {
    static const ember_kernel mine[] = {{"aten::relu.out", my_relu}};
    loaded l;
    ember_method *before = NULL, *after = NULL;
    check_section("custom kernel overrides a portable one");
    register_portable();
    if (!load_fixture("mlp.pte", NULL, &l)) return;
    /* Loaded before the override: keeps the kernel it resolved at load. */
    CHECK_OK(ember_method_load(l.prog, "forward", NULL, &before));
    CHECK_OK(ember_kernels_register(mine, 1));
    CHECK(ember_kernel_find("aten::relu.out", 14) == my_relu);
    g_relu_calls = 0;
    if (before != NULL) {
        CHECK(run_npy(before, "mlp", "forward", 0));
        CHECK_EQ_INT(g_relu_calls, 0);
    }
    if (CHECK_OK(ember_method_load(l.prog, "forward", NULL, &after))) {
        CHECK(run_npy(after, "mlp", "forward", 0));
        CHECK_EQ_INT(g_relu_calls, 2); /* mlp has two relus */
        CHECK(run_npy(after, "mlp", "forward", 1));
        CHECK_EQ_INT(g_relu_calls, 4);
        /* A failing kernel: status and message name the instruction and op. */
        g_relu_fail = true;
        ember_status st = ember_method_execute(after);
        CHECK_STATUS(st, EMBER_ERR_KERNEL_FAILED);
        CHECK_CONTAINS(ember_last_error(), "aten::relu.out");
        CHECK_CONTAINS(ember_last_error(), "injected failure 7");
        CHECK_CONTAINS(ember_last_error(), "instruction");
        CHECK_CONTAINS(ember_last_error(), "forward");
        CHECK_EQ_INT(g_relu_calls, 5); /* stopped at the first failure */
        g_relu_fail = false;
        CHECK(run_npy(after, "mlp", "forward", 1)); /* and runs again afterwards */
        ember_method_destroy(after);
    }
    ember_method_destroy(before);
    /* Back to the portable kernel. */
    register_portable();
    if (CHECK_OK(ember_method_load(l.prog, "forward", NULL, &after))) {
        int calls = g_relu_calls;
        CHECK(run_npy(after, "mlp", "forward", 0));
        CHECK_EQ_INT(g_relu_calls, calls);
        ember_method_destroy(after);
    }
    unload(&l);
}

int main(void) {
    register_portable();
    test_meta();
    test_set_input();
    test_dynamic();
    test_caller_memory();
    test_memory_arguments();
    test_execute_no_alloc();
    test_mutable_state();
    test_missing_kernels();
    test_custom_kernel();
    return check_finish();
}
