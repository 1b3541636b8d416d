/*
 * board.h — the little the example needs from the board: a UART for text
 * and a way to stop (semihosting, which QEMU turns into its exit status).
 */
#ifndef BOARD_H
#define BOARD_H

#include <stddef.h>
#include <stdint.h>

/** Enables the UART transmitter. */
void board_init(void);

/** Writes a NUL-terminated string / one unsigned decimal / 8 hex digits. */
void board_puts(const char *s);
void board_put_uint(uint32_t v);
void board_put_hex32(uint32_t v);

/** Stops the program: status 0 is success. Never returns. */
_Noreturn void board_exit(int status);

/** Stack bytes reserved, and the most ever used (from the painted stack). */
size_t board_stack_size(void);
size_t board_stack_peak(void);

#endif
