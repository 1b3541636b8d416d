/*
 * tiles.h — how the matrix-product drivers (gemm.c, qd8_gemm.c) cut one
 * product into tasks for the thread pool: blocks of up to 64 rows (a
 * multiple of every MR) by groups of packed panels, about four tasks a
 * thread. Inside a task the driver walks panels outside and rows inside, so
 * a panel comes from memory once per block and from cache for its other rows.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_TILES_H
#define EMBER_KERNELS_OPTIMIZED_TILES_H

#include <stddef.h>

typedef struct eko_tiles {
    size_t m, panels;                   /* rows, panels of the product */
    size_t rows_per_block, panels_per_group, groups;
    size_t count;                       /* tasks: blocks x groups */
} eko_tiles;

/* The tasks of an m-row product over `panels` panels on `threads` threads
 * (m, panels > 0). */
static inline eko_tiles eko_tiles_plan(size_t m, size_t panels, size_t threads) {
    eko_tiles t = {m, panels, m <= 64 ? m : 64, panels, 1, 0};
    const size_t blocks = m / t.rows_per_block + (m % t.rows_per_block != 0);
    if (threads > 1) {
        const size_t want = threads * 4 / blocks + 1;
        t.panels_per_group = panels / want + (panels % want != 0);
        if (t.panels_per_group == 0) t.panels_per_group = 1;
        t.groups = panels / t.panels_per_group + (panels % t.panels_per_group != 0);
    }
    t.count = blocks * t.groups;
    return t;
}

/* The whole product as one task (a caller without a pool). */
static inline eko_tiles eko_tiles_single(size_t m, size_t panels) {
    eko_tiles t = {m, panels, m, panels, 1, 1};
    return t;
}

/* Rows [m0, m1) and panels [p0, p1) of task i. */
static inline void eko_tiles_bounds(const eko_tiles *t, size_t i, size_t *m0, size_t *m1,
                                    size_t *p0, size_t *p1) {
    const size_t block = i / t->groups, group = i % t->groups;
    *m0 = block * t->rows_per_block;
    *m1 = *m0 + t->rows_per_block < t->m ? *m0 + t->rows_per_block : t->m;
    *p0 = group * t->panels_per_group;
    *p1 = *p0 + t->panels_per_group < t->panels ? *p0 + t->panels_per_group : t->panels;
}

#endif /* EMBER_KERNELS_OPTIMIZED_TILES_H */
