/*
 * aten::hardswish.out(Tensor self, *, Tensor(a!) out)
 *
 * out = self * relu6(self + 3) / 6. Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(hardswish, x *fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f,
                      x *fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0)

ember_status ek_op_hardswish_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &hardswish_map, NULL, true);
}
