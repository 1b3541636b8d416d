/*
 * aten::rand.out(SymInt[] size, *, Tensor(a!) out)
 * aten::randn.out(SymInt[] size, *, Tensor(a!) out)
 * aten::randperm.out(SymInt n, *, Tensor(a!) out)
 *
 * rand: uniform values in [0, 1); randn: standard normal values (Box-Muller
 * in double); both for float out dtypes, out resized to size. randperm: a
 * uniformly random permutation of 0..n-1 (Fisher-Yates) for any non-bool
 * out dtype that holds n-1 exactly (floats: n <= 2^significand bits + 1).
 * Values come from the portable kernels' generator (rng_util.h), seeded by
 * ember_portable_kernels_seed(); they follow PyTorch's distributions, not
 * its exact values.
 */
#include <math.h>
#include <string.h>

#include "kernel_util.h"
#include "ops.h"
#include "rng_util.h"

/*
 * Fills out with uniform or normal values, in storage order: the values are
 * independent, so any dim order gets the same distribution.
 */
static void fill_random(ember_tensor *out, bool normal) {
    ek_rng r;
    ek_rng_open(&r);
    int bits = ek_rng_float_bits(out->dtype);
    ek_store_fn store = ek_storer(out->dtype, EK_CT_F64);
    size_t es = ember_dtype_size(out->dtype);
    char *dst = (char *)out->data;
    double buf[EK_CHUNK];
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t i = 0; i < out->numel; i += EK_CHUNK) {
        size_t n = (size_t)(out->numel - i < EK_CHUNK ? out->numel - i : EK_CHUNK);
        if (!normal) {
            for (size_t j = 0; j < n; j++) buf[j] = ek_rng_uniform(&r, bits);
        } else {
            for (size_t j = 0; j < n; j += 2) {
                double u1 = 1.0 - ek_rng_uniform(&r, 53); /* (0, 1]: log stays finite */
                double u2 = ek_rng_uniform(&r, 53);
                double radius = sqrt(-2.0 * log(u1));
                buf[j] = radius * cos(two_pi * u2);
                if (j + 1 < n) buf[j + 1] = radius * sin(two_pi * u2);
            }
        }
        store(dst + (size_t)i * es, 1, buf, n);
    }
}

static ember_status rand_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                bool normal) {
    const int64_t *size;
    size_t n;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_float(ctx, out->dtype, normal ? "randn out" : "rand out"));
    EK_TRY(ek_resize_out(ctx, out, size, n));
    if (out->numel > 0) fill_random(out, normal);
    return EMBER_OK;
}

ember_status ek_op_rand_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return rand_common(ctx, args, nargs, false);
}

ember_status ek_op_randn_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return rand_common(ctx, args, nargs, true);
}

/* Largest n whose values 0..n-1 out's dtype holds exactly. */
static int64_t randperm_limit(int dtype) {
    switch (dtype) {
    case EMBER_UINT8: return 256;
    case EMBER_INT8: return 128;
    case EMBER_INT16: return 32768;
    case EMBER_INT32: return (int64_t)INT32_MAX + 1;
    case EMBER_INT64: return INT64_MAX;
    default: return ((int64_t)1 << ek_rng_float_bits(dtype)) + 1;
    }
}

ember_status ek_op_randperm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    int64_t n;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_int(ctx, args, 0, &n));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (out->dtype == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "randperm: out cannot be bool");
    if (n < 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "randperm: n must be non-negative, got %lld", (long long)n);
    if (n > randperm_limit(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "randperm: n = %lld is too large for out dtype %s", (long long)n,
                                 ember_dtype_name(out->dtype));
    EK_TRY(ek_resize_out(ctx, out, &n, 1));
    if (n == 0) return EMBER_OK;

    /* out is 1-d and dense: write 0..n-1, then shuffle it in place */
    bool f = ek_is_float(out->dtype);
    ek_store_fn store = ek_storer(out->dtype, f ? EK_CT_F64 : EK_CT_I64);
    size_t es = ember_dtype_size(out->dtype);
    char *o = (char *)out->data;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)i;
        store(o + (size_t)i * es, 1, f ? (const void *)&d : (const void *)&i, 1);
    }
    ek_rng r;
    ek_rng_open(&r);
    uint8_t tmp[8];
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ek_rng_below(&r, (uint64_t)i + 1);
        memcpy(tmp, o + (size_t)i * es, es);
        memcpy(o + (size_t)i * es, o + (size_t)j * es, es);
        memcpy(o + (size_t)j * es, tmp, es);
    }
    return EMBER_OK;
}
