/*
 * kernel_util.c — shared helpers of the portable kernel family: dtypes and
 * promotion, scalars, argument checks, shapes, index counters and index
 * geometry. The elementwise engine, reductions, data movement and matrix
 * multiply live beside it (elementwise_util.c, reduce_util.c, copy_util.c,
 * matmul_util.c), all declared in kernel_util.h.
 */
#include "kernel_util.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Dtypes and promotion                                                      */
/* ------------------------------------------------------------------------ */

int ek_promote(int a, int b) {
    if (a == b) return a;
    if (a == EMBER_BOOL) return b;
    if (b == EMBER_BOOL) return a;
    bool fa = ek_is_float(a), fb = ek_is_float(b);
    if (fa && !fb) return a;
    if (fb && !fa) return b;
    if (fa && fb) {
        /* float16 and bfloat16 meet at float32; otherwise the wider wins */
        if ((a == EMBER_FLOAT16 && b == EMBER_BFLOAT16) ||
            (a == EMBER_BFLOAT16 && b == EMBER_FLOAT16))
            return EMBER_FLOAT32;
        return ember_dtype_size(a) >= ember_dtype_size(b) ? a : b;
    }
    /* two different integer types: uint8 with int8 needs int16 */
    if (a == EMBER_UINT8 || b == EMBER_UINT8) {
        int other = a == EMBER_UINT8 ? b : a;
        return other == EMBER_INT8 ? EMBER_INT16 : other;
    }
    return ember_dtype_size(a) >= ember_dtype_size(b) ? a : b;
}

bool ek_can_cast(int from, int to) {
    if (ek_is_float(from) && ek_is_int(to)) return false;
    if (from != EMBER_BOOL && to == EMBER_BOOL) return false;
    return true;
}

void ek_result_type_init(ek_result_type *rt) {
    rt->dim_result = -1;
    rt->zero_result = -1;
    rt->wrapped_result = -1;
}

static int promote_skip_undefined(int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return ek_promote(a, b);
}

void ek_result_type_tensor(ek_result_type *rt, const ember_tensor *t) {
    if (t->dim > 0)
        rt->dim_result = promote_skip_undefined(rt->dim_result, t->dtype);
    else
        rt->zero_result = promote_skip_undefined(rt->zero_result, t->dtype);
}

void ek_result_type_scalar(ek_result_type *rt, const ek_scalar *s) {
    int dt = s->kind == EK_SCALAR_BOOL  ? EMBER_BOOL
             : s->kind == EK_SCALAR_INT ? EMBER_INT64
                                        : EMBER_FLOAT32; /* the default dtype */
    rt->wrapped_result = promote_skip_undefined(rt->wrapped_result, dt);
}

/* c10's combine_categories: a higher-priority operand wins unless a lower
 * one belongs to a higher category (bool < integer < float). */
static int combine_categories(int higher, int lower) {
    if (higher >= 0 && ek_is_float(higher)) return higher;
    if (higher == EMBER_BOOL || (lower >= 0 && ek_is_float(lower)))
        return promote_skip_undefined(higher, lower);
    if (higher >= 0) return higher;
    return lower;
}

int ek_result_type_get(const ek_result_type *rt) {
    return combine_categories(rt->dim_result,
                              combine_categories(rt->zero_result, rt->wrapped_result));
}

/* ------------------------------------------------------------------------ */
/* Scalars                                                                   */
/* ------------------------------------------------------------------------ */

ek_scalar ek_scalar_from_double(double d) {
    ek_scalar s;
    s.d = d;
    s.i = ek_f64_to_i64(d);
    s.kind = EK_SCALAR_FLOAT;
    return s;
}

ek_scalar ek_scalar_from_int(int64_t i) {
    ek_scalar s;
    s.d = (double)i;
    s.i = i;
    s.kind = EK_SCALAR_INT;
    return s;
}

ek_scalar ek_scalar_wrap(const ek_scalar *s, int dtype) {
    if (s->kind != EK_SCALAR_INT) return *s;
    switch (dtype) {
    case EMBER_UINT8: return ek_scalar_from_int((uint8_t)s->i);
    case EMBER_INT8: return ek_scalar_from_int((int8_t)s->i);
    case EMBER_INT16: return ek_scalar_from_int((int16_t)s->i);
    case EMBER_INT32: return ek_scalar_from_int((int32_t)s->i);
    default: return *s;
    }
}

void ek_scalar_store(int dtype, const ek_scalar *s, void *dst) {
    /* integer scalars go to integer dtypes exactly; everything else via double */
    bool exact = s->kind != EK_SCALAR_FLOAT;
    int64_t i = exact ? s->i : ek_f64_to_i64(s->d);
    switch (dtype) {
    case EMBER_UINT8: {
        uint8_t v = (uint8_t)i;
        memcpy(dst, &v, 1);
        break;
    }
    case EMBER_INT8: {
        int8_t v = (int8_t)i;
        memcpy(dst, &v, 1);
        break;
    }
    case EMBER_INT16: {
        int16_t v = (int16_t)i;
        memcpy(dst, &v, 2);
        break;
    }
    case EMBER_INT32: {
        int32_t v = (int32_t)i;
        memcpy(dst, &v, 4);
        break;
    }
    case EMBER_INT64: memcpy(dst, &i, 8); break;
    case EMBER_BOOL: {
        uint8_t v = (uint8_t)(s->d != 0.0);
        memcpy(dst, &v, 1);
        break;
    }
    case EMBER_FLOAT16: {
        uint16_t v = ember_float_to_half((float)s->d);
        memcpy(dst, &v, 2);
        break;
    }
    case EMBER_BFLOAT16: {
        uint16_t v = ember_float_to_bf16((float)s->d);
        memcpy(dst, &v, 2);
        break;
    }
    case EMBER_FLOAT32: {
        float v = (float)s->d;
        memcpy(dst, &v, 4);
        break;
    }
    case EMBER_FLOAT64: memcpy(dst, &s->d, 8); break;
    default: break;
    }
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */
/* ------------------------------------------------------------------------ */

static const char *tag_name(uint32_t tag) {
    switch (tag) {
    case EMBER_TAG_NONE: return "None";
    case EMBER_TAG_INT: return "Int";
    case EMBER_TAG_BOOL: return "Bool";
    case EMBER_TAG_DOUBLE: return "Double";
    case EMBER_TAG_TENSOR: return "Tensor";
    case EMBER_TAG_STRING: return "String";
    case EMBER_TAG_INT_LIST: return "IntList";
    case EMBER_TAG_DOUBLE_LIST: return "DoubleList";
    case EMBER_TAG_BOOL_LIST: return "BoolList";
    case EMBER_TAG_TENSOR_LIST: return "TensorList";
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: return "OptionalTensorList";
    default: return "unknown";
    }
}

static ember_status bad_tag(ember_kernel_ctx *ctx, size_t i, const char *want, uint32_t got) {
    return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument %zu: expected %s, got %s", i,
                             want, tag_name(got));
}

ember_status ek_check_nargs(ember_kernel_ctx *ctx, size_t nargs, size_t want) {
    if (nargs != want)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "expected %zu arguments, got %zu",
                                 want, nargs);
    return EMBER_OK;
}

static ember_status check_tensor_struct(ember_kernel_ctx *ctx, size_t i, const ember_tensor *t) {
    if (t == NULL || t->dim > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument %zu: malformed tensor",
                                 i);
    return EMBER_OK;
}

ember_status ek_arg_out(ember_kernel_ctx *ctx, ember_value **args, size_t i, ember_tensor **out) {
    *out = NULL;
    if (args[i]->tag != EMBER_TAG_TENSOR) return bad_tag(ctx, i, "Tensor", args[i]->tag);
    EK_TRY(check_tensor_struct(ctx, i, args[i]->u.t));
    /* constants may live in read-only memory (a mapped file, flash) */
    if (args[i]->u.t->storage == EMBER_STORAGE_CONSTANT)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument %zu: a constant tensor cannot be written", i);
    *out = args[i]->u.t;
    return EMBER_OK;
}

ember_status ek_arg_tensor(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                           ember_tensor **out) {
    *out = NULL;
    if (args[i]->tag != EMBER_TAG_TENSOR) return bad_tag(ctx, i, "Tensor", args[i]->tag);
    EK_TRY(check_tensor_struct(ctx, i, args[i]->u.t));
    *out = args[i]->u.t;
    if ((*out)->numel > 0 && (*out)->data == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE,
                                 "argument %zu: tensor has no storage bound", i);
    return EMBER_OK;
}

ember_status ek_arg_tensor_meta(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                ember_tensor **out) {
    *out = NULL;
    if (args[i]->tag != EMBER_TAG_TENSOR) return bad_tag(ctx, i, "Tensor", args[i]->tag);
    EK_TRY(check_tensor_struct(ctx, i, args[i]->u.t));
    *out = args[i]->u.t;
    return EMBER_OK;
}

ember_status ek_arg_inout(ember_kernel_ctx *ctx, ember_value **args, size_t i, ember_tensor **out) {
    EK_TRY(ek_arg_out(ctx, args, i, out));
    return ek_arg_tensor(ctx, args, i, out);
}

ember_status ek_arg_opt_tensor(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                               ember_tensor **out) {
    if (args[i]->tag == EMBER_TAG_NONE) {
        *out = NULL;
        return EMBER_OK;
    }
    return ek_arg_tensor(ctx, args, i, out);
}

ember_status ek_arg_int(ember_kernel_ctx *ctx, ember_value **args, size_t i, int64_t *out) {
    *out = 0;
    if (args[i]->tag != EMBER_TAG_INT) return bad_tag(ctx, i, "Int", args[i]->tag);
    *out = args[i]->u.i;
    return EMBER_OK;
}

ember_status ek_arg_opt_int(ember_kernel_ctx *ctx, ember_value **args, size_t i, int64_t *out,
                            bool *present) {
    *present = args[i]->tag != EMBER_TAG_NONE;
    *out = 0;
    if (!*present) return EMBER_OK;
    return ek_arg_int(ctx, args, i, out);
}

ember_status ek_arg_bool(ember_kernel_ctx *ctx, ember_value **args, size_t i, bool *out) {
    *out = false;
    if (args[i]->tag != EMBER_TAG_BOOL) return bad_tag(ctx, i, "Bool", args[i]->tag);
    *out = args[i]->u.b;
    return EMBER_OK;
}

ember_status ek_arg_double(ember_kernel_ctx *ctx, ember_value **args, size_t i, double *out) {
    *out = 0.0;
    if (args[i]->tag == EMBER_TAG_DOUBLE) {
        *out = args[i]->u.d;
        return EMBER_OK;
    }
    if (args[i]->tag == EMBER_TAG_INT) {
        *out = (double)args[i]->u.i;
        return EMBER_OK;
    }
    return bad_tag(ctx, i, "Double", args[i]->tag);
}

ember_status ek_arg_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t i, ek_scalar *out) {
    const ember_value *v = args[i];
    *out = ek_scalar_from_int(0);
    switch (v->tag) {
    case EMBER_TAG_INT: *out = ek_scalar_from_int(v->u.i); return EMBER_OK;
    case EMBER_TAG_DOUBLE: *out = ek_scalar_from_double(v->u.d); return EMBER_OK;
    case EMBER_TAG_BOOL:
        out->d = v->u.b ? 1.0 : 0.0;
        out->i = v->u.b ? 1 : 0;
        out->kind = EK_SCALAR_BOOL;
        return EMBER_OK;
    default: return bad_tag(ctx, i, "Scalar (Int, Double or Bool)", v->tag);
    }
}

ember_status ek_arg_opt_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t i, ek_scalar *out,
                               bool *present) {
    *present = args[i]->tag != EMBER_TAG_NONE;
    *out = ek_scalar_from_int(0);
    if (!*present) return EMBER_OK;
    return ek_arg_scalar(ctx, args, i, out);
}

ember_status ek_arg_int_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                             const int64_t **items, size_t *len) {
    *items = NULL;
    *len = 0;
    if (args[i]->tag != EMBER_TAG_INT_LIST) return bad_tag(ctx, i, "IntList", args[i]->tag);
    ember_status st = ember_value_int_list(args[i], items, len);
    if (st != EMBER_OK) return ember_kernel_fail(ctx, st, "argument %zu: cannot read int list", i);
    return EMBER_OK;
}

ember_status ek_arg_opt_int_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                 const int64_t **items, size_t *len, bool *present) {
    *present = args[i]->tag != EMBER_TAG_NONE;
    *items = NULL;
    *len = 0;
    if (!*present) return EMBER_OK;
    return ek_arg_int_list(ctx, args, i, items, len);
}

ember_status ek_arg_string(ember_kernel_ctx *ctx, ember_value **args, size_t i, const char **str,
                           size_t *len, bool allow_none) {
    *str = NULL;
    *len = 0;
    if (allow_none && args[i]->tag == EMBER_TAG_NONE) {
        *str = NULL;
        *len = 0;
        return EMBER_OK;
    }
    if (args[i]->tag != EMBER_TAG_STRING) return bad_tag(ctx, i, "String", args[i]->tag);
    *str = args[i]->u.str.data;
    *len = args[i]->u.str.len;
    if (*str == NULL && *len != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument %zu: malformed string",
                                 i);
    return EMBER_OK;
}

ember_status ek_arg_bool_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                              const bool **items, size_t *len) {
    *items = NULL;
    *len = 0;
    if (args[i]->tag != EMBER_TAG_BOOL_LIST) return bad_tag(ctx, i, "BoolList", args[i]->tag);
    if (args[i]->u.bool_list.items == NULL && args[i]->u.bool_list.len != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument %zu: malformed bool list", i);
    *items = args[i]->u.bool_list.items;
    *len = args[i]->u.bool_list.len;
    return EMBER_OK;
}

ember_status ek_arg_tensor_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                ember_value ***items, size_t *len) {
    *items = NULL;
    *len = 0;
    if (args[i]->tag != EMBER_TAG_TENSOR_LIST) return bad_tag(ctx, i, "TensorList", args[i]->tag);
    ember_value **it = args[i]->u.tensor_list.items;
    size_t n = args[i]->u.tensor_list.len;
    if (n > 0 && it == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument %zu: malformed list", i);
    for (size_t j = 0; j < n; j++) {
        if (it[j] == NULL || it[j]->tag != EMBER_TAG_TENSOR || it[j]->u.t == NULL ||
            it[j]->u.t->dim > EMBER_MAX_DIM)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                     "argument %zu: item %zu is not a tensor", i, j);
    }
    *items = it;
    *len = n;
    return EMBER_OK;
}

ember_status ek_arg_check_dtype(ember_kernel_ctx *ctx, ember_value **args, size_t i, int want) {
    if (args[i]->tag == EMBER_TAG_NONE) return EMBER_OK;
    if (args[i]->tag != EMBER_TAG_INT)
        return bad_tag(ctx, i, "ScalarType (Int) or None", args[i]->tag);
    if (args[i]->u.i != want)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "argument %zu: dtype %lld differs from out dtype %s", i,
                                 (long long)args[i]->u.i, ember_dtype_name(want));
    return EMBER_OK;
}

bool ek_str_eq(const char *str, size_t len, const char *lit) {
    size_t n = strlen(lit);
    return len == n && (n == 0 || memcmp(str, lit, n) == 0);
}

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */
/* ------------------------------------------------------------------------ */

ember_status ek_norm_dim(ember_kernel_ctx *ctx, int64_t dim, size_t rank, size_t *out) {
    *out = 0;
    /* a 0-dim tensor accepts dim 0 and -1, as in PyTorch */
    int64_t r = rank == 0 ? 1 : (int64_t)rank;
    if (dim < -r || dim >= r)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "dim %lld out of range for a tensor of rank %zu", (long long)dim,
                                 rank);
    *out = (size_t)(dim < 0 ? dim + r : dim);
    return EMBER_OK;
}

const char *ek_shape_str64(char *buf, size_t cap, const int64_t *sizes, size_t dim) {
    size_t pos = 0;
    if (cap == 0) return buf;
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (pos + 1 < cap) buf[pos++] = (c);                                                       \
    } while (0)
    PUT('[');
    for (size_t d = 0; d < dim; d++) {
        if (d > 0) {
            PUT(',');
            PUT(' ');
        }
        int64_t v = sizes[d];
        char digits[24];
        size_t nd = 0;
        uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        do {
            digits[nd++] = (char)('0' + (int)(u % 10));
            u /= 10;
        } while (u > 0);
        if (v < 0) PUT('-');
        while (nd > 0) PUT(digits[--nd]);
    }
    PUT(']');
#undef PUT
    buf[pos] = '\0';
    return buf;
}

const char *ek_shape_str(char *buf, size_t cap, const int32_t *sizes, size_t dim) {
    int64_t s[EMBER_MAX_DIM];
    if (dim > EMBER_MAX_DIM) dim = EMBER_MAX_DIM;
    for (size_t d = 0; d < dim; d++) s[d] = sizes[d];
    return ek_shape_str64(buf, cap, s, dim);
}

ember_status ek_resize_out(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *sizes,
                           size_t dim) {
    ember_status st = ember_tensor_resize(out, sizes, dim);
    if (st != EMBER_OK) {
        char want[96], have[96];
        ek_shape_str64(want, sizeof want, sizes, dim);
        ek_shape_str(have, sizeof have, out->bounds, out->dim);
        return ember_kernel_fail(ctx, st, "cannot resize out (bounds %s) to %s", have, want);
    }
    if (out->numel > 0 && out->data == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE, "out has no storage bound");
    return EMBER_OK;
}

void ek_sizes64(const ember_tensor *t, int64_t *out) {
    for (uint32_t d = 0; d < t->dim; d++) out[d] = t->sizes[d];
}

ember_status ek_resize_like(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *like) {
    int64_t s[EMBER_MAX_DIM];
    ek_sizes64(like, s);
    return ek_resize_out(ctx, out, s, like->dim);
}

ember_status ek_check_same_dtype(ember_kernel_ctx *ctx, const ember_tensor *a,
                                 const ember_tensor *b, const char *what) {
    if (a->dtype != b->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: dtypes differ (%s vs %s)", what,
                                 ember_dtype_name(a->dtype), ember_dtype_name(b->dtype));
    return EMBER_OK;
}

ember_status ek_check_no_alias(ember_kernel_ctx *ctx, const ember_tensor *out,
                               const ember_tensor *in) {
    if (out == in)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "out is also an input of this op");
    return EMBER_OK;
}

ember_status ek_check_contiguous(ember_kernel_ctx *ctx, const ember_tensor *t, const char *what) {
    if (!ember_tensor_is_contiguous(t))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: only the default (contiguous) dim order is supported", what);
    return EMBER_OK;
}

ember_status ek_check_float(ember_kernel_ctx *ctx, int dtype, const char *what) {
    if (!ek_is_float(dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: dtype %s not supported (float types only)", what,
                                 ember_dtype_name(dtype));
    return EMBER_OK;
}

ember_status ek_check_supported(ember_kernel_ctx *ctx, int dtype, const char *what) {
    if (!ek_is_supported(dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: dtype %s not supported", what,
                                 ember_dtype_name(dtype));
    return EMBER_OK;
}

ember_status ek_broadcast_shape(ember_kernel_ctx *ctx, const ember_tensor *const *ts, size_t n,
                                int64_t *shape, size_t *dim) {
    size_t r = 0;
    *dim = 0;
    for (size_t k = 0; k < n; k++)
        if (ts[k]->dim > r) r = ts[k]->dim;
    for (size_t d = 0; d < r; d++) shape[d] = 1;
    for (size_t k = 0; k < n; k++) {
        const ember_tensor *t = ts[k];
        size_t lead = r - t->dim;
        for (size_t d = 0; d < t->dim; d++) {
            int64_t s = t->sizes[d];
            int64_t *o = &shape[lead + d];
            if (s == *o || s == 1) continue;
            if (*o == 1) {
                *o = s;
                continue;
            }
            char a[96], b[96];
            ek_shape_str(a, sizeof a, t->sizes, t->dim);
            ek_shape_str64(b, sizeof b, shape, r);
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "shapes are not broadcastable: input %zu %s vs %s", k, a, b);
        }
    }
    *dim = r;
    return EMBER_OK;
}

bool ek_broadcastable_to(const ember_tensor *t, const int64_t *shape, size_t dim) {
    if (t->dim > dim) return false;
    size_t lead = dim - t->dim;
    for (size_t d = 0; d < t->dim; d++)
        if (t->sizes[d] != 1 && t->sizes[d] != shape[lead + d]) return false;
    return true;
}

ember_status ek_view_shape(ember_kernel_ctx *ctx, int64_t numel, const int64_t *size, size_t n,
                           int64_t *shape) {
    if (n > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "view: %zu dims is too many", n);
    size_t infer = n;
    int64_t known = 1;
    for (size_t i = 0; i < n; i++) {
        if (size[i] == -1) {
            if (infer != n)
                return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                         "view: only one dim can be -1");
            infer = i;
            shape[i] = 1;
            continue;
        }
        if (size[i] < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "view: size %lld is invalid",
                                     (long long)size[i]);
        shape[i] = size[i];
    }
    if (!ek_numel(shape, n, &known))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "view: sizes overflow");
    if (infer != n) {
        if (known == 0 || numel % known != 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "view: cannot infer dim %zu for %lld elements", infer,
                                     (long long)numel);
        shape[infer] = numel / known;
    } else if (known != numel) {
        char buf[96];
        ek_shape_str64(buf, sizeof buf, shape, n);
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "view: shape %s is invalid for %lld elements", buf,
                                 (long long)numel);
    }
    return EMBER_OK;
}

bool ek_numel(const int64_t *sizes, size_t n, int64_t *out) {
    int64_t p = 1;
    for (size_t d = 0; d < n; d++) {
        if (sizes[d] < 0) return false;
        if (sizes[d] == 0) {
            p = 0;
            continue;
        }
        if (p > INT64_MAX / sizes[d]) return false;
        p *= sizes[d];
    }
    *out = p;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Index counters                                                            */
/* ------------------------------------------------------------------------ */

bool ek_advance(int64_t *idx, const int64_t *sizes, size_t n, size_t nops,
                const int64_t (*strides)[EMBER_MAX_DIM], int64_t *off) {
    for (size_t d = n; d-- > 0;) {
        idx[d]++;
        for (size_t k = 0; k < nops; k++) off[k] += strides[k][d];
        if (idx[d] < sizes[d]) return true;
        for (size_t k = 0; k < nops; k++) off[k] -= strides[k][d] * sizes[d];
        idx[d] = 0;
    }
    return false;
}

void ek_coalesce(int64_t *sizes, size_t *n, size_t nops, int64_t (*strides)[EMBER_MAX_DIM]) {
    size_t m = 0;
    for (size_t d = 0; d < *n; d++) {
        if (sizes[d] == 1) continue;
        if (m > 0) {
            /* dims m-1 (outer) and d (inner) merge if the outer stride steps
             * exactly over the inner dim for every operand */
            bool ok = true;
            for (size_t k = 0; k < nops; k++)
                if (strides[k][m - 1] != strides[k][d] * sizes[d]) ok = false;
            if (ok) {
                sizes[m - 1] *= sizes[d];
                for (size_t k = 0; k < nops; k++) strides[k][m - 1] = strides[k][d];
                continue;
            }
        }
        sizes[m] = sizes[d];
        for (size_t k = 0; k < nops; k++) strides[k][m] = strides[k][d];
        m++;
    }
    if (m == 0) {
        sizes[0] = 1;
        for (size_t k = 0; k < nops; k++) strides[k][0] = 0;
        m = 1;
    }
    *n = m;
}

ember_status ek_index_geometry(ember_kernel_ctx *ctx, const char *op, const ember_tensor *self,
                               const ember_tensor *const *ix, ek_index_geom *g) {
    g->nadv = 0;
    for (size_t j = 0; j < self->dim; j++) {
        if (ix[j] == NULL) continue;
        g->idx[g->nadv] = ix[j];
        g->adv[g->nadv++] = j;
    }
    if (g->nadv == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: no index tensor", op);
    int64_t bshape[EMBER_MAX_DIM];
    size_t nb;
    EK_TRY(ek_broadcast_shape(ctx, g->idx, g->nadv, bshape, &nb));
    bool adjacent = g->adv[g->nadv - 1] - g->adv[0] + 1 == g->nadv;
    g->rank = self->dim - g->nadv + nb;
    if (g->rank > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: indexed rank too large", op);
    memset(g->idx_st, 0, sizeof g->idx_st);
    size_t b0 = adjacent ? g->adv[0] : 0; /* first dim of B */
    for (size_t bd = 0; bd < nb; bd++) {
        g->shape[b0 + bd] = bshape[bd];
        for (size_t a = 0; a < g->nadv; a++) {
            const ember_tensor *t = g->idx[a];
            size_t lead = nb - t->dim;
            g->idx_st[a][b0 + bd] =
                (bd < lead || t->sizes[bd - lead] == 1) ? 0 : t->strides[bd - lead];
        }
    }
    size_t next = nb; /* non-adjacent: the other dims follow B in order */
    for (size_t j = 0; j < self->dim; j++) {
        if (ix[j] != NULL) continue;
        size_t od = !adjacent ? next++ : j < g->adv[0] ? j : j - g->nadv + nb;
        g->shape[od] = self->sizes[j];
        g->dim_of[j] = od;
    }
    return EMBER_OK;
}

ember_status ek_index_offset(ember_kernel_ctx *ctx, const ek_index_geom *g,
                             const ember_tensor *self, const int64_t *strides,
                             const int64_t *pos, int64_t *out) {
    int64_t o = 0;
    for (size_t a = 0; a < g->nadv; a++) {
        const ember_tensor *t = g->idx[a];
        int64_t i = t->dtype == EMBER_INT64 ? ((const int64_t *)t->data)[pos[a]]
                                            : ((const int32_t *)t->data)[pos[a]];
        int64_t size = self->sizes[g->adv[a]];
        if (i < -size || i >= size)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "index %lld out of range for dim %zu of size %lld",
                                     (long long)i, g->adv[a], (long long)size);
        o += (i < 0 ? i + size : i) * strides[g->adv[a]];
    }
    *out = o;
    return EMBER_OK;
}
