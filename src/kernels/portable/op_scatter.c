/*
 * aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *,
 *     Tensor(a!) out)
 * aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out)
 * aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out)
 * aten::scatter_reduce.two_out(Tensor self, int dim, Tensor index, Tensor src, str reduce,
 *     *, bool include_self=True, Tensor(a!) out)
 *
 * out = self, then for every position p of index: the element of out at p
 * with dim replaced by index[p] receives src[p] (or value), is added to, or
 * is reduced with it ("sum", "prod", "mean", "amax", "amin"). Without
 * include_self, a reduced element starts from the reduction's identity
 * instead of self. Integer means round toward -inf, as in PyTorch; amax and
 * amin propagate NaN. Every dtype (mean: not bool). Indices (int64 or
 * int32, 0 <= i < self.size(dim)) are checked at execute:
 * EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include <math.h>
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

typedef enum scatter_mode {
    SC_SET, /* scatter: plain assignment */
    SC_SUM,
    SC_PROD,
    SC_MEAN,
    SC_AMAX,
    SC_AMIN
} scatter_mode;

/* Size and stride of dim k, a 0-dim tensor counting as one element of rank 1. */
static int64_t size_at(const ember_tensor *t, size_t k) {
    return t->dim == 0 ? 1 : t->sizes[k];
}
static int64_t stride_at(const ember_tensor *t, size_t k) {
    return t->dim == 0 ? 1 : t->strides[k];
}

/* PyTorch's checks: equal ranks, index no larger than src anywhere nor than
 * self off dim. An empty index skips them (it scatters nothing). */
static ember_status check_shapes(ember_kernel_ctx *ctx, const char *op, const ember_tensor *self,
                                 const ember_tensor *index, const ember_tensor *src, size_t d) {
    if (index->dtype != EMBER_INT64 && index->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: index must be int64 or int32",
                                 op);
    if (index->numel == 0) return EMBER_OK;
    size_t rank = self->dim == 0 ? 1 : self->dim;
    if ((index->dim == 0 ? 1 : index->dim) != rank ||
        (src != NULL && (src->dim == 0 ? 1 : src->dim) != rank))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: self, index and src must have the same rank", op);
    for (size_t k = 0; k < rank; k++) {
        if (src != NULL && size_at(index, k) > size_at(src, k))
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: index size %lld exceeds src size %lld at dim %zu", op,
                                     (long long)size_at(index, k), (long long)size_at(src, k), k);
        if (k != d && size_at(index, k) > size_at(self, k))
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: index size %lld exceeds self size %lld at dim %zu", op,
                                     (long long)size_at(index, k), (long long)size_at(self, k), k);
    }
    return EMBER_OK;
}

/* One element in the compute type: double for floats, int64 otherwise. */
typedef union cval {
    double d;
    int64_t i;
} cval;

/* Integer results wrap as in PyTorch: computed on uint64, never signed overflow. */
static int64_t wrap_add(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}
static int64_t wrap_mul(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static cval combine(cval a, cval b, scatter_mode m, bool fl) {
    cval r;
    if (fl) {
        switch (m) {
        case SC_PROD: r.d = a.d * b.d; break;
        /* NaN wins from either side, as std::max with an isnan(src) guard */
        case SC_AMAX: r.d = isnan(b.d) ? b.d : (a.d < b.d ? b.d : a.d); break;
        case SC_AMIN: r.d = isnan(b.d) ? b.d : (b.d < a.d ? b.d : a.d); break;
        default: r.d = a.d + b.d; break;
        }
    } else {
        switch (m) {
        case SC_PROD: r.i = wrap_mul(a.i, b.i); break;
        case SC_AMAX: r.i = a.i < b.i ? b.i : a.i; break;
        case SC_AMIN: r.i = b.i < a.i ? b.i : a.i; break;
        default: r.i = wrap_add(a.i, b.i); break;
        }
    }
    return r;
}

static cval identity(scatter_mode m, bool fl) {
    cval r;
    if (fl) {
        r.d = m == SC_PROD ? 1.0 : m == SC_AMAX ? -INFINITY : m == SC_AMIN ? INFINITY : 0.0;
    } else {
        r.i = m == SC_PROD ? 1 : m == SC_AMAX ? INT64_MIN : m == SC_AMIN ? INT64_MAX : 0;
    }
    return r;
}

/* Reads index element off and checks 0 <= i < size (no wrapping, as PyTorch). */
static ember_status read_index(ember_kernel_ctx *ctx, const char *op, const ember_tensor *index,
                               int64_t off, int64_t size, size_t d, int64_t *out) {
    int64_t i = index->dtype == EMBER_INT64 ? ((const int64_t *)index->data)[off]
                                            : ((const int32_t *)index->data)[off];
    if (i < 0 || i >= size)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "%s: index %lld out of range for dim %zu of size %lld", op,
                                 (long long)i, d, (long long)size);
    *out = i;
    return EMBER_OK;
}

/*
 * Scatters into out (already a copy of self). The walk visits index line by
 * line along dim: a line of index only reaches the matching line of out, so
 * the per-element counts (mean, and "touched" without include_self) need
 * only out.size(dim) entries of scratch.
 */
static ember_status scatter_run(ember_kernel_ctx *ctx, const char *op, ember_tensor *out,
                                const ember_tensor *index, const ember_tensor *src,
                                const void *value, size_t d, scatter_mode m, bool include_self) {
    size_t rank = out->dim == 0 ? 1 : out->dim;
    int64_t shape[EMBER_MAX_DIM], st[3][EMBER_MAX_DIM], pos[EMBER_MAX_DIM] = {0};
    int64_t off[3] = {0, 0, 0}; /* index, src, out */
    for (size_t k = 0; k < rank; k++) {
        shape[k] = k == d ? 1 : size_at(index, k);
        st[0][k] = stride_at(index, k);
        st[1][k] = src != NULL ? stride_at(src, k) : 0;
        st[2][k] = stride_at(out, k);
    }
    int64_t n = size_at(index, d), size = size_at(out, d);
    int64_t is = stride_at(index, d), ss = src != NULL ? stride_at(src, d) : 0;
    int64_t os = stride_at(out, d);
    size_t es = ember_dtype_size(out->dtype);
    char *od = (char *)out->data;

    bool fl = ek_is_float(out->dtype);
    ek_ctype ct = fl ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load_out = ek_loader(out->dtype, ct), load_src = NULL;
    ek_store_fn store_out = ek_storer(out->dtype, ct);
    if (src != NULL) load_src = ek_loader(src->dtype, ct);
    int32_t *count = NULL; /* (size,) hits per element of the current line */
    if (m == SC_MEAN || (m != SC_SET && !include_self)) {
        size_t bytes;
        if (ember_mul_overflow((size_t)size, sizeof(int32_t), &bytes) ||
            (count = ember_kernel_scratch(ctx, bytes > 0 ? bytes : 1, sizeof(int32_t))) == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                     "%s: no scratch for %lld counts", op, (long long)size);
    }
    cval ident = identity(m, fl);
    do {
        if (count != NULL) memset(count, 0, (size_t)size * sizeof(int32_t));
        for (int64_t k = 0; k < n; k++) {
            int64_t t = 0;
            EK_TRY(read_index(ctx, op, index, off[0] + k * is, size, d, &t));
            char *dst = od + (off[2] + t * os) * (int64_t)es;
            const char *sp =
                src != NULL ? (const char *)src->data + (off[1] + k * ss) * (int64_t)es : NULL;
            if (m == SC_SET) {
                memcpy(dst, sp != NULL ? sp : value, es);
                continue;
            }
            cval a, b;
            if (count != NULL && count[t] == 0 && !include_self) {
                a = ident;
            } else {
                load_out(&a, dst, 1, 1);
            }
            load_src(&b, sp, 1, 1);
            a = combine(a, b, m, fl);
            store_out(dst, 1, &a, 1);
            if (count != NULL) count[t]++;
        }
        if (m == SC_MEAN) {
            for (int64_t t = 0; t < size; t++) {
                if (count[t] == 0) continue;
                int64_t c = count[t] + (include_self ? 1 : 0);
                char *dst = od + (off[2] + t * os) * (int64_t)es;
                cval a;
                load_out(&a, dst, 1, 1);
                if (fl) {
                    a.d /= (double)c;
                } else { /* floor division */
                    int64_t q = a.i / c;
                    if (a.i % c != 0 && a.i < 0) q -= 1;
                    a.i = q;
                }
                store_out(dst, 1, &a, 1);
            }
        }
    } while (ek_advance(pos, shape, rank, 3, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}

/* Common front: reads self, dim, index and out, checks, copies self to out. */
static ember_status scatter_setup(ember_kernel_ctx *ctx, const char *op, ember_value **args,
                                  size_t out_arg, const ember_tensor *src, ember_tensor **self_p,
                                  ember_tensor **index_p, ember_tensor **out_p, size_t *d) {
    ember_tensor *self, *index, *out;
    int64_t dim;
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &index));
    EK_TRY(ek_arg_out(ctx, args, out_arg, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, op));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    if (src != NULL) EK_TRY(ek_check_same_dtype(ctx, self, src, "self and src"));
    EK_TRY(ek_check_no_alias(ctx, out, index));
    if (src != NULL) EK_TRY(ek_check_no_alias(ctx, out, src));
    EK_TRY(ek_norm_dim(ctx, dim, self->dim == 0 ? 1 : self->dim, d));
    EK_TRY(check_shapes(ctx, op, self, index, src, *d));
    EK_TRY(ek_resize_like(ctx, out, self));
    if (out != self && out->numel > 0) ek_copy_tensor(out, self);
    *self_p = self;
    *index_p = index;
    *out_p = out;
    return EMBER_OK;
}

ember_status ek_op_scatter_value_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *index, *out;
    ek_scalar value;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_scalar(ctx, args, 3, &value));
    EK_TRY(scatter_setup(ctx, "scatter", args, 4, NULL, &self, &index, &out, &d));
    if (index->numel == 0) return EMBER_OK;
    uint8_t elem[8];
    ek_scalar_store(out->dtype, &value, elem);
    return scatter_run(ctx, "scatter", out, index, NULL, elem, d, SC_SET, true);
}

/* scatter.src_out and scatter_add.out: (self, dim, index, src, out, out). */
static ember_status scatter_src_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                       const char *op, scatter_mode m) {
    ember_tensor *self, *index, *src, *out;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &src));
    EK_TRY(scatter_setup(ctx, op, args, 4, src, &self, &index, &out, &d));
    if (index->numel == 0) return EMBER_OK;
    return scatter_run(ctx, op, out, index, src, NULL, d, m, true);
}

ember_status ek_op_scatter_src_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return scatter_src_common(ctx, args, nargs, "scatter", SC_SET);
}

ember_status ek_op_scatter_add_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return scatter_src_common(ctx, args, nargs, "scatter_add", SC_SUM);
}

ember_status ek_op_scatter_reduce_two_out(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs) {
    ember_tensor *self, *index, *src, *out;
    const char *reduce;
    size_t rlen, d;
    bool include_self;
    scatter_mode m;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 3, &src));
    EK_TRY(ek_arg_string(ctx, args, 4, &reduce, &rlen, false));
    EK_TRY(ek_arg_bool(ctx, args, 5, &include_self));
    if (ek_str_eq(reduce, rlen, "sum")) {
        m = SC_SUM;
    } else if (ek_str_eq(reduce, rlen, "prod")) {
        m = SC_PROD;
    } else if (ek_str_eq(reduce, rlen, "mean")) {
        m = SC_MEAN;
    } else if (ek_str_eq(reduce, rlen, "amax")) {
        m = SC_AMAX;
    } else if (ek_str_eq(reduce, rlen, "amin")) {
        m = SC_AMIN;
    } else {
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "scatter_reduce: reduce must be sum, prod, mean, amax or amin, "
                                 "got '%.*s'",
                                 (int)(rlen > 32 ? 32 : rlen), reduce);
    }
    EK_TRY(scatter_setup(ctx, "scatter_reduce", args, 6, src, &self, &index, &out, &d));
    if (m == SC_MEAN && out->dtype == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "scatter_reduce: mean is not defined for bool");
    if (index->numel == 0) return EMBER_OK;
    return scatter_run(ctx, "scatter_reduce", out, index, src, NULL, d, m, include_self);
}
