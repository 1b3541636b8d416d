/*
 * embt_plugin.c — EmberTestBackend as a loadable library: built as a shared
 * object linked against libember.so, loaded from Python with
 * ember.runtime.load_library(), which calls ember_library_register().
 */
#include "embt_backend.c"

#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
ember_status ember_library_register(void);

ember_status ember_library_register(void) {
    g_be.available = true;
    return ember_backend_register(&g_embt);
}
