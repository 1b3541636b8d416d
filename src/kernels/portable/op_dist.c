/*
 * aten::_cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *,
 *     Tensor(a!) out)
 * aten::_pdist_forward.out(Tensor self, float p=2., *, Tensor(a!) out)
 *
 * p-norm distances between rows. cdist: x1 (..., P, M) and x2 (..., R, M),
 * batch dims broadcast, out (..., P, R). pdist: self (N, M), out
 * (N (N - 1) / 2) holding the pairs i < j in row-major order.
 * p = 0 counts differing coordinates, p = inf takes the largest, other
 * p >= 0 give (sum |d|^p)^(1/p). As in PyTorch, cdist with p = 2 uses the
 * expansion |a|^2 + |b|^2 - 2 a.b (clamped at 0) when compute_mode is 1, or
 * when it is None / 0 and P or R exceeds 25; otherwise it sums differences.
 * Float dtypes, any strides.
 */
#include "real_math.h" /* ek_sqrt, ek_pow, ek_fabs in the compute type (float or double) */

#include "kernel_util.h"
#include "ops.h"

#define DEF_DIST(SFX, T, CT, LOAD, STORE)                                                          \
    /* distance of rows a and b (m elements, strides sa and sb) */                                 \
    static CT dist_##SFX(const T *a, int64_t sa, const T *b, int64_t sb, int64_t m, double p) {    \
        CT acc = 0;                                                                                \
        if (p == 0) {                                                                              \
            for (int64_t k = 0; k < m; k++) acc += LOAD(a[k * sa]) - LOAD(b[k * sb]) != 0;         \
        } else if (p == 1) {                                                                       \
            for (int64_t k = 0; k < m; k++) acc += ek_fabs(LOAD(a[k * sa]) - LOAD(b[k * sb]));     \
        } else if (p == 2) {                                                                       \
            for (int64_t k = 0; k < m; k++) {                                                      \
                CT d = LOAD(a[k * sa]) - LOAD(b[k * sb]);                                          \
                acc += d * d;                                                                      \
            }                                                                                      \
            acc = ek_sqrt(acc);                                                                    \
        } else if (isinf(p)) {                                                                     \
            for (int64_t k = 0; k < m; k++) {                                                      \
                CT d = ek_fabs(LOAD(a[k * sa]) - LOAD(b[k * sb]));                                 \
                if (d > acc || d != d) acc = d;                                                    \
                if (acc != acc) break; /* NaN stays */                                             \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t k = 0; k < m; k++)                                                        \
                acc += ek_pow(ek_fabs(LOAD(a[k * sa]) - LOAD(b[k * sb])), (CT)p);                  \
            acc = ek_pow(acc, (CT)(1.0 / p));                                                      \
        }                                                                                          \
        return acc;                                                                                \
    }                                                                                              \
    /* sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), accumulated as one dot product */                      \
    static CT euclid_mm_##SFX(const T *a, int64_t sa, const T *b, int64_t sb, int64_t m) {         \
        CT na = 0, nb = 0, dot = 0;                                                                \
        for (int64_t k = 0; k < m; k++) {                                                          \
            CT x = LOAD(a[k * sa]), y = LOAD(b[k * sb]);                                           \
            na += x * x;                                                                           \
            nb += y * y;                                                                           \
            dot += (CT)-2 * x * y;                                                                 \
        }                                                                                          \
        CT r = dot + na + nb;                                                                      \
        return r > 0 ? ek_sqrt(r) : r != r ? r : (CT)0;                                            \
    }                                                                                              \
    static void cdist_##SFX(T *y, const int64_t *ys, const T *x1, const int64_t *s1, const T *x2,  \
                            const int64_t *s2, int64_t np, int64_t nr, int64_t m, double p,        \
                            bool mm) {                                                             \
        for (int64_t i = 0; i < np; i++)                                                           \
            for (int64_t j = 0; j < nr; j++) {                                                     \
                const T *a = x1 + i * s1[0], *b = x2 + j * s2[0];                                  \
                CT d = mm ? euclid_mm_##SFX(a, s1[1], b, s2[1], m)                                 \
                          : dist_##SFX(a, s1[1], b, s2[1], m, p);                                  \
                y[i * ys[0] + j * ys[1]] = STORE(d);                                               \
            }                                                                                      \
    }                                                                                              \
    static void pdist_##SFX(T *y, int64_t ys, const T *x, const int64_t *s, int64_t n, int64_t m,  \
                            double p) {                                                            \
        int64_t k = 0;                                                                             \
        for (int64_t i = 0; i < n; i++)                                                            \
            for (int64_t j = i + 1; j < n; j++, k++)                                               \
                y[k * ys] = STORE(dist_##SFX(x + i * s[0], s[1], x + j * s[0], s[1], m, p));       \
    }

EK_FOR_EACH_FLOAT(DEF_DIST)

static ember_status check_p(ember_kernel_ctx *ctx, double p, const char *op) {
    if (!(p >= 0))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: p must be non-negative, got %g", op, p);
    return EMBER_OK;
}

/* Strides of t's batch dims (all but the last two) broadcast to shape[0..nb). */
static void batch_strides(const ember_tensor *t, const int64_t *shape, size_t nb, int64_t *st) {
    size_t tb = t->dim - 2, lead = nb - tb;
    for (size_t k = 0; k < nb; k++) {
        if (k < lead) {
            st[k] = 0;
        } else {
            size_t j = k - lead;
            st[k] = t->sizes[j] == 1 && shape[k] != 1 ? 0 : t->strides[j];
        }
    }
}

ember_status ek_op_cdist_forward_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *x1, *x2, *out;
    double p;
    int64_t mode;
    bool has_mode;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &x1));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &x2));
    EK_TRY(ek_arg_double(ctx, args, 2, &p));
    EK_TRY(ek_arg_opt_int(ctx, args, 3, &mode, &has_mode));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(check_p(ctx, p, "cdist"));
    if (!has_mode) mode = 0;
    if (mode < 0 || mode > 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "cdist: compute_mode must be None, 0, 1 or 2, got %lld",
                                 (long long)mode);
    EK_TRY(ek_check_float(ctx, x1->dtype, "cdist"));
    EK_TRY(ek_check_same_dtype(ctx, x1, x2, "cdist x1 and x2"));
    EK_TRY(ek_check_same_dtype(ctx, x1, out, "cdist x1 and out"));
    EK_TRY(ek_check_no_alias(ctx, out, x1));
    EK_TRY(ek_check_no_alias(ctx, out, x2));
    if (x1->dim < 2 || x2->dim < 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "cdist: x1 and x2 must have at least 2 dims, got %u and %u",
                                 (unsigned)x1->dim, (unsigned)x2->dim);
    int64_t m = x1->sizes[x1->dim - 1];
    if (x2->sizes[x2->dim - 1] != m)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "cdist: x1 and x2 have %lld and %lld columns", (long long)m,
                                 (long long)x2->sizes[x2->dim - 1]);
    /* broadcast batch shape, then (P, R) */
    size_t b1 = x1->dim - 2, b2 = x2->dim - 2, nb = b1 > b2 ? b1 : b2;
    int64_t shape[EMBER_MAX_DIM];
    for (size_t k = 0; k < nb; k++) {
        int64_t s1 = k + b1 >= nb ? x1->sizes[k + b1 - nb] : 1;
        int64_t s2 = k + b2 >= nb ? x2->sizes[k + b2 - nb] : 1;
        if (s1 != s2 && s1 != 1 && s2 != 1)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "cdist: batch dims of x1 and x2 do not broadcast");
        shape[k] = s1 == 1 ? s2 : s1;
    }
    int64_t np = x1->sizes[x1->dim - 2], nr = x2->sizes[x2->dim - 2];
    if (nb + 2 > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "cdist: rank too large");
    shape[nb] = np;
    shape[nb + 1] = nr;
    EK_TRY(ek_resize_out(ctx, out, shape, nb + 2));
    if (out->numel == 0) return EMBER_OK;

    bool mm = p == 2 && (mode == 1 || (mode == 0 && (np > 25 || nr > 25)));
    int64_t st[3][EMBER_MAX_DIM], pos[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    batch_strides(x1, shape, nb, st[0]);
    batch_strides(x2, shape, nb, st[1]);
    for (size_t k = 0; k < nb; k++) st[2][k] = out->strides[k];
    const int64_t s1[2] = {x1->strides[x1->dim - 2], x1->strides[x1->dim - 1]};
    const int64_t s2[2] = {x2->strides[x2->dim - 2], x2->strides[x2->dim - 1]};
    const int64_t ys[2] = {out->strides[nb], out->strides[nb + 1]};
    size_t es = ember_dtype_size(x1->dtype);
    do {
        void *y = (char *)out->data + off[2] * (int64_t)es;
        const void *a = (const char *)x1->data + off[0] * (int64_t)es;
        const void *b = (const char *)x2->data + off[1] * (int64_t)es;
        EK_FLOAT_SWITCH(ctx, x1->dtype, cdist, y, ys, a, s1, b, s2, np, nr, m, p, mm);
    } while (ek_advance(pos, shape, nb, 3, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}

ember_status ek_op_pdist_forward_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    double p;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_double(ctx, args, 1, &p));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(check_p(ctx, p, "pdist"));
    EK_TRY(ek_check_float(ctx, in->dtype, "pdist"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "pdist self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (in->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pdist: self must be 2-d, got %u-d", (unsigned)in->dim);
    int64_t n = in->sizes[0], m = in->sizes[1];
    const int64_t shape[1] = {n > 1 ? n * (n - 1) / 2 : 0}; /* n < 2^31: no overflow */
    EK_TRY(ek_resize_out(ctx, out, shape, 1));
    if (out->numel == 0) return EMBER_OK;
    const int64_t s[2] = {in->strides[0], in->strides[1]};
    EK_FLOAT_SWITCH(ctx, in->dtype, pdist, out->data, out->strides[0], in->data, s, n, m, p);
    return EMBER_OK;
}
