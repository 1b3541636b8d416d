/*
 * startup.c — what runs before main() on a Cortex-M: the vector table, the
 * reset handler (copy .data from flash, zero .bss, turn the FPU on, paint
 * the stack so its peak can be measured) and fault handlers that report and
 * stop.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"

/* Symbols of the linker script (mps2_an500.ld). */
extern uint32_t __data_load__[], __data_start__[], __data_end__[];
extern uint32_t __bss_start__[], __bss_end__[];
extern uint32_t __stack_limit__[], __stack_top__[];

int main(void);
void reset_handler(void);

static void fault_handler(void) {
    board_puts("fatal: processor fault\n");
    board_exit(1);
}

static void default_handler(void) {
    board_puts("fatal: unexpected interrupt\n");
    board_exit(1);
}

typedef void (*vector_fn)(void);

/*
 * The first 16 entries of the table (the core's exceptions): the initial
 * stack pointer, then handlers. No device interrupt is used. The stack
 * pointer is an address in an array of handlers, as the hardware wants it.
 */
__attribute__((section(".vectors"), used)) const vector_fn vector_table[16] = {
    (vector_fn)(uintptr_t)__stack_top__,
    reset_handler,
    default_handler, /* NMI */
    fault_handler,   /* HardFault */
    fault_handler,   /* MemManage */
    fault_handler,   /* BusFault */
    fault_handler,   /* UsageFault */
    0, 0, 0, 0,      /* reserved */
    default_handler, /* SVCall */
    default_handler, /* DebugMonitor */
    0,               /* reserved */
    default_handler, /* PendSV */
    default_handler, /* SysTick */
};

#define STACK_PAINT 0xdeadbeefu

/* Bytes of stack ever used: the part below the top that lost its paint. */
size_t board_stack_peak(void) {
    const uint32_t *p = __stack_limit__;
    while (p < __stack_top__ && *p == STACK_PAINT) p++;
    return (size_t)((uintptr_t)__stack_top__ - (uintptr_t)p);
}

size_t board_stack_size(void) {
    return (size_t)((uintptr_t)__stack_top__ - (uintptr_t)__stack_limit__);
}

void reset_handler(void) {
    /* Nothing below may use .data or .bss before they are set up; these
     * loops run on the stack of the vector table. */
    uint32_t *dst = __data_start__;
    const uint32_t *src = __data_load__;
    while (dst < __data_end__) *dst++ = *src++;
    for (dst = __bss_start__; dst < __bss_end__; dst++) *dst = 0;

#if defined(__ARM_FP)
    /* Full access to coprocessors 10 and 11 (the FPU) in CPACR, then let
     * the write take effect before the first floating-point instruction. */
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif

    /* Paint the stack below the current frame (which is near the top). */
    uint32_t here;
    uint32_t *end = (uint32_t *)((uintptr_t)&here & ~(uintptr_t)7) - 64;
    for (uint32_t *p = __stack_limit__; p < end; p++) *p = STACK_PAINT;

    board_init();
    board_exit(main());
}
