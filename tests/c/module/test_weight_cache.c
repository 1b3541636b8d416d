/*
 * The weight cache (ember/weight_cache.h) through the module and on its
 * own: a first load writes the packed weights, a second maps them and gives
 * bit-identical outputs; a damaged, foreign or truncated file is ignored
 * and replaced without a crash; a directory that cannot be written, or a
 * model too small to be worth it, leaves no file and loads the same; a
 * cache that answers with misaligned bytes is not used.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/module.h"
#include "kernels/optimized/cpu.h"
#include "npy.h"
#include "test_util.h"

#define FIXTURES "tests/fixtures/"

static char g_dir[64];

/* The output of one run of `program` on its first manifest input, as
 * bytes (malloc'd; NULL on failure), with the module's cache report. */
static uint8_t *run(const char *name, const char *dir, uint64_t min_bytes,
                    ember_weight_cache_info *info, size_t *bytes) {
    char pte[256], input[256];
    snprintf(pte, sizeof pte, FIXTURES "%s.pte", name);
    snprintf(input, sizeof input, FIXTURES "%s/forward.run0.in0.npy", name);
    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    mo.num_threads = 1;
    mo.weight_cache_dir = dir;
    mo.weight_cache_min_bytes = min_bytes;
    ember_module *mod = NULL;
    ember_method *m = NULL;
    uint8_t *out = NULL;
    npy_array in;
    char err[256];
    if (!CHECK_MSG(npy_load(input, &in, err, sizeof err) == 0, "%s", err)) return NULL;
    if (CHECK_OK(ember_module_load_with(pte, &mo, &mod)) &&
        CHECK_OK(ember_module_method(mod, "forward", &m)) &&
        CHECK_OK(ember_method_set_input_tensor(m, 0, (ember_dtype)in.dtype, in.shape, in.dim,
                                               in.data, in.nbytes)) &&
        CHECK_OK(ember_method_execute(m))) {
        const ember_value *v = NULL;
        if (CHECK_OK(ember_method_output(m, 0, &v)) && CHECK(v->tag == EMBER_TAG_TENSOR)) {
            *bytes = v->u.t->nbytes;
            out = malloc(*bytes);
            if (out != NULL) memcpy(out, v->u.t->data, *bytes);
        }
    }
    if (info != NULL) {
        ember_module_weight_cache_info(mod, info);
        /* the strings die with the module: keep what the checks read */
        static char path[512], message[256];
        snprintf(path, sizeof path, "%s", info->path != NULL ? info->path : "");
        snprintf(message, sizeof message, "%s", info->message);
        info->path = path;
        info->message = message;
    }
    ember_module_destroy(mod);
    npy_free(&in);
    return out;
}

static bool same(const uint8_t *a, const uint8_t *b, size_t n) {
    return a != NULL && b != NULL && memcmp(a, b, n) == 0;
}

static bool write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static size_t count_files(const char *dir) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A %s 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    unsigned long n = 0;
    if (p == NULL) return 0;
    if (fscanf(p, "%lu", &n) != 1) n = 0;
    pclose(p);
    return (size_t)n;
}

/* Cold, warm, and against no cache at all, for one fixture. */
static void test_cold_warm(const char *name) {
    check_section(name);
    size_t n0 = 0, n1 = 0, n2 = 0;
    ember_weight_cache_info info;
    uint8_t *plain = run(name, NULL, 0, &info, &n0);
    CHECK(info.state == EMBER_WEIGHT_CACHE_OFF);
    uint8_t *cold = run(name, g_dir, 0, &info, &n1);
    CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_WRITTEN, "state %d: %s", (int)info.state,
              info.message);
    CHECK(info.entries > 0 && info.bytes > 0 && info.hits == 0);
    CHECK_CONTAINS(info.path, g_dir);
    CHECK_CONTAINS(info.path, name);
    const size_t entries = info.entries;
    uint8_t *warm = run(name, g_dir, 0, &info, &n2);
    CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_MAPPED, "state %d: %s", (int)info.state,
              info.message);
    CHECK(info.entries == entries && info.hits == entries && info.misses == 0);
    CHECK(n0 == n1 && n1 == n2);
    CHECK_MSG(same(plain, cold, n0) && same(cold, warm, n0),
              "outputs differ between no cache, cold and warm");
    free(plain);
    free(cold);
    free(warm);
}

/* A file written at the best ISA, loaded at another: the float32 panels it
 * lacks (their keys name the ISA) are packed and added, and a load at
 * either ISA then maps everything. */
static void test_other_isa(const char *name) {
    check_section("a cache file extended at another ISA");
    const eko_isa best = eko_isa_active();
    eko_isa other = best;
    for (int i = 0; i < EKO_ISA_COUNT && other == best; i++)
        if ((eko_isa)i != best && eko_isa_supported((eko_isa)i)) other = (eko_isa)i;
    size_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    ember_weight_cache_info info;
    uint8_t *first = run(name, g_dir, 0, &info, &n0); /* written or mapped already */
    const size_t entries = info.entries;
    CHECK(entries > 0);
    if (!CHECK(eko_isa_set(other))) return;
    uint8_t *plain = run(name, NULL, 0, &info, &n1);
    uint8_t *extended = run(name, g_dir, 0, &info, &n2);
    if (other != best) {
        CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_EXTENDED, "state %d: %s", (int)info.state,
                  info.message);
        CHECK(info.added > 0 && info.entries == entries + info.added);
    }
    uint8_t *mapped = run(name, g_dir, 0, &info, &n3);
    CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_MAPPED && info.misses == 0, "state %d: %s",
              (int)info.state, info.message);
    CHECK(n1 == n2 && n2 == n3 && same(plain, extended, n1) && same(plain, mapped, n1));
    eko_isa_set(best);
    free(mapped);
    mapped = run(name, g_dir, 0, &info, &n3);
    CHECK(info.state == EMBER_WEIGHT_CACHE_MAPPED && info.misses == 0);
    CHECK(n0 == n3 && same(first, mapped, n0));
    free(first);
    free(plain);
    free(extended);
    free(mapped);
}

/* Every kind of damage to the file: never a crash; a header that is not
 * this program's, or sizes that do not match, get the file replaced. */
static void test_damage(void) {
    check_section("damaged cache files");
    const char *name = "xnnpack_8da4w_mlp";
    size_t n = 0, fsize = 0, got = 0;
    ember_weight_cache_info info;
    uint8_t *want = run(name, g_dir, 0, &info, &n); /* written above: mapped */
    char path[512];
    snprintf(path, sizeof path, "%s", info.path);
    uint8_t *pristine = test_read_file(path, &fsize);
    if (!CHECK(pristine != NULL && fsize > 64)) return;
    /* truncations */
    const size_t cuts[] = {0, 7, 63, 64, 65, fsize / 2, fsize - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        CHECK(write_file(path, pristine, cuts[i]));
        uint8_t *out = run(name, g_dir, 0, &info, &got);
        CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_WRITTEN && same(out, want, n),
                  "cut at %zu: state %d (%s)", cuts[i], (int)info.state, info.message);
        free(out);
    }
    /* the header's magic, version, program hash and file size */
    const size_t fields[] = {0, 5, 8, 16, 23, 48, 55};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint8_t *copy = malloc(fsize);
        memcpy(copy, pristine, fsize);
        copy[fields[i]] ^= 0x41;
        CHECK(write_file(path, copy, fsize));
        free(copy);
        uint8_t *out = run(name, g_dir, 0, &info, &got);
        CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_WRITTEN && info.message[0] != '\0' &&
                      same(out, want, n),
                  "header byte %zu: state %d (%s)", fields[i], (int)info.state, info.message);
        free(out);
    }
    /* any other byte of the header and the index: loads and runs (the
     * numbers may be wrong where an entry now points at other bytes) */
    uint64_t index_at = 0;
    for (int b = 7; b >= 0; b--) index_at = (index_at << 8) | pristine[32 + b];
    int ran = 0;
    for (size_t at = 24; at < fsize; at += at < 64 ? 1 : 3) {
        if (at >= 48 && at < 56) continue;
        if (at >= 64 && at < index_at) at = (size_t)index_at;
        uint8_t *copy = malloc(fsize);
        memcpy(copy, pristine, fsize);
        copy[at] ^= 0x5a;
        CHECK(write_file(path, copy, fsize));
        free(copy);
        uint8_t *out = run(name, g_dir, 0, &info, &got);
        ran += out != NULL && got == n;
        free(out);
    }
    CHECK(ran > 0);
    /* another program's file under this one's name */
    size_t other_size = 0;
    uint8_t *other_out = run("xnnpack_transformer", g_dir, 0, &info, &got);
    free(other_out);
    uint8_t *other = test_read_file(info.path, &other_size);
    CHECK(other != NULL && write_file(path, other, other_size));
    uint8_t *out = run(name, g_dir, 0, &info, &got);
    CHECK_MSG(info.state == EMBER_WEIGHT_CACHE_WRITTEN && same(out, want, n),
              "a foreign file: state %d", (int)info.state);
    CHECK_CONTAINS(info.message, "another program");
    free(out);
    free(other);
    free(pristine);
    free(want);
}

/* No file where it cannot or need not be written; the load is the same. */
static void test_not_written(void) {
    check_section("caches not written");
    size_t n = 0, got = 0;
    ember_weight_cache_info info;
    uint8_t *want = run("xnnpack_transformer", NULL, 0, &info, &n);
    char small[128];
    snprintf(small, sizeof small, "%s/small", g_dir);
    uint8_t *out = run("xnnpack_transformer", small, (uint64_t)1 << 40, &info, &got);
    CHECK(info.state == EMBER_WEIGHT_CACHE_NOT_WRITTEN && same(out, want, n));
    CHECK_CONTAINS(info.message, "worth keeping");
    CHECK(count_files(small) == 0);
    free(out);
    /* under a regular file: no directory can be made there */
    out = run("xnnpack_transformer", FIXTURES "mlp.pte/cache", 0, &info, &got);
    CHECK(info.state == EMBER_WEIGHT_CACHE_NOT_WRITTEN && same(out, want, n));
    CHECK_CONTAINS(info.message, "cannot create");
    free(out);
    /* a program without delegates packs nothing */
    free(run("mlp", g_dir, 0, &info, &got));
    CHECK(info.state == EMBER_WEIGHT_CACHE_NOT_WRITTEN);
    CHECK_CONTAINS(info.message, "no delegate");
    /* options from before the cache fields: no cache */
    ember_module_options mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = offsetof(ember_module_options, weight_cache_dir);
    mo.weight_cache_dir = g_dir;
    ember_module *mod = NULL;
    if (CHECK_OK(ember_module_load_with(FIXTURES "xnnpack_transformer.pte", &mo, &mod))) {
        ember_module_weight_cache_info(mod, &info);
        CHECK(info.state == EMBER_WEIGHT_CACHE_OFF);
        ember_module_destroy(mod);
    }
    free(want);
}

/* The file cache on its own: keys, sizes, alignment, duplicates. */
static void test_api(void) {
    check_section("file weight cache API");
    char path[128];
    snprintf(path, sizeof path, "%s/api/one.ewc", g_dir);
    ember_file_weight_cache *c = NULL;
    CHECK_STATUS(ember_file_weight_cache_open(NULL, 1, 0, &c), EMBER_ERR_INVALID_ARGUMENT);
    if (!CHECK_OK(ember_file_weight_cache_open(path, 0x1234, 0, &c))) return;
    const ember_weight_cache *w = ember_file_weight_cache_get(c);
    static uint8_t a[100], b[7], d[1000];
    for (size_t i = 0; i < sizeof d; i++) d[i] = (uint8_t)(i * 7);
    memset(a, 0xa5, sizeof a);
    memset(b, 0x3c, sizeof b);
    CHECK(w->find(w->ctx, "k1", 2, sizeof a) == NULL); /* nothing mapped yet */
    w->add(w->ctx, "key-b", 5, b, sizeof b);
    w->add(w->ctx, "key-a", 5, a, sizeof a);
    w->add(w->ctx, "key-a", 5, d, sizeof d); /* a key already added is kept once */
    w->add(w->ctx, "key-d-longer", 12, d, sizeof d);
    ember_file_weight_cache_commit(c);
    ember_weight_cache_info info;
    ember_file_weight_cache_info(c, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_WRITTEN && info.entries == 3);
    CHECK(info.bytes == sizeof a + sizeof b + sizeof d);
    w->add(w->ctx, "late", 4, a, sizeof a); /* after the commit: ignored */
    ember_file_weight_cache_close(c);

    c = NULL;
    if (!CHECK_OK(ember_file_weight_cache_open(path, 0x1234, 0, &c))) return;
    w = ember_file_weight_cache_get(c);
    const uint8_t *pa = w->find(w->ctx, "key-a", 5, sizeof a);
    const uint8_t *pb = w->find(w->ctx, "key-b", 5, sizeof b);
    const uint8_t *pd = w->find(w->ctx, "key-d-longer", 12, sizeof d);
    CHECK(pa != NULL && memcmp(pa, a, sizeof a) == 0 && (uintptr_t)pa % 64 == 0);
    CHECK(pb != NULL && memcmp(pb, b, sizeof b) == 0 && (uintptr_t)pb % 64 == 0);
    CHECK(pd != NULL && memcmp(pd, d, sizeof d) == 0 && (uintptr_t)pd % 64 == 0);
    CHECK(w->find(w->ctx, "key-a", 5, sizeof a + 1) == NULL); /* another size */
    CHECK(w->find(w->ctx, "key-", 4, sizeof a) == NULL);
    CHECK(w->find(w->ctx, "late", 4, sizeof a) == NULL);
    ember_file_weight_cache_info(c, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_MAPPED && info.hits == 3 && info.misses == 3);
    ember_file_weight_cache_close(c);

    /* What a mapped file lacks is added: a new file with its entries and
     * the new ones replaces it, and the old mapping stays readable. */
    static uint8_t e[300], d2[1000];
    memset(e, 0x5e, sizeof e);
    for (size_t i = 0; i < sizeof d2; i++) d2[i] = (uint8_t)(i * 13 + 1);
    if (!CHECK_OK(ember_file_weight_cache_open(path, 0x1234, 1u << 30, &c))) return;
    w = ember_file_weight_cache_get(c);
    pa = w->find(w->ctx, "key-a", 5, sizeof a);
    CHECK(pa != NULL && w->find(w->ctx, "key-e", 5, sizeof e) == NULL);
    w->add(w->ctx, "key-e", 5, e, sizeof e);
    /* key-d-longer packed again at another size: the new bytes replace it */
    CHECK(w->find(w->ctx, "key-d-longer", 12, sizeof d2 - 1) == NULL);
    w->add(w->ctx, "key-d-longer", 12, d2, sizeof d2 - 1);
    ember_file_weight_cache_commit(c);
    w->add(w->ctx, "late", 4, a, sizeof a); /* after the commit: ignored */
    ember_file_weight_cache_info(c, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_EXTENDED && info.added == 2 && info.entries == 4);
    CHECK(info.bytes == sizeof a + sizeof b + sizeof e + sizeof d2 - 1);
    CHECK_CONTAINS(info.message, "2 packed weights");
    CHECK(memcmp(pa, a, sizeof a) == 0); /* the old mapping, still there */
    ember_file_weight_cache_close(c);
    if (!CHECK_OK(ember_file_weight_cache_open(path, 0x1234, 0, &c))) return;
    w = ember_file_weight_cache_get(c);
    const uint8_t *pe = w->find(w->ctx, "key-e", 5, sizeof e);
    pa = w->find(w->ctx, "key-a", 5, sizeof a);
    pb = w->find(w->ctx, "key-b", 5, sizeof b);
    pd = w->find(w->ctx, "key-d-longer", 12, sizeof d2 - 1);
    CHECK(pe != NULL && memcmp(pe, e, sizeof e) == 0 && (uintptr_t)pe % 64 == 0);
    CHECK(pa != NULL && memcmp(pa, a, sizeof a) == 0 && (uintptr_t)pa % 64 == 0);
    CHECK(pb != NULL && memcmp(pb, b, sizeof b) == 0);
    CHECK(pd != NULL && memcmp(pd, d2, sizeof d2 - 1) == 0);
    CHECK(w->find(w->ctx, "key-d-longer", 12, sizeof d) == NULL); /* replaced */
    CHECK(w->find(w->ctx, "late", 4, sizeof a) == NULL);
    ember_file_weight_cache_commit(c); /* nothing lacked: the file is left as it is */
    ember_file_weight_cache_info(c, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_MAPPED && info.entries == 4 && info.misses == 2);
    ember_file_weight_cache_close(c);
    /* A mapped file whose additions cannot be written stays in use (a
     * directory in the way of the temporary file stops root too). */
    char tmp_path[160];
    snprintf(tmp_path, sizeof tmp_path, "%s.%ld.tmp", path, (long)getpid());
    if (CHECK(mkdir(tmp_path, 0755) == 0) &&
        CHECK_OK(ember_file_weight_cache_open(path, 0x1234, 0, &c))) {
        w = ember_file_weight_cache_get(c);
        CHECK(w->find(w->ctx, "key-f", 5, sizeof a) == NULL);
        w->add(w->ctx, "key-f", 5, a, sizeof a);
        ember_file_weight_cache_commit(c);
        ember_file_weight_cache_info(c, &info);
        CHECK(info.state == EMBER_WEIGHT_CACHE_MAPPED_ONLY && info.added == 0);
        CHECK_CONTAINS(info.message, "cannot create it");
        CHECK(info.entries == 4);
        pa = w->find(w->ctx, "key-a", 5, sizeof a);
        CHECK(pa != NULL && memcmp(pa, a, sizeof a) == 0);
        ember_file_weight_cache_close(c);
    }
    CHECK(rmdir(tmp_path) == 0);
    /* the same file for another program: not used, rewritten on commit */
    if (!CHECK_OK(ember_file_weight_cache_open(path, 0x9999, 0, &c))) return;
    ember_file_weight_cache_info(c, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_PENDING);
    CHECK_CONTAINS(info.message, "another program");
    ember_file_weight_cache_close(c); /* nothing added: the old file stays */
    ember_file_weight_cache_info(NULL, &info);
    CHECK(info.state == EMBER_WEIGHT_CACHE_OFF && info.path == NULL);
    ember_file_weight_cache_close(NULL);
}

/* An application's cache that answers with misaligned bytes is ignored. */
static const void *odd_find(void *ctx, const void *key, size_t key_len, size_t size) {
    (void)key, (void)key_len, (void)size;
    *(int *)ctx += 1;
    static _Alignas(64) uint8_t junk[1 << 16];
    return junk + 1;
}

static void odd_add(void *ctx, const void *key, size_t key_len, const void *data, size_t size) {
    (void)ctx, (void)key, (void)key_len, (void)data, (void)size;
}

static void test_misaligned(void) {
    check_section("a cache with misaligned bytes");
    size_t n = 0, fsize = 0;
    uint8_t *want = run("xnnpack_8da4w_mlp", NULL, 0, NULL, &n);
    int asked = 0;
    const ember_weight_cache odd = {&asked, odd_find, odd_add};
    uint8_t *bytes = test_read_file(FIXTURES "xnnpack_8da4w_mlp.pte", &fsize);
    ember_buffer_loader loader;
    ember_program *p = NULL;
    ember_method *m = NULL;
    npy_array in;
    char err[256];
    if (bytes != NULL) ember_buffer_loader_init(&loader, bytes, fsize);
    if (CHECK(bytes != NULL) && CHECK_OK(ember_program_load(&loader.base, NULL, &p)) &&
        CHECK(npy_load(FIXTURES "xnnpack_8da4w_mlp/forward.run0.in0.npy", &in, err, sizeof err) ==
              0)) {
        ember_method_options o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.weight_cache = &odd;
        const ember_value *v = NULL;
        if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m)) &&
            CHECK_OK(ember_method_set_input_tensor(m, 0, (ember_dtype)in.dtype, in.shape, in.dim,
                                                   in.data, in.nbytes)) &&
            CHECK_OK(ember_method_execute(m)) && CHECK_OK(ember_method_output(m, 0, &v)))
            CHECK(v->u.t->nbytes == n && same(v->u.t->data, want, n));
        CHECK(asked > 0);
        npy_free(&in);
    }
    ember_method_destroy(m);
    ember_program_destroy(p);
    free(bytes);
    free(want);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/ember-wc-XXXXXX");
    if (mkdtemp(g_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_cold_warm("xnnpack_8da4w_mlp");   /* int4 groupwise products */
    test_cold_warm("xnnpack_qd8_conv");    /* int8 per-channel convolutions */
    test_cold_warm("xnnpack_transformer"); /* float32 products */
    test_other_isa("xnnpack_transformer");
    test_damage();
    test_not_written();
    test_api();
    test_misaligned();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return check_finish();
}
