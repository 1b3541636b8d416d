/*
 * ember/bundled_program.h — bundled programs: a program with test cases.
 *
 * A bundled program (ExecuTorch's format, flatbuffer identifier "BP08",
 * usually a `.bpte` file) carries a whole `.pte` program and, per method, a
 * suite of test cases: the inputs to run and the outputs expected from them.
 * On a device it answers "does this build run this model correctly?":
 *
 *     ember_bundled_program bp;
 *     ember_bundled_program_open(&bp, data, size);          // verifies it all
 *     ember_buffer_loader_init(&loader, bp.program, bp.program_size);
 *     ember_program_load(&loader.base, NULL, &prog);
 *     ember_method_load(prog, "forward", NULL, &m);
 *     ember_bundled_program_load_test_inputs(m, &bp, NULL, 0);
 *     ember_method_execute(m);
 *     ember_bundled_program_verify_outputs(m, &bp, NULL, 0, 1e-5, 1e-8, &cmp);
 *
 * Nothing here allocates: the view points into the caller's bytes, and test
 * inputs are copied into a method's planned input memory or bound in place
 * (unplanned inputs keep pointing into the bundled bytes).
 */
#ifndef EMBER_BUNDLED_PROGRAM_H
#define EMBER_BUNDLED_PROGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The flatbuffer file identifier of bundled programs (bytes 4..7). */
#define EMBER_BUNDLED_PROGRAM_IDENTIFIER "BP08"

/**
 * A verified view of a bundled program. Declare one and fill it with
 * ember_bundled_program_open(); the fields below `program_size` are private.
 * It holds no resources (nothing to close): it is valid as long as the bytes
 * it was opened on stay alive and unchanged.
 */
typedef struct ember_bundled_program {
    const void *program;     /**< the embedded `.pte` bytes (a view, not a copy) */
    size_t program_size;     /**< their size */
    uint32_t version;        /**< the bundled schema version the writer recorded */
    uint32_t num_suites;     /**< method test suites */
    /* private */
    const uint8_t *data;
    size_t size;
    uint32_t suites_pos;     /* element 0 of method_test_suites */
} ember_bundled_program;

/** How the outputs of one test case compared (ember_bundled_program_verify_outputs). */
typedef struct ember_bundled_compare {
    size_t struct_size;      /**< set to sizeof(ember_bundled_compare) */
    size_t num_outputs;      /**< outputs compared */
    size_t num_elements;     /**< elements compared, all outputs together */
    size_t num_mismatches;   /**< elements outside the tolerance */
    double max_abs_error;    /**< largest |got - expected| over finite elements */
    double max_rel_error;    /**< largest |got - expected| / |expected| (expected != 0) */
    int64_t first_output;    /**< output of the first mismatch, -1 if none */
    int64_t first_element;   /**< its element (row-major index), -1 if none */
} ember_bundled_compare;

/**
 * Whether data looks like a bundled program: at least 8 bytes with the
 * identifier "BP08" at offset 4. Checks nothing else (use
 * ember_bundled_program_open() before trusting the bytes). NULL gives false.
 * Never fails, never allocates; thread-safe.
 */
bool ember_bundled_program_is_bundled(const void *data, size_t size);

/**
 * Verifies a whole bundled program and makes a view of it: the root table,
 * every method test suite (a method name), every test case, every input and
 * expected value (union tag and table agree; tensors have a known dtype, at
 * most EMBER_MAX_DIM non-negative sizes, a dim order that is a permutation,
 * and at least numel * element size bytes of data, overflow-checked), and the
 * embedded program (present and not empty; the program itself is verified by
 * ember_program_load() on bp->program). Every offset and length is checked
 * against size, so any input bytes are safe.
 * @param[out] bp   the view; zeroed on failure
 * @param[in]  data the bundled bytes; must stay alive and unchanged while bp
 *                  (and any program or method using its bytes) is in use.
 *                  Align them to 16 bytes (32 is what the format plans for):
 *                  the embedded program and tensor data keep their alignment
 *                  relative to the start.
 * @param[in]  size bytes in data
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL bp or data);
 *         EMBER_ERR_TRUNCATED (shorter than a flatbuffer header);
 *         EMBER_ERR_BAD_IDENTIFIER (no "BP08" identifier);
 *         EMBER_ERR_INVALID_PROGRAM (a malformed field: the message names the
 *         suite, case, value and field).
 * Never allocates; thread-safe.
 */
ember_status ember_bundled_program_open(ember_bundled_program *bp, const void *data, size_t size);

/**
 * Method name and test-case count of suite i.
 * @param[out] method_name NUL-terminated, points into the bundled bytes (may be NULL)
 * @param[out] num_cases   test cases in the suite (may be NULL)
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT (NULL bp), EMBER_ERR_INDEX_OUT_OF_RANGE.
 */
ember_status ember_bundled_program_suite(const ember_bundled_program *bp, size_t i,
                                         const char **method_name, size_t *num_cases);

/**
 * Test-case count of the suite for a method (the first suite of that name).
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT (NULL argument),
 *         EMBER_ERR_NOT_FOUND (no suite for the method; the message names it).
 */
ember_status ember_bundled_program_case_count(const ember_bundled_program *bp,
                                              const char *method_name, size_t *num_cases);

/**
 * Sets every input of a method from test case case_index of a suite. Tensor
 * inputs go through ember_method_set_input_tensor(): planned inputs are
 * copied into the method's planned memory, unplanned ones point into the
 * bundled bytes (which must then outlive the next execute). Int, Bool and
 * Double inputs are set as scalars.
 * @param[in,out] method      a loaded method
 * @param[in]     bp          an opened bundled program
 * @param[in]     method_name the suite to read; NULL for the method's own name
 * @param[in]     case_index  the test case, from 0
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL method or bp, or the
 *         case's input count differs from the method's); EMBER_ERR_NOT_FOUND
 *         (no suite of that name); EMBER_ERR_INDEX_OUT_OF_RANGE (no such
 *         case); EMBER_ERR_TYPE_MISMATCH (a value of another kind or dtype
 *         than the method's input); EMBER_ERR_SHAPE_MISMATCH (sizes out of the
 *         input's bounds); EMBER_ERR_NOT_SUPPORTED (a tensor laid out in a dim
 *         order other than the input's). Messages name the input index.
 * Never allocates.
 */
ember_status ember_bundled_program_load_test_inputs(ember_method *method,
                                                    const ember_bundled_program *bp,
                                                    const char *method_name, size_t case_index);

/**
 * Compares a method's outputs, after ember_method_execute(), with the
 * expected outputs of test case case_index. Floating-point elements (float16,
 * bfloat16, float32, float64) match when |got - expected| <= atol + rtol *
 * |expected|, or both are NaN, or both are the same infinity; integer and
 * bool elements must be equal; other dtypes must be equal byte for byte.
 * Dtype, rank and sizes must be equal too. Elements are compared in
 * row-major order whatever either side's dim order. A case without expected
 * outputs (written only to run, e.g. for profiling) compares nothing: it
 * returns EMBER_OK with result->num_outputs 0.
 * @param[in]  method      the method, executed
 * @param[in]  bp          an opened bundled program
 * @param[in]  method_name the suite to read; NULL for the method's own name
 * @param[in]  case_index  the test case, from 0
 * @param[in]  rtol, atol  tolerances (non-negative, not NaN)
 * @param[out] result      what the comparison found, or NULL; its
 *                         struct_size must be set
 * @return EMBER_OK (every output matches); EMBER_ERR_OUTPUT_MISMATCH (the
 *         message names the first mismatching output index, element index,
 *         the value got and the value expected); EMBER_ERR_TYPE_MISMATCH /
 *         EMBER_ERR_SHAPE_MISMATCH (an output's kind, dtype, rank or sizes
 *         differ from the expected tensor; the message names the output);
 *         EMBER_ERR_INVALID_ARGUMENT (NULL method or bp, bad tolerances or
 *         result struct_size, or the case expects a number of outputs other
 *         than the method's); EMBER_ERR_NOT_FOUND;
 *         EMBER_ERR_INDEX_OUT_OF_RANGE.
 * Never allocates.
 */
ember_status ember_bundled_program_verify_outputs(const ember_method *method,
                                                  const ember_bundled_program *bp,
                                                  const char *method_name, size_t case_index,
                                                  double rtol, double atol,
                                                  ember_bundled_compare *result);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_BUNDLED_PROGRAM_H */
