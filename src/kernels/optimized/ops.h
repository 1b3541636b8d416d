/*
 * ops.h — prototypes of the optimized kernels (the list is ops.def).
 */
#ifndef EMBER_KERNELS_OPTIMIZED_OPS_H
#define EMBER_KERNELS_OPTIMIZED_OPS_H

#include "ember/kernel.h"

#define EKO_OP(name, fn) ember_status fn(ember_kernel_ctx *ctx, ember_value **args, size_t nargs);
#include "ops.def"
#undef EKO_OP

#endif /* EMBER_KERNELS_OPTIMIZED_OPS_H */
