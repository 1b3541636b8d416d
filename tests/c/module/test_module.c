/*
 * Tests of the module helper (include/ember/module.h): load a fixture file,
 * get methods lazily (same pointer on every call), run them against the
 * expected outputs, and fail cleanly on bad files and unknown names.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ember/module.h"
#include "npy.h"

static int g_failures;
static int g_checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        g_checks++;                                                          \
        if (!(cond)) {                                                       \
            g_failures++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, ember_last_error());                              \
        }                                                                    \
    } while (0)

#define FIXTURES "tests/fixtures/"

/* Runs method `m` on one input file and compares output 0 with `expected`. */
static void run_case(ember_method *m, const char *input, const char *expected) {
    npy_array in, want;
    char err[256];
    int rc_in = npy_load(input, &in, err, sizeof err);
    if (rc_in != 0) fprintf(stderr, "%s\n", err);
    int rc_want = npy_load(expected, &want, err, sizeof err);
    if (rc_want != 0) fprintf(stderr, "%s\n", err);
    CHECK(rc_in == 0 && rc_want == 0);
    if (rc_in != 0 || rc_want != 0) {
        npy_free(&in);
        npy_free(&want);
        return;
    }

    CHECK(ember_method_set_input_tensor(m, 0, (ember_dtype)in.dtype, in.shape, in.dim, in.data,
                                        in.nbytes) == EMBER_OK);
    CHECK(ember_method_execute(m) == EMBER_OK);
    const ember_value *out = NULL;
    CHECK(ember_method_output(m, 0, &out) == EMBER_OK);
    if (out != NULL && out->tag == EMBER_TAG_TENSOR) {
        const ember_tensor *t = out->u.t;
        CHECK(t->dtype == EMBER_FLOAT32);
        CHECK(t->dim == want.dim);
        for (size_t d = 0; d < want.dim && d < t->dim; d++) CHECK(t->sizes[d] == want.shape[d]);
        CHECK((size_t)t->numel == want.numel);
        if (t->dtype == EMBER_FLOAT32 && (size_t)t->numel == want.numel && t->data != NULL) {
            const float *got = t->data, *exp = want.data;
            size_t bad = 0;
            for (size_t k = 0; k < want.numel; k++)
                if (!(fabsf(got[k] - exp[k]) <= 1e-6f + 1e-5f * fabsf(exp[k]))) bad++;
            if (bad) fprintf(stderr, "%s: %zu of %zu values differ\n", expected, bad, want.numel);
            CHECK(bad == 0);
        }
    } else {
        CHECK(out != NULL && out->tag == EMBER_TAG_TENSOR);
    }
    npy_free(&in);
    npy_free(&want);
}

static void test_mlp(void) {
    ember_module *mod = NULL;
    ember_status st = ember_module_load(FIXTURES "mlp.pte", &mod);
    CHECK(st == EMBER_OK);
    if (st != EMBER_OK) return;
    CHECK(ember_module_program(mod) != NULL);
    CHECK(ember_program_method_count(ember_module_program(mod)) == 1);

    ember_method *m = NULL, *again = NULL;
    CHECK(ember_module_method(mod, "forward", &m) == EMBER_OK);
    CHECK(ember_module_method(mod, "forward", &again) == EMBER_OK);
    CHECK(m != NULL && m == again);
    if (m != NULL) {
        run_case(m, FIXTURES "mlp/forward.run0.in0.npy", FIXTURES "mlp/forward.run0.out0.npy");
        run_case(m, FIXTURES "mlp/forward.run1.in0.npy", FIXTURES "mlp/forward.run1.out0.npy");
    }

    ember_method *none = NULL;
    CHECK(ember_module_method(mod, "no_such_method", &none) == EMBER_ERR_NOT_FOUND);
    CHECK(none == NULL);
    CHECK(ember_module_method(mod, NULL, &none) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_module_method(mod, "forward", NULL) == EMBER_ERR_INVALID_ARGUMENT);
    ember_module_destroy(mod);
}

static void test_two_methods(void) {
    /* A second module: the portable kernels are not registered again, and
     * both methods of one file load side by side. */
    ember_module *mod = NULL;
    ember_status st = ember_module_load(FIXTURES "two_methods.pte", &mod);
    CHECK(st == EMBER_OK);
    if (st != EMBER_OK) return;
    ember_method *fwd = NULL, *dec = NULL;
    CHECK(ember_module_method(mod, "decode", &dec) == EMBER_OK);
    CHECK(ember_module_method(mod, "forward", &fwd) == EMBER_OK);
    CHECK(fwd != NULL && dec != NULL && fwd != dec);
    if (fwd != NULL && dec != NULL) {
        run_case(fwd, FIXTURES "two_methods_forward/forward.run0.in0.npy",
                 FIXTURES "two_methods_forward/forward.run0.out0.npy");
        run_case(dec, FIXTURES "two_methods_decode/decode.run0.in0.npy",
                 FIXTURES "two_methods_decode/decode.run0.out0.npy");
    }
    ember_module_destroy(mod);
}

static void test_bad_files(void) {
    ember_module *mod = NULL;
    CHECK(ember_module_load(FIXTURES "does-not-exist.pte", &mod) == EMBER_ERR_IO);
    CHECK(mod == NULL);
    /* Not a program: a status, never a crash. */
    ember_status st = ember_module_load(FIXTURES "manifest.json", &mod);
    CHECK(st != EMBER_OK);
    CHECK(mod == NULL);
    CHECK(ember_module_load(NULL, &mod) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_module_load(FIXTURES "mlp.pte", NULL) == EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_module_program(NULL) == NULL);
    ember_module_destroy(NULL);
}

/* Weights in .ptd files: the module opens them and gives them to its methods. */
static void test_data_files(void) {
    ember_module *mod = NULL;
    ember_method *m = NULL;
    const char *files[2] = {FIXTURES "ext_mlp.ptd", FIXTURES "xnnpack_ext.ptd"};
    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.num_threads = 1;
    mo.data_files = files;
    mo.num_data_files = 2;
    CHECK(ember_module_load_with(FIXTURES "ext_mlp.pte", &mo, &mod) == EMBER_OK);
    if (mod != NULL) {
        CHECK(ember_module_method(mod, "forward", &m) == EMBER_OK);
        if (m != NULL)
            run_case(m, FIXTURES "ext_mlp/forward.run0.in0.npy",
                     FIXTURES "ext_mlp/forward.run0.out0.npy");
        ember_module_destroy(mod);
        mod = NULL;
    }
    /* The other program finds its weights in the second file. */
    CHECK(ember_module_load_with(FIXTURES "xnnpack_ext.pte", &mo, &mod) == EMBER_OK);
    if (mod != NULL) {
        m = NULL;
        CHECK(ember_module_method(mod, "forward", &m) == EMBER_OK);
        if (m != NULL)
            run_case(m, FIXTURES "xnnpack_ext/forward.run0.in0.npy",
                     FIXTURES "xnnpack_ext/forward.run0.out0.npy");
        ember_module_destroy(mod);
        mod = NULL;
    }
    /* Without them the program loads, its method does not (and names the tensor). */
    CHECK(ember_module_load(FIXTURES "ext_mlp.pte", &mod) == EMBER_OK);
    if (mod != NULL) {
        CHECK(ember_module_method(mod, "forward", &m) == EMBER_ERR_NOT_FOUND);
        CHECK(strstr(ember_last_error(), "0.weight") != NULL);
        ember_module_destroy(mod);
        mod = NULL;
    }
    /* A missing or malformed data file fails the load and names the file. */
    const char *bad[1] = {FIXTURES "does-not-exist.ptd"};
    mo.data_files = bad;
    mo.num_data_files = 1;
    CHECK(ember_module_load_with(FIXTURES "ext_mlp.pte", &mo, &mod) == EMBER_ERR_IO);
    CHECK(mod == NULL && strstr(ember_last_error(), "does-not-exist.ptd") != NULL);
    bad[0] = FIXTURES "mlp.pte";
    CHECK(ember_module_load_with(FIXTURES "ext_mlp.pte", &mo, &mod) == EMBER_ERR_BAD_IDENTIFIER);
    CHECK(mod == NULL);
    bad[0] = NULL;
    CHECK(ember_module_load_with(FIXTURES "ext_mlp.pte", &mo, &mod) == EMBER_ERR_INVALID_ARGUMENT);
    mo.data_files = NULL;
    CHECK(ember_module_load_with(FIXTURES "ext_mlp.pte", &mo, &mod) == EMBER_ERR_INVALID_ARGUMENT);
    /* Options from before data files (ending at num_threads) still load. */
    mo.struct_size = offsetof(ember_module_options, data_files);
    CHECK(ember_module_load_with(FIXTURES "mlp.pte", &mo, &mod) == EMBER_OK);
    ember_module_destroy(mod);
}

int main(void) {
    test_mlp();
    test_two_methods();
    test_bad_files();
    test_data_files();
    printf("test_module: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
