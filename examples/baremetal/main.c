/*
 * main.c — runs the embedded keyword-spotting CNN once on a Cortex-M, with
 * no heap, no OS and no file system, and prints its outputs over the UART.
 *
 * All memory is static: one arena for the program's and the method's
 * structures, the planned buffers at the sizes the exporter read from the
 * program (model_data.h), and the kernels' scratch. The .pte stays in flash
 * and is read in place.
 *
 * Output, one line each (check.py compares the values with eager PyTorch):
 *   out[i] = 0x<float bits>
 * then the memory it used, and "ok".
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "ember/ember.h"
#include "ember/platform.h"
#include "ember/kernel.h"
#include "model_data.h"

#ifndef ARENA_BYTES
#define ARENA_BYTES (8u * 1024u)
#endif
#ifndef SCRATCH_BYTES
#define SCRATCH_BYTES (16u * 1024u)
#endif

#define ALIGN_UP(n, a) (((n) + (a) - 1u) & ~(size_t)((a) - 1u))

/* Program structures, method values, tensors and argument tables. */
static uint8_t arena_mem[ARENA_BYTES] __attribute__((aligned(16)));
/* Every planned buffer, each at a 16-byte boundary. */
static uint8_t planned_mem[MODEL_PLANNED_TOTAL + 16u * MODEL_NUM_PLANNED + 16u]
    __attribute__((aligned(16)));
/* Per-instruction scratch (im2col tiles of the convolutions). */
static uint8_t scratch_mem[SCRATCH_BYTES] __attribute__((aligned(16)));

/* A bump allocator over arena_mem that remembers how much it handed out. */
typedef struct {
    ember_allocator base;
    size_t used;
} static_arena;

static void *static_arena_alloc(void *ctx, size_t size, size_t align) {
    static_arena *a = ctx;
    size_t start = ALIGN_UP(a->used, align);
    if (start > sizeof arena_mem || size > sizeof arena_mem - start) return NULL;
    a->used = start + size;
    return arena_mem + start;
}

static void log_line(void *user, ember_log_level level, const char *msg) {
    (void)user;
    (void)level;
    board_puts(msg);
    board_puts("\n");
}

static void bare_abort(void *user) {
    (void)user;
    board_puts("fatal: ember abort\n");
    board_exit(1);
}

static const ember_platform platform = {
    sizeof(ember_platform), NULL, log_line, NULL, bare_abort, NULL, NULL,
};

static int fail(const char *what, ember_status st) {
    board_puts("error: ");
    board_puts(what);
    board_puts(": ");
    board_puts(ember_status_str(st));
    board_puts(": ");
    board_puts(ember_last_error());
    board_puts("\n");
    return 1;
}

static void put_size(const char *name, size_t bytes) {
    board_puts(name);
    board_put_uint((uint32_t)bytes);
    board_puts(" bytes\n");
}

int main(void) {
    ember_status st;
    ember_platform_set(&platform);
    board_puts("ember on Cortex-M: keyword-spotting CNN, ");
    board_put_uint((uint32_t)model_pte_size);
    board_puts(" bytes of .pte in flash\n");

    /* the kernel table of a selective build: the kernels model.pte calls */
    st = ember_portable_kernels_register();
    if (st != EMBER_OK) return fail("kernels", st);

    static_arena arena = {{NULL, static_arena_alloc}, 0};
    arena.base.ctx = &arena;

    ember_buffer_loader loader;
    ember_buffer_loader_init(&loader, model_pte, model_pte_size);
    ember_program_options popts = {sizeof popts, &arena.base};
    ember_program *program = NULL;
    st = ember_program_load(&loader.base, &popts, &program);
    if (st != EMBER_OK) return fail("program load", st);

    void *planned[MODEL_NUM_PLANNED > 0 ? MODEL_NUM_PLANNED : 1];
    size_t off = 0;
    for (size_t i = 0; i < MODEL_NUM_PLANNED; i++) {
        planned[i] = planned_mem + off;
        off = ALIGN_UP(off + model_planned_sizes[i], 16u);
    }
    ember_memory memory = {sizeof memory, &arena.base, planned, MODEL_NUM_PLANNED,
                           scratch_mem, sizeof scratch_mem};
    ember_method *method = NULL;
    st = ember_method_load(program, "forward", &memory, &method);
    if (st != EMBER_OK) return fail("method load", st);

    st = ember_method_set_input_tensor(method, 0, EMBER_FLOAT32, model_input_sizes,
                                       MODEL_INPUT_DIM, model_input,
                                       sizeof(float) * MODEL_INPUT_NUMEL);
    if (st != EMBER_OK) return fail("set input", st);
    st = ember_method_execute(method);
    if (st != EMBER_OK) return fail("execute", st);

    const ember_value *out = NULL;
    st = ember_method_output(method, 0, &out);
    if (st != EMBER_OK) return fail("output", st);
    if (out->tag != EMBER_TAG_TENSOR || out->u.t->dtype != EMBER_FLOAT32) {
        board_puts("error: output 0 is not a float tensor\n");
        return 1;
    }
    const ember_tensor *t = out->u.t;
    for (size_t i = 0; i < (size_t)t->numel; i++) {
        uint32_t bits;
        memcpy(&bits, (const uint8_t *)t->data + i * sizeof bits, sizeof bits);
        board_puts("out[");
        board_put_uint((uint32_t)i);
        board_puts("] = 0x");
        board_put_hex32(bits);
        board_puts("\n");
    }

    put_size("arena used: ", arena.used);
    put_size("planned buffers: ", (size_t)MODEL_PLANNED_TOTAL);
    put_size("scratch: ", sizeof scratch_mem);
    put_size("stack peak: ", board_stack_peak());
    ember_method_destroy(method);
    ember_program_destroy(program);
    board_puts("ok\n");
    return 0;
}
