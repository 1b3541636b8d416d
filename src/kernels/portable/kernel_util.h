/*
 * kernel_util.h — shared helpers of the portable kernel family (internal).
 *
 * Everything a reference kernel needs besides its own loop:
 *
 *   - argument access that checks value tags (ek_arg_*), failing with a
 *     message that names the argument index;
 *   - dtype facts, PyTorch type promotion (ek_promote, ek_result_type) and
 *     cast rules (ek_can_cast);
 *   - output resizing with a readable error (ek_resize_out);
 *   - the elementwise engine (ek_map): broadcasting over up to three inputs
 *     of any supported dtypes, computed in one of three compute types;
 *   - a reduction plan (ek_reduce_plan) for ops that reduce over dims;
 *   - a strided block copy (ek_copy_block) for data-movement ops;
 *   - typed-loop generators for the float-only structured kernels.
 *
 * Prefix: ek_ (ember kernels). Kernel entry points are ek_op_* and ek_prim_*
 * and are declared in ops.h.
 */
#ifndef EMBER_KERNELS_PORTABLE_KERNEL_UTIL_H
#define EMBER_KERNELS_PORTABLE_KERNEL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/kernel.h"

/* ------------------------------------------------------------------------ */
/* Status plumbing                                                           */
/* ------------------------------------------------------------------------ */

/** Returns from the enclosing function if expr is not EMBER_OK. */
#define EK_TRY(expr)                                                                               \
    do {                                                                                           \
        ember_status ek_try_status_ = (expr);                                                      \
        if (ek_try_status_ != EMBER_OK) return ek_try_status_;                                     \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Dtypes                                                                    */
/* ------------------------------------------------------------------------ */

static inline bool ek_is_float(int dt) {
    return dt == EMBER_FLOAT16 || dt == EMBER_BFLOAT16 || dt == EMBER_FLOAT32 ||
           dt == EMBER_FLOAT64;
}

/** Integer dtypes, not bool. */
static inline bool ek_is_int(int dt) {
    return dt == EMBER_UINT8 || dt == EMBER_INT8 || dt == EMBER_INT16 || dt == EMBER_INT32 ||
           dt == EMBER_INT64;
}

/** The dtypes the portable kernels compute on (float, int and bool). */
static inline bool ek_is_supported(int dt) {
    return ek_is_float(dt) || ek_is_int(dt) || dt == EMBER_BOOL;
}

/** PyTorch's promoteTypes over the supported dtypes (both must be supported). */
int ek_promote(int a, int b);

/**
 * PyTorch's canCast: a value of dtype from may be written to dtype to
 * (float to int, and non-bool to bool, are refused).
 */
bool ek_can_cast(int from, int to);

/* ------------------------------------------------------------------------ */
/* Scalars                                                                   */
/* ------------------------------------------------------------------------ */

/** Type category of a Scalar argument. */
typedef enum ek_scalar_kind { EK_SCALAR_BOOL, EK_SCALAR_INT, EK_SCALAR_FLOAT } ek_scalar_kind;

/** A Scalar argument (Int, Double or Bool value) in both representations. */
typedef struct ek_scalar {
    double d;  /**< the value as double */
    int64_t i; /**< the value as int64 (doubles truncated, saturated) */
    ek_scalar_kind kind;
} ek_scalar;

/** double to int64 without undefined behaviour: truncates, saturates, NaN -> 0. */
static inline int64_t ek_f64_to_i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

/** Writes a scalar as one element of dtype into dst (ember_dtype_size bytes). */
void ek_scalar_store(int dtype, const ek_scalar *s, void *dst);

/**
 * s as PyTorch hands it to a kernel computing in the integer dtype `dtype`:
 * an integer scalar wraps to the dtype's width (uint8: -4 becomes 252), as
 * div, fmod, remainder and clamp see it. Other scalars and dtypes: s.
 */
ek_scalar ek_scalar_wrap(const ek_scalar *s, int dtype);

/** A Float / Int scalar holding d / i. */
ek_scalar ek_scalar_from_double(double d);
ek_scalar ek_scalar_from_int(int64_t i);

/* ------------------------------------------------------------------------ */
/* Type promotion (c10 ResultTypeState)                                      */
/* ------------------------------------------------------------------------ */

/**
 * Result dtype of an op over tensors and scalars, with PyTorch's priorities:
 * tensors with dim > 0 first, then 0-dim tensors, then Python scalars (which
 * count only by category: bool, int64, or the default float32).
 */
typedef struct ek_result_type {
    int dim_result; /**< -1 while undefined */
    int zero_result;
    int wrapped_result;
} ek_result_type;

void ek_result_type_init(ek_result_type *rt);
void ek_result_type_tensor(ek_result_type *rt, const ember_tensor *t);
void ek_result_type_scalar(ek_result_type *rt, const ek_scalar *s);
int ek_result_type_get(const ek_result_type *rt);

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */
/* ------------------------------------------------------------------------ */

/** Fails with EMBER_ERR_INVALID_PROGRAM unless nargs == want. */
ember_status ek_check_nargs(ember_kernel_ctx *ctx, size_t nargs, size_t want);

/**
 * Argument i as a tensor (tag Tensor, supported dtype not required). Fails
 * with EMBER_ERR_INVALID_PROGRAM on a wrong tag, EMBER_ERR_INVALID_STATE if a
 * non-empty tensor has no storage.
 */
ember_status ek_arg_tensor(ember_kernel_ctx *ctx, ember_value **args, size_t i, ember_tensor **out);
/** Tensor? argument: *out is NULL for None. */
ember_status ek_arg_opt_tensor(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                               ember_tensor **out);
/**
 * An output tensor argument (storage may be unbound until resized); fails
 * INVALID_PROGRAM for a constant tensor, which may be read-only memory.
 */
ember_status ek_arg_out(ember_kernel_ctx *ctx, ember_value **args, size_t i, ember_tensor **out);
/** A tensor whose shape and dtype only are read (storage not needed). */
ember_status ek_arg_tensor_meta(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                ember_tensor **out);
/** A tensor both read and written in place (copy_'s self): both checks. */
ember_status ek_arg_inout(ember_kernel_ctx *ctx, ember_value **args, size_t i, ember_tensor **out);
ember_status ek_arg_int(ember_kernel_ctx *ctx, ember_value **args, size_t i, int64_t *out);
/** int? argument: *present false for None. */
ember_status ek_arg_opt_int(ember_kernel_ctx *ctx, ember_value **args, size_t i, int64_t *out,
                            bool *present);
ember_status ek_arg_bool(ember_kernel_ctx *ctx, ember_value **args, size_t i, bool *out);
/** float argument (Double, or an Int value). */
ember_status ek_arg_double(ember_kernel_ctx *ctx, ember_value **args, size_t i, double *out);
/** Scalar argument (Int, Double or Bool). */
ember_status ek_arg_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t i, ek_scalar *out);
/** Scalar? argument: *present false for None. */
ember_status ek_arg_opt_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t i, ek_scalar *out,
                               bool *present);
/** int[] argument; items stay valid until the list's values change. */
ember_status ek_arg_int_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                             const int64_t **items, size_t *len);
/** int[]? argument: *present false (and len 0) for None. */
ember_status ek_arg_opt_int_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                 const int64_t **items, size_t *len, bool *present);
/** str argument (not NUL-terminated). str? gives len 0 and NULL for None. */
ember_status ek_arg_string(ember_kernel_ctx *ctx, ember_value **args, size_t i, const char **str,
                           size_t *len, bool allow_none);
/** Tensor[] argument: the list's items (each checked to be a tensor). */
ember_status ek_arg_tensor_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                ember_value ***items, size_t *len);
/** bool[] argument (literal items, as in the file). */
ember_status ek_arg_bool_list(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                              const bool **items, size_t *len);
/**
 * ScalarType? argument (an Int dtype code or None). If present it must equal
 * want (the out tensor's dtype), else EMBER_ERR_TYPE_MISMATCH.
 */
ember_status ek_arg_check_dtype(ember_kernel_ctx *ctx, ember_value **args, size_t i, int want);

/** True if str[0..len) equals the NUL-terminated lit. */
bool ek_str_eq(const char *str, size_t len, const char *lit);

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */
/* ------------------------------------------------------------------------ */

/** Normalizes dim (may be negative) against rank; fails INVALID_ARGUMENT. */
ember_status ek_norm_dim(ember_kernel_ctx *ctx, int64_t dim, size_t rank, size_t *out);

/** Writes "[2, 3, 4]" into buf (truncated to cap). Returns buf. */
const char *ek_shape_str(char *buf, size_t cap, const int32_t *sizes, size_t dim);

/** The same for int64 sizes. */
const char *ek_shape_str64(char *buf, size_t cap, const int64_t *sizes, size_t dim);

/**
 * Resizes out to sizes[0..dim) (ember_tensor_resize), failing with a message
 * naming both shapes; then checks that non-empty storage is bound.
 */
ember_status ek_resize_out(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *sizes,
                           size_t dim);

/** Resizes out to the shape of like. */
ember_status ek_resize_like(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *like);

/** Fails with EMBER_ERR_TYPE_MISMATCH unless a and b have the same dtype. */
ember_status ek_check_same_dtype(ember_kernel_ctx *ctx, const ember_tensor *a,
                                 const ember_tensor *b, const char *what);

/**
 * Fails with EMBER_ERR_INVALID_PROGRAM if out is the same tensor as in. For
 * kernels that read in's geometry after resizing out: a malformed program
 * could otherwise make them mix two shapes of one tensor.
 */
ember_status ek_check_no_alias(ember_kernel_ctx *ctx, const ember_tensor *out,
                               const ember_tensor *in);

/** Fails with EMBER_ERR_NOT_SUPPORTED unless t has the default dim order. */
ember_status ek_check_contiguous(ember_kernel_ctx *ctx, const ember_tensor *t, const char *what);

/** Fails with EMBER_ERR_NOT_SUPPORTED unless dtype is float16/bfloat16/float32/float64. */
ember_status ek_check_float(ember_kernel_ctx *ctx, int dtype, const char *what);

/** Fails with EMBER_ERR_NOT_SUPPORTED unless ek_is_supported(dtype). */
ember_status ek_check_supported(ember_kernel_ctx *ctx, int dtype, const char *what);

/**
 * Broadcast shape of n tensors (numpy rules). Fails SHAPE_MISMATCH.
 * shape gets EMBER_MAX_DIM entries of room.
 */
ember_status ek_broadcast_shape(ember_kernel_ctx *ctx, const ember_tensor *const *ts, size_t n,
                                int64_t *shape, size_t *dim);

/** True if t can be broadcast to shape[0..dim). */
bool ek_broadcastable_to(const ember_tensor *t, const int64_t *shape, size_t dim);

/**
 * The shape of a view of numel elements as size[0..n) where one entry may be
 * -1 (inferred). Fails INVALID_ARGUMENT (bad sizes) or SHAPE_MISMATCH (numel
 * differs).
 */
ember_status ek_view_shape(ember_kernel_ctx *ctx, int64_t numel, const int64_t *size, size_t n,
                           int64_t *shape);

/** Sizes of t as int64 (EMBER_MAX_DIM room). */
void ek_sizes64(const ember_tensor *t, int64_t *out);

/**
 * Product of sizes[0..n) into *out; false if a size is negative or the
 * product overflows int64.
 */
bool ek_numel(const int64_t *sizes, size_t n, int64_t *out);

/* ------------------------------------------------------------------------ */
/* Index counters                                                            */
/* ------------------------------------------------------------------------ */

/** Most operands an iteration walks at once (out + 3 inputs). */
#define EK_MAX_OPERANDS 4

/**
 * Advances the row-major counter idx over sizes[0..n) by one step, keeping
 * each operand's element offset off[k] (k < nops) in step with its strides.
 * Returns false once the counter wraps around (every position visited).
 */
bool ek_advance(int64_t *idx, const int64_t *sizes, size_t n, size_t nops,
                const int64_t (*strides)[EMBER_MAX_DIM], int64_t *off);

/**
 * Drops size-1 dims and merges adjacent dims that are contiguous for every
 * operand. sizes and strides are rewritten in place; *n is the new rank
 * (at least 1: a scalar becomes one dim of size 1).
 */
void ek_coalesce(int64_t *sizes, size_t *n, size_t nops, int64_t (*strides)[EMBER_MAX_DIM]);

/* ------------------------------------------------------------------------ */
/* Elementwise engine                                                        */
/* ------------------------------------------------------------------------ */

/**
 * The type an elementwise op computes in (PyTorch's opmath type): float for
 * float16/bfloat16/float32, double for float64, int64 for integers and bool.
 */
typedef enum ek_ctype { EK_CT_F32 = 0, EK_CT_F64 = 1, EK_CT_I64 = 2 } ek_ctype;

/** Compute type for values of dtype. */
static inline ek_ctype ek_ctype_of(int dtype) {
    if (dtype == EMBER_FLOAT64) return EK_CT_F64;
    if (ek_is_float(dtype)) return EK_CT_F32;
    return EK_CT_I64;
}

/** Compute type of a floating op (int inputs compute in float, as PyTorch). */
static inline ek_ctype ek_ctype_float_of(int dtype) {
    return dtype == EMBER_FLOAT64 ? EK_CT_F64 : EK_CT_F32;
}

/** Elements per chunk: inputs are converted through stack buffers this long. */
#ifndef EK_CHUNK
#define EK_CHUNK 64
#endif

/** One chunk buffer, big enough for EK_CHUNK values of any compute type. */
typedef union ek_chunk {
    float f[EK_CHUNK];
    double d[EK_CHUNK];
    int64_t i[EK_CHUNK];
} ek_chunk;

/**
 * One elementwise op, typed once per compute type: out[i] = f(in[0][i], ...)
 * for i < n. Inputs are already converted to the compute type. arg is the
 * op's own parameter block (alpha, a mode, an error flag). A NULL entry means
 * the op does not exist for that compute type.
 */
typedef struct ek_map {
    void (*f32)(float *out, const float *const *in, size_t n, void *arg);
    void (*f64)(double *out, const double *const *in, size_t n, void *arg);
    void (*i64)(int64_t *out, const int64_t *const *in, size_t n, void *arg);
} ek_map;

/**
 * Computes out = map(ins...) elementwise. The inputs are broadcast together,
 * out is resized to their broadcast shape, and each element is converted to
 * ct, computed, and cast to out's dtype. Works for every dim order (it walks
 * strides). Fails SHAPE_MISMATCH (not broadcastable, out bounds),
 * NOT_SUPPORTED (dtype, or no map for ct).
 */
ember_status ek_map_tensors(ember_kernel_ctx *ctx, ember_tensor *out,
                            const ember_tensor *const *ins, size_t nin, ek_ctype ct,
                            const ek_map *map, void *arg);

/**
 * As ek_map_tensors, but out takes the given shape and every input must be
 * broadcastable to it (copy_, copy.out, full_like).
 */
ember_status ek_map_tensors_to(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *shape,
                               size_t dim, const ember_tensor *const *ins, size_t nin, ek_ctype ct,
                               const ek_map *map, void *arg);

/** Identity map (casting copy). */
extern const ek_map ek_map_identity;

/** Reads n elements of dtype, stride apart, into dst converted to ct. */
typedef void (*ek_load_fn)(void *dst, const void *src, int64_t stride, size_t n);
/** Writes n ct values from src to dst (dtype, stride apart). */
typedef void (*ek_store_fn)(void *dst, int64_t stride, const void *src, size_t n);

/** Loader / storer for dtype and compute type; NULL if dtype unsupported. */
ek_load_fn ek_loader(int dtype, ek_ctype ct);
ek_store_fn ek_storer(int dtype, ek_ctype ct);

/**
 * A 0-dim tensor holding a Scalar argument in the compute type ct (float32,
 * float64 or int64), so Scalar overloads can reuse the tensor paths.
 */
typedef struct ek_scalar_tensor {
    ember_tensor t;
    union {
        float f;
        double d;
        int64_t i;
    } v;
} ek_scalar_tensor;

/** Sets up st to hold s converted to ct. st must not move while in use. */
void ek_scalar_tensor_init(ek_scalar_tensor *st, const ek_scalar *s, ek_ctype ct);

/** PyTorch result dtype of (a, b) or (a, scalar s) when b is NULL. */
int ek_binary_result_type(const ember_tensor *a, const ember_tensor *b, const ek_scalar *s);

/**
 * out = map(a, b) with b a tensor, or the scalar s when b is NULL, computed
 * in ct. Checks that result_dtype can be cast to out's dtype first.
 */
ember_status ek_map_binary(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *a,
                           const ember_tensor *b, const ek_scalar *s, int result_dtype, ek_ctype ct,
                           const ek_map *map, void *arg);

/**
 * Runs a unary op `op.out(Tensor self, *, Tensor(a!) out)` (3 arguments):
 * float_op true for math that is only defined on floats (exp, tanh, ...):
 * integer inputs then compute in float32 and out must be floating.
 */
ember_status ek_unary_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, const ek_map *map,
                         void *arg, bool float_op);

/**
 * Defines NAME_map, an ek_map for a float-only unary op; EXPR_F / EXPR_D
 * compute o from x in float / double.
 */
#define EK_DEFINE_UNARY_FLOAT(NAME, EXPR_F, EXPR_D)                                                \
    static void NAME##_f32(float *o, const float *const *in, size_t n, void *arg) {                \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) {                                                           \
            float x = in[0][i];                                                                    \
            o[i] = (EXPR_F);                                                                       \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_f64(double *o, const double *const *in, size_t n, void *arg) {              \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) {                                                           \
            double x = in[0][i];                                                                   \
            o[i] = (EXPR_D);                                                                       \
        }                                                                                          \
    }                                                                                              \
    static const ek_map NAME##_map = {NAME##_f32, NAME##_f64, NULL};

/** Comparison operators of the eq/ne/lt/le/gt/ge family. */
typedef enum ek_cmp { EK_CMP_EQ, EK_CMP_NE, EK_CMP_LT, EK_CMP_LE, EK_CMP_GT, EK_CMP_GE } ek_cmp;

/**
 * Runs `cmp.Tensor_out(self, other, *, out)` (scalar false) or
 * `cmp.Scalar_out(self, Scalar other, *, out)` (scalar true): compares in
 * the promoted type and writes 1/0 in out's dtype.
 */
ember_status ek_compare_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, ek_cmp cmp,
                           bool scalar);

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

/**
 * How a reduction over some dims of `in` walks memory. Kept dims index the
 * output elements; reduced dims index the elements folded into each.
 */
typedef struct ek_reduce_plan {
    bool reduced[EMBER_MAX_DIM];      /**< per input dim */
    int64_t out_sizes[EMBER_MAX_DIM]; /**< the output shape */
    size_t out_dim;
    size_t nkeep; /**< kept dims (outer index space) */
    int64_t keep_sizes[EMBER_MAX_DIM];
    int64_t keep_strides[2][EMBER_MAX_DIM]; /**< [0] = out, [1] = in */
    size_t keep_out_dim[EMBER_MAX_DIM];     /**< out dim of each kept dim */
    size_t nred;                            /**< reduced dims (inner index space) */
    int64_t red_sizes[EMBER_MAX_DIM];
    int64_t red_strides[1][EMBER_MAX_DIM];
    int64_t red_count; /**< elements folded into each output */
} ek_reduce_plan;

/**
 * Plans a reduction of in over dims[0..ndims) (negative dims allowed; an
 * empty list or has_dims false means every dim). Fails INVALID_ARGUMENT on a
 * bad or repeated dim.
 */
ember_status ek_reduce_plan_init(ember_kernel_ctx *ctx, ek_reduce_plan *p, const ember_tensor *in,
                                 const int64_t *dims, size_t ndims, bool has_dims, bool keepdim);

/**
 * Fills the out strides of the plan's kept dims from out (call after the
 * output has been resized to p->out_sizes).
 */
void ek_reduce_plan_bind_out(ek_reduce_plan *p, const ember_tensor *out);

/**
 * Folds a chunk of n reduced elements (converted to the loader's compute
 * type; pos is the index of x[0] among the reduced elements, row-major).
 */
typedef void (*ek_fold_fn)(void *state, const void *x, size_t n, int64_t pos);

/**
 * Walks the reduced elements of one output (whose first input element is at
 * element offset in_off) in row-major order, chunk by chunk: each chunk is
 * converted with load and handed to fold. Nothing happens if red_count is 0.
 */
void ek_reduce_fold(const ek_reduce_plan *p, const ember_tensor *in, int64_t in_off,
                    ek_load_fn load, ek_fold_fn fold, void *state);

/* ------------------------------------------------------------------------ */
/* Data movement                                                             */
/* ------------------------------------------------------------------------ */

/**
 * Copies the n-dim block sizes[0..ndim) of elsize-byte elements from src to
 * dst. Strides are in elements; offsets dst_off/src_off too. Zero-size blocks
 * copy nothing.
 */
void ek_copy_block(void *dst, int64_t dst_off, const int64_t *dst_strides, const void *src,
                   int64_t src_off, const int64_t *src_strides, const int64_t *sizes, size_t ndim,
                   size_t elsize);

/**
 * As ek_copy_block, converting each element from src_dtype to dst_dtype
 * (both supported; equal dtypes copy bytes).
 */
void ek_copy_block_cast(void *dst, int dst_dtype, int64_t dst_off, const int64_t *dst_strides,
                        const void *src, int src_dtype, int64_t src_off, const int64_t *src_strides,
                        const int64_t *sizes, size_t ndim);

/**
 * Copies (and casts) in into out, which has already been resized to in's
 * shape; any dim orders. Both dtypes must be supported.
 */
void ek_copy_tensor(ember_tensor *out, const ember_tensor *in);

/**
 * Copies in into out (same dtype and numel, out already resized) in
 * row-major order of both shapes, as view/reshape does. Contiguous tensors
 * copy bytes; otherwise the shapes must agree up to size-1 dims (squeeze,
 * unsqueeze) or it fails NOT_SUPPORTED.
 */
ember_status ek_copy_reshape(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *in);

/** Fills numel elements of elsize bytes at dst with the element at value. */
void ek_fill_bytes(void *dst, int64_t numel, const void *value, size_t elsize);

/* ------------------------------------------------------------------------ */
/* Typed loops for the float-only structured kernels                         */
/* ------------------------------------------------------------------------ */

#define EK_IDENT(x) (x)

/*
 * X(SUFFIX, STORAGE_T, COMPUTE_T, LOAD, STORE) once per float dtype: a kernel
 * writes its loop as a macro of these and instantiates it for every float
 * dtype; then it dispatches on the dtype once per call (EK_FLOAT_SWITCH).
 */
#define EK_FOR_EACH_FLOAT(X)                                                                       \
    X(f32, float, float, EK_IDENT, EK_IDENT)                                                       \
    X(f64, double, double, EK_IDENT, EK_IDENT)                                                     \
    X(f16, uint16_t, float, ember_half_to_float, ember_float_to_half)                              \
    X(bf16, uint16_t, float, ember_bf16_to_float, ember_float_to_bf16)

/**
 * Calls NAME_f32 / _f64 / _f16 / _bf16 (...) by dtype, or fails NOT_SUPPORTED.
 * Used as a statement in a function returning ember_status.
 */
#define EK_FLOAT_SWITCH(ctx, dtype, NAME, ...)                                                     \
    do {                                                                                           \
        switch (dtype) {                                                                           \
        case EMBER_FLOAT32: NAME##_f32(__VA_ARGS__); break;                                        \
        case EMBER_FLOAT64: NAME##_f64(__VA_ARGS__); break;                                        \
        case EMBER_FLOAT16: NAME##_f16(__VA_ARGS__); break;                                        \
        case EMBER_BFLOAT16: NAME##_bf16(__VA_ARGS__); break;                                      \
        default:                                                                                   \
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,                                 \
                                     "dtype %s not supported (float types only)",                  \
                                     ember_dtype_name(dtype));                                     \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Matrix multiply (mm, bmm, addmm, convolution)                             */
/* ------------------------------------------------------------------------ */

/** Optional addend of ek_matmul: element (i, j) of each batch at data[i*si + j*sj]. */
typedef struct ek_mm_bias {
    const void *data;
    int64_t si, sj;
    double beta;
} ek_mm_bias;

/**
 * out[b] = alpha * (a[b] @ w[b]) (+ beta * bias) for b < batch, with a
 * (batch, n, k), w (batch, k, m) and out (batch, n, m) contiguous and of one
 * float or integer dtype (the caller checked it); bias may be NULL, and is
 * ignored when beta is 0, as in PyTorch. Accumulates in the compute type
 * (integers: 64 bits, wrapping); each output element sums over k in order.
 */
void ek_matmul(int dtype, void *out, const void *a, const void *w, int64_t batch, int64_t n,
               int64_t k, int64_t m, double alpha, const ek_mm_bias *bias);

/**
 * One matrix of ek_matmul with row strides (in elements): out (n, m) =
 * alpha * (a (n, k) @ w (k, m)) (+ beta * bias), element (i, p) of a at
 * a[i * lda + p], (p, j) of w at w[p * ldw + j] and (i, j) of out at
 * out[i * ldo + j]. Same dtypes and rules as ek_matmul; allocates nothing.
 */
void ek_gemm(int dtype, void *out, int64_t ldo, const void *a, int64_t lda, const void *w,
             int64_t ldw, int64_t n, int64_t k, int64_t m, double alpha, const ek_mm_bias *bias);

/**
 * Running max (min) and the position of its first occurrence, for
 * ek_reduce_fold: NaN wins and stays, as in PyTorch. Values are read as
 * double (float dtypes) or int64 (integers and bool).
 */
typedef struct ek_extreme_state {
    bool is_max, seen, nan;
    double d;
    int64_t i, best;
} ek_extreme_state;

void ek_extreme_fold_f64(void *state, const void *x, size_t n, int64_t pos);
void ek_extreme_fold_i64(void *state, const void *x, size_t n, int64_t pos);

/**
 * Advanced indexing geometry, shared by index and index_put. The self dims
 * indexed by tensors (ix[j] != NULL) are replaced by B, the broadcast shape
 * of the index tensors: in place of the first indexed dim when the indexed
 * dims are adjacent, else in front (NumPy's rule).
 */
typedef struct ek_index_geom {
    size_t nadv;                             /* number of index tensors */
    size_t adv[EMBER_MAX_DIM];               /* self dim of index tensor a */
    const ember_tensor *idx[EMBER_MAX_DIM];  /* index tensor a */
    size_t rank;                             /* rank of the indexed shape */
    int64_t shape[EMBER_MAX_DIM];            /* the indexed shape */
    int64_t idx_st[EMBER_MAX_DIM][EMBER_MAX_DIM]; /* [a][d]: stride of idx a (0 off B) */
    size_t dim_of[EMBER_MAX_DIM];            /* non-indexed self dim j: its indexed dim */
} ek_index_geom;

/** Fills *g for self indexed by ix[0..self->dim) (at least one non-NULL). */
ember_status ek_index_geometry(ember_kernel_ctx *ctx, const char *op, const ember_tensor *self,
                               const ember_tensor *const *ix, ek_index_geom *g);

/**
 * Offset, in elements of a tensor with self's sizes and the given strides,
 * that the index tensors select at their element offsets pos[0..nadv);
 * negative indices wrap, out-of-range ones fail (DATA_OUT_OF_BOUNDS).
 */
ember_status ek_index_offset(ember_kernel_ctx *ctx, const ek_index_geom *g,
                             const ember_tensor *self, const int64_t *strides,
                             const int64_t *pos, int64_t *out);

#endif /* EMBER_KERNELS_PORTABLE_KERNEL_UTIL_H */
