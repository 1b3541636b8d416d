/*
 * board_mps2.c — I/O on the MPS2 boards (and QEMU's mps2-an385/386/500):
 * UART0 is an Arm CMSDK APB UART at 0x40004000; exit goes through Arm
 * semihosting (a debugger or QEMU's -semihosting handles it). And the
 * allocator newlib's nano C library refers to, replaced: there is no heap.
 */
#include <errno.h>
#include <reent.h>
#include <stddef.h>
#include <stdint.h>

#include "board.h"

#define UART0_BASE 0x40004000u
#define UART_DATA (*(volatile uint32_t *)(UART0_BASE + 0x00u))
#define UART_STATE (*(volatile uint32_t *)(UART0_BASE + 0x04u))
#define UART_CTRL (*(volatile uint32_t *)(UART0_BASE + 0x08u))
#define UART_BAUDDIV (*(volatile uint32_t *)(UART0_BASE + 0x10u))
#define UART_STATE_TX_FULL 1u
#define UART_CTRL_TX_EN 1u

void board_init(void) {
    UART_BAUDDIV = 16; /* the smallest divider the UART accepts */
    UART_CTRL = UART_CTRL_TX_EN;
}

static void board_putc(char c) {
    while (UART_STATE & UART_STATE_TX_FULL) {
    }
    UART_DATA = (uint32_t)(unsigned char)c;
}

void board_puts(const char *s) {
    while (*s) board_putc(*s++);
}

void board_put_uint(uint32_t v) {
    char buf[11];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) board_putc(buf[--n]);
}

void board_put_hex32(uint32_t v) {
    static const char digits[] = "0123456789abcdef";
    for (int shift = 28; shift >= 0; shift -= 4) board_putc(digits[(v >> shift) & 0xFu]);
}

/* Semihosting SYS_EXIT with ADP_Stopped_ApplicationExit (QEMU exits 0) or
 * ADP_Stopped_RunTimeErrorUnknown (QEMU exits 1). */
_Noreturn void board_exit(int status) {
    register uint32_t op __asm__("r0") = 0x18u;
    register uint32_t reason __asm__("r1") = status == 0 ? 0x20026u : 0x20023u;
    __asm__ volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
    for (;;) {
    }
}

/* --- newlib: no heap ------------------------------------------------------ */

/*
 * newlib's vsnprintf (which the runtime's error messages use) refers to its
 * allocator, for strings that grow (asprintf), though it never grows a
 * caller's buffer. These replace the allocator so that none is linked: every
 * request fails, and there is no heap to size.
 */
void *_malloc_r(struct _reent *r, size_t size) {
    (void)size;
    r->_errno = ENOMEM;
    return NULL;
}

void *_realloc_r(struct _reent *r, void *ptr, size_t size) {
    (void)ptr;
    (void)size;
    r->_errno = ENOMEM;
    return NULL;
}

void _free_r(struct _reent *r, void *ptr) {
    (void)r;
    (void)ptr;
}
