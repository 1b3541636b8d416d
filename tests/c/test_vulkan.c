/*
 * VulkanBackend: tests/fixtures/vulkan/attention.pte (lowered by the reference
 * exporter's VulkanPartitioner, dynamic sequence 1..8) runs and matches
 * eager PyTorch at several lengths; a length above the bound fails cleanly;
 * corrupted payloads (header fields, flipped bytes, truncations) fail with a
 * message or run, never crash (this test runs under ASan + UBSan too).
 * attention_fp16.pte, the same block lowered with force_fp16, does the same
 * within float16 tolerances, with its tensors in 16-bit storage where the
 * device has it (its weights then take about half the bytes) and with
 * EMBER_VULKAN_STORAGE=float32 (the widening path of devices without).
 * Where no Vulkan device exists, loading the program must fail cleanly.
 * tests/fixtures/vulkan/ops.pte (a transposed convolution, a group norm, a
 * bilinear upsampling, index_select by an int64 input) matches eager; an
 * index outside its dim fails with INDEX_OUT_OF_RANGE, and the method runs
 * again afterwards. tests/fixtures/vulkan/q4gsw.pte (an MLP whose linears are
 * et_vk.linear_q4gsw, 4-bit weights in groups of 32, dynamic rows) matches
 * eager at two row counts with its weights packed on the device and widened
 * (EMBER_VULKAN_STORAGE=float32), and its corrupted payloads fail cleanly.
 */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "npy.h"

#define DIR "tests/fixtures/vulkan/"

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Loads a program from bytes and its forward method. */
static ember_status load(const uint8_t *bytes, size_t size, ember_buffer_loader *bl,
                         ember_program **p, ember_method **m) {
    *p = NULL;
    *m = NULL;
    ember_buffer_loader_init(bl, bytes, size);
    ember_status st = ember_program_load(&bl->base, NULL, p);
    if (st == EMBER_OK) st = ember_method_load(*p, "forward", NULL, m);
    return st;
}

static void unload(ember_program *p, ember_method *m) {
    ember_method_destroy(m);
    ember_program_destroy(p);
}

/* Runs the attention block at several lengths; outputs within
 * atol + rtol * |expected| of eager float32. */
/* Runs m on DIR <prefix>x_<n>.npy and compares its output with
 * <prefix>y_<n>.npy, each element within atol + rtol * |expected|. */
static void run_case(ember_method *m, const char *prefix, int n, double rtol, double atol) {
    char path[128], err[256];
    npy_array x, y;
    snprintf(path, sizeof path, DIR "%sx_%d.npy", prefix, n);
    if (!CHECK_MSG(npy_load(path, &x, err, sizeof err) == 0, "%s: %s", path, err)) return;
    snprintf(path, sizeof path, DIR "%sy_%d.npy", prefix, n);
    if (!CHECK_MSG(npy_load(path, &y, err, sizeof err) == 0, "%s: %s", path, err)) {
        npy_free(&x);
        return;
    }
    const ember_value *out;
    if (CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, x.shape, x.dim, x.data,
                                               x.nbytes)) &&
        CHECK_OK(ember_method_execute(m)) && CHECK_OK(ember_method_output(m, 0, &out)) &&
        CHECK(out->tag == EMBER_TAG_TENSOR) && CHECK_EQ_INT(out->u.t->numel, (int64_t)y.numel)) {
        double worst = 0;
        for (size_t i = 0; i < y.numel; i++) {
            double g = ((const float *)out->u.t->data)[i], w = ((const float *)y.data)[i];
            double e = fabs(g - w) / (atol + rtol * fabs(w));
            if (!(e <= worst)) worst = e;
        }
        CHECK_MSG(worst <= 1.0, "%s%d: error %.3g tolerances", prefix, n, worst);
    }
    npy_free(&x);
    npy_free(&y);
}

static void run_lengths(const uint8_t *pte, size_t size, double rtol, double atol) {
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    if (!CHECK_OK(load(pte, size, &bl, &p, &m))) {
        unload(p, m);
        return;
    }
    static const int lengths[] = {3, 8, 1, 8, 3};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++)
        run_case(m, "", lengths[k], rtol, atol);
    /* above the bound: a clean error, then the method still runs */
    float big[9 * 32] = {0};
    int64_t shape[3] = {1, 9, 32};
    ember_status st = ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, shape, 3, big, sizeof big);
    if (st == EMBER_OK) st = ember_method_execute(m);
    CHECK(st != EMBER_OK && ember_last_error()[0] != '\0');
    shape[1] = 2;
    CHECK_OK(ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, shape, 3, big, 2 * 32 * 4));
    CHECK_OK(ember_method_execute(m));
    unload(p, m);
}

/* The shape of the float32 input that corrupted programs run with. */
typedef struct corrupt_input {
    int64_t shape[3];
    size_t dim;
} corrupt_input;

/* Loads and runs a corrupted program: any status is fine, but a failure must
 * come with a message. */
static int run_corrupt(const uint8_t *bytes, size_t size, const corrupt_input *in) {
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    ember_status st = load(bytes, size, &bl, &p, &m);
    if (st == EMBER_OK) {
        float x[3 * 64];
        for (size_t i = 0; i < 3 * 64; i++) x[i] = (float)i * 0.01f;
        size_t n = 1;
        for (size_t d = 0; d < in->dim; d++) n *= (size_t)in->shape[d];
        st = n <= 3 * 64 ? ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, in->shape, in->dim,
                                                         x, n * sizeof(float))
                         : EMBER_ERR_INVALID_ARGUMENT;
        if (st == EMBER_OK) st = ember_method_execute(m);
    }
    if (st != EMBER_OK) CHECK_MSG(ember_last_error()[0] != '\0', "status %s without a message",
                                  ember_status_str(st));
    unload(p, m);
    return st == EMBER_OK;
}

static void corrupt(const uint8_t *pte, size_t size, const corrupt_input *in) {
    /* the payload: "VH00" at +4 of its header */
    size_t at = 0;
    for (size_t i = 4; i + 4 <= size; i++)
        if (memcmp(pte + i, "VH00", 4) == 0) {
            at = i - 4;
            break;
        }
    if (!CHECK_MSG(at > 0, "no Vulkan payload in the fixture")) return;
    uint32_t fb_at, fb_size;
    memcpy(&fb_at, pte + at + 10, 4);
    memcpy(&fb_size, pte + at + 14, 4);
    size_t end = at + fb_at + fb_size;
    if (!CHECK(end <= size)) return;
    uint8_t *copy = malloc(size);
    if (!CHECK(copy != NULL)) return;
    /* header fields: offsets and sizes out of range */
    static const struct { size_t field; uint32_t value; } bad[] = {
        {8, 31}, {10, 0xFFFFFF00u}, {14, 0xFFFFFF00u}, {14, 4}, {18, 0xFFFFFFF0u}, {22, 0xFFFFFFFFu},
        {26, 0xFFFFFFFFu},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(copy, pte, size);
        memcpy(copy + at + bad[k].field, &bad[k].value, bad[k].field == 8 ? 2 : 4);
        CHECK_MSG(run_corrupt(copy, size, in) == 0, "header field %zu = %u was accepted",
                  bad[k].field, bad[k].value);
    }
    /* the reader names the backend: a flatbuffer cut short is a bad payload */
    {
        memcpy(copy, pte, size);
        const uint32_t short_fb = 4;
        memcpy(copy + at + 14, &short_fb, 4);
        ember_buffer_loader bl;
        ember_program *p;
        ember_method *m;
        CHECK_ERR(load(copy, size, &bl, &p, &m), EMBER_ERR_INVALID_PROGRAM, "vulkan payload: ");
        unload(p, m);
    }
    /* flipped bytes all over the flatbuffer */
    uint32_t seed = 12345;
    int ran = 0;
    for (int k = 0; k < 400; k++) {
        memcpy(copy, pte, size);
        for (int j = 0; j < 1 + k % 3; j++) {
            seed = seed * 1664525u + 1013904223u;
            size_t pos = at + 30 + (seed >> 8) % (end - at - 30);
            copy[pos] ^= (uint8_t)(1u + (seed >> 3) % 255u);
        }
        ran += run_corrupt(copy, size, in);
    }
    printf("  400 corrupted payloads: %d ran, %d failed cleanly\n", ran, 400 - ran);
    free(copy);
}

/* Sets ops.pte's inputs (x, and the index i with i[1] replaced by bad_index
 * unless it is 0) and runs it. */
static ember_status run_ops(ember_method *m, const npy_array *x, const npy_array *i,
                            int64_t bad_index) {
    int64_t idx[8];
    if (i->numel > 8) return EMBER_ERR_INVALID_ARGUMENT;
    memcpy(idx, i->data, i->numel * sizeof(int64_t));
    if (bad_index != 0) idx[1] = bad_index;
    ember_status st = ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, x->shape, x->dim, x->data,
                                                    x->nbytes);
    if (st == EMBER_OK)
        st = ember_method_set_input_tensor(m, 1, EMBER_INT64, i->shape, i->dim, idx, i->nbytes);
    return st == EMBER_OK ? ember_method_execute(m) : st;
}

static void run_ops_fixture(void) {
    size_t size = 0;
    uint8_t *pte = read_file(DIR "ops.pte", &size);
    char err[256];
    npy_array x, i;
    if (!CHECK_MSG(pte != NULL, "cannot read " DIR "ops.pte")) return;
    if (!CHECK_MSG(npy_load(DIR "ops_x.npy", &x, err, sizeof err) == 0, "%s", err)) {
        free(pte);
        return;
    }
    if (!CHECK_MSG(npy_load(DIR "ops_i.npy", &i, err, sizeof err) == 0, "%s", err)) {
        npy_free(&x);
        free(pte);
        return;
    }
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    if (CHECK_OK(load(pte, size, &bl, &p, &m)) && CHECK_OK(run_ops(m, &x, &i, 0))) {
        for (size_t k = 0; k < 4; k++) {
            char path[128];
            npy_array y;
            const ember_value *out;
            snprintf(path, sizeof path, DIR "ops_y%zu.npy", k);
            if (!CHECK_MSG(npy_load(path, &y, err, sizeof err) == 0, "%s: %s", path, err)) continue;
            if (CHECK_OK(ember_method_output(m, k, &out)) && CHECK(out->tag == EMBER_TAG_TENSOR) &&
                CHECK_EQ_INT(out->u.t->numel, (int64_t)y.numel)) {
                double worst = 0;
                for (size_t e = 0; e < y.numel; e++) {
                    double g = ((const float *)out->u.t->data)[e], w = ((const float *)y.data)[e];
                    double d = fabs(g - w) / (1e-5 + 1e-4 * fabs(w));
                    if (!(d <= worst)) worst = d;
                }
                CHECK_MSG(worst <= 1.0, "output %zu: error %.3g tolerances", k, worst);
            }
            npy_free(&y);
        }
        /* indices outside dim 1 (size 4): a clean error naming index_select */
        static const int64_t bad[] = {4, -1, 1000};
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            ember_status st = run_ops(m, &x, &i, bad[k]);
            CHECK_MSG(st == EMBER_ERR_INDEX_OUT_OF_RANGE, "index %lld: status %s",
                      (long long)bad[k], ember_status_str(st));
            CHECK_MSG(strstr(ember_last_error(), "index_select") != NULL, "message: %s",
                      ember_last_error());
        }
        CHECK_OK(run_ops(m, &x, &i, 0));
    }
    unload(p, m);
    npy_free(&x);
    npy_free(&i);
    free(pte);
}

/* q4gsw.pte at rows 5 and 1 against eager; returns the weights' bytes on the
 * device (0 where it failed). */
static size_t run_q4gsw(const uint8_t *pte, size_t size) {
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    size_t weights = 0;
    ember_vulkan_info info;
    if (!CHECK_OK(load(pte, size, &bl, &p, &m)) || !CHECK_OK(ember_vulkan_info_get(&info))) {
        unload(p, m);
        return 0;
    }
    weights = info.weights_bytes;
    static const int rows[] = {5, 1, 5};
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        run_case(m, "q4gsw_", rows[k], 1e-4, 1e-5);
    unload(p, m);
    return weights;
}

int main(void) {
    if (!CHECK_OK(ember_portable_kernels_register()) ||
        !CHECK_OK(ember_vulkan_backend_register()))
        return check_finish();
    size_t size = 0;
    uint8_t *pte = read_file(DIR "attention.pte", &size);
    if (!CHECK_MSG(pte != NULL, "cannot read " DIR "attention.pte")) return check_finish();
    const ember_backend *b = ember_backend_find("VulkanBackend", strlen("VulkanBackend"));
    if (!CHECK(b != NULL)) return check_finish();
    if (!b->is_available()) {
        check_section("no Vulkan device: a clean error");
        ember_buffer_loader bl;
        ember_program *p;
        ember_method *m;
        CHECK(load(pte, size, &bl, &p, &m) != EMBER_OK && ember_last_error()[0] != '\0');
        unload(p, m);
        CHECK(ember_vulkan_device_name() == NULL);
        free(pte);
        return check_finish();
    }
    printf("device: %s\n", ember_vulkan_device_name());
    check_section("attention block at several lengths");
    run_lengths(pte, size, 1e-4, 1e-5);
    check_section("transposed conv, group norm, upsampling, index_select; bad indices");
    run_ops_fixture();
    check_section("corrupted payloads");
    const corrupt_input attention_in = {{1, 3, 32}, 3};
    corrupt(pte, size, &attention_in);
    free(pte);

    pte = read_file(DIR "q4gsw.pte", &size);
    if (!CHECK_MSG(pte != NULL, "cannot read " DIR "q4gsw.pte")) return check_finish();
    check_section("4-bit groupwise linears (et_vk.linear_q4gsw), packed and widened");
    size_t packed = run_q4gsw(pte, size);
    CHECK(setenv("EMBER_VULKAN_STORAGE", "float32", 1) == 0);
    size_t widened = run_q4gsw(pte, size);
    CHECK(unsetenv("EMBER_VULKAN_STORAGE") == 0);
    /* 4-bit weights: 64 * 96 / 2 + 96 * 32 / 2 bytes packed, a word a byte widened */
    printf("  weights: %zu bytes packed, %zu widened\n", packed, widened);
    CHECK_MSG(packed < 64 * 96 / 2 + 96 * 32 / 2 + 4096 && 3 * packed < widened,
              "weights: %zu bytes packed, %zu widened", packed, widened);
    check_section("corrupted 4-bit linear payloads");
    const corrupt_input q4gsw_in = {{3, 64, 0}, 2};
    corrupt(pte, size, &q4gsw_in);
    free(pte);

    pte = read_file(DIR "attention_fp16.pte", &size);
    if (!CHECK_MSG(pte != NULL, "cannot read " DIR "attention_fp16.pte")) return check_finish();
    ember_vulkan_info info;
    CHECK_OK(ember_vulkan_info_get(&info));
    printf("float16 storage: %s\n", info.float16_storage ? "yes" : "no");
    size_t weights[2] = {0, 0};
    for (int forced = 0; forced < 2; forced++) {
        check_section(forced ? "force_fp16 attention, EMBER_VULKAN_STORAGE=float32"
                             : "force_fp16 attention, the device's storage");
        if (forced) CHECK(setenv("EMBER_VULKAN_STORAGE", "float32", 1) == 0);
        ember_buffer_loader bl;
        ember_program *p;
        ember_method *m;
        if (CHECK_OK(load(pte, size, &bl, &p, &m)) && CHECK_OK(ember_vulkan_info_get(&info))) {
            weights[forced] = info.weights_bytes;
            CHECK(info.arena_bytes > 0 && info.weights_bytes > 0);
            CHECK(!forced || !info.float16_storage);
        }
        unload(p, m);
        CHECK_OK(ember_vulkan_info_get(&info));
        CHECK(info.weights_bytes == 0 && info.arena_bytes == 0);
        run_lengths(pte, size, 1e-2, 1e-2);
        if (forced) CHECK(unsetenv("EMBER_VULKAN_STORAGE") == 0);
    }
    printf("  weights: %zu bytes in the device's storage, %zu widened\n", weights[0], weights[1]);
    CHECK_OK(ember_vulkan_info_get(&info));
    if (info.float16_storage)
        CHECK_MSG(2 * weights[0] <= weights[1] + 1024, "weights: %zu bytes in 16-bit storage, %zu "
                  "widened", weights[0], weights[1]);
    else
        CHECK(weights[0] == weights[1]);
    check_section("corrupted force_fp16 payloads");
    corrupt(pte, size, &attention_in);
    free(pte);
    return check_finish();
}
