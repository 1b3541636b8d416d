/*
 * ember/kernel.h — the kernel ABI, for kernel authors.
 *
 * A kernel implements one operator overload, named by its key
 * ("aten::add.out"). It receives the instruction's arguments in schema order:
 * every argument with defaults materialized, the keyword-only `out` last, and
 * then the return value once more (so add.out gets [self, other, alpha, out,
 * out]). Multi-output ops get a TensorList as that last value.
 *
 * Kernels validate dtypes and shapes, resize their outputs within bounds with
 * ember_tensor_resize(), and report errors with ember_kernel_fail(). They
 * never abort and never allocate except through ember_kernel_scratch(),
 * which is reset after every instruction.
 */
#ifndef EMBER_KERNEL_H
#define EMBER_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Per-call context handed to a kernel (opaque). */
typedef struct ember_kernel_ctx ember_kernel_ctx;

/** A kernel. args has nargs entries, all non-NULL. */
typedef ember_status (*ember_kernel_fn)(ember_kernel_ctx *ctx, ember_value **args, size_t nargs);

/** One registry entry: kernel key and function. */
typedef struct ember_kernel {
    const char *name;
    ember_kernel_fn fn;
} ember_kernel;

/**
 * Registers a table of kernels (not copied: it must outlive its use). Tables
 * registered later take precedence, so an application can override a
 * built-in kernel or add custom operators. Not thread-safe; call at start-up.
 * @return EMBER_OK, EMBER_ERR_TABLE_FULL (EMBER_MAX_KERNEL_TABLES reached),
 *         EMBER_ERR_INVALID_ARGUMENT.
 */
ember_status ember_kernels_register(const ember_kernel *table, size_t count);

/** Removes every registered kernel table (for tests and re-configuration). */
void ember_kernels_clear(void);

/** Finds the kernel for a key of len bytes; NULL if none is registered. */
ember_kernel_fn ember_kernel_find(const char *name, size_t len);

/** Registers the portable kernel library (every kernel in src/kernels/portable). */
ember_status ember_portable_kernels_register(void);

/** Number of kernels in the portable library, and entry i of it. */
size_t ember_portable_kernel_count(void);
const ember_kernel *ember_portable_kernel_at(size_t i);

/**
 * Registers the optimized kernels (src/kernels/optimized: SIMD, threads),
 * each the twin of a portable kernel of the same key. Call it after
 * ember_portable_kernels_register() so that these take precedence; without
 * it the portable (reference) kernels run. They pick the instruction set at
 * run time and use the method's thread pool.
 * @return as ember_kernels_register(). Not thread-safe; call at start-up.
 */
ember_status ember_optimized_kernels_register(void);

/** Number of optimized kernels, and entry i of them (NULL past the end). */
size_t ember_optimized_kernel_count(void);
const ember_kernel *ember_optimized_kernel_at(size_t i);

/**
 * Seeds the random generator of the portable kernels (rand, randn,
 * randperm, native_dropout in training mode) and restarts its stream
 * counter. At start-up the seed is 0, so a process that never calls this
 * still gets the same values on every run. Each kernel call draws from its
 * own stream, taken atomically, so methods may run on several threads; to
 * reproduce a run, seed while no method is executing and run the same calls
 * in the same order. Not a cryptographic generator.
 * @param[in] seed any value
 */
void ember_portable_kernels_seed(uint64_t seed);

struct ember_threadpool;

/**
 * The threads this call may split its work across (ember/threadpool.h):
 * the method's pool, or NULL to run on the calling thread only.
 */
struct ember_threadpool *ember_kernel_threadpool(const ember_kernel_ctx *ctx);

/**
 * Scratch memory for this call, size bytes aligned to align; NULL if the
 * method's scratch is exhausted (report EMBER_ERR_OUT_OF_MEMORY then).
 */
void *ember_kernel_scratch(ember_kernel_ctx *ctx, size_t size, size_t align);

/**
 * Records why the kernel failed (printf-style) and returns status, so a
 * kernel can `return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, ...)`.
 * The runtime prefixes the instruction index and operator name.
 */
ember_status ember_kernel_fail(ember_kernel_ctx *ctx, ember_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/** Checked arithmetic on sizes: return true on overflow. */
static inline bool ember_mul_overflow(size_t a, size_t b, size_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, out);
#else
    if (a != 0 && b > SIZE_MAX / a) return true;
    *out = a * b;
    return false;
#endif
}

static inline bool ember_add_overflow(size_t a, size_t b, size_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, out);
#else
    if (b > SIZE_MAX - a) return true;
    *out = a + b;
    return false;
#endif
}

/** IEEE half (binary16) bits to float. */
static inline float ember_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                exp--;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    union { uint32_t u; float f; } v;
    v.u = bits;
    return v.f;
}

/** Float to IEEE half bits, round to nearest even. */
static inline uint16_t ember_float_to_half(float f) {
    union { float f; uint32_t u; } v;
    v.f = f;
    uint32_t x = v.u;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) { /* below smallest normal half: subnormal or zero */
        if (absx < 0x33000000u) return sign; /* < 2^-25 rounds to zero */
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int shift = 113 - (int)(absx >> 23) + 13; /* 14..24 */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t r = absx + 0xfffu + ((absx >> 13) & 1u); /* round to nearest even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/** bfloat16 bits to float. */
static inline float ember_bf16_to_float(uint16_t b) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)b << 16;
    return v.f;
}

/** Float to bfloat16 bits, round to nearest even (NaN stays NaN). */
static inline uint16_t ember_float_to_bf16(float f) {
    union { float f; uint32_t u; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
    uint32_t r = v.u + 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)(r >> 16);
}

/** Reads a Scalar argument (Int, Double or Bool value) as double. */
static inline bool ember_value_as_double(const ember_value *v, double *out) {
    switch (v->tag) {
    case EMBER_TAG_INT: *out = (double)v->u.i; return true;
    case EMBER_TAG_DOUBLE: *out = v->u.d; return true;
    case EMBER_TAG_BOOL: *out = v->u.b ? 1.0 : 0.0; return true;
    default: return false;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* EMBER_KERNEL_H */
