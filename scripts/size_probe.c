/*
 * Size probe: a program that keeps every public entry point of the core
 * runtime (ember.h, platform.h, the registries of kernel.h and backend.h)
 * reachable, so that linking it with --gc-sections keeps exactly the code an
 * application could call. Built twice by scripts/size.sh: with the table
 * pointing at ember (EMBER_SIZE_FULL) and with the same table pointing at a
 * dummy (the baseline); the difference is the linked size of the core.
 * With EMBER_SIZE_KERNELS it registers kernel tables too (1: the portable
 * table, 3: the portable and the optimized ones), so the kernels those
 * tables hold are linked: whichever tables the link is given (the full
 * ones, or a selective build's).
 */
#include <stdio.h>

#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/platform.h"

typedef void (*fn_ptr)(void);

#ifdef EMBER_SIZE_FULL
#define F(f) (fn_ptr)(f)
#else
static void dummy(void) {}
#define F(f) (fn_ptr)(dummy)
#endif

static const fn_ptr k_entry_points[] = {
    F(ember_status_str), F(ember_last_error), F(ember_clear_error),
    F(ember_dtype_size), F(ember_dtype_name),
    F(ember_tensor_resize), F(ember_tensor_is_contiguous), F(ember_value_int_list),
    F(ember_arena_init), F(ember_arena_reset),
    F(ember_buffer_loader_init), F(ember_file_loader_open), F(ember_file_loader_close),
    F(ember_mmap_loader_open), F(ember_mmap_loader_close),
    F(ember_program_load), F(ember_program_destroy), F(ember_program_method_count),
    F(ember_program_method_name), F(ember_program_method_meta), F(ember_program_input_meta),
    F(ember_program_output_meta), F(ember_program_planned_buffer_size),
    F(ember_program_operator_name), F(ember_program_method_arena_size),
    F(ember_method_load), F(ember_method_destroy), F(ember_method_input_count),
    F(ember_method_output_count), F(ember_method_set_input_tensor),
    F(ember_method_set_input_int), F(ember_method_set_input_double),
    F(ember_method_set_input_bool), F(ember_method_set_output_buffer),
    F(ember_method_execute), F(ember_method_output), F(ember_method_input),
    F(ember_platform_set), F(ember_platform_get), F(ember_platform_default), F(ember_log),
    F(ember_ticks_ns), F(ember_platform_alloc), F(ember_platform_free),
    F(ember_kernels_register), F(ember_kernels_clear), F(ember_kernel_find),
    F(ember_kernel_scratch), F(ember_kernel_fail),
    F(ember_backend_register), F(ember_backends_clear), F(ember_backend_find),
    F(ember_backend_fail),
#if defined(EMBER_SIZE_FULL) && defined(EMBER_SIZE_KERNELS)
    F(ember_portable_kernels_register),
#if EMBER_SIZE_KERNELS & 2
    F(ember_optimized_kernels_register),
#endif
#endif
};

int main(int argc, char **argv) {
    (void)argv;
    /* Index by a run-time value so no entry can be proven unused. */
    volatile fn_ptr f = k_entry_points[(size_t)argc % (sizeof k_entry_points / sizeof k_entry_points[0])];
    printf("%p\n", (void *)&f);
    return 0;
}
