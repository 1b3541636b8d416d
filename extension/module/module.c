/*
 * The module helper: file → loader → program → lazily loaded methods.
 * Everything here is built from the public API in ember.h and kernel.h.
 */
#include "ember/module.h"

#include <string.h>

#include "ember/backend.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"

struct ember_module {
    /* Exactly one loader is open; `loader` points into this struct, whose
     * address stays fixed for the program's lifetime. */
    ember_mmap_loader mmap;
    ember_file_loader file;
    bool use_mmap;
    const ember_data_loader *loader;
    ember_program *program;
    ember_method **methods; /* (num_methods), NULL until loaded */
    size_t num_methods;
    ember_threadpool *pool; /* the methods' threads; NULL for one */
};

/* Set once the portable kernels and the CPU backend are registered, so
 * repeated loads do not fill the registry with copies of the same table. */
static bool g_portable_registered;

static ember_status register_portable_once(void) {
    if (g_portable_registered) return EMBER_OK;
    ember_status st = ember_portable_kernels_register();
    if (st == EMBER_OK) st = ember_xnnpack_backend_register();
    if (st == EMBER_OK) g_portable_registered = true;
    return st;
}

static ember_status open_loader(ember_module *mod, const char *path) {
    ember_status st = ember_mmap_loader_open(&mod->mmap, path);
    if (st == EMBER_OK) {
        mod->use_mmap = true;
        mod->loader = &mod->mmap.base;
        return EMBER_OK;
    }
    if (st != EMBER_ERR_NOT_SUPPORTED) return st;
    /* No mmap in this build: read the file instead. */
    st = ember_file_loader_open(&mod->file, path);
    if (st != EMBER_OK) return st;
    mod->use_mmap = false;
    mod->loader = &mod->file.base;
    return EMBER_OK;
}

static void close_loader(ember_module *mod) {
    if (mod->loader == NULL) return;
    if (mod->use_mmap)
        ember_mmap_loader_close(&mod->mmap);
    else
        ember_file_loader_close(&mod->file);
    mod->loader = NULL;
}

ember_status ember_module_load(const char *path, ember_module **out) {
    return ember_module_load_with(path, NULL, out);
}

ember_status ember_module_load_with(const char *path, const ember_module_options *options,
                                    ember_module **out) {
    if (path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "module load: NULL argument");
    if (options != NULL && options->struct_size < sizeof(ember_module_options))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_module_options.struct_size is wrong");
    size_t threads = options != NULL ? options->num_threads : 0;
    if (threads == 0) threads = ember_cpu_count();

    ember_module *mod = ember_platform_alloc(sizeof *mod, _Alignof(ember_module));
    if (mod == NULL)
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: no memory for the module");
    memset(mod, 0, sizeof *mod);

    ember_status st = open_loader(mod, path);
    if (st == EMBER_OK) st = ember_program_load(mod->loader, NULL, &mod->program);
    if (st == EMBER_OK) {
        mod->num_methods = ember_program_method_count(mod->program);
        size_t bytes;
        if (ember_mul_overflow(mod->num_methods, sizeof *mod->methods, &bytes)) {
            st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: too many methods");
        } else if (bytes > 0) {
            mod->methods = ember_platform_alloc(bytes, _Alignof(ember_method *));
            if (mod->methods == NULL)
                st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: no memory for methods");
            else
                memset(mod->methods, 0, bytes);
        }
    }
    if (st == EMBER_OK) st = register_portable_once();
    if (st == EMBER_OK && threads > 1) st = ember_threadpool_create(threads, &mod->pool);
    if (st != EMBER_OK) {
        ember_module_destroy(mod);
        return st;
    }
    *out = mod;
    return EMBER_OK;
}

ember_status ember_module_method(ember_module *module, const char *name, ember_method **out) {
    if (module == NULL || name == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "module method: NULL argument");

    size_t index = module->num_methods;
    for (size_t i = 0; i < module->num_methods; i++) {
        const char *mname;
        if (ember_program_method_name(module->program, i, &mname) == EMBER_OK &&
            strcmp(mname, name) == 0) {
            index = i;
            break;
        }
    }
    if (index < module->num_methods && module->methods[index] != NULL) {
        *out = module->methods[index];
        return EMBER_OK;
    }

    /* Unknown names go to the core too, so the caller gets its status and
     * message (EMBER_ERR_NOT_FOUND naming the method). */
    ember_method *m = NULL;
    ember_method_options options;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.threadpool = module->pool;
    ember_status st = ember_method_load_with(module->program, name, &options, &m);
    if (st != EMBER_OK) return st;
    if (index < module->num_methods) {
        module->methods[index] = m;
    } else {
        /* The core found a method the name table did not list: do not leak it. */
        ember_method_destroy(m);
        return ember_error_set(EMBER_ERR_NOT_FOUND, "method '%s' is not in the name table", name);
    }
    *out = m;
    return EMBER_OK;
}

const ember_program *ember_module_program(const ember_module *module) {
    return module == NULL ? NULL : module->program;
}

void ember_module_destroy(ember_module *module) {
    if (module == NULL) return;
    if (module->methods != NULL) {
        for (size_t i = 0; i < module->num_methods; i++) ember_method_destroy(module->methods[i]);
        ember_platform_free(module->methods);
    }
    ember_threadpool_destroy(module->pool);
    ember_program_destroy(module->program);
    close_loader(module);
    ember_platform_free(module);
}
