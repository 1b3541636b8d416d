/*
 * Data maps (.ptd files): the reader's API on the reference fixtures
 * (ext_mlp.ptd: four tensors with layouts; xnnpack_ext.ptd: tensors and
 * XNNPACK weights without layouts), programs that need them (EXTERNAL
 * constants resolved by name, delegate data found by key), and the errors:
 * missing maps and keys, mismatched dtype, sizes and dim order, bad
 * options, files that are no data map at all. Outputs are compared with the
 * reference runtime's (the fixtures' expected .npy files).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "format/flatbuffer.h"
#include "npy.h"
#include "test_util.h"

#define FIX "tests/fixtures/"

/* A whole file in 16-byte aligned heap memory (NULL on failure). */
typedef struct fixture {
    uint8_t *bytes;
    size_t size;
    ember_buffer_loader loader;
} fixture;

static bool fixture_open(fixture *fx, const char *name) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s", name);
    fx->bytes = test_read_file(path, &fx->size);
    if (!CHECK_MSG(fx->bytes != NULL, "cannot read %s (run from the repository root)", path))
        return false;
    ember_buffer_loader_init(&fx->loader, fx->bytes, fx->size);
    return true;
}

static void fixture_close(fixture *fx) {
    free(fx->bytes);
    fx->bytes = NULL;
}

/* Runs the case's first run on a loaded method and compares its output. */
static void run_and_compare(ember_method *m, const char *case_name) {
    char path[256], err[256];
    npy_array in, want;
    const ember_value *out;
    snprintf(path, sizeof path, FIX "%s/forward.run0.in0.npy", case_name);
    if (!CHECK_MSG(npy_load(path, &in, err, sizeof err) == 0, "%s: %s", path, err)) return;
    snprintf(path, sizeof path, FIX "%s/forward.run0.out0.npy", case_name);
    if (!CHECK_MSG(npy_load(path, &want, err, sizeof err) == 0, "%s: %s", path, err)) {
        npy_free(&in);
        return;
    }
    if (CHECK_OK(ember_method_set_input_tensor(m, 0, (ember_dtype)in.dtype, in.shape, in.dim,
                                               in.data, in.nbytes)) &&
        CHECK_OK(ember_method_execute(m)) && CHECK_OK(ember_method_output(m, 0, &out)) &&
        CHECK(out->tag == EMBER_TAG_TENSOR && out->u.t->nbytes == want.nbytes)) {
        const float *got = out->u.t->data, *exp = want.data;
        double worst = 0;
        for (size_t k = 0; k < want.nbytes / sizeof(float); k++) {
            double d = got[k] - exp[k];
            if (d < 0) d = -d;
            double tol = 1e-6 + 1e-5 * (exp[k] < 0 ? -exp[k] : exp[k]);
            if (d - tol > worst) worst = d - tol;
        }
        CHECK_MSG(worst <= 0, "%s: output differs from the reference by %g beyond tolerance",
                  case_name, worst);
    }
    npy_free(&in);
    npy_free(&want);
}

static ember_method_options options_with(const ember_data_map *const *maps, size_t n) {
    ember_method_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.data_maps = maps;
    o.num_data_maps = n;
    return o;
}

/* ---------------------------------------------------------------------- */

static void test_reader(void) {
    fixture fx;
    ember_data_map *map = NULL;
    check_section("reader: keys, tensor layouts, blobs");
    if (!fixture_open(&fx, "ext_mlp.ptd")) return;
    if (CHECK_OK(ember_data_map_open(&fx.loader.base, NULL, &map))) {
        const char *key = NULL;
        ember_data_info info;
        ember_buffer buf;
        CHECK_EQ_INT(ember_data_map_key_count(map), 4);
        CHECK_OK(ember_data_map_key(map, 0, &key));
        CHECK_EQ_STR(key, "0.weight");
        CHECK_ERR(ember_data_map_key(map, 4, &key), EMBER_ERR_INDEX_OUT_OF_RANGE, "4 of 4");
        CHECK_OK(ember_data_map_info(map, "0.weight", &info));
        CHECK(info.has_layout && info.dtype == EMBER_FLOAT32 && info.dim == 2);
        CHECK(info.sizes[0] == 16 && info.sizes[1] == 8 && info.dim_order[0] == 0 &&
              info.dim_order[1] == 1);
        CHECK_EQ_INT(info.nbytes, 16 * 8 * 4);
        CHECK_EQ_INT(info.size, 16 * 8 * 4);
        CHECK_ERR(ember_data_map_info(map, "0.weigh", &info), EMBER_ERR_NOT_FOUND, "0.weigh");
        if (CHECK_OK(ember_data_map_load(map, "2.bias", &buf))) {
            CHECK_EQ_INT(buf.size, 16);
            /* A view into the buffer loader's bytes, at the segment. */
            CHECK((const uint8_t *)buf.data > fx.bytes &&
                  (const uint8_t *)buf.data + buf.size <= fx.bytes + fx.size);
            ember_data_map_release(map, &buf);
        }
        CHECK_ERR(ember_data_map_load(map, "nope", &buf), EMBER_ERR_NOT_FOUND, "nope");
        CHECK(buf.data == NULL);
        ember_data_map_release(map, &buf); /* safe on a zeroed buffer */
    }
    ember_data_map_close(map);
    ember_data_map_close(NULL);
    CHECK_EQ_INT(ember_data_map_key_count(NULL), 0);
    fixture_close(&fx);

    /* Entries without a layout: the XNNPACK weights (sha256 keys). */
    if (!fixture_open(&fx, "xnnpack_ext.ptd")) return;
    if (CHECK_OK(ember_data_map_open(&fx.loader.base, NULL, &map))) {
        size_t n = ember_data_map_key_count(map), raw = 0;
        CHECK_EQ_INT(n, 6);
        for (size_t i = 0; i < n; i++) {
            const char *key;
            ember_data_info info;
            if (CHECK_OK(ember_data_map_key(map, i, &key)) && CHECK_OK(ember_data_map_info(map, key, &info)))
                raw += !info.has_layout && strlen(key) == 64;
        }
        CHECK_EQ_INT(raw, 4);
    }
    ember_data_map_close(map);
    fixture_close(&fx);
}

static void test_bad_files(void) {
    fixture fx;
    ember_data_map *map = (ember_data_map *)1;
    ember_buffer_loader bl;
    check_section("reader: files that are not data maps, bad arguments");
    CHECK_ERR(ember_data_map_open(NULL, NULL, &map), EMBER_ERR_INVALID_ARGUMENT, "loader");
    CHECK(map == NULL);
    if (!fixture_open(&fx, "mlp.pte")) return;
    CHECK_ERR(ember_data_map_open(&fx.loader.base, NULL, &map), EMBER_ERR_BAD_IDENTIFIER, "FT01");
    fixture_close(&fx);
    if (!fixture_open(&fx, "ext_mlp.ptd")) return;
    ember_data_map_options bad_opts = {1, NULL};
    CHECK_ERR(ember_data_map_open(&fx.loader.base, &bad_opts, &map), EMBER_ERR_INVALID_ARGUMENT,
              "struct_size");
    ember_buffer_loader_init(&bl, fx.bytes, 20);
    CHECK_ERR(ember_data_map_open(&bl.base, NULL, &map), EMBER_ERR_TRUNCATED, "header");
    ember_buffer_loader_init(&bl, fx.bytes, 4);
    CHECK_ERR(ember_data_map_open(&bl.base, NULL, &map), EMBER_ERR_TRUNCATED, "4 bytes");
    /* The last byte of a segment cut off. */
    ember_buffer_loader_init(&bl, fx.bytes, fx.size - 1);
    CHECK_ERR(ember_data_map_open(&bl.base, NULL, &map), EMBER_ERR_TRUNCATED, "segments");
    /* No FH01 header. */
    uint8_t *copy = malloc(fx.size);
    if (CHECK(copy != NULL)) {
        memcpy(copy, fx.bytes, fx.size);
        copy[8] = 'X';
        ember_buffer_loader_init(&bl, copy, fx.size);
        CHECK_ERR(ember_data_map_open(&bl.base, NULL, &map), EMBER_ERR_BAD_IDENTIFIER, "FH01");
        /* A newer schema version. */
        memcpy(copy, fx.bytes, fx.size);
        fb_reader r = {copy, fx.size};
        fb_table root;
        if (CHECK(fb_root(&r, &root))) {
            uint16_t off = fb_rd_u16(copy + root.vt + 4); /* field 0: version */
            if (off != 0) {
                copy[root.pos + off] = 7;
                CHECK_ERR(ember_data_map_open(&bl.base, NULL, &map), EMBER_ERR_NOT_SUPPORTED,
                          "version 7");
            }
        }
        free(copy);
    }
    fixture_close(&fx);
    /* An arena too small for the map's structure. */
    if (!fixture_open(&fx, "ext_mlp.ptd")) return;
    uint8_t small[16];
    ember_arena arena;
    ember_arena_init(&arena, small, sizeof small);
    ember_data_map_options opts = {sizeof opts, &arena.base};
    CHECK_ERR(ember_data_map_open(&fx.loader.base, &opts, &map), EMBER_ERR_OUT_OF_MEMORY, "data map");
    fixture_close(&fx);
}

/* The position of field `id` of table t, 0 if absent. */
static uint32_t field_pos(const uint8_t *b, const fb_table *t, unsigned id) {
    if (4u + 2u * id + 2u > t->vt_size) return 0;
    uint16_t off = fb_rd_u16(b + t->vt + 4 + 2 * id);
    return off == 0 ? 0 : t->pos + off;
}

/* Finds the tensor layout of entry `entry` of a data map in bytes b. */
static bool layout_of(const uint8_t *b, size_t size, uint32_t entry, fb_table *layout) {
    fb_reader r = {b, size};
    fb_table root, nd;
    fb_vec named;
    bool present;
    return fb_root(&r, &root) && fb_vec_field(&r, &root, 2, 4, &named, &present) && present &&
           entry < named.len && fb_vec_table(&r, &named, entry, &nd) &&
           fb_table_field(&r, &nd, 2, layout, &present) && present;
}

static void test_external_constants(void) {
    fixture pte, ptd;
    ember_program *p = NULL;
    ember_data_map *map = NULL;
    ember_method *m = NULL;
    check_section("EXTERNAL constants: resolved by name, checked against the program");
    if (!fixture_open(&pte, "ext_mlp.pte")) return;
    if (!fixture_open(&ptd, "ext_mlp.ptd")) {
        fixture_close(&pte);
        return;
    }
    if (!CHECK_OK(ember_program_load(&pte.loader.base, NULL, &p))) goto done;
    /* The program verifies on its own; its method needs the map. */
    CHECK_ERR(ember_method_load(p, "forward", NULL, &m), EMBER_ERR_NOT_FOUND, "0.weight");
    CHECK_CONTAINS(ember_last_error(), "external tensor");
    CHECK(m == NULL);
    if (!CHECK_OK(ember_data_map_open(&ptd.loader.base, NULL, &map))) goto done;
    {
        const ember_data_map *maps[2] = {map, map};
        ember_method_options o = options_with(maps, 1);
        if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m))) run_and_compare(m, "ext_mlp");
        ember_method_destroy(m);
        m = NULL;
        /* The same map twice: the first entry of a key wins. */
        o = options_with(maps, 2);
        if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m))) run_and_compare(m, "ext_mlp");
        ember_method_destroy(m);
        m = NULL;
        /* Options from before data maps (struct_size ending at threadpool). */
        o = options_with(maps, 1);
        o.struct_size = offsetof(ember_method_options, data_maps);
        CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_NOT_FOUND, "external");
        o.struct_size = offsetof(ember_method_options, threadpool);
        CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_INVALID_ARGUMENT,
                  "struct_size");
        o = options_with(NULL, 1);
        CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_INVALID_ARGUMENT, "no array");
        const ember_data_map *null_map[1] = {NULL};
        o = options_with(null_map, 1);
        CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_INVALID_ARGUMENT,
                  "data map 0 is NULL");
        CHECK(m == NULL);
    }
    ember_data_map_close(map);
    map = NULL;

    /* The map of another program: the names are not there. */
    {
        fixture other;
        if (fixture_open(&other, "xnnpack_ext.ptd")) {
            if (CHECK_OK(ember_data_map_open(&other.loader.base, NULL, &map))) {
                const ember_data_map *maps[1] = {map};
                ember_method_options o = options_with(maps, 1);
                CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_NOT_FOUND,
                          "'0.weight'");
            }
            ember_data_map_close(map);
            map = NULL;
            fixture_close(&other);
        }
    }

    /* Maps whose tensor differs from the program's: dtype, sizes, dim order. */
    uint8_t *copy = malloc(ptd.size);
    fb_table layout;
    if (!CHECK(copy != NULL) || !CHECK(layout_of(ptd.bytes, ptd.size, 0, &layout))) {
        free(copy);
        goto done;
    }
    static const struct { unsigned field; int delta; ember_status want; const char *msg; } cases[] = {
        {0, 1, EMBER_ERR_TYPE_MISMATCH, "float64 in the data map"},
        {1, 1, EMBER_ERR_SHAPE_MISMATCH, "other sizes"},
        {2, 1, EMBER_ERR_SHAPE_MISMATCH, "other sizes or dim order"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ember_buffer_loader bl;
        memcpy(copy, ptd.bytes, ptd.size);
        uint32_t pos = field_pos(copy, &layout, cases[c].field);
        if (!CHECK(pos != 0)) continue;
        if (cases[c].field == 0) {
            copy[pos] = EMBER_FLOAT64;
        } else {
            /* Vector: sizes [16, 8] -> [8, 16]; dim order [0, 1] -> [1, 0]. */
            uint32_t vec = pos + fb_rd_u32(copy + pos) + 4;
            if (cases[c].field == 1) {
                copy[vec] = 8;
                copy[vec + 4] = 16;
            } else {
                copy[vec] = 1;
                copy[vec + 1] = 0;
            }
        }
        ember_buffer_loader_init(&bl, copy, ptd.size);
        ember_status st = ember_data_map_open(&bl.base, NULL, &map);
        if (cases[c].field == 0) {
            /* float64 [16, 8] needs 1024 bytes: the map itself is malformed. */
            CHECK_ERR(st, EMBER_ERR_INVALID_PROGRAM, "512-byte segment");
            continue;
        }
        if (!CHECK_OK(st)) continue;
        const ember_data_map *maps[1] = {map};
        ember_method_options o = options_with(maps, 1);
        CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), cases[c].want, cases[c].msg);
        CHECK_CONTAINS(ember_last_error(), "'0.weight'");
        ember_data_map_close(map);
        map = NULL;
    }
    /* dtype mismatch with a fitting size: float32 [16] bias as int32. */
    if (CHECK(layout_of(ptd.bytes, ptd.size, 1, &layout))) {
        ember_buffer_loader bl;
        memcpy(copy, ptd.bytes, ptd.size);
        uint32_t pos = field_pos(copy, &layout, 0);
        if (CHECK(pos != 0)) {
            copy[pos] = EMBER_INT32;
            ember_buffer_loader_init(&bl, copy, ptd.size);
            if (CHECK_OK(ember_data_map_open(&bl.base, NULL, &map))) {
                const ember_data_map *maps[1] = {map};
                ember_method_options o = options_with(maps, 1);
                CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_TYPE_MISMATCH,
                          "float32 in the program but int32 in the data map");
            }
            ember_data_map_close(map);
            map = NULL;
        }
    }
    free(copy);
done:
    ember_program_destroy(p);
    fixture_close(&pte);
    fixture_close(&ptd);
}

static void test_file_loader(void) {
    ember_file_loader fl, dl;
    ember_program *p = NULL;
    ember_data_map *map = NULL;
    ember_method *m = NULL;
    check_section("file loader: external constants are heap copies, released with the method");
    if (!CHECK_OK(ember_file_loader_open(&fl, FIX "ext_mlp.pte"))) return;
    if (CHECK_OK(ember_file_loader_open(&dl, FIX "ext_mlp.ptd"))) {
        if (CHECK_OK(ember_program_load(&fl.base, NULL, &p)) &&
            CHECK_OK(ember_data_map_open(&dl.base, NULL, &map))) {
            const ember_data_map *maps[1] = {map};
            ember_method_options o = options_with(maps, 1);
            for (int k = 0; k < 2; k++) {
                if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m))) run_and_compare(m, "ext_mlp");
                ember_method_destroy(m);
                m = NULL;
            }
        }
        ember_data_map_close(map);
        ember_file_loader_close(&dl);
    }
    ember_program_destroy(p);
    ember_file_loader_close(&fl);
}

static void test_delegate_data(void) {
    fixture pte, ptd;
    ember_program *p = NULL;
    ember_data_map *map = NULL;
    ember_method *m = NULL;
    check_section("delegate data: XNNPACK weights found by key in a data map");
    if (!fixture_open(&pte, "xnnpack_ext.pte")) return;
    if (!fixture_open(&ptd, "xnnpack_ext.ptd")) {
        fixture_close(&pte);
        return;
    }
    if (CHECK_OK(ember_program_load(&pte.loader.base, NULL, &p)) &&
        CHECK_OK(ember_data_map_open(&ptd.loader.base, NULL, &map))) {
        const ember_data_map *maps[1] = {map};
        ember_method_options o = options_with(maps, 1);
        if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m))) run_and_compare(m, "xnnpack_ext");
        ember_method_destroy(m);
        m = NULL;
        /* Without the map: the layer norm's weights are missing first. */
        CHECK_ERR(ember_method_load(p, "forward", NULL, &m), EMBER_ERR_NOT_FOUND, "ln.");
        /* A map without the delegate's weight: its init names the key. */
        uint8_t *copy = malloc(ptd.size);
        if (CHECK(copy != NULL)) {
            memcpy(copy, ptd.bytes, ptd.size);
            uint8_t *k = NULL;
            for (size_t i = 0; i + 8 <= ptd.size && k == NULL; i++)
                if (memcmp(copy + i, "3bc0dc39", 8) == 0) k = copy + i;
            ember_data_map *renamed = NULL;
            ember_buffer_loader bl;
            ember_buffer_loader_init(&bl, copy, ptd.size);
            if (CHECK(k != NULL) && (*k = 'X', CHECK_OK(ember_data_map_open(&bl.base, NULL, &renamed)))) {
                const ember_data_map *maps1[1] = {renamed};
                o = options_with(maps1, 1);
                CHECK_ERR(ember_method_load_with(p, "forward", &o, &m), EMBER_ERR_NOT_FOUND,
                          "3bc0dc39");
                CHECK(m == NULL);
            }
            ember_data_map_close(renamed);
            free(copy);
        }
        fixture other;
        if (fixture_open(&other, "ext_mlp.ptd")) {
            ember_data_map *wrong = NULL;
            if (CHECK_OK(ember_data_map_open(&other.loader.base, NULL, &wrong))) {
                const ember_data_map *maps2[2] = {wrong, map};
                o = options_with(maps2, 2);
                /* Searched in order: found in the second map. */
                if (CHECK_OK(ember_method_load_with(p, "forward", &o, &m)))
                    run_and_compare(m, "xnnpack_ext");
                ember_method_destroy(m);
                m = NULL;
            }
            ember_data_map_close(wrong);
            fixture_close(&other);
        }
    }
    ember_data_map_close(map);
    ember_program_destroy(p);
    fixture_close(&pte);
    fixture_close(&ptd);
}

int main(void) {
    CHECK_OK(ember_portable_kernels_register());
    CHECK_OK(ember_xnnpack_backend_register());
    test_reader();
    test_bad_files();
    test_external_constants();
    test_file_loader();
    test_delegate_data();
    return check_finish();
}
