/*
 * rng_util.c — the portable kernels' random generator (see rng_util.h).
 */
#include "rng_util.h"

/* Without C11 atomics (rare), the call counter is a plain variable: then
 * only one method may run random kernels at a time. */
#if !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
static _Atomic uint64_t g_seed;
static _Atomic uint64_t g_calls;
#define RNG_LOAD(v) atomic_load_explicit(&(v), memory_order_relaxed)
#define RNG_STORE(v, x) atomic_store_explicit(&(v), (x), memory_order_relaxed)
#define RNG_TAKE(v) atomic_fetch_add_explicit(&(v), 1, memory_order_relaxed)
#else
static uint64_t g_seed;
static uint64_t g_calls;
#define RNG_LOAD(v) (v)
#define RNG_STORE(v, x) ((v) = (x))
#define RNG_TAKE(v) ((v)++)
#endif

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15u

/* SplitMix64's output function: a bijective mix of all 64 bits. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void ember_portable_kernels_seed(uint64_t seed) {
    RNG_STORE(g_seed, seed);
    RNG_STORE(g_calls, 0);
}

void ek_rng_open(ek_rng *r) {
    uint64_t call = RNG_TAKE(g_calls);
    /* the stream key: seed and call number mixed, so nearby calls and
     * nearby seeds start far apart on the SplitMix64 cycle */
    r->state = mix64(RNG_LOAD(g_seed) ^ mix64(call * GOLDEN_GAMMA + 1));
}

uint64_t ek_rng_next(ek_rng *r) {
    r->state += GOLDEN_GAMMA;
    return mix64(r->state);
}

double ek_rng_uniform(ek_rng *r, int bits) {
    uint64_t k = ek_rng_next(r) >> (64 - bits);
    return (double)k / (double)((uint64_t)1 << bits);
}

uint64_t ek_rng_below(ek_rng *r, uint64_t n) {
    /* reject the top (2^64 mod n) values so every residue is equally likely */
    uint64_t skip = (UINT64_MAX % n + 1) % n;
    for (;;) {
        uint64_t x = ek_rng_next(r);
        if (x <= UINT64_MAX - skip) return x % n;
    }
}

int ek_rng_float_bits(int dtype) {
    switch (dtype) {
    case EMBER_FLOAT32: return 24;
    case EMBER_FLOAT64: return 53;
    case EMBER_FLOAT16: return 11;
    case EMBER_BFLOAT16: return 8;
    default: return 0;
    }
}
