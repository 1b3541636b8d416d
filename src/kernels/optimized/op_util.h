/*
 * op_util.h — what the optimized ATen kernels (op_*.c) share: spotting the
 * arguments their fast path takes. A kernel whose arguments are anything
 * else (another dtype, a layout other than contiguous, a malformed value)
 * calls the portable kernel of the same key, which computes it or reports
 * the error, so behaviour outside the fast path is the reference's.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_OP_UTIL_H
#define EMBER_KERNELS_OPTIMIZED_OP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/kernel.h"

/** args[i] as a float32 input: a tensor, contiguous, with storage when not
 * empty; NULL otherwise. */
const ember_tensor *eko_f32_in(ember_value **args, size_t i);

/** args[i] as a float32 output: a writable (not constant) tensor; NULL otherwise. */
ember_tensor *eko_f32_out(ember_value **args, size_t i);

/** Resizes out to sizes[0..dim) and checks it is contiguous with storage;
 * false when not (the caller then falls back to the portable kernel). */
bool eko_f32_resize(ember_tensor *out, const int64_t *sizes, size_t dim);

/** True if the storage of a and b overlap (neither empty). */
bool eko_overlap(const ember_tensor *a, const ember_tensor *b);

/** True if args[i] is a Scalar (Int, Double) equal to 1. */
bool eko_arg_is_one(ember_value **args, size_t i);

/** Sizes of t as size_t (EMBER_MAX_DIM room). */
void eko_sizes(const ember_tensor *t, size_t *out);

#endif /* EMBER_KERNELS_OPTIMIZED_OP_UTIL_H */
