/*
 * test_quantized_embedding.c — the quantized embedding kernels
 * (quantized_decomposed::embedding_byte / embedding_4bit / embedding_2bit,
 * .out and .dtype_out) against a plain reference written here: the table's
 * integer values are drawn first, packed the way ExecuTorch packs them, and
 * every looked-up row is compared with (q - zero_point) * scale computed
 * from the unpacked values. Then every bad input: a clean status, out left
 * as it was for an index out of range.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#define KC_SCRATCH_BYTES (1 << 12)
#include "kernel_call.h"


#define V 5  /* rows of the table */
#define D 16 /* values per row */
#define MAXG 4

static float next_float(float lo, float hi) {
    return lo + (hi - lo) * (float)(rng_bits() % 10000u) / 10000.0f;
}

/* One table: values q (V, D) in [qmin, qmax], scales / zero points (V, G). */
typedef struct table {
    int32_t q[V][D];
    float scales[V][MAXG];
    float zps[V][MAXG];
    int groups;
} table;

static void table_fill(table *t, int32_t qmin, int32_t qmax, int groups, bool with_zp) {
    t->groups = groups;
    for (int r = 0; r < V; r++)
        for (int j = 0; j < D; j++)
            t->q[r][j] = qmin + (int32_t)(rng_bits() % (uint32_t)(qmax - qmin + 1));
    for (int r = 0; r < V; r++)
        for (int g = 0; g < groups; g++) {
            t->scales[r][g] = next_float(0.01f, 0.5f);
            t->zps[r][g] = with_zp ? (float)((int32_t)(rng_bits() % 5u) - 2) : 0.0f;
        }
}

/* The reference: row r of the table, dequantized in float. */
static float ref_value(const table *t, int r, int j) {
    int g = j / (D / t->groups);
    return ((float)t->q[r][j] - t->zps[r][g]) * t->scales[r][g];
}

/* ExecuTorch's packings. */
static void pack_4bit(const table *t, uint8_t out[V][D / 2]) {
    for (int r = 0; r < V; r++)
        for (int k = 0; k < D / 2; k++)
            out[r][k] = (uint8_t)(((t->q[r][2 * k] + 8) << 4) | (t->q[r][2 * k + 1] + 8));
}
static void pack_2bit(const table *t, uint8_t out[V][D / 4]) {
    for (int r = 0; r < V; r++)
        for (int k = 0; k < D / 4; k++) {
            unsigned b = 0;
            for (int i = 0; i < 4; i++) b |= (unsigned)(t->q[r][4 * k + i] + 2) << (2 * i);
            out[r][k] = (uint8_t)b;
        }
}

/* Compares out (n_idx rows of D floats) with the reference rows idx[]. */
static bool rows_match(const table *t, const float *out, const int64_t *idx, int n_idx) {
    for (int i = 0; i < n_idx; i++)
        for (int j = 0; j < D; j++) {
            float want = ref_value(t, (int)idx[i], j), got = out[i * D + j];
            if (got != want) {
                printf("  row %d (index %lld) value %d: %.9g vs %.9g\n", i, (long long)idx[i], j,
                       (double)got, (double)want);
                return false;
            }
        }
    return true;
}

static void test_byte(void) {
    check_section("embedding_byte");
    table t;
    /* int8, one scale per row, no zero points, indices (2, 3) */
    table_fill(&t, -128, 127, 1, false);
    int8_t w[V][D];
    float s[V];
    for (int r = 0; r < V; r++) {
        s[r] = t.scales[r][0];
        for (int j = 0; j < D; j++) w[r][j] = (int8_t)t.q[r][j];
    }
    int64_t idx[6] = {4, 0, 2, 2, 1, 3};
    float out[6 * D];
    tt wt, st, it, ot;
    tt_init(&wt, EMBER_INT8, (const int32_t[]){V, D}, 2, w, sizeof w, false, NULL);
    tt_init(&st, EMBER_FLOAT32, (const int32_t[]){V}, 1, s, sizeof s, false, NULL);
    tt_init(&it, EMBER_INT64, (const int32_t[]){2, 3}, 2, idx, sizeof idx, false, NULL);
    tt_init(&ot, EMBER_FLOAT32, (const int32_t[]){2, 3, D}, 3, out, sizeof out, true, NULL);
    const char *k = "quantized_decomposed::embedding_byte.out";
    CHECK_OK(CALL(k, &wt.v, &st.v, VP(kt_none()), VP(kt_int(-128)), VP(kt_int(127)), &it.v, &ot.v,
                  &ot.v));
    CHECK(ot.t.dim == 3 && ot.t.sizes[0] == 2 && ot.t.sizes[1] == 3 && ot.t.sizes[2] == D);
    CHECK(rows_match(&t, out, idx, 6));

    /* uint8, groups of 4 (G = 4) with float zero points, int32 indices, dtype given */
    table_fill(&t, 0, 255, 4, true);
    uint8_t wu[V][D];
    float sg[V][4], zg[V][4];
    for (int r = 0; r < V; r++) {
        for (int j = 0; j < D; j++) wu[r][j] = (uint8_t)t.q[r][j];
        for (int g = 0; g < 4; g++) sg[r][g] = t.scales[r][g], zg[r][g] = t.zps[r][g];
    }
    int32_t idx32[3] = {3, 3, 0};
    int64_t idx64[3] = {3, 3, 0};
    tt wut, sgt, zgt, i32t, o2t;
    float out2[3 * D];
    tt_init(&wut, EMBER_UINT8, (const int32_t[]){V, D}, 2, wu, sizeof wu, false, NULL);
    tt_init(&sgt, EMBER_FLOAT32, (const int32_t[]){V, 4}, 2, sg, sizeof sg, false, NULL);
    tt_init(&zgt, EMBER_FLOAT32, (const int32_t[]){V, 4}, 2, zg, sizeof zg, false, NULL);
    tt_init(&i32t, EMBER_INT32, (const int32_t[]){3}, 1, idx32, sizeof idx32, false, NULL);
    tt_init(&o2t, EMBER_FLOAT32, (const int32_t[]){3, D}, 2, out2, sizeof out2, true, NULL);
    const char *kd = "quantized_decomposed::embedding_byte.dtype_out";
    CHECK_OK(CALL(kd, &wut.v, &sgt.v, &zgt.v, VP(kt_int(0)), VP(kt_int(255)), &i32t.v,
                  VP(kt_int(EMBER_FLOAT32)), &o2t.v, &o2t.v));
    CHECK(rows_match(&t, out2, idx64, 3));
    /* dtype None: the scales' dtype */
    memset(out2, 0, sizeof out2);
    CHECK_OK(CALL(kd, &wut.v, &sgt.v, &zgt.v, VP(kt_int(0)), VP(kt_int(255)), &i32t.v,
                  VP(kt_none()), &o2t.v, &o2t.v));
    CHECK(rows_match(&t, out2, idx64, 3));
    /* int8 range on uint8 values is outside what the weight holds */
    CHECK_ERR(CALL(kd, &wut.v, &sgt.v, &zgt.v, VP(kt_int(-128)), VP(kt_int(127)), &i32t.v,
                   VP(kt_none()), &o2t.v, &o2t.v),
              EMBER_ERR_INVALID_ARGUMENT, "quant range");
}

static void test_4bit(void) {
    check_section("embedding_4bit");
    table t;
    table_fill(&t, -8, 7, 2, false); /* groups of 8 */
    uint8_t w[V][D / 2];
    pack_4bit(&t, w);
    /* float16 scales, as ExecuTorch's LLM export stores them; out float32 */
    uint16_t s16[V][2];
    for (int r = 0; r < V; r++)
        for (int g = 0; g < 2; g++) {
            s16[r][g] = ember_float_to_half(t.scales[r][g]);
            t.scales[r][g] = ember_half_to_float(s16[r][g]); /* what the kernel reads */
        }
    int64_t idx[4] = {1, 4, 0, 1};
    float out[4 * D];
    tt wt, st, it, ot;
    tt_init(&wt, EMBER_UINT8, (const int32_t[]){V, D / 2}, 2, w, sizeof w, false, NULL);
    tt_init(&st, EMBER_FLOAT16, (const int32_t[]){V, 2}, 2, s16, sizeof s16, false, NULL);
    tt_init(&it, EMBER_INT64, (const int32_t[]){4}, 1, idx, sizeof idx, false, NULL);
    tt_init(&ot, EMBER_FLOAT32, (const int32_t[]){4, D}, 2, out, sizeof out, true, NULL);
    const char *kd = "quantized_decomposed::embedding_4bit.dtype_out";
    CHECK_OK(CALL(kd, &wt.v, &st.v, VP(kt_none()), VP(kt_int(-8)), VP(kt_int(7)), &it.v,
                  VP(kt_int(EMBER_FLOAT32)), &ot.v, &ot.v));
    CHECK(rows_match(&t, out, idx, 4));

    /* .out: the scales' dtype (float16) out, each value rounded once */
    uint16_t out16[4 * D];
    tt o16;
    tt_init(&o16, EMBER_FLOAT16, (const int32_t[]){4, D}, 2, out16, sizeof out16, true, NULL);
    CHECK_OK(CALL("quantized_decomposed::embedding_4bit.out", &wt.v, &st.v, VP(kt_none()),
                  VP(kt_int(-8)), VP(kt_int(7)), &it.v, &o16.v, &o16.v));
    bool ok = true;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < D; j++)
            ok &= out16[i * D + j] == ember_float_to_half(ref_value(&t, (int)idx[i], j));
    CHECK(ok);

    /* bfloat16 out, float32 scales and zero points, per row */
    table_fill(&t, -8, 7, 1, true);
    pack_4bit(&t, w);
    float s[V], z[V];
    for (int r = 0; r < V; r++) s[r] = t.scales[r][0], z[r] = t.zps[r][0];
    uint16_t outb[4 * D];
    tt s1, z1, ob;
    tt_init(&s1, EMBER_FLOAT32, (const int32_t[]){V}, 1, s, sizeof s, false, NULL);
    tt_init(&z1, EMBER_FLOAT32, (const int32_t[]){V}, 1, z, sizeof z, false, NULL);
    tt_init(&ob, EMBER_BFLOAT16, (const int32_t[]){4, D}, 2, outb, sizeof outb, true, NULL);
    CHECK_OK(CALL(kd, &wt.v, &s1.v, &z1.v, VP(kt_int(-8)), VP(kt_int(7)), &it.v,
                  VP(kt_int(EMBER_BFLOAT16)), &ob.v, &ob.v));
    ok = true;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < D; j++)
            ok &= outb[i * D + j] == ember_float_to_bf16(ref_value(&t, (int)idx[i], j));
    CHECK(ok);
}

static void test_2bit(void) {
    check_section("embedding_2bit");
    table t;
    table_fill(&t, -2, 1, 4, true);
    uint8_t w[V][D / 4];
    pack_2bit(&t, w);
    float s[V][4], z[V][4];
    for (int r = 0; r < V; r++)
        for (int g = 0; g < 4; g++) s[r][g] = t.scales[r][g], z[r][g] = t.zps[r][g];
    int64_t idx[5] = {0, 1, 2, 3, 4};
    float out[5 * D];
    tt wt, st, zt, it, ot;
    tt_init(&wt, EMBER_UINT8, (const int32_t[]){V, D / 4}, 2, w, sizeof w, false, NULL);
    tt_init(&st, EMBER_FLOAT32, (const int32_t[]){V, 4}, 2, s, sizeof s, false, NULL);
    tt_init(&zt, EMBER_FLOAT32, (const int32_t[]){V, 4}, 2, z, sizeof z, false, NULL);
    tt_init(&it, EMBER_INT64, (const int32_t[]){5}, 1, idx, sizeof idx, false, NULL);
    tt_init(&ot, EMBER_FLOAT32, (const int32_t[]){5, D}, 2, out, sizeof out, true, NULL);
    CHECK_OK(CALL("quantized_decomposed::embedding_2bit.out", &wt.v, &st.v, &zt.v, VP(kt_int(-2)),
                  VP(kt_int(1)), &it.v, &ot.v, &ot.v));
    CHECK(rows_match(&t, out, idx, 5));
    CHECK_OK(CALL("quantized_decomposed::embedding_2bit.dtype_out", &wt.v, &st.v, &zt.v,
                  VP(kt_int(-2)), VP(kt_int(1)), &it.v, VP(kt_int(EMBER_FLOAT32)), &ot.v, &ot.v));
    CHECK(rows_match(&t, out, idx, 5));
}

static void test_bad_inputs(void) {
    check_section("bad inputs");
    table t;
    table_fill(&t, -8, 7, 2, false);
    uint8_t w[V][D / 2];
    pack_4bit(&t, w);
    float s[V][2];
    for (int r = 0; r < V; r++) s[r][0] = t.scales[r][0], s[r][1] = t.scales[r][1];
    int64_t idx[3] = {0, 1, 2};
    float out[3 * D];
    tt wt, st, it, ot;
    tt_init(&wt, EMBER_UINT8, (const int32_t[]){V, D / 2}, 2, w, sizeof w, false, NULL);
    tt_init(&st, EMBER_FLOAT32, (const int32_t[]){V, 2}, 2, s, sizeof s, false, NULL);
    tt_init(&it, EMBER_INT64, (const int32_t[]){3}, 1, idx, sizeof idx, false, NULL);
    tt_init(&ot, EMBER_FLOAT32, (const int32_t[]){3, D}, 2, out, sizeof out, true, NULL);
    const char *k = "quantized_decomposed::embedding_4bit.out";
#define Q4(W, S, Z, LO, HI, I, O)                                                                  \
    CALL(k, &(W).v, &(S).v, (Z), VP(kt_int(LO)), VP(kt_int(HI)), &(I).v, &(O).v, &(O).v)
    CHECK_OK(Q4(wt, st, VP(kt_none()), -8, 7, it, ot));

    /* indices out of range: a clean error naming the index, out untouched */
    for (int i = 0; i < 3 * D; i++) out[i] = 42.0f;
    int64_t bad[2][3] = {{0, V, 1}, {2, -1, 0}};
    for (int b = 0; b < 2; b++) {
        memcpy(idx, bad[b], sizeof idx);
        CHECK_ERR(Q4(wt, st, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_DATA_OUT_OF_BOUNDS,
                  b == 0 ? "index 5 out of range [0, 5)" : "index -1 out of range");
    }
    bool untouched = true;
    for (int i = 0; i < 3 * D; i++) untouched &= out[i] == 42.0f;
    CHECK(untouched);
    idx[0] = 0, idx[1] = 1, idx[2] = 2;

    /* groups that do not divide a row: 3 groups of 16 values */
    float s3[V][3] = {{0}};
    tt s3t;
    tt_init(&s3t, EMBER_FLOAT32, (const int32_t[]){V, 3}, 2, s3, sizeof s3, false, NULL);
    CHECK_ERR(Q4(wt, s3t, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH, "groups");
    /* scales for another number of rows */
    tt s4t;
    tt_init(&s4t, EMBER_FLOAT32, (const int32_t[]){V - 1, 2}, 2, s, sizeof s, false, NULL);
    CHECK_ERR(Q4(wt, s4t, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH, "rows");
    /* 0-d and 3-d scales */
    tt s0t, s5t;
    tt_init(&s0t, EMBER_FLOAT32, NULL, 0, s, sizeof s, false, NULL);
    tt_init(&s5t, EMBER_FLOAT32, (const int32_t[]){V, 1, 2}, 3, s, sizeof s, false, NULL);
    CHECK_STATUS(Q4(wt, s0t, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(Q4(wt, s5t, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH);
    /* integer scales */
    int32_t si[V][2] = {{0}};
    tt sit;
    tt_init(&sit, EMBER_INT32, (const int32_t[]){V, 2}, 2, si, sizeof si, false, NULL);
    CHECK_STATUS(Q4(wt, sit, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_NOT_SUPPORTED);
    /* zero points shaped otherwise than the scales */
    float z1[V] = {0};
    tt z1t;
    tt_init(&z1t, EMBER_FLOAT32, (const int32_t[]){V}, 1, z1, sizeof z1, false, NULL);
    CHECK_ERR(Q4(wt, st, &z1t.v, -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH, "zero_points");
    /* an int8 weight is not a packed 4-bit table; a 3-d weight no table at all */
    tt w8t, w3t;
    tt_init(&w8t, EMBER_INT8, (const int32_t[]){V, D / 2}, 2, w, sizeof w, false, NULL);
    tt_init(&w3t, EMBER_UINT8, (const int32_t[]){V, 2, D / 4}, 3, w, sizeof w, false, NULL);
    CHECK_STATUS(Q4(w8t, st, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(Q4(w3t, st, VP(kt_none()), -8, 7, it, ot), EMBER_ERR_SHAPE_MISMATCH);
    /* quant ranges: reversed, or wider than 4 bits */
    CHECK_STATUS(Q4(wt, st, VP(kt_none()), 7, -8, it, ot), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(Q4(wt, st, VP(kt_none()), -128, 127, it, ot), EMBER_ERR_INVALID_ARGUMENT);
    /* float indices */
    float fidx[3] = {0};
    tt ft;
    tt_init(&ft, EMBER_FLOAT32, (const int32_t[]){3}, 1, fidx, sizeof fidx, false, NULL);
    CHECK_STATUS(Q4(wt, st, VP(kt_none()), -8, 7, ft, ot), EMBER_ERR_TYPE_MISMATCH);
    /* out of another dtype than the scales'; out too small for the rows */
    double outd[3 * D];
    tt odt, osm;
    tt_init(&odt, EMBER_FLOAT64, (const int32_t[]){3, D}, 2, outd, sizeof outd, true, NULL);
    CHECK_ERR(Q4(wt, st, VP(kt_none()), -8, 7, it, odt), EMBER_ERR_TYPE_MISMATCH, "out");
    tt_init(&osm, EMBER_FLOAT32, (const int32_t[]){2, D}, 2, out, 2 * D * sizeof(float), true,
            NULL);
    CHECK_STATUS(Q4(wt, st, VP(kt_none()), -8, 7, it, osm), EMBER_ERR_SHAPE_MISMATCH);
    /* .dtype_out: dtype disagreeing with out, or not a float */
    const char *kd = "quantized_decomposed::embedding_4bit.dtype_out";
    CHECK_STATUS(CALL(kd, &wt.v, &st.v, VP(kt_none()), VP(kt_int(-8)), VP(kt_int(7)), &it.v,
                      VP(kt_int(EMBER_FLOAT16)), &ot.v, &ot.v),
                 EMBER_ERR_TYPE_MISMATCH);
    int32_t outi[3 * D];
    tt oit;
    tt_init(&oit, EMBER_INT32, (const int32_t[]){3, D}, 2, outi, sizeof outi, true, NULL);
    CHECK_STATUS(CALL(kd, &wt.v, &st.v, VP(kt_none()), VP(kt_int(-8)), VP(kt_int(7)), &it.v,
                      VP(kt_int(EMBER_INT32)), &oit.v, &oit.v),
                 EMBER_ERR_NOT_SUPPORTED);
    /* argument counts of the other overload */
    CHECK_STATUS(CALL(kd, &wt.v, &st.v, VP(kt_none()), VP(kt_int(-8)), VP(kt_int(7)), &it.v,
                      &ot.v, &ot.v),
                 EMBER_ERR_INVALID_PROGRAM);
    /* no indices: an empty (0, D) out */
    tt et;
    tt_init(&et, EMBER_INT64, (const int32_t[]){0}, 1, idx, sizeof idx, false, NULL);
    CHECK_OK(Q4(wt, st, VP(kt_none()), -8, 7, et, ot));
    CHECK(ot.t.sizes[0] == 0 && ot.t.sizes[1] == D);
#undef Q4
}

int main(void) {
    kc_init();
    rng_seed(12345);

    test_byte();
    test_4bit();
    test_2bit();
    test_bad_inputs();
    return check_finish();
}
