/*
 * libFuzzer target: a .ptd data map from the fuzzer's bytes.
 *
 * The input is opened as a data map through the exact-copy loader of
 * tests/c/robust_util.h (its flatbuffer in read-only pages that end at a
 * guard page, every blob loaded later an exact-size block); every key and
 * its info are read back; then the fixture programs that keep their weights
 * in data files (tests/fixtures/ext_mlp.pte: EXTERNAL constants;
 * xnnpack_ext.pte: EXTERNAL constants and XNNPACK weights found by key) are
 * loaded with the fuzzed map, bound to generated inputs and executed.
 *
 * Crashes, besides sanitizer reports: a failure without a message, a status
 * outside the enum, a tensor entry that passed verification although it is
 * larger than its blob, a platform block or a loaded buffer still live
 * afterwards, an allocation during execute. Seeds: the fixtures' .ptd files.
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

#define FUZZ_HEAP_CAP ((size_t)64 << 20)
#define FUZZ_IO_CAP ((size_t)16 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_violation(const char *what, ember_status st) {
    fprintf(stderr, "fuzz: %s (status %s 0x%04x, message \"%s\")\n", what,
            ember_status_str(st), (unsigned)st, ember_last_error());
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    static ff_file programs[2];
    if (!ready) {
        programs[0] = ff_read("ext_mlp.pte", 1);
        programs[1] = ff_read("xnnpack_ext.pte", 1);
        ru_heap_install(FUZZ_HEAP_CAP);
        ru_violation = fuzz_violation;
        if (!ru_register()) {
            fprintf(stderr, "fuzz: cannot register the kernels and backends: %s\n",
                    ember_last_error());
            abort();
        }
        ready = 1;
    }
    for (size_t i = 0; i < 2; i++) {
        ru_exact_loader ptd;
        ember_buffer_loader pte;
        ru_result res;
        int map_failed = 0;
        ru_exact_loader_init(&ptd, data, size, 1);
        ember_buffer_loader_init(&pte, programs[i].data, programs[i].size);
        ru_run_program_data(&pte.base, &ptd.base, 2, FUZZ_IO_CAP, &res, &map_failed);
        if (ru_heap_state.live != 0 || ptd.live != 0) {
            fprintf(stderr, "fuzz: %lld platform blocks leaked, %lld loaded buffers not released\n",
                    (long long)ru_heap_state.live, (long long)ptd.live);
            abort();
        }
        if (map_failed) break; /* the same bytes fail the same way for both programs */
    }
    return 0;
}
