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
 *
 * The device context: one instance per process, made once and kept when
 * programs come and go (1,200 corrupted payloads and every fixture load
 * make no second one); no load, good or bad, leaves a Vulkan object behind
 * (ember_vulkan_info.objects is back at the idle context's after each);
 * with the n-th fallible Vulkan call of an init made to fail, for every n
 * (with the context there, and with it made by that init), the load fails
 * with that call's error and leaves nothing behind; a full pipeline cache
 * gives up the pipelines no loaded program uses and fails cleanly where the
 * loaded ones need more; ember_vulkan_device_release() refuses while a
 * delegate is loaded. Every fixture runs under each shader variant
 * (EMBER_VULKAN_KERNELS=simple|gpu|matvec|tiled) and with unmapped device
 * memory (EMBER_VULKAN_MEMORY=staged).
 * 2,000 inits of valid and corrupted payloads in one
 * process keep one instance, leave the idle context's objects after each,
 * and (Linux, no sanitizers) do not grow the resident set.
 *
 * The pipeline cache file: named by EMBER_VULKAN_PIPELINE_CACHE and by the
 * API, written after an init that compiled pipelines and at release, taken
 * whole by a fresh context; damaged, cut, empty, oversized and foreign files
 * are ignored (the program still right) and replaced; a path that cannot be
 * written fails no load; each fallible Vulkan call of loads that save it
 * fails in turn, cleanly.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__) && defined(__GLIBC__) /* stdio.h defines it */
#include <malloc.h> /* malloc_trim */
#endif

#include "backends/vulkan/vk_testing.h"
#include "check.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "npy.h"
#include "test_util.h"

#define DIR "tests/fixtures/vulkan/"

/* LeakSanitizer's suppressions for this test (sanitizer builds call this;
 * other builds ignore it). Mesa's Vulkan drivers on AMD Zen processors
 * (lavapipe, libvulkan_lvp.so: util_cpu_detect_once -> get_cpu_topology,
 * run when the driver first enumerates its device) realloc the L3-cache
 * affinity masks once per load of the driver, keep them in a driver global
 * and never free them: once the Vulkan loader unloads the driver (with the
 * last instance) that memory is unreachable, 128 bytes a load. VulkanBackend
 * loads the driver once per process and this test keeps it loaded while it
 * lets the context go and come back, so the one allocation stays reachable
 * from the driver's global. Should the driver be loaded again all the same,
 * these entries name it: its functions where it has symbols, its module
 * where it is stripped (as Debian's is) and mapped again at exit. ember's
 * own allocations never run in the driver, and the Vulkan objects ember
 * makes are counted by ember_vulkan_info.objects, which this test checks
 * after every load: a leak of ember's still fails it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:get_cpu_topology\nleak:util_cpu_detect_once\nleak:libvulkan_lvp.so\n";
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

static ember_vulkan_info vk_info(void) {
    ember_vulkan_info info;
    CHECK_OK(ember_vulkan_info_get(&info));
    return info;
}

/* Vulkan objects of the idle context less its pipelines: its instance,
 * device, shader modules and layouts (set by main). */
static size_t g_context_objects;

/* With no delegate loaded, VulkanBackend holds the idle context and its
 * cached pipelines, or nothing at all; where says what just happened. */
static bool check_idle(const char *where) {
    ember_vulkan_info info = vk_info();
    bool ok = info.delegates == 0 && (info.objects == g_context_objects + info.pipelines ||
                                      (info.objects == 0 && info.pipelines == 0));
    return CHECK_MSG(ok, "%s: %zu delegates and %zu Vulkan objects left (idle context %zu, "
                     "%zu pipelines)", where, info.delegates, info.objects, g_context_objects,
                     info.pipelines);
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
    check_idle("a corrupted payload");
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
    uint8_t *pte = test_read_file(DIR "ops.pte", &size);
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

/* Loads pte with the n-th fallible Vulkan call from the start of the load
 * made to fail, for every n up to the number of calls one good load makes:
 * each load fails with the failed call's VkResult in its message and leaves
 * no Vulkan object behind. fresh: the context is released before each load,
 * so the load makes it (instance, device, modules, layouts) too. Then a good
 * load runs <prefix>x_<n> against eager. */
static void fail_each_call(const uint8_t *pte, size_t size, bool fresh, bool cache,
                           const char *prefix, int n) {
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    if (fresh) CHECK_OK(ember_vulkan_device_release());
    uint32_t before = vk_testing_calls();
    size_t made = vk_info().instances_made;
    if (!CHECK_OK(load(pte, size, &bl, &p, &m))) {
        unload(p, m);
        return;
    }
    uint32_t calls = vk_testing_calls() - before;
    ember_vulkan_info loaded = vk_info();
    unload(p, m);
    printf("  a load %s: %u fallible Vulkan calls, %zu objects held while loaded\n",
           fresh ? "that makes the context" : "on the idle context", calls, loaded.objects);
    CHECK(calls > 0 && loaded.delegates >= 1);
    uint32_t saves_cut = 0;
    for (uint32_t k = 1; k <= calls; k++) {
        if (fresh) CHECK_OK(ember_vulkan_device_release());
        uint32_t save_failures = vk_testing_cache_save_failures();
        vk_testing_fail_call(k);
        ember_status st = load(pte, size, &bl, &p, &m);
        vk_testing_fail_call(0);
        /* a failed call of the pipeline cache's save fails the save alone */
        if (vk_testing_cache_save_failures() != save_failures) {
            saves_cut++;
            CHECK_MSG(st == EMBER_OK, "call %u of %u (the cache's save) failed the load: %s", k,
                      calls, ember_last_error());
        } else {
            CHECK_MSG(st != EMBER_OK && strstr(ember_last_error(), "VkResult -1") != NULL,
                      "call %u of %u failed on purpose: status %s, message '%s'", k, calls,
                      ember_status_str(st), ember_last_error());
        }
        unload(p, m);
        char where[64];
        snprintf(where, sizeof where, "vulkan call %u of %u failed", k, calls);
        check_idle(where);
    }
    /* an instance a load that made the context (all but the one whose
     * vkCreateInstance failed); none on the idle context */
    /* the save of a load that compiled pipelines: the size, then the data */
    CHECK_MSG(saves_cut == (cache && fresh ? 2u : 0u), "%u failed calls cut a save", saves_cut);
    size_t instances = vk_info().instances_made - made;
    CHECK_MSG(instances == (fresh ? calls : 0), "%zu instances made for %u loads", instances,
              calls + 1);
    if (CHECK_OK(load(pte, size, &bl, &p, &m))) run_case(m, prefix, n, 1e-4, 1e-5);
    unload(p, m);
    check_idle("a good load after the failed ones");
}

/* The pipeline cache capped at what the attention block and the ops fixture
 * need together, less one: with both loaded the second fails cleanly; with
 * the first unloaded its pipelines make room. */
static void pipeline_cache(const uint8_t *attn, size_t attn_size) {
    size_t ops_size = 0;
    uint8_t *ops = test_read_file(DIR "ops.pte", &ops_size);
    if (!CHECK_MSG(ops != NULL, "cannot read " DIR "ops.pte")) return;
    ember_buffer_loader bl_a, bl_b;
    ember_program *pa, *pb;
    ember_method *ma, *mb;
    CHECK_OK(ember_vulkan_device_release());
    /* both loaded: the pipelines they need together */
    bool ok = CHECK_OK(load(attn, attn_size, &bl_a, &pa, &ma));
    size_t need_a = vk_info().pipelines;
    ok = CHECK_OK(load(ops, ops_size, &bl_b, &pb, &mb)) && ok;
    size_t need_both = vk_info().pipelines;
    unload(pb, mb);
    unload(pa, ma);
    printf("  pipelines: %zu for the attention block, %zu with the ops fixture\n", need_a,
           need_both);
    if (!ok || !CHECK(need_a > 0 && need_both > need_a)) {
        free(ops);
        return;
    }
    CHECK_OK(ember_vulkan_device_release());
    vk_testing_pipeline_cap((uint32_t)need_both - 1);
    if (CHECK_OK(load(attn, attn_size, &bl_a, &pa, &ma))) {
        ember_vulkan_info before = vk_info();
        CHECK_ERR(load(ops, ops_size, &bl_b, &pb, &mb), EMBER_ERR_NOT_SUPPORTED,
                  "pipelines");
        unload(pb, mb);
        /* the failed load leaves the pipelines it made, unused, and no other object */
        ember_vulkan_info after = vk_info();
        CHECK(after.delegates == 1 && after.pipelines == need_both - 1 &&
              after.objects == before.objects + (after.pipelines - before.pipelines));
        /* releasing refuses while a delegate is loaded */
        CHECK_ERR(ember_vulkan_device_release(), EMBER_ERR_INVALID_STATE, "loaded");
        CHECK(vk_info().delegates == 1);
        run_case(ma, "", 3, 1e-4, 1e-5);
    }
    unload(pa, ma);
    /* the attention block's pipelines, unused now, make room */
    if (CHECK_OK(load(ops, ops_size, &bl_b, &pb, &mb)))
        CHECK(vk_info().pipelines <= need_both - 1);
    unload(pb, mb);
    if (CHECK_OK(load(attn, attn_size, &bl_a, &pa, &ma))) run_case(ma, "", 8, 1e-4, 1e-5);
    unload(pa, ma);
    vk_testing_pipeline_cap(0);
    check_idle("the pipeline cache");
    free(ops);
}

/* The fixtures under each shader variant: simple (an invocation per output
 * block or row), gpu (workgroups sharing a block, a row or a head; products
 * by their rows), matvec and tiled (every product in that shader), and
 * matvec's partial sums in shared memory (EMBER_VULKAN_SUBGROUPS=off) as
 * well as with subgroup operations (where the device has them); then with
 * the arena and the weights unmapped (EMBER_VULKAN_MEMORY=staged: inputs
 * and outputs copied through the I/O buffer, weights through staging). */
static void run_variants(void) {
    static const struct {
        const char *kernels, *subgroups, *memory;
    } variants[] = {{"simple", NULL, NULL}, {"gpu", NULL, NULL},    {"matvec", NULL, NULL},
                    {"tiled", NULL, NULL},  {"matvec", "off", NULL}, {"simple", NULL, "staged"},
                    {"gpu", NULL, "staged"}};
    size_t size, q4_size;
    uint8_t *pte = test_read_file(DIR "attention.pte", &size);
    uint8_t *q4 = test_read_file(DIR "q4gsw.pte", &q4_size);
    for (size_t k = 0; pte != NULL && q4 != NULL && k < sizeof variants / sizeof variants[0];
         k++) {
        printf("  %s%s%s\n", variants[k].kernels,
               variants[k].subgroups ? ", EMBER_VULKAN_SUBGROUPS=off" : "",
               variants[k].memory ? ", EMBER_VULKAN_MEMORY=staged" : "");
        CHECK(setenv("EMBER_VULKAN_KERNELS", variants[k].kernels, 1) == 0);
        if (variants[k].subgroups) CHECK(setenv("EMBER_VULKAN_SUBGROUPS", "off", 1) == 0);
        if (variants[k].memory) CHECK(setenv("EMBER_VULKAN_MEMORY", "staged", 1) == 0);
        run_lengths(pte, size, 1e-4, 1e-5);
        run_ops_fixture();
        (void)run_q4gsw(q4, q4_size);
        CHECK(unsetenv("EMBER_VULKAN_KERNELS") == 0 && unsetenv("EMBER_VULKAN_SUBGROUPS") == 0 &&
              unsetenv("EMBER_VULKAN_MEMORY") == 0);
    }
    CHECK_MSG(pte != NULL && q4 != NULL, "cannot read the attention and q4gsw fixtures");
    free(pte);
    free(q4);
}

/* ---- the pipeline cache file ---- */

/* The file's layout (docs/vulkan.md): the driver's data, whose header is
 * VkPipelineCacheHeaderVersionOne (headerSize, headerVersion, vendorID,
 * deviceID, 16-byte UUID, little-endian), then a 16-byte trailer: the
 * FNV-1a 64 hash of the data, the data's length, "EVPC". */
#define TRAILER 16

static uint32_t get32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put32(uint8_t *b, uint32_t v) {
    for (int k = 0; k < 4; k++) b[k] = (uint8_t)(v >> (8 * k));
}

/* Writes a trailer that matches the data, so that a test's forged header
 * reaches the header's checks. */
static void reseal(uint8_t *b, size_t size) {
    size_t n = size - TRAILER;
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * UINT64_C(1099511628211);
    put32(b + n, (uint32_t)h);
    put32(b + n + 4, (uint32_t)(h >> 32));
    put32(b + n + 8, (uint32_t)n);
    memcpy(b + n + 12, "EVPC", 4);
}

/* Whether the file at path looks like a whole cache file: its trailer's
 * length and mark (the hash and header are the library's to check). */
static bool cache_file_whole(const char *path) {
    size_t size = 0;
    uint8_t *b = test_read_file(path, &size);
    bool ok = b != NULL && size >= 32 + TRAILER && get32(b + size - 8) == size - TRAILER &&
              memcmp(b + size - 4, "EVPC", 4) == 0 && get32(b) >= 32;
    free(b);
    return ok;
}

static bool write_bytes(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return false;
    bool ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Files in dir of the names the cache section uses: the cache files and
 * a temporary one for either. */
static int files_in(const char *dir) {
    static const char *const names[] = {"pipelines.bin", "other.bin"};
    char path[700];
    int n = 0;
    for (size_t k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        n += access(path, F_OK) == 0;
        snprintf(path, sizeof path, "%s/%s.%ld.tmp", dir, names[k], (long)getpid());
        n += access(path, F_OK) == 0;
    }
    return n;
}

/* Releases the context and loads attention.pte in a fresh one, which reads
 * the cache file as it is, runs it against eager and unloads it; returns
 * the bytes the context took from the file (SIZE_MAX where the load
 * failed). */
static size_t fresh_load(const uint8_t *pte, size_t size) {
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    size_t taken = SIZE_MAX;
    CHECK_OK(ember_vulkan_device_release());
    if (CHECK_OK(load(pte, size, &bl, &p, &m))) {
        taken = vk_info().pipeline_cache_loaded;
        run_case(m, "", 3, 1e-4, 1e-5);
    }
    unload(p, m);
    check_idle("a load with a pipeline cache file");
    return taken;
}

typedef struct bad_file {
    const char *what;
    size_t cut;            /* bytes to keep (0: all) */
    size_t at;             /* a byte to change... */
    uint8_t xor_with;      /* ...by this (0: none) */
    bool reseal;           /* a trailer that matches the change */
} bad_file;

/* A damaged, cut or foreign file: the context ignores it (no error, the
 * pipelines compiled afresh, the program right) and the save after the
 * init replaces it with a whole file. */
static void bad_cache_files(const uint8_t *pte, size_t size, const char *path, const uint8_t *good,
                            size_t good_size) {
    const bad_file bad[] = {
        {"an empty file", 1, 0, 0, false}, /* cut to 1 byte below, then emptied */
        {"10 bytes", 10, 0, 0, false},
        {"cut by one byte", good_size - 1, 0, 0, false},
        {"cut in half", good_size / 2, 0, 0, false},
        {"a flipped byte", 0, good_size / 2, 0x40, false},
        {"a flipped trailer hash", 0, good_size - TRAILER, 0x01, false},
        {"headerSize 8", 0, 0, 32 ^ 8, true},
        {"headerSize past the data", 0, 1, 0x10, true},
        {"headerVersion 2", 0, 4, 1 ^ 2, true},
        {"another vendor", 0, 8, 0x01, true},
        {"another device", 0, 12, 0x01, true},
        {"another driver (pipelineCacheUUID)", 0, 16 + 7, 0x80, true},
    };
    uint8_t *b = malloc(good_size);
    if (!CHECK(b != NULL)) return;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(b, good, good_size);
        size_t n = bad[k].cut ? bad[k].cut : good_size;
        if (k == 0) n = 0;
        b[bad[k].at] ^= bad[k].xor_with;
        if (bad[k].reseal) reseal(b, n);
        CHECK(write_bytes(path, b, n));
        size_t taken = fresh_load(pte, size);
        CHECK_MSG(taken == 0, "%s: %zu bytes taken", bad[k].what, taken);
        CHECK_MSG(cache_file_whole(path), "%s: not replaced by a whole file", bad[k].what);
    }
    free(b);
    /* a file beyond any cache's size is not read (sparse: no disk used) */
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL && fclose(f) == 0 && truncate(path, (off_t)(65 << 20)) == 0);
    CHECK_MSG(fresh_load(pte, size) == 0, "a 65 MiB file was taken");
    CHECK(cache_file_whole(path));
}

/* The pipeline cache file, named by the environment and by the API: a
 * fresh context takes a whole file and compiles nothing anew; a bad one is
 * ignored; a failed save fails no load; the file is never left in part;
 * every fallible call of a load that saves the file fails cleanly. */
static void pipeline_cache_file(const uint8_t *pte, size_t size) {
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600], other[600];
    snprintf(dir, sizeof dir, "%s/ember_vk_cache_XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (!CHECK_MSG(mkdtemp(dir) != NULL, "mkdtemp %s", dir)) return;
    snprintf(path, sizeof path, "%s/pipelines.bin", dir);
    snprintf(other, sizeof other, "%s/other.bin", dir);

    /* EMBER_VULKAN_PIPELINE_CACHE, read when the context is made */
    CHECK(setenv("EMBER_VULKAN_PIPELINE_CACHE", path, 1) == 0);
    CHECK_MSG(fresh_load(pte, size) == 0, "no file yet, yet bytes were taken");
    CHECK(cache_file_whole(path) && files_in(dir) == 1); /* no temporary left */
    size_t warm = fresh_load(pte, size);
    CHECK(unsetenv("EMBER_VULKAN_PIPELINE_CACHE") == 0);
    size_t good_size = 0;
    uint8_t *good = test_read_file(path, &good_size);
    if (!CHECK(good != NULL)) return;
    printf("  cache file: %zu bytes; a fresh context took %zu\n", good_size, warm);
    CHECK_MSG(warm + TRAILER == good_size, "%zu bytes taken from a %zu-byte file", warm,
              good_size);
    /* without the variable (and no API call yet), no file */
    CHECK(remove(path) == 0);
    CHECK(fresh_load(pte, size) == 0 && files_in(dir) == 0);

    /* the API: the environment is not read again */
    CHECK(write_bytes(path, good, good_size));
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(path));
    CHECK(setenv("EMBER_VULKAN_PIPELINE_CACHE", other, 1) == 0);
    CHECK(fresh_load(pte, size) == good_size - TRAILER && files_in(dir) == 1);
    CHECK(unsetenv("EMBER_VULKAN_PIPELINE_CACHE") == 0);
    bad_cache_files(pte, size, path, good, good_size);

    /* named while the context exists: read into it at once, written at the
     * release */
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(NULL));
    CHECK(remove(path) == 0);
    CHECK(fresh_load(pte, size) == 0 && files_in(dir) == 0);
    CHECK(write_bytes(other, good, good_size));
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(other));
    CHECK(vk_info().pipeline_cache_loaded == good_size - TRAILER);
    check_idle("a cache file named while the context exists");
    CHECK(remove(other) == 0);
    CHECK_OK(ember_vulkan_device_release());
    CHECK(cache_file_whole(other));

    /* a path too long changes nothing */
    char longer[1100];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    CHECK_ERR(ember_vulkan_set_pipeline_cache_file(longer), EMBER_ERR_INVALID_ARGUMENT, "1023");
    CHECK(fresh_load(pte, size) == good_size - TRAILER);

    /* a file that cannot be written (its path is a directory): the load is
     * fine, the failures counted (and logged): the release's save (the
     * context's pipelines, new to the file named) and the init's */
    uint32_t failed = vk_testing_cache_save_failures();
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(dir));
    CHECK(fresh_load(pte, size) == 0);
    CHECK_EQ_INT(vk_testing_cache_save_failures(), failed + 2);

    /* every fallible call of loads that make the context and save the file */
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(path));
    fail_each_call(pte, size, true, true, "", 8);
    CHECK(cache_file_whole(path));
    CHECK_OK(ember_vulkan_set_pipeline_cache_file(NULL));
    CHECK(remove(path) == 0 && remove(other) == 0 && files_in(dir) == 0 && rmdir(dir) == 0);
    free(good);
}

/* ---- many inits in one process ---- */

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

/* The process's resident set in bytes, once the allocator has given its
 * free memory back (a payload that asks for a large arena leaves the heap
 * grown, which is no leak); 0 where unknown (not Linux with glibc). */
static size_t resident_bytes(void) {
#if defined(__linux__) && defined(__GLIBC__)
    malloc_trim(0);
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long total = 0, resident = 0;
    if (f == NULL) return 0;
    int got = fscanf(f, "%lu %lu", &total, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return got == 2 && page > 0 ? (size_t)resident * (size_t)page : 0;
#else
    return 0;
#endif
}

/* 2,000 inits in one process, every other one a payload with one to three
 * flipped bytes: one Vulkan instance throughout, the idle context's objects
 * after each, and (Linux, no sanitizers: their allocators keep freed memory
 * in quarantine) a resident set that does not grow once a few hundred
 * inits have warmed the allocators and the driver up. A leak of 1 KiB an
 * init would add 1.7 MiB over the measured inits, above the slack. */
static void many_inits(const uint8_t *pte, size_t size) {
    enum { INITS = 2000, WARM = 300 };
    size_t at = 0;
    for (size_t i = 4; i + 4 <= size && at == 0; i++)
        if (memcmp(pte + i, "VH00", 4) == 0) at = i - 4;
    uint32_t fb_at, fb_size;
    memcpy(&fb_at, pte + at + 10, 4);
    memcpy(&fb_size, pte + at + 14, 4);
    size_t end = at + fb_at + fb_size;
    uint8_t *copy = malloc(size);
    if (!CHECK(at > 0 && end <= size && copy != NULL)) {
        free(copy);
        return;
    }
    uint32_t seed = 2024;
    size_t rss_warm = 0;
    int loaded = 0;
    for (int k = 0; k < INITS; k++) {
        if (k == WARM) rss_warm = resident_bytes();
        memcpy(copy, pte, size);
        for (int j = 0; k % 2 == 1 && j < 1 + k % 3; j++) {
            seed = seed * 1664525u + 1013904223u;
            copy[at + 30 + (seed >> 8) % (end - at - 30)] ^= (uint8_t)(1u + (seed >> 3) % 255u);
        }
        ember_buffer_loader bl;
        ember_program *p;
        ember_method *m;
        ember_status st = load(copy, size, &bl, &p, &m);
        if (k % 2 == 0) CHECK_OK(st);
        if (st == EMBER_OK && k % 500 == 0) run_case(m, "", 3, 1e-4, 1e-5);
        loaded += st == EMBER_OK;
        unload(p, m);
        ember_vulkan_info info = vk_info();
        if (!CHECK_MSG(info.instances_made == 1 && info.delegates == 0 &&
                           info.objects == g_context_objects + info.pipelines,
                       "init %d: %zu instances made, %zu delegates, %zu objects (idle context "
                       "%zu + %zu pipelines)",
                       k, info.instances_made, info.delegates, info.objects, g_context_objects,
                       info.pipelines))
            break;
    }
    size_t rss_end = resident_bytes();
    free(copy);
    printf("  %d inits (%d loaded): resident set %zu KiB after %d, %zu KiB at the end\n", INITS,
           loaded, rss_warm >> 10, WARM, rss_end >> 10);
#ifndef SANITIZED
    const size_t slack = 1u << 20;
    if (rss_warm > 0 && rss_end > 0)
        CHECK_MSG(rss_end <= rss_warm + slack, "the resident set grew by %zu KiB over %d inits",
                  (rss_end - rss_warm) >> 10, INITS - WARM);
#endif
}

int main(void) {
    if (!CHECK_OK(ember_portable_kernels_register()) ||
        !CHECK_OK(ember_vulkan_backend_register()))
        return check_finish();
    size_t size = 0;
    uint8_t *pte = test_read_file(DIR "attention.pte", &size);
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
    /* the pipeline cache file is the cache section's to name */
    CHECK(unsetenv("EMBER_VULKAN_PIPELINE_CACHE") == 0);
    printf("device: %s\n", ember_vulkan_device_name());
    /* the idle context: made by is_available(), before any delegate */
    ember_vulkan_info idle = vk_info();
    g_context_objects = idle.objects;
    printf("idle context: %zu Vulkan objects\n", idle.objects);
    CHECK(idle.instances_made == 1 && idle.delegates == 0 && idle.pipelines == 0 &&
          idle.objects > 2);
    check_section("attention block at several lengths");
    run_lengths(pte, size, 1e-4, 1e-5);
    check_section("transposed conv, group norm, upsampling, index_select; bad indices");
    run_ops_fixture();
    check_section("corrupted payloads");
    const corrupt_input attention_in = {{1, 3, 32}, 3};
    corrupt(pte, size, &attention_in);
    check_section("2,000 inits, valid and corrupted, in one process");
    many_inits(pte, size);
    free(pte);

    pte = test_read_file(DIR "q4gsw.pte", &size);
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

    pte = test_read_file(DIR "attention_fp16.pte", &size);
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

    check_section("every shader variant (EMBER_VULKAN_KERNELS)");
    run_variants();

    check_section("one device context for every load above");
    info = vk_info();
    CHECK_MSG(info.instances_made == 1, "%zu Vulkan instances made", info.instances_made);
    check_idle("every load above");

    pte = test_read_file(DIR "attention.pte", &size);
    if (!CHECK_MSG(pte != NULL, "cannot read " DIR "attention.pte")) return check_finish();
    check_section("each fallible Vulkan call of an init failed in turn");
    fail_each_call(pte, size, false, false, "", 3);
    /* and with the arena and the weights unmapped: the staging buffer, the
     * I/O buffer, the upload's command buffer and submissions */
    CHECK(setenv("EMBER_VULKAN_MEMORY", "staged", 1) == 0);
    fail_each_call(pte, size, false, false, "", 3);
    CHECK(unsetenv("EMBER_VULKAN_MEMORY") == 0);
    /* the context made and released for every load: the test keeps the
     * driver loaded meanwhile, as one context per process does */
    CHECK(vk_testing_hold_driver());
    fail_each_call(pte, size, true, false, "", 8);
    check_section("the pipeline cache file");
    pipeline_cache_file(pte, size);
    check_section("a full pipeline cache; releasing the context");
    pipeline_cache(pte, size);
    size_t made = vk_info().instances_made;
    CHECK_OK(ember_vulkan_device_release());
    info = vk_info();
    CHECK(info.objects == 0 && info.pipelines == 0 && info.delegates == 0);
    CHECK_OK(ember_vulkan_device_release()); /* nothing to release */
    /* a load after the release makes the context anew, which then keeps the
     * driver loaded to the end, as in any process */
    ember_buffer_loader bl;
    ember_program *p;
    ember_method *m;
    if (CHECK_OK(load(pte, size, &bl, &p, &m))) run_case(m, "", 1, 1e-4, 1e-5);
    unload(p, m);
    info = vk_info();
    CHECK(info.instances_made == made + 1 && info.objects == g_context_objects + info.pipelines);
    /* the context goes before the process ends, so that LeakSanitizer finds
     * the driver's threads joined and its device memory freed; the test's
     * instance keeps the driver loaded, its per-load memory reachable */
    CHECK_OK(ember_vulkan_device_release());
    free(pte);
    return check_finish();
}
