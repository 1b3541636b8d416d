/*
 * window.h — which taps of a convolution or pooling window fall inside its
 * input, so that window loops visit only those.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_WINDOW_H
#define EMBER_KERNELS_OPTIMIZED_WINDOW_H

#include <stddef.h>
#include <stdint.h>

/* The taps [*k0, *k1) of a k-tap window at output o (stride, dilation,
 * leading padding) that land inside an input of `size`: a window far larger
 * than its input then costs what its input does. */
static inline void eko_window_taps(size_t o, size_t stride, size_t dil, size_t pad, size_t size,
                                   size_t k, size_t *k0, size_t *k1) {
    const uint64_t base = (uint64_t)o * stride, end = (uint64_t)size + pad;
    uint64_t lo = base >= pad ? 0 : (pad - base + dil - 1) / dil;
    uint64_t hi = base >= end ? 0 : (end - base + dil - 1) / dil;
    hi = hi < k ? hi : k;
    lo = lo < hi ? lo : hi;
    *k0 = (size_t)lo;
    *k1 = (size_t)hi;
}

#endif /* EMBER_KERNELS_OPTIMIZED_WINDOW_H */
