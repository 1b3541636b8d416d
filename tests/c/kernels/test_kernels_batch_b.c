/*
 * test_kernels_batch_b.c — unit tests of the portable kernels for scatter
 * (scatter, scatter_add, scatter_reduce, slice/select/masked_scatter), views
 * as copies (as_strided_copy, diagonal_copy), reflection and replication
 * padding, 3-d pooling, training-mode batch norm, cdist / pdist,
 * grid_sampler_2d, col2im and _embedding_bag.
 *
 * Tensors are built by hand over arrays owned by each test and kernels are
 * called through the portable table by key. Expected values are worked out
 * by hand (or by a plain loop in the test). Every error case (bad index,
 * bad shape, output too small, wrong dtype, bad argument) expects a clean
 * status, a message naming the problem, and no out-of-bounds access (the
 * sanitizer build runs this file too).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#define KC_SCRATCH_BYTES (1 << 14)
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* scatter, scatter_add, scatter_reduce                                      */
/* ------------------------------------------------------------------------ */

static void test_scatter(void) {
    check_section("scatter.src, scatter.value, scatter_add");
    tt s, i, src, o;
    float x[6] = {0}, sv[4] = {1, 2, 3, 4}, y[6];
    int64_t idx[4] = {0, 2, 1, 0};
    IN(s, EMBER_FLOAT32, x, 2, 3);
    IN(i, EMBER_INT64, idx, 2, 2);
    IN(src, EMBER_FLOAT32, sv, 2, 2);
    OUT(o, EMBER_FLOAT32, y, 2, 3);
    CHECK_OK(CALL("aten::scatter.src_out", &s.v, v_int(1), &i.v, &src.v, &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 3) && NEAR(y, 1, 0, 2, 4, 3, 0));
    /* value 7 at row p, column idx[p][q] */
    CHECK_OK(CALL("aten::scatter.value_out", &s.v, v_int(1), &i.v, v_dbl(7), &o.v, &o.v));
    CHECK(NEAR(y, 7, 0, 7, 7, 7, 0));

    /* int8 scatter_add wraps: 1 + 3 * 100 = 301 = 45 (mod 256) */
    int8_t xi[3] = {1, 1, 1}, si[3] = {100, 100, 100}, yi[3];
    int64_t zeros[3] = {0, 0, 0};
    tt s8, i8, src8, o8;
    IN(s8, EMBER_INT8, xi, 3);
    IN(i8, EMBER_INT64, zeros, 3);
    IN(src8, EMBER_INT8, si, 3);
    OUT(o8, EMBER_INT8, yi, 3);
    CHECK_OK(CALL("aten::scatter_add.out", &s8.v, v_int(0), &i8.v, &src8.v, &o8.v, &o8.v));
    CHECK(yi[0] == 45 && yi[1] == 1 && yi[2] == 1);

    /* self in a transposed layout (dim order 1, 0): logical values unchanged */
    float xt[6] = {10, 40, 20, 50, 30, 60}; /* logical [[10,20,30],[40,50,60]] */
    tt st;
    tt_init(&st, EMBER_FLOAT32, DIMS(2, 3), xt, sizeof xt, false, (const uint8_t[]){1, 0});
    CHECK_OK(CALL("aten::scatter.src_out", &st.v, v_int(1), &i.v, &src.v, &o.v, &o.v));
    CHECK(NEAR(y, 1, 20, 2, 4, 3, 60));

    /* 0-dim self, index and src */
    float x0 = 5, s0 = 9, y0 = 0;
    int64_t i0 = 0;
    tt t0, ti0, ts0, to0;
    tt_init(&t0, EMBER_FLOAT32, NULL, 0, &x0, sizeof x0, false, NULL);
    tt_init(&ti0, EMBER_INT64, NULL, 0, &i0, sizeof i0, false, NULL);
    tt_init(&ts0, EMBER_FLOAT32, NULL, 0, &s0, sizeof s0, false, NULL);
    tt_init(&to0, EMBER_FLOAT32, NULL, 0, &y0, sizeof y0, true, NULL);
    CHECK_OK(CALL("aten::scatter_add.out", &t0.v, v_int(-1), &ti0.v, &ts0.v, &to0.v, &to0.v));
    CHECK(y0 == 14);

    /* errors */
    int64_t bad[4] = {0, 3, 1, 0}, neg[4] = {0, -1, 1, 0};
    tt ib;
    IN(ib, EMBER_INT64, bad, 2, 2);
    CHECK_ERR(CALL("aten::scatter.src_out", &s.v, v_int(1), &ib.v, &src.v, &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 3 out of range");
    IN(ib, EMBER_INT64, neg, 2, 2);
    CHECK_ERR(CALL("aten::scatter_add.out", &s.v, v_int(1), &ib.v, &src.v, &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index -1 out of range");
    int16_t idx16[4] = {0};
    IN(ib, EMBER_INT16, idx16, 2, 2);
    CHECK_ERR(CALL("aten::scatter.src_out", &s.v, v_int(1), &ib.v, &src.v, &o.v, &o.v),
              EMBER_ERR_TYPE_MISMATCH, "int64 or int32");
    int64_t idx3[3] = {0, 1, 2};
    IN(ib, EMBER_INT64, idx3, 3);
    CHECK_ERR(CALL("aten::scatter.src_out", &s.v, v_int(1), &ib.v, &src.v, &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "same rank");
    int64_t idx23[6] = {0};
    IN(ib, EMBER_INT64, idx23, 2, 3);
    CHECK_ERR(CALL("aten::scatter.src_out", &s.v, v_int(1), &ib.v, &src.v, &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "exceeds src size");
    int64_t idx31[3] = {0};
    IN(ib, EMBER_INT64, idx31, 3, 1);
    CHECK_ERR(CALL("aten::scatter.value_out", &s.v, v_int(1), &ib.v, v_int(1), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "exceeds self size");
    CHECK_STATUS(CALL("aten::scatter.src_out", &s.v, v_int(2), &i.v, &src.v, &o.v, &o.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    double sd[4] = {0};
    tt srcd;
    IN(srcd, EMBER_FLOAT64, sd, 2, 2);
    CHECK_ERR(CALL("aten::scatter.src_out", &s.v, v_int(1), &i.v, &srcd.v, &o.v, &o.v),
              EMBER_ERR_TYPE_MISMATCH, "self and src");
    float small[4];
    tt os;
    OUT(os, EMBER_FLOAT32, small, 2, 2);
    CHECK_STATUS(CALL("aten::scatter.src_out", &s.v, v_int(1), &i.v, &src.v, &os.v, &os.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL("aten::scatter.src_out", &s.v, v_int(1), &i.v, &src.v, &src.v, &src.v),
                 EMBER_ERR_INVALID_PROGRAM); /* out aliases src */
    CHECK_STATUS(CALL("aten::scatter.src_out", &s.v, v_int(1), &i.v, &src.v, &o.v),
                 EMBER_ERR_INVALID_PROGRAM); /* argument count */
}

static void test_scatter_reduce(void) {
    check_section("scatter_reduce.two");
    /* x = [0, 0, 0], index = [0, 0, 1, 1, 1], src = [-3, -4, 5, 1, 1] */
    int64_t x[3] = {0, 0, 0}, src[5] = {-3, -4, 5, 1, 1}, y[3];
    int64_t idx[5] = {0, 0, 1, 1, 1};
    tt s, i, sr, o;
    IN(s, EMBER_INT64, x, 3);
    IN(i, EMBER_INT64, idx, 5);
    IN(sr, EMBER_INT64, src, 5);
    OUT(o, EMBER_INT64, y, 3);
    /* integer means round toward -inf: -7/3 -> -3, 7/4 -> 1; without self -7/2 -> -4, 7/3 -> 2 */
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("mean"),
                  v_bool(true), &o.v, &o.v));
    CHECK(EQ_I64(y, -3, 1, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("mean"),
                  v_bool(false), &o.v, &o.v));
    CHECK(EQ_I64(y, -4, 2, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("prod"),
                  v_bool(false), &o.v, &o.v));
    CHECK(EQ_I64(y, 12, 5, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("prod"),
                  v_bool(true), &o.v, &o.v));
    CHECK(EQ_I64(y, 0, 0, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("amin"),
                  v_bool(false), &o.v, &o.v));
    CHECK(EQ_I64(y, -4, 1, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("amax"),
                  v_bool(true), &o.v, &o.v));
    CHECK(EQ_I64(y, 0, 5, 0));
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("sum"),
                  v_bool(true), &o.v, &o.v));
    CHECK(EQ_I64(y, -7, 7, 0));

    /* float amax/amin propagate NaN from either side; -0.0 summed from 0 is +0.0 */
    float xf[3] = {1, 2, NAN}, sf[3] = {NAN, 0, 3}, yf[3];
    int64_t idf[3] = {0, 1, 2};
    tt fs, fi, fsr, fo;
    IN(fs, EMBER_FLOAT32, xf, 3);
    IN(fi, EMBER_INT64, idf, 3);
    IN(fsr, EMBER_FLOAT32, sf, 3);
    OUT(fo, EMBER_FLOAT32, yf, 3);
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &fs.v, v_int(0), &fi.v, &fsr.v, v_str("amax"),
                  v_bool(true), &fo.v, &fo.v));
    CHECK(isnan(yf[0]) && yf[1] == 2 && isnan(yf[2]));
    float mz[3] = {-0.0f, 1, 1};
    IN(fsr, EMBER_FLOAT32, mz, 3);
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &fs.v, v_int(0), &fi.v, &fsr.v, v_str("sum"),
                  v_bool(false), &fo.v, &fo.v));
    CHECK(yf[0] == 0 && !signbit(yf[0]) && yf[1] == 1);

    /* errors */
    CHECK_ERR(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("max"),
                   v_bool(true), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "reduce must be");
    uint8_t xb[3] = {0}, sb[5] = {1, 0, 1, 1, 0}, yb[3];
    tt bs, bsr, bo;
    IN(bs, EMBER_BOOL, xb, 3);
    IN(bsr, EMBER_BOOL, sb, 5);
    OUT(bo, EMBER_BOOL, yb, 3);
    CHECK_ERR(CALL("aten::scatter_reduce.two_out", &bs.v, v_int(0), &i.v, &bsr.v, v_str("mean"),
                   v_bool(true), &bo.v, &bo.v),
              EMBER_ERR_NOT_SUPPORTED, "bool");
    CHECK_OK(CALL("aten::scatter_reduce.two_out", &bs.v, v_int(0), &i.v, &bsr.v, v_str("sum"),
                  v_bool(true), &bo.v, &bo.v));
    CHECK(yb[0] == 1 && yb[1] == 1 && yb[2] == 0);
    int64_t far[5] = {0, 0, 1, 1, 3};
    IN(i, EMBER_INT64, far, 5);
    CHECK_ERR(CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v, v_str("mean"),
                   v_bool(false), &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 3");
    /* counts need scratch: none at all fails cleanly */
    kc_set_scratch(0);
    ember_status st = CALL("aten::scatter_reduce.two_out", &s.v, v_int(0), &i.v, &sr.v,
                           v_str("mean"), v_bool(true), &o.v, &o.v);
    CHECK_STATUS(st, EMBER_ERR_OUT_OF_MEMORY);
    kc_set_scratch(KC_SCRATCH_BYTES);
}

/* ------------------------------------------------------------------------ */
/* slice_scatter, select_scatter, masked_scatter                             */
/* ------------------------------------------------------------------------ */

static void test_slice_select_masked(void) {
    check_section("slice_scatter, select_scatter, masked_scatter");
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y[8];
    int32_t sv[4] = {10, 20, 30, 40}; /* cast to float on the way in */
    tt s, src, o;
    IN(s, EMBER_FLOAT32, x, 2, 4);
    IN(src, EMBER_INT32, sv, 2, 2);
    OUT(o, EMBER_FLOAT32, y, 2, 4);
    CHECK_OK(CALL("aten::slice_scatter.out", &s.v, &src.v, v_int(1), v_int(-3), v_none(), v_int(2),
                  &o.v, &o.v));
    CHECK(NEAR(y, 0, 10, 2, 20, 4, 30, 6, 40));
    CHECK_ERR(CALL("aten::slice_scatter.out", &s.v, &src.v, v_int(1), v_int(0), v_none(), v_int(1),
                   &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "slice_scatter: src has shape");
    CHECK_ERR(CALL("aten::slice_scatter.out", &s.v, &src.v, v_int(1), v_int(0), v_none(), v_int(0),
                   &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "step");
    float row[4] = {-1, -2, -3, -4};
    tt r;
    IN(r, EMBER_FLOAT32, row, 4);
    CHECK_OK(CALL("aten::select_scatter.out", &s.v, &r.v, v_int(0), v_int(-1), &o.v, &o.v));
    CHECK(NEAR(y, 0, 1, 2, 3, -1, -2, -3, -4));
    CHECK_ERR(CALL("aten::select_scatter.out", &s.v, &r.v, v_int(0), v_int(2), &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 2 out of range");
    CHECK_ERR(CALL("aten::select_scatter.out", &s.v, &r.v, v_int(1), v_int(0), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "select_scatter: src has shape");

    /* masked_scatter: mask (4,) broadcasts over both rows */
    uint8_t mask[4] = {1, 0, 0, 1};
    float source[6] = {100, 101, 102, 103, 104, 105};
    tt m, so;
    IN(m, EMBER_BOOL, mask, 4);
    IN(so, EMBER_FLOAT32, source, 2, 3);
    CHECK_OK(CALL("aten::masked_scatter.out", &s.v, &m.v, &so.v, &o.v, &o.v));
    CHECK(NEAR(y, 100, 1, 2, 101, 102, 5, 6, 103));
    float two[2] = {1, 2};
    IN(so, EMBER_FLOAT32, two, 2);
    CHECK_ERR(CALL("aten::masked_scatter.out", &s.v, &m.v, &so.v, &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "fewer than");
    int8_t m8[4] = {1, 0, 0, 1};
    IN(m, EMBER_INT8, m8, 4);
    CHECK_ERR(CALL("aten::masked_scatter.out", &s.v, &m.v, &so.v, &o.v, &o.v),
              EMBER_ERR_TYPE_MISMATCH, "mask must be bool");
    uint8_t m3[3] = {1, 1, 1};
    IN(m, EMBER_BOOL, m3, 3);
    CHECK_STATUS(CALL("aten::masked_scatter.out", &s.v, &m.v, &so.v, &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* as_strided_copy, diagonal_copy                                            */
/* ------------------------------------------------------------------------ */

static void test_views(void) {
    check_section("as_strided_copy, diagonal_copy");
    float x[12], y[12];
    for (int k = 0; k < 12; k++) x[k] = (float)k;
    tt s, o;
    IN(s, EMBER_FLOAT32, x, 3, 4);
    OUT(o, EMBER_FLOAT32, y, 12);
    tt_init(&o, EMBER_FLOAT32, DIMS(3, 4), y, sizeof y, true, NULL);
    CHECK_OK(CALL("aten::as_strided_copy.out", &s.v, INTS(2, 3), INTS(1, 3), v_int(2), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 3) && NEAR(y, 2, 5, 8, 3, 6, 9));
    CHECK_ERR(CALL("aten::as_strided_copy.out", &s.v, INTS(2, 3), INTS(1, 5), v_int(2), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "reaches element 13");
    CHECK_ERR(
        CALL("aten::as_strided_copy.out", &s.v, INTS(2, 3), INTS(-1, 3), v_none(), &o.v, &o.v),
        EMBER_ERR_INVALID_ARGUMENT, "negative");
    CHECK_ERR(CALL("aten::as_strided_copy.out", &s.v, INTS(2, 3), INTS(1), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "strides");
    CHECK_ERR(CALL("aten::as_strided_copy.out", &s.v, INTS(5, 3), INTS(INT64_MAX, 1), v_none(),
                   &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "overflows");
    CHECK_OK(CALL("aten::as_strided_copy.out", &s.v, INTS(0, 3), INTS(1000, 1000), v_int(99), &o.v,
                  &o.v)); /* empty: never reads */
    CHECK(SHAPE_IS(&o.t, 0, 3));

    tt_init(&o, EMBER_FLOAT32, DIMS(4), y, sizeof y, true, NULL);
    CHECK_OK(CALL("aten::diagonal_copy.out", &s.v, v_int(1), v_int(0), v_int(1), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 3) && NEAR(y, 1, 6, 11));
    CHECK_OK(CALL("aten::diagonal_copy.out", &s.v, v_int(-1), v_int(1), v_int(0), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 3) && NEAR(y, 1, 6, 11)); /* swapped dims: the same elements */
    CHECK_OK(CALL("aten::diagonal_copy.out", &s.v, v_int(-2), v_int(0), v_int(1), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1) && NEAR(y, 8));
    CHECK_OK(CALL("aten::diagonal_copy.out", &s.v, v_int(INT64_MAX), v_int(0), v_int(1), &o.v,
                  &o.v));
    CHECK(SHAPE_IS(&o.t, 0));
    CHECK_OK(CALL("aten::diagonal_copy.out", &s.v, v_int(INT64_MIN), v_int(0), v_int(1), &o.v,
                  &o.v));
    CHECK(SHAPE_IS(&o.t, 0));
    CHECK_ERR(CALL("aten::diagonal_copy.out", &s.v, v_int(0), v_int(1), v_int(-1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "dim1 and dim2");
    tt v1;
    IN(v1, EMBER_FLOAT32, x, 12);
    CHECK_ERR(CALL("aten::diagonal_copy.out", &v1.v, v_int(0), v_int(0), v_int(1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "at least 2 dims");
}

/* ------------------------------------------------------------------------ */
/* reflection and replication padding                                        */
/* ------------------------------------------------------------------------ */

static void test_pad(void) {
    check_section("reflection_pad, replication_pad");
    int16_t x[3] = {1, 2, 3}, y[16];
    tt s, o;
    IN(s, EMBER_INT16, x, 1, 3);
    OUT(o, EMBER_INT16, y, 1, 16);
    CHECK_OK(CALL("aten::reflection_pad1d.out", &s.v, INTS(2, 1), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 6) && y[0] == 3 && y[1] == 2 && y[2] == 1 && y[3] == 2 &&
          y[4] == 3 && y[5] == 2);
    CHECK_OK(CALL("aten::replication_pad1d.out", &s.v, INTS(2, -1), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 4) && y[0] == 1 && y[1] == 1 && y[2] == 1 && y[3] == 2);
    CHECK_ERR(CALL("aten::reflection_pad1d.out", &s.v, INTS(3, 0), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "smaller than dim");
    CHECK_ERR(CALL("aten::replication_pad1d.out", &s.v, INTS(1, 1, 1, 1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "padding must have 2 values");
    CHECK_ERR(CALL("aten::replication_pad1d.out", &s.v, INTS(-2, -2), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "would have size");
    CHECK_ERR(CALL("aten::replication_pad1d.out", &s.v, INTS(20, 0), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "cannot resize"); /* out too small */

    /* 2-d, (C, H, W) = (1, 2, 3): replicate by (1, 0, 0, 1) */
    float xf[6] = {1, 2, 3, 4, 5, 6}, yf[16];
    tt sf, of;
    IN(sf, EMBER_FLOAT32, xf, 1, 2, 3);
    OUT(of, EMBER_FLOAT32, yf, 1, 4, 4);
    CHECK_OK(CALL("aten::replication_pad2d.out", &sf.v, INTS(1, 0, 0, 1), &of.v, &of.v));
    CHECK(SHAPE_IS(&of.t, 1, 3, 4) && NEAR(yf, 1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6));
    CHECK_OK(CALL("aten::reflection_pad2d.out", &sf.v, INTS(0, 0, 1, 1), &of.v, &of.v));
    CHECK(SHAPE_IS(&of.t, 1, 4, 3) && NEAR(yf, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3));
    CHECK_ERR(CALL("aten::reflection_pad3d.out", &sf.v, INTS(0, 0, 0, 0, 0, 0), &of.v, &of.v),
              EMBER_ERR_SHAPE_MISMATCH, "expected a 4-d or 5-d input");
    tt e;
    float none[1];
    tt_init(&e, EMBER_FLOAT32, DIMS(1, 0, 3), none, sizeof none, false, NULL);
    CHECK_ERR(CALL("aten::replication_pad2d.out", &e.v, INTS(1, 1, 1, 1), &of.v, &of.v),
              EMBER_ERR_SHAPE_MISMATCH, "is empty");

    /* 3-d: (C, D, H, W) = (1, 2, 1, 2), reflect depth by (1, 0) */
    float x3[4] = {1, 2, 3, 4}, y3[8];
    tt s3, o3;
    IN(s3, EMBER_FLOAT32, x3, 1, 2, 1, 2);
    OUT(o3, EMBER_FLOAT32, y3, 1, 3, 1, 2);
    CHECK_OK(CALL("aten::reflection_pad3d.out", &s3.v, INTS(0, 0, 0, 0, 1, 0), &o3.v, &o3.v));
    CHECK(NEAR(y3, 3, 4, 1, 2, 3, 4));
    CHECK_OK(CALL("aten::replication_pad3d.out", &s3.v, INTS(0, 0, 0, 0, 0, 1), &o3.v, &o3.v));
    CHECK(NEAR(y3, 1, 2, 3, 4, 3, 4));
}

/* ------------------------------------------------------------------------ */
/* 1-d pooling                                                               */
/* ------------------------------------------------------------------------ */

static void test_pool1d(void) {
    check_section("avg_pool1d, adaptive_avg_pool1d");
    /* (1, 2, 5): rows 0..4 and 5..9 */
    float x[10], y[10];
    for (int k = 0; k < 10; k++) x[k] = (float)k;
    tt s, o;
    IN(s, EMBER_FLOAT32, x, 1, 2, 5);
    OUT(o, EMBER_FLOAT32, y, 1, 2, 5);
    /* kernel 2, stride 2, padding 1, count_include_pad: windows [-1,1) [1,3) [3,5) */
    CHECK_OK(CALL("aten::avg_pool1d.out", &s.v, INTS(2), INTS(2), INTS(1), v_bool(false),
                  v_bool(true), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 2, 3));
    CHECK(NEAR(y, 0 / 2.0f, (1 + 2) / 2.0f, (3 + 4) / 2.0f, 5 / 2.0f, (6 + 7) / 2.0f,
               (8 + 9) / 2.0f));
    CHECK_OK(CALL("aten::avg_pool1d.out", &s.v, INTS(2), INTS(2), INTS(1), v_bool(false),
                  v_bool(false), &o.v, &o.v));
    CHECK(NEAR(y, 0.0f, 1.5f, 3.5f, 5.0f, 6.5f, 8.5f));
    /* adaptive 5 -> 2: cells [0, 3) and [2, 5) */
    CHECK_OK(CALL("aten::adaptive_avg_pool1d.out", &s.v, INTS(2), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 2, 2));
    CHECK(NEAR(y, 1.0f, 3.0f, 6.0f, 8.0f));
    /* errors: padding above half the kernel, a 4-d input, an empty output size */
    CHECK_ERR(CALL("aten::avg_pool1d.out", &s.v, INTS(2), INTS(1), INTS(2), v_bool(false),
                   v_bool(true), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "padding");
    tt s4;
    IN(s4, EMBER_FLOAT32, x, 1, 1, 2, 5);
    CHECK_ERR(CALL("aten::avg_pool1d.out", &s4.v, INTS(2), INTS(2), INTS(0), v_bool(false),
                   v_bool(true), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "expected a 2-d or 3-d input");
    CHECK_ERR(CALL("aten::adaptive_avg_pool1d.out", &s.v, INTS(2, 2), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "output_size");
}

/* ------------------------------------------------------------------------ */
/* 3-d pooling                                                               */
/* ------------------------------------------------------------------------ */

static void test_pool3d(void) {
    check_section("avg_pool3d, max_pool3d_with_indices, _adaptive_avg_pool3d");
    /* (1, 1, 2, 2, 3): values 0..11 */
    float x[12], y[12];
    int64_t ind[12];
    for (int k = 0; k < 12; k++) x[k] = (float)k;
    tt s, o, oi, list;
    IN(s, EMBER_FLOAT32, x, 1, 1, 2, 2, 3);
    OUT(o, EMBER_FLOAT32, y, 1, 1, 2, 2, 3);
    OUT(oi, EMBER_INT64, ind, 1, 1, 2, 2, 3);
    memset(&list, 0, sizeof list);
    list.v.tag = EMBER_TAG_NONE; /* the trailing TensorList is not read */
    CHECK_OK(CALL("aten::max_pool3d_with_indices.out", &s.v, INTS(2, 2, 2), INTS0(), INTS(0),
                  INTS(1), v_bool(false), &o.v, &oi.v, &list.v));
    CHECK(SHAPE_IS(&o.t, 1, 1, 1, 1, 1) && y[0] == 10 && ind[0] == 10);
    x[4] = NAN;
    CHECK_OK(CALL("aten::max_pool3d_with_indices.out", &s.v, INTS(2, 2, 2), INTS(1), INTS(0),
                  INTS(1), v_bool(false), &o.v, &oi.v, &list.v));
    CHECK(SHAPE_IS(&o.t, 1, 1, 1, 1, 2) && isnan(y[0]) && ind[0] == 4 && isnan(y[1]) &&
          ind[1] == 4);
    x[4] = 4;
    /* avg, kernel (1, 2, 2) stride 1 padding (0, 1, 0), count_include_pad on and off */
    float ya[18];
    tt oa;
    OUT(oa, EMBER_FLOAT32, ya, 1, 1, 2, 3, 3);
    CHECK_OK(CALL("aten::avg_pool3d.out", &s.v, INTS(1, 2, 2), INTS(1), INTS(0, 1, 0),
                  v_bool(false), v_bool(true), v_none(), &oa.v, &oa.v));
    CHECK(SHAPE_IS(&oa.t, 1, 1, 2, 3, 2));
    CHECK(NEAR(ya, (0 + 1) / 4.0f, (1 + 2) / 4.0f, (0 + 1 + 3 + 4) / 4.0f));
    CHECK_OK(CALL("aten::avg_pool3d.out", &s.v, INTS(1, 2, 2), INTS(1), INTS(0, 1, 0),
                  v_bool(false), v_bool(false), v_none(), &oa.v, &oa.v));
    CHECK(NEAR(ya, (0 + 1) / 2.0f, (1 + 2) / 2.0f, (0 + 1 + 3 + 4) / 4.0f));
    CHECK_OK(CALL("aten::avg_pool3d.out", &s.v, INTS(1, 2, 2), INTS(1), INTS(0, 1, 0),
                  v_bool(false), v_bool(false), v_int(-2), &oa.v, &oa.v));
    CHECK(NEAR(ya, (0 + 1) / -2.0f, (1 + 2) / -2.0f, (0 + 1 + 3 + 4) / -2.0f));
    /* int64 means truncate toward zero */
    int64_t xi[4] = {-3, 0, 0, 0}, yi[4];
    tt si, so;
    IN(si, EMBER_INT64, xi, 1, 1, 1, 2, 2);
    OUT(so, EMBER_INT64, yi, 1, 1, 1, 1, 1);
    CHECK_OK(CALL("aten::avg_pool3d.out", &si.v, INTS(1, 2, 2), INTS0(), INTS(0), v_bool(false),
                  v_bool(true), v_none(), &so.v, &so.v));
    CHECK(yi[0] == 0);
    xi[1] = -3;
    CHECK_OK(CALL("aten::avg_pool3d.out", &si.v, INTS(1, 2, 2), INTS0(), INTS(0), v_bool(false),
                  v_bool(true), v_none(), &so.v, &so.v));
    CHECK(yi[0] == -1);
    /* adaptive 2x2x3 -> 1x2x2: rows [0,1) and [1,2); cols [0,2) and [1,3) */
    CHECK_OK(CALL("aten::_adaptive_avg_pool3d.out", &s.v, INTS(1, 2, 2), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 1, 1, 2, 2));
    CHECK(NEAR(y, (0 + 1 + 6 + 7) / 4.0f, (1 + 2 + 7 + 8) / 4.0f, (3 + 4 + 9 + 10) / 4.0f,
               (4 + 5 + 10 + 11) / 4.0f));

    /* channels-last (dim order 0, 2, 3, 4, 1) in and out give the same logical values */
    float xc[24], xl[24], yc[16], yl[16];
    int64_t ic[16], il_[16];
    const uint8_t cl[5] = {0, 2, 3, 4, 1};
    tt c_in, l_in, c_out, l_out, c_ind, l_ind;
    tt_init(&c_in, EMBER_FLOAT32, DIMS(1, 2, 2, 2, 3), xc, sizeof xc, false, NULL);
    tt_init(&l_in, EMBER_FLOAT32, DIMS(1, 2, 2, 2, 3), xl, sizeof xl, false, cl);
    for (int c = 0; c < 2; c++)
        for (int v = 0; v < 12; v++) { /* v = (d * 2 + h) * 3 + w */
            xc[c * 12 + v] = (float)((v * 7 + c * 5) % 11);
            xl[v * 2 + c] = xc[c * 12 + v];
        }
    tt_init(&c_out, EMBER_FLOAT32, DIMS(1, 2, 2, 2, 4), yc, sizeof yc, true, NULL);
    tt_init(&l_out, EMBER_FLOAT32, DIMS(1, 2, 2, 2, 4), yl, sizeof yl, true, cl);
    tt_init(&c_ind, EMBER_INT64, DIMS(1, 2, 2, 2, 4), ic, sizeof ic, true, NULL);
    tt_init(&l_ind, EMBER_INT64, DIMS(1, 2, 2, 2, 4), il_, sizeof il_, true, cl);
    CHECK_OK(CALL("aten::max_pool3d_with_indices.out", &c_in.v, INTS(1, 2, 2), INTS(1),
                  INTS(0, 0, 1), INTS(1), v_bool(false), &c_out.v, &c_ind.v, &list.v));
    CHECK_OK(CALL("aten::max_pool3d_with_indices.out", &l_in.v, INTS(1, 2, 2), INTS(1),
                  INTS(0, 0, 1), INTS(1), v_bool(false), &l_out.v, &l_ind.v, &list.v));
    bool same = SHAPE_IS(&l_out.t, 1, 2, 2, 1, 4); /* 8 outputs per channel */
    for (int c = 0; c < 2; c++)
        for (int v = 0; v < 8; v++)
            same = same && yl[v * 2 + c] == yc[c * 8 + v] && il_[v * 2 + c] == ic[c * 8 + v];
    CHECK(same);
    CHECK_OK(CALL("aten::avg_pool3d.out", &c_in.v, INTS(2, 1, 2), INTS(1), INTS(0, 0, 1),
                  v_bool(false), v_bool(false), v_none(), &c_out.v, &c_out.v));
    CHECK_OK(CALL("aten::avg_pool3d.out", &l_in.v, INTS(2, 1, 2), INTS(1), INTS(0, 0, 1),
                  v_bool(false), v_bool(false), v_none(), &l_out.v, &l_out.v));
    same = SHAPE_IS(&l_out.t, 1, 2, 1, 2, 4);
    for (int c = 0; c < 2; c++)
        for (int v = 0; v < 8; v++) same = same && yl[v * 2 + c] == yc[c * 8 + v];
    CHECK(same);

    /* errors */
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s.v, INTS(2, 2, 2), INTS(1), INTS(2), v_bool(false),
                   v_bool(true), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "padding must be at most half");
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s.v, INTS(2, 2), INTS(1), INTS(0), v_bool(false),
                   v_bool(true), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "kernel_size must have 1 or 3");
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s.v, INTS(1 << 20, 1 << 20, 1), INTS(1), INTS(0),
                   v_bool(false), v_bool(true), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "kernel volume");
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s.v, INTS(3, 1, 1), INTS(1), INTS(0), v_bool(false),
                   v_bool(true), v_none(), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "too small");
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s.v, INTS(1), INTS(1), INTS(0), v_bool(false),
                   v_bool(true), v_int(0), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "divisor");
    int32_t xi32[12] = {0};
    tt s32;
    IN(s32, EMBER_INT32, xi32, 1, 1, 2, 2, 3);
    CHECK_ERR(CALL("aten::avg_pool3d.out", &s32.v, INTS(1), INTS(1), INTS(0), v_bool(false),
                   v_bool(true), v_none(), &o.v, &o.v),
              EMBER_ERR_NOT_SUPPORTED, "int32");
    CHECK_ERR(CALL("aten::max_pool3d_with_indices.out", &s.v, INTS(2), INTS0(), INTS(0), INTS(1),
                   v_bool(false), &o.v, &o.v, &list.v),
              EMBER_ERR_TYPE_MISMATCH, "indices must be int64");
    tt s2;
    IN(s2, EMBER_FLOAT32, x, 1, 3, 4);
    CHECK_ERR(CALL("aten::_adaptive_avg_pool3d.out", &s2.v, INTS(1, 1, 1), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "4-d or 5-d");
    CHECK_ERR(CALL("aten::_adaptive_avg_pool3d.out", &s.v, INTS(1, -1, 1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "out of range");
    float tiny[1];
    tt ot;
    OUT(ot, EMBER_FLOAT32, tiny, 1, 1, 1, 1, 1);
    CHECK_STATUS(CALL("aten::_adaptive_avg_pool3d.out", &s.v, INTS(2, 2, 2), &ot.v, &ot.v),
                 EMBER_ERR_SHAPE_MISMATCH); /* out too small */
}

/* ------------------------------------------------------------------------ */
/* batch norm (training)                                                     */
/* ------------------------------------------------------------------------ */

static void test_batch_norm(void) {
    check_section("_native_batch_norm_legit");
    /* (N, C, L) = (2, 2, 2): channel 0 holds 1, 2, 3, 4; channel 1 holds 5, 5, 5, 5 */
    float x[8] = {1, 2, 5, 5, 3, 4, 5, 5}, y[8], sm[2], si[2];
    float w[2] = {2, 1}, b[2] = {0, 1}, rm[2] = {0, 0}, rv[2] = {1, 1};
    tt s, tw, tb, trm, trv, o, osm, osi, list;
    IN(s, EMBER_FLOAT32, x, 2, 2, 2);
    IN(tw, EMBER_FLOAT32, w, 2);
    IN(tb, EMBER_FLOAT32, b, 2);
    IN(trm, EMBER_FLOAT32, rm, 2);
    IN(trv, EMBER_FLOAT32, rv, 2);
    OUT(o, EMBER_FLOAT32, y, 2, 2, 2);
    OUT(osm, EMBER_FLOAT32, sm, 2);
    OUT(osi, EMBER_FLOAT32, si, 2);
    memset(&list, 0, sizeof list);
    list.v.tag = EMBER_TAG_NONE;
    CHECK_OK(CALL("aten::_native_batch_norm_legit.out", &s.v, &tw.v, &tb.v, &trm.v, &trv.v,
                  v_bool(true), v_dbl(0.5), v_dbl(0.0), &o.v, &osm.v, &osi.v, &list.v));
    /* channel 0: mean 2.5, biased var 1.25, unbiased 5/3; channel 1: mean 5, var 0 */
    float inv0 = 1.0f / sqrtf(1.25f);
    CHECK(NEAR(sm, 2.5f, 5.0f) && close_f(&si[0], &inv0, 1, 1e-6f) && isinf(si[1]));
    CHECK(NEAR(rm, 1.25f, 2.5f) && NEAR(rv, 0.5f + 0.5f * 5.0f / 3.0f, 0.5f));
    CHECK(NEAR(y, 2 * -1.5f * inv0, 2 * -0.5f * inv0));
    /* not training: the running statistics normalize; the saved ones are empty */
    float rm2[2] = {1, 5}, rv2[2] = {4, 1};
    IN(trm, EMBER_FLOAT32, rm2, 2);
    IN(trv, EMBER_FLOAT32, rv2, 2);
    CHECK_OK(CALL("aten::_native_batch_norm_legit.out", &s.v, &tw.v, &tb.v, &trm.v, &trv.v,
                  v_bool(false), v_dbl(0.5), v_dbl(0.0), &o.v, &osm.v, &osi.v, &list.v));
    CHECK(SHAPE_IS(&osm.t, 0) && SHAPE_IS(&osi.t, 0));
    CHECK(NEAR(y, 0, 1, 1, 1, 2, 3, 1, 1) && rm2[0] == 1 && rv2[0] == 4);
    /* no_stats: training only */
    OUT(osm, EMBER_FLOAT32, sm, 2);
    OUT(osi, EMBER_FLOAT32, si, 2);
    CHECK_OK(CALL("aten::_native_batch_norm_legit.no_stats_out", &s.v, v_none(), v_none(),
                  v_bool(true), v_dbl(0.1), v_dbl(1e-5), &o.v, &osm.v, &osi.v, &list.v));
    CHECK(NEAR(sm, 2.5f, 5.0f) && fabsf(si[1] - 1.0f / sqrtf(1e-5f)) < 1.0f);
    CHECK_ERR(CALL("aten::_native_batch_norm_legit.no_stats_out", &s.v, v_none(), v_none(),
                   v_bool(false), v_dbl(0.1), v_dbl(1e-5), &o.v, &osm.v, &osi.v, &list.v),
              EMBER_ERR_INVALID_ARGUMENT, "running statistics");
    /* channels-last (N, C, H, W) = (2, 3, 1, 2), contiguous out: same values as contiguous */
    float xc[12], xl[12], yc[12], yl[12], m3[3], i3[3];
    const uint8_t cl[4] = {0, 2, 3, 1};
    for (int k = 0; k < 12; k++) xc[k] = (float)((k * 5) % 7) - 2.0f;
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int v = 0; v < 2; v++) xl[(n * 2 + v) * 3 + c] = xc[(n * 3 + c) * 2 + v];
    tt c_in, l_in, c_out, l_out, om, oi;
    tt_init(&c_in, EMBER_FLOAT32, DIMS(2, 3, 1, 2), xc, sizeof xc, false, NULL);
    tt_init(&l_in, EMBER_FLOAT32, DIMS(2, 3, 1, 2), xl, sizeof xl, false, cl);
    OUT(c_out, EMBER_FLOAT32, yc, 2, 3, 1, 2);
    OUT(l_out, EMBER_FLOAT32, yl, 2, 3, 1, 2);
    OUT(om, EMBER_FLOAT32, m3, 3);
    OUT(oi, EMBER_FLOAT32, i3, 3);
    CHECK_OK(CALL("aten::_native_batch_norm_legit.no_stats_out", &c_in.v, v_none(), v_none(),
                  v_bool(true), v_dbl(0.1), v_dbl(1e-5), &c_out.v, &om.v, &oi.v, &list.v));
    CHECK_OK(CALL("aten::_native_batch_norm_legit.no_stats_out", &l_in.v, v_none(), v_none(),
                  v_bool(true), v_dbl(0.1), v_dbl(1e-5), &l_out.v, &om.v, &oi.v, &list.v));
    CHECK(close_f(yl, yc, 12, 1e-6f)); /* out is contiguous in both calls */
    /* running statistics held in read-only program data cannot be updated */
    trm.t.storage = EMBER_STORAGE_CONSTANT;
    CHECK_STATUS(CALL("aten::_native_batch_norm_legit.out", &s.v, &tw.v, &tb.v, &trm.v, &trv.v,
                      v_bool(true), v_dbl(0.5), v_dbl(0.0), &o.v, &osm.v, &osi.v, &list.v),
                 EMBER_ERR_INVALID_PROGRAM);
    trm.t.storage = EMBER_STORAGE_PLANNED;
    float w3[3] = {0};
    IN(tw, EMBER_FLOAT32, w3, 3);
    CHECK_ERR(CALL("aten::_native_batch_norm_legit.out", &s.v, &tw.v, &tb.v, &trm.v, &trv.v,
                   v_bool(true), v_dbl(0.5), v_dbl(0.0), &o.v, &osm.v, &osi.v, &list.v),
              EMBER_ERR_SHAPE_MISMATCH, "weight must have shape (2)");
    CHECK_STATUS(CALL("aten::_native_batch_norm_legit.out", &s.v, &tw.v, &tb.v, &trm.v, &trv.v,
                      v_bool(true), v_dbl(0.5), v_dbl(0.0), &o.v, &osm.v, &osi.v),
                 EMBER_ERR_INVALID_PROGRAM);
}

/* ------------------------------------------------------------------------ */
/* cdist, pdist                                                              */
/* ------------------------------------------------------------------------ */

static void test_dist(void) {
    check_section("_cdist_forward, _pdist_forward");
    float a[4] = {0, 0, 3, 4}, b[2] = {0, 4}, y[4];
    tt ta, tb, o;
    IN(ta, EMBER_FLOAT32, a, 2, 2);
    IN(tb, EMBER_FLOAT32, b, 1, 2);
    OUT(o, EMBER_FLOAT32, y, 2, 2);
    CHECK_OK(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(2), v_none(), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 1) && NEAR(y, 4, 3));
    CHECK_OK(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(1), v_none(), &o.v, &o.v));
    CHECK(NEAR(y, 4, 3));
    CHECK_OK(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(0), v_none(), &o.v, &o.v));
    CHECK(NEAR(y, 1, 1));
    CHECK_OK(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(INFINITY), v_int(2), &o.v, &o.v));
    CHECK(NEAR(y, 4, 3));
    CHECK_OK(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(2), v_int(1), &o.v, &o.v));
    CHECK(NEAR(y, 4, 3)); /* through |a|^2 + |b|^2 - 2ab */
    CHECK_ERR(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(-1), v_none(), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "non-negative");
    CHECK_ERR(CALL("aten::_cdist_forward.out", &ta.v, &tb.v, v_dbl(2), v_int(3), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "compute_mode");
    float c3[3] = {0};
    tt tc;
    IN(tc, EMBER_FLOAT32, c3, 1, 3);
    CHECK_ERR(CALL("aten::_cdist_forward.out", &ta.v, &tc.v, v_dbl(2), v_none(), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "columns");
    /* batch dims broadcast: (2, 1, 2) against (1, 2): out (2, 1, 1) */
    tt tab;
    IN(tab, EMBER_FLOAT32, a, 2, 1, 2);
    tt_init(&o, EMBER_FLOAT32, DIMS(2, 2, 2), y, sizeof y, true, NULL);
    CHECK_OK(CALL("aten::_cdist_forward.out", &tab.v, &tb.v, v_dbl(2), v_none(), &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 2, 1, 1) && NEAR(y, 4, 3));

    /* pdist over rows (0,0), (3,4), (0,4): pairs 01, 02, 12 */
    float p[6] = {0, 0, 3, 4, 0, 4}, yp[3];
    tt tp, op;
    IN(tp, EMBER_FLOAT32, p, 3, 2);
    OUT(op, EMBER_FLOAT32, yp, 3);
    CHECK_OK(CALL("aten::_pdist_forward.out", &tp.v, v_dbl(2), &op.v, &op.v));
    CHECK(NEAR(yp, 5, 4, 3));
    CHECK_OK(CALL("aten::_pdist_forward.out", &tp.v, v_dbl(0.5), &op.v, &op.v));
    CHECK(close_f(yp, (const float[]){(sqrtf(3) + 2) * (sqrtf(3) + 2), 4, 3}, 3, 1e-5f));
    CHECK_ERR(CALL("aten::_pdist_forward.out", &ta.v, v_dbl(2), &tb.v, &tb.v),
              EMBER_ERR_SHAPE_MISMATCH, "cannot resize"); /* out too small */
    CHECK_ERR(CALL("aten::_pdist_forward.out", &tab.v, v_dbl(2), &op.v, &op.v),
              EMBER_ERR_SHAPE_MISMATCH, "2-d");
    int32_t pi[6] = {0};
    tt tpi;
    IN(tpi, EMBER_INT32, pi, 3, 2);
    CHECK_STATUS(CALL("aten::_pdist_forward.out", &tpi.v, v_dbl(2), &op.v, &op.v),
                 EMBER_ERR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------------ */
/* grid_sampler_2d                                                           */
/* ------------------------------------------------------------------------ */

static void test_grid_sampler(void) {
    check_section("grid_sampler_2d");
    /* input (1, 1, 2, 3) and a grid at the pixel centres (align_corners) */
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    float g[12] = {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1};
    tt ti, tg, o;
    IN(ti, EMBER_FLOAT32, x, 1, 1, 2, 3);
    IN(tg, EMBER_FLOAT32, g, 1, 2, 3, 2);
    OUT(o, EMBER_FLOAT32, y, 1, 1, 2, 3);
    for (int mode = 0; mode < 3; mode++) {
        CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(mode), v_int(0),
                      v_bool(true), &o.v, &o.v));
        CHECK_MSG(close_f(y, x, 6, 1e-6f), "identity grid, mode %d", mode);
    }
    /* one point halfway between the first two columns of row 0, then outside */
    float g1[4] = {-0.5f, -1, 3, 0};
    IN(tg, EMBER_FLOAT32, g1, 1, 1, 2, 2);
    CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(0), v_bool(true),
                  &o.v, &o.v));
    CHECK(SHAPE_IS(&o.t, 1, 1, 1, 2) && NEAR(y, 1.5f, 0));
    CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(1), v_bool(true),
                  &o.v, &o.v));
    CHECK(NEAR(y, 1.5f, 4.5f)); /* border: x clamps to the last column */
    /* reflection at x = 3 (align_corners): 2 widths past the centre of the last column */
    CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(1), v_int(2), v_bool(true),
                  &o.v, &o.v));
    CHECK(y[1] == 1.0f); /* x = 4 mirrors to column 0; row 0.5 rounds to 0 (ties to even) */
    /* NaN and huge coordinates read as outside: zeros, no crash */
    float gn[4] = {NAN, 0, 1e30f, -1e30f};
    IN(tg, EMBER_FLOAT32, gn, 1, 1, 2, 2);
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++)
            CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(mode), v_int(pad),
                          v_bool(false), &o.v, &o.v));
    CHECK_OK(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(0), v_bool(false),
                  &o.v, &o.v));
    CHECK(NEAR(y, 0, 0));
    /* errors */
    CHECK_ERR(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(3), v_int(0), v_bool(false),
                   &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "interpolation_mode");
    CHECK_ERR(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(-1), v_bool(false),
                   &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "padding_mode");
    float g3[6] = {0};
    IN(tg, EMBER_FLOAT32, g3, 1, 1, 2, 3);
    CHECK_ERR(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(0), v_bool(false),
                   &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "(N, H_out, W_out, 2)");
    double gd[4] = {0};
    IN(tg, EMBER_FLOAT64, gd, 1, 1, 2, 2);
    CHECK_STATUS(CALL("aten::grid_sampler_2d.out", &ti.v, &tg.v, v_int(0), v_int(0),
                      v_bool(false), &o.v, &o.v),
                 EMBER_ERR_TYPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* col2im                                                                    */
/* ------------------------------------------------------------------------ */

static void test_col2im(void) {
    check_section("col2im");
    /* output 2x3, kernel 1x2, stride 1: blocks 2x2; column rows (kx = 0, kx = 1) */
    float cols[8] = {1, 2, 3, 4, 10, 20, 30, 40}, y[6];
    tt s, o;
    IN(s, EMBER_FLOAT32, cols, 2, 4);
    OUT(o, EMBER_FLOAT32, y, 1, 2, 3);
    CHECK_OK(CALL("aten::col2im.out", &s.v, INTS(2, 3), INTS(1, 2), INTS(1, 1), INTS(0, 0),
                  INTS(1, 1), &o.v, &o.v));
    /* pixel (r, c) sums block (r, c) at kx 0 and block (r, c - 1) at kx 1 */
    CHECK(SHAPE_IS(&o.t, 1, 2, 3) && NEAR(y, 1, 2 + 10, 20, 3, 4 + 30, 40));
    /* the columns stored transposed (dim order 1, 0): the same sums */
    float colt[8] = {1, 10, 2, 20, 3, 30, 4, 40};
    tt st;
    tt_init(&st, EMBER_FLOAT32, DIMS(2, 4), colt, sizeof colt, false, (const uint8_t[]){1, 0});
    CHECK_OK(CALL("aten::col2im.out", &st.v, INTS(2, 3), INTS(1, 2), INTS(1, 1), INTS(0, 0),
                  INTS(1, 1), &o.v, &o.v));
    CHECK(NEAR(y, 1, 2 + 10, 20, 3, 4 + 30, 40));
    /* padding 1 on the width: the padded pixels are dropped */
    float cols2[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    IN(s, EMBER_FLOAT32, cols2, 2, 4);
    OUT(o, EMBER_FLOAT32, y, 1, 1, 3);
    CHECK_OK(CALL("aten::col2im.out", &s.v, INTS(1, 3), INTS(1, 2), INTS(1, 1), INTS(0, 1),
                  INTS(1, 1), &o.v, &o.v));
    /* blocks 1x4, block b covers columns b-1 and b */
    CHECK(NEAR(y, 2 + 5, 3 + 6, 4 + 7));
    /* errors */
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(2, 3), INTS(1, 2), INTS(1, 1), INTS(0, 1),
                   INTS(1, 1), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "blocks"); /* 2 x 4 blocks, 4 given */
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(1, 3), INTS(1, 3), INTS(1, 1), INTS(0, 1),
                   INTS(1, 1), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "multiple");
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(1 << 30, 1 << 30), INTS(1, 2), INTS(1, 1),
                   INTS(1 << 30, 1 << 30), INTS(1, 1), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "blocks"); /* ~3e9 x 3e9 blocks: no overflow */
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(1, 3), INTS(1, 2), INTS(1, 1), INTS(0, 1),
                   INTS(0, 1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "stride");
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(1), INTS(1, 2), INTS(1, 1), INTS(0, 1),
                   INTS(1, 1), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "output_size");
    CHECK_ERR(CALL("aten::col2im.out", &s.v, INTS(1, 3), INTS(1, 2), INTS(1, 1), INTS(0, 1),
                   INTS(1, 1), &s.v, &s.v),
              EMBER_ERR_INVALID_PROGRAM, "");
}

/* ------------------------------------------------------------------------ */
/* _embedding_bag                                                            */
/* ------------------------------------------------------------------------ */

static void test_embedding_bag(void) {
    check_section("_embedding_bag");
    /* weight (4, 2): row r = (r, 10 r) */
    float w[8] = {0, 0, 1, 10, 2, 20, 3, 30}, y[8];
    int64_t idx[5] = {1, 3, 2, 2, 0}, off[3] = {0, 2, 2}, o2b[5], bsz[3], mx[6];
    tt tw, ti, to, o0, o1, o2, o3, o3max, list;
    IN(tw, EMBER_FLOAT32, w, 4, 2);
    IN(ti, EMBER_INT64, idx, 5);
    IN(to, EMBER_INT64, off, 3);
    OUT(o0, EMBER_FLOAT32, y, 3, 2);
    OUT(o1, EMBER_INT64, o2b, 5);
    OUT(o2, EMBER_INT64, bsz, 3);
    OUT(o3, EMBER_INT64, mx, 3);         /* sum, mean: (bags) */
    OUT(o3max, EMBER_INT64, mx, 3, 2);   /* max: (bags, D) */
    memset(&list, 0, sizeof list);
    list.v.tag = EMBER_TAG_NONE;
    /* bags: {1, 3}, {}, {2, 2, 0} */
    CHECK_OK(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(0),
                  v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                  &list.v));
    CHECK(NEAR(y, 4, 40, 0, 0, 4, 40) && SHAPE_IS(&o1.t, 0) && EQ_I64(bsz, 0, 0, 0));
    CHECK_OK(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(1),
                  v_bool(false), v_none(), v_bool(false), v_int(2), &o0.v, &o1.v, &o2.v, &o3.v,
                  &list.v));
    /* mean without padding row 2: {1, 3} -> 2; {} -> 0; {0} -> 0 */
    CHECK(NEAR(y, 2, 20, 0, 0, 0, 0) && EQ_I64(o2b, 0, 0, 2, 2, 2) && EQ_I64(bsz, 2, 0, 1) &&
          EQ_I64(mx, 2, 0, 1));
    CHECK_OK(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(2),
                  v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v,
                  &o3max.v, &list.v));
    CHECK(NEAR(y, 3, 30, 0, 0, 2, 20) && EQ_I64(mx, 3, 3, 0, 0, 2, 2) && EQ_I64(bsz, 2, 0, 3));
    /* include_last_offset: offsets end with len(indices); per-sample weights */
    float psw[5] = {1, 2, 0.5f, 0.5f, 4};
    int64_t off2[3] = {0, 2, 5};
    tt tp, to2;
    IN(tp, EMBER_FLOAT32, psw, 5);
    IN(to2, EMBER_INT64, off2, 3);
    CHECK_OK(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to2.v, v_bool(false), v_int(0),
                  v_bool(false), &tp.v, v_bool(true), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                  &list.v));
    CHECK(SHAPE_IS(&o0.t, 2, 2) && NEAR(y, 1 + 6, 10 + 60, 2, 20));

    /* weight stored transposed (dim order 1, 0): the same bags */
    float wt[8] = {0, 1, 2, 3, 0, 10, 20, 30};
    tt twt;
    tt_init(&twt, EMBER_FLOAT32, DIMS(4, 2), wt, sizeof wt, false, (const uint8_t[]){1, 0});
    CHECK_OK(CALL("aten::_embedding_bag.out", &twt.v, &ti.v, &to.v, v_bool(false), v_int(2),
                  v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v,
                  &o3max.v, &list.v));
    CHECK(NEAR(y, 3, 30, 0, 0, 2, 20) && EQ_I64(mx, 3, 3, 0, 0, 2, 2));

    /* errors: nothing is written before every index and offset is checked */
    int64_t bad[5] = {1, 3, 4, 2, 0};
    IN(ti, EMBER_INT64, bad, 5);
    CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(0),
                   v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                   &list.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 4 (position 2)");
    bad[2] = -1;
    CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(0),
                   v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                   &list.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index -1");
    IN(ti, EMBER_INT64, idx, 5);
    int64_t offs[3][3] = {{1, 2, 2}, {0, 3, 2}, {0, 2, 6}};
    for (int k = 0; k < 3; k++) {
        IN(to2, EMBER_INT64, offs[k], 3);
        CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to2.v, v_bool(false), v_int(0),
                       v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v,
                       &o3.v, &list.v),
                  EMBER_ERR_DATA_OUT_OF_BOUNDS, "offsets");
    }
    CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(1),
                   v_bool(false), &tp.v, v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                   &list.v),
              EMBER_ERR_INVALID_ARGUMENT, "per_sample_weights need mode 0");
    CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(3),
                   v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                   &list.v),
              EMBER_ERR_INVALID_ARGUMENT, "mode must be");
    float sm[2];
    tt os;
    OUT(os, EMBER_FLOAT32, sm, 1, 2);
    CHECK_STATUS(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(0),
                      v_bool(false), v_none(), v_bool(false), v_int(-1), &os.v, &o1.v, &o2.v,
                      &o3.v, &list.v),
                 EMBER_ERR_SHAPE_MISMATCH); /* out0 too small for 3 bags */
    int16_t i16[5] = {0};
    IN(ti, EMBER_INT16, i16, 5);
    CHECK_ERR(CALL("aten::_embedding_bag.out", &tw.v, &ti.v, &to.v, v_bool(false), v_int(0),
                   v_bool(false), v_none(), v_bool(false), v_int(-1), &o0.v, &o1.v, &o2.v, &o3.v,
                   &list.v),
              EMBER_ERR_TYPE_MISMATCH, "indices must be int64 or int32");
}

int main(void) {
    kc_init();

    test_scatter();
    test_scatter_reduce();
    test_slice_select_masked();
    test_views();
    test_pad();
    test_pool1d();
    test_pool3d();
    test_batch_norm();
    test_dist();
    test_grid_sampler();
    test_col2im();
    test_embedding_bag();
    return check_finish();
}
