/*
 * rng_util.h — the random generator of the portable kernels (internal).
 *
 * rand, randn, randperm and native_dropout draw from one small generator:
 * SplitMix64 over a 64-bit state. Every kernel call opens its own stream,
 * keyed by the seed and a global call counter (taken atomically, so methods
 * on different threads never share a stream), then draws from it without
 * further synchronization. Streams are reproducible: after
 * ember_portable_kernels_seed(s), the same sequence of calls gives the same
 * values. The generator is fast and statistically sound for sampling and
 * dropout, not cryptographic, and does not reproduce PyTorch's values.
 */
#ifndef EMBER_KERNELS_PORTABLE_RNG_UTIL_H
#define EMBER_KERNELS_PORTABLE_RNG_UTIL_H

#include "kernel_util.h"

/** One stream of random 64-bit words. */
typedef struct ek_rng {
    uint64_t state;
} ek_rng;

/** Opens the next stream of the global generator. */
void ek_rng_open(ek_rng *r);

/** The next 64 random bits of the stream. */
uint64_t ek_rng_next(ek_rng *r);

/**
 * A uniform double in [0, 1) with `bits` random bits (1..53): a multiple of
 * 2^-bits, so a dtype with `bits` significant bits holds it exactly and it
 * never rounds up to 1.
 */
double ek_rng_uniform(ek_rng *r, int bits);

/** A uniform integer in [0, n) without modulo bias (n > 0). */
uint64_t ek_rng_below(ek_rng *r, uint64_t n);

/** Significant bits of a float dtype (24, 53, 11 or 8); 0 for others. */
int ek_rng_float_bits(int dtype);

#endif /* EMBER_KERNELS_PORTABLE_RNG_UTIL_H */
