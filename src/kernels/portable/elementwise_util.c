/*
 * elementwise_util.c — the portable kernels' elementwise engine: typed loaders
 * and storers, broadcasting in chunks, and the binary, unary and comparison op
 * families (declared in kernel_util.h).
 */
#include "kernel_util.h"

#include <string.h>

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
            ek_shape_str64(b, sizeof b, shape, dim);
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
