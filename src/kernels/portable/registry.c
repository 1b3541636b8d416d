/*
 * registry.c — the table of the portable kernel library.
 *
 * One static, read-only table of every kernel in ops.def (portable and prim
 * ops); ember_portable_kernels_register() hands it to the kernel registry.
 */
#include "ember/kernel.h"
#include "ops.h"

static const ember_kernel portable_kernels[] = {
#define EK_OP(name, fn) {name, fn},
#include "ops.def"
#undef EK_OP
};

#define PORTABLE_KERNEL_COUNT (sizeof portable_kernels / sizeof portable_kernels[0])

ember_status ember_portable_kernels_register(void) {
    return ember_kernels_register(portable_kernels, PORTABLE_KERNEL_COUNT);
}

size_t ember_portable_kernel_count(void) {
    return PORTABLE_KERNEL_COUNT;
}

const ember_kernel *ember_portable_kernel_at(size_t i) {
    return i < PORTABLE_KERNEL_COUNT ? &portable_kernels[i] : NULL;
}
