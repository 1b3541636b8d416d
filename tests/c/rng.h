/*
 * tests/c/rng.h — the deterministic values the C tests draw (header only;
 * one generator per test program): a linear congruential generator that a
 * test seeds once for its own sequence, the same on every platform.
 *
 *     rng_seed(s)      restarts the sequence (the default seed is 1)
 *     rng_bits()       the next 24 bits
 *     rng_double()     the next value in [-1, 1), a multiple of 2^-23
 *     rng_float()      the same value as a float (exact)
 */
#ifndef EMBER_TESTS_RNG_H
#define EMBER_TESTS_RNG_H

#include <stdint.h>

static uint32_t g_rng = 1u;

static inline void rng_seed(uint32_t seed) { g_rng = seed; }

static inline uint32_t rng_bits(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static inline double rng_double(void) { return (double)rng_bits() / (double)(1u << 23) - 1.0; }

static inline float rng_float(void) { return (float)rng_double(); }

#endif /* EMBER_TESTS_RNG_H */
