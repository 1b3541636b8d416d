/*
 * test_ops.c — the optimized ATen kernels (add, sub, mul, div, gelu, where,
 * _softmax, _log_softmax, native_layer_norm, embedding) against the
 * portable kernels of the same keys, at every instruction-set level this
 * CPU has and on pools of one, two and three threads.
 *
 * Sizes around the vector widths (1, 7, 17, 33, 1000+) and past the
 * threading thresholds; broadcasts of every kind ((N, M) op (M), (N, 1),
 * outer products, 0-dim, rank 4, empty); NaN, inf and signed zeros in the
 * data; in-place outputs. Arguments outside the fast paths (float64,
 * alpha 2, other dims, channels-last) must give exactly the portable
 * results, and bad arguments the portable kernel's status.
 */
#include "opt_test.h"

#define MAXR 6

typedef struct shape {
    size_t dim;
    int32_t s[MAXR];
} shape;

#define SH(...)                                                                                    \
    ((shape){sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t), {__VA_ARGS__}})
#define SH0 ((shape){0, {0}})

static size_t numel(const shape *s) {
    size_t n = 1;
    for (size_t i = 0; i < s->dim; i++) n *= (size_t)s->s[i];
    return n;
}

/* numpy broadcast of a and b (false if they do not broadcast) */
static bool bcast(const shape *a, const shape *b, shape *out) {
    out->dim = a->dim > b->dim ? a->dim : b->dim;
    for (size_t i = 0; i < out->dim; i++) {
        const size_t ia = i + a->dim >= out->dim ? i + a->dim - out->dim : SIZE_MAX;
        const size_t ib = i + b->dim >= out->dim ? i + b->dim - out->dim : SIZE_MAX;
        const int32_t x = ia == SIZE_MAX ? 1 : a->s[ia], y = ib == SIZE_MAX ? 1 : b->s[ib];
        if (x != y && x != 1 && y != 1) return false;
        out->s[i] = x == 1 ? y : x;
    }
    return true;
}

static ember_value g_vals[16];

static ember_value *v_int(size_t slot, int64_t i) {
    g_vals[slot].tag = EMBER_TAG_INT;
    g_vals[slot].u.i = i;
    return &g_vals[slot];
}
static ember_value *v_dbl(size_t slot, double d) {
    g_vals[slot].tag = EMBER_TAG_DOUBLE;
    g_vals[slot].u.d = d;
    return &g_vals[slot];
}
static ember_value *v_bool(size_t slot, bool b) {
    g_vals[slot].tag = EMBER_TAG_BOOL;
    g_vals[slot].u.b = b;
    return &g_vals[slot];
}
static ember_value *v_none(size_t slot) {
    memset(&g_vals[slot], 0, sizeof g_vals[slot]);
    g_vals[slot].tag = EMBER_TAG_NONE;
    return &g_vals[slot];
}
static ember_value *v_str(size_t slot, const char *s) {
    g_vals[slot].tag = EMBER_TAG_STRING;
    g_vals[slot].u.str.data = s;
    g_vals[slot].u.str.len = strlen(s);
    return &g_vals[slot];
}

/*
 * Calls key's optimized kernel with args_o and its portable kernel with
 * args_r; the statuses must match, and then each pair of outputs (opt[i],
 * ref[i]) must have the same shape and close values.
 */
static void compare(const char *what, const char *key, ember_value **args_o,
                    ember_value **args_r, size_t nargs, ot **opt, ot **ref, size_t nout,
                    double rtol, double atol) {
    const ember_status so = ot_call(ot_optimized(key), args_o, nargs);
    char msg_o[EMBER_ERROR_MESSAGE_SIZE];
    snprintf(msg_o, sizeof msg_o, "%s", ember_last_error());
    const ember_status sr = ot_call(kt_kernel(key), args_r, nargs);
    if (!CHECK_MSG(so == sr, "%s %s: status %s (%s), portable %s (%s)", key, what,
                   ember_status_str(so), msg_o, ember_status_str(sr), ember_last_error()))
        return;
    if (so != EMBER_OK) return;
    for (size_t i = 0; i < nout; i++) {
        const ember_tensor *a = &opt[i]->x.t, *b = &ref[i]->x.t;
        bool same = a->dim == b->dim && a->dtype == b->dtype;
        for (size_t d = 0; same && d < a->dim; d++) same = a->sizes[d] == b->sizes[d];
        if (!CHECK_MSG(same, "%s %s: output %zu shape differs", key, what, i)) continue;
        size_t bad = 0;
        if (a->dtype == EMBER_FLOAT32) {
            const bool close = ot_close(a->data, b->data, (size_t)a->numel, rtol, atol, &bad);
            CHECK_MSG(close, "%s %s: output %zu element %zu: %.9g vs portable %.9g", key, what, i,
                      bad, (double)((const float *)a->data)[bad],
                      (double)((const float *)b->data)[bad]);
        } else {
            CHECK_MSG(memcmp(a->data, b->data, a->nbytes) == 0, "%s %s: output %zu differs", key,
                      what, i);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* add, sub, mul, div                                                        */
/* ------------------------------------------------------------------------ */

static void binary_case(const char *key, const shape *as, const shape *bs, int dtype,
                        double alpha) {
    const bool has_alpha = strcmp(key, "aten::add.out") == 0 || strcmp(key, "aten::sub.out") == 0;
    shape os;
    const bool ok = bcast(as, bs, &os);
    if (!ok) os = *as; /* the kernels must refuse it */
    ot a, b, o, r;
    ember_value *va = ot_new(&a, dtype, as->s, as->dim, false);
    ember_value *vb = ot_new(&b, dtype, bs->s, bs->dim, false);
    ember_value *vo = ot_new(&o, dtype, os.s, os.dim, true);
    ember_value *vr = ot_new(&r, dtype, os.s, os.dim, true);
    if (dtype == EMBER_FLOAT32) {
        ot_fill(&a, 4.0f, true);
        ot_fill(&b, 4.0f, true);
    } else {
        for (size_t i = 0; i < a.bytes / 8; i++) ((double *)a.data)[i] = rng_float();
        for (size_t i = 0; i < b.bytes / 8; i++) ((double *)b.data)[i] = rng_float();
    }
    ember_value *al = v_dbl(0, alpha);
    ember_value *args_o[5], *args_r[5];
    size_t n = 0;
    args_o[n] = args_r[n] = va, n++;
    args_o[n] = args_r[n] = vb, n++;
    if (has_alpha) args_o[n] = args_r[n] = al, n++;
    args_o[n] = args_o[n + 1] = vo;
    args_r[n] = args_r[n + 1] = vr;
    n += 2;
    char what[160];
    snprintf(what, sizeof what, "a rank %zu (%d..) b rank %zu (%d..) %s alpha %g", as->dim,
             as->dim ? as->s[0] : 0, bs->dim, bs->dim ? bs->s[0] : 0, ember_dtype_name(dtype),
             alpha);
    ot *po = &o, *pr = &r;
    compare(what, key, args_o, args_r, n, &po, &pr, 1, 0.0, 0.0);
    ot_free(&a);
    ot_free(&b);
    ot_free(&o);
    ot_free(&r);
}

/* out is self (in place): the optimized kernel on a copy against the portable on another */
static void binary_inplace(const char *key, const shape *s, const shape *bs) {
    ot a1, a2, b;
    ember_value *v1 = ot_new(&a1, EMBER_FLOAT32, s->s, s->dim, true);
    ember_value *v2 = ot_new(&a2, EMBER_FLOAT32, s->s, s->dim, true);
    ember_value *vb = ot_new(&b, EMBER_FLOAT32, bs->s, bs->dim, false);
    ot_fill(&a1, 3.0f, true);
    memcpy(a2.data, a1.data, a1.bytes);
    ot_fill(&b, 3.0f, false);
    const bool has_alpha = strcmp(key, "aten::add.out") == 0 || strcmp(key, "aten::sub.out") == 0;
    ember_value *args_o[5] = {v1, vb, v_int(0, 1), v1, v1}, *args_r[5] = {v2, vb, v_int(0, 1), v2, v2};
    if (!has_alpha) {
        args_o[2] = args_o[3] = v1;
        args_r[2] = args_r[3] = v2;
    }
    ot *po = &a1, *pr = &a2;
    compare("in place", key, args_o, args_r, has_alpha ? 5 : 4, &po, &pr, 1, 0.0, 0.0);
    ot_free(&a1);
    ot_free(&a2);
    ot_free(&b);
}

static void test_binary(void) {
    static const char *const keys[] = {"aten::add.out", "aten::sub.out", "aten::mul.out",
                                       "aten::div.out"};
    const shape cases[][2] = {
        {SH(1), SH(1)},           {SH(7), SH(7)},
        {SH(17), SH(1)},          {SH(1), SH(33)},
        {SH(1003), SH(1003)},     {SH(5, 33), SH(33)},
        {SH(5, 33), SH(5, 1)},    {SH(5, 1), SH(1, 33)},
        {SH(33), SH(5, 33)},      {SH(5, 1), SH(5, 33)},
        {SH(3, 1, 17), SH(1, 4, 17)}, {SH(2, 3, 4, 5), SH(3, 1, 5)},
        {SH0, SH(7)},             {SH(9), SH0},
        {SH0, SH0},               {SH(4100, 9), SH(9)},
        {SH(2, 20001), SH(20001)}, {SH(3, 20001), SH(3, 1)},
        {SH(0, 5), SH(5)},        {SH(40000), SH(1)},
    };
    for (size_t k = 0; k < 4; k++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            binary_case(keys[k], &cases[c][0], &cases[c][1], EMBER_FLOAT32, 1.0);
        /* outside the fast path */
        binary_case(keys[k], &cases[5][0], &cases[5][1], EMBER_FLOAT64, 1.0);
        const shape bad_a = SH(5, 3), bad_b = SH(4);
        binary_case(keys[k], &bad_a, &bad_b, EMBER_FLOAT32, 1.0);
        binary_inplace(keys[k], &cases[5][0], &cases[5][1]);
        binary_inplace(keys[k], &cases[17][0], &cases[17][1]);
    }
    binary_case("aten::add.out", &cases[6][0], &cases[6][1], EMBER_FLOAT32, 2.0);
    binary_case("aten::sub.out", &cases[7][0], &cases[7][1], EMBER_FLOAT32, 0.5);
}

/* ------------------------------------------------------------------------ */
/* gelu                                                                      */
/* ------------------------------------------------------------------------ */

static void test_gelu(void) {
    const shape cases[] = {SH(1), SH(7), SH(17), SH(33), SH(1031), SH(3, 7, 11), SH(40000), SH0,
                           SH(0)};
    static const char *const forms[] = {"none", "tanh"};
    for (size_t f = 0; f < 2; f++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            ot x, o, r;
            ember_value *vx = ot_new(&x, EMBER_FLOAT32, cases[c].s, cases[c].dim, false);
            ember_value *vo = ot_new(&o, EMBER_FLOAT32, cases[c].s, cases[c].dim, true);
            ember_value *vr = ot_new(&r, EMBER_FLOAT32, cases[c].s, cases[c].dim, true);
            ot_fill(&x, 8.0f, true);
            ember_value *s = v_str(0, forms[f]);
            ember_value *ao[4] = {vx, s, vo, vo}, *ar[4] = {vx, s, vr, vr};
            ot *po = &o, *pr = &r;
            compare(forms[f], "aten::gelu.out", ao, ar, 4, &po, &pr, 1, 1e-5, 1e-6);
            /* a bad approximate string, and float64: the portable kernel's */
            ember_value *bad = v_str(1, "erf");
            ember_value *bo[4] = {vx, bad, vo, vo}, *br[4] = {vx, bad, vr, vr};
            compare("bad approximate", "aten::gelu.out", bo, br, 4, &po, &pr, 1, 0, 0);
            ot_free(&x);
            ot_free(&o);
            ot_free(&r);
        }
}

/* ------------------------------------------------------------------------ */
/* where                                                                     */
/* ------------------------------------------------------------------------ */

static void where_case(const shape *cs, const shape *as, const shape *bs, int cond_dtype) {
    shape t, os;
    if (!bcast(cs, as, &t) || !bcast(&t, bs, &os)) os = *as;
    ot c, a, b, o, r;
    ember_value *vc = ot_new(&c, cond_dtype, cs->s, cs->dim, false);
    ember_value *va = ot_new(&a, EMBER_FLOAT32, as->s, as->dim, false);
    ember_value *vb = ot_new(&b, EMBER_FLOAT32, bs->s, bs->dim, false);
    ember_value *vo = ot_new(&o, EMBER_FLOAT32, os.s, os.dim, true);
    ember_value *vr = ot_new(&r, EMBER_FLOAT32, os.s, os.dim, true);
    for (size_t i = 0; i < c.bytes; i++) ((uint8_t *)c.data)[i] = rng_float() > 0.0f;
    ot_fill(&a, 2.0f, true);
    ot_fill(&b, 2.0f, true);
    ember_value *ao[5] = {vc, va, vb, vo, vo}, *ar[5] = {vc, va, vb, vr, vr};
    ot *po = &o, *pr = &r;
    compare("broadcast", "aten::where.self_out", ao, ar, 5, &po, &pr, 1, 0, 0);
    ot_free(&c);
    ot_free(&a);
    ot_free(&b);
    ot_free(&o);
    ot_free(&r);
}

static void test_where(void) {
    const shape cases[][3] = {
        {SH(7), SH(7), SH(7)},          {SH(1033), SH(1033), SH(1033)},
        {SH(5, 17), SH(17), SH(1)},     {SH(5, 1), SH(5, 17), SH0},
        {SH(1, 17), SH(5, 1), SH(5, 17)}, {SH(2, 3, 4), SH(3, 1), SH(2, 1, 4)},
        {SH(8, 5000), SH(5000), SH(8, 1)}, {SH0, SH(33), SH(33)},
        {SH(4, 4), SH(4, 3), SH(4, 4)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        where_case(&cases[c][0], &cases[c][1], &cases[c][2], EMBER_BOOL);
    where_case(&cases[2][0], &cases[2][1], &cases[2][2], EMBER_UINT8);
    where_case(&cases[2][0], &cases[2][1], &cases[2][2], EMBER_FLOAT32); /* refused */
}

/* ------------------------------------------------------------------------ */
/* softmax, log_softmax                                                      */
/* ------------------------------------------------------------------------ */

static void softmax_case(const char *key, const shape *s, int64_t dim, bool specials,
                         const uint8_t *order) {
    ot x, o, r;
    ember_value *vx = ot_new(&x, EMBER_FLOAT32, s->s, s->dim, false);
    if (order != NULL) {
        memcpy(x.x.order, order, s->dim);
        ember_tensor_compute_strides(&x.x.t);
    }
    ember_value *vo = ot_new(&o, EMBER_FLOAT32, s->s, s->dim, true);
    ember_value *vr = ot_new(&r, EMBER_FLOAT32, s->s, s->dim, true);
    ot_fill(&x, 20.0f, specials);
    /* a row of -inf and a row holding +inf, when there are rows enough */
    const size_t len = s->dim > 0 ? (size_t)s->s[s->dim - 1] : 1, n = numel(s);
    if (specials && n >= 3 * len && order == NULL) {
        for (size_t i = 0; i < len; i++) ot_f(&x)[len + i] = -INFINITY;
        ot_f(&x)[2 * len] = INFINITY;
    }
    ember_value *ao[5] = {vx, v_int(0, dim), v_bool(1, false), vo, vo};
    ember_value *ar[5] = {vx, &g_vals[0], &g_vals[1], vr, vr};
    char what[96];
    snprintf(what, sizeof what, "rank %zu dim %lld%s", s->dim, (long long)dim,
             order != NULL ? " channels-last" : "");
    ot *po = &o, *pr = &r;
    compare(what, key, ao, ar, 5, &po, &pr, 1, 1e-5, 1e-6);
    ot_free(&x);
    ot_free(&o);
    ot_free(&r);
}

static void test_softmax(void) {
    static const char *const keys[] = {"aten::_softmax.out", "aten::_log_softmax.out"};
    const shape cases[] = {SH(1), SH(7), SH(3, 17), SH(33, 33), SH(2, 1031), SH(300, 100),
                           SH(4, 3, 65), SH(0, 9)};
    const uint8_t nhwc[4] = {0, 2, 3, 1};
    const shape img = SH(2, 3, 4, 5);
    for (size_t k = 0; k < 2; k++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            softmax_case(keys[k], &cases[c], -1, true, NULL);
            softmax_case(keys[k], &cases[c], (int64_t)cases[c].dim - 1, false, NULL);
        }
        softmax_case(keys[k], &cases[3], 0, true, NULL);   /* not the last dim */
        softmax_case(keys[k], &img, -1, false, nhwc);      /* channels-last input */
        softmax_case(keys[k], &cases[2], 2, false, NULL);  /* dim out of range */
    }
}

/* ------------------------------------------------------------------------ */
/* native_layer_norm                                                         */
/* ------------------------------------------------------------------------ */

static void layer_norm_case(const shape *s, size_t nnorm, bool with_w, bool with_b, float offset,
                            double eps) {
    shape stat = *s, ns = {nnorm, {0}};
    for (size_t d = s->dim - nnorm; d < s->dim; d++) {
        stat.s[d] = 1;
        ns.s[d - (s->dim - nnorm)] = s->s[d];
    }
    const size_t cols = numel(&ns);
    const int32_t cs[1] = {(int32_t)cols};
    ot x, w, b, o[3], r[3];
    ember_value *vx = ot_new(&x, EMBER_FLOAT32, s->s, s->dim, false);
    ember_value *vw = ot_new(&w, EMBER_FLOAT32, cs, 1, false);
    ember_value *vb = ot_new(&b, EMBER_FLOAT32, cs, 1, false);
    ember_value *vo[3], *vr[3];
    for (size_t i = 0; i < 3; i++) {
        vo[i] = ot_new(&o[i], EMBER_FLOAT32, i == 0 ? s->s : stat.s, s->dim, true);
        vr[i] = ot_new(&r[i], EMBER_FLOAT32, i == 0 ? s->s : stat.s, s->dim, true);
    }
    ot_fill(&x, 2.0f, false);
    for (size_t i = 0; i < x.bytes / 4; i++) ot_f(&x)[i] += offset;
    ot_fill(&w, 1.5f, false);
    ot_fill(&b, 0.5f, false);
    il norm;
    int64_t nv[MAXR];
    for (size_t i = 0; i < nnorm; i++) nv[i] = ns.s[i];
    ember_value *vn = il_init(&norm, nv, nnorm);
    tl lo, lr;
    tt *to[3] = {&o[0].x, &o[1].x, &o[2].x}, *tr[3] = {&r[0].x, &r[1].x, &r[2].x};
    ember_value *ao[9] = {vx, vn, with_w ? vw : v_none(0), with_b ? vb : v_none(1), v_dbl(2, eps),
                          vo[0], vo[1], vo[2], tl_init(&lo, to, 3, false)};
    ember_value *ar[9] = {vx, vn, ao[2], ao[3], ao[4], vr[0], vr[1], vr[2],
                          tl_init(&lr, tr, 3, false)};
    char what[96];
    snprintf(what, sizeof what, "rank %zu, %zu cols, w %d b %d offset %g", s->dim, cols, with_w,
             with_b, (double)offset);
    ot *po[3] = {&o[0], &o[1], &o[2]}, *pr[3] = {&r[0], &r[1], &r[2]};
    compare(what, "aten::native_layer_norm.out", ao, ar, 9, po, pr, 3, 2e-5, 2e-5);
    ot_free(&x);
    ot_free(&w);
    ot_free(&b);
    for (size_t i = 0; i < 3; i++) {
        ot_free(&o[i]);
        ot_free(&r[i]);
    }
}

static void test_layer_norm(void) {
    const shape cases[] = {SH(1, 1), SH(1, 7), SH(5, 17), SH(3, 4, 33), SH(64, 768), SH(2, 1031),
                           SH(70, 300), SH(0, 8)};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int wb = 0; wb < 4; wb++)
            layer_norm_case(&cases[c], 1, wb & 1, wb & 2, 0.0f, 1e-5);
    layer_norm_case(&cases[3], 2, true, true, 0.0f, 1e-5);
    layer_norm_case(&cases[4], 1, true, true, 300.0f, 1e-5); /* a mean far from 0 */
    layer_norm_case(&cases[2], 1, true, false, 0.0f, 0.5);
    const shape empty_rows = SH(3, 0);
    layer_norm_case(&empty_rows, 1, false, false, 0.0f, 1e-5); /* the portable kernel's */
}

/* ------------------------------------------------------------------------ */
/* embedding                                                                 */
/* ------------------------------------------------------------------------ */

static void embedding_case(int wdtype, int32_t vocab, int32_t dim, const shape *is, int idtype,
                           bool out_of_range) {
    const int32_t ws[2] = {vocab, dim};
    shape os = *is;
    os.s[os.dim++] = dim;
    ot w, ix, o, r;
    ember_value *vw = ot_new(&w, wdtype, ws, 2, false);
    ember_value *vi = ot_new(&ix, idtype, is->s, is->dim, false);
    ember_value *vo = ot_new(&o, wdtype, os.s, os.dim, true);
    ember_value *vr = ot_new(&r, wdtype, os.s, os.dim, true);
    for (size_t i = 0; i < w.bytes; i++) ((uint8_t *)w.data)[i] = (uint8_t)(i * 7 + 3);
    const size_t n = numel(is);
    for (size_t i = 0; i < n; i++) {
        int64_t v = (int64_t)((rng_float() + 1.0f) * 0.5f * (float)vocab) % vocab;
        if (out_of_range && i == n / 2) v = i % 2 ? vocab : -1;
        if (idtype == EMBER_INT64)
            ((int64_t *)ix.data)[i] = v;
        else
            ((int32_t *)ix.data)[i] = (int32_t)v;
    }
    ember_value *ao[7] = {vw, vi, v_int(0, -1), v_bool(1, false), v_bool(2, false), vo, vo};
    ember_value *ar[7] = {vw, vi, &g_vals[0], &g_vals[1], &g_vals[2], vr, vr};
    ot *po = &o, *pr = &r;
    compare(out_of_range ? "index out of range" : "gather", "aten::embedding.out", ao, ar, 7, &po,
            &pr, 1, 0, 0);
    if (out_of_range) CHECK_CONTAINS(ember_last_error(), "out of range");
    ot_free(&w);
    ot_free(&ix);
    ot_free(&o);
    ot_free(&r);
}

static void test_embedding(void) {
    const shape is[] = {SH(1), SH(7), SH(3, 5), SH(5000), SH(0)};
    for (size_t c = 0; c < sizeof is / sizeof is[0]; c++) {
        embedding_case(EMBER_FLOAT32, 50, 17, &is[c], EMBER_INT64, false);
        embedding_case(EMBER_FLOAT32, 50, 64, &is[c], EMBER_INT32, false);
    }
    embedding_case(EMBER_INT64, 9, 3, &is[2], EMBER_INT64, false);
    embedding_case(EMBER_FLOAT32, 50, 17, &is[2], EMBER_INT64, true);
    embedding_case(EMBER_FLOAT32, 50, 17, &is[3], EMBER_INT32, true);
}

/* ------------------------------------------------------------------------ */

int main(void) {
    check_section("registry");
    CHECK(ember_optimized_kernel_count() > 0);
    CHECK(ember_optimized_kernel_at(ember_optimized_kernel_count()) == NULL);
    ember_kernels_clear();
    CHECK_OK(ember_portable_kernels_register());
    CHECK_OK(ember_optimized_kernels_register());
    for (size_t i = 0; i < ember_optimized_kernel_count(); i++) {
        const ember_kernel *k = ember_optimized_kernel_at(i);
        CHECK_MSG(ember_kernel_find(k->name, strlen(k->name)) == k->fn, "%s not on top", k->name);
    }
    ember_kernels_clear();

    const size_t npools = ot_pools_init();
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        if (!eko_isa_set((eko_isa)isa)) {
            printf("-- %s: skipped (not on this CPU or not in this build)\n",
                   eko_isa_name((eko_isa)isa));
            continue;
        }
        for (size_t p = 0; p < npools; p++) {
            char name[64];
            snprintf(name, sizeof name, "%s, %zu thread(s)", eko_isa_name((eko_isa)isa),
                     ember_threadpool_size(g_ot_pools[p]));
            check_section(name);
            ot_ctx_set(g_ot_pools[p], 1u << 20);
            test_binary();
            test_gelu();
            test_where();
            test_softmax();
            test_layer_norm();
            test_embedding();
        }
    }
    ot_pools_free();
    return check_finish();
}
