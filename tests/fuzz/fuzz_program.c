/*
 * libFuzzer target: a .pte program from the fuzzer's bytes.
 *
 * Buffer loader over the input (through the exact-copy wrapper of
 * tests/c/robust_util.h) → program load → every method loaded on the
 * platform heap, with the fixtures' data maps (tests/fixtures/ext_mlp.ptd and
 * xnnpack_ext.ptd, so that programs seeded from ext_mlp.pte and
 * xnnpack_ext.pte find their EXTERNAL tensors and delegate weights) → every
 * input set to generated data at its upper-bound shape
 * (at most 16 MB in all; execute is skipped beyond that) → execute twice (so
 * state carried in mutable buffers is exercised) → destroy.
 *
 * Beyond ASan/UBSan reports, the target aborts (a "crash" for libFuzzer) when
 * the runtime breaks its contract: a failing call without an error message,
 * a status outside the enum, a platform block not freed after destroy, or a
 * call of the platform abort hook. See tests/fuzz/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "../c/robust_util.h"
#include "fuzz_fixtures.h"

/* The largest single platform allocation: a hostile file may ask for any
 * planned-buffer size, and a device's heap is finite. */
#define FUZZ_HEAP_CAP ((size_t)64 << 20)
/* Generated input bytes per method; beyond that, execute is skipped. */
#define FUZZ_IO_CAP ((size_t)16 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_violation(const char *what, ember_status st) {
    fprintf(stderr, "fuzz: %s (status %s 0x%04x, message \"%s\")\n", what,
            ember_status_str(st), (unsigned)st, ember_last_error());
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    static ff_map maps[2];
    static const ember_data_map *map_list[2];
    static size_t num_maps;
    ru_exact_loader loader;
    ru_result res;
    if (!ready) {
        /* Opened before the counting heap goes in: they use none of it. */
        ff_map_open(&maps[0], "ext_mlp.ptd");
        ff_map_open(&maps[1], "xnnpack_ext.ptd");
        for (size_t i = 0; i < 2; i++)
            if (maps[i].map != NULL) map_list[num_maps++] = maps[i].map;
        ru_heap_install(FUZZ_HEAP_CAP);
        ru_violation = fuzz_violation;
        /* Portable kernels and a stand-in for the fixtures' EmberTestBackend. */
        if (!ru_register()) {
            fprintf(stderr, "fuzz: cannot register the kernels and backend: %s\n", ember_last_error());
            abort();
        }
        ready = 1;
    }
    /* The exact-copy loader (ember_buffer_loader underneath) hands out each
     * loaded range as its own heap block, so ASan sees a read past the
     * flatbuffer region or a segment, or a use after release. */
    ru_exact_loader_init(&loader, data, size, 1);
    ru_run_program_maps(&loader.base, map_list, num_maps, 2, FUZZ_IO_CAP, &res);
    if (ru_heap_state.live != 0 || loader.live != 0) {
        fprintf(stderr, "fuzz: %lld platform blocks leaked, %lld loaded buffers not released\n",
                (long long)ru_heap_state.live, (long long)loader.live);
        abort();
    }
    return 0;
}
