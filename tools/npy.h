/*
 * tools/npy.h — a small, strict reader and writer for NumPy `.npy` files.
 *
 * Used by ember-run and the C tests. Reads format versions 1.0, 2.0 and 3.0
 * with C-order data of these little-endian dtypes: <f2 <f4 <f8, |i1 <i2 <i4
 * <i8, |u1 <u2 <u4 <u8, |b1. Everything in the header is checked: the dict
 * must have exactly the keys descr, fortran_order and shape; the element
 * count and byte size are computed with overflow checks and must match the
 * bytes in the file exactly. Fortran-order and big-endian data are refused
 * with a message saying so.
 *
 * Errors are reported as -1 with a one-line message in the caller's buffer.
 */
#ifndef EMBER_TOOLS_NPY_H
#define EMBER_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest rank the reader accepts (the runtime's limit). */
#define NPY_MAX_DIM EMBER_MAX_DIM

/** An array read from a .npy file. */
typedef struct npy_array {
    int dtype;                  /**< ember_dtype */
    size_t dim;                 /**< rank (0 for a scalar) */
    int64_t shape[NPY_MAX_DIM]; /**< sizes, outermost first */
    size_t numel;               /**< product of shape (1 for a scalar) */
    size_t nbytes;              /**< numel * element size */
    void *data;                 /**< C-order elements, 16-byte aligned, owned */
} npy_array;

/**
 * Parses a whole .npy file held in memory.
 * @param[in]  buf,len  the file's bytes
 * @param[out] out      the array (data is a fresh copy; free with npy_free())
 * @param[out] err      message on failure (may be NULL)
 * @param[in]  errcap   bytes in err
 * @return 0, or -1 with a message.
 */
int npy_parse(const void *buf, size_t len, npy_array *out, char *err, size_t errcap);

/** Reads and parses a .npy file. @return 0, or -1 with a message. */
int npy_load(const char *path, npy_array *out, char *err, size_t errcap);

/** Frees an array's data and zeroes it. NULL is a no-op. */
void npy_free(npy_array *a);

/**
 * Writes a C-order array as a version 1.0 .npy file.
 * @param[in] path   file to create (replaced if it exists)
 * @param[in] dtype  an ember_dtype the reader accepts
 * @param[in] shape  dim sizes, each >= 0
 * @param[in] data   numel * element size bytes
 * @return 0, or -1 with a message.
 */
int npy_save(const char *path, int dtype, const int64_t *shape, size_t dim, const void *data,
             char *err, size_t errcap);

/** The .npy descr string of an ember_dtype ("<f4"), NULL if unsupported. */
const char *npy_descr(int dtype);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_TOOLS_NPY_H */
