/*
 * Fixtures the fuzz targets hold fixed while the fuzzer varies something
 * else: files from tests/fixtures read into memory once (the process runs
 * from the repository root, or EMBER_FUZZ_FIXTURES names the directory), and
 * their data maps opened without the platform heap (a static arena, a
 * buffer loader), so that the targets' leak checks see only what each input
 * allocates. Header-only; include after robust_util.h.
 */
#ifndef EMBER_TESTS_FUZZ_FIXTURES_H
#define EMBER_TESTS_FUZZ_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

#include "ember/ember.h"

/* A fixture file in memory; NULL data if it could not be read. */
typedef struct ff_file {
    uint8_t *data;
    size_t size;
} ff_file;

/* Reads tests/fixtures/<name> (or $EMBER_FUZZ_FIXTURES/<name>); aborts if
 * `required` and it cannot. */
static inline ff_file ff_read(const char *name, int required) {
    char path[1024];
    const char *dir = getenv("EMBER_FUZZ_FIXTURES");
    ff_file f = {NULL, 0};
    snprintf(path, sizeof path, "%s/%s", dir != NULL ? dir : "tests/fixtures", name);
    f.data = ru_read_file(path, &f.size);
    if (f.data == NULL && required) {
        fprintf(stderr, "fuzz: cannot read %s (run from the repository root, or set "
                        "EMBER_FUZZ_FIXTURES)\n", path);
        abort();
    }
    return f;
}

/* A data map over a fixture file, its structure in a static arena. */
typedef struct ff_map {
    ff_file file;
    ember_buffer_loader loader;
    _Alignas(16) uint8_t arena_bytes[1024];
    ember_arena arena;
    ember_data_map *map;
} ff_map;

/* Opens tests/fixtures/<name> as a data map; map NULL if the file is absent,
 * abort if it does not open (the fixture must be valid). */
static inline void ff_map_open(ff_map *m, const char *name) {
    ember_data_map_options opts;
    m->map = NULL;
    m->file = ff_read(name, 0);
    if (m->file.data == NULL) return;
    ember_buffer_loader_init(&m->loader, m->file.data, m->file.size);
    ember_arena_init(&m->arena, m->arena_bytes, sizeof m->arena_bytes);
    opts.struct_size = sizeof opts;
    opts.allocator = &m->arena.base;
    if (ember_data_map_open(&m->loader.base, &opts, &m->map) != EMBER_OK) {
        fprintf(stderr, "fuzz: fixture %s does not open: %s\n", name, ember_last_error());
        abort();
    }
}

#endif /* EMBER_TESTS_FUZZ_FIXTURES_H */
