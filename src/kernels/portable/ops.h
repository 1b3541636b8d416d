/*
 * ops.h — entry points of the portable and prim kernels (internal).
 *
 * Every kernel has the ABI of ember_kernel_fn; the list lives in ops.def.
 */
#ifndef EMBER_KERNELS_PORTABLE_OPS_H
#define EMBER_KERNELS_PORTABLE_OPS_H

#include "ember/kernel.h"

#define EK_OP(name, fn) ember_status fn(ember_kernel_ctx *ctx, ember_value **args, size_t nargs);
#include "ops.def"
#undef EK_OP

/* Shared by add and sub (op_add.c): self + (negate ? -alpha : alpha) * other. */
ember_status ek_add_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool scalar,
                           bool negate);

#endif /* EMBER_KERNELS_PORTABLE_OPS_H */
