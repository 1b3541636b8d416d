/*
 * The module helper: file → loader → program → lazily loaded methods.
 * Everything here is built from the public API in ember.h and kernel.h.
 */
#include "ember/module.h"

#include <stdio.h>
#include <string.h>

#include "ember/backend.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"

/* One open file: exactly one of its loaders is open; `loader` points into
 * this struct, whose address stays fixed while the file is in use. */
typedef struct module_file {
    ember_mmap_loader mmap;
    ember_file_loader file;
    bool use_mmap;
    const ember_data_loader *loader;
} module_file;

struct ember_module {
    module_file pte;
    ember_program *program;
    ember_method **methods; /* (num_methods), NULL until loaded */
    size_t num_methods;
    ember_threadpool *pool; /* the methods' threads; NULL for one */
    module_file *data_files;/* (num_data) the .ptd files */
    ember_data_map **maps;  /* (num_data) their data maps, NULL until open */
    size_t num_data;
    ember_file_weight_cache *cache; /* NULL without one */
    char cache_message[160];        /* why there is none, when one was asked for */
};

/* Set once the portable kernels and the CPU backend are registered, so
 * repeated loads do not fill the registry with copies of the same table. */
static bool g_portable_registered;

static ember_status register_portable_once(void) {
    if (g_portable_registered) return EMBER_OK;
    ember_status st = ember_portable_kernels_register();
    if (st == EMBER_OK) st = ember_optimized_kernels_register();
    if (st == EMBER_OK) st = ember_xnnpack_backend_register();
    if (st == EMBER_OK) st = ember_vulkan_backend_register();
    if (st == EMBER_OK) g_portable_registered = true;
    return st;
}

static ember_status open_loader(module_file *f, const char *path) {
    ember_status st = ember_mmap_loader_open(&f->mmap, path);
    if (st == EMBER_OK) {
        f->use_mmap = true;
        f->loader = &f->mmap.base;
        return EMBER_OK;
    }
    if (st != EMBER_ERR_NOT_SUPPORTED) return st;
    /* No mmap in this build: read the file instead. */
    st = ember_file_loader_open(&f->file, path);
    if (st != EMBER_OK) return st;
    f->use_mmap = false;
    f->loader = &f->file.base;
    return EMBER_OK;
}

static void close_loader(module_file *f) {
    if (f->loader == NULL) return;
    if (f->use_mmap)
        ember_mmap_loader_close(&f->mmap);
    else
        ember_file_loader_close(&f->file);
    f->loader = NULL;
}

/* Opens every .ptd file as a data map; the message names a failing file. */
static ember_status open_data_files(ember_module *mod, const char *const *paths, size_t n) {
    size_t bytes;
    if (n == 0) return EMBER_OK;
    if (paths == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "module load: %zu data files, no array", n);
    if (ember_mul_overflow(n, sizeof *mod->data_files + sizeof *mod->maps, &bytes))
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: too many data files");
    mod->data_files = ember_platform_alloc(n * sizeof *mod->data_files, _Alignof(module_file));
    mod->maps = ember_platform_alloc(n * sizeof *mod->maps, _Alignof(ember_data_map *));
    if (mod->data_files == NULL || mod->maps == NULL)
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: no memory for data files");
    memset(mod->data_files, 0, n * sizeof *mod->data_files);
    memset(mod->maps, 0, n * sizeof *mod->maps);
    mod->num_data = n;
    for (size_t i = 0; i < n; i++) {
        if (paths[i] == NULL)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "module load: data file %zu is NULL", i);
        ember_status st = open_loader(&mod->data_files[i], paths[i]);
        if (st == EMBER_OK) st = ember_data_map_open(mod->data_files[i].loader, NULL, &mod->maps[i]);
        if (st != EMBER_OK) {
            char msg[EMBER_ERROR_MESSAGE_SIZE];
            snprintf(msg, sizeof msg, "%s", ember_last_error());
            return ember_error_set(st, "data file '%.256s': %s", paths[i], msg);
        }
    }
    return EMBER_OK;
}

/* Opens the weight cache "<dir>/<model name>-<program hash>.ewc". Failing
 * to is no error: the module packs its weights as it would without one. */
static void open_cache(ember_module *mod, const char *model_path, const char *dir,
                       uint64_t min_bytes) {
    const char *base = strrchr(model_path, '/');
    base = base != NULL ? base + 1 : model_path;
    size_t stem = strlen(base);
    if (stem > 4 && strcmp(base + stem - 4, ".pte") == 0) stem -= 4;
    if (stem > 100) stem = 100;
    const uint64_t hash = ember_program_hash(mod->program);
    char path[4096];
    const int n = snprintf(path, sizeof path, "%s/%.*s-%016llx.ewc", dir, (int)stem, base,
                           (unsigned long long)hash);
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(mod->cache_message, sizeof mod->cache_message, "the cache path is too long");
        return;
    }
    if (ember_file_weight_cache_open(path, hash, min_bytes, &mod->cache) != EMBER_OK)
        snprintf(mod->cache_message, sizeof mod->cache_message, "%s", ember_last_error());
    ember_clear_error();
}

ember_status ember_module_load(const char *path, ember_module **out) {
    return ember_module_load_with(path, NULL, out);
}

ember_status ember_module_load_with(const char *path, const ember_module_options *options,
                                    ember_module **out) {
    if (path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "module load: NULL argument");
    /* Options from before data files end at num_threads. */
    if (options != NULL && options->struct_size < offsetof(ember_module_options, data_files))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_module_options.struct_size is wrong");
    bool has_data = options != NULL &&
                    options->struct_size >= offsetof(ember_module_options, weight_cache_dir);
    bool has_cache = options != NULL && options->struct_size >= sizeof(ember_module_options) &&
                     options->weight_cache_dir != NULL;
    size_t threads = options != NULL ? options->num_threads : 0;
    if (threads == 0) threads = ember_cpu_count();

    ember_module *mod = ember_platform_alloc(sizeof *mod, _Alignof(ember_module));
    if (mod == NULL)
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "module load: no memory for the module");
    memset(mod, 0, sizeof *mod);

    ember_status st = open_loader(&mod->pte, path);
    if (st == EMBER_OK) st = ember_program_load(mod->pte.loader, NULL, &mod->program);
    if (st == EMBER_OK && has_data)
        st = open_data_files(mod, options->data_files, options->num_data_files);
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
    if (st == EMBER_OK && has_cache)
        open_cache(mod, path, options->weight_cache_dir, options->weight_cache_min_bytes);
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
    options.data_maps = (const ember_data_map *const *)module->maps;
    options.num_data_maps = module->num_data;
    options.weight_cache = ember_file_weight_cache_get(module->cache);
    ember_status st = ember_method_load_with(module->program, name, &options, &m);
    if (st != EMBER_OK) return st;
    ember_file_weight_cache_commit(module->cache);
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

void ember_module_weight_cache_info(const ember_module *module, ember_weight_cache_info *out) {
    ember_file_weight_cache_info(module != NULL ? module->cache : NULL, out);
    if (out != NULL && module != NULL && module->cache == NULL)
        out->message = module->cache_message;
}

void ember_module_destroy(ember_module *module) {
    if (module == NULL) return;
    if (module->methods != NULL) {
        for (size_t i = 0; i < module->num_methods; i++) ember_method_destroy(module->methods[i]);
        ember_platform_free(module->methods);
    }
    ember_file_weight_cache_close(module->cache); /* after the methods that use it */
    ember_threadpool_destroy(module->pool);
    ember_program_destroy(module->program);
    close_loader(&module->pte);
    for (size_t i = 0; i < module->num_data; i++) {
        ember_data_map_close(module->maps[i]);
        close_loader(&module->data_files[i]);
    }
    ember_platform_free(module->maps);
    ember_platform_free(module->data_files);
    ember_platform_free(module);
}
