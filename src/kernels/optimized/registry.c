/*
 * registry.c — the table of the optimized kernels (ops.def), registered
 * above the portable library so that their keys resolve here.
 */
#include "ember/kernel.h"
#include "ops.h"

static const ember_kernel optimized_kernels[] = {
#define EKO_OP(name, fn) {name, fn},
#include "ops.def"
#undef EKO_OP
};

#define OPTIMIZED_KERNEL_COUNT (sizeof optimized_kernels / sizeof optimized_kernels[0])

ember_status ember_optimized_kernels_register(void) {
    return ember_kernels_register(optimized_kernels, OPTIMIZED_KERNEL_COUNT);
}

size_t ember_optimized_kernel_count(void) {
    return OPTIMIZED_KERNEL_COUNT;
}

const ember_kernel *ember_optimized_kernel_at(size_t i) {
    return i < OPTIMIZED_KERNEL_COUNT ? &optimized_kernels[i] : NULL;
}
