/*
 * Tests of the .npy reader/writer used by ember-run and the C tests:
 * round trips for every dtype, files written by NumPy, and every kind of
 * malformed header or data refused with a message (never a crash).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static int g_failures;
static int g_checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        g_checks++;                                                          \
        if (!(cond)) {                                                       \
            g_failures++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                    \
    } while (0)

/* Builds a v1 .npy file in buf from a header dict and raw data. */
static size_t make_npy(unsigned char *buf, size_t cap, unsigned major, const char *dict,
                       const void *data, size_t nbytes) {
    size_t prefix = major == 1 ? 10 : 12;
    size_t hlen = strlen(dict) + 1;
    size_t total = prefix + hlen + nbytes;
    if (total > cap) abort();
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + prefix, dict, hlen - 1);
    buf[prefix + hlen - 1] = '\n';
    if (nbytes) memcpy(buf + prefix + hlen, data, nbytes);
    return total;
}

static int parse_ok(const unsigned char *buf, size_t len, npy_array *a) {
    char err[256] = "";
    int rc = npy_parse(buf, len, a, err, sizeof err);
    if (rc != 0) fprintf(stderr, "unexpected parse error: %s\n", err);
    return rc;
}

/* Expects a parse failure whose message contains `needle`. */
static void expect_error(const unsigned char *buf, size_t len, const char *needle) {
    npy_array a;
    char err[256] = "";
    int rc = npy_parse(buf, len, &a, err, sizeof err);
    CHECK(rc == -1);
    CHECK(a.data == NULL);
    if (strstr(err, needle) == NULL) {
        g_failures++;
        fprintf(stderr, "message '%s' does not contain '%s'\n", err, needle);
    }
    if (rc == 0) npy_free(&a);
}

static void test_roundtrip_all_dtypes(void) {
    static const int dtypes[] = {EMBER_FLOAT16, EMBER_FLOAT32, EMBER_FLOAT64, EMBER_INT8,
                                 EMBER_INT16,   EMBER_INT32,   EMBER_INT64,   EMBER_UINT8,
                                 EMBER_UINT16,  EMBER_UINT32,  EMBER_UINT64,  EMBER_BOOL};
    const char *dir = getenv("EMBER_BINARY_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/test_npy_roundtrip.npy", dir ? dir : ".");
    unsigned char data[2 * 3 * 8];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 7 % 2);
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        const int64_t shapes[][2] = {{2, 3}, {6, 0}, {0, 0}};
        const size_t dims[] = {2, 1, 0};
        for (size_t s = 0; s < 3; s++) {
            char err[256] = "";
            CHECK(npy_descr(dtypes[k]) != NULL);
            int rc = npy_save(path, dtypes[k], shapes[s], dims[s], data, err, sizeof err);
            CHECK(rc == 0);
            npy_array a;
            rc = npy_load(path, &a, err, sizeof err);
            CHECK(rc == 0);
            if (rc != 0) {
                fprintf(stderr, "%s\n", err);
                continue;
            }
            CHECK(a.dtype == dtypes[k]);
            CHECK(a.dim == dims[s]);
            size_t numel = 1;
            for (size_t d = 0; d < dims[s]; d++) {
                CHECK(a.shape[d] == shapes[s][d]);
                numel *= (size_t)shapes[s][d];
            }
            CHECK(a.numel == numel);
            CHECK(a.nbytes <= sizeof data);
            CHECK(memcmp(a.data, data, a.nbytes) == 0);
            CHECK(((uintptr_t)a.data % 16) == 0);
            npy_free(&a);
            CHECK(a.data == NULL);
        }
    }
    remove(path);
    char err[256] = "";
    const int64_t shape[1] = {1};
    CHECK(npy_save(path, EMBER_QINT8, shape, 1, data, err, sizeof err) == -1);
    CHECK(strstr(err, "dtype") != NULL);
}

static void test_numpy_fixture(void) {
    npy_array a;
    char err[256] = "";
    int rc = npy_load("tests/fixtures/mlp/forward.run0.in0.npy", &a, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    if (rc == 0) {
        CHECK(a.dtype == EMBER_FLOAT32);
        CHECK(a.dim == 2);
        CHECK(a.shape[0] == 4 && a.shape[1] == 16);
        CHECK(a.nbytes == 4 * 16 * 4);
        npy_free(&a);
    }
    rc = npy_load("tests/fixtures/does-not-exist.npy", &a, err, sizeof err);
    CHECK(rc == -1);
    CHECK(strstr(err, "does-not-exist.npy") != NULL);
}

static void test_header_forms(void) {
    unsigned char buf[512];
    npy_array a;
    const float f[3] = {1.0f, 2.0f, 3.0f};
    size_t n;

    /* Version 2 and 3, keys in another order, double quotes, Python 2 'L'. */
    n = make_npy(buf, sizeof buf, 2, "{\"shape\": (3L,), 'fortran_order': False, 'descr': '<f4'}",
                 f, sizeof f);
    CHECK(parse_ok(buf, n, &a) == 0);
    CHECK(a.dim == 1 && a.shape[0] == 3 && a.dtype == EMBER_FLOAT32);
    CHECK(memcmp(a.data, f, sizeof f) == 0);
    npy_free(&a);

    n = make_npy(buf, sizeof buf, 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }   ",
                 f, sizeof f);
    CHECK(parse_ok(buf, n, &a) == 0);
    npy_free(&a);

    /* One-byte types: '|' as NumPy writes, '<' accepted too. */
    const unsigned char b[2] = {1, 0};
    n = make_npy(buf, sizeof buf, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", b, 2);
    CHECK(parse_ok(buf, n, &a) == 0);
    CHECK(a.dtype == EMBER_UINT8);
    npy_free(&a);

    /* A scalar. */
    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f, 4);
    CHECK(parse_ok(buf, n, &a) == 0);
    CHECK(a.dim == 0 && a.numel == 1);
    npy_free(&a);
}

static void test_rejects(void) {
    unsigned char buf[512];
    const float f[4] = {0};
    size_t n;

    expect_error((const unsigned char *)"hello", 5, "bad magic");
    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    buf[0] = 'X';
    expect_error(buf, n, "bad magic");

    n = make_npy(buf, sizeof buf, 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    expect_error(buf, n, "version");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f, 16);
    expect_error(buf, n, "fortran_order");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    expect_error(buf, n, "big-endian");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", f, 16);
    expect_error(buf, n, "unsupported dtype");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '|f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    expect_error(buf, n, "unsupported dtype");

    n = make_npy(buf, sizeof buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }",
                 f, 16);
    expect_error(buf, n, "structured");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False}", f, 16);
    expect_error(buf, n, "missing key 'shape'");

    n = make_npy(buf, sizeof buf, 1,
                 "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    expect_error(buf, n, "duplicate");

    n = make_npy(buf, sizeof buf, 1,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}", f, 16);
    expect_error(buf, n, "unknown key");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", f, 16);
    expect_error(buf, n, "not a tuple");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", f, 16);
    expect_error(buf, n, "shape entry 0");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", f, 16);
    expect_error(buf, n, "truncated");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f, 16);
    expect_error(buf, n, "after the data");

    n = make_npy(buf, sizeof buf, 1,
                 "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
                 f, 16);
    expect_error(buf, n, "too large");

    n = make_npy(buf, sizeof buf, 1,
                 "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", f, 16);
    expect_error(buf, n, "shape entry 0");

    n = make_npy(buf, sizeof buf, 1,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': "
                 "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
                 f, 4);
    expect_error(buf, n, "more than");

    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } x", f, 16);
    expect_error(buf, n, "after the dict");

    /* Header length pointing past the end of the file. */
    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", NULL, 0);
    buf[9] = 0x7f;
    expect_error(buf, n, "truncated");

    /* Every truncation of a valid file fails cleanly. */
    n = make_npy(buf, sizeof buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f, 16);
    for (size_t len = 0; len < n; len++) {
        npy_array a;
        char err[256];
        CHECK(npy_parse(buf, len, &a, err, sizeof err) == -1);
    }
}

int main(void) {
    test_roundtrip_all_dtypes();
    test_numpy_fixture();
    test_header_forms();
    test_rejects();
    printf("test_npy: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
