/*
 * Bundled programs: verify the bundled flatbuffer once, then set a method's
 * inputs from a test case and compare its outputs with the expected ones.
 *
 * Schema (ExecuTorch's bundled_program_schema.fbs, identifier "BP08"; field
 * order = field id, a union takes two ids):
 *   BundledProgram          version:uint, method_test_suites:[Suite], program:[ubyte]
 *   BundledMethodTestSuite  method_name:string, test_cases:[Case]
 *   BundledMethodTestCase   inputs:[Value], expected_outputs:[Value]
 *   Value                   val:ValueUnion {Tensor 1, Int 2, Bool 3, Double 4}
 *   Tensor                  scalar_type:byte, sizes:[int], data:[ubyte], dim_order:[ubyte]
 *   Int / Bool / Double     one scalar field each
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "ember/bundled_program.h"
#include "format/flatbuffer.h"

enum {
    BP_VERSION = 0, BP_SUITES = 1, BP_PROGRAM = 2,
    SUITE_NAME = 0, SUITE_CASES = 1,
    CASE_INPUTS = 0, CASE_OUTPUTS = 1,
    VALUE_TYPE = 0, VALUE_VAL = 1,
    BT_SCALAR_TYPE = 0, BT_SIZES = 1, BT_DATA = 2, BT_DIM_ORDER = 3,
    SCALAR_VAL = 0
};

/* ValueUnion tags. */
enum { KIND_NONE = 0, KIND_TENSOR = 1, KIND_INT = 2, KIND_BOOL = 3, KIND_DOUBLE = 4 };

/* A decoded, validated test value. */
typedef struct bp_value {
    uint8_t kind;
    uint8_t dtype;
    uint32_t dim;
    int32_t sizes[EMBER_MAX_DIM];
    uint8_t dim_order[EMBER_MAX_DIM];
    int64_t numel;
    size_t nbytes;
    const uint8_t *data; /* (nbytes) in the bundled bytes */
    int64_t i;
    bool b;
    double d;
} bp_value;

static const char *kind_name(uint8_t kind) {
    switch (kind) {
    case KIND_TENSOR: return "tensor";
    case KIND_INT: return "int";
    case KIND_BOOL: return "bool";
    case KIND_DOUBLE: return "double";
    default: return "none";
    }
}

/* Decodes value k of a Value vector; every field is checked. */
static ember_status decode_value(const fb_reader *r, const fb_vec *values, uint32_t k,
                                 bp_value *out) {
    fb_table v, val;
    uint8_t kind;
    bool present;
    memset(out, 0, sizeof *out);
    if (!fb_vec_table(r, values, k, &v) || !fb_u8(r, &v, VALUE_TYPE, KIND_NONE, &kind) ||
        !fb_table_field(r, &v, VALUE_VAL, &val, &present))
        return ember_invalid_program("value table is malformed");
    if (kind == KIND_NONE || kind > KIND_DOUBLE)
        return ember_invalid_program("unknown value kind %u", kind);
    if (!present) return ember_invalid_program("%s value has no table", kind_name(kind));
    out->kind = kind;
    switch (kind) {
    case KIND_INT:
        if (!fb_i64(r, &val, SCALAR_VAL, 0, &out->i))
            return ember_invalid_program("int value is malformed");
        return EMBER_OK;
    case KIND_BOOL: {
        uint8_t b;
        if (!fb_u8(r, &val, SCALAR_VAL, 0, &b))
            return ember_invalid_program("bool value is malformed");
        out->b = b != 0;
        return EMBER_OK;
    }
    case KIND_DOUBLE:
        if (!fb_f64(r, &val, SCALAR_VAL, 0.0, &out->d))
            return ember_invalid_program("double value is malformed");
        return EMBER_OK;
    default: break;
    }

    fb_vec sizes, data, order;
    bool has_sizes, has_data, has_order;
    if (!fb_u8(r, &val, BT_SCALAR_TYPE, 0, &out->dtype) ||
        !fb_vec_field(r, &val, BT_SIZES, 4, &sizes, &has_sizes) ||
        !fb_vec_field(r, &val, BT_DATA, 1, &data, &has_data) ||
        !fb_vec_field(r, &val, BT_DIM_ORDER, 1, &order, &has_order))
        return ember_invalid_program("tensor table is malformed");
    size_t elem = ember_dtype_size(out->dtype);
    if (elem == 0) return ember_invalid_program("tensor has unknown scalar type %u", out->dtype);
    if (sizes.len > EMBER_MAX_DIM)
        return ember_invalid_program("tensor rank %u exceeds %d", (unsigned)sizes.len,
                                     EMBER_MAX_DIM);
    out->dim = sizes.len;
    for (uint32_t d = 0; d < sizes.len; d++) {
        out->sizes[d] = fb_vec_i32(r, &sizes, d);
        if (out->sizes[d] < 0)
            return ember_invalid_program("tensor size %d of dim %u", (int)out->sizes[d],
                                         (unsigned)d);
    }
    /* An absent (or empty, for rank > 0 written by old tools) dim order is contiguous. */
    bool use_order = has_order && order.len > 0;
    if (use_order && order.len != sizes.len)
        return ember_invalid_program("tensor dim_order has %u entries for rank %u",
                                     (unsigned)order.len, (unsigned)sizes.len);
    uint32_t seen = 0;
    for (uint32_t d = 0; d < out->dim; d++) {
        uint8_t o = use_order ? fb_vec_u8(r, &order, d) : (uint8_t)d;
        if (o >= out->dim || (seen & (1u << o)) != 0)
            return ember_invalid_program("tensor dim_order is not a permutation");
        seen |= 1u << o;
        out->dim_order[d] = o;
    }
    if (!ember_shape_bytes(out->sizes, out->dim, elem, &out->numel, &out->nbytes))
        return ember_invalid_program("tensor size overflows");
    /* Writers may store a whole storage; the tensor's elements come first. */
    if (out->nbytes > 0 && (!has_data || data.len < out->nbytes))
        return ember_invalid_program("tensor needs %zu bytes of data, has %u", out->nbytes,
                                     (unsigned)(has_data ? data.len : 0));
    out->data = out->nbytes > 0 ? fb_vec_bytes(r, &data) : NULL;
    return EMBER_OK;
}

static ember_status verify_values(const fb_reader *r, const fb_vec *values, uint32_t suite,
                                  uint32_t tc, const char *what) {
    for (uint32_t k = 0; k < values->len; k++) {
        bp_value v;
        ember_status st = decode_value(r, values, k, &v);
        if (st != EMBER_OK) {
            ember_error_prefix("bundled program: suite %u case %u %s %u",
                    (unsigned)suite, (unsigned)tc, what, (unsigned)k);
            return st;
        }
    }
    return EMBER_OK;
}

/* The Value vectors of one test case. */
static bool case_vectors(const fb_reader *r, const fb_table *tc, fb_vec *inputs, fb_vec *outputs) {
    bool present;
    return fb_vec_field(r, tc, CASE_INPUTS, 4, inputs, &present) &&
           fb_vec_field(r, tc, CASE_OUTPUTS, 4, outputs, &present);
}

bool ember_bundled_program_is_bundled(const void *data, size_t size) {
    return data != NULL && size >= 8 &&
           memcmp((const uint8_t *)data + 4, EMBER_BUNDLED_PROGRAM_IDENTIFIER, 4) == 0;
}

ember_status ember_bundled_program_open(ember_bundled_program *bp, const void *data, size_t size) {
    if (bp != NULL) memset(bp, 0, sizeof *bp);
    if (bp == NULL || data == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "bundled program: NULL argument");
    if (size < 8)
        return ember_set_error(EMBER_ERR_TRUNCATED, "bundled program: %zu bytes is too short",
                               size);
    if (!ember_bundled_program_is_bundled(data, size))
        return ember_set_error(EMBER_ERR_BAD_IDENTIFIER,
                               "bundled program: identifier is not \"%s\"",
                               EMBER_BUNDLED_PROGRAM_IDENTIFIER);
    if (size > UINT32_MAX)
        return ember_invalid_program(
            "bundled program: %zu bytes is more than a flatbuffer can address", size);

    fb_reader r = {data, size};
    fb_table root;
    fb_vec suites, program;
    uint32_t version;
    bool has_suites, has_program;
    if (!fb_root(&r, &root))
        return ember_invalid_program("bundled program: root table is malformed");
    if (!fb_u32(&r, &root, BP_VERSION, 0, &version) ||
        !fb_vec_field(&r, &root, BP_SUITES, 4, &suites, &has_suites))
        return ember_invalid_program("bundled program: method_test_suites is malformed");
    if (!fb_vec_field(&r, &root, BP_PROGRAM, 1, &program, &has_program))
        return ember_invalid_program("bundled program: program is malformed");
    if (!has_program || program.len == 0)
        return ember_invalid_program("bundled program: no program");

    for (uint32_t s = 0; s < suites.len; s++) {
        fb_table suite;
        fb_str name;
        fb_vec cases;
        bool present;
        if (!fb_vec_table(&r, &suites, s, &suite) ||
            !fb_str_field(&r, &suite, SUITE_NAME, &name, &present))
            return ember_invalid_program("bundled program: suite %u is malformed", (unsigned)s);
        if (!present || name.len == 0)
            return ember_invalid_program("bundled program: suite %u has no method name",
                                         (unsigned)s);
        if (!fb_vec_field(&r, &suite, SUITE_CASES, 4, &cases, &present))
            return ember_invalid_program("bundled program: suite %u test_cases is malformed",
                                         (unsigned)s);
        for (uint32_t c = 0; c < cases.len; c++) {
            fb_table tc;
            fb_vec inputs, outputs;
            if (!fb_vec_table(&r, &cases, c, &tc) || !case_vectors(&r, &tc, &inputs, &outputs))
                return ember_invalid_program("bundled program: suite %u case %u is malformed",
                                             (unsigned)s, (unsigned)c);
            EMBER_TRY(verify_values(&r, &inputs, s, c, "input"));
            EMBER_TRY(verify_values(&r, &outputs, s, c, "expected output"));
        }
    }

    bp->program = fb_vec_bytes(&r, &program);
    bp->program_size = program.len;
    bp->version = version;
    bp->num_suites = suites.len;
    bp->data = data;
    bp->size = size;
    bp->suites_pos = suites.pos;
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Finding a test case (the view was verified: reads cannot fail)         */
/* ---------------------------------------------------------------------- */

static fb_reader view_reader(const ember_bundled_program *bp) {
    fb_reader r = {bp->data, bp->size};
    return r;
}

static fb_vec view_suites(const ember_bundled_program *bp) {
    fb_vec v = {bp->suites_pos, bp->num_suites};
    return v;
}

static ember_status check_view(const ember_bundled_program *bp) {
    if (bp == NULL || bp->data == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT,
                               "bundled program: NULL or unopened view");
    return EMBER_OK;
}

static ember_status suite_at(const ember_bundled_program *bp, uint32_t i, fb_str *name,
                             fb_vec *cases) {
    fb_reader r = view_reader(bp);
    fb_vec suites = view_suites(bp);
    fb_table suite;
    bool present;
    if (!fb_vec_table(&r, &suites, i, &suite) || !fb_str_field(&r, &suite, SUITE_NAME, name, &present) ||
        !fb_vec_field(&r, &suite, SUITE_CASES, 4, cases, &present))
        return ember_invalid_program("bundled program: suite %u is malformed", (unsigned)i);
    return EMBER_OK;
}

static ember_status find_suite(const ember_bundled_program *bp, const char *method_name,
                               fb_vec *cases) {
    size_t want = strlen(method_name);
    for (uint32_t i = 0; i < bp->num_suites; i++) {
        fb_str name;
        EMBER_TRY(suite_at(bp, i, &name, cases));
        if (name.len == want && memcmp(name.data, method_name, want) == 0) return EMBER_OK;
    }
    return ember_set_error(EMBER_ERR_NOT_FOUND,
                           "bundled program has no test suite for method '%.*s'", EMBER_MAX_NAME,
                           method_name);
}

static ember_status find_case(const ember_bundled_program *bp, const char *method_name,
                              size_t case_index, fb_vec *inputs, fb_vec *outputs) {
    fb_reader r = view_reader(bp);
    fb_vec cases;
    fb_table tc;
    EMBER_TRY(find_suite(bp, method_name, &cases));
    if (case_index >= cases.len)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE,
                               "method '%.*s' has %u test case%s, case %zu asked for",
                               EMBER_MAX_NAME, method_name, (unsigned)cases.len,
                               cases.len == 1 ? "" : "s", case_index);
    if (!fb_vec_table(&r, &cases, (uint32_t)case_index, &tc) ||
        !case_vectors(&r, &tc, inputs, outputs))
        return ember_invalid_program("bundled program: case %zu is malformed", case_index);
    return EMBER_OK;
}

ember_status ember_bundled_program_suite(const ember_bundled_program *bp, size_t i,
                                         const char **method_name, size_t *num_cases) {
    fb_str name;
    fb_vec cases;
    EMBER_TRY(check_view(bp));
    if (i >= bp->num_suites)
        return ember_set_error(EMBER_ERR_INDEX_OUT_OF_RANGE, "suite %zu of %u", i,
                               (unsigned)bp->num_suites);
    EMBER_TRY(suite_at(bp, (uint32_t)i, &name, &cases));
    if (method_name != NULL) *method_name = name.data;
    if (num_cases != NULL) *num_cases = cases.len;
    return EMBER_OK;
}

ember_status ember_bundled_program_case_count(const ember_bundled_program *bp,
                                              const char *method_name, size_t *num_cases) {
    fb_vec cases;
    EMBER_TRY(check_view(bp));
    if (method_name == NULL || num_cases == NULL)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "bundled program: NULL argument");
    EMBER_TRY(find_suite(bp, method_name, &cases));
    *num_cases = cases.len;
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Inputs                                                                 */
/* ---------------------------------------------------------------------- */

static ember_status set_input(ember_method *m, size_t k, const bp_value *v) {
    switch (v->kind) {
    case KIND_INT: return ember_method_set_input_int(m, k, v->i);
    case KIND_BOOL: return ember_method_set_input_bool(m, k, v->b);
    case KIND_DOUBLE: return ember_method_set_input_double(m, k, v->d);
    default: break;
    }
    const ember_value *in;
    EMBER_TRY(ember_method_input(m, k, &in));
    if (in->tag != EMBER_TAG_TENSOR)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH,
                               "input %zu is not a tensor, the test case "
                               "gives one",
                               k);
    /* The data is bound as it lies, so it must be in the input's layout. */
    const ember_tensor *t = in->u.t;
    if (t->dim == v->dim && memcmp(t->dim_order, v->dim_order, v->dim) != 0)
        return ember_set_error(EMBER_ERR_NOT_SUPPORTED,
                               "input %zu: the test case's dim order differs from the input's", k);
    int64_t sizes[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < v->dim; d++) sizes[d] = v->sizes[d];
    return ember_method_set_input_tensor(m, k, (ember_dtype)v->dtype, sizes, v->dim, v->data,
                                         v->nbytes);
}

ember_status ember_bundled_program_load_test_inputs(ember_method *method,
                                                    const ember_bundled_program *bp,
                                                    const char *method_name, size_t case_index) {
    fb_vec inputs, outputs;
    EMBER_TRY(check_view(bp));
    if (method == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
    if (method_name == NULL) method_name = ember_method_name(method);
    EMBER_TRY(find_case(bp, method_name, case_index, &inputs, &outputs));
    size_t n = ember_method_input_count(method);
    if (inputs.len != n)
        return ember_set_error(
            EMBER_ERR_INVALID_ARGUMENT, "method '%.*s' takes %zu input%s, test case %zu has %u",
            EMBER_MAX_NAME, method_name, n, n == 1 ? "" : "s", case_index, (unsigned)inputs.len);
    fb_reader r = view_reader(bp);
    for (uint32_t k = 0; k < inputs.len; k++) {
        bp_value v;
        EMBER_TRY(decode_value(&r, &inputs, k, &v));
        ember_status st = set_input(method, k, &v);
        if (st != EMBER_OK) {
            ember_error_prefix("test case %zu", case_index);
            return st;
        }
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Outputs                                                                */
/* ---------------------------------------------------------------------- */

static bool is_float(uint8_t dtype) {
    return dtype == EMBER_FLOAT16 || dtype == EMBER_BFLOAT16 || dtype == EMBER_FLOAT32 ||
           dtype == EMBER_FLOAT64;
}

static bool is_signed_int(uint8_t dtype) {
    return dtype == EMBER_INT8 || dtype == EMBER_INT16 || dtype == EMBER_INT32 ||
           dtype == EMBER_INT64;
}

static bool is_unsigned_int(uint8_t dtype) {
    return dtype == EMBER_UINT8 || dtype == EMBER_UINT16 || dtype == EMBER_UINT32 ||
           dtype == EMBER_UINT64;
}

static double read_float(uint8_t dtype, const uint8_t *p) {
    switch (dtype) {
    case EMBER_FLOAT16: return ember_half_to_float(fb_rd_u16(p));
    case EMBER_BFLOAT16: {
        uint32_t bits = (uint32_t)fb_rd_u16(p) << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case EMBER_FLOAT32: {
        uint32_t bits = fb_rd_u32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    default: {
        uint64_t bits = fb_rd_u64(p);
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
}

/* Integer element as unsigned bits, sign-extended for signed dtypes. */
static uint64_t read_int(uint8_t dtype, const uint8_t *p) {
    switch (dtype) {
    case EMBER_INT8: return (uint64_t)(int64_t)(int8_t)p[0];
    case EMBER_INT16: return (uint64_t)(int64_t)(int16_t)fb_rd_u16(p);
    case EMBER_INT32: return (uint64_t)(int64_t)(int32_t)fb_rd_u32(p);
    case EMBER_UINT8: return p[0];
    case EMBER_UINT16: return fb_rd_u16(p);
    case EMBER_UINT32: return fb_rd_u32(p);
    default: return fb_rd_u64(p);
    }
}

/* Strides (in elements) of a contiguous layout in the given dim order. */
static void order_strides(const int32_t *sizes, const uint8_t *order, uint32_t dim, int64_t *strides) {
    int64_t s = 1;
    for (uint32_t j = dim; j-- > 0;) {
        strides[order[j]] = s;
        s *= sizes[order[j]] > 0 ? sizes[order[j]] : 1;
    }
}

/* Element offset (in elements) of row-major index k. */
static int64_t element_at(const int32_t *sizes, const int64_t *strides, uint32_t dim, int64_t k) {
    int64_t off = 0;
    for (uint32_t d = dim; d-- > 0;) {
        int64_t size = sizes[d] > 0 ? sizes[d] : 1;
        off += (k % size) * strides[d];
        k /= size;
    }
    return off;
}

/* The first mismatch, for the message. */
typedef struct first_mismatch {
    bool found;
    size_t output;
    int64_t element;
    char got[48];
    char expected[48];
} first_mismatch;

static void note_mismatch(first_mismatch *fm, ember_bundled_compare *res, size_t output,
                          int64_t element, const char *got, const char *expected) {
    res->num_mismatches++;
    if (fm->found) return;
    fm->found = true;
    fm->output = output;
    fm->element = element;
    snprintf(fm->got, sizeof fm->got, "%s", got);
    snprintf(fm->expected, sizeof fm->expected, "%s", expected);
    res->first_output = (int64_t)output;
    res->first_element = element;
}

/* Error statistics of one finite pair. */
static void note_error(ember_bundled_compare *res, double got, double want) {
    double diff = fabs(got - want);
    if (!isfinite(diff)) return;
    if (diff > res->max_abs_error) res->max_abs_error = diff;
    if (want != 0.0 && diff / fabs(want) > res->max_rel_error) res->max_rel_error = diff / fabs(want);
}

static bool floats_match(double got, double want, double rtol, double atol) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

static void compare_tensor(size_t i, const ember_tensor *t, const bp_value *want, double rtol,
                           double atol, ember_bundled_compare *res, first_mismatch *fm) {
    size_t elem = ember_dtype_size(want->dtype);
    int64_t want_strides[EMBER_MAX_DIM];
    order_strides(want->sizes, want->dim_order, want->dim, want_strides);
    const uint8_t *got_data = t->data;
    char a[48], b[48];
    for (int64_t k = 0; k < want->numel; k++) {
        const uint8_t *g = got_data + (size_t)element_at(t->sizes, t->strides, t->dim, k) * elem;
        const uint8_t *w = want->data + (size_t)element_at(want->sizes, want_strides, want->dim, k) * elem;
        res->num_elements++;
        if (is_float(want->dtype)) {
            double x = read_float(want->dtype, g), y = read_float(want->dtype, w);
            note_error(res, x, y);
            if (floats_match(x, y, rtol, atol)) continue;
            snprintf(a, sizeof a, "%.9g", x);
            snprintf(b, sizeof b, "%.9g", y);
        } else if (is_signed_int(want->dtype) || is_unsigned_int(want->dtype)) {
            uint64_t x = read_int(want->dtype, g), y = read_int(want->dtype, w);
            if (is_signed_int(want->dtype)) {
                note_error(res, (double)(int64_t)x, (double)(int64_t)y);
                snprintf(a, sizeof a, "%lld", (long long)(int64_t)x);
                snprintf(b, sizeof b, "%lld", (long long)(int64_t)y);
            } else {
                note_error(res, (double)x, (double)y);
                snprintf(a, sizeof a, "%llu", (unsigned long long)x);
                snprintf(b, sizeof b, "%llu", (unsigned long long)y);
            }
            if (x == y) continue;
        } else if (want->dtype == EMBER_BOOL) {
            bool x = g[0] != 0, y = w[0] != 0;
            note_error(res, x, y);
            if (x == y) continue;
            snprintf(a, sizeof a, "%s", x ? "true" : "false");
            snprintf(b, sizeof b, "%s", y ? "true" : "false");
        } else {
            /* Quantized, float8 and bit types: the bytes must agree. */
            if (memcmp(g, w, elem) == 0) continue;
            size_t n = elem < 8 ? elem : 8;
            a[0] = b[0] = '\0';
            strcpy(a, "0x");
            strcpy(b, "0x");
            for (size_t j = n; j-- > 0;) {
                snprintf(a + strlen(a), sizeof a - strlen(a), "%02x", g[j]);
                snprintf(b + strlen(b), sizeof b - strlen(b), "%02x", w[j]);
            }
        }
        note_mismatch(fm, res, i, k, a, b);
    }
}

static ember_status compare_output(size_t i, const ember_value *got, const bp_value *want,
                                   double rtol, double atol, ember_bundled_compare *res,
                                   first_mismatch *fm) {
    char a[48], b[48];
    switch (want->kind) {
    case KIND_INT:
        if (got->tag != EMBER_TAG_INT) break;
        res->num_elements++;
        note_error(res, (double)got->u.i, (double)want->i);
        if (got->u.i != want->i) {
            snprintf(a, sizeof a, "%lld", (long long)got->u.i);
            snprintf(b, sizeof b, "%lld", (long long)want->i);
            note_mismatch(fm, res, i, 0, a, b);
        }
        return EMBER_OK;
    case KIND_BOOL:
        if (got->tag != EMBER_TAG_BOOL) break;
        res->num_elements++;
        if (got->u.b != want->b) note_mismatch(fm, res, i, 0, got->u.b ? "true" : "false",
                                               want->b ? "true" : "false");
        return EMBER_OK;
    case KIND_DOUBLE:
        if (got->tag != EMBER_TAG_DOUBLE) break;
        res->num_elements++;
        note_error(res, got->u.d, want->d);
        if (!floats_match(got->u.d, want->d, rtol, atol)) {
            snprintf(a, sizeof a, "%.17g", got->u.d);
            snprintf(b, sizeof b, "%.17g", want->d);
            note_mismatch(fm, res, i, 0, a, b);
        }
        return EMBER_OK;
    default: {
        if (got->tag != EMBER_TAG_TENSOR) break;
        const ember_tensor *t = got->u.t;
        if (t->dtype != want->dtype)
            return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "output %zu is %s, expected %s", i,
                                   ember_dtype_name(t->dtype), ember_dtype_name(want->dtype));
        bool same = t->dim == want->dim;
        for (uint32_t d = 0; same && d < t->dim; d++) same = t->sizes[d] == want->sizes[d];
        if (!same) {
            char gs[96] = "", ws[96] = "";
            for (uint32_t d = 0; d < t->dim && strlen(gs) < 80; d++)
                snprintf(gs + strlen(gs), sizeof gs - strlen(gs), d ? ", %d" : "%d", (int)t->sizes[d]);
            for (uint32_t d = 0; d < want->dim && strlen(ws) < 80; d++)
                snprintf(ws + strlen(ws), sizeof ws - strlen(ws), d ? ", %d" : "%d",
                        (int)want->sizes[d]);
            return ember_set_error(EMBER_ERR_SHAPE_MISMATCH,
                                   "output %zu has sizes [%s], expected [%s]", i, gs, ws);
        }
        if (t->data == NULL && t->numel > 0)
            return ember_set_error(EMBER_ERR_INVALID_STATE, "output %zu has no storage", i);
        compare_tensor(i, t, want, rtol, atol, res, fm);
        return EMBER_OK;
    }
    }
    return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "output %zu is not a %s, as expected", i,
                           kind_name(want->kind));
}

ember_status ember_bundled_program_verify_outputs(const ember_method *method,
                                                  const ember_bundled_program *bp,
                                                  const char *method_name, size_t case_index,
                                                  double rtol, double atol,
                                                  ember_bundled_compare *result) {
    ember_bundled_compare local;
    fb_vec inputs, outputs;
    EMBER_TRY(check_view(bp));
    if (method == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "NULL method");
    if (!(rtol >= 0.0) || !(atol >= 0.0))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "rtol %g and atol %g must be >= 0", rtol,
                               atol);
    if (result != NULL && result->struct_size < sizeof *result)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "result struct_size %zu, expected %zu",
                               result->struct_size, sizeof *result);
    ember_bundled_compare *res = result != NULL ? result : &local;
    memset(res, 0, sizeof *res);
    res->struct_size = sizeof *res;
    res->first_output = -1;
    res->first_element = -1;

    if (method_name == NULL) method_name = ember_method_name(method);
    EMBER_TRY(find_case(bp, method_name, case_index, &inputs, &outputs));
    size_t n = ember_method_output_count(method);
    /* A case written only to run (e.g. for profiling) has nothing to compare. */
    if (outputs.len == 0) return EMBER_OK;
    if (outputs.len != n)
        return ember_set_error(
            EMBER_ERR_INVALID_ARGUMENT, "method '%.*s' has %zu output%s, test case %zu expects %u",
            EMBER_MAX_NAME, method_name, n, n == 1 ? "" : "s", case_index, (unsigned)outputs.len);

    fb_reader r = view_reader(bp);
    first_mismatch fm;
    memset(&fm, 0, sizeof fm);
    for (uint32_t i = 0; i < outputs.len; i++) {
        bp_value want;
        const ember_value *got;
        EMBER_TRY(decode_value(&r, &outputs, i, &want));
        EMBER_TRY(ember_method_output(method, i, &got));
        ember_status st = compare_output(i, got, &want, rtol, atol, res, &fm);
        if (st != EMBER_OK) {
            ember_error_prefix("test case %zu", case_index);
            return st;
        }
        res->num_outputs++;
    }
    if (!fm.found) return EMBER_OK;
    return ember_set_error(EMBER_ERR_OUTPUT_MISMATCH,
                           "test case %zu: output %zu element %lld: got %s, expected %s "
                           "(rtol %g, atol %g); %zu of %zu elements differ, max abs error %g",
                           case_index, fm.output, (long long)fm.element, fm.got, fm.expected, rtol,
                           atol, res->num_mismatches, res->num_elements, res->max_abs_error);
}
