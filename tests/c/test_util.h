/*
 * tests/c/test_util.h — small helpers the C tests share (header only):
 * reading a whole file, and reading one tensor element as a double.
 */
#ifndef EMBER_TESTS_TEST_UTIL_H
#define EMBER_TESTS_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ember/ember.h"
#include "ember/kernel.h" /* ember_half_to_float, ember_bf16_to_float */

/* Reads a whole file into memory aligned to 64 bytes, with room for a NUL
 * after its bytes; free() it. NULL where the file cannot be read. */
static inline uint8_t *test_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    uint8_t *buf = NULL;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = aligned_alloc(64, ((size_t)n + 64) / 64 * 64);
        if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *size = (size_t)n;
    }
    fclose(f);
    return buf;
}

/* Element i of a buffer of dtype values, as a double (NAN for a dtype it
 * does not read). */
static inline double test_elem_as_double(const void *data, int dtype, size_t i) {
    switch (dtype) {
    case EMBER_FLOAT32: return ((const float *)data)[i];
    case EMBER_FLOAT64: return ((const double *)data)[i];
    case EMBER_FLOAT16: return ember_half_to_float(((const uint16_t *)data)[i]);
    case EMBER_BFLOAT16: return ember_bf16_to_float(((const uint16_t *)data)[i]);
    case EMBER_INT64: return (double)((const int64_t *)data)[i];
    case EMBER_INT32: return ((const int32_t *)data)[i];
    case EMBER_INT16: return ((const int16_t *)data)[i];
    case EMBER_INT8: return ((const int8_t *)data)[i];
    case EMBER_UINT8: case EMBER_BOOL: return ((const uint8_t *)data)[i];
    default: return NAN;
    }
}

#endif /* EMBER_TESTS_TEST_UTIL_H */
