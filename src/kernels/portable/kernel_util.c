/*
 * kernel_util.c — shared helpers of the portable kernel family.
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

static const char *shape_str64(char *buf, size_t cap, const int64_t *sizes, size_t dim) {
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
    return shape_str64(buf, cap, s, dim);
}

ember_status ek_resize_out(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *sizes,
                           size_t dim) {
    ember_status st = ember_tensor_resize(out, sizes, dim);
    if (st != EMBER_OK) {
        char want[96], have[96];
        shape_str64(want, sizeof want, sizes, dim);
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
            shape_str64(b, sizeof b, shape, r);
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
        shape_str64(buf, sizeof buf, shape, n);
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

/* ------------------------------------------------------------------------ */
/* Loaders and storers: one typed loop per (dtype, compute type)             */
/* ------------------------------------------------------------------------ */

/* Both loops have a contiguous twin (stride 1, the common case), which the
 * compiler can vectorize. */
#define EK_DEF_LOAD(NAME, ST, CT, EXPR)                                                            \
    static void NAME(void *dst, const void *src, int64_t stride, size_t n) {                       \
        CT *d = (CT *)dst;                                                                         \
        const ST *s = (const ST *)src;                                                             \
        if (stride == 1) {                                                                         \
            for (size_t i = 0; i < n; i++) {                                                       \
                ST x = s[i];                                                                       \
                d[i] = (CT)(EXPR);                                                                 \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            ST x = s[(int64_t)i * stride];                                                         \
            d[i] = (CT)(EXPR);                                                                     \
        }                                                                                          \
    }

#define EK_DEF_STORE(NAME, ST, CT, EXPR)                                                           \
    static void NAME(void *dst, int64_t stride, const void *src, size_t n) {                       \
        ST *d = (ST *)dst;                                                                         \
        const CT *s = (const CT *)src;                                                             \
        if (stride == 1) {                                                                         \
            for (size_t i = 0; i < n; i++) {                                                       \
                CT x = s[i];                                                                       \
                d[i] = (ST)(EXPR);                                                                 \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            CT x = s[i];                                                                           \
            d[(int64_t)i * stride] = (ST)(EXPR);                                                   \
        }                                                                                          \
    }

/* Integers: float to int truncates (saturating, NaN -> 0), as a C cast would
 * without its undefined behaviour; int64 to narrower ints wraps. */
#define EK_DEF_INT(SFX, ST)                                                                        \
    EK_DEF_LOAD(load_##SFX##_f32, ST, float, x)                                                    \
    EK_DEF_LOAD(load_##SFX##_f64, ST, double, x)                                                   \
    EK_DEF_LOAD(load_##SFX##_i64, ST, int64_t, x)                                                  \
    EK_DEF_STORE(store_##SFX##_f32, ST, float, ek_f64_to_i64((double)x))                           \
    EK_DEF_STORE(store_##SFX##_f64, ST, double, ek_f64_to_i64(x))                                  \
    EK_DEF_STORE(store_##SFX##_i64, ST, int64_t, x)

/* Floats: TOF reads one stored element as float (or double), FROMF writes. */
#define EK_DEF_FLOAT(SFX, ST, TOF, FROMF)                                                          \
    EK_DEF_LOAD(load_##SFX##_f32, ST, float, TOF(x))                                               \
    EK_DEF_LOAD(load_##SFX##_f64, ST, double, TOF(x))                                              \
    EK_DEF_LOAD(load_##SFX##_i64, ST, int64_t, ek_f64_to_i64((double)TOF(x)))                      \
    EK_DEF_STORE(store_##SFX##_f32, ST, float, FROMF(x))                                           \
    EK_DEF_STORE(store_##SFX##_f64, ST, double, FROMF(x))                                          \
    EK_DEF_STORE(store_##SFX##_i64, ST, int64_t, FROMF(x))

#define EK_HALF_FROM(x) ember_float_to_half((float)(x))
#define EK_BF16_FROM(x) ember_float_to_bf16((float)(x))

EK_DEF_INT(u8, uint8_t)
EK_DEF_INT(i8, int8_t)
EK_DEF_INT(i16, int16_t)
EK_DEF_INT(i32, int32_t)
EK_DEF_INT(i64, int64_t)
EK_DEF_FLOAT(f16, uint16_t, ember_half_to_float, EK_HALF_FROM)
EK_DEF_FLOAT(bf16, uint16_t, ember_bf16_to_float, EK_BF16_FROM)
EK_DEF_FLOAT(f32, float, EK_IDENT, EK_IDENT)
EK_DEF_FLOAT(f64, double, EK_IDENT, EK_IDENT)

/* Bool is stored as one byte; any non-zero byte reads as true. It is read as
 * uint8_t, never as C bool, because a program may hold other byte values. */
EK_DEF_LOAD(load_b_f32, uint8_t, float, x != 0)
EK_DEF_LOAD(load_b_f64, uint8_t, double, x != 0)
EK_DEF_LOAD(load_b_i64, uint8_t, int64_t, x != 0)
EK_DEF_STORE(store_b_f32, uint8_t, float, x != 0)
EK_DEF_STORE(store_b_f64, uint8_t, double, x != 0)
EK_DEF_STORE(store_b_i64, uint8_t, int64_t, x != 0)

#define EK_PICK(PREFIX, SFX, ct)                                                                   \
    ((ct) == EK_CT_F32   ? PREFIX##SFX##_f32                                                       \
     : (ct) == EK_CT_F64 ? PREFIX##SFX##_f64                                                       \
                         : PREFIX##SFX##_i64)

ek_load_fn ek_loader(int dtype, ek_ctype ct) {
    switch (dtype) {
    case EMBER_UINT8: return EK_PICK(load_, u8, ct);
    case EMBER_INT8: return EK_PICK(load_, i8, ct);
    case EMBER_INT16: return EK_PICK(load_, i16, ct);
    case EMBER_INT32: return EK_PICK(load_, i32, ct);
    case EMBER_INT64: return EK_PICK(load_, i64, ct);
    case EMBER_FLOAT16: return EK_PICK(load_, f16, ct);
    case EMBER_BFLOAT16: return EK_PICK(load_, bf16, ct);
    case EMBER_FLOAT32: return EK_PICK(load_, f32, ct);
    case EMBER_FLOAT64: return EK_PICK(load_, f64, ct);
    case EMBER_BOOL: return EK_PICK(load_, b, ct);
    default: return NULL;
    }
}

ek_store_fn ek_storer(int dtype, ek_ctype ct) {
    switch (dtype) {
    case EMBER_UINT8: return EK_PICK(store_, u8, ct);
    case EMBER_INT8: return EK_PICK(store_, i8, ct);
    case EMBER_INT16: return EK_PICK(store_, i16, ct);
    case EMBER_INT32: return EK_PICK(store_, i32, ct);
    case EMBER_INT64: return EK_PICK(store_, i64, ct);
    case EMBER_FLOAT16: return EK_PICK(store_, f16, ct);
    case EMBER_BFLOAT16: return EK_PICK(store_, bf16, ct);
    case EMBER_FLOAT32: return EK_PICK(store_, f32, ct);
    case EMBER_FLOAT64: return EK_PICK(store_, f64, ct);
    case EMBER_BOOL: return EK_PICK(store_, b, ct);
    default: return NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Elementwise engine                                                        */
/* ------------------------------------------------------------------------ */

static void id_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i];
}
static void id_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i];
}
static void id_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i];
}
const ek_map ek_map_identity = {id_f32, id_f64, id_i64};

/* The dtype whose elements are already in compute type ct (no conversion). */
static int native_dtype(ek_ctype ct) {
    return ct == EK_CT_F32 ? EMBER_FLOAT32 : ct == EK_CT_F64 ? EMBER_FLOAT64 : EMBER_INT64;
}

/* The input pointers are copied one by one: as a loop, the compiler turns
 * the copy into a memcpy call, which costs more than many a map call. */
static void call_map(const ek_map *m, ek_ctype ct, void *o, const void *const *in, size_t nin,
                     size_t n, void *arg) {
    const void *in0 = in[0], *in1 = nin > 1 ? in[1] : NULL, *in2 = nin > 2 ? in[2] : NULL;
    switch (ct) {
    case EK_CT_F32: {
        const float *p[3] = {(const float *)in0, (const float *)in1, (const float *)in2};
        m->f32((float *)o, p, n, arg);
        break;
    }
    case EK_CT_F64: {
        const double *p[3] = {(const double *)in0, (const double *)in1, (const double *)in2};
        m->f64((double *)o, p, n, arg);
        break;
    }
    case EK_CT_I64: {
        const int64_t *p[3] = {(const int64_t *)in0, (const int64_t *)in1, (const int64_t *)in2};
        m->i64((int64_t *)o, p, n, arg);
        break;
    }
    }
}

/* Values of a splat input (constant along the last dim) repeated in scratch
 * for one map call; without scratch, EK_CHUNK of them on the stack. */
#define EK_SPLAT 1024

/* Converts the element at src once (load) and writes it n times to dst, in ct. */
static void splat_fill(void *dst, ek_load_fn load, const void *src, ek_ctype ct, int64_t n) {
    union {
        float f;
        double d;
        int64_t i;
    } v;
    load(&v, src, 0, 1);
    switch (ct) {
    case EK_CT_F32:
        for (int64_t j = 0; j < n; j++) ((float *)dst)[j] = v.f;
        break;
    case EK_CT_F64:
        for (int64_t j = 0; j < n; j++) ((double *)dst)[j] = v.d;
        break;
    case EK_CT_I64:
        for (int64_t j = 0; j < n; j++) ((int64_t *)dst)[j] = v.i;
        break;
    }
}

/* One chunk buffer, big enough for EK_CHUNK values of any compute type. */
typedef union ek_chunk {
    float f[EK_CHUNK];
    double d[EK_CHUNK];
    int64_t i[EK_CHUNK];
} ek_chunk;

ember_status ek_map_tensors_to(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *shape,
                               size_t dim, const ember_tensor *const *ins, size_t nin, ek_ctype ct,
                               const ek_map *map, void *arg) {
    if (nin == 0 || nin > 3)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "elementwise: bad input count");
    bool have = ct == EK_CT_F32   ? map->f32 != NULL
                : ct == EK_CT_F64 ? map->f64 != NULL
                                  : map->i64 != NULL;
    if (!have)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "op not defined for %s inputs",
                                 ct == EK_CT_I64 ? "integer or bool" : "floating");
    ek_load_fn load[3];
    for (size_t k = 0; k < nin; k++) {
        load[k] = ek_loader(ins[k]->dtype, ct);
        if (load[k] == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                     "input %zu: dtype %s not supported", k,
                                     ember_dtype_name(ins[k]->dtype));
        if (!ek_broadcastable_to(ins[k], shape, dim)) {
            char a[96], b[96];
            ek_shape_str(a, sizeof a, ins[k]->sizes, ins[k]->dim);
            shape_str64(b, sizeof b, shape, dim);
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "input %zu of shape %s cannot broadcast to %s", k, a, b);
        }
    }
    ek_store_fn store = ek_storer(out->dtype, ct);
    if (store == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "out dtype %s not supported",
                                 ember_dtype_name(out->dtype));
    EK_TRY(ek_resize_out(ctx, out, shape, dim));
    if (out->numel == 0) return EMBER_OK;

    /* Strides of every operand in out's index space (operand 0 is out):
     * broadcast dims step by 0. */
    size_t nops = nin + 1;
    int64_t sizes[EMBER_MAX_DIM];
    int64_t strides[EK_MAX_OPERANDS][EMBER_MAX_DIM];
    for (size_t d = 0; d < dim; d++) {
        sizes[d] = shape[d];
        strides[0][d] = out->strides[d];
        for (size_t k = 0; k < nin; k++) {
            const ember_tensor *t = ins[k];
            size_t lead = dim - t->dim;
            strides[k + 1][d] = (d < lead || t->sizes[d - lead] == 1) ? 0 : t->strides[d - lead];
        }
    }
    size_t n = dim;
    ek_coalesce(sizes, &n, nops, strides);

    char *obase = (char *)out->data;
    size_t osize = ember_dtype_size(out->dtype);
    bool odirect = out->dtype == native_dtype(ct);
    int64_t len = sizes[n - 1];
    /* Splats: inputs constant along the last dim (stride 0 there, as the
     * (N, 1) of (N, M) + (N, 1)). Each run converts their value once and
     * repeats it in a buffer, rather than loading it again per chunk. */
    bool splat[3] = {false, false, false};
    size_t nsplat = 0;
    for (size_t k = 0; k < nin; k++)
        if (strides[k + 1][n - 1] == 0 && len > 1) {
            splat[k] = true;
            nsplat++;
        }
    /* When no other operand needs converting, a run (or, with splats, a
     * splat buffer's worth) is one map call on the operands in place;
     * otherwise runs go through the chunk buffers. */
    bool direct = odirect && strides[0][n - 1] == 1;
    for (size_t k = 0; k < nin; k++)
        if (!splat[k] && (ins[k]->dtype != native_dtype(ct) || strides[k + 1][n - 1] != 1))
            direct = false;
    int64_t step = direct && nsplat == 0 ? len : EK_CHUNK;

    ek_chunk inbuf[3], outbuf;
    char *sbuf[3] = {NULL, NULL, NULL}; /* the splat buffers: step values each */
    if (nsplat > 0) {
        /* direct: a wider step, if scratch has room for the buffers */
        const size_t csize = ct == EK_CT_F32 ? sizeof(float) : ct == EK_CT_F64 ? sizeof(double)
                                                                               : sizeof(int64_t);
        const int64_t wide = len < EK_SPLAT ? len : EK_SPLAT;
        const size_t bytes = (size_t)wide * csize; /* <= EK_SPLAT * 8 */
        char *big = NULL;
        if (direct && wide > EK_CHUNK) big = ember_kernel_scratch(ctx, nsplat * bytes, 16);
        if (big != NULL) step = wide;
        for (size_t k = 0, j = 0; k < nin; k++)
            if (splat[k]) sbuf[k] = big != NULL ? big + (j++) * bytes : (char *)&inbuf[k];
    }
    int64_t sfill = len < step ? len : step; /* values repeated in a splat buffer */
    int64_t isize[3] = {0, 0, 0};
    for (size_t k = 0; k < nin; k++) isize[k] = (int64_t)ember_dtype_size(ins[k]->dtype);

    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[EK_MAX_OPERANDS] = {0};
    if (direct && nsplat == 0 && n >= 2) {
        /* every run one map call on the operands in place: the runs of the
         * next-to-last dim go in a tight loop of offset steps */
        const int64_t rows = sizes[n - 2];
        /* locals, so that the calls through map do not force them to be
         * read again; offsets in bytes, stepped as integers (a pointer is
         * formed only for a row that exists) */
        const char *ibase[3] = {NULL, NULL, NULL};
        int64_t ostep = strides[0][n - 2] * (int64_t)osize, istep[3] = {0, 0, 0};
        for (size_t k = 0; k < nin; k++) {
            ibase[k] = (const char *)ins[k]->data;
            istep[k] = strides[k + 1][n - 2] * isize[k];
        }
        do {
            int64_t ob = off[0] * (int64_t)osize, ib[3] = {0, 0, 0};
            for (size_t k = 0; k < nin; k++) ib[k] = off[k + 1] * isize[k];
            for (int64_t r = 0; r < rows; r++) {
                const void *inp[3] = {ibase[0] + ib[0], NULL, NULL};
                if (nin > 1) inp[1] = ibase[1] + ib[1];
                if (nin > 2) inp[2] = ibase[2] + ib[2];
                call_map(map, ct, obase + ob, inp, nin, (size_t)len, arg);
                ob += ostep;
                for (size_t k = 0; k < nin; k++) ib[k] += istep[k];
            }
        } while (ek_advance(idx, sizes, n - 2, nops, (const int64_t(*)[EMBER_MAX_DIM])strides,
                            off));
        return EMBER_OK;
    }
    do {
        for (size_t k = 0; k < nin; k++) {
            if (!splat[k]) continue;
            const char *p = (const char *)ins[k]->data + off[k + 1] * isize[k];
            splat_fill(sbuf[k], load[k], p, ct, sfill);
        }
        for (int64_t j = 0; j < len; j += step) {
            size_t cnt = (size_t)(len - j < step ? len - j : step);
            const void *inp[3];
            for (size_t k = 0; k < nin; k++) {
                int64_t s = strides[k + 1][n - 1];
                const char *p = (const char *)ins[k]->data + (off[k + 1] + j * s) * isize[k];
                if (splat[k]) {
                    inp[k] = sbuf[k];
                } else if (ins[k]->dtype == native_dtype(ct) && s == 1) {
                    inp[k] = p; /* already in compute type: use in place */
                } else {
                    load[k](&inbuf[k], p, s, cnt);
                    inp[k] = &inbuf[k];
                }
            }
            int64_t so = strides[0][n - 1];
            char *op = obase + (off[0] + j * so) * (int64_t)osize;
            if (odirect && so == 1) {
                call_map(map, ct, op, inp, nin, cnt, arg);
            } else {
                call_map(map, ct, &outbuf, inp, nin, cnt, arg);
                store(op, so, &outbuf, cnt);
            }
        }
    } while (ek_advance(idx, sizes, n - 1, nops, (const int64_t(*)[EMBER_MAX_DIM])strides, off));
    return EMBER_OK;
}

ember_status ek_map_tensors(ember_kernel_ctx *ctx, ember_tensor *out,
                            const ember_tensor *const *ins, size_t nin, ek_ctype ct,
                            const ek_map *map, void *arg) {
    int64_t shape[EMBER_MAX_DIM];
    size_t dim;
    EK_TRY(ek_broadcast_shape(ctx, ins, nin, shape, &dim));
    return ek_map_tensors_to(ctx, out, shape, dim, ins, nin, ct, map, arg);
}

/* ------------------------------------------------------------------------ */
/* Op families: binary, unary, comparison                                    */
/* ------------------------------------------------------------------------ */

void ek_scalar_tensor_init(ek_scalar_tensor *st, const ek_scalar *s, ek_ctype ct) {
    memset(st, 0, sizeof *st);
    switch (ct) {
    case EK_CT_F32:
        st->v.f = (float)s->d;
        st->t.dtype = EMBER_FLOAT32;
        break;
    case EK_CT_F64:
        st->v.d = s->d;
        st->t.dtype = EMBER_FLOAT64;
        break;
    case EK_CT_I64:
        st->v.i = s->i;
        st->t.dtype = EMBER_INT64;
        break;
    }
    st->t.data = &st->v;
    st->t.numel = 1;
    st->t.nbytes = ember_dtype_size(st->t.dtype);
    st->t.capacity = st->t.nbytes;
    st->t.dim = 0;
}

int ek_binary_result_type(const ember_tensor *a, const ember_tensor *b, const ek_scalar *s) {
    ek_result_type rt;
    ek_result_type_init(&rt);
    ek_result_type_tensor(&rt, a);
    if (b != NULL)
        ek_result_type_tensor(&rt, b);
    else
        ek_result_type_scalar(&rt, s);
    return ek_result_type_get(&rt);
}

ember_status ek_map_binary(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *a,
                           const ember_tensor *b, const ek_scalar *s, int result_dtype, ek_ctype ct,
                           const ek_map *map, void *arg) {
    EK_TRY(ek_check_supported(ctx, a->dtype, "self"));
    if (b != NULL) EK_TRY(ek_check_supported(ctx, b->dtype, "other"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (!ek_can_cast(result_dtype, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result_dtype), ember_dtype_name(out->dtype));
    ek_scalar_tensor st;
    if (b == NULL) {
        ek_scalar_tensor_init(&st, s, ct);
        b = &st.t;
    }
    const ember_tensor *ins[2] = {a, b};
    return ek_map_tensors(ctx, out, ins, 2, ct, map, arg);
}

ember_status ek_unary_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, const ek_map *map,
                         void *arg, bool float_op) {
    ember_tensor *self, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    int result = self->dtype;
    ek_ctype ct = ek_ctype_of(self->dtype);
    if (float_op) {
        /* integer and bool inputs give float32 results, as in PyTorch */
        if (!ek_is_float(result)) result = EMBER_FLOAT32;
        ct = ek_ctype_float_of(result);
    }
    if (!ek_can_cast(result, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result), ember_dtype_name(out->dtype));
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ct, map, arg);
}

#define EK_DEF_CMP(NAME, OP)                                                                       \
    static void NAME##_f32(float *o, const float *const *in, size_t n, void *arg) {                \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = in[0][i] OP in[1][i] ? 1.0f : 0.0f;                  \
    }                                                                                              \
    static void NAME##_f64(double *o, const double *const *in, size_t n, void *arg) {              \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = in[0][i] OP in[1][i] ? 1.0 : 0.0;                    \
    }                                                                                              \
    static void NAME##_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {            \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = in[0][i] OP in[1][i] ? 1 : 0;                        \
    }

EK_DEF_CMP(cmp_eq, ==)
EK_DEF_CMP(cmp_ne, !=)
EK_DEF_CMP(cmp_lt, <)
EK_DEF_CMP(cmp_le, <=)
EK_DEF_CMP(cmp_gt, >)
EK_DEF_CMP(cmp_ge, >=)

static const ek_map cmp_maps[6] = {
    {cmp_eq_f32, cmp_eq_f64, cmp_eq_i64}, {cmp_ne_f32, cmp_ne_f64, cmp_ne_i64},
    {cmp_lt_f32, cmp_lt_f64, cmp_lt_i64}, {cmp_le_f32, cmp_le_f64, cmp_le_i64},
    {cmp_gt_f32, cmp_gt_f64, cmp_gt_i64}, {cmp_ge_f32, cmp_ge_f64, cmp_ge_i64},
};

/* An integer Scalar compared with a narrower integer tensor first takes the
 * tensor's dtype, as in PyTorch: a uint8 tensor == -1 compares with 255. */
static ek_scalar scalar_as_int_dtype(const ek_scalar *s, int dtype) {
    union {
        uint8_t u8;
        int8_t i8;
        int16_t i16;
        int32_t i32;
    } b;
    switch (dtype) {
    case EMBER_UINT8: ek_scalar_store(dtype, s, &b); return ek_scalar_from_int(b.u8);
    case EMBER_INT8: ek_scalar_store(dtype, s, &b); return ek_scalar_from_int(b.i8);
    case EMBER_INT16: ek_scalar_store(dtype, s, &b); return ek_scalar_from_int(b.i16);
    case EMBER_INT32: ek_scalar_store(dtype, s, &b); return ek_scalar_from_int(b.i32);
    default: return *s;
    }
}

ember_status ek_compare_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, ek_cmp cmp,
                           bool scalar) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int common = ek_binary_result_type(self, other, &s);
    if (scalar && s.kind == EK_SCALAR_INT) s = scalar_as_int_dtype(&s, common);
    /* the 1/0 result is bool, which casts to any out dtype */
    return ek_map_binary(ctx, out, self, other, &s, EMBER_BOOL, ek_ctype_of(common), &cmp_maps[cmp],
                         NULL);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

ember_status ek_reduce_plan_init(ember_kernel_ctx *ctx, ek_reduce_plan *p, const ember_tensor *in,
                                 const int64_t *dims, size_t ndims, bool has_dims, bool keepdim) {
    memset(p, 0, sizeof *p);
    size_t r = in->dim;
    if (!has_dims || ndims == 0) {
        for (size_t d = 0; d < r; d++) p->reduced[d] = true;
    } else {
        for (size_t j = 0; j < ndims; j++) {
            size_t d;
            EK_TRY(ek_norm_dim(ctx, dims[j], r, &d));
            if (r == 0) continue; /* reducing a 0-dim tensor over dim 0 */
            if (p->reduced[d])
                return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                         "dim %zu appears more than once in the reduction", d);
            p->reduced[d] = true;
        }
    }
    p->red_count = 1;
    for (size_t d = 0; d < r; d++) {
        if (p->reduced[d]) {
            if (keepdim) p->out_sizes[p->out_dim++] = 1;
            p->red_sizes[p->nred] = in->sizes[d];
            p->red_strides[0][p->nred] = in->strides[d];
            p->nred++;
            p->red_count *= in->sizes[d]; /* <= numel of in: no overflow */
        } else {
            p->keep_out_dim[p->nkeep] = p->out_dim;
            p->out_sizes[p->out_dim++] = in->sizes[d];
            p->keep_sizes[p->nkeep] = in->sizes[d];
            p->keep_strides[1][p->nkeep] = in->strides[d];
            p->nkeep++;
        }
    }
    ek_coalesce(p->red_sizes, &p->nred, 1, p->red_strides);
    return EMBER_OK;
}

void ek_reduce_plan_bind_out(ek_reduce_plan *p, const ember_tensor *out) {
    for (size_t j = 0; j < p->nkeep; j++) p->keep_strides[0][j] = out->strides[p->keep_out_dim[j]];
}

void ek_reduce_fold(const ek_reduce_plan *p, const ember_tensor *in, int64_t in_off,
                    ek_load_fn load, ek_fold_fn fold, void *state) {
    if (p->red_count == 0) return;
    ek_chunk buf;
    size_t esize = ember_dtype_size(in->dtype);
    int64_t len = p->red_sizes[p->nred - 1];
    int64_t stride = p->red_strides[0][p->nred - 1];
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[1] = {in_off};
    int64_t pos = 0;
    do {
        for (int64_t j = 0; j < len; j += EK_CHUNK) {
            size_t cnt = (size_t)(len - j < EK_CHUNK ? len - j : EK_CHUNK);
            const char *src = (const char *)in->data + (off[0] + j * stride) * (int64_t)esize;
            load(&buf, src, stride, cnt);
            fold(state, &buf, cnt, pos);
            pos += (int64_t)cnt;
        }
    } while (ek_advance(idx, p->red_sizes, p->nred - 1, 1,
                        (const int64_t(*)[EMBER_MAX_DIM])p->red_strides, off));
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                             */
/* ------------------------------------------------------------------------ */

/* Copies len elements of es bytes, ds and ss elements apart (memmove: a
 * malformed program may hand the same tensor twice). */
static void copy_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t len, size_t es) {
    if (ds == 1 && ss == 1) {
        memmove(d, s, (size_t)len * es);
        return;
    }
    int64_t e = (int64_t)es;
    /* constant-size moves compile to single loads and stores */
    switch (es) {
    case 1:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds, s + i * ss, 1);
        break;
    case 2:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 2, s + i * ss * 2, 2);
        break;
    case 4:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 4, s + i * ss * 4, 4);
        break;
    case 8:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 8, s + i * ss * 8, 8);
        break;
    default:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * e, s + i * ss * e, es);
        break;
    }
}

/* Tile edge for strided (transposing) copies: a tile of both sides fits in L1. */
#define EK_COPY_TILE 32

void ek_copy_block(void *dst, int64_t dst_off, const int64_t *dst_strides, const void *src,
                   int64_t src_off, const int64_t *src_strides, const int64_t *sizes, size_t ndim,
                   size_t elsize) {
    int64_t sz[EMBER_MAX_DIM];
    int64_t st[2][EMBER_MAX_DIM];
    for (size_t d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return;
        sz[d] = sizes[d];
        st[0][d] = dst_strides[d];
        st[1][d] = src_strides[d];
    }
    size_t n = ndim;
    ek_coalesce(sz, &n, 2, st);
    int64_t es = (int64_t)elsize;
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[2] = {dst_off, src_off};
    int64_t cols = sz[n - 1], dc = st[0][n - 1], sc = st[1][n - 1];
    if (n == 1 || (dc == 1 && sc == 1)) {
        /* rows of the last dim, one after another */
        do {
            copy_run((char *)dst + off[0] * es, dc, (const char *)src + off[1] * es, sc, cols,
                     elsize);
        } while (ek_advance(idx, sz, n - 1, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
        return;
    }
    /* A strided last dim (a transpose): walk the last two dims in square
     * tiles so both sides stay in cache. */
    int64_t rows = sz[n - 2], dr = st[0][n - 2], sr = st[1][n - 2];
    do {
        char *d = (char *)dst + off[0] * es;
        const char *s = (const char *)src + off[1] * es;
        for (int64_t r0 = 0; r0 < rows; r0 += EK_COPY_TILE) {
            int64_t r1 = rows - r0 < EK_COPY_TILE ? rows : r0 + EK_COPY_TILE;
            for (int64_t c0 = 0; c0 < cols; c0 += EK_COPY_TILE) {
                int64_t cn = cols - c0 < EK_COPY_TILE ? cols - c0 : EK_COPY_TILE;
                for (int64_t r = r0; r < r1; r++)
                    copy_run(d + (r * dr + c0 * dc) * es, dc, s + (r * sr + c0 * sc) * es, sc, cn,
                             elsize);
            }
        }
    } while (ek_advance(idx, sz, n - 2, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
}

/* The compute type that carries a value from one dtype to another exactly
 * enough: double if either side is float64, float if either is floating. */
static ek_ctype cast_ctype(int a, int b) {
    if (a == EMBER_FLOAT64 || b == EMBER_FLOAT64) return EK_CT_F64;
    if (ek_is_float(a) || ek_is_float(b)) return EK_CT_F32;
    return EK_CT_I64;
}

void ek_copy_block_cast(void *dst, int dst_dtype, int64_t dst_off, const int64_t *dst_strides,
                        const void *src, int src_dtype, int64_t src_off, const int64_t *src_strides,
                        const int64_t *sizes, size_t ndim) {
    if (dst_dtype == src_dtype) {
        ek_copy_block(dst, dst_off, dst_strides, src, src_off, src_strides, sizes, ndim,
                      ember_dtype_size(dst_dtype));
        return;
    }
    int64_t sz[EMBER_MAX_DIM];
    int64_t st[2][EMBER_MAX_DIM];
    for (size_t d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return;
        sz[d] = sizes[d];
        st[0][d] = dst_strides[d];
        st[1][d] = src_strides[d];
    }
    size_t n = ndim;
    ek_coalesce(sz, &n, 2, st);
    ek_ctype ct = cast_ctype(src_dtype, dst_dtype);
    ek_load_fn load = ek_loader(src_dtype, ct);
    ek_store_fn store = ek_storer(dst_dtype, ct);
    if (load == NULL || store == NULL) return;
    int64_t dsz = (int64_t)ember_dtype_size(dst_dtype), ssz = (int64_t)ember_dtype_size(src_dtype);
    int64_t len = sz[n - 1], ds = st[0][n - 1], ss = st[1][n - 1];
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[2] = {dst_off, src_off};
    ek_chunk buf;
    do {
        for (int64_t j = 0; j < len; j += EK_CHUNK) {
            size_t cnt = (size_t)(len - j < EK_CHUNK ? len - j : EK_CHUNK);
            load(&buf, (const char *)src + (off[1] + j * ss) * ssz, ss, cnt);
            store((char *)dst + (off[0] + j * ds) * dsz, ds, &buf, cnt);
        }
    } while (ek_advance(idx, sz, n - 1, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
}

void ek_copy_tensor(ember_tensor *out, const ember_tensor *in) {
    if (in->numel == 0) return;
    if (in->dtype == out->dtype && ember_tensor_is_contiguous(in) &&
        ember_tensor_is_contiguous(out)) {
        memmove(out->data, in->data, in->nbytes);
        return;
    }
    int64_t sizes[EMBER_MAX_DIM];
    ek_sizes64(in, sizes);
    ek_copy_block_cast(out->data, out->dtype, 0, out->strides, in->data, in->dtype, 0, in->strides,
                       sizes, in->dim);
}

ember_status ek_copy_reshape(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *in) {
    if (in->numel != out->numel || in->dtype != out->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "reshape: %lld elements into %lld",
                                 (long long)in->numel, (long long)out->numel);
    if (in->numel == 0) return EMBER_OK;
    if (ember_tensor_is_contiguous(in) && ember_tensor_is_contiguous(out)) {
        memmove(out->data, in->data, in->nbytes);
        return EMBER_OK;
    }
    /* walk the dims of size > 1 of both side by side */
    int64_t sizes[EMBER_MAX_DIM], ist[EMBER_MAX_DIM], ost[EMBER_MAX_DIM];
    size_t n = 0, j = 0;
    for (size_t i = 0; i < in->dim; i++) {
        if (in->sizes[i] == 1) continue;
        while (j < out->dim && out->sizes[j] == 1) j++;
        if (j == out->dim || out->sizes[j] != in->sizes[i])
            return ember_kernel_fail(
                ctx, EMBER_ERR_NOT_SUPPORTED,
                "reshape of a non-contiguous tensor (dim order) is not supported");
        sizes[n] = in->sizes[i];
        ist[n] = in->strides[i];
        ost[n] = out->strides[j];
        n++;
        j++;
    }
    ek_copy_block(out->data, 0, ost, in->data, 0, ist, sizes, n, ember_dtype_size(in->dtype));
    return EMBER_OK;
}

void ek_fill_bytes(void *dst, int64_t numel, const void *value, size_t elsize) {
    char *d = (char *)dst;
    for (int64_t i = 0; i < numel; i++) memcpy(d + i * (int64_t)elsize, value, elsize);
}

/* ------------------------------------------------------------------------ */
/* Matrix multiply                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Float matmul in register tiles: EK_MM_MR rows by EK_MM_NR columns of out
 * are accumulated over the whole of k in a local array, then written once.
 * The column loop is long enough (32) that the compiler vectorizes it rather
 * than unrolling it first, and short enough that the tile's accumulators
 * stay in vector registers (or close by) while each loaded row segment of w
 * serves EK_MM_MR rows. Each output element sums over p in order.
 */
#define EK_MM_NR 32
#define EK_MM_MR 4
/* Columns of the remainder (m % EK_MM_NR) loop, on the stack. */
#define EK_MM_TAIL EK_MM_NR

/* What the tiles do with a finished accumulator: out = alpha * acc (+ beta * bias). */
#define EK_DEF_MATMUL(SFX, T, CT, LOAD, STORE)                                                     \
    typedef struct mm_epi_##SFX {                                                                  \
        CT alpha, beta;                                                                            \
        const T *bias; /* NULL: none; element (i, j) at bias[i * si + j * sj] */                   \
        int64_t si, sj;                                                                            \
    } mm_epi_##SFX;                                                                                \
                                                                                                   \
    static inline CT mm_final_##SFX(const mm_epi_##SFX *e, CT acc, int64_t i, int64_t j) {         \
        CT v = e->alpha * acc;                                                                     \
        if (e->bias != NULL) v += e->beta * LOAD(e->bias[i * e->si + j * e->sj]);                  \
        return v;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* rows i0..i0+MR, columns j0..j0+NR of out; A, W, O point at (i0, 0), (0, j0), (i0, j0) */    \
    static void mm_tile4_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W,             \
                               int64_t ldw, int64_t k, const mm_epi_##SFX *e, int64_t i0,          \
                               int64_t j0) {                                                       \
        CT c[EK_MM_MR][EK_MM_NR];                                                                  \
        for (int r = 0; r < EK_MM_MR; r++)                                                         \
            for (int j = 0; j < EK_MM_NR; j++) c[r][j] = 0;                                        \
        for (int64_t p = 0; p < k; p++) {                                                          \
            const T *wrow = W + p * ldw;                                                           \
            for (int r = 0; r < EK_MM_MR; r++) {                                                   \
                const CT av = LOAD(A[r * lda + p]);                                                \
                for (int j = 0; j < EK_MM_NR; j++) c[r][j] += av * LOAD(wrow[j]);                  \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < EK_MM_MR; r++)                                                         \
            for (int j = 0; j < EK_MM_NR; j++)                                                     \
                O[r * ldo + j] = STORE(mm_final_##SFX(e, c[r][j], i0 + r, j0 + j));                \
    }                                                                                              \
                                                                                                   \
    /* one row i0, columns j0..j0+NR */                                                            \
    static void mm_tile1_##SFX(T *O, const T *A, const T *W, int64_t ldw, int64_t k,               \
                               const mm_epi_##SFX *e, int64_t i0, int64_t j0) {                    \
        CT c[EK_MM_NR];                                                                            \
        for (int j = 0; j < EK_MM_NR; j++) c[j] = 0;                                               \
        for (int64_t p = 0; p < k; p++) {                                                          \
            const T *wrow = W + p * ldw;                                                           \
            const CT av = LOAD(A[p]);                                                              \
            for (int j = 0; j < EK_MM_NR; j++) c[j] += av * LOAD(wrow[j]);                         \
        }                                                                                          \
        for (int j = 0; j < EK_MM_NR; j++) O[j] = STORE(mm_final_##SFX(e, c[j], i0, j0 + j));      \
    }                                                                                              \
                                                                                                   \
    static void matmul_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W, int64_t ldw,  \
                             int64_t n, int64_t k, int64_t m, double alpha,                        \
                             const ek_mm_bias *bias) {                                             \
        mm_epi_##SFX e = {(CT)alpha, 0, NULL, 0, 0};                                               \
        if (bias != NULL && bias->beta != 0) {                                                     \
            e.beta = (CT)bias->beta;                                                               \
            e.bias = (const T *)bias->data;                                                        \
            e.si = bias->si;                                                                       \
            e.sj = bias->sj;                                                                       \
        }                                                                                          \
        if (k == 0) { /* no products (a and w may be NULL): out is the epilogue of 0 */            \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < m; j++)                                                    \
                    O[i * ldo + j] = STORE(mm_final_##SFX(&e, 0, i, j));                           \
            return;                                                                                \
        }                                                                                          \
        const int64_t mfull = m - m % EK_MM_NR;                                                    \
        /* column panels outside: a panel of w (k, NR) stays in cache across row tiles */          \
        for (int64_t j0 = 0; j0 < mfull; j0 += EK_MM_NR) {                                         \
            int64_t i0 = 0;                                                                        \
            for (; i0 + EK_MM_MR <= n; i0 += EK_MM_MR)                                             \
                mm_tile4_##SFX(O + i0 * ldo + j0, ldo, A + i0 * lda, lda, W + j0, ldw, k, &e, i0,  \
                               j0);                                                                \
            for (; i0 < n; i0++)                                                                   \
                mm_tile1_##SFX(O + i0 * ldo + j0, A + i0 * lda, W + j0, ldw, k, &e, i0, j0);       \
        }                                                                                          \
        if (mfull == m) return;                                                                    \
        /* the last m % NR columns, one row at a time */                                           \
        const int64_t jn = m - mfull;                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            CT c[EK_MM_TAIL];                                                                      \
            for (int64_t j = 0; j < jn; j++) c[j] = 0;                                             \
            for (int64_t p = 0; p < k; p++) {                                                      \
                const CT av = LOAD(A[i * lda + p]);                                                \
                const T *wrow = W + p * ldw + mfull;                                               \
                for (int64_t j = 0; j < jn; j++) c[j] += av * LOAD(wrow[j]);                       \
            }                                                                                      \
            for (int64_t j = 0; j < jn; j++)                                                       \
                O[i * ldo + mfull + j] = STORE(mm_final_##SFX(&e, c[j], i, mfull + j));            \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(EK_DEF_MATMUL)

/*
 * Integer matmul, i-k-j order: products and sums in uint64, so that overflow
 * wraps (two's complement) as in PyTorch instead of being undefined. alpha
 * and beta are integers here (PyTorch takes no fractional ones).
 */
#define EK_MM_IBLOCK 64
#define EK_DEF_MATMUL_INT(SFX, T)                                                                  \
    static void matmul_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W, int64_t ldw,  \
                             int64_t n, int64_t k, int64_t m, double alpha_d,                      \
                             const ek_mm_bias *bias) {                                             \
        const uint64_t alpha = (uint64_t)ek_f64_to_i64(alpha_d);                                   \
        const T *bias_data = bias != NULL && bias->beta != 0 ? (const T *)bias->data : NULL;       \
        const uint64_t beta = bias != NULL ? (uint64_t)ek_f64_to_i64(bias->beta) : 0;              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            for (int64_t j0 = 0; j0 < m; j0 += EK_MM_IBLOCK) {                                     \
                int64_t jn = m - j0 < EK_MM_IBLOCK ? m - j0 : EK_MM_IBLOCK;                        \
                uint64_t acc[EK_MM_IBLOCK];                                                        \
                for (int64_t j = 0; j < jn; j++) acc[j] = 0;                                       \
                for (int64_t p = 0; p < k; p++) {                                                  \
                    const uint64_t av = (uint64_t)(int64_t)A[i * lda + p];                         \
                    const T *wrow = W + p * ldw + j0;                                              \
                    for (int64_t j = 0; j < jn; j++) acc[j] += av * (uint64_t)(int64_t)wrow[j];    \
                }                                                                                  \
                for (int64_t j = 0; j < jn; j++) {                                                 \
                    uint64_t v = alpha * acc[j];                                                   \
                    if (bias_data != NULL)                                                         \
                        v += beta *                                                                \
                             (uint64_t)(int64_t)bias_data[i * bias->si + (j0 + j) * bias->sj];     \
                    O[i * ldo + j0 + j] = (T)(int64_t)v;                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_DEF_MATMUL_INT(u8, uint8_t)
EK_DEF_MATMUL_INT(i8, int8_t)
EK_DEF_MATMUL_INT(i16, int16_t)
EK_DEF_MATMUL_INT(i32, int32_t)
EK_DEF_MATMUL_INT(i64, int64_t)

void ek_gemm(int dtype, void *out, int64_t ldo, const void *a, int64_t lda, const void *w,
             int64_t ldw, int64_t n, int64_t k, int64_t m, double alpha, const ek_mm_bias *bias) {
    /* With k == 0 nothing is read from a or w, which may then be NULL: the
     * float loops form no pointer into them then, the integer loops none
     * outside their loop over k. */
    if (n == 0 || m == 0) return;
#define EK_GEMM_CASE(CODE, SFX, T)                                                                 \
    case CODE:                                                                                     \
        matmul_##SFX((T *)out, ldo, (const T *)a, lda, (const T *)w, ldw, n, k, m, alpha, bias);   \
        break;
    switch (dtype) {
        EK_GEMM_CASE(EMBER_FLOAT32, f32, float)
        EK_GEMM_CASE(EMBER_FLOAT64, f64, double)
        EK_GEMM_CASE(EMBER_FLOAT16, f16, uint16_t)
        EK_GEMM_CASE(EMBER_BFLOAT16, bf16, uint16_t)
        EK_GEMM_CASE(EMBER_UINT8, u8, uint8_t)
        EK_GEMM_CASE(EMBER_INT8, i8, int8_t)
        EK_GEMM_CASE(EMBER_INT16, i16, int16_t)
        EK_GEMM_CASE(EMBER_INT32, i32, int32_t)
        EK_GEMM_CASE(EMBER_INT64, i64, int64_t)
    default: break;
    }
#undef EK_GEMM_CASE
}

void ek_matmul(int dtype, void *out, const void *a, const void *w, int64_t batch, int64_t n,
               int64_t k, int64_t m, double alpha, const ek_mm_bias *bias) {
    size_t es = ember_dtype_size(dtype);
    for (int64_t bt = 0; bt < batch; bt++) {
        /* batch bt: a (n, k), w (k, m), out (n, m) */
        char *o = (char *)out + (size_t)(bt * n * m) * es;
        const char *ab = a != NULL ? (const char *)a + (size_t)(bt * n * k) * es : NULL;
        const char *wb = w != NULL ? (const char *)w + (size_t)(bt * k * m) * es : NULL;
        ek_gemm(dtype, o, m, ab, k, wb, m, n, k, m, alpha, bias);
    }
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

void ek_extreme_fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    ek_extreme_state *s = (ek_extreme_state *)state;
    const double *v = (const double *)x;
    for (size_t k = 0; k < n && !s->nan; k++) {
        if (!s->seen || v[k] != v[k] || (s->is_max ? v[k] > s->d : v[k] < s->d)) {
            s->d = v[k];
            s->best = pos + (int64_t)k;
            s->nan = v[k] != v[k];
        }
        s->seen = true;
    }
}

void ek_extreme_fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    ek_extreme_state *s = (ek_extreme_state *)state;
    const int64_t *v = (const int64_t *)x;
    for (size_t k = 0; k < n; k++) {
        if (!s->seen || (s->is_max ? v[k] > s->i : v[k] < s->i)) {
            s->i = v[k];
            s->best = pos + (int64_t)k;
        }
        s->seen = true;
    }
}
