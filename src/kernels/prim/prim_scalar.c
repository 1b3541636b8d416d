/*
 * prim_scalar.c — executorch_prim scalar ops: arithmetic and comparisons on
 * the Int / Double / Bool values that symbolic shapes are computed with.
 *
 *   executorch_prim::{add,sub,mul,floordiv,truediv,mod}.Scalar(a, b) -> Scalar
 *   executorch_prim::{eq,gt,ge,lt,le}.Scalar(a, b) -> bool
 *   executorch_prim::{sym_max,sym_min}.Scalar(int a, int b) -> int
 *   executorch_prim::{floordiv,mod}.int(int a, int b) -> int
 *   executorch_prim::{neg,sym_float,sym_int,sym_not,ceil,round,trunc}.Scalar(a) -> Scalar
 *   executorch_prim::sym_ite.Scalar(bool b, Scalar t, Scalar f) -> Scalar
 *
 * Arguments are the inputs then the result value, which is overwritten
 * (its tag may change between Int, Double and Bool, never from another kind).
 * Integer arithmetic wraps instead of overflowing; floordiv and mod follow
 * Python (round toward -inf, remainder has the divisor's sign); integer
 * division by zero fails.
 */
#include <math.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"

/* The result slot must be a scalar value (a program could point it at a tensor). */
static ember_status result_slot(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                size_t want, ember_value **out) {
    *out = NULL;
    EK_TRY(ek_check_nargs(ctx, nargs, want));
    ember_value *v = args[want - 1];
    if (v->tag != EMBER_TAG_INT && v->tag != EMBER_TAG_DOUBLE && v->tag != EMBER_TAG_BOOL &&
        v->tag != EMBER_TAG_NONE)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "result value %zu is not a scalar",
                                 want - 1);
    *out = v;
    return EMBER_OK;
}

static void set_int(ember_value *v, int64_t i) {
    v->tag = EMBER_TAG_INT;
    v->u.i = i;
}

static void set_double(ember_value *v, double d) {
    v->tag = EMBER_TAG_DOUBLE;
    v->u.d = d;
}

static void set_bool(ember_value *v, bool b) {
    v->tag = EMBER_TAG_BOOL;
    v->u.b = b;
}

static bool is_num(const ember_value *v) {
    return v->tag == EMBER_TAG_INT || v->tag == EMBER_TAG_DOUBLE;
}

static double num(const ember_value *v) {
    return v->tag == EMBER_TAG_INT ? (double)v->u.i : v->u.d;
}

static ember_status bad_types(ember_kernel_ctx *ctx) {
    return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "unsupported operand types");
}

/* ---- binary arithmetic ---- */

enum { OP_ADD, OP_SUB, OP_MUL };

static ember_status arith(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, int op) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 3, &out));
    const ember_value *a = args[0], *b = args[1];
    if (a->tag == EMBER_TAG_INT && b->tag == EMBER_TAG_INT) {
        uint64_t x = (uint64_t)a->u.i, y = (uint64_t)b->u.i;
        uint64_t r = op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y;
        set_int(out, (int64_t)r);
    } else if (is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        set_double(out, op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
    } else {
        return bad_types(ctx);
    }
    return EMBER_OK;
}

ember_status ek_prim_add_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return arith(ctx, args, nargs, OP_ADD);
}

ember_status ek_prim_sub_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return arith(ctx, args, nargs, OP_SUB);
}

ember_status ek_prim_mul_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return arith(ctx, args, nargs, OP_MUL);
}

/* Python's a // b and a % b on int64 (b != 0; INT64_MIN // -1 wraps). */
static int64_t floordiv_i64(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
    return q;
}

static int64_t mod_i64(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

/* Python's float a // b, written from fmod as CPython does. */
static double floordiv_f64(double a, double b) {
    if (b == 0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
    if (div == 0) return copysign(0.0, a / b);
    double fl = floor(div);
    if (div - fl > 0.5) fl += 1.0;
    return fl;
}

static double mod_f64(double a, double b) {
    double m = fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
}

static ember_status divlike(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool mod,
                            bool ints_only) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 3, &out));
    const ember_value *a = args[0], *b = args[1];
    if (a->tag == EMBER_TAG_INT && b->tag == EMBER_TAG_INT) {
        if (b->u.i == 0)
            return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "integer division by zero");
        set_int(out, mod ? mod_i64(a->u.i, b->u.i) : floordiv_i64(a->u.i, b->u.i));
    } else if (!ints_only && is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        set_double(out, mod ? mod_f64(x, y) : floordiv_f64(x, y));
    } else {
        return bad_types(ctx);
    }
    return EMBER_OK;
}

ember_status ek_prim_floordiv_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return divlike(ctx, args, nargs, false, false);
}

ember_status ek_prim_floordiv_int(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return divlike(ctx, args, nargs, false, true);
}

ember_status ek_prim_mod_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return divlike(ctx, args, nargs, true, false);
}

ember_status ek_prim_mod_int(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return divlike(ctx, args, nargs, true, true);
}

ember_status ek_prim_truediv_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 3, &out));
    if (!is_num(args[0]) || !is_num(args[1])) return bad_types(ctx);
    set_double(out, num(args[0]) / num(args[1])); /* IEEE: x / 0 is inf or nan */
    return EMBER_OK;
}

/* ---- comparisons ---- */

enum { CMP_EQ, CMP_GT, CMP_GE, CMP_LT, CMP_LE };

static ember_status compare(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, int op) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 3, &out));
    const ember_value *a = args[0], *b = args[1];
    int c; /* -1, 0, 1, or 2 when unordered (NaN) */
    if (a->tag == EMBER_TAG_INT && b->tag == EMBER_TAG_INT) {
        c = a->u.i < b->u.i ? -1 : a->u.i > b->u.i ? 1 : 0;
    } else if (is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        c = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
    } else if (a->tag == EMBER_TAG_BOOL && b->tag == EMBER_TAG_BOOL) {
        c = (int)a->u.b - (int)b->u.b;
    } else {
        return bad_types(ctx);
    }
    bool r;
    switch (op) {
    case CMP_EQ: r = c == 0; break;
    case CMP_GT: r = c == 1; break;
    case CMP_GE: r = c == 1 || c == 0; break;
    case CMP_LT: r = c == -1; break;
    default: r = c == -1 || c == 0; break;
    }
    set_bool(out, r);
    return EMBER_OK;
}

ember_status ek_prim_eq_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return compare(ctx, args, nargs, CMP_EQ);
}

ember_status ek_prim_gt_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return compare(ctx, args, nargs, CMP_GT);
}

ember_status ek_prim_ge_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return compare(ctx, args, nargs, CMP_GE);
}

ember_status ek_prim_lt_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return compare(ctx, args, nargs, CMP_LT);
}

ember_status ek_prim_le_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return compare(ctx, args, nargs, CMP_LE);
}

static ember_status minmax(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool is_max) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 3, &out));
    if (args[0]->tag != EMBER_TAG_INT || args[1]->tag != EMBER_TAG_INT) return bad_types(ctx);
    int64_t a = args[0]->u.i, b = args[1]->u.i;
    set_int(out, is_max ? (a > b ? a : b) : (a < b ? a : b));
    return EMBER_OK;
}

ember_status ek_prim_sym_max_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return minmax(ctx, args, nargs, true);
}

ember_status ek_prim_sym_min_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return minmax(ctx, args, nargs, false);
}

/* ---- unary ---- */

ember_status ek_prim_neg_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 2, &out));
    if (args[0]->tag == EMBER_TAG_INT)
        set_int(out, (int64_t)(0 - (uint64_t)args[0]->u.i));
    else if (args[0]->tag == EMBER_TAG_DOUBLE)
        set_double(out, -args[0]->u.d);
    else
        return bad_types(ctx);
    return EMBER_OK;
}

ember_status ek_prim_sym_float_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    double d;
    EK_TRY(result_slot(ctx, args, nargs, 2, &out));
    if (!ember_value_as_double(args[0], &d)) return bad_types(ctx);
    set_double(out, d);
    return EMBER_OK;
}

ember_status ek_prim_sym_int_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 2, &out));
    const ember_value *a = args[0];
    if (a->tag == EMBER_TAG_INT)
        set_int(out, a->u.i);
    else if (a->tag == EMBER_TAG_DOUBLE)
        set_int(out, ek_f64_to_i64(a->u.d));
    else if (a->tag == EMBER_TAG_BOOL)
        set_int(out, a->u.b ? 1 : 0);
    else
        return bad_types(ctx);
    return EMBER_OK;
}

ember_status ek_prim_sym_not_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 2, &out));
    if (args[0]->tag != EMBER_TAG_BOOL) return bad_types(ctx);
    set_bool(out, !args[0]->u.b);
    return EMBER_OK;
}

ember_status ek_prim_sym_ite_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 4, &out));
    if (args[0]->tag != EMBER_TAG_BOOL) return bad_types(ctx);
    const ember_value *v = args[0]->u.b ? args[1] : args[2];
    if (v->tag == EMBER_TAG_INT)
        set_int(out, v->u.i);
    else if (v->tag == EMBER_TAG_DOUBLE)
        set_double(out, v->u.d);
    else if (v->tag == EMBER_TAG_BOOL)
        set_bool(out, v->u.b);
    else
        return bad_types(ctx);
    return EMBER_OK;
}

/* ceil / round / trunc of a number to an int (ints pass through). */
enum { R_CEIL, R_ROUND, R_TRUNC };

static ember_status to_int(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, int mode) {
    ember_value *out;
    EK_TRY(result_slot(ctx, args, nargs, 2, &out));
    const ember_value *a = args[0];
    if (a->tag == EMBER_TAG_INT) {
        set_int(out, a->u.i);
        return EMBER_OK;
    }
    if (a->tag != EMBER_TAG_DOUBLE) return bad_types(ctx);
    double d = a->u.d;
    /* round: halves to even, like Python's round() */
    double r = mode == R_CEIL ? ceil(d) : mode == R_TRUNC ? trunc(d) : nearbyint(d);
    set_int(out, ek_f64_to_i64(r));
    return EMBER_OK;
}

ember_status ek_prim_ceil_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return to_int(ctx, args, nargs, R_CEIL);
}

ember_status ek_prim_round_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return to_int(ctx, args, nargs, R_ROUND);
}

ember_status ek_prim_trunc_scalar(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return to_int(ctx, args, nargs, R_TRUNC);
}
