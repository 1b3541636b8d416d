/*
 * aten::tanh.out(Tensor self, *, Tensor(a!) out)
 *
 * out = tanh(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(tanh, tanhf(x), tanh(x))

ember_status ek_op_tanh_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &tanh_map, NULL, true);
}
