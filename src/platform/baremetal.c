/*
 * Default platform for bare-metal builds (EMBER_PLATFORM_BAREMETAL): no log
 * sink, no clock, no heap, and abort spins. Ports install their own table
 * with ember_platform_set().
 */
#ifdef EMBER_PLATFORM_BAREMETAL

#include "ember/platform.h"

static void baremetal_abort(void *user) {
    (void)user;
    for (;;) {
    }
}

static const ember_platform g_baremetal = {
    sizeof(ember_platform), NULL, NULL, NULL, baremetal_abort, NULL, NULL,
};

const ember_platform *ember_platform_default(void) { return &g_baremetal; }

#else
/* ISO C forbids an empty translation unit. */
typedef int ember_baremetal_unused;
#endif
