/*
 * model_kernels.c — the kernel table of kernels.def. It names only the
 * kernels the model uses, so the linker takes only their objects out of the
 * portable kernel archive.
 */
#include "ember/kernel.h"
#include "model_kernels.h"

#define EK_OP(name, fn) ember_status fn(ember_kernel_ctx *ctx, ember_value **args, size_t nargs);
#include "kernels.def"
#undef EK_OP

static const ember_kernel model_kernels[] = {
#define EK_OP(name, fn) {name, fn},
#include "kernels.def"
#undef EK_OP
};

ember_status model_kernels_register(void) {
    return ember_kernels_register(model_kernels, sizeof model_kernels / sizeof model_kernels[0]);
}
