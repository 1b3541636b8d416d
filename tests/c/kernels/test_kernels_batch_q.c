/*
 * test_kernels_batch_q.c — unit tests of the backward kernels (pooling,
 * convolution, embedding, layer and group norm gradients) and of the
 * quantized_decomposed kernels (quantize / dequantize per tensor, channel,
 * token and channel group; choose_qparams).
 *
 * Hand-computed cases through the portable table by kernel key, and every
 * error path: wrong shapes, dtypes, quant ranges, out-of-range indices,
 * malformed masks. Each must give a clean status.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* Fixtures (kernel_call.h, and these)                                       */
/* ------------------------------------------------------------------------ */

/* A bool list value over literal items. */
static ember_value bl_make(const bool *items, size_t n) {
    ember_value v;
    v.tag = EMBER_TAG_BOOL_LIST;
    v.u.bool_list.items = items;
    v.u.bool_list.len = n;
    return v;
}

/* ------------------------------------------------------------------------ */
/* Pooling gradients                                                         */
/* ------------------------------------------------------------------------ */

static void test_pool_backward(void) {
    check_section("pool backward");
    tt x, g, o, ix;
    float xd[4] = {0}, gd[1] = {4}, od[4];
    IN(x, EMBER_FLOAT32, xd, 1, 1, 2, 2);
    IN(g, EMBER_FLOAT32, gd, 1, 1, 1, 1);
    OUT(o, EMBER_FLOAT32, od, 1, 1, 2, 2);
    /* adaptive: one output cell spread over the 2x2 plane */
    CHECK_OK(CALL("aten::_adaptive_avg_pool2d_backward.out", &g.v, &x.v, &o.v, &o.v));
    float want1[4] = {1, 1, 1, 1};
    CHECK(close_f(od, want1, 4, 0));
    CHECK(SHAPE_IS(&o.t, 1, 1, 2, 2));
    tt g3;
    float g3d[1] = {1};
    IN(g3, EMBER_FLOAT32, g3d, 1, 1, 1); /* rank differs from self */
    CHECK_STATUS(CALL("aten::_adaptive_avg_pool2d_backward.out", &g3.v, &x.v, &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);

    /* avg_pool2d 2x2 stride 2: each input cell gets grad / 4 */
    il ks, st, pd, dl;
    gd[0] = 8;
    CHECK_OK(CALL("aten::avg_pool2d_backward.grad_input", &g.v, &x.v, IL(ks, 2, 2), IL0(st),
                  IL(pd, 0), VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_none()), &o.v, &o.v));
    float want2[4] = {2, 2, 2, 2};
    CHECK(close_f(od, want2, 4, 0));
    /* divisor_override 2 */
    CHECK_OK(CALL("aten::avg_pool2d_backward.grad_input", &g.v, &x.v, IL(ks, 2, 2), IL0(st),
                  IL(pd, 0), VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_int(2)), &o.v, &o.v));
    CHECK(od[0] == 4 && od[3] == 4);
    CHECK_ERR(CALL("aten::avg_pool2d_backward.grad_input", &g.v, &x.v, IL(ks, 2, 2), IL0(st),
                   IL(pd, 0), VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_int(0)), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "divisor");
    /* grad_output of the wrong pooled shape */
    tt gbig;
    float gbigd[4] = {0};
    IN(gbig, EMBER_FLOAT32, gbigd, 1, 1, 2, 2);
    CHECK_ERR(CALL("aten::avg_pool2d_backward.grad_input", &gbig.v, &x.v, IL(ks, 2, 2), IL0(st),
                   IL(pd, 0), VP(kt_bool(false)), VP(kt_bool(true)), VP(kt_none()), &o.v, &o.v),
              EMBER_ERR_SHAPE_MISMATCH, "grad_output");

    /* max_pool2d: the max came from cell 3 */
    int64_t idd[1] = {3};
    IN(ix, EMBER_INT64, idd, 1, 1, 1, 1);
    gd[0] = 5;
    CHECK_OK(CALL("aten::max_pool2d_with_indices_backward.grad_input", &g.v, &x.v, IL(ks, 2, 2),
                  IL0(st), IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), &ix.v, &o.v, &o.v));
    float want3[4] = {0, 0, 0, 5};
    CHECK(close_f(od, want3, 4, 0));
    idd[0] = 4; /* outside the 2x2 plane */
    CHECK_ERR(CALL("aten::max_pool2d_with_indices_backward.grad_input", &g.v, &x.v, IL(ks, 2, 2),
                   IL0(st), IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), &ix.v, &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "indices");
    idd[0] = -1;
    CHECK_STATUS(CALL("aten::max_pool2d_with_indices_backward.grad_input", &g.v, &x.v,
                      IL(ks, 2, 2), IL0(st), IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), &ix.v, &o.v,
                      &o.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    tt ix32;
    int32_t id32[1] = {0};
    IN(ix32, EMBER_INT32, id32, 1, 1, 1, 1);
    CHECK_STATUS(CALL("aten::max_pool2d_with_indices_backward.grad_input", &g.v, &x.v,
                      IL(ks, 2, 2), IL0(st), IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), &ix32.v,
                      &o.v, &o.v),
                 EMBER_ERR_TYPE_MISMATCH);
    /* integer grads are not supported */
    tt gi;
    int32_t gid[1] = {1};
    IN(gi, EMBER_INT32, gid, 1, 1, 1, 1);
    CHECK_STATUS(CALL("aten::_adaptive_avg_pool2d_backward.out", &gi.v, &x.v, &o.v, &o.v),
                 EMBER_ERR_TYPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Convolution gradients                                                     */
/* ------------------------------------------------------------------------ */

static void test_conv_backward(void) {
    check_section("convolution backward");
    /* 1-d: x [1, 2, 3], w [1, 1], y = [3, 5]; grad_output [1, 1] */
    tt x, w, g, gi, gw, gb;
    float xd[3] = {1, 2, 3}, wd[2] = {1, 1}, gd[2] = {1, 1}, gid[3], gwd[2], gbd[1];
    IN(x, EMBER_FLOAT32, xd, 1, 1, 3);
    IN(w, EMBER_FLOAT32, wd, 1, 1, 2);
    IN(g, EMBER_FLOAT32, gd, 1, 1, 2);
    OUT(gi, EMBER_FLOAT32, gid, 1, 1, 3);
    OUT(gw, EMBER_FLOAT32, gwd, 1, 1, 2);
    OUT(gb, EMBER_FLOAT32, gbd, 1);
    il bs, st, pd, dl, op;
    bool all[3] = {true, true, true}, first[3] = {true, false, false};
    tt *outs[3] = {&gi, &gw, &gb};
    tl l;
    CHECK_OK(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, IL(bs, 1), IL(st, 1),
                  IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                  VP(bl_make(all, 3)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)));
    float wi[3] = {1, 2, 1}, ww[2] = {3, 5}, wb[1] = {2};
    CHECK(close_f(gid, wi, 3, 0));
    CHECK(close_f(gwd, ww, 2, 0));
    CHECK(close_f(gbd, wb, 1, 0));
    /* masked-off outputs may be None and stay untouched */
    gid[0] = -7;
    CHECK_OK(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                  IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                  VP(bl_make((bool[]){false, true, false}, 3)), VP(kt_none()), &gw.v, VP(kt_none()),
                  tl_init(&l, outs, 3, false)));
    CHECK(gid[0] == -7 && gwd[1] == 5);
    /* ... but a requested one may not */
    CHECK_STATUS(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                      IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                      VP(bl_make(first, 3)), VP(kt_none()), &gw.v, &gb.v,
                      tl_init(&l, outs, 3, false)),
                 EMBER_ERR_INVALID_PROGRAM);
    /* mask of the wrong length, grad_output of the wrong shape, groups */
    CHECK_ERR(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                   IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                   VP(bl_make(all, 2)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)),
              EMBER_ERR_INVALID_ARGUMENT, "output_mask");
    tt g3;
    float g3d[3] = {0};
    IN(g3, EMBER_FLOAT32, g3d, 1, 1, 3);
    CHECK_ERR(CALL("aten::convolution_backward.out", &g3.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                   IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                   VP(bl_make(all, 3)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)),
              EMBER_ERR_SHAPE_MISMATCH, "grad_output");
    CHECK_STATUS(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                      IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(0)),
                      VP(bl_make(all, 3)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, IL(bs, 5), IL(st, 1),
                      IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                      VP(bl_make(all, 3)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)),
                 EMBER_ERR_SHAPE_MISMATCH);
    /* a tag that is not a bool list */
    CHECK_STATUS(CALL("aten::convolution_backward.out", &g.v, &x.v, &w.v, VP(kt_none()), IL(st, 1),
                      IL(pd, 0), IL(dl, 1), VP(kt_bool(false)), IL(op, 0), VP(kt_int(1)),
                      VP(kt_int(3)), &gi.v, &gw.v, &gb.v, tl_init(&l, outs, 3, false)),
                 EMBER_ERR_INVALID_PROGRAM);
    /* transposed: the forward of w over [1, 1] is [1, 2, 1]; its input grad
     * for grad_output [1, 2, 3] is the plain convolution [3, 5] */
    tt xt, gt, git;
    float xtd[2] = {1, 1}, gtd[3] = {1, 2, 3}, gitd[2];
    IN(xt, EMBER_FLOAT32, xtd, 1, 1, 2);
    IN(gt, EMBER_FLOAT32, gtd, 1, 1, 3);
    OUT(git, EMBER_FLOAT32, gitd, 1, 1, 2);
    tt *touts[3] = {&git, &gw, &gb};
    CHECK_OK(CALL("aten::convolution_backward.out", &gt.v, &xt.v, &w.v, VP(kt_none()), IL(st, 1),
                  IL(pd, 0), IL(dl, 1), VP(kt_bool(true)), IL(op, 0), VP(kt_int(1)),
                  VP(bl_make(all, 3)), &git.v, &gw.v, &gb.v, tl_init(&l, touts, 3, false)));
    float wit[2] = {3, 5}, wwt[2] = {3, 5}, wbt[1] = {6};
    CHECK(close_f(gitd, wit, 2, 0));
    CHECK(close_f(gwd, wwt, 2, 0));
    CHECK(close_f(gbd, wbt, 1, 0));
}

/* ------------------------------------------------------------------------ */
/* Embedding gradient                                                        */
/* ------------------------------------------------------------------------ */

static void test_embedding_backward(void) {
    check_section("embedding_dense_backward");
    tt g, ix, o;
    float gd[6] = {1, 2, 3, 4, 5, 6}, od[6];
    int64_t idd[3] = {0, 2, 0};
    IN(g, EMBER_FLOAT32, gd, 3, 2);
    IN(ix, EMBER_INT64, idd, 3);
    OUT(o, EMBER_FLOAT32, od, 3, 2);
    const char *k = "aten::embedding_dense_backward.out";
    CHECK_OK(CALL(k, &g.v, &ix.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v));
    float want[6] = {6, 8, 0, 0, 3, 4};
    CHECK(close_f(od, want, 6, 0));
    CHECK(SHAPE_IS(&o.t, 3, 2));
    /* scale_grad_by_freq: index 0 occurs twice */
    CHECK_OK(CALL(k, &g.v, &ix.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(true)), &o.v, &o.v));
    float want2[6] = {3, 4, 0, 0, 3, 4};
    CHECK(close_f(od, want2, 6, 0));
    /* padding_idx 0 gets nothing */
    CHECK_OK(CALL(k, &g.v, &ix.v, VP(kt_int(3)), VP(kt_int(0)), VP(kt_bool(false)), &o.v, &o.v));
    float want3[6] = {0, 0, 0, 0, 3, 4};
    CHECK(close_f(od, want3, 6, 0));
    /* errors: index out of range, float indices, shapes, num_weights */
    idd[1] = 3;
    CHECK_ERR(CALL(k, &g.v, &ix.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 3");
    idd[1] = -2;
    CHECK_STATUS(CALL(k, &g.v, &ix.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(true)), &o.v, &o.v),
                 EMBER_ERR_DATA_OUT_OF_BOUNDS);
    idd[1] = 2;
    tt fx;
    float fxd[3] = {0, 1, 2};
    IN(fx, EMBER_FLOAT32, fxd, 3);
    CHECK_STATUS(CALL(k, &g.v, &fx.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v),
                 EMBER_ERR_TYPE_MISMATCH);
    tt ix2;
    int64_t id2[2] = {0, 1};
    IN(ix2, EMBER_INT64, id2, 2);
    CHECK_STATUS(CALL(k, &g.v, &ix2.v, VP(kt_int(3)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(CALL(k, &g.v, &ix.v, VP(kt_int(-3)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    /* out too small for num_weights */
    CHECK_STATUS(CALL(k, &g.v, &ix.v, VP(kt_int(30)), VP(kt_int(-1)), VP(kt_bool(false)), &o.v, &o.v),
                 EMBER_ERR_SHAPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* Norm gradients                                                            */
/* ------------------------------------------------------------------------ */

static void test_norm_backward(void) {
    check_section("layer/group norm backward");
    /* x = [1, 3]: mean 2, rstd 1, xhat = [-1, 1]; dy = [1, 0] */
    tt x, dy, m, r, o0, o1, o2;
    float xd[2] = {1, 3}, dyd[2] = {1, 0}, md[1] = {2}, rd[1] = {1}, o0d[2], o1d[2], o2d[2];
    IN(x, EMBER_FLOAT32, xd, 1, 2);
    IN(dy, EMBER_FLOAT32, dyd, 1, 2);
    IN(m, EMBER_FLOAT32, md, 1, 1);
    IN(r, EMBER_FLOAT32, rd, 1, 1);
    OUT(o0, EMBER_FLOAT32, o0d, 1, 2);
    OUT(o1, EMBER_FLOAT32, o1d, 2);
    OUT(o2, EMBER_FLOAT32, o2d, 2);
    bool all[3] = {true, true, true};
    tt *outs[3] = {&o0, &o1, &o2};
    tl l;
    il ns;
    const char *k = "aten::native_layer_norm_backward.out";
    CHECK_OK(CALL(k, &dy.v, &x.v, IL(ns, 2), &m.v, &r.v, VP(kt_none()), VP(kt_none()),
                  VP(bl_make(all, 3)), &o0.v, &o1.v, &o2.v, tl_init(&l, outs, 3, false)));
    /* the gradient of a normalized pair along dy = [1, 0] cancels out */
    float w0[2] = {0, 0}, w1[2] = {-1, 0}, w2[2] = {1, 0};
    CHECK(close_f(o0d, w0, 2, 1e-6f));
    CHECK(close_f(o1d, w1, 2, 1e-6f));
    CHECK(close_f(o2d, w2, 2, 1e-6f));
    CHECK_STATUS(CALL(k, &dy.v, &x.v, IL(ns, 3), &m.v, &r.v, VP(kt_none()), VP(kt_none()),
                      VP(bl_make(all, 3)), &o0.v, &o1.v, &o2.v, tl_init(&l, outs, 3, false)),
                 EMBER_ERR_SHAPE_MISMATCH);
    tt m2;
    float m2d[2] = {0};
    IN(m2, EMBER_FLOAT32, m2d, 2);
    CHECK_ERR(CALL(k, &dy.v, &x.v, IL(ns, 2), &m2.v, &r.v, VP(kt_none()), VP(kt_none()),
                   VP(bl_make(all, 3)), &o0.v, &o1.v, &o2.v, tl_init(&l, outs, 3, false)),
              EMBER_ERR_SHAPE_MISMATCH, "mean");
    CHECK_STATUS(CALL(k, &dy.v, &x.v, IL(ns, 2), &m.v, &r.v, VP(kt_none()), VP(kt_none()),
                      VP(bl_make(all, 1)), &o0.v, &o1.v, &o2.v, tl_init(&l, outs, 3, false)),
                 EMBER_ERR_INVALID_ARGUMENT);

    /* group norm: N 1, C 2, HxW 1, one group: the same numbers per channel */
    tt gx, gdy, go0, go1, go2;
    float gxd[2] = {1, 3}, gdyd[2] = {1, 0}, go0d[2], go1d[2], go2d[2];
    IN(gx, EMBER_FLOAT32, gxd, 1, 2, 1);
    IN(gdy, EMBER_FLOAT32, gdyd, 1, 2, 1);
    OUT(go0, EMBER_FLOAT32, go0d, 1, 2, 1);
    OUT(go1, EMBER_FLOAT32, go1d, 2);
    OUT(go2, EMBER_FLOAT32, go2d, 2);
    tt *gouts[3] = {&go0, &go1, &go2};
    const char *kg = "aten::native_group_norm_backward.out";
    CHECK_OK(CALL(kg, &gdy.v, &gx.v, &m.v, &r.v, VP(kt_none()), VP(kt_int(1)), VP(kt_int(2)),
                  VP(kt_int(1)), VP(kt_int(1)), VP(bl_make(all, 3)), &go0.v, &go1.v, &go2.v,
                  tl_init(&l, gouts, 3, false)));
    CHECK(close_f(go0d, w0, 2, 1e-6f));
    CHECK(close_f(go1d, w1, 2, 1e-6f));
    CHECK(close_f(go2d, w2, 2, 1e-6f));
    CHECK_STATUS(CALL(kg, &gdy.v, &gx.v, &m.v, &r.v, VP(kt_none()), VP(kt_int(1)), VP(kt_int(2)),
                      VP(kt_int(1)), VP(kt_int(3)), VP(bl_make(all, 3)), &go0.v, &go1.v, &go2.v,
                      tl_init(&l, gouts, 3, false)),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL(kg, &gdy.v, &gx.v, &m.v, &r.v, VP(kt_none()), VP(kt_int(1)), VP(kt_int(2)),
                      VP(kt_int(2)), VP(kt_int(1)), VP(bl_make(all, 3)), &go0.v, &go1.v, &go2.v,
                      tl_init(&l, gouts, 3, false)),
                 EMBER_ERR_SHAPE_MISMATCH);
    tt gd64;
    double gd64d[2] = {0};
    IN(gd64, EMBER_FLOAT64, gd64d, 1, 2, 1);
    CHECK_STATUS(CALL(kg, &gd64.v, &gx.v, &m.v, &r.v, VP(kt_none()), VP(kt_int(1)), VP(kt_int(2)),
                      VP(kt_int(1)), VP(kt_int(1)), VP(bl_make(all, 3)), &go0.v, &go1.v, &go2.v,
                      tl_init(&l, gouts, 3, false)),
                 EMBER_ERR_TYPE_MISMATCH);
}

/* ------------------------------------------------------------------------ */
/* quantized_decomposed                                                      */
/* ------------------------------------------------------------------------ */

static void test_quantize(void) {
    check_section("quantize / dequantize per tensor");
    tt x, q, qu, d;
    /* x / 0.25 = [0.5, 1.5, -0.5, 400, -400]: half to even, then clamp */
    float xd[5] = {0.125f, 0.375f, -0.125f, 100, -100}, dd[5];
    int8_t qd[5];
    uint8_t qud[5];
    IN(x, EMBER_FLOAT32, xd, 5);
    OUT(q, EMBER_INT8, qd, 5);
    OUT(qu, EMBER_UINT8, qud, 5);
    const char *k = "quantized_decomposed::quantize_per_tensor.out";
    CHECK_OK(CALL(k, &x.v, VP(kt_double(0.25)), VP(kt_int(0)), VP(kt_int(-128)), VP(kt_int(127)),
                  VP(kt_int(EMBER_INT8)), &q.v, &q.v));
    CHECK(qd[0] == 0 && qd[1] == 2 && qd[2] == 0 && qd[3] == 127 && qd[4] == -128);
    CHECK_OK(CALL(k, &x.v, VP(kt_double(0.25)), VP(kt_int(3)), VP(kt_int(0)), VP(kt_int(255)),
                  VP(kt_int(EMBER_UINT8)), &qu.v, &qu.v));
    CHECK(qud[0] == 3 && qud[1] == 5 && qud[2] == 3 && qud[3] == 255 && qud[4] == 0);
    /* the Tensor overload */
    tt s, z;
    double sd[1] = {0.25};
    int64_t zd[1] = {3};
    IN(s, EMBER_FLOAT64, sd, 1);
    IN(z, EMBER_INT64, zd, 1);
    memset(qud, 0, sizeof qud);
    CHECK_OK(CALL("quantized_decomposed::quantize_per_tensor.Tensor_out", &x.v, &s.v, &z.v,
                  VP(kt_int(0)), VP(kt_int(255)), VP(kt_int(EMBER_UINT8)), &qu.v, &qu.v));
    CHECK(qud[1] == 5 && qud[3] == 255);
    /* errors: quant range beyond the dtype, out dtype, int input, two scales */
    CHECK_ERR(CALL(k, &x.v, VP(kt_double(0.25)), VP(kt_int(0)), VP(kt_int(0)), VP(kt_int(300)),
                   VP(kt_int(EMBER_UINT8)), &qu.v, &qu.v),
              EMBER_ERR_INVALID_ARGUMENT, "quant range");
    CHECK_STATUS(CALL(k, &x.v, VP(kt_double(0.25)), VP(kt_int(0)), VP(kt_int(0)), VP(kt_int(255)),
                      VP(kt_int(EMBER_UINT8)), &q.v, &q.v),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(CALL(k, &x.v, VP(kt_double(0.25)), VP(kt_int(0)), VP(kt_int(0)), VP(kt_int(1)),
                      VP(kt_int(EMBER_INT64)), &q.v, &q.v),
                 EMBER_ERR_NOT_SUPPORTED);
    CHECK_STATUS(CALL(k, &q.v, VP(kt_double(0.25)), VP(kt_int(0)), VP(kt_int(-128)), VP(kt_int(127)),
                      VP(kt_int(EMBER_INT8)), &q.v, &q.v),
                 EMBER_ERR_NOT_SUPPORTED); /* an integer input */
    tt s2;
    double s2d[2] = {1, 2};
    IN(s2, EMBER_FLOAT64, s2d, 2);
    CHECK_ERR(CALL("quantized_decomposed::quantize_per_tensor.Tensor_out", &x.v, &s2.v, &z.v,
                   VP(kt_int(0)), VP(kt_int(255)), VP(kt_int(EMBER_UINT8)), &qu.v, &qu.v),
              EMBER_ERR_SHAPE_MISMATCH, "scale");

    /* dequantize: (q - 1) * 0.5 */
    int8_t dqd[3] = {0, 2, -128};
    tt dq;
    IN(dq, EMBER_INT8, dqd, 3);
    OUT(d, EMBER_FLOAT32, dd, 5);
    const char *kd = "quantized_decomposed::dequantize_per_tensor.out";
    CHECK_OK(CALL(kd, &dq.v, VP(kt_double(0.5)), VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                  VP(kt_int(EMBER_INT8)), VP(kt_none()), &d.v, &d.v));
    float want[3] = {-0.5f, 0.5f, -64.5f};
    CHECK(close_f(dd, want, 3, 0));
    CHECK(SHAPE_IS(&d.t, 3));
    /* out_dtype None wants float32; dtype must be the input's */
    tt dh;
    uint16_t dhd[3];
    OUT(dh, EMBER_FLOAT16, dhd, 3);
    CHECK_STATUS(CALL(kd, &dq.v, VP(kt_double(0.5)), VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                      VP(kt_int(EMBER_INT8)), VP(kt_none()), &dh.v, &dh.v),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_OK(CALL(kd, &dq.v, VP(kt_double(0.5)), VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                  VP(kt_int(EMBER_INT8)), VP(kt_int(EMBER_FLOAT16)), &dh.v, &dh.v));
    CHECK(ember_half_to_float(dhd[2]) == -64.5f);
    CHECK_STATUS(CALL(kd, &dq.v, VP(kt_double(0.5)), VP(kt_int(1)), VP(kt_int(0)), VP(kt_int(255)),
                      VP(kt_int(EMBER_UINT8)), VP(kt_none()), &d.v, &d.v),
                 EMBER_ERR_TYPE_MISMATCH);
}

static void test_quantize_affine(void) {
    check_section("per channel / token / group");
    /* per channel along axis 1: scales [1, 0.5], zero points [0, 1] */
    tt x, s, z, q, d;
    float xd[4] = {1, 2, 3, 4}, dd[4];
    float sd[2] = {1, 0.5f};
    int64_t zd[2] = {0, 1};
    int8_t qd[4];
    IN(x, EMBER_FLOAT32, xd, 2, 2);
    IN(s, EMBER_FLOAT32, sd, 2);
    IN(z, EMBER_INT64, zd, 2);
    OUT(q, EMBER_INT8, qd, 2, 2);
    OUT(d, EMBER_FLOAT32, dd, 2, 2);
    const char *k = "quantized_decomposed::quantize_per_channel.out";
    CHECK_OK(CALL(k, &x.v, &s.v, &z.v, VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                  VP(kt_int(EMBER_INT8)), &q.v, &q.v));
    CHECK(qd[0] == 1 && qd[1] == 5 && qd[2] == 3 && qd[3] == 9);
    CHECK_OK(CALL("quantized_decomposed::dequantize_per_channel.out", &q.v, &s.v, &z.v,
                  VP(kt_int(-1)), VP(kt_int(-128)), VP(kt_int(127)), VP(kt_int(EMBER_INT8)),
                  VP(kt_none()), &d.v, &d.v));
    CHECK(close_f(dd, xd, 4, 0));
    CHECK_STATUS(CALL(k, &x.v, &s.v, &z.v, VP(kt_int(2)), VP(kt_int(-128)), VP(kt_int(127)),
                      VP(kt_int(EMBER_INT8)), &q.v, &q.v),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(CALL(k, &x.v, &z.v, &z.v, VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                   VP(kt_int(EMBER_INT8)), &q.v, &q.v),
              EMBER_ERR_NOT_SUPPORTED, "scales");
    tt s3;
    float s3d[3] = {1, 1, 1};
    IN(s3, EMBER_FLOAT32, s3d, 3);
    CHECK_STATUS(CALL(k, &x.v, &s3.v, &z.v, VP(kt_int(1)), VP(kt_int(-128)), VP(kt_int(127)),
                      VP(kt_int(EMBER_INT8)), &q.v, &q.v),
                 EMBER_ERR_SHAPE_MISMATCH);

    /* per token (rows): zero point added before rounding */
    CHECK_OK(CALL("quantized_decomposed::quantize_per_token.out", &x.v, &s.v, &z.v,
                  VP(kt_int(-128)), VP(kt_int(127)), VP(kt_int(EMBER_INT8)), &q.v, &q.v));
    CHECK(qd[0] == 1 && qd[1] == 2 && qd[2] == 7 && qd[3] == 9);
    CHECK_OK(CALL("quantized_decomposed::dequantize_per_token.out", &q.v, &s.v, &z.v,
                  VP(kt_int(-128)), VP(kt_int(127)), VP(kt_int(EMBER_INT8)),
                  VP(kt_int(EMBER_FLOAT32)), &d.v, &d.v));
    CHECK(close_f(dd, xd, 4, 0));
    CHECK_STATUS(CALL("quantized_decomposed::dequantize_per_token.out", &q.v, &s.v, &z.v,
                      VP(kt_int(-128)), VP(kt_int(127)), VP(kt_int(EMBER_INT8)),
                      VP(kt_int(EMBER_FLOAT64)), &d.v, &d.v),
                 EMBER_ERR_TYPE_MISMATCH);

    /* per channel group: one row of 4 in groups of 2, scales [1, 2] */
    tt gx, gs, gz, gq;
    float gxd[4] = {1, 2, 3, 4}, gsd[2] = {1, 2};
    int32_t gzd[2] = {0, 0};
    int8_t gqd[4];
    IN(gx, EMBER_FLOAT32, gxd, 1, 4);
    IN(gs, EMBER_FLOAT32, gsd, 2);
    IN(gz, EMBER_INT32, gzd, 2);
    OUT(gq, EMBER_INT8, gqd, 1, 4);
    const char *kg = "quantized_decomposed::quantize_per_channel_group.out";
    CHECK_OK(CALL(kg, &gx.v, &gs.v, &gz.v, VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)),
                  VP(kt_int(2)), &gq.v, &gq.v));
    CHECK(gqd[0] == 1 && gqd[1] == 2 && gqd[2] == 2 && gqd[3] == 2); /* 1.5 rounds to 2 */
    tt gd;
    float gdd[4];
    OUT(gd, EMBER_FLOAT32, gdd, 1, 4);
    CHECK_OK(CALL("quantized_decomposed::dequantize_per_channel_group.out", &gq.v, &gs.v,
                  VP(kt_none()), VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)), VP(kt_int(2)),
                  VP(kt_int(EMBER_FLOAT32)), &gd.v, &gd.v));
    float gw[4] = {1, 2, 4, 4};
    CHECK(close_f(gdd, gw, 4, 0));
    CHECK_ERR(CALL(kg, &gx.v, &gs.v, &gz.v, VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)),
                   VP(kt_int(1)), &gq.v, &gq.v),
              EMBER_ERR_INVALID_ARGUMENT, "group_size");
    CHECK_STATUS(CALL(kg, &gx.v, &gs.v, &gz.v, VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)),
                      VP(kt_int(3)), &gq.v, &gq.v),
                 EMBER_ERR_SHAPE_MISMATCH);
    gxd[2] = NAN;
    CHECK_ERR(CALL(kg, &gx.v, &gs.v, &gz.v, VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)),
                   VP(kt_int(2)), &gq.v, &gq.v),
              EMBER_ERR_INVALID_ARGUMENT, "NaN");
    CHECK_STATUS(CALL(kg, &x.v, &gs.v, &gz.v, VP(kt_int(-8)), VP(kt_int(7)), VP(kt_int(EMBER_INT8)),
                      VP(kt_int(2)), &gq.v, &gq.v),
                 EMBER_ERR_SHAPE_MISMATCH); /* 2 groups of a (2, 2) input need 2 scales: ok,
                                               but out (1, 4) cannot take (2, 2) */
}

static void test_choose_qparams(void) {
    check_section("choose_qparams");
    tt x, s, z;
    float xd[2] = {-1, 3};
    double sd[1];
    int64_t zd[1];
    IN(x, EMBER_FLOAT32, xd, 2);
    OUT(s, EMBER_FLOAT64, sd, 1);
    OUT(z, EMBER_INT64, zd, 1);
    tt *outs[2] = {&s, &z};
    tl l;
    const char *k = "quantized_decomposed::choose_qparams.Tensor_out";
    CHECK_OK(CALL(k, &x.v, VP(kt_int(0)), VP(kt_int(255)), VP(kt_double(1e-6)), VP(kt_int(EMBER_UINT8)),
                  &s.v, &z.v, tl_init(&l, outs, 2, false)));
    CHECK_NEAR(sd[0], (double)(4.0f / 255.0f), 1e-9);
    CHECK_EQ_INT(zd[0], 64); /* 0 - round(-1 / (4 / 255)) = round(63.75) */
    CHECK_STATUS(CALL(k, &x.v, VP(kt_int(1)), VP(kt_int(255)), VP(kt_double(1e-6)),
                      VP(kt_int(EMBER_UINT8)), &s.v, &z.v, tl_init(&l, outs, 2, false)),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(CALL(k, &x.v, VP(kt_int(0)), VP(kt_int(255)), VP(kt_double(1e-6)),
                      VP(kt_int(EMBER_UINT8)), &z.v, &s.v, tl_init(&l, outs, 2, false)),
                 EMBER_ERR_TYPE_MISMATCH);

    /* per token: [0, 2.55] gives scale 0.01 and zero point -128 */
    tt t, ts, tz;
    float td[2] = {0, 2.55f};
    double tsd[1];
    int64_t tzd[1];
    IN(t, EMBER_FLOAT32, td, 1, 2);
    OUT(ts, EMBER_FLOAT64, tsd, 1, 1);
    OUT(tz, EMBER_INT64, tzd, 1, 1);
    tt *touts[2] = {&ts, &tz};
    const char *kt = "quantized_decomposed::choose_qparams_per_token_asymmetric.out";
    CHECK_OK(CALL(kt, &t.v, VP(kt_int(EMBER_INT8)), &ts.v, &tz.v, tl_init(&l, touts, 2, false)));
    CHECK_NEAR(tsd[0], 0.01, 1e-7);
    CHECK_EQ_INT(tzd[0], -128);
    CHECK(SHAPE_IS(&ts.t, 1, 1));
    tt ti;
    int32_t tid[2] = {0, 1};
    IN(ti, EMBER_INT32, tid, 1, 2);
    CHECK_STATUS(CALL(kt, &ti.v, VP(kt_int(EMBER_INT8)), &ts.v, &tz.v,
                      tl_init(&l, touts, 2, false)),
                 EMBER_ERR_NOT_SUPPORTED);
}

int main(void) {
    kc_init();

    test_pool_backward();
    test_conv_backward();
    test_embedding_backward();
    test_norm_backward();
    test_quantize();
    test_quantize_affine();
    test_choose_qparams();
    return check_finish();
}
