/*
 * aten::erf.out(Tensor self, *, Tensor(a!) out)
 *
 * out = erf(self). Integer inputs give float32 results.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

EK_DEFINE_UNARY_FLOAT(erf, erff(x), erf(x))

ember_status ek_op_erf_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &erf_map, NULL, true);
}
