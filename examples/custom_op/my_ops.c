/*
 * my_ops.c — the C kernel of the custom operator my_ops::squared_relu.
 *
 * A kernel receives the instruction's arguments in schema order, with the
 * keyword-only `out` last and the returned tensor once more:
 *     [x, scale, out, out]
 * It checks what it receives, resizes `out` to x's shape (within the bounds
 * the program planned) and reports errors through ember_kernel_fail().
 */
#include "my_ops.h"

/* my_ops::squared_relu.out(Tensor x, float scale=1.0, *, Tensor(a!) out) -> Tensor(a!) */
static ember_status squared_relu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    double scale;
    if (nargs != 4 || args[0]->tag != EMBER_TAG_TENSOR || args[2]->tag != EMBER_TAG_TENSOR ||
        !ember_value_as_double(args[1], &scale))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "expected (Tensor x, float scale, Tensor out), got %zu arguments",
                                 nargs);
    const ember_tensor *x = args[0]->u.t;
    ember_tensor *out = args[2]->u.t;
    if (x->dtype != EMBER_FLOAT32 || out->dtype != EMBER_FLOAT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "x and out must be float32, not %s and %s",
                                 ember_dtype_name(x->dtype), ember_dtype_name(out->dtype));
    if (!ember_tensor_is_contiguous(x) || !ember_tensor_is_contiguous(out))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "x and out must be contiguous");

    int64_t sizes[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < x->dim; d++) sizes[d] = x->sizes[d];
    ember_status st = ember_tensor_resize(out, sizes, x->dim);
    if (st != EMBER_OK) return ember_kernel_fail(ctx, st, "cannot resize out to the shape of x");

    const float *src = (const float *)x->data; /* (numel) */
    float *dst = (float *)out->data;           /* (numel) */
    float s = (float)scale;
    for (int64_t i = 0; i < x->numel; i++) {
        float r = src[i] > 0.0f ? src[i] : 0.0f;
        dst[i] = s * r * r;
    }
    return EMBER_OK;
}

/* The registry table: kernel key -> function. It must outlive its use. */
static const ember_kernel my_ops_kernels[] = {
    {"my_ops::squared_relu.out", squared_relu_out},
};

ember_status my_ops_kernels_register(void) {
    return ember_kernels_register(my_ops_kernels, sizeof my_ops_kernels / sizeof my_ops_kernels[0]);
}

/*
 * The entry point ember.runtime.load_library() calls when this file is built
 * as a shared library, so Python programs can run the operator too.
 */
ember_status ember_library_register(void);
ember_status ember_library_register(void) { return my_ops_kernels_register(); }
