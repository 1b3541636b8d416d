/*
 * test_kernels.c — unit tests of the portable kernels and prim ops.
 *
 * Each test builds its tensors by hand (data, sizes, bounds, dim order and
 * strides arrays owned here), calls the kernel through the portable table by
 * its key, and compares with values computed in the test. Error cases check
 * for a clean status: shape mismatches, outputs too small, bad argument
 * tags, out-of-range indices.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* Fixtures: tensors, values, kernel calls (kernel_call.h)                   */
/* ------------------------------------------------------------------------ */

static void fill_rand(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = rng_float();
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */
/* ------------------------------------------------------------------------ */

static void test_registry(void) {
    check_section("registry");
    size_t n = ember_portable_kernel_count();
    CHECK(n > 100);
    CHECK(ember_portable_kernel_at(n) == NULL);
    bool unique = true, complete = true;
    for (size_t i = 0; i < n; i++) {
        const ember_kernel *k = ember_portable_kernel_at(i);
        if (k == NULL || k->name == NULL || k->fn == NULL) complete = false;
        for (size_t j = 0; k != NULL && j < i; j++)
            if (strcmp(ember_portable_kernel_at(j)->name, k->name) == 0) unique = false;
    }
    CHECK(complete);
    CHECK(unique);
    ember_kernels_clear();
    CHECK_OK(ember_portable_kernels_register());
    const char *key = "aten::addmm.out";
    CHECK(ember_kernel_find(key, strlen(key)) == kt_kernel(key));
    key = "executorch_prim::et_view.default";
    CHECK(ember_kernel_find(key, strlen(key)) != NULL);
    ember_kernels_clear();
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------ */

static void test_add(void) {
    check_section("add");
    tt a, b, o;
    float ad[6] = {1, 2, 3, 4, 5, 6}, bd[3] = {10, 20, 30}, od[6];
    IN(a, EMBER_FLOAT32, ad, 2, 3);
    IN(b, EMBER_FLOAT32, bd, 3);
    OUT(o, EMBER_FLOAT32, od, 2, 3);
    /* broadcast [2,3] + 2 * [3] */
    CHECK_OK(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(2)), &o.v, &o.v));
    float want[6] = {21, 42, 63, 24, 45, 66};
    CHECK(close_f(od, want, 6, 0));
    CHECK(SHAPE_IS(&o.t, 2, 3));

    /* other broadcast the other way: [3] + [2,3] */
    CHECK_OK(CALL("aten::add.out", &b.v, &a.v, VP(kt_double(1.0)), &o.v, &o.v));
    float want2[6] = {11, 22, 33, 14, 25, 36};
    CHECK(close_f(od, want2, 6, 0));

    /* int32 tensor + float scalar -> float (default dtype), into float out */
    tt ia, fo;
    int32_t iad[3] = {1, -2, 3};
    float fod[3];
    IN(ia, EMBER_INT32, iad, 3);
    OUT(fo, EMBER_FLOAT32, fod, 3);
    CHECK_OK(CALL("aten::add.Scalar_out", &ia.v, VP(kt_double(0.5)), VP(kt_int(1)), &fo.v, &fo.v));
    float want3[3] = {1.5f, -1.5f, 3.5f};
    CHECK(close_f(fod, want3, 3, 0));
    /* ... but not into an int out */
    tt io;
    int32_t iod[3];
    OUT(io, EMBER_INT32, iod, 3);
    CHECK_STATUS(CALL("aten::add.Scalar_out", &ia.v, VP(kt_double(0.5)), VP(kt_int(1)), &io.v, &io.v),
                 EMBER_ERR_TYPE_MISMATCH);
    /* int + int scalar with alpha stays int; int64 wraps */
    CHECK_OK(CALL("aten::add.Scalar_out", &ia.v, VP(kt_int(7)), VP(kt_int(-2)), &io.v, &io.v));
    CHECK(iod[0] == -13 && iod[1] == -16 && iod[2] == -11);
    CHECK_STATUS(CALL("aten::add.Scalar_out", &ia.v, VP(kt_int(7)), VP(kt_double(1.5)), &io.v, &io.v),
                 EMBER_ERR_TYPE_MISMATCH);
    tt la, lo;
    int64_t lad[2] = {INT64_MAX, INT64_MIN}, lod[2];
    IN(la, EMBER_INT64, lad, 2);
    OUT(lo, EMBER_INT64, lod, 2);
    CHECK_OK(CALL("aten::add.Scalar_out", &la.v, VP(kt_int(1)), VP(kt_int(1)), &lo.v, &lo.v));
    CHECK(lod[0] == INT64_MIN && lod[1] == INT64_MIN + 1);

    /* int8 tensor + 0-dim float64 tensor: the 0-dim float wins the category */
    tt ca, cz, co;
    int8_t cad[2] = {1, 2};
    double czd = 0.25;
    double cod[2];
    IN(ca, EMBER_INT8, cad, 2);
    IN0(cz, EMBER_FLOAT64, czd);
    OUT(co, EMBER_FLOAT64, cod, 2);
    CHECK_OK(CALL("aten::add.out", &ca.v, &cz.v, VP(kt_int(1)), &co.v, &co.v));
    CHECK(cod[0] == 1.25 && cod[1] == 2.25);

    /* bool + bool = or */
    tt ba, bb, bo;
    uint8_t bad[4] = {0, 1, 0, 1}, bbd[4] = {0, 0, 1, 1}, bod[4];
    IN(ba, EMBER_BOOL, bad, 4);
    IN(bb, EMBER_BOOL, bbd, 4);
    OUT(bo, EMBER_BOOL, bod, 4);
    CHECK_OK(CALL("aten::add.out", &ba.v, &bb.v, VP(kt_int(1)), &bo.v, &bo.v));
    CHECK(bod[0] == 0 && bod[1] == 1 && bod[2] == 1 && bod[3] == 1);

    /* half and bfloat16 compute in float */
    tt ha, ho, bfa, bfo;
    uint16_t had[2] = {ember_float_to_half(1.5f), ember_float_to_half(-2.0f)}, hod[2];
    uint16_t bfad[2] = {ember_float_to_bf16(3.0f), ember_float_to_bf16(0.5f)}, bfod[2];
    IN(ha, EMBER_FLOAT16, had, 2);
    OUT(ho, EMBER_FLOAT16, hod, 2);
    IN(bfa, EMBER_BFLOAT16, bfad, 2);
    OUT(bfo, EMBER_BFLOAT16, bfod, 2);
    CHECK_OK(CALL("aten::add.out", &ha.v, &ha.v, VP(kt_int(1)), &ho.v, &ho.v));
    CHECK(ember_half_to_float(hod[0]) == 3.0f && ember_half_to_float(hod[1]) == -4.0f);
    CHECK_OK(CALL("aten::add.out", &bfa.v, &bfa.v, VP(kt_int(2)), &bfo.v, &bfo.v));
    CHECK(ember_bf16_to_float(bfod[0]) == 9.0f && ember_bf16_to_float(bfod[1]) == 1.5f);

    /* errors: not broadcastable, out too small, wrong tags, wrong nargs */
    tt c4, small;
    float c4d[4] = {0}, smalld[2];
    IN(c4, EMBER_FLOAT32, c4d, 4);
    CHECK_STATUS(CALL("aten::add.out", &a.v, &c4.v, VP(kt_int(1)), &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    OUT(small, EMBER_FLOAT32, smalld, 2, 1);
    CHECK_STATUS(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(1)), &small.v, &small.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::add.out", &a.v, VP(kt_int(3)), VP(kt_int(1)), &o.v, &o.v),
                 EMBER_ERR_INVALID_PROGRAM);
    CHECK_STATUS(CALL("aten::add.out", &a.v, &b.v, &o.v, &o.v), EMBER_ERR_INVALID_PROGRAM);
    /* a static out of the wrong shape */
    tt so;
    float sod[6];
    IN(so, EMBER_FLOAT32, sod, 3, 2);
    CHECK_STATUS(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(1)), &so.v, &so.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* bounds fine but storage too small */
    tt tiny;
    float tinyd[2];
    tt_make(&tiny, EMBER_FLOAT32, (const int32_t[]){2, 3}, 2, tinyd, sizeof tinyd, true, NULL);
    CHECK_STATUS(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(1)), &tiny.v, &tiny.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* a constant out is refused */
    tt k;
    float kd[6];
    OUT(k, EMBER_FLOAT32, kd, 2, 3);
    k.t.storage = EMBER_STORAGE_CONSTANT;
    CHECK_STATUS(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(1)), &k.v, &k.v),
                 EMBER_ERR_INVALID_PROGRAM);
    /* an unsupported dtype */
    tt q;
    uint8_t qd[3] = {0};
    IN(q, EMBER_QINT8, qd, 3);
    CHECK_STATUS(CALL("aten::add.out", &q.v, &b.v, VP(kt_int(1)), &o.v, &o.v),
                 EMBER_ERR_NOT_SUPPORTED);
}

static void test_add_layouts(void) {
    check_section("add: dim orders, dynamic shapes, zero-size");
    /* channels-last out: (N, C, H, W) stored as (N, H, W, C) */
    tt a, b, o;
    float ad[2 * 2 * 3], od[12];
    for (int i = 0; i < 12; i++) ad[i] = (float)i;
    float bd[2] = {100, 200};
    IN(a, EMBER_FLOAT32, ad, 1, 2, 2, 3);
    IN(b, EMBER_FLOAT32, bd, 2, 1, 1);
    tt_make(&o, EMBER_FLOAT32, (const int32_t[]){1, 2, 2, 3}, 4, od, sizeof od, false,
            (const uint8_t[]){0, 2, 3, 1});
    CHECK_OK(CALL("aten::add.out", &a.v, &b.v, VP(kt_int(1)), &o.v, &o.v));
    bool ok = true;
    for (int c = 0; c < 2; c++)
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 3; w++)
                ok &= od[(h * 3 + w) * 2 + c] == ad[(c * 2 + h) * 3 + w] + bd[c];
    CHECK(ok);

    /* dynamic shape: an out with bound (4, 8) resized to (3, 5) */
    tt x, y, z;
    float xd[15], yd[5], zd[32];
    fill_rand(xd, 15);
    fill_rand(yd, 5);
    IN(x, EMBER_FLOAT32, xd, 3, 5);
    IN(y, EMBER_FLOAT32, yd, 5);
    OUT(z, EMBER_FLOAT32, zd, 4, 8);
    CHECK_OK(CALL("aten::mul.out", &x.v, &y.v, &z.v, &z.v));
    CHECK(SHAPE_IS(&z.t, 3, 5));
    ok = true;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) ok &= zd[i * 5 + j] == xd[i * 5 + j] * yd[j];
    CHECK(ok);
    CHECK_EQ_INT(z.t.numel, 15);

    /* zero-size: (0, 3) + (3) -> (0, 3); data pointers may be NULL */
    tt e, eo;
    tt_make(&e, EMBER_FLOAT32, (const int32_t[]){0, 3}, 2, NULL, 0, false, NULL);
    tt_make(&eo, EMBER_FLOAT32, (const int32_t[]){4, 3}, 2, NULL, 0, true, NULL);
    CHECK_STATUS(CALL("aten::add.out", &e.v, &y.v, VP(kt_int(1)), &eo.v, &eo.v),
                 EMBER_ERR_SHAPE_MISMATCH); /* (0,3) and (5) do not broadcast */
    float y3[3] = {1, 2, 3};
    IN(y, EMBER_FLOAT32, y3, 3);
    CHECK_OK(CALL("aten::add.out", &e.v, &y.v, VP(kt_int(1)), &eo.v, &eo.v));
    CHECK(SHAPE_IS(&eo.t, 0, 3));

    /* 0-dim op 0-dim -> 0-dim */
    tt s1, s2, so;
    float s1d = 2, s2d = 5, sod = 0;
    IN0(s1, EMBER_FLOAT32, s1d);
    IN0(s2, EMBER_FLOAT32, s2d);
    IN0(so, EMBER_FLOAT32, sod);
    CHECK_OK(CALL("aten::sub.out", &s1.v, &s2.v, VP(kt_int(2)), &so.v, &so.v));
    CHECK(sod == -8);
}

static void test_arith(void) {
    check_section("sub, rsub, mul, div");
    tt a, b, o;
    float ad[4] = {7, -7, 1, 0}, bd[4] = {2, 2, 0, 0}, od[4];
    IN(a, EMBER_FLOAT32, ad, 4);
    IN(b, EMBER_FLOAT32, bd, 4);
    OUT(o, EMBER_FLOAT32, od, 4);
    CHECK_OK(CALL("aten::sub.out", &a.v, &b.v, VP(kt_int(3)), &o.v, &o.v));
    CHECK(od[0] == 1 && od[1] == -13 && od[2] == 1 && od[3] == 0);
    CHECK_OK(CALL("aten::sub.Scalar_out", &a.v, VP(kt_double(0.5)), VP(kt_int(1)), &o.v, &o.v));
    CHECK(od[0] == 6.5f && od[1] == -7.5f);
    CHECK_OK(CALL("aten::rsub.Scalar_out", &a.v, VP(kt_int(1)), VP(kt_int(2)), &o.v, &o.v));
    CHECK(od[0] == -13 && od[1] == 15 && od[3] == 1);
    CHECK_OK(CALL("aten::mul.Scalar_out", &a.v, VP(kt_double(-2)), &o.v, &o.v));
    CHECK(od[0] == -14 && od[1] == 14);
    CHECK_OK(CALL("aten::div.out", &a.v, &b.v, &o.v, &o.v));
    CHECK(od[0] == 3.5f && od[1] == -3.5f && isinf(od[2]) && isnan(od[3]));
    CHECK_OK(CALL("aten::div.out_mode", &a.v, &b.v, VP(kt_str("floor")), &o.v, &o.v));
    CHECK(od[0] == 3 && od[1] == -4);
    CHECK_OK(CALL("aten::div.out_mode", &a.v, &b.v, VP(kt_str("trunc")), &o.v, &o.v));
    CHECK(od[0] == 3 && od[1] == -3);
    CHECK_OK(CALL("aten::div.out_mode", &a.v, &b.v, VP(kt_none()), &o.v, &o.v));
    CHECK(od[0] == 3.5f);
    CHECK_STATUS(CALL("aten::div.out_mode", &a.v, &b.v, VP(kt_str("round")), &o.v, &o.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(CALL("aten::div.Scalar_out", &a.v, VP(kt_int(4)), &o.v, &o.v));
    CHECK(od[0] == 1.75f);

    /* integer true division gives float; integer floor division stays int */
    tt ia, ib, io, fo;
    int64_t iad[3] = {7, -7, 5}, ibd[3] = {2, 2, 0}, iod[3];
    float fod[3];
    IN(ia, EMBER_INT64, iad, 3);
    IN(ib, EMBER_INT64, ibd, 3);
    OUT(io, EMBER_INT64, iod, 3);
    OUT(fo, EMBER_FLOAT32, fod, 3);
    CHECK_OK(CALL("aten::div.out", &ia.v, &ib.v, &fo.v, &fo.v));
    CHECK(fod[0] == 3.5f && fod[1] == -3.5f && isinf(fod[2]));
    CHECK_STATUS(CALL("aten::div.out", &ia.v, &ib.v, &io.v, &io.v), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(CALL("aten::div.out_mode", &ia.v, &ib.v, VP(kt_str("floor")), &io.v, &io.v),
                 EMBER_ERR_KERNEL_FAILED); /* 5 // 0 */
    ibd[2] = -1;
    iad[2] = INT64_MIN;
    CHECK_OK(CALL("aten::div.out_mode", &ia.v, &ib.v, VP(kt_str("floor")), &io.v, &io.v));
    CHECK(iod[0] == 3 && iod[1] == -4 && iod[2] == INT64_MIN);
    CHECK_OK(
        CALL("aten::div.Scalar_mode_out", &ia.v, VP(kt_int(-2)), VP(kt_str("trunc")), &io.v, &io.v));
    CHECK(iod[0] == -3 && iod[1] == 3);

    /* maximum / minimum with NaN, pow */
    float nd[2] = {NAN, 1}, md[2] = {0, 2};
    IN(a, EMBER_FLOAT32, nd, 2);
    IN(b, EMBER_FLOAT32, md, 2);
    OUT(o, EMBER_FLOAT32, od, 2);
    CHECK_OK(CALL("aten::maximum.out", &a.v, &b.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && od[1] == 2);
    CHECK_OK(CALL("aten::minimum.out", &b.v, &a.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && od[1] == 1);
    CHECK_OK(CALL("aten::pow.Tensor_Scalar_out", &b.v, VP(kt_int(3)), &o.v, &o.v));
    CHECK(od[0] == 0 && od[1] == 8);
    int64_t pd[3] = {3, -2, 2};
    IN(ia, EMBER_INT64, pd, 3);
    CHECK_OK(CALL("aten::pow.Tensor_Scalar_out", &ia.v, VP(kt_int(3)), &io.v, &io.v));
    CHECK(iod[0] == 27 && iod[1] == -8 && iod[2] == 8);
    CHECK_STATUS(CALL("aten::pow.Tensor_Scalar_out", &ia.v, VP(kt_int(-1)), &io.v, &io.v),
                 EMBER_ERR_INVALID_ARGUMENT);
}

static void test_compare_logic(void) {
    check_section("comparisons, logic, where, masked_fill");
    tt a, b, o;
    float ad[4] = {1, 2, 3, NAN}, bd[4] = {3, 2, 1, NAN};
    uint8_t od[4];
    IN(a, EMBER_FLOAT32, ad, 4);
    IN(b, EMBER_FLOAT32, bd, 4);
    OUT(o, EMBER_BOOL, od, 4);
    CHECK_OK(CALL("aten::eq.Tensor_out", &a.v, &b.v, &o.v, &o.v));
    CHECK(od[0] == 0 && od[1] == 1 && od[2] == 0 && od[3] == 0);
    CHECK_OK(CALL("aten::lt.Tensor_out", &a.v, &b.v, &o.v, &o.v));
    CHECK(od[0] == 1 && od[1] == 0 && od[2] == 0);
    CHECK_OK(CALL("aten::ge.Scalar_out", &a.v, VP(kt_int(2)), &o.v, &o.v));
    CHECK(od[0] == 0 && od[1] == 1 && od[2] == 1 && od[3] == 0);
    CHECK_OK(CALL("aten::ne.Scalar_out", &a.v, VP(kt_double(2.0)), &o.v, &o.v));
    CHECK(od[0] == 1 && od[1] == 0 && od[3] == 1);
    CHECK_OK(CALL("aten::gt.Scalar_out", &a.v, VP(kt_double(1.5)), &o.v, &o.v));
    CHECK(od[0] == 0 && od[1] == 1);
    CHECK_OK(CALL("aten::le.Tensor_out", &a.v, &b.v, &o.v, &o.v));
    CHECK(od[0] == 1 && od[1] == 1 && od[2] == 0);
    /* int tensor vs 2.5: compared in float */
    tt i, fo;
    int32_t id[3] = {2, 3, 4};
    float fod[3];
    IN(i, EMBER_INT32, id, 3);
    OUT(o, EMBER_BOOL, od, 3);
    CHECK_OK(CALL("aten::gt.Scalar_out", &i.v, VP(kt_double(2.5)), &o.v, &o.v));
    CHECK(od[0] == 0 && od[1] == 1 && od[2] == 1);
    OUT(fo, EMBER_FLOAT32, fod, 3); /* a comparison may write 1/0 to any dtype */
    CHECK_OK(CALL("aten::eq.Scalar_out", &i.v, VP(kt_int(3)), &fo.v, &fo.v));
    CHECK(fod[0] == 0 && fod[1] == 1 && fod[2] == 0);

    /* logical_not: bool bytes other than 1 still read as true */
    tt m, mo;
    uint8_t md[3] = {0, 1, 7}, mod[3];
    IN(m, EMBER_BOOL, md, 3);
    OUT(mo, EMBER_BOOL, mod, 3);
    CHECK_OK(CALL("aten::logical_not.out", &m.v, &mo.v, &mo.v));
    CHECK(mod[0] == 1 && mod[1] == 0 && mod[2] == 0);
    CHECK_OK(CALL("aten::logical_and.out", &m.v, &i.v, &mo.v, &mo.v));
    CHECK(mod[0] == 0 && mod[1] == 1 && mod[2] == 1);

    /* where(cond (2,1), self (1,3), other 0-dim) -> (2,3) */
    tt c, s, oth, wo;
    uint8_t cd[2] = {1, 0};
    float sd[3] = {1, 2, 3}, othd = -1, wod[6];
    IN(c, EMBER_BOOL, cd, 2, 1);
    IN(s, EMBER_FLOAT32, sd, 1, 3);
    IN0(oth, EMBER_FLOAT32, othd);
    OUT(wo, EMBER_FLOAT32, wod, 2, 3);
    CHECK_OK(CALL("aten::where.self_out", &c.v, &s.v, &oth.v, &wo.v, &wo.v));
    float want[6] = {1, 2, 3, -1, -1, -1};
    CHECK(close_f(wod, want, 6, 0));
    CHECK(SHAPE_IS(&wo.t, 2, 3));
    CHECK_STATUS(CALL("aten::where.self_out", &s.v, &s.v, &oth.v, &wo.v, &wo.v),
                 EMBER_ERR_TYPE_MISMATCH);

    /* masked_fill: causal mask (3,3) with -inf above the diagonal */
    tt x, mk, xo;
    float xd[9], xod[9];
    uint8_t mkd[9];
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++) {
            xd[r * 3 + q] = (float)(r * 3 + q);
            mkd[r * 3 + q] = q > r;
        }
    IN(x, EMBER_FLOAT32, xd, 3, 3);
    IN(mk, EMBER_BOOL, mkd, 3, 3);
    OUT(xo, EMBER_FLOAT32, xod, 3, 3);
    CHECK_OK(CALL("aten::masked_fill.Scalar_out", &x.v, &mk.v, VP(kt_double(-INFINITY)), &xo.v, &xo.v));
    CHECK(xod[0] == 0 && isinf(xod[1]) && xod[1] < 0 && xod[3] == 3 && xod[4] == 4 &&
          isinf(xod[5]));
}

static void test_unary(void) {
    check_section("unary math and activations");
    enum { N = 7 };
    tt x, o;
    float xd[N] = {-3, -1, -0.5f, 0, 0.5f, 1, 3}, od[N], want[N];
    IN(x, EMBER_FLOAT32, xd, N);
    OUT(o, EMBER_FLOAT32, od, N);
#define UNARY(name, expr)                                                                          \
    do {                                                                                           \
        CHECK_OK(CALL(name, &x.v, &o.v, &o.v));                                                    \
        for (int i = 0; i < N; i++) {                                                              \
            float v = xd[i];                                                                       \
            want[i] = (expr);                                                                      \
        }                                                                                          \
        CHECK_MSG(close_f(od, want, N, 1e-6f), "%s", name);                                        \
    } while (0)
    UNARY("aten::relu.out", v > 0 ? v : 0);
    UNARY("aten::tanh.out", tanhf(v));
    UNARY("aten::sigmoid.out", 1.0f / (1.0f + expf(-v)));
    UNARY("aten::exp.out", expf(v));
    UNARY("aten::neg.out", -v);
    UNARY("aten::abs.out", fabsf(v));
    UNARY("aten::sin.out", sinf(v));
    UNARY("aten::cos.out", cosf(v));
    UNARY("aten::erf.out", erff(v));
    UNARY("aten::silu.out", v / (1.0f + expf(-v)));
    UNARY("aten::floor.out", floorf(v));
    UNARY("aten::ceil.out", ceilf(v));
    UNARY("aten::round.out", nearbyintf(v));
    UNARY("aten::hardsigmoid.out", fminf(fmaxf(v + 3, 0), 6) / 6);
    UNARY("aten::hardswish.out", v * fminf(fmaxf(v + 3, 0), 6) / 6);
#undef UNARY
    CHECK_OK(CALL("aten::sqrt.out", &x.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && od[3] == 0 && od[6] == sqrtf(3));
    CHECK_OK(CALL("aten::rsqrt.out", &x.v, &o.v, &o.v));
    CHECK(isinf(od[3]) && fabsf(od[5] - 1) < 1e-7f);
    CHECK_OK(CALL("aten::log.out", &x.v, &o.v, &o.v));
    CHECK(isnan(od[0]) && isinf(od[3]) && od[5] == 0);
    CHECK_OK(CALL("aten::reciprocal.out", &x.v, &o.v, &o.v));
    CHECK(od[4] == 2);

    /* gelu, exact and tanh */
    CHECK_OK(CALL("aten::gelu.out", &x.v, VP(kt_str("none")), &o.v, &o.v));
    for (int i = 0; i < N; i++) want[i] = 0.5f * xd[i] * (1.0f + erff(xd[i] / sqrtf(2.0f)));
    CHECK(close_f(od, want, N, 1e-6f));
    CHECK_OK(CALL("aten::gelu.out", &x.v, VP(kt_str("tanh")), &o.v, &o.v));
    for (int i = 0; i < N; i++) {
        float v = xd[i];
        want[i] =
            0.5f * v * (1.0f + tanhf(sqrtf(2.0f / 3.14159265f) * (v + 0.044715f * v * v * v)));
    }
    CHECK(close_f(od, want, N, 1e-6f));
    CHECK_STATUS(CALL("aten::gelu.out", &x.v, VP(kt_str("fast")), &o.v, &o.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* clamp / hardtanh / leaky_relu */
    CHECK_OK(CALL("aten::clamp.out", &x.v, VP(kt_double(-1)), VP(kt_none()), &o.v, &o.v));
    CHECK(od[0] == -1 && od[6] == 3);
    CHECK_OK(CALL("aten::hardtanh.out", &x.v, VP(kt_double(-0.5)), VP(kt_double(0.5)), &o.v, &o.v));
    CHECK(od[0] == -0.5f && od[6] == 0.5f && od[3] == 0);
    CHECK_OK(CALL("aten::leaky_relu.out", &x.v, VP(kt_double(0.1)), &o.v, &o.v));
    CHECK(fabsf(od[0] + 0.3f) < 1e-6f && od[6] == 3);
    CHECK_STATUS(CALL("aten::clamp.out", &x.v, VP(kt_none()), VP(kt_none()), &o.v, &o.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* float math on ints gives floats; ints can't hold them */
    tt i, io;
    int32_t id[2] = {0, 1}, iod[2];
    float fod[2];
    IN(i, EMBER_INT32, id, 2);
    OUT(o, EMBER_FLOAT32, fod, 2);
    OUT(io, EMBER_INT32, iod, 2);
    CHECK_OK(CALL("aten::exp.out", &i.v, &o.v, &o.v));
    CHECK(fod[0] == 1 && fabsf(fod[1] - expf(1)) < 1e-6f);
    CHECK_STATUS(CALL("aten::exp.out", &i.v, &io.v, &io.v), EMBER_ERR_TYPE_MISMATCH);
    CHECK_OK(CALL("aten::neg.out", &i.v, &io.v, &io.v));
    CHECK(iod[1] == -1);
    CHECK_OK(CALL("aten::floor.out", &i.v, &io.v, &io.v));
    CHECK(iod[1] == 1);

    /* float64 and float16 */
    tt d, dout, h, hout;
    double dd[2] = {0.5, -2}, dod[2];
    uint16_t hd[2] = {ember_float_to_half(0.5f), ember_float_to_half(-2)}, hod[2];
    IN(d, EMBER_FLOAT64, dd, 2);
    OUT(dout, EMBER_FLOAT64, dod, 2);
    IN(h, EMBER_FLOAT16, hd, 2);
    OUT(hout, EMBER_FLOAT16, hod, 2);
    CHECK_OK(CALL("aten::tanh.out", &d.v, &dout.v, &dout.v));
    CHECK(dod[0] == tanh(0.5) && dod[1] == tanh(-2.0));
    CHECK_OK(CALL("aten::sigmoid.out", &h.v, &hout.v, &hout.v));
    CHECK(fabsf(ember_half_to_float(hod[0]) - 1 / (1 + expf(-0.5f))) < 1e-3f);
}

/* ------------------------------------------------------------------------ */
/* Linear algebra                                                            */
/* ------------------------------------------------------------------------ */

static void ref_mm(const float *a, const float *b, float *o, int n, int k, int m) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += (double)a[i * k + p] * b[p * m + j];
            o[i * m + j] = (float)s;
        }
}

static void test_matmul(void) {
    check_section("mm, bmm, addmm");
    enum { N = 5, K = 7, M = 70 }; /* M > the accumulator block */
    static float a[N * K], b[K * M], o[N * M], want[N * M];
    fill_rand(a, N * K);
    fill_rand(b, K * M);
    tt ta, tb, to;
    IN(ta, EMBER_FLOAT32, a, N, K);
    IN(tb, EMBER_FLOAT32, b, K, M);
    OUT(to, EMBER_FLOAT32, o, N, M);
    CHECK_OK(CALL("aten::mm.out", &ta.v, &tb.v, &to.v, &to.v));
    ref_mm(a, b, want, N, K, M);
    CHECK(close_f(o, want, N * M, 1e-5f));
    CHECK(SHAPE_IS(&to.t, N, M));
    CHECK_STATUS(CALL("aten::mm.out", &ta.v, &ta.v, &to.v, &to.v), EMBER_ERR_SHAPE_MISMATCH);

    /* addmm: beta * bias (M) + alpha * a @ b */
    float bias[M];
    fill_rand(bias, M);
    tt tbias;
    IN(tbias, EMBER_FLOAT32, bias, M);
    CHECK_OK(CALL("aten::addmm.out", &tbias.v, &ta.v, &tb.v, VP(kt_double(0.5)), VP(kt_int(2)), &to.v,
                  &to.v));
    for (int i = 0; i < N * M; i++) want[i] = 2 * want[i] + 0.5f * bias[i % M];
    CHECK(close_f(o, want, N * M, 1e-5f));
    /* bias of shape (N, 1) */
    float bcol[N] = {1, 2, 3, 4, 5};
    tt tcol;
    IN(tcol, EMBER_FLOAT32, bcol, N, 1);
    CHECK_OK(
        CALL("aten::addmm.out", &tcol.v, &ta.v, &tb.v, VP(kt_int(1)), VP(kt_int(1)), &to.v, &to.v));
    ref_mm(a, b, want, N, K, M);
    for (int i = 0; i < N * M; i++) want[i] += bcol[i / M];
    CHECK(close_f(o, want, N * M, 1e-5f));
    /* beta = 0 ignores a NaN bias */
    float nanb[M];
    for (int i = 0; i < M; i++) nanb[i] = NAN;
    IN(tbias, EMBER_FLOAT32, nanb, M);
    CHECK_OK(
        CALL("aten::addmm.out", &tbias.v, &ta.v, &tb.v, VP(kt_int(0)), VP(kt_int(1)), &to.v, &to.v));
    ref_mm(a, b, want, N, K, M);
    CHECK(close_f(o, want, N * M, 1e-5f));
    IN(tbias, EMBER_FLOAT32, bias, 3);
    CHECK_STATUS(
        CALL("aten::addmm.out", &tbias.v, &ta.v, &tb.v, VP(kt_int(1)), VP(kt_int(1)), &to.v, &to.v),
        EMBER_ERR_SHAPE_MISMATCH);

    /* bmm (2, 3, 4) @ (2, 4, 5) */
    float x[24], y[40], z[30], zw[30];
    fill_rand(x, 24);
    fill_rand(y, 40);
    tt tx, ty, tz;
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    IN(ty, EMBER_FLOAT32, y, 2, 4, 5);
    OUT(tz, EMBER_FLOAT32, z, 2, 3, 5);
    CHECK_OK(CALL("aten::bmm.out", &tx.v, &ty.v, &tz.v, &tz.v));
    ref_mm(x, y, zw, 3, 4, 5);
    ref_mm(x + 12, y + 20, zw + 15, 3, 4, 5);
    CHECK(close_f(z, zw, 30, 1e-5f));
    CHECK_STATUS(CALL("aten::bmm.out", &tx.v, &tx.v, &tz.v, &tz.v), EMBER_ERR_SHAPE_MISMATCH);

    /* k = 0: the product is all zeros (inputs may have no storage) */
    tt e1, e2;
    tt_make(&e1, EMBER_FLOAT32, (const int32_t[]){2, 0}, 2, NULL, 0, false, NULL);
    tt_make(&e2, EMBER_FLOAT32, (const int32_t[]){0, 3}, 2, NULL, 0, false, NULL);
    float zo[6] = {9, 9, 9, 9, 9, 9};
    tt tzo;
    OUT(tzo, EMBER_FLOAT32, zo, 2, 3);
    CHECK_OK(CALL("aten::mm.out", &e1.v, &e2.v, &tzo.v, &tzo.v));
    CHECK(zo[0] == 0 && zo[5] == 0);

    /* float16 mm accumulates in float */
    uint16_t ha[4], hb[4], ho[4];
    float fa[4] = {1, 2, 3, 4}, fb[4] = {0.5f, -1, 2, 0.25f}, fw[4];
    for (int i = 0; i < 4; i++) {
        ha[i] = ember_float_to_half(fa[i]);
        hb[i] = ember_float_to_half(fb[i]);
    }
    tt th1, th2, tho;
    IN(th1, EMBER_FLOAT16, ha, 2, 2);
    IN(th2, EMBER_FLOAT16, hb, 2, 2);
    OUT(tho, EMBER_FLOAT16, ho, 2, 2);
    CHECK_OK(CALL("aten::mm.out", &th1.v, &th2.v, &tho.v, &tho.v));
    ref_mm(fa, fb, fw, 2, 2, 2);
    bool ok = true;
    for (int i = 0; i < 4; i++) ok &= ember_half_to_float(ho[i]) == fw[i];
    CHECK(ok);
    /* mixed dtypes and bool matrices are refused */
    CHECK_STATUS(CALL("aten::mm.out", &th1.v, &ta.v, &tho.v, &tho.v), EMBER_ERR_SHAPE_MISMATCH);
    tt ti;
    int32_t idd[4] = {0};
    IN(ti, EMBER_BOOL, idd, 2, 2);
    CHECK_STATUS(CALL("aten::mm.out", &ti.v, &ti.v, &tho.v, &tho.v), EMBER_ERR_NOT_SUPPORTED);
    /* a channels-last-like (transposed) input is refused cleanly */
    tt tt2;
    tt_make(&tt2, EMBER_FLOAT16, (const int32_t[]){2, 2}, 2, hb, sizeof hb, false,
            (const uint8_t[]){1, 0});
    CHECK_STATUS(CALL("aten::mm.out", &th1.v, &tt2.v, &tho.v, &tho.v), EMBER_ERR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------------ */
/* Softmax, normalization                                                    */
/* ------------------------------------------------------------------------ */

static void test_softmax(void) {
    check_section("softmax, log_softmax");
    float x[2 * 3 * 4], o[24], want[24];
    fill_rand(x, 24);
    x[0] = -INFINITY;
    tt tx, to;
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    /* along dim 1 (strided) */
    CHECK_OK(CALL("aten::_softmax.out", &tx.v, VP(kt_int(1)), VP(kt_bool(false)), &to.v, &to.v));
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++) {
            double mx = -INFINITY, s = 0;
            for (int j = 0; j < 3; j++) mx = fmax(mx, x[(b * 3 + j) * 4 + k]);
            for (int j = 0; j < 3; j++) s += exp(x[(b * 3 + j) * 4 + k] - mx);
            for (int j = 0; j < 3; j++)
                want[(b * 3 + j) * 4 + k] = (float)(exp(x[(b * 3 + j) * 4 + k] - mx) / s);
        }
    CHECK(close_f(o, want, 24, 1e-6f));
    CHECK(o[0] == 0);
    /* along the last dim, log */
    CHECK_OK(CALL("aten::_log_softmax.out", &tx.v, VP(kt_int(-1)), VP(kt_bool(false)), &to.v, &to.v));
    for (int r = 0; r < 6; r++) {
        double mx = -INFINITY, s = 0;
        for (int j = 0; j < 4; j++) mx = fmax(mx, x[r * 4 + j]);
        for (int j = 0; j < 4; j++) s += exp(x[r * 4 + j] - mx);
        for (int j = 0; j < 4; j++) want[r * 4 + j] = (float)(x[r * 4 + j] - mx - log(s));
    }
    CHECK(close_f(o, want, 24, 1e-6f));
    CHECK_STATUS(CALL("aten::_softmax.out", &tx.v, VP(kt_int(3)), VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::_softmax.out", &tx.v, VP(kt_int(1)), VP(kt_bool(true)), &to.v, &to.v),
                 EMBER_ERR_NOT_SUPPORTED);
    /* 0-dim softmax is 1 */
    tt s, so;
    float sd = 3, sod = 0;
    IN0(s, EMBER_FLOAT32, sd);
    IN0(so, EMBER_FLOAT32, sod);
    CHECK_OK(CALL("aten::_softmax.out", &s.v, VP(kt_int(0)), VP(kt_bool(false)), &so.v, &so.v));
    CHECK(sod == 1);
}

static void test_norms(void) {
    check_section("layer_norm, batch_norm");
    enum { R = 3, C = 8 };
    float x[R * C], w[C], b[C], y[R * C], mean[R], rstd[R];
    fill_rand(x, R * C);
    fill_rand(w, C);
    fill_rand(b, C);
    tt tx, tw, tb, ty, tm, tr;
    tl outs;
    IN(tx, EMBER_FLOAT32, x, 1, R, C);
    IN(tw, EMBER_FLOAT32, w, C);
    IN(tb, EMBER_FLOAT32, b, C);
    OUT(ty, EMBER_FLOAT32, y, 1, R, C);
    OUT(tm, EMBER_FLOAT32, mean, 1, R, 1);
    OUT(tr, EMBER_FLOAT32, rstd, 1, R, 1);
    tt *ol[3] = {&ty, &tm, &tr};
    il ns;
    CHECK_OK(CALL("aten::native_layer_norm.out", &tx.v, IL(ns, C), &tw.v, &tb.v, VP(kt_double(1e-5)),
                  &ty.v, &tm.v, &tr.v, tl_init(&outs, ol, 3, false)));
    bool ok = true;
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[r * C + c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[r * C + c] - m) * (x[r * C + c] - m);
        v /= C;
        double rs = 1 / sqrt(v + 1e-5);
        ok &= fabs(mean[r] - m) < 1e-6 && fabs(rstd[r] - rs) < 1e-4 * rs;
        for (int c = 0; c < C; c++)
            ok &= fabs(y[r * C + c] - ((x[r * C + c] - m) * rs * w[c] + b[c])) < 1e-5;
    }
    CHECK(ok);
    CHECK(SHAPE_IS(&tm.t, 1, R, 1));
    /* no weight and bias; normalized over the last two dims */
    CHECK_OK(CALL("aten::native_layer_norm.out", &tx.v, IL(ns, R, C), VP(kt_none()), VP(kt_none()),
                  VP(kt_double(1e-5)), &ty.v, &tm.v, &tr.v, tl_init(&outs, ol, 3, false)));
    CHECK(SHAPE_IS(&tm.t, 1, 1, 1));
    double s = 0;
    for (int i = 0; i < R * C; i++) s += y[i];
    CHECK(fabs(s) < 1e-4);
    CHECK_STATUS(CALL("aten::native_layer_norm.out", &tx.v, IL(ns, 7), &tw.v, &tb.v,
                      VP(kt_double(1e-5)), &ty.v, &tm.v, &tr.v, tl_init(&outs, ol, 3, false)),
                 EMBER_ERR_SHAPE_MISMATCH);

    /* batch norm (inference) over (2, 3, 2, 2) */
    float bx[24], bw[3] = {1, 2, 0.5f}, bb[3] = {0, 1, -1}, bm[3] = {0.1f, -0.2f, 0.3f},
                  bv[3] = {1, 0.5f, 2}, by[24];
    fill_rand(bx, 24);
    tt tbx, tbw, tbb, tbm, tbv, tby, te1, te2;
    tl bouts;
    IN(tbx, EMBER_FLOAT32, bx, 2, 3, 2, 2);
    IN(tbw, EMBER_FLOAT32, bw, 3);
    IN(tbb, EMBER_FLOAT32, bb, 3);
    IN(tbm, EMBER_FLOAT32, bm, 3);
    IN(tbv, EMBER_FLOAT32, bv, 3);
    OUT(tby, EMBER_FLOAT32, by, 2, 3, 2, 2);
    tt_make(&te1, EMBER_FLOAT32, (const int32_t[]){0}, 1, NULL, 0, false, NULL);
    tt_make(&te2, EMBER_FLOAT32, (const int32_t[]){0}, 1, NULL, 0, false, NULL);
    tt *bol[3] = {&tby, &te1, &te2};
    CHECK_OK(CALL("aten::_native_batch_norm_legit_no_training.out", &tbx.v, &tbw.v, &tbb.v, &tbm.v,
                  &tbv.v, VP(kt_double(0.1)), VP(kt_double(1e-5)), &tby.v, &te1.v, &te2.v,
                  tl_init(&bouts, bol, 3, false)));
    ok = true;
    for (int i = 0; i < 24; i++) {
        int c = (i / 4) % 3;
        double want = (bx[i] - bm[c]) / sqrt(bv[c] + 1e-5) * bw[c] + bb[c];
        ok &= fabs(by[i] - want) < 1e-5;
    }
    CHECK(ok);
    /* running stats of the wrong size */
    IN(tbm, EMBER_FLOAT32, bm, 2);
    CHECK_STATUS(CALL("aten::_native_batch_norm_legit_no_training.out", &tbx.v, &tbw.v, &tbb.v,
                      &tbm.v, &tbv.v, VP(kt_double(0.1)), VP(kt_double(1e-5)), &tby.v, &te1.v, &te2.v,
                      tl_init(&bouts, bol, 3, false)),
                 EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Convolution and pooling                                                   */
/* ------------------------------------------------------------------------ */

/* Reference 2-d convolution (non-transposed), double accumulation. */
static void ref_conv2d(const float *x, const float *w, const float *b, float *y, int n, int cin,
                       int h, int wd, int cout, int kh, int kw, int sh, int sw, int ph, int pw,
                       int dh, int dw, int groups, int oh, int ow) {
    int icg = cin / groups, ocg = cout / groups;
    for (int i = 0; i < n; i++)
        for (int oc = 0; oc < cout; oc++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double s = b ? b[oc] : 0;
                    int g = oc / ocg;
                    for (int ic = 0; ic < icg; ic++)
                        for (int ky = 0; ky < kh; ky++)
                            for (int kx = 0; kx < kw; kx++) {
                                int iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                                s += (double)x[((i * cin + g * icg + ic) * h + iy) * wd + ix] *
                                     w[((oc * icg + ic) * kh + ky) * kw + kx];
                            }
                    y[((i * cout + oc) * oh + oy) * ow + ox] = (float)s;
                }
}

static void test_conv(void) {
    check_section("convolution");
    /* grouped, strided, padded, dilated 2-d: (2, 4, 7, 6) * (6, 2, 3, 2), groups 2 */
    enum { N = 2, CI = 4, H = 7, W = 6, CO = 6, KH = 3, KW = 2, G = 2 };
    static float x[N * CI * H * W], w[CO * (CI / G) * KH * KW], b[CO], y[800], want[800];
    fill_rand(x, sizeof x / sizeof x[0]);
    fill_rand(w, sizeof w / sizeof w[0]);
    fill_rand(b, CO);
    int sh = 2, sw = 1, ph = 1, pw = 2, dh = 2, dw = 3;
    int oh = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1,
        ow = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    tt tx, tw, tb, ty;
    il ls, lp, ld, lo;
    IN(tx, EMBER_FLOAT32, x, N, CI, H, W);
    IN(tw, EMBER_FLOAT32, w, CO, CI / G, KH, KW);
    IN(tb, EMBER_FLOAT32, b, CO);
    OUT(ty, EMBER_FLOAT32, y, N, CO, 8, 8);
    CHECK_OK(CALL("aten::convolution.out", &tx.v, &tw.v, &tb.v, IL(ls, sh, sw), IL(lp, ph, pw),
                  IL(ld, dh, dw), VP(kt_bool(false)), IL(lo, 0, 0), VP(kt_int(G)), &ty.v, &ty.v));
    CHECK(SHAPE_IS(&ty.t, N, CO, oh, ow));
    ref_conv2d(x, w, b, want, N, CI, H, W, CO, KH, KW, sh, sw, ph, pw, dh, dw, G, oh, ow);
    CHECK(close_f(y, want, (size_t)(N * CO * oh * ow), 1e-5f));
    /* the fixture's layout: stride 1, padding 1, 3x3, no bias */
    OUT(ty, EMBER_FLOAT32, y, N, CO, H, W);
    IN(tw, EMBER_FLOAT32, w, CO, CI / G, 3, 1);
    CHECK_OK(CALL("aten::convolution.out", &tx.v, &tw.v, VP(kt_none()), IL(ls, 1, 1), IL(lp, 1, 0),
                  IL(ld, 1, 1), VP(kt_bool(false)), IL(lo, 0, 0), VP(kt_int(G)), &ty.v, &ty.v));
    ref_conv2d(x, w, NULL, want, N, CI, H, W, CO, 3, 1, 1, 1, 1, 0, 1, 1, G, H, W);
    CHECK(close_f(y, want, (size_t)(N * CO * H * W), 1e-5f));
    /* wrong channel count, bad stride */
    IN(tw, EMBER_FLOAT32, w, CO, 3, 1, 1);
    CHECK_STATUS(CALL("aten::convolution.out", &tx.v, &tw.v, VP(kt_none()), IL(ls, 1, 1),
                      IL(lp, 0, 0), IL(ld, 1, 1), VP(kt_bool(false)), IL(lo, 0, 0), VP(kt_int(G)),
                      &ty.v, &ty.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    IN(tw, EMBER_FLOAT32, w, CO, 2, 1, 1);
    CHECK_STATUS(CALL("aten::convolution.out", &tx.v, &tw.v, VP(kt_none()), IL(ls, 0, 1),
                      IL(lp, 0, 0), IL(ld, 1, 1), VP(kt_bool(false)), IL(lo, 0, 0), VP(kt_int(G)),
                      &ty.v, &ty.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* kernel larger than the padded input */
    IN(tw, EMBER_FLOAT32, w, CO, 2, 9, 1);
    CHECK_STATUS(CALL("aten::convolution.out", &tx.v, &tw.v, VP(kt_none()), IL(ls, 1, 1),
                      IL(lp, 0, 0), IL(ld, 1, 1), VP(kt_bool(false)), IL(lo, 0, 0), VP(kt_int(G)),
                      &ty.v, &ty.v),
                 EMBER_ERR_SHAPE_MISMATCH);

    /* 1-d: (1, 2, 9) * (3, 2, 3), stride 2, padding 1 -> (1, 3, 5) */
    float x1[18], w1[18], y1[15], want1[15];
    fill_rand(x1, 18);
    fill_rand(w1, 18);
    tt t1x, t1w, t1y;
    IN(t1x, EMBER_FLOAT32, x1, 1, 2, 9);
    IN(t1w, EMBER_FLOAT32, w1, 3, 2, 3);
    OUT(t1y, EMBER_FLOAT32, y1, 1, 3, 5);
    CHECK_OK(CALL("aten::convolution.out", &t1x.v, &t1w.v, VP(kt_none()), IL(ls, 2), IL(lp, 1),
                  IL(ld, 1), VP(kt_bool(false)), IL(lo, 0), VP(kt_int(1)), &t1y.v, &t1y.v));
    ref_conv2d(x1, w1, NULL, want1, 1, 2, 1, 9, 3, 1, 3, 1, 2, 0, 1, 1, 1, 1, 1, 5);
    CHECK(close_f(y1, want1, 15, 1e-5f));

    /* transposed 2-d against a scatter reference: (1, 2, 3, 3), weight (2, 3, 3, 3),
     * stride 2, padding 1, output_padding 1 -> (1, 3, 6, 6) */
    float tx2[18], tw2[54], ty2[108], tw_want[108];
    fill_rand(tx2, 18);
    fill_rand(tw2, 54);
    memset(tw_want, 0, sizeof tw_want);
    for (int ic = 0; ic < 2; ic++)
        for (int iy = 0; iy < 3; iy++)
            for (int ix = 0; ix < 3; ix++)
                for (int oc = 0; oc < 3; oc++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int oy = iy * 2 - 1 + ky, ox = ix * 2 - 1 + kx;
                            if (oy < 0 || oy >= 6 || ox < 0 || ox >= 6) continue;
                            tw_want[(oc * 6 + oy) * 6 + ox] +=
                                tx2[(ic * 3 + iy) * 3 + ix] *
                                tw2[((ic * 3 + oc) * 3 + ky) * 3 + kx];
                        }
    tt ttx, ttw, tty;
    IN(ttx, EMBER_FLOAT32, tx2, 1, 2, 3, 3);
    IN(ttw, EMBER_FLOAT32, tw2, 2, 3, 3, 3);
    OUT(tty, EMBER_FLOAT32, ty2, 1, 3, 6, 6);
    CHECK_OK(CALL("aten::convolution.out", &ttx.v, &ttw.v, VP(kt_none()), IL(ls, 2, 2), IL(lp, 1, 1),
                  IL(ld, 1, 1), VP(kt_bool(true)), IL(lo, 1, 1), VP(kt_int(1)), &tty.v, &tty.v));
    CHECK(SHAPE_IS(&tty.t, 1, 3, 6, 6));
    CHECK(close_f(ty2, tw_want, 108, 1e-5f));
}

static void test_pool(void) {
    check_section("pooling");
    /* max pool 2x2 stride 2 on (1, 2, 4, 4), as in the CNN fixture */
    float x[32], y[8];
    int64_t ind[8];
    for (int i = 0; i < 32; i++) x[i] = (float)((i * 7) % 11);
    tt tx, ty, ti;
    tl outs;
    il k, s, p, d;
    IN(tx, EMBER_FLOAT32, x, 1, 2, 4, 4);
    OUT(ty, EMBER_FLOAT32, y, 1, 2, 2, 2);
    OUT(ti, EMBER_INT64, ind, 1, 2, 2, 2);
    tt *ol[2] = {&ty, &ti};
    CHECK_OK(CALL("aten::max_pool2d_with_indices.out", &tx.v, IL(k, 2, 2), IL(s, 2, 2), IL(p, 0, 0),
                  IL(d, 1, 1), VP(kt_bool(false)), &ty.v, &ti.v, tl_init(&outs, ol, 2, false)));
    bool ok = true;
    for (int c = 0; c < 2; c++)
        for (int oy = 0; oy < 2; oy++)
            for (int ox = 0; ox < 2; ox++) {
                float m = -INFINITY;
                int mi = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) {
                        int pos = (oy * 2 + dy) * 4 + ox * 2 + dx;
                        if (x[c * 16 + pos] > m) {
                            m = x[c * 16 + pos];
                            mi = pos;
                        }
                    }
                ok &= y[(c * 2 + oy) * 2 + ox] == m && ind[(c * 2 + oy) * 2 + ox] == mi;
            }
    CHECK(ok);
    /* 3x3, stride 2, padding 1, ceil mode on (1, 1, 5, 5): out 3x3; stride [] = kernel */
    float x5[25], y9[9];
    int64_t i9[9];
    for (int i = 0; i < 25; i++) x5[i] = (float)i;
    IN(tx, EMBER_FLOAT32, x5, 1, 1, 5, 5);
    OUT(ty, EMBER_FLOAT32, y9, 1, 1, 3, 3);
    OUT(ti, EMBER_INT64, i9, 1, 1, 3, 3);
    CHECK_OK(CALL("aten::max_pool2d_with_indices.out", &tx.v, IL(k, 3), IL(s, 2), IL(p, 1),
                  IL(d, 1), VP(kt_bool(true)), &ty.v, &ti.v, tl_init(&outs, ol, 2, false)));
    CHECK(SHAPE_IS(&ty.t, 1, 1, 3, 3));
    CHECK(y9[0] == 6 && i9[0] == 6 && y9[4] == 18 && y9[8] == 24);
    CHECK_OK(CALL("aten::max_pool2d_with_indices.out", &tx.v, IL(k, 2, 2), IL0(s), IL(p, 0),
                  IL(d, 1), VP(kt_bool(false)), &ty.v, &ti.v, tl_init(&outs, ol, 2, false)));
    CHECK(SHAPE_IS(&ty.t, 1, 1, 2, 2) && y9[0] == 6 && y9[3] == 18);
    CHECK_STATUS(CALL("aten::max_pool2d_with_indices.out", &tx.v, IL(k, 2), IL(s, 2), IL(p, 2),
                      IL(d, 1), VP(kt_bool(false)), &ty.v, &ti.v, tl_init(&outs, ol, 2, false)),
                 EMBER_ERR_INVALID_ARGUMENT); /* padding above half the kernel */

    /* avg pool 3x3 stride 2 padding 1 on 5x5: count_include_pad on and off */
    float ya[9];
    tt tya;
    OUT(tya, EMBER_FLOAT32, ya, 1, 1, 3, 3);
    CHECK_OK(CALL("aten::avg_pool2d.out", &tx.v, IL(k, 3, 3), IL(s, 2, 2), IL(p, 1, 1),
                  VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_none()), &tya.v, &tya.v));
    CHECK(fabsf(ya[0] - (0 + 1 + 5 + 6) / 9.0f) < 1e-6f);
    CHECK(fabsf(ya[4] - (6 + 7 + 8 + 11 + 12 + 13 + 16 + 17 + 18) / 9.0f) < 1e-6f);
    CHECK_OK(CALL("aten::avg_pool2d.out", &tx.v, IL(k, 3, 3), IL(s, 2, 2), IL(p, 1, 1),
                  VP(kt_bool(false)), VP(kt_bool(false)), VP(kt_none()), &tya.v, &tya.v));
    CHECK(fabsf(ya[0] - (0 + 1 + 5 + 6) / 4.0f) < 1e-6f);
    CHECK_OK(CALL("aten::avg_pool2d.out", &tx.v, IL(k, 3, 3), IL(s, 2, 2), IL(p, 1, 1),
                  VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_int(2)), &tya.v, &tya.v));
    CHECK(fabsf(ya[0] - (0 + 1 + 5 + 6) / 2.0f) < 1e-6f);

    /* adaptive average pool 5x5 -> 2x3 */
    float yad[6];
    tt tyad;
    OUT(tyad, EMBER_FLOAT32, yad, 1, 1, 2, 3);
    CHECK_OK(CALL("aten::_adaptive_avg_pool2d.out", &tx.v, IL(k, 2, 3), &tyad.v, &tyad.v));
    /* rows [0,3) and [2,5); cols [0,2), [1,4), [3,5) */
    float a00 = (0 + 1 + 5 + 6 + 10 + 11) / 6.0f, a12 = (13 + 14 + 18 + 19 + 23 + 24) / 6.0f;
    CHECK(fabsf(yad[0] - a00) < 1e-6f && fabsf(yad[5] - a12) < 1e-6f);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

static void test_reduce(void) {
    check_section("sum, mean, amax, argmax");
    float x[2 * 3 * 4];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    tt tx, to;
    il dims;
    float o[24];
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    /* mean over [-1, -2] with keepdim, as in the CNN fixture */
    OUT(to, EMBER_FLOAT32, o, 2, 1, 1);
    CHECK_OK(CALL("aten::mean.out", &tx.v, IL(dims, -1, -2), VP(kt_bool(true)), VP(kt_none()), &to.v,
                  &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 1, 1) && o[0] == 5.5f && o[1] == 17.5f);
    /* sum over dim 1, no keepdim */
    OUT(to, EMBER_FLOAT32, o, 2, 4);
    CHECK_OK(CALL("aten::sum.IntList_out", &tx.v, IL(dims, 1), VP(kt_bool(false)), VP(kt_none()),
                  &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 4) && o[0] == 12 && o[3] == 21 && o[4] == 48);
    /* sum over everything (None), into a 0-dim out */
    tt t0;
    float s0 = 0;
    IN0(t0, EMBER_FLOAT32, s0);
    CHECK_OK(CALL("aten::sum.IntList_out", &tx.v, VP(kt_none()), VP(kt_bool(false)), VP(kt_none()),
                  &t0.v, &t0.v));
    CHECK(s0 == 276);
    CHECK_STATUS(CALL("aten::sum.IntList_out", &tx.v, IL(dims, 1, 1), VP(kt_bool(false)),
                      VP(kt_none()), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::sum.IntList_out", &tx.v, IL(dims, 3), VP(kt_bool(false)), VP(kt_none()),
                      &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::sum.IntList_out", &tx.v, IL(dims, 1), VP(kt_bool(false)),
                      VP(kt_int(EMBER_FLOAT64)), &to.v, &to.v),
                 EMBER_ERR_TYPE_MISMATCH);
    /* bool sum into int64 */
    tt tb, tl64;
    uint8_t bd[5] = {1, 0, 1, 1, 0};
    int64_t cnt = 0;
    IN(tb, EMBER_BOOL, bd, 5);
    IN0(tl64, EMBER_INT64, cnt);
    CHECK_OK(CALL("aten::sum.IntList_out", &tb.v, IL0(dims), VP(kt_bool(false)),
                  VP(kt_int(EMBER_INT64)), &tl64.v, &tl64.v));
    CHECK(cnt == 3);
    /* mean of nothing is NaN; sum of nothing is 0 */
    tt te;
    tt_make(&te, EMBER_FLOAT32, (const int32_t[]){3, 0}, 2, NULL, 0, false, NULL);
    OUT(to, EMBER_FLOAT32, o, 3);
    CHECK_OK(
        CALL("aten::mean.out", &te.v, IL(dims, 1), VP(kt_bool(false)), VP(kt_none()), &to.v, &to.v));
    CHECK(isnan(o[0]) && isnan(o[2]));
    CHECK_OK(CALL("aten::sum.IntList_out", &te.v, IL(dims, 1), VP(kt_bool(false)), VP(kt_none()),
                  &to.v, &to.v));
    CHECK(o[0] == 0 && o[2] == 0);
    CHECK_STATUS(CALL("aten::amax.out", &te.v, IL(dims, 1), VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* amax / amin / argmax / argmin along dim 2 */
    x[5] = 100;
    x[13] = NAN;
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::amax.out", &tx.v, IL(dims, 2), VP(kt_bool(false)), &to.v, &to.v));
    CHECK(o[0] == 3 && o[1] == 100 && o[2] == 11 && isnan(o[3]));
    OUT(to, EMBER_FLOAT32, o, 3);
    CHECK_OK(CALL("aten::amin.out", &tx.v, IL(dims, 0, 2), VP(kt_bool(false)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 3) && isnan(o[0]) && o[1] == 4 && o[2] == 8);
    int64_t am[6];
    tt tam;
    OUT(tam, EMBER_INT64, am, 2, 3);
    CHECK_OK(CALL("aten::argmax.out", &tx.v, VP(kt_int(-1)), VP(kt_bool(false)), &tam.v, &tam.v));
    CHECK(am[0] == 3 && am[1] == 1 && am[3] == 1 && am[5] == 3);
    CHECK_OK(CALL("aten::argmin.out", &tx.v, VP(kt_int(2)), VP(kt_bool(false)), &tam.v, &tam.v));
    CHECK(am[0] == 0 && am[1] == 0 && am[3] == 1);
    int64_t flat = -1;
    IN0(tam, EMBER_INT64, flat);
    CHECK_OK(CALL("aten::argmax.out", &tx.v, VP(kt_none()), VP(kt_bool(false)), &tam.v, &tam.v));
    CHECK(flat == 13); /* the NaN */

    /* max.unary_out / mean.dtype_out: full reductions into 0-dim outs */
    float fm = 0;
    tt tfm;
    IN0(tfm, EMBER_FLOAT32, fm);
    CHECK_OK(CALL("aten::max.unary_out", &tx.v, &tfm.v, &tfm.v));
    CHECK(isnan(fm)); /* x[13] is NaN */
    x[13] = 13;
    CHECK_OK(CALL("aten::max.unary_out", &tx.v, &tfm.v, &tfm.v));
    CHECK(fm == 100);
    CHECK_OK(CALL("aten::mean.dtype_out", &tx.v, VP(kt_none()), &tfm.v, &tfm.v));
    CHECK(fabsf(fm - (276.0f - 5 + 100) / 24) < 1e-5f);
    CHECK_STATUS(CALL("aten::mean.dtype_out", &tx.v, VP(kt_int(EMBER_FLOAT64)), &tfm.v, &tfm.v),
                 EMBER_ERR_TYPE_MISMATCH);
    int32_t im[4] = {-7, 3, 9, -2}, imax = 0;
    tt tim, timax;
    IN(tim, EMBER_INT32, im, 4);
    IN0(timax, EMBER_INT32, imax);
    CHECK_OK(CALL("aten::max.unary_out", &tim.v, &timax.v, &timax.v));
    CHECK(imax == 9);
    CHECK_STATUS(CALL("aten::max.unary_out", &te.v, &tfm.v, &tfm.v), EMBER_ERR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                             */
/* ------------------------------------------------------------------------ */

static void test_shape_ops(void) {
    check_section("permute, view, expand, squeeze, slice, select");
    float x[24], o[64];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    tt tx, to;
    il l;
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    OUT(to, EMBER_FLOAT32, o, 4, 2, 3);
    CHECK_OK(CALL("aten::permute_copy.out", &tx.v, IL(l, 2, 0, 1), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 4, 2, 3));
    bool ok = true;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++) ok &= o[(a * 2 + b) * 3 + c] == x[(b * 3 + c) * 4 + a];
    CHECK(ok);
    CHECK_STATUS(CALL("aten::permute_copy.out", &tx.v, IL(l, 0, 0, 1), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    OUT(to, EMBER_FLOAT32, o, 2, 4, 3);
    CHECK_OK(
        CALL("aten::transpose_copy.int_out", &tx.v, VP(kt_int(1)), VP(kt_int(-1)), &to.v, &to.v));
    CHECK(o[1] == 4 && o[3] == 1);

    /* view with -1, and a dynamic out */
    OUT(to, EMBER_FLOAT32, o, 8, 8);
    CHECK_OK(CALL("aten::view_copy.out", &tx.v, IL(l, -1, 6), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 4, 6) && o[23] == 23);
    CHECK_STATUS(CALL("aten::view_copy.out", &tx.v, IL(l, 5, 5), &to.v, &to.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::view_copy.out", &tx.v, IL(l, -1, -1), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* expand (3, 1) -> (2, 3, 4) */
    float col[3] = {1, 2, 3};
    tt tc;
    IN(tc, EMBER_FLOAT32, col, 3, 1);
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    CHECK_OK(
        CALL("aten::expand_copy.out", &tc.v, IL(l, 2, -1, 4), VP(kt_bool(false)), &to.v, &to.v));
    CHECK(o[0] == 1 && o[3] == 1 && o[4] == 2 && o[23] == 3);
    CHECK_STATUS(CALL("aten::expand_copy.out", &tc.v, IL(l, 2, 4), VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_SHAPE_MISMATCH);

    /* squeeze / unsqueeze */
    OUT(to, EMBER_FLOAT32, o, 3);
    CHECK_OK(CALL("aten::squeeze_copy.dim_out", &tc.v, VP(kt_int(1)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 3) && o[2] == 3);
    CHECK_OK(CALL("aten::squeeze_copy.out", &tc.v, &to.v, &to.v));
    CHECK_OK(CALL("aten::squeeze_copy.dims_out", &tc.v, IL(l, 0, 1), &to.v, &to.v));
    OUT(to, EMBER_FLOAT32, o, 1, 3, 1);
    CHECK_OK(CALL("aten::unsqueeze_copy.out", &tc.v, VP(kt_int(0)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 1, 3, 1));
    CHECK_STATUS(CALL("aten::unsqueeze_copy.out", &tc.v, VP(kt_int(3)), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* slice_copy: the transformer's mask[:T, :T] with end = a symbolic T */
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    CHECK_OK(CALL("aten::slice_copy.Tensor_out", &tx.v, VP(kt_int(2)), VP(kt_int(1)), VP(kt_int(-1)),
                  VP(kt_int(1)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3, 2) && o[0] == 1 && o[1] == 2 && o[2] == 5);
    CHECK_OK(CALL("aten::slice_copy.Tensor_out", &tx.v, VP(kt_int(2)), VP(kt_none()),
                  VP(kt_int(INT64_MAX)), VP(kt_int(3)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3, 2) && o[0] == 0 && o[1] == 3 && o[2] == 4);
    CHECK_OK(CALL("aten::slice_copy.Tensor_out", &tx.v, VP(kt_int(0)), VP(kt_int(5)), VP(kt_int(9)),
                  VP(kt_int(INT64_MAX)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 0, 3, 4));
    CHECK_STATUS(CALL("aten::slice_copy.Tensor_out", &tx.v, VP(kt_int(0)), VP(kt_int(0)),
                      VP(kt_int(1)), VP(kt_int(0)), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* a large transpose takes the tiled path: odd sizes, 1- and 8-byte elements */
    {
        enum { R = 37, C = 70 };
        static int8_t b8[R * C], t8[R * C];
        static double b64[R * C], t64[R * C];
        for (int i = 0; i < R * C; i++) {
            b8[i] = (int8_t)(i * 7);
            b64[i] = i * 0.5;
        }
        tt ti8, to8, ti64, to64;
        IN(ti8, EMBER_INT8, b8, R, C);
        OUT(to8, EMBER_INT8, t8, C, R);
        IN(ti64, EMBER_FLOAT64, b64, R, C);
        OUT(to64, EMBER_FLOAT64, t64, C, R);
        CHECK_OK(CALL("aten::permute_copy.out", &ti8.v, IL(l, 1, 0), &to8.v, &to8.v));
        CHECK_OK(CALL("aten::transpose_copy.int_out", &ti64.v, VP(kt_int(0)), VP(kt_int(1)), &to64.v,
                      &to64.v));
        bool same = true;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++)
                same &= t8[c * R + r] == b8[r * C + c] && t64[c * R + r] == b64[r * C + c];
        CHECK(same);
    }

    /* a program that makes out one of the inputs is refused where that matters */
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    CHECK_STATUS(CALL("aten::slice_copy.Tensor_out", &to.v, VP(kt_int(0)), VP(kt_int(0)),
                      VP(kt_int(1)), VP(kt_int(1)), &to.v, &to.v),
                 EMBER_ERR_INVALID_PROGRAM);

    /* select_copy */
    OUT(to, EMBER_FLOAT32, o, 2, 4);
    CHECK_OK(CALL("aten::select_copy.int_out", &tx.v, VP(kt_int(1)), VP(kt_int(-1)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 4) && o[0] == 8 && o[4] == 20);
    CHECK_STATUS(CALL("aten::select_copy.int_out", &tx.v, VP(kt_int(1)), VP(kt_int(3)), &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
}

static void test_join_split(void) {
    check_section("cat, stack, split, unbind");
    float a[6] = {0, 1, 2, 3, 4, 5}, b[4] = {10, 11, 12, 13}, o[32];
    tt ta, tb, to, te;
    tl list;
    IN(ta, EMBER_FLOAT32, a, 2, 3);
    IN(tb, EMBER_FLOAT32, b, 2, 2);
    tt_make(&te, EMBER_FLOAT32, (const int32_t[]){0}, 1, NULL, 0, false, NULL);
    OUT(to, EMBER_FLOAT32, o, 2, 5);
    tt *l3[3] = {&ta, &te, &tb};
    CHECK_OK(CALL("aten::cat.out", tl_init(&list, l3, 3, false), VP(kt_int(-1)), &to.v, &to.v));
    float want[10] = {0, 1, 2, 10, 11, 3, 4, 5, 12, 13};
    CHECK(SHAPE_IS(&to.t, 2, 5) && close_f(o, want, 10, 0));
    CHECK_STATUS(CALL("aten::cat.out", tl_init(&list, l3, 3, false), VP(kt_int(0)), &to.v, &to.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    tt *alias[2] = {&ta, &to};
    CHECK_STATUS(CALL("aten::cat.out", tl_init(&list, alias, 2, false), VP(kt_int(1)), &to.v, &to.v),
                 EMBER_ERR_INVALID_PROGRAM);
    /* int32 and float inputs into a float out */
    int32_t ib[2] = {7, 8};
    tt tib;
    IN(tib, EMBER_INT32, ib, 2, 1);
    tt *l2[2] = {&ta, &tib};
    OUT(to, EMBER_FLOAT32, o, 2, 4);
    CHECK_OK(CALL("aten::cat.out", tl_init(&list, l2, 2, false), VP(kt_int(1)), &to.v, &to.v));
    CHECK(o[3] == 7 && o[7] == 8);

    OUT(to, EMBER_FLOAT32, o, 2, 3, 2);
    tt *s2[2] = {&ta, &ta};
    CHECK_OK(CALL("aten::stack.out", tl_init(&list, s2, 2, false), VP(kt_int(2)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3, 2) && o[0] == 0 && o[1] == 0 && o[2] == 1 && o[11] == 5);

    /* split_with_sizes_copy along the last dim, as the transformer's qkv split */
    float x[12], p0[8], p1[8], p2[8];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    tt tx, t0, t1, t2;
    il sz;
    IN(tx, EMBER_FLOAT32, x, 2, 6);
    OUT(t0, EMBER_FLOAT32, p0, 2, 2);
    OUT(t1, EMBER_FLOAT32, p1, 2, 1);
    OUT(t2, EMBER_FLOAT32, p2, 2, 3);
    tt *outs[3] = {&t0, &t1, &t2};
    tl ol;
    ember_value *olv = tl_init(&ol, outs, 3, false);
    CHECK_OK(
        CALL("aten::split_with_sizes_copy.out", &tx.v, IL(sz, 2, 1, 3), VP(kt_int(-1)), olv, olv));
    CHECK(p0[0] == 0 && p0[1] == 1 && p0[2] == 6 && p1[0] == 2 && p1[1] == 8 && p2[0] == 3 &&
          p2[5] == 11);
    CHECK_OK(CALL("aten::split_with_sizes_copy.out", &tx.v, IL(sz, 2, 1, 3), VP(kt_int(1)), olv));
    CHECK_STATUS(
        CALL("aten::split_with_sizes_copy.out", &tx.v, IL(sz, 2, 2, 3), VP(kt_int(-1)), olv, olv),
        EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(
        CALL("aten::split_with_sizes_copy.out", &tx.v, IL(sz, 3, 3), VP(kt_int(-1)), olv, olv),
        EMBER_ERR_INVALID_ARGUMENT);
    /* split_copy: 6 in pieces of 4 -> 4, 2 */
    OUT(t0, EMBER_FLOAT32, p0, 2, 4);
    OUT(t1, EMBER_FLOAT32, p1, 2, 2);
    olv = tl_init(&ol, outs, 2, false);
    CHECK_OK(CALL("aten::split_copy.Tensor_out", &tx.v, VP(kt_int(4)), VP(kt_int(1)), olv, olv));
    float hold[8];
    memcpy(hold, p0, sizeof p0);
    CHECK(SHAPE_IS(&t1.t, 2, 2) && hold[0] == 0 && p1[0] == 4 && p1[3] == 11);
    /* unbind along dim 0 */
    float u0[6], u1[6];
    OUT(t0, EMBER_FLOAT32, u0, 6);
    OUT(t1, EMBER_FLOAT32, u1, 6);
    olv = tl_init(&ol, outs, 2, false);
    CHECK_OK(CALL("aten::unbind_copy.int_out", &tx.v, VP(kt_int(0)), olv, olv));
    CHECK(u0[5] == 5 && u1[0] == 6);
}

static void test_copies(void) {
    check_section("clone, copy, dim order ops, _to_copy");
    float x[6] = {1.5f, -2.5f, 3.25f, 0, 100000, -0.75f}, o[6];
    tt tx, to;
    il order;
    IN(tx, EMBER_FLOAT32, x, 2, 3);
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::clone.out", &tx.v, VP(kt_none()), &to.v, &to.v));
    CHECK(close_f(o, x, 6, 0));
    memset(o, 0, sizeof o);
    CHECK_OK(CALL("dim_order_ops::_clone_dim_order.out", &tx.v, VP(kt_bool(false)), IL(order, 0, 1),
                  &to.v, &to.v));
    CHECK(close_f(o, x, 6, 0));
    CHECK_STATUS(CALL("dim_order_ops::_clone_dim_order.out", &tx.v, VP(kt_bool(false)),
                      IL(order, 1, 0), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* to a channels-last out: the elements move, the values stay */
    float cx[12], co[12];
    for (int i = 0; i < 12; i++) cx[i] = (float)i;
    tt tcx, tco;
    IN(tcx, EMBER_FLOAT32, cx, 1, 3, 2, 2);
    tt_make(&tco, EMBER_FLOAT32, (const int32_t[]){1, 3, 2, 2}, 4, co, sizeof co, false,
            (const uint8_t[]){0, 2, 3, 1});
    CHECK_OK(CALL("dim_order_ops::_clone_dim_order.out", &tcx.v, VP(kt_bool(false)),
                  IL(order, 0, 2, 3, 1), &tco.v, &tco.v));
    CHECK(co[0] == 0 && co[1] == 4 && co[2] == 8 && co[3] == 1);

    /* conversions: float -> int32 truncates, -> float16 rounds, int -> bool */
    int32_t io[6];
    uint16_t ho[6];
    uint8_t bo[6];
    tt tio, tho, tbo;
    OUT(tio, EMBER_INT32, io, 2, 3);
    OUT(tho, EMBER_FLOAT16, ho, 2, 3);
    OUT(tbo, EMBER_BOOL, bo, 2, 3);
    CHECK_OK(CALL("dim_order_ops::_to_dim_order_copy.out", &tx.v, VP(kt_bool(false)), VP(kt_none()),
                  &tio.v, &tio.v));
    CHECK(io[0] == 1 && io[1] == -2 && io[4] == 100000);
    CHECK_OK(CALL("aten::_to_copy.out", &tx.v, VP(kt_bool(false)), VP(kt_none()), &tho.v, &tho.v));
    CHECK(ember_half_to_float(ho[0]) == 1.5f && isinf(ember_half_to_float(ho[4])));
    CHECK_OK(CALL("aten::_to_copy.out", &tio.v, VP(kt_bool(false)), VP(kt_none()), &tbo.v, &tbo.v));
    CHECK(bo[0] == 1 && bo[3] == 0);
    CHECK_STATUS(CALL("aten::clone.out", &tx.v, VP(kt_none()), &tio.v, &tio.v),
                 EMBER_ERR_TYPE_MISMATCH);

    /* copy_ into a buffer (the mutable-buffer fixture), with broadcasting */
    float buf[6] = {0}, src[3] = {7, 8, 9};
    tt tbuf, tsrc;
    IN(tbuf, EMBER_FLOAT32, buf, 2, 3);
    IN(tsrc, EMBER_FLOAT32, src, 3);
    CHECK_OK(CALL("aten::copy_", &tbuf.v, &tsrc.v, VP(kt_bool(false)), &tbuf.v));
    CHECK(buf[0] == 7 && buf[5] == 9);
    CHECK_STATUS(CALL("aten::copy_", &tsrc.v, &tbuf.v, VP(kt_bool(false)), &tsrc.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    tbuf.t.storage = EMBER_STORAGE_CONSTANT;
    CHECK_STATUS(CALL("aten::copy_", &tbuf.v, &tsrc.v, VP(kt_bool(false)), &tbuf.v),
                 EMBER_ERR_INVALID_PROGRAM);
    tbuf.t.storage = EMBER_STORAGE_PLANNED;
    CHECK_OK(CALL("aten::copy.out", &tbuf.v, &tx.v, VP(kt_bool(false)), &to.v, &to.v));
    CHECK(close_f(o, x, 6, 0));
}

static void test_creation(void) {
    check_section("full, arange, triu/tril, pad");
    float o[16];
    tt to;
    il l;
    OUT(to, EMBER_FLOAT32, o, 4, 4);
    CHECK_OK(CALL("aten::full.out", IL(l, 2, 3), VP(kt_double(-0.5)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3) && o[0] == -0.5f && o[5] == -0.5f);
    CHECK_OK(CALL("aten::ones.out", IL(l, 1, 2), &to.v, &to.v));
    CHECK(o[1] == 1);
    CHECK_OK(CALL("aten::zeros.out", IL(l, 4, 4), &to.v, &to.v));
    CHECK(o[15] == 0);
    CHECK_STATUS(CALL("aten::full.out", IL(l, 5, 4), VP(kt_int(1)), &to.v, &to.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    int64_t lo[3];
    tt tlo, tx;
    OUT(tlo, EMBER_INT64, lo, 3);
    float xx[3] = {0};
    IN(tx, EMBER_FLOAT32, xx, 3);
    CHECK_OK(CALL("aten::full_like.out", &tx.v, VP(kt_int(42)), VP(kt_none()), &tlo.v, &tlo.v));
    CHECK(lo[0] == 42 && lo[2] == 42);
    tt ts;
    double sd = 0;
    IN0(ts, EMBER_FLOAT64, sd);
    CHECK_OK(CALL("aten::scalar_tensor.out", VP(kt_double(2.5)), &ts.v, &ts.v));
    CHECK(sd == 2.5);

    /* arange */
    tt ta;
    OUT(ta, EMBER_FLOAT32, o, 16);
    CHECK_OK(
        CALL("aten::arange.start_out", VP(kt_double(1)), VP(kt_double(2)), VP(kt_double(0.25)), &ta.v, &ta.v));
    CHECK(SHAPE_IS(&ta.t, 4) && o[0] == 1 && o[3] == 1.75f);
    int64_t ai[16];
    OUT(ta, EMBER_INT64, ai, 16);
    CHECK_OK(CALL("aten::arange.out", VP(kt_int(5)), &ta.v, &ta.v));
    CHECK(SHAPE_IS(&ta.t, 5) && ai[4] == 4);
    CHECK_OK(
        CALL("aten::arange.start_out", VP(kt_int(10)), VP(kt_int(0)), VP(kt_int(-3)), &ta.v, &ta.v));
    CHECK(SHAPE_IS(&ta.t, 4) && ai[0] == 10 && ai[3] == 1);
    CHECK_STATUS(
        CALL("aten::arange.start_out", VP(kt_int(0)), VP(kt_int(5)), VP(kt_int(0)), &ta.v, &ta.v),
        EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::arange.out", VP(kt_int(17)), &ta.v, &ta.v), EMBER_ERR_SHAPE_MISMATCH);

    /* triu(1) of a (3, 3) full of -inf: the transformer's causal mask */
    float m[9], mo[9];
    for (int i = 0; i < 9; i++) m[i] = -INFINITY;
    tt tm, tmo;
    IN(tm, EMBER_FLOAT32, m, 3, 3);
    OUT(tmo, EMBER_FLOAT32, mo, 3, 3);
    CHECK_OK(CALL("aten::triu.out", &tm.v, VP(kt_int(1)), &tmo.v, &tmo.v));
    CHECK(mo[0] == 0 && isinf(mo[1]) && mo[3] == 0 && mo[4] == 0 && isinf(mo[5]) && mo[8] == 0);
    CHECK_OK(CALL("aten::tril.out", &tm.v, VP(kt_int(-1)), &tmo.v, &tmo.v));
    CHECK(mo[0] == 0 && isinf(mo[3]) && mo[4] == 0 && isinf(mo[6]) && isinf(mo[7]));

    /* constant_pad_nd: pad the last dim by (1, 2), crop dim 0 by (-1, 0) */
    float p[6] = {1, 2, 3, 4, 5, 6}, po[12];
    tt tp, tpo;
    IN(tp, EMBER_FLOAT32, p, 2, 3);
    OUT(tpo, EMBER_FLOAT32, po, 2, 6);
    CHECK_OK(
        CALL("aten::constant_pad_nd.out", &tp.v, IL(l, 1, 2, -1, 0), VP(kt_double(9)), &tpo.v, &tpo.v));
    float want[6] = {9, 4, 5, 6, 9, 9};
    CHECK(SHAPE_IS(&tpo.t, 1, 6) && close_f(po, want, 6, 0));
}

static void test_indexing(void) {
    check_section("embedding, index, index_select, gather");
    float w[4 * 3];
    for (int i = 0; i < 12; i++) w[i] = (float)i;
    int64_t ids[3] = {3, 0, 3};
    float o[32];
    tt tw, ti, to;
    IN(tw, EMBER_FLOAT32, w, 4, 3);
    IN(ti, EMBER_INT64, ids, 1, 3);
    OUT(to, EMBER_FLOAT32, o, 1, 3, 3);
    CHECK_OK(CALL("aten::embedding.out", &tw.v, &ti.v, VP(kt_int(-1)), VP(kt_bool(false)),
                  VP(kt_bool(false)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 1, 3, 3) && o[0] == 9 && o[3] == 0 && o[8] == 11);
    ids[1] = 4;
    CHECK_STATUS(CALL("aten::embedding.out", &tw.v, &ti.v, VP(kt_int(-1)), VP(kt_bool(false)),
                      VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    ids[1] = -1;
    CHECK_STATUS(CALL("aten::embedding.out", &tw.v, &ti.v, VP(kt_int(-1)), VP(kt_bool(false)),
                      VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    int32_t ids32[2] = {1, 2};
    IN(ti, EMBER_INT32, ids32, 2);
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::embedding.out", &tw.v, &ti.v, VP(kt_int(-1)), VP(kt_bool(false)),
                  VP(kt_bool(false)), &to.v, &to.v));
    CHECK(o[0] == 3 && o[5] == 8);

    /* index: x (2, 3, 4)[:, i, j] with i (2,) and j (2,) adjacent -> (2, 2) */
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t iv[2] = {0, -1}, jv[2] = {3, 1};
    tt tx, tiv, tjv;
    tl idx;
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    IN(tiv, EMBER_INT64, iv, 2);
    IN(tjv, EMBER_INT64, jv, 2);
    tt *l1[3] = {NULL, &tiv, &tjv};
    OUT(to, EMBER_FLOAT32, o, 2, 2);
    CHECK_OK(CALL("aten::index.Tensor_out", &tx.v, tl_init(&idx, l1, 3, true), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 2) && o[0] == 3 && o[1] == 9 && o[2] == 15 && o[3] == 21);
    /* non-adjacent: x[i, :, j] -> (2, 3) with the broadcast dim first */
    tt *l2[3] = {&tiv, NULL, &tjv};
    int64_t iv2[2] = {1, 0};
    IN(tiv, EMBER_INT64, iv2, 2);
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::index.Tensor_out", &tx.v, tl_init(&idx, l2, 3, true), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3) && o[0] == 15 && o[1] == 19 && o[3] == 1 && o[5] == 9);
    /* a single index on dim 0 keeps the rest */
    tt *l3[1] = {&tiv};
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    CHECK_OK(CALL("aten::index.Tensor_out", &tx.v, tl_init(&idx, l3, 1, true), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3, 4) && o[0] == 12 && o[12] == 0);
    iv2[0] = 2;
    CHECK_STATUS(CALL("aten::index.Tensor_out", &tx.v, tl_init(&idx, l3, 1, true), &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    /* a bool mask over the first two dims */
    uint8_t mask[6] = {0, 1, 0, 0, 0, 1};
    tt tmask;
    IN(tmask, EMBER_BOOL, mask, 2, 3);
    tt *l4[1] = {&tmask};
    OUT(to, EMBER_FLOAT32, o, 6, 4);
    CHECK_OK(CALL("aten::index.Tensor_out", &tx.v, tl_init(&idx, l4, 1, true), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 4) && o[0] == 4 && o[4] == 20 && o[7] == 23);

    /* index_select along dim 1; gather along dim 2 */
    int64_t sel[2] = {2, 0};
    tt tsel;
    IN(tsel, EMBER_INT64, sel, 2);
    OUT(to, EMBER_FLOAT32, o, 2, 2, 4);
    CHECK_OK(CALL("aten::index_select.out", &tx.v, VP(kt_int(1)), &tsel.v, &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 2, 4) && o[0] == 8 && o[4] == 0 && o[8] == 20);
    sel[0] = 3;
    CHECK_STATUS(CALL("aten::index_select.out", &tx.v, VP(kt_int(1)), &tsel.v, &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    int64_t g[2 * 3 * 1] = {3, 2, 1, 0, 0, 0};
    tt tg;
    IN(tg, EMBER_INT64, g, 2, 3, 1);
    OUT(to, EMBER_FLOAT32, o, 2, 3, 1);
    CHECK_OK(CALL("aten::gather.out", &tx.v, VP(kt_int(2)), &tg.v, VP(kt_bool(false)), &to.v, &to.v));
    CHECK(o[0] == 3 && o[1] == 6 && o[2] == 9 && o[3] == 12 && o[5] == 20);

    /* index_put: x (2, 3, 4)[:, [2, -3]] = v (broadcast (4,) -> (2, 2, 4)), then += */
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t pv[2] = {2, -3};
    float vals[4] = {100, 200, 300, 400};
    tt tpv, tvals;
    IN(tpv, EMBER_INT64, pv, 2);
    IN(tvals, EMBER_FLOAT32, vals, 4);
    tt *lp[2] = {NULL, &tpv};
    OUT(to, EMBER_FLOAT32, o, 2, 3, 4);
    CHECK_OK(CALL("aten::index_put.out", &tx.v, tl_init(&idx, lp, 2, true), &tvals.v,
                  VP(kt_bool(false)), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 3, 4) && o[0] == 100 && o[3] == 400 && o[4] == 4 && o[8] == 100 &&
          o[12] == 100 && o[16] == 16 && o[23] == 400);
    pv[1] = 2; /* a repeated index accumulates twice */
    CHECK_OK(CALL("aten::index_put.out", &tx.v, tl_init(&idx, lp, 2, true), &tvals.v,
                  VP(kt_bool(true)), &to.v, &to.v));
    CHECK(o[0] == 0 && o[8] == 208 && o[11] == 811 && o[20] == 220 && x[8] == 8);
    pv[0] = 3;
    CHECK_STATUS(CALL("aten::index_put.out", &tx.v, tl_init(&idx, lp, 2, true), &tvals.v,
                      VP(kt_bool(false)), &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    /* a bool mask (2, 3) covers dims 0 and 1: rows (0, 1) and (1, 2) take v */
    tt *lpm[1] = {&tmask};
    CHECK_OK(CALL("aten::index_put.out", &tx.v, tl_init(&idx, lpm, 1, true), &tvals.v,
                  VP(kt_bool(false)), &to.v, &to.v));
    CHECK(o[0] == 0 && o[4] == 100 && o[7] == 400 && o[8] == 8 && o[20] == 100 && o[23] == 400);
}

static void test_more_ops(void) {
    check_section(
        "flip, repeat, cumsum, any/all, remainder, bitwise, max.dim, var, group_norm, upsample");
    float x[6] = {1, -2, 3, -4, 5, 6}, o[64];
    tt tx, to;
    il l;
    IN(tx, EMBER_FLOAT32, x, 2, 3);
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::flip.out", &tx.v, IL(l, 0, -1), &to.v, &to.v));
    CHECK(o[0] == 6 && o[2] == -4 && o[5] == 1);
    OUT(to, EMBER_FLOAT32, o, 2, 4, 6);
    CHECK_OK(CALL("aten::repeat.out", &tx.v, IL(l, 2, 2, 2), &to.v, &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 4, 6) && o[0] == 1 && o[3] == 1 && o[6] == -4 && o[12] == 1 &&
          o[47] == 6);
    CHECK_STATUS(CALL("aten::repeat.out", &tx.v, IL(l, 2), &to.v, &to.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(CALL("aten::cumsum.out", &tx.v, VP(kt_int(1)), VP(kt_none()), &to.v, &to.v));
    CHECK(o[0] == 1 && o[1] == -1 && o[2] == 2 && o[5] == 7);
    CHECK_OK(CALL("aten::narrow_copy.out", &tx.v, VP(kt_int(1)), VP(kt_int(-2)), VP(kt_int(2)), &to.v,
                  &to.v));
    CHECK(SHAPE_IS(&to.t, 2, 2) && o[0] == -2 && o[3] == 6);
    CHECK_STATUS(CALL("aten::narrow_copy.out", &tx.v, VP(kt_int(1)), VP(kt_int(2)), VP(kt_int(2)),
                      &to.v, &to.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);

    /* any / all */
    uint8_t b[4];
    tt tb;
    OUT(tb, EMBER_BOOL, b, 2);
    CHECK_OK(CALL("aten::any.out", &tx.v, VP(kt_int(1)), VP(kt_bool(false)), &tb.v, &tb.v));
    CHECK(b[0] == 1 && b[1] == 1);
    float z[4] = {0, 0, 0, NAN};
    tt tz;
    IN(tz, EMBER_FLOAT32, z, 2, 2);
    CHECK_OK(CALL("aten::any.out", &tz.v, VP(kt_int(1)), VP(kt_bool(false)), &tb.v, &tb.v));
    CHECK(b[0] == 0 && b[1] == 1);
    IN(tb, EMBER_BOOL, b, 3);
    CHECK_STATUS(
        CALL("aten::all.out", &tz.v, VP(kt_int(0)), VP(kt_bool(false)), &tb.v, &tb.v),
        EMBER_ERR_SHAPE_MISMATCH); /* (2, 2) reduced over dim 0 is (2), a static (3) won't do */
    OUT(tb, EMBER_BOOL, b, 3);
    CHECK_OK(CALL("aten::all.out", &tx.v, VP(kt_int(0)), VP(kt_bool(false)), &tb.v, &tb.v));
    CHECK(b[0] == 1 && b[2] == 1);
    uint8_t one = 0;
    tt t1;
    IN0(t1, EMBER_BOOL, one);
    CHECK_OK(CALL("aten::all.all_out", &tx.v, &t1.v, &t1.v));
    CHECK(one == 1);
    CHECK_OK(CALL("aten::any.all_out", &tz.v, &t1.v, &t1.v));
    CHECK(one == 1);

    /* remainder (Python sign rules), floor_divide, bitwise */
    int64_t a[4] = {7, -7, 7, -7}, d[4] = {3, 3, -3, -3}, io[4];
    tt ta, td, tio;
    IN(ta, EMBER_INT64, a, 4);
    IN(td, EMBER_INT64, d, 4);
    OUT(tio, EMBER_INT64, io, 4);
    CHECK_OK(CALL("aten::remainder.Tensor_out", &ta.v, &td.v, &tio.v, &tio.v));
    CHECK(io[0] == 1 && io[1] == 2 && io[2] == -2 && io[3] == -1);
    CHECK_OK(CALL("aten::floor_divide.out", &ta.v, &td.v, &tio.v, &tio.v));
    CHECK(io[0] == 2 && io[1] == -3 && io[2] == -3 && io[3] == 2);
    CHECK_STATUS(CALL("aten::remainder.Scalar_out", &ta.v, VP(kt_int(0)), &tio.v, &tio.v),
                 EMBER_ERR_KERNEL_FAILED);
    CHECK_OK(CALL("aten::bitwise_and.Scalar_out", &ta.v, VP(kt_int(6)), &tio.v, &tio.v));
    CHECK(io[0] == 6 && io[1] == (-7 & 6));
    CHECK_OK(CALL("aten::bitwise_not.out", &ta.v, &tio.v, &tio.v));
    CHECK(io[0] == ~7);
    CHECK_STATUS(CALL("aten::bitwise_not.out", &tx.v, &to.v, &to.v), EMBER_ERR_NOT_SUPPORTED);
    float fo[4];
    tt tfo;
    OUT(tfo, EMBER_FLOAT32, fo, 4);
    float fa[4] = {7, -7, 7, -7};
    tt tfa;
    IN(tfa, EMBER_FLOAT32, fa, 4);
    CHECK_OK(CALL("aten::remainder.Scalar_out", &tfa.v, VP(kt_double(-3)), &tfo.v, &tfo.v));
    CHECK(fo[0] == -2 && fo[1] == -1);

    /* max.dim / min.dim: values and indices */
    float mv[2];
    int64_t mi[2];
    tt tmv, tmi;
    tl outs;
    OUT(tmv, EMBER_FLOAT32, mv, 2);
    OUT(tmi, EMBER_INT64, mi, 2);
    tt *ol[2] = {&tmv, &tmi};
    CHECK_OK(CALL("aten::max.dim_max", &tx.v, VP(kt_int(1)), VP(kt_bool(false)), &tmv.v, &tmi.v,
                  tl_init(&outs, ol, 2, false)));
    CHECK(mv[0] == 3 && mi[0] == 2 && mv[1] == 6 && mi[1] == 2);
    CHECK_OK(CALL("aten::min.dim_min", &tx.v, VP(kt_int(1)), VP(kt_bool(false)), &tmv.v, &tmi.v,
                  tl_init(&outs, ol, 2, false)));
    CHECK(mv[0] == -2 && mi[0] == 1 && mv[1] == -4 && mi[1] == 0);

    /* var with and without correction */
    float v[2];
    tt tv;
    OUT(tv, EMBER_FLOAT32, v, 2);
    CHECK_OK(CALL("aten::var.correction_out", &tx.v, IL(l, 1), VP(kt_none()), VP(kt_bool(false)),
                  &tv.v, &tv.v));
    /* row 0: 1, -2, 3 -> mean 2/3, squares sum 38/3, / 2 */
    CHECK(fabsf(v[0] - 38.0f / 6.0f) < 1e-5f);
    CHECK_OK(CALL("aten::var.correction_out", &tx.v, IL(l, 1), VP(kt_int(0)), VP(kt_bool(false)),
                  &tv.v, &tv.v));
    CHECK(fabsf(v[0] - 38.0f / 9.0f) < 1e-5f);

    /* group norm (2 groups over 4 channels, HxW 2) against a direct computation */
    float g[16], gw[4] = {1, 2, 3, 4}, gb[4] = {0, 1, 0, -1}, gy[16], gm[4], gr[4];
    fill_rand(g, 16);
    tt tg, tgw, tgb, tgy, tgm, tgr;
    tl gouts;
    IN(tg, EMBER_FLOAT32, g, 2, 4, 2);
    IN(tgw, EMBER_FLOAT32, gw, 4);
    IN(tgb, EMBER_FLOAT32, gb, 4);
    OUT(tgy, EMBER_FLOAT32, gy, 2, 4, 2);
    OUT(tgm, EMBER_FLOAT32, gm, 2, 2);
    OUT(tgr, EMBER_FLOAT32, gr, 2, 2);
    tt *gol[3] = {&tgy, &tgm, &tgr};
    CHECK_OK(CALL("aten::native_group_norm.out", &tg.v, &tgw.v, &tgb.v, VP(kt_int(2)), VP(kt_int(4)),
                  VP(kt_int(2)), VP(kt_int(2)), VP(kt_double(1e-5)), &tgy.v, &tgm.v, &tgr.v,
                  tl_init(&gouts, gol, 3, false)));
    bool ok = true;
    for (int grp = 0; grp < 4; grp++) { /* (n, group) slabs of 4 elements */
        double m = 0, var = 0;
        for (int k = 0; k < 4; k++) m += g[grp * 4 + k];
        m /= 4;
        for (int k = 0; k < 4; k++) var += (g[grp * 4 + k] - m) * (g[grp * 4 + k] - m);
        double rs = 1 / sqrt(var / 4 + 1e-5);
        ok &= fabs(gm[grp] - m) < 1e-6;
        for (int k = 0; k < 4; k++) {
            int c = (grp % 2) * 2 + k / 2;
            ok &= fabs(gy[grp * 4 + k] - ((g[grp * 4 + k] - m) * rs * gw[c] + gb[c])) < 1e-4;
        }
    }
    CHECK(ok);
    CHECK_STATUS(CALL("aten::native_group_norm.out", &tg.v, &tgw.v, &tgb.v, VP(kt_int(2)),
                      VP(kt_int(4)), VP(kt_int(2)), VP(kt_int(3)), VP(kt_double(1e-5)), &tgy.v, &tgm.v,
                      &tgr.v, tl_init(&gouts, gol, 3, false)),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* nearest upsample 2x3 -> 4x5 (PyTorch: src = floor(dst * in / out)) */
    float u[6] = {1, 2, 3, 4, 5, 6}, uo[20];
    tt tu, tuo;
    IN(tu, EMBER_FLOAT32, u, 1, 1, 2, 3);
    OUT(tuo, EMBER_FLOAT32, uo, 1, 1, 4, 5);
    CHECK_OK(CALL("aten::upsample_nearest2d.out", &tu.v, IL(l, 4, 5), VP(kt_none()), VP(kt_none()),
                  &tuo.v, &tuo.v));
    float want[20] = {1, 1, 2, 2, 3, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6, 4, 4, 5, 5, 6};
    CHECK(close_f(uo, want, 20, 0));

    /* bilinear 2x3 -> 4x5: align_corners true (src = dst * (in - 1) / (out - 1)) */
    il lu;
    OUT(tuo, EMBER_FLOAT32, uo, 1, 1, 4, 5);
    CHECK_OK(CALL("aten::upsample_bilinear2d.vec_out", &tu.v, IL(lu, 4, 5), VP(kt_bool(true)),
                  VP(kt_none()), &tuo.v, &tuo.v));
    CHECK(SHAPE_IS(&tuo.t, 1, 1, 4, 5) && uo[0] == 1 && uo[2] == 2 && uo[4] == 3 &&
          fabsf(uo[5] - 2) < 1e-6f && uo[19] == 6);
    /* align_corners false, scale 2: src = (dst + 0.5) / 2 - 0.5, clamped at 0 */
    ember_value sf;
    double sfv[2] = {2.0, 2.0};
    sf.tag = EMBER_TAG_DOUBLE_LIST;
    sf.u.double_list.items = sfv;
    sf.u.double_list.len = 2;
    float uo2[24];
    OUT(tuo, EMBER_FLOAT32, uo2, 1, 1, 4, 6);
    CHECK_OK(CALL("aten::upsample_bilinear2d.vec_out", &tu.v, VP(kt_none()), VP(kt_bool(false)), &sf,
                  &tuo.v, &tuo.v));
    CHECK(SHAPE_IS(&tuo.t, 1, 1, 4, 6) && uo2[0] == 1 && uo2[1] == 1.25f && uo2[2] == 1.75f &&
          uo2[5] == 3 && uo2[6] == 1.75f && uo2[23] == 6);
    CHECK_STATUS(CALL("aten::upsample_bilinear2d.vec_out", &tu.v, IL(lu, 0, 5), VP(kt_bool(true)),
                      VP(kt_none()), &tuo.v, &tuo.v),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* elu, sign, isnan */
    OUT(to, EMBER_FLOAT32, o, 2, 3);
    CHECK_OK(
        CALL("aten::elu.out", &tx.v, VP(kt_double(1.5)), VP(kt_int(1)), VP(kt_int(1)), &to.v, &to.v));
    CHECK(o[0] == 1 && fabsf(o[1] - 1.5f * expm1f(-2)) < 1e-6f);
    CHECK_OK(CALL("aten::sign.out", &tx.v, &to.v, &to.v));
    CHECK(o[0] == 1 && o[1] == -1);
    OUT(tb, EMBER_BOOL, b, 2, 2);
    CHECK_OK(CALL("aten::isnan.out", &tz.v, &tb.v, &tb.v));
    CHECK(b[0] == 0 && b[3] == 1);
}

/* ------------------------------------------------------------------------ */
/* Prim ops                                                                  */
/* ------------------------------------------------------------------------ */

static void test_prim(void) {
    check_section("prim ops");
    float x[24];
    tt tx;
    IN(tx, EMBER_FLOAT32, x, 2, 3, 4);
    ember_value r = kt_int(0);
    CHECK_OK(CALL("aten::sym_size.int", &tx.v, VP(kt_int(-1)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == 4);
    CHECK_STATUS(CALL("aten::sym_size.int", &tx.v, VP(kt_int(3)), &r), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(CALL("aten::sym_numel", &tx.v, &r));
    CHECK(r.u.i == 24);
    /* a result slot that is a tensor is refused */
    CHECK_STATUS(CALL("aten::sym_numel", &tx.v, &tx.v), EMBER_ERR_INVALID_PROGRAM);

    /* strides, storage offset and contiguity, as torch reports them */
    CHECK_OK(CALL("aten::sym_stride.int", &tx.v, VP(kt_int(0)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == 12);
    CHECK_OK(CALL("aten::sym_stride.int", &tx.v, VP(kt_int(-1)), &r));
    CHECK(r.u.i == 1);
    CHECK_STATUS(CALL("aten::sym_stride.int", &tx.v, VP(kt_int(-4)), &r),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(CALL("aten::sym_storage_offset", &tx.v, &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == 0);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tx.v, VP(kt_none()), &r));
    CHECK(r.tag == EMBER_TAG_BOOL && r.u.b);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tx.v, VP(kt_int(2)), &r));
    CHECK(r.tag == EMBER_TAG_BOOL && !r.u.b); /* channels_last needs 4 dims */
    float xc[2 * 3 * 4 * 5];
    tt tc;
    tt_make(&tc, EMBER_FLOAT32, (const int32_t[]){2, 3, 4, 5}, 4, xc, sizeof xc, false,
            (const uint8_t[]){0, 2, 3, 1});
    CHECK_OK(CALL("aten::sym_stride.int", &tc.v, VP(kt_int(1)), &r));
    CHECK(r.u.i == 1);
    CHECK_OK(CALL("aten::sym_stride.int", &tc.v, VP(kt_int(3)), &r));
    CHECK(r.u.i == 3);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(0)), &r));
    CHECK(!r.u.b);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(2)), &r));
    CHECK(r.u.b);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(3)), &r));
    CHECK(!r.u.b);
    /* (2, 1, 4, 5) channels-last: C has size 1, so it is contiguous both ways */
    tt_make(&tc, EMBER_FLOAT32, (const int32_t[]){2, 1, 4, 5}, 4, xc, sizeof xc, false,
            (const uint8_t[]){0, 2, 3, 1});
    CHECK_OK(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(0)), &r));
    CHECK(r.u.b);
    CHECK_OK(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(2)), &r));
    CHECK(r.u.b);
    CHECK_STATUS(CALL("aten::sym_is_contiguous", &tc.v, VP(kt_int(1)), &r),
                 EMBER_ERR_INVALID_ARGUMENT);

    CHECK_OK(CALL("executorch_prim::add.Scalar", VP(kt_int(2)), VP(kt_int(3)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == 5);
    CHECK_OK(CALL("executorch_prim::mul.Scalar", VP(kt_int(2)), VP(kt_double(1.5)), &r));
    CHECK(r.tag == EMBER_TAG_DOUBLE && r.u.d == 3.0);
    CHECK_OK(CALL("executorch_prim::sub.Scalar", VP(kt_int(INT64_MIN)), VP(kt_int(1)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == INT64_MAX);
    CHECK_OK(CALL("executorch_prim::floordiv.Scalar", VP(kt_int(-7)), VP(kt_int(2)), &r));
    CHECK(r.u.i == -4);
    CHECK_OK(CALL("executorch_prim::floordiv.Scalar", VP(kt_double(-7)), VP(kt_int(2)), &r));
    CHECK(r.tag == EMBER_TAG_DOUBLE && r.u.d == -4.0);
    CHECK_STATUS(CALL("executorch_prim::floordiv.int", VP(kt_int(1)), VP(kt_int(0)), &r),
                 EMBER_ERR_KERNEL_FAILED);
    CHECK_OK(CALL("executorch_prim::mod.Scalar", VP(kt_int(-7)), VP(kt_int(3)), &r));
    CHECK(r.u.i == 2);
    CHECK_OK(CALL("executorch_prim::truediv.Scalar", VP(kt_int(7)), VP(kt_int(2)), &r));
    CHECK(r.tag == EMBER_TAG_DOUBLE && r.u.d == 3.5);
    CHECK_OK(CALL("executorch_prim::eq.Scalar", VP(kt_int(2)), VP(kt_double(2.0)), &r));
    CHECK(r.tag == EMBER_TAG_BOOL && r.u.b);
    CHECK_OK(CALL("executorch_prim::lt.Scalar", VP(kt_int(2)), VP(kt_int(1)), &r));
    CHECK(r.tag == EMBER_TAG_BOOL && !r.u.b);
    CHECK_OK(CALL("executorch_prim::ge.Scalar", VP(kt_int(2)), VP(kt_int(2)), &r));
    CHECK(r.u.b);
    CHECK_OK(CALL("executorch_prim::neg.Scalar", VP(kt_int(5)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == -5);
    CHECK_OK(CALL("executorch_prim::sym_max.Scalar", VP(kt_int(5)), VP(kt_int(9)), &r));
    CHECK(r.u.i == 9);
    CHECK_OK(CALL("executorch_prim::sym_min.Scalar", VP(kt_int(5)), VP(kt_int(9)), &r));
    CHECK(r.u.i == 5);
    CHECK_STATUS(CALL("executorch_prim::sym_max.Scalar", VP(kt_int(5)), VP(kt_double(9)), &r),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_OK(CALL("executorch_prim::round.Scalar", VP(kt_double(2.5)), &r));
    CHECK(r.tag == EMBER_TAG_INT && r.u.i == 2);
    CHECK_OK(CALL("executorch_prim::ceil.Scalar", VP(kt_double(2.1)), &r));
    CHECK(r.u.i == 3);
    CHECK_OK(
        CALL("executorch_prim::sym_ite.Scalar", VP(kt_bool(false)), VP(kt_int(1)), VP(kt_int(2)), &r));
    CHECK(r.u.i == 2);
    CHECK_OK(CALL("executorch_prim::sym_float.Scalar", VP(kt_int(3)), &r));
    CHECK(r.tag == EMBER_TAG_DOUBLE && r.u.d == 3.0);
    float one = 4.5f;
    tt tone;
    IN0(tone, EMBER_FLOAT32, one);
    CHECK_OK(CALL("aten::_local_scalar_dense", &tone.v, &r));
    CHECK(r.tag == EMBER_TAG_DOUBLE && r.u.d == 4.5);

    /* et_view aliases self: (2, 3, 4) seen as (T, 8) with T from sym_size-like input */
    tt tv;
    tt_make(&tv, EMBER_FLOAT32, (const int32_t[]){6, 8}, 2, NULL, 0, true, NULL);
    tv.t.storage = EMBER_STORAGE_NONE;
    il sz;
    CHECK_OK(CALL("executorch_prim::et_view.default", &tx.v, IL(sz, -1, 8), &tv.v));
    CHECK(tv.t.data == (void *)x && SHAPE_IS(&tv.t, 3, 8));
    CHECK_STATUS(CALL("executorch_prim::et_view.default", &tx.v, IL(sz, 5, 8), &tv.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* a view of a constant is constant */
    tx.t.storage = EMBER_STORAGE_CONSTANT;
    CHECK_OK(CALL("executorch_prim::et_view.default", &tx.v, IL(sz, 4, 6), &tv.v));
    CHECK(tv.t.storage == EMBER_STORAGE_CONSTANT);
    tx.t.storage = EMBER_STORAGE_PLANNED;

    /* et_copy_index writes row index of copy_to */
    float rows[12] = {0}, row[4] = {1, 2, 3, 4};
    tt trows, trow;
    OUT(trows, EMBER_FLOAT32, rows, 3, 4);
    IN(trow, EMBER_FLOAT32, row, 4);
    CHECK_OK(CALL("executorch_prim::et_copy_index.tensor", &trows.v, &trow.v, VP(kt_int(1))));
    CHECK(SHAPE_IS(&trows.t, 2, 4) && rows[4] == 1 && rows[7] == 4);
    CHECK_STATUS(CALL("executorch_prim::et_copy_index.tensor", &trows.v, &trow.v, VP(kt_int(3))),
                 EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Robustness: random arguments must give a status, never a crash            */
/* ------------------------------------------------------------------------ */

enum { POOL_T = 10, POOL_V = 48 };

typedef struct junk {
    tt t[POOL_T];
    uint8_t *mem[POOL_T];
    il lists[8];
    tl tlists[4];
    ember_value vals[POOL_V];
    ember_value *args[16];
} junk;

static int64_t junk_int(void) {
    static const int64_t special[] = {0,         1,         -1,      2,          3,  -2,
                                      INT64_MAX, INT64_MIN, 1 << 30, -(1 << 30), 64, 5};
    return rng_bits() % 3 == 0 ? special[rng_bits() % 12] : (int64_t)(rng_bits() % 7) - 2;
}

/* A tensor that keeps the runtime's invariants (sizes within bounds and
 * storage, strides from a valid dim order) but is otherwise random. */
static void junk_tensor(tt *x, uint8_t *mem, size_t memsize, bool coherent) {
    static const int dtypes[] = {EMBER_FLOAT32, EMBER_FLOAT32, EMBER_FLOAT32, EMBER_INT64,
                                 EMBER_INT32,   EMBER_BOOL,    EMBER_FLOAT16, EMBER_BFLOAT16,
                                 EMBER_FLOAT64, EMBER_UINT8,   EMBER_INT8,    EMBER_QINT8};
    /* coherent rounds: float32 and sizes of 1 or 2, so that the shapes of
     * several tensors often fit together and kernels run to the end */
    uint32_t pick = rng_bits() % 8;
    int dt = !coherent   ? dtypes[rng_bits() % 12]
             : pick < 6  ? EMBER_FLOAT32
             : pick == 6 ? EMBER_INT64
                         : dtypes[rng_bits() % 12];
    size_t dim = coherent ? 1 + rng_bits() % 4 : rng_bits() % 5;
    int32_t sizes[4];
    uint8_t order[4] = {0, 1, 2, 3};
    for (size_t i = 0; i < dim; i++)
        sizes[i] = (int32_t)(coherent ? 1 + rng_bits() % 2 : rng_bits() % 5);
    if (!coherent && rng_bits() % 4 == 0 && dim > 1) { /* a random dim order */
        for (size_t i = dim - 1; i > 0; i--) {
            size_t j = rng_bits() % (i + 1);
            uint8_t tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
    }
    bool dynamic = rng_bits() % 2 == 0;
    tt_make(x, dt, sizes, dim, mem, memsize, dynamic, order);
    if (dynamic) /* start below the bounds */
        for (size_t i = 0; i < dim; i++)
            x->sizes[i] = (int32_t)(rng_bits() % (uint32_t)(x->bounds[i] + 1));
    int64_t n = 1;
    for (size_t i = 0; i < dim; i++) n *= x->sizes[i];
    x->t.numel = n;
    x->t.nbytes = (size_t)n * ember_dtype_size(dt);
    ember_tensor_compute_strides(&x->t);
    x->t.storage = rng_bits() % 8 == 0 ? EMBER_STORAGE_CONSTANT : EMBER_STORAGE_PLANNED;
    for (size_t i = 0; i < memsize; i++) mem[i] = (uint8_t)rng_bits();
}

/* Kinds of argument the random test can make; K_ANY picks one at random. */
enum {
    K_ANY,
    K_TENSOR,
    K_INT,
    K_SMALL,
    K_BOOL,
    K_DOUBLE,
    K_NONE,
    K_STR,
    K_LIST,
    K_TLIST,
    K_OTLIST,
    K_COUNT
};

static ember_value *junk_value(junk *j, int kind) {
    if (kind == K_ANY) kind = 1 + (int)(rng_bits() % (K_COUNT - 1));
    ember_value *v = &j->vals[rng_bits() % POOL_V];
    switch (kind) {
    case K_TENSOR: return &j->t[rng_bits() % POOL_T].v;
    case K_INT: *v = kt_int(junk_int()); return v;
    case K_SMALL: *v = kt_int((int64_t)(rng_bits() % 4) - (rng_bits() % 8 == 0)); return v;
    case K_BOOL: *v = kt_bool(rng_bits() % 2); return v;
    case K_DOUBLE: *v = kt_double(rng_bits() % 7 == 0 ? NAN : (double)junk_int() * 0.5); return v;
    case K_NONE: *v = kt_none(); return v;
    case K_STR: {
        static const char *strs[] = {"none", "tanh", "floor", "trunc", "", "x"};
        *v = kt_str(strs[rng_bits() % 6]);
        return v;
    }
    case K_LIST: {
        il *l = &j->lists[rng_bits() % 8];
        int64_t items[5];
        size_t n = rng_bits() % 6;
        for (size_t i = 0; i < n; i++)
            items[i] = rng_bits() % 4 == 0 ? junk_int() : (int64_t)(rng_bits() % 4);
        return il_init(l, items, n);
    }
    default: {
        tl *l = &j->tlists[rng_bits() % 4];
        tt *xs[4];
        size_t n = rng_bits() % 4;
        for (size_t i = 0; i < n; i++)
            xs[i] = rng_bits() % 6 == 0 && kind == K_OTLIST ? NULL : &j->t[rng_bits() % POOL_T];
        return tl_init(l, xs, n, kind == K_OTLIST);
    }
    }
}

/* What a kernel told us about its layout: argument count and kinds. */
typedef struct learned {
    size_t nargs; /* 0: unknown */
    uint8_t kind[16];
} learned;

/* Reads "expected N arguments" / "argument K: expected X" from the last
 * error to fix the layout of the next calls. */
static void learn(learned *l, const char *msg) {
    unsigned a, b;
    const char *p;
    if ((p = strstr(msg, "expected ")) != NULL &&
        sscanf(p, "expected %u or %u arguments", &a, &b) == 2 && a <= 16 && b <= 16) {
        l->nargs = (rng_bits() % 2) ? a : b;
        return;
    }
    if (p != NULL && sscanf(p, "expected %u arguments", &a) == 1 && a <= 16) {
        l->nargs = a;
        return;
    }
    if ((p = strstr(msg, "argument ")) != NULL && sscanf(p, "argument %u:", &a) == 1 && a < 16) {
        /* the more specific texts first ("TensorList" before "Tensor") */
        static const struct {
            const char *text;
            int kind;
        } map[] = {
            {"expected TensorList", K_TLIST}, {"list of Tensor?", K_OTLIST},
            {"expected IntList", K_LIST},     {"ScalarType", K_NONE},
            {"MemoryFormat", K_NONE},         {"expected Scalar", K_DOUBLE},
            {"expected Tensor", K_TENSOR},    {"not a tensor", K_TENSOR},
            {"expected Int", K_SMALL},        {"expected Bool", K_BOOL},
            {"expected Double", K_DOUBLE},    {"expected String", K_STR},
        };
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strstr(p, map[i].text) != NULL) {
                l->kind[a] = (uint8_t)map[i].kind;
                return;
            }
    }
    if ((p = strstr(msg, "result value ")) != NULL && sscanf(p, "result value %u", &a) == 1 &&
        a < 16)
        l->kind[a] = K_SMALL;
}

static void test_robustness(void) {
    check_section("robustness: random arguments");
    static junk j;
    static learned layout[512];
    static uint8_t mem[POOL_T][4 * 4 * 4 * 4 * 8];
    size_t nk = ember_portable_kernel_count();
    if (nk > 512) nk = 512;
    size_t calls = 0, ok = 0, kernels_ok = 0;
    static size_t ok_by_kernel[512];
    for (int round = 0; round < 3000; round++) {
        for (int i = 0; i < POOL_T; i++)
            junk_tensor(&j.t[i], mem[i], sizeof mem[i], round % 2 == 1);
        for (size_t k = 0; k < nk; k++) {
            const ember_kernel *kern = ember_portable_kernel_at(k);
            learned *l = &layout[k];
            size_t nargs = l->nargs != 0 ? l->nargs : 1 + rng_bits() % 12;
            for (size_t a = 0; a < nargs; a++) {
                /* mostly the learned kind; sometimes anything, to test the checks */
                int kind = rng_bits() % 32 == 0 ? K_ANY : l->kind[a];
                j.args[a] = junk_value(&j, kind);
            }
            ember_arena_reset(&g_arena);
            ember_clear_error();
            ember_status st = kern->fn(&g_ctx, j.args, nargs);
            calls++;
            if (st == EMBER_OK) {
                ok++;
                ok_by_kernel[k]++;
            } else if (ember_last_error()[0] == '\0') {
                CHECK_MSG(false, "%s failed without a message", kern->name);
            } else {
                learn(l, ember_last_error());
            }
        }
    }
    for (size_t k = 0; k < nk; k++) {
        kernels_ok += ok_by_kernel[k] > 0;
        if (getenv("EK_VERBOSE") != NULL && ok_by_kernel[k] == 0)
            printf("    never succeeded: %s\n", ember_portable_kernel_at(k)->name);
    }
    printf("  %zu random calls, %zu succeeded; %zu of %zu kernels reached success\n", calls, ok,
           kernels_ok, nk);
    CHECK(calls > 0);
}

int main(void) {
    kc_init();
    rng_seed(12345);

    test_registry();
    test_add();
    test_add_layouts();
    test_arith();
    test_compare_logic();
    test_unary();
    test_matmul();
    test_softmax();
    test_norms();
    test_conv();
    test_pool();
    test_reduce();
    test_shape_ops();
    test_join_split();
    test_copies();
    test_creation();
    test_indexing();
    test_more_ops();
    test_prim();
    test_robustness();
    return check_finish();
}
