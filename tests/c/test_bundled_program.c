/*
 * Bundled programs (ember/bundled_program.h) on fixtures written by the
 * reference ExecuTorch serializer (tests/fixtures/gen_bundled.py):
 * two_methods.bpte (portable kernels, a suite per method) and
 * xnnpack_cnn.bpte (XNNPACK-delegated).
 *
 * - every case of every suite loads its inputs, executes and verifies;
 * - an output changed after execute, and an expected value changed in the
 *   bundled bytes, fail with EMBER_ERR_OUTPUT_MISMATCH and a message naming
 *   the output, the element, the value got and the value expected; NaN in
 *   both matches;
 * - misuse (unknown suite or case, the wrong suite for a method, bad
 *   tolerances) gives the documented statuses;
 * - the bundled file truncated at every length and with every byte flipped
 *   ends in a status with a message (opened from an allocation of exactly
 *   its length, so ASan sees any read past the end), never a crash.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/bundled_program.h"
#include "ember/kernel.h"
#include "robust_util.h"

#define FIXTURE_TWO "tests/fixtures/two_methods.bpte"
#define FIXTURE_XNN "tests/fixtures/xnnpack_cnn.bpte"
#define RTOL 1e-5
#define ATOL 1e-6

/* A copy of bytes in an allocation of exactly n bytes (NULL for n == 0). */
static uint8_t *exact_copy(const uint8_t *data, size_t n) {
    uint8_t *p = malloc(n > 0 ? n : 1);
    if (p != NULL && n > 0) memcpy(p, data, n);
    return p;
}

/* Loads the program a bundled view carries and runs + verifies every case.
 * Returns the first failing status (EMBER_OK if all pass). */
static ember_status run_all(const ember_bundled_program *bp, size_t *cases_run) {
    ember_buffer_loader loader;
    ember_program *prog = NULL;
    ember_status st;
    ember_buffer_loader_init(&loader, bp->program, bp->program_size);
    if ((st = ember_program_load(&loader.base, NULL, &prog)) != EMBER_OK) return st;
    for (size_t s = 0; s < bp->num_suites && st == EMBER_OK; s++) {
        const char *name;
        size_t n;
        ember_method *m = NULL;
        ember_method_meta mm;
        if ((st = ember_bundled_program_suite(bp, s, &name, &n)) != EMBER_OK) break;
        if ((st = ember_program_method_meta(prog, name, &mm)) != EMBER_OK) break;
        /* A corrupted size must not ask the heap for terabytes (as a device
         * would, refuse what is out of all proportion). */
        for (size_t b = 0; b < mm.num_planned_buffers && st == EMBER_OK; b++) {
            size_t bytes = 0;
            st = ember_program_planned_buffer_size(prog, name, b, &bytes);
            if (st == EMBER_OK && bytes > ((size_t)64 << 20))
                st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "planned buffer of %zu bytes", bytes);
        }
        if (st != EMBER_OK) break;
        if ((st = ember_method_load(prog, name, NULL, &m)) != EMBER_OK) break;
        for (size_t k = 0; k < n && st == EMBER_OK; k++) {
            ember_bundled_compare cmp = {.struct_size = sizeof cmp};
            st = ember_bundled_program_load_test_inputs(m, bp, name, k);
            if (st == EMBER_OK) st = ember_method_execute(m);
            if (st == EMBER_OK)
                st = ember_bundled_program_verify_outputs(m, bp, name, k, RTOL, ATOL, &cmp);
            if (st == EMBER_OK && cases_run != NULL) (*cases_run)++;
        }
        ember_method_destroy(m);
    }
    ember_program_destroy(prog);
    return st;
}

static void test_identify(const uint8_t *data, size_t size) {
    check_section("identify");
    CHECK(ember_bundled_program_is_bundled(data, size));
    CHECK(!ember_bundled_program_is_bundled(NULL, size));
    CHECK(!ember_bundled_program_is_bundled(data, 7));
    size_t pte_size;
    uint8_t *pte = ru_read_file("tests/fixtures/two_methods.pte", &pte_size);
    if (CHECK(pte != NULL)) {
        CHECK(!ember_bundled_program_is_bundled(pte, pte_size));
        ember_bundled_program bp;
        CHECK_ERR(ember_bundled_program_open(&bp, pte, pte_size), EMBER_ERR_BAD_IDENTIFIER, "BP08");
        free(pte);
    }
    ember_bundled_program bp;
    CHECK_STATUS(ember_bundled_program_open(NULL, data, size), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bundled_program_open(&bp, NULL, size), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bundled_program_open(&bp, data, 4), EMBER_ERR_TRUNCATED);
}

static void test_pass(const uint8_t *data, size_t size, size_t want_suites, size_t want_cases) {
    ember_bundled_program bp;
    if (!CHECK_OK(ember_bundled_program_open(&bp, data, size))) return;
    CHECK_EQ_INT(bp.num_suites, want_suites);
    CHECK_EQ_INT(bp.version, 2);
    CHECK(bp.program_size > 0 && ((uintptr_t)bp.program & 15u) == 0);
    size_t run = 0;
    CHECK_OK(run_all(&bp, &run));
    CHECK_EQ_INT(run, want_cases);
}

/* The expected output of two_methods' forward case 0, found in the bundled
 * bytes by its value (the .npy fixture), so it can be changed there. */
static float *find_expected(uint8_t *data, size_t size, size_t *count) {
    size_t npy_size;
    uint8_t *npy = ru_read_file("tests/fixtures/two_methods_forward/forward.run0.out0.npy", &npy_size);
    if (npy == NULL || npy_size < 10) {
        free(npy);
        return NULL;
    }
    size_t header = 10u + (size_t)(npy[8] | (npy[9] << 8));
    float *hit = NULL;
    if (header < npy_size) {
        size_t n = npy_size - header;
        for (size_t i = 0; i + n <= size && hit == NULL; i += 4)
            if (memcmp(data + i, npy + header, n) == 0) hit = (float *)(void *)(data + i);
        *count = n / sizeof(float);
    }
    free(npy);
    return hit;
}

static void test_mismatch(uint8_t *data, size_t size) {
    ember_bundled_program bp;
    ember_buffer_loader loader;
    ember_program *prog = NULL;
    ember_method *m = NULL;
    const ember_value *out;
    ember_bundled_compare cmp = {.struct_size = sizeof cmp};
    check_section("mismatch");
    if (!CHECK_OK(ember_bundled_program_open(&bp, data, size))) return;
    ember_buffer_loader_init(&loader, bp.program, bp.program_size);
    if (!CHECK_OK(ember_program_load(&loader.base, NULL, &prog))) return;
    if (!CHECK_OK(ember_method_load(prog, "forward", NULL, &m))) goto done;
    CHECK_EQ_STR(ember_method_name(m), "forward");

    /* NULL method_name: the method's own suite. */
    CHECK_OK(ember_bundled_program_load_test_inputs(m, &bp, NULL, 0));
    CHECK_OK(ember_method_execute(m));
    CHECK_OK(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, &cmp));
    CHECK_EQ_INT(cmp.num_outputs, 1);
    CHECK_EQ_INT(cmp.num_mismatches, 0);
    CHECK_EQ_INT(cmp.first_output, -1);
    CHECK(cmp.max_abs_error <= ATOL);
    /* NULL result is allowed. */
    CHECK_OK(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, NULL));

    /* An output off by one in element 3. */
    if (!CHECK_OK(ember_method_output(m, 0, &out))) goto done;
    float *got = out->u.t->data;
    float saved = got[3];
    got[3] += 1.0f;
    CHECK_ERR(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, &cmp),
              EMBER_ERR_OUTPUT_MISMATCH, "output 0 element 3: got ");
    CHECK_CONTAINS(ember_last_error(), "expected ");
    CHECK_EQ_INT(cmp.num_mismatches, 1);
    CHECK_EQ_INT(cmp.first_output, 0);
    CHECK_EQ_INT(cmp.first_element, 3);
    CHECK(cmp.max_abs_error > 0.99 && cmp.max_abs_error < 1.01);
    /* Within a loose enough tolerance it passes. */
    CHECK_OK(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, 0.0, 1.5, &cmp));
    /* NaN against a number fails; exact tolerance zero still compares. */
    got[3] = NAN;
    CHECK_ERR(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, 1e9, NULL),
              EMBER_ERR_OUTPUT_MISMATCH, "element 3: got nan");
    got[3] = saved;
    CHECK_OK(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, NULL));

    /* The expected value changed in the bundled bytes: a wrong expectation. */
    size_t count = 0;
    float *want = find_expected(data, size, &count);
    if (CHECK(want != NULL && count > 5)) {
        float keep = want[5];
        want[5] = keep + 2.0f;
        CHECK_ERR(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, &cmp),
                  EMBER_ERR_OUTPUT_MISMATCH, "output 0 element 5");
        CHECK_EQ_INT(cmp.first_element, 5);
        /* NaN expected and NaN got match. */
        want[5] = NAN;
        got[5] = NAN;
        CHECK_OK(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, &cmp));
        want[5] = INFINITY;
        got[5] = -INFINITY;
        CHECK_ERR(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, 1e30, NULL),
                  EMBER_ERR_OUTPUT_MISMATCH, "element 5: got -inf, expected inf");
        want[5] = keep;
    }

    /* Misuse. */
    check_section("misuse");
    CHECK_ERR(ember_bundled_program_load_test_inputs(m, &bp, NULL, 2), EMBER_ERR_INDEX_OUT_OF_RANGE,
              "2 test cases");
    CHECK_ERR(ember_bundled_program_load_test_inputs(m, &bp, "nope", 0), EMBER_ERR_NOT_FOUND, "nope");
    /* decode's inputs are [2, 4]; forward takes [2, 8]. */
    ember_status st = ember_bundled_program_load_test_inputs(m, &bp, "decode", 0);
    CHECK_MSG(st == EMBER_ERR_SHAPE_MISMATCH || st == EMBER_ERR_INVALID_ARGUMENT, "status 0x%x", st);
    CHECK_CONTAINS(ember_last_error(), "input 0");
    CHECK_STATUS(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, -1.0, ATOL, NULL),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, NAN, NULL),
                 EMBER_ERR_INVALID_ARGUMENT);
    ember_bundled_compare small = {.struct_size = 8};
    CHECK_STATUS(ember_bundled_program_verify_outputs(m, &bp, NULL, 0, RTOL, ATOL, &small),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bundled_program_load_test_inputs(NULL, &bp, NULL, 0), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bundled_program_verify_outputs(m, NULL, NULL, 0, RTOL, ATOL, NULL),
                 EMBER_ERR_INVALID_ARGUMENT);
    size_t n = 0;
    CHECK_OK(ember_bundled_program_case_count(&bp, "decode", &n));
    CHECK_EQ_INT(n, 2);
    CHECK_STATUS(ember_bundled_program_case_count(&bp, "nope", &n), EMBER_ERR_NOT_FOUND);
    CHECK_STATUS(ember_bundled_program_suite(&bp, 2, NULL, NULL), EMBER_ERR_INDEX_OUT_OF_RANGE);
    const char *name = NULL;
    CHECK_OK(ember_bundled_program_suite(&bp, 0, &name, &n));
    CHECK_EQ_STR(name, "decode"); /* suites are sorted by method name */
done:
    ember_method_destroy(m);
    ember_program_destroy(prog);
}

/* Every truncation and every flipped byte: a status and a message, never a crash. */
static void test_corruption(const uint8_t *data, size_t size, size_t step) {
    size_t opened = 0, passed = 0, failures_without_message = 0;
    check_section("corruption: truncation");
    for (size_t len = 0; len < size; len += step) {
        uint8_t *copy = exact_copy(data, len);
        ember_bundled_program bp;
        ember_clear_error();
        ember_status st = ember_bundled_program_open(&bp, copy, len);
        if (st == EMBER_OK) {
            opened++;
            ember_clear_error();
            st = run_all(&bp, NULL);
            /* Only trailing padding may go without harm. */
            bool padding = true;
            for (size_t k = len; k < size; k++) padding = padding && data[k] == 0;
            if (st == EMBER_OK && !padding) passed++;
        }
        if (st != EMBER_OK && ember_last_error()[0] == '\0') failures_without_message++;
        free(copy);
    }
    CHECK_EQ_INT(passed, 0);
    CHECK_EQ_INT(failures_without_message, 0);
    printf("   %zu truncations: %zu opened\n", (size + step - 1) / step, opened);

    check_section("corruption: flipped bytes");
    opened = passed = failures_without_message = 0;
    for (size_t i = 0; i < size; i += step) {
        uint8_t *copy = exact_copy(data, size);
        copy[i] ^= 0xffu;
        ember_bundled_program bp;
        ember_clear_error();
        ember_status st = ember_bundled_program_open(&bp, copy, size);
        if (st == EMBER_OK) {
            opened++;
            ember_clear_error();
            st = run_all(&bp, NULL);
            if (st == EMBER_OK) passed++;
        }
        if (st != EMBER_OK && ember_last_error()[0] == '\0') failures_without_message++;
        free(copy);
    }
    CHECK_EQ_INT(failures_without_message, 0);
    printf("   %zu flips: %zu opened, %zu still passed (padding, unused bytes)\n",
           (size + step - 1) / step, opened, passed);
}

int main(int argc, char **argv) {
    size_t step = 1;
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) step = 13;
    if (!CHECK_OK(ember_portable_kernels_register())) return check_finish();
    CHECK_OK(ember_xnnpack_backend_register());

    size_t size = 0, xsize = 0;
    uint8_t *file = ru_read_file(FIXTURE_TWO, &size);
    uint8_t *xfile = ru_read_file(FIXTURE_XNN, &xsize);
    if (!CHECK_MSG(file != NULL && xfile != NULL, "cannot read the fixtures (run from the "
                   "repository root)"))
        return check_finish();

    test_identify(file, size);
    check_section("portable: every case passes");
    test_pass(file, size, 2, 4);
    check_section("xnnpack: every case passes");
    test_pass(xfile, xsize, 1, 2);
    test_mismatch(file, size);
    test_corruption(file, size, step);
    free(file);
    free(xfile);
    return check_finish();
}
