/*
 * VulkanBackend's device side, on the Vulkan C API.
 *
 * One context per process, shared by every delegate and reference-counted:
 * the instance, the chosen physical device (discrete GPU first, then
 * integrated, virtual, CPU), a logical device with one compute queue, the
 * shader modules (SPIR-V compiled from shaders/ at build time and embedded;
 * the float16 modules too where the device has 16-bit storage, which the
 * device is then created with; matvec_sg where it has subgroup arithmetic),
 * one descriptor-set layout and a cache of compute pipelines, one per
 * shader, variant (elementwise operator, ROWS) and storage types of the
 * bindings (specialization constants), made when a delegate first needs
 * them through the context's VkPipelineCache. That cache can live in a file
 * (ember_vulkan_set_pipeline_cache_file(), or EMBER_VULKAN_PIPELINE_CACHE
 * read when the context is made): read when the context is made, after
 * ember's own checks (a trailer hash, the header against the device), since
 * drivers differ in how well they check what they are handed; written
 * through a temporary file and a rename after an init that compiled
 * pipelines and at release.
 *
 * The context is created on first use (a delegate's init, or a question
 * about the device) and stays when the last delegate goes, so the next
 * program neither loads the driver again nor makes a device: drivers do not
 * all give back what a load took (Mesa's on AMD processors keeps its CPU
 * topology, 128 bytes a load; NVIDIA's 580 refused new instances before a
 * process had made 72), and making an instance and a device costs far more
 * than loading a program. ember_vulkan_device_release() destroys it when no
 * delegate is loaded. A pipeline no loaded delegate uses is destroyed when
 * the cache needs its slot. The queue is shared, so submissions take a lock.
 *
 * Every Vulkan object ember makes is counted (g_objects, reported by
 * ember_vulkan_info_get()), the pipeline cache too, and every fallible call
 * goes through VK_CALL or VK_MAKE, where a test hook (vk_testing.h) can make
 * the n-th one fail: the tests drive each failure path of init that way and
 * check that nothing is left behind (a failed call of the cache file's save
 * fails the save alone, never the load).
 *
 * Per delegate: the weights and arena buffers (device-local, mapped where
 * the host can map that memory; else filled through a staging buffer and an
 * I/O buffer the command buffer copies: make_buffer, make_staging), the
 * control buffer (host-visible), one descriptor set per dispatch written at
 * init, and one command buffer recorded at init and replayed by every
 * execute: its dispatches are indirect, reading the workgroup counts that
 * vk_ops.c writes for the actual shapes (zero for a variant the shapes do
 * not use), and an aliased view records none. Traced runs replay a second
 * buffer that stamps every dispatch, and note the host clock before the
 * submission and at the fence wait's return.
 */
#define _POSIX_C_SOURCE 200809L /* open, fstat, pread, getpid */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include "vk_graph.h"
#include "vk_testing.h"

/* Pipelines the context holds at most (shader x operator x storage types). */
#define VK_MAX_PIPELINES 512

typedef struct vk_pipeline {
    uint8_t shader, op;
    uint16_t storage;
    uint32_t users; /* dispatches of the loaded delegates that use it */
    VkPipeline pipe;
} vk_pipeline;

typedef struct vk_context {
    int refs;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    bool timestamps;      /* the compute queue writes timestamps */
    double tick_ns;       /* nanoseconds per timestamp tick */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkShaderModule modules[VK_SH_COUNT];
    VkShaderModule modules_f16[VK_SH_COUNT]; /* where the device has 16-bit storage */
    bool f16_storage;                        /* storageBuffer16BitAccess, enabled */
    bool subgroups;                          /* subgroup arithmetic in compute shaders,
                                              * subgroups that divide a workgroup */
    vk_pipeline pipelines[VK_MAX_PIPELINES];
    uint32_t num_pipelines;
    VkPipelineCache cache;  /* every pipeline is made through it */
    bool cache_dirty;       /* it holds pipelines the cache file lacks */
    size_t cache_loaded;    /* bytes adopted from cache files */
    size_t weights_bytes, arena_bytes;       /* of the delegates open now */
} vk_context;

/* The delegate's buffers: BUF_IO holds the inputs and outputs where the
 * arena is not mapped; BUF_STAGING the weights on their way to an unmapped
 * weights buffer (init only). */
enum { BUF_ARENA = 0, BUF_WEIGHTS = 1, BUF_CONTROL = 2, BUF_IO = 3, BUF_STAGING = 4, BUF_COUNT = 5 };

/* Bytes the weights go through the staging buffer in, at least. */
#define VK_STAGING_BYTES ((size_t)16 << 20)

struct vk_device {
    VkBuffer buf[BUF_COUNT];
    VkDeviceMemory mem[BUF_COUNT];
    void *map[BUF_COUNT];
    VkDescriptorPool pool;
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkCommandBuffer cmd_timed; /* the same dispatches with a timestamp after each */
    VkQueryPool stamps;
    VkCommandBuffer upload;    /* init: copies from the staging buffer, the arena's zeroing */
    size_t staging_bytes;      /* of the staging buffer */
    size_t staged, staged_at;  /* staging bytes filled; where they go in the weights */
    VkFence fence;
    bool pending; /* submitted work not yet waited for */
    size_t weights_bytes, arena_bytes; /* counted in the context's totals */
};

static vk_context g_ctx;
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
static int g_available = -1; /* unknown */

#define BINDINGS (VK_MAX_BINDINGS + 2)

/* The ledger: Vulkan objects ember holds now (each vkCreate / vkAllocate
 * that made one, less each vkDestroy / vkFree), instances made since the
 * process started, and the test hooks' state. */
static atomic_size_t g_objects;
static atomic_size_t g_instances_made;
static atomic_uint g_calls;        /* fallible calls so far */
static atomic_uint g_fail_at;      /* the call that fails on purpose; 0: none */
static atomic_uint g_pipeline_cap; /* 0: VK_MAX_PIPELINES */

/* Whether this fallible call is the one the test hook fails. */
static bool fail_here(void) {
    unsigned n = atomic_fetch_add(&g_calls, 1) + 1;
    unsigned at = atomic_load(&g_fail_at);
    return at != 0 && n == at;
}

static VkResult counted(VkResult r) {
    if (r == VK_SUCCESS) atomic_fetch_add(&g_objects, 1);
    return r;
}

static void uncount(void) { atomic_fetch_sub(&g_objects, 1); }

/* A fallible call; one that makes an object to destroy later. */
#define VK_CALL(call) (fail_here() ? VK_ERROR_OUT_OF_HOST_MEMORY : (call))
#define VK_MAKE(call) (fail_here() ? VK_ERROR_OUT_OF_HOST_MEMORY : counted(call))

uint32_t vk_testing_calls(void) { return atomic_load(&g_calls); }

void vk_testing_fail_call(uint32_t n) {
    atomic_store(&g_fail_at, n == 0 ? 0u : atomic_load(&g_calls) + n);
}

void vk_testing_pipeline_cap(uint32_t n) {
    atomic_store(&g_pipeline_cap, n < VK_MAX_PIPELINES ? n : 0u);
}

static ember_status vk_fail(VkResult r, const char *what) {
    ember_status st = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                          ? EMBER_ERR_OUT_OF_MEMORY
                          : EMBER_ERR_DELEGATE_FAILED;
    return ember_backend_fail(st, "vulkan: %s failed (VkResult %d)", what, (int)r);
}

/* ---- The pipeline cache file ----
 *
 * The file holds the driver's pipeline cache data (vkGetPipelineCacheData: a
 * VkPipelineCacheHeaderVersionOne, then the driver's own bytes) and ember's
 * 16-byte trailer: the FNV-1a 64 hash of the data and its length (both
 * little-endian), then "EVPC". Drivers differ in how well they check the
 * data they are given, and a cache file outlives driver updates, crashes and
 * full disks, so the file is checked here first: its size, the trailer (a cut
 * or damaged file), then the header against this device. A file that fails
 * any check is ignored as if there were none: the pipelines are compiled
 * afresh and the next save replaces it. */

#define CACHE_PATH_MAX 1024
#define CACHE_TRAILER 16
/* VkPipelineCacheHeaderVersionOne as the file lays it out: four 32-bit
 * words, then the 16-byte UUID. */
#define CACHE_HEADER 32
/* Far above what VK_MAX_PIPELINES compute pipelines take. */
#define CACHE_FILE_MAX ((size_t)64 << 20)

static char g_cache_path[CACHE_PATH_MAX]; /* "": no file */
static bool g_cache_path_set;             /* by the API: the environment is not read */
static atomic_uint g_cache_save_failures;

uint32_t vk_testing_cache_save_failures(void) { return atomic_load(&g_cache_save_failures); }

static uint32_t get_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}

/* Whether the size bytes of a cache file at buf pass every check; the first
 * *data_size of them are then the driver's. */
static bool cache_file_check(const vk_context *c, const uint8_t *buf, size_t size,
                             size_t *data_size) {
    if (size < CACHE_HEADER + CACHE_TRAILER || size > CACHE_FILE_MAX) return false;
    const size_t n = size - CACHE_TRAILER;
    const uint8_t *t = buf + n;
    uint64_t hash = fnv1a(buf, n);
    if (memcmp(t + 12, "EVPC", 4) != 0 || get_le32(t + 8) != n ||
        get_le32(t) != (uint32_t)hash || get_le32(t + 4) != (uint32_t)(hash >> 32))
        return false;
    uint32_t header = get_le32(buf);
    if (header < CACHE_HEADER || header > n ||
        get_le32(buf + 4) != (uint32_t)VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        get_le32(buf + 8) != c->props.vendorID || get_le32(buf + 12) != c->props.deviceID ||
        memcmp(buf + 16, c->props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return false;
    *data_size = n;
    return true;
}

/* The whole file at path in a buffer from the platform heap (the caller
 * frees it), *size bytes; NULL where there is none, it cannot be read whole,
 * or its size is outside what a cache file can be. */
static uint8_t *read_cache_file(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= CACHE_HEADER + CACHE_TRAILER &&
        (uint64_t)st.st_size <= CACHE_FILE_MAX)
        buf = ember_platform_alloc((size_t)st.st_size, 16);
    size_t n = buf != NULL ? (size_t)st.st_size : 0, done = 0;
    while (done < n) {
        ssize_t got = pread(fd, buf + done, n - done, (off_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += (size_t)got;
    }
    close(fd);
    if (done != n) {
        ember_platform_free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

/* Writes n bytes to path through a temporary file next to it, renamed over
 * it once whole: a crash or a full disk never leaves part of a file under
 * path. No fsync: a file that a power cut leaves short fails the trailer's
 * check and is ignored, where a sync would cost every save a disk flush. */
static bool write_cache_file(const char *path, const uint8_t *buf, size_t n) {
    char tmp[CACHE_PATH_MAX + 32];
    int len = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp) return false;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    size_t done = 0;
    while (done < n) {
        ssize_t put = write(fd, buf + done, n - done);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) break;
        done += (size_t)put;
    }
    bool ok = close(fd) == 0 && done == n;
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    return ok;
}

/* The driver's data of the context's cache with ember's trailer, in a
 * buffer from the platform heap (the caller frees it); NULL on failure. */
static uint8_t *cache_serialize(vk_context *c, size_t *size) {
    size_t n = 0, total;
    VkResult r = VK_CALL(vkGetPipelineCacheData(c->device, c->cache, &n, NULL));
    if (r != VK_SUCCESS || n < CACHE_HEADER || ember_add_overflow(n, CACHE_TRAILER, &total) ||
        total > CACHE_FILE_MAX)
        return NULL;
    uint8_t *buf = ember_platform_alloc(total, 16);
    if (buf == NULL) return NULL;
    /* the lock keeps pipelines from joining the cache between the calls */
    r = VK_CALL(vkGetPipelineCacheData(c->device, c->cache, &n, buf));
    if (r != VK_SUCCESS || n < CACHE_HEADER || n > total - CACHE_TRAILER) {
        ember_platform_free(buf);
        return NULL;
    }
    uint64_t hash = fnv1a(buf, n);
    put_le32(buf + n, (uint32_t)hash);
    put_le32(buf + n + 4, (uint32_t)(hash >> 32));
    put_le32(buf + n + 8, (uint32_t)n);
    memcpy(buf + n + 12, "EVPC", 4);
    *size = n + CACHE_TRAILER;
    return buf;
}

/* Writes the context's cache to the cache file where it holds pipelines the
 * file lacks. A failure costs the next process compile time and no more: it
 * is logged, never returned. Called with g_ctx_lock held. */
static void cache_save(vk_context *c) {
    if (c->cache == VK_NULL_HANDLE || !c->cache_dirty || g_cache_path[0] == '\0') return;
    size_t size = 0;
    uint8_t *buf = cache_serialize(c, &size);
    bool ok = buf != NULL && write_cache_file(g_cache_path, buf, size);
    ember_platform_free(buf);
    if (ok) {
        c->cache_dirty = false;
        return;
    }
    atomic_fetch_add(&g_cache_save_failures, 1);
    ember_log(EMBER_LOG_WARNING, "vulkan: the pipeline cache was not written to %s",
              g_cache_path);
}

/* The cache file's bytes for the driver, *size of them (the caller frees
 * them), where there is a file and it passes every check; NULL otherwise. */
static uint8_t *cache_file_load(const vk_context *c, size_t *size) {
    if (g_cache_path[0] == '\0') return NULL;
    size_t n = 0;
    uint8_t *buf = read_cache_file(g_cache_path, &n);
    if (buf != NULL && !cache_file_check(c, buf, n, size)) {
        ember_platform_free(buf);
        buf = NULL;
    }
    return buf;
}

static VkResult make_cache(vk_context *c, const uint8_t *data, size_t size, VkPipelineCache *out) {
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = data != NULL ? size : 0;
    ci.pInitialData = data;
    return VK_MAKE(vkCreatePipelineCache(c->device, &ci, NULL, out));
}

/* The context's pipeline cache, filled from the cache file where one
 * passes; the path comes from EMBER_VULKAN_PIPELINE_CACHE unless
 * ember_vulkan_set_pipeline_cache_file() has named one (or none). */
static ember_status cache_create(vk_context *c) {
    if (!g_cache_path_set) {
        const char *env = getenv("EMBER_VULKAN_PIPELINE_CACHE");
        size_t len = env != NULL ? strlen(env) : 0;
        if (len >= sizeof g_cache_path) {
            ember_log(EMBER_LOG_WARNING, "vulkan: EMBER_VULKAN_PIPELINE_CACHE is longer than "
                      "%d bytes; no pipeline cache file", CACHE_PATH_MAX - 1);
            len = 0;
        }
        if (len > 0) memcpy(g_cache_path, env, len);
        g_cache_path[len] = '\0';
    }
    size_t size = 0;
    uint8_t *data = cache_file_load(c, &size);
    VkResult r = make_cache(c, data, size, &c->cache);
    c->cache_loaded = data != NULL && r == VK_SUCCESS ? size : 0;
    ember_platform_free(data);
    if (r != VK_SUCCESS) {
        c->cache = VK_NULL_HANDLE;
        return vk_fail(r, "vkCreatePipelineCache");
    }
    return EMBER_OK;
}

/* Merges the cache file into the context's cache: a file named while the
 * context exists. Called with g_ctx_lock held. */
static ember_status cache_merge_file(vk_context *c) {
    size_t size = 0;
    uint8_t *data = cache_file_load(c, &size);
    if (data == NULL) return EMBER_OK;
    VkPipelineCache from;
    VkResult r = make_cache(c, data, size, &from);
    ember_platform_free(data);
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreatePipelineCache");
    r = VK_CALL(vkMergePipelineCaches(c->device, c->cache, 1, &from));
    vkDestroyPipelineCache(c->device, from, NULL);
    uncount();
    if (r != VK_SUCCESS) return vk_fail(r, "vkMergePipelineCaches");
    c->cache_loaded += size;
    return EMBER_OK;
}

ember_status vk_device_set_cache_file(const char *path) {
    size_t len = path != NULL ? strlen(path) : 0;
    if (len >= CACHE_PATH_MAX)
        return ember_backend_fail(EMBER_ERR_INVALID_ARGUMENT,
                                  "vulkan: the pipeline cache path has %zu bytes, at most %d", len,
                                  CACHE_PATH_MAX - 1);
    pthread_mutex_lock(&g_ctx_lock);
    if (len > 0) memcpy(g_cache_path, path, len);
    g_cache_path[len] = '\0';
    g_cache_path_set = true;
    ember_status st = EMBER_OK;
    if (g_ctx.cache != VK_NULL_HANDLE && len > 0) {
        /* the new file lacks what this context compiled: the next save
         * writes the merged whole */
        g_ctx.cache_dirty = true;
        st = cache_merge_file(&g_ctx);
    }
    pthread_mutex_unlock(&g_ctx_lock);
    return st;
}

/* Destroys the pipelines no loaded delegate uses and closes up the rest.
 * Called with g_ctx_lock held (or on a context no other thread sees). */
static void drop_unused_pipelines(vk_context *c) {
    uint32_t kept = 0;
    for (uint32_t k = 0; k < c->num_pipelines; k++) {
        if (c->pipelines[k].users > 0) {
            c->pipelines[kept++] = c->pipelines[k];
            continue;
        }
        vkDestroyPipeline(c->device, c->pipelines[k].pipe, NULL);
        uncount();
    }
    c->num_pipelines = kept;
}

static void context_destroy(vk_context *c) {
    if (c->device) {
        vkDeviceWaitIdle(c->device);
        drop_unused_pipelines(c); /* every one: no delegate is loaded */
        cache_save(c);
        if (c->cache) {
            vkDestroyPipelineCache(c->device, c->cache, NULL);
            uncount();
        }
        for (int k = 0; k < VK_SH_COUNT; k++) {
            if (c->modules[k]) {
                vkDestroyShaderModule(c->device, c->modules[k], NULL);
                uncount();
            }
            if (c->modules_f16[k]) {
                vkDestroyShaderModule(c->device, c->modules_f16[k], NULL);
                uncount();
            }
        }
        if (c->layout) {
            vkDestroyPipelineLayout(c->device, c->layout, NULL);
            uncount();
        }
        if (c->set_layout) {
            vkDestroyDescriptorSetLayout(c->device, c->set_layout, NULL);
            uncount();
        }
        vkDestroyDevice(c->device, NULL);
        uncount();
    }
    if (c->instance) {
        vkDestroyInstance(c->instance, NULL);
        uncount();
    }
    memset(c, 0, sizeof *c);
}

/* Device preference: discrete, integrated, virtual, CPU, other. */
static int device_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static ember_status pick_device(vk_context *c) {
    VkPhysicalDevice devs[16];
    uint32_t n = 16;
    VkResult r = VK_CALL(vkEnumeratePhysicalDevices(c->instance, &n, devs));
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_fail(r, "vkEnumeratePhysicalDevices");
    int best = 99;
    for (uint32_t k = 0; k < n; k++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[k], &p);
        VkQueueFamilyProperties fam[16];
        uint32_t nf = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[k], &nf, fam);
        for (uint32_t f = 0; f < nf; f++) {
            if (!(fam[f].queueFlags & VK_QUEUE_COMPUTE_BIT) || fam[f].queueCount == 0) continue;
            int rank = device_rank(p.deviceType);
            if (rank < best) {
                best = rank;
                c->phys = devs[k];
                c->family = f;
                c->props = p;
                c->timestamps = fam[f].timestampValidBits > 0 && p.limits.timestampPeriod > 0;
                c->tick_ns = p.limits.timestampPeriod;
            }
            break;
        }
    }
    if (best == 99)
        return ember_backend_fail(EMBER_ERR_BACKEND_MISSING,
                                  "vulkan: no device with a compute queue (%u devices)", n);
    vkGetPhysicalDeviceMemoryProperties(c->phys, &c->mem);
    return EMBER_OK;
}

/* Whether a dispatch with these binding storage types reads or writes float16. */
static bool binds_f16(uint16_t storage) {
    for (uint32_t b = 0; b < VK_MAX_BINDINGS; b++)
        if (((storage >> (VK_ST_BITS * b)) & 3u) == VK_ST_F16) return true;
    return false;
}

/* The pipeline of a dispatch: shader module (float16 where it binds a
 * float16 tensor) with specialization constants 0, the dispatch's variant
 * (the elementwise operator; ROWS of the row shaders), and 1, the storage types of its bindings; made on first use, and counted
 * as used by the dispatch until vk_device_close(). Called with g_ctx_lock
 * held. */
static ember_status get_pipeline(vk_context *c, const vk_dispatch *d, VkPipeline *out) {
    uint8_t op = d->variant; /* elementwise: the operator; rows.glsl shaders: ROWS */
    for (uint32_t k = 0; k < c->num_pipelines; k++) {
        vk_pipeline *p = &c->pipelines[k];
        if (p->shader == d->shader && p->op == op && p->storage == d->storage) {
            p->users++;
            *out = p->pipe;
            return EMBER_OK;
        }
    }
    if (d->shader >= VK_SH_COUNT)
        return ember_backend_fail(EMBER_ERR_INVALID_STATE, "vulkan: shader %u", d->shader);
    VkShaderModule module = binds_f16(d->storage) ? c->modules_f16[d->shader]
                                                  : c->modules[d->shader];
    if (module == VK_NULL_HANDLE)
        return ember_backend_fail(EMBER_ERR_INVALID_STATE,
                                  "vulkan: shader %u has no module for storage %#x", d->shader,
                                  (unsigned)d->storage);
    uint32_t cap = atomic_load(&g_pipeline_cap);
    if (cap == 0) cap = VK_MAX_PIPELINES;
    if (c->num_pipelines >= cap) drop_unused_pipelines(c);
    if (c->num_pipelines >= cap)
        return ember_backend_fail(EMBER_ERR_NOT_SUPPORTED,
                                  "vulkan: the loaded delegates need more than %u pipelines", cap);
    const uint32_t spec[2] = {op, d->storage};
    const VkSpecializationMapEntry entries[2] = {{0, 0, sizeof(uint32_t)},
                                                 {1, sizeof(uint32_t), sizeof(uint32_t)}};
    VkSpecializationInfo si = {2, entries, sizeof spec, spec};
    VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &si;
    ci.layout = c->layout;
    VkPipeline pipe;
    VkResult r = VK_MAKE(vkCreateComputePipelines(c->device, c->cache, 1, &ci, NULL, &pipe));
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateComputePipelines");
    c->cache_dirty = true;
    vk_pipeline *p = &c->pipelines[c->num_pipelines++];
    p->shader = d->shader;
    p->op = op;
    p->storage = d->storage;
    p->users = 1;
    p->pipe = pipe;
    *out = pipe;
    return EMBER_OK;
}

static VkResult make_module(vk_context *c, const uint32_t *code, size_t size, VkShaderModule *out) {
    VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    si.codeSize = size;
    si.pCode = code;
    return VK_MAKE(vkCreateShaderModule(c->device, &si, NULL, out));
}

static ember_status create_pipelines(vk_context *c) {
    VkDescriptorSetLayoutBinding b[BINDINGS];
    for (uint32_t k = 0; k < BINDINGS; k++) {
        memset(&b[k], 0, sizeof b[k]);
        b[k].binding = k;
        b[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        b[k].descriptorCount = 1;
        b[k].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = BINDINGS;
    li.pBindings = b;
    VkResult r = VK_MAKE(vkCreateDescriptorSetLayout(c->device, &li, NULL, &c->set_layout));
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateDescriptorSetLayout");
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &c->set_layout;
    r = VK_MAKE(vkCreatePipelineLayout(c->device, &pl, NULL, &c->layout));
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreatePipelineLayout");
    for (int k = 0; k < VK_SH_COUNT; k++) {
        if (k == VK_SH_MATVEC_SG && !c->subgroups) continue; /* SPIR-V 1.3, subgroups */
        r = make_module(c, vk_shader_code[k], vk_shader_size[k], &c->modules[k]);
        if (r == VK_SUCCESS && c->f16_storage && vk_shader_code_f16[k] != NULL)
            r = make_module(c, vk_shader_code_f16[k], vk_shader_size_f16[k], &c->modules_f16[k]);
        if (r != VK_SUCCESS) return vk_fail(r, "vkCreateShaderModule");
    }
    return EMBER_OK;
}

/* Vulkan 1.1 where the loader has it (vkGetPhysicalDeviceFeatures2 and 16-bit
 * storage are core there), else 1.0. */
static uint32_t instance_version(void) {
    PFN_vkEnumerateInstanceVersion fn =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(VK_NULL_HANDLE,
                                                              "vkEnumerateInstanceVersion");
    uint32_t v = VK_API_VERSION_1_0;
    if (fn == NULL || fn(&v) != VK_SUCCESS) return VK_API_VERSION_1_0;
    return v >= VK_API_VERSION_1_1 ? VK_API_VERSION_1_1 : VK_API_VERSION_1_0;
}

/* Whether the picked device can store 16-bit floats in storage buffers. */
static bool query_f16_storage(const vk_context *c, uint32_t api) {
    if (api < VK_API_VERSION_1_1 || c->props.apiVersion < VK_API_VERSION_1_1) return false;
    VkPhysicalDevice16BitStorageFeatures f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.pNext = &f16;
    vkGetPhysicalDeviceFeatures2(c->phys, &f);
    return f16.storageBuffer16BitAccess == VK_TRUE;
}

/* Whether the picked device adds across subgroups in compute shaders, with
 * subgroups that divide a workgroup of VK_GROUP_SIZE (matvec_sg.comp). */
static bool query_subgroups(const vk_context *c, uint32_t api) {
    if (api < VK_API_VERSION_1_1 || c->props.apiVersion < VK_API_VERSION_1_1) return false;
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p.pNext = &sg;
    vkGetPhysicalDeviceProperties2(c->phys, &p);
    const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    return (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (sg.supportedOperations & need) == need && sg.subgroupSize >= 1 &&
           sg.subgroupSize <= VK_GROUP_SIZE && VK_GROUP_SIZE % sg.subgroupSize == 0;
}

static ember_status context_create(vk_context *c) {
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "ember";
    app.pEngineName = "ember";
    app.apiVersion = instance_version();
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ii.pApplicationInfo = &app;
    VkResult r = VK_MAKE(vkCreateInstance(&ii, NULL, &c->instance));
    if (r != VK_SUCCESS) {
        c->instance = VK_NULL_HANDLE;
        return ember_backend_fail(r == VK_ERROR_OUT_OF_HOST_MEMORY ? EMBER_ERR_OUT_OF_MEMORY
                                                                   : EMBER_ERR_BACKEND_MISSING,
                                  "vulkan: no Vulkan driver (vkCreateInstance: VkResult %d)", (int)r);
    }
    atomic_fetch_add(&g_instances_made, 1);
    TRY_RET(pick_device(c));
    c->f16_storage = query_f16_storage(c, app.apiVersion);
    c->subgroups = query_subgroups(c, app.apiVersion);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = c->family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    VkPhysicalDevice16BitStorageFeatures f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    f16.storageBuffer16BitAccess = VK_TRUE;
    if (c->f16_storage) di.pNext = &f16;
    r = VK_MAKE(vkCreateDevice(c->phys, &di, NULL, &c->device));
    if (r != VK_SUCCESS) {
        c->device = VK_NULL_HANDLE;
        return vk_fail(r, "vkCreateDevice");
    }
    vkGetDeviceQueue(c->device, c->family, 0, &c->queue);
    TRY_RET(create_pipelines(c));
    TRY_RET(cache_create(c));
    memcpy(g_device_name, c->props.deviceName, sizeof g_device_name);
    g_device_name[sizeof g_device_name - 1] = '\0';
    return EMBER_OK;
}

/* A reference to the context, made first where there is none. */
static ember_status context_acquire(void) {
    pthread_mutex_lock(&g_ctx_lock);
    ember_status st = EMBER_OK;
    if (g_ctx.device == VK_NULL_HANDLE) {
        st = context_create(&g_ctx);
        if (st != EMBER_OK) context_destroy(&g_ctx);
    }
    if (st == EMBER_OK) g_ctx.refs++;
    pthread_mutex_unlock(&g_ctx_lock);
    return st;
}

/* The context stays without references (see the top of this file). */
static void context_release(void) {
    pthread_mutex_lock(&g_ctx_lock);
    if (g_ctx.refs > 0) g_ctx.refs--;
    pthread_mutex_unlock(&g_ctx_lock);
}

ember_status vk_device_release(void) {
    pthread_mutex_lock(&g_ctx_lock);
    int refs = g_ctx.refs;
    if (refs == 0) context_destroy(&g_ctx);
    pthread_mutex_unlock(&g_ctx_lock);
    if (refs > 0)
        return ember_backend_fail(EMBER_ERR_INVALID_STATE,
                                  "vulkan: %d loaded delegates still use the device", refs);
    return EMBER_OK;
}

/* The test's own instance (vk_testing_hold_driver); not in the ledger. */
static VkInstance g_held;

bool vk_testing_hold_driver(void) {
    pthread_mutex_lock(&g_ctx_lock);
    if (g_held == VK_NULL_HANDLE) {
        VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        if (vkCreateInstance(&ii, NULL, &g_held) != VK_SUCCESS) g_held = VK_NULL_HANDLE;
    }
    bool held = g_held != VK_NULL_HANDLE;
    pthread_mutex_unlock(&g_ctx_lock);
    return held;
}

bool vk_device_available(void) {
    pthread_mutex_lock(&g_ctx_lock);
    int known = g_available;
    pthread_mutex_unlock(&g_ctx_lock);
    if (known < 0) {
        ember_status st = context_acquire();
        if (st == EMBER_OK) context_release();
        pthread_mutex_lock(&g_ctx_lock);
        g_available = known = st == EMBER_OK;
        pthread_mutex_unlock(&g_ctx_lock);
    }
    return known == 1;
}

const char *vk_device_name(void) {
    return vk_device_available() ? g_device_name : NULL;
}

static int g_f16_storage = -1; /* unknown */

bool vk_device_f16_storage(void) {
    pthread_mutex_lock(&g_ctx_lock);
    int known = g_f16_storage;
    pthread_mutex_unlock(&g_ctx_lock);
    if (known < 0 && vk_device_available()) {
        ember_status st = context_acquire();
        pthread_mutex_lock(&g_ctx_lock);
        if (st == EMBER_OK) g_f16_storage = known = g_ctx.f16_storage;
        pthread_mutex_unlock(&g_ctx_lock);
        if (st == EMBER_OK) context_release();
    }
    return known == 1;
}

/* EMBER_VULKAN_STORAGE=float32: every tensor in 32-bit words, as on a device
 * without 16-bit storage. */
static bool storage_forced_f32(void) {
    const char *env = getenv("EMBER_VULKAN_STORAGE");
    return env != NULL && strcmp(env, "float32") == 0;
}

ember_status vk_device_info(ember_vulkan_info *info) {
    memset(info, 0, sizeof *info);
    if (!vk_device_available())
        return ember_backend_fail(EMBER_ERR_BACKEND_MISSING, "vulkan: no Vulkan device");
    info->device = g_device_name;
    info->float16_storage = vk_device_f16_storage() && !storage_forced_f32();
    pthread_mutex_lock(&g_ctx_lock);
    info->weights_bytes = g_ctx.weights_bytes;
    info->arena_bytes = g_ctx.arena_bytes;
    info->delegates = (size_t)g_ctx.refs;
    info->pipelines = g_ctx.num_pipelines;
    info->pipeline_cache_loaded = g_ctx.cache_loaded;
    pthread_mutex_unlock(&g_ctx_lock);
    info->objects = atomic_load(&g_objects);
    info->instances_made = atomic_load(&g_instances_made);
    return EMBER_OK;
}

/* Memory for a buffer, by preference:
 *   MEM_MAPPED  host-visible and coherent, device-local where the device
 *               offers such memory (a GPU's BAR, an integrated GPU, a CPU
 *               device), else host memory;
 *   MEM_DEVICE  device-local and mapped where that memory is host-visible;
 *               else device-local, unmapped (filled by copies), and only
 *               without device-local memory, host memory. A memory type
 *               whose heap is full (VK_ERROR_OUT_OF_DEVICE_MEMORY: a 256 MiB
 *               BAR) gives way to the next one. */
enum { MEM_MAPPED = 0, MEM_DEVICE = 1 };

/* Allocates req from the first type in kinds[] (property flags each type
 * must have; bit 31 asks for a type that is not host-visible) that has
 * room. */
static VkResult allocate(const vk_context *c, const VkMemoryRequirements *req,
                         const VkMemoryPropertyFlags *kinds, int nkinds, VkDeviceMemory *mem,
                         VkMemoryPropertyFlags *got) {
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (int pass = 0; pass < nkinds; pass++) {
        VkMemoryPropertyFlags need = kinds[pass] & ~(1u << 31);
        bool unmapped = (kinds[pass] >> 31) != 0;
        for (uint32_t k = 0; k < c->mem.memoryTypeCount; k++) {
            VkMemoryPropertyFlags f = c->mem.memoryTypes[k].propertyFlags;
            if (!(req->memoryTypeBits & (1u << k)) || (f & need) != need) continue;
            if (unmapped && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) continue;
            VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
            ai.allocationSize = req->size;
            ai.memoryTypeIndex = k;
            r = VK_MAKE(vkAllocateMemory(c->device, &ai, NULL, mem));
            if (r == VK_SUCCESS) *got = f;
            if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY) return r;
        }
    }
    return r;
}

/* Makes buffer `which` of d; *mapped says whether d->map[which] is set (a
 * MEM_MAPPED buffer always is). force_unmapped (EMBER_VULKAN_MEMORY=staged)
 * leaves a MEM_DEVICE buffer unmapped even in host-visible memory, so the
 * copy paths run on devices that have only that. */
static ember_status make_buffer(struct vk_device *d, int which, size_t size, VkBufferUsageFlags use,
                                int mem, bool force_unmapped, bool *mapped) {
    const vk_context *c = &g_ctx;
    if (size == 0) size = 16;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = use;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = VK_MAKE(vkCreateBuffer(c->device, &bi, NULL, &d->buf[which]));
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->device, d->buf[which], &req);
    const VkMemoryPropertyFlags host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags mapped_kinds[2] = {host | local, host};
    const VkMemoryPropertyFlags device_kinds[4] = {host | local, local | (1u << 31), local, host};
    const VkMemoryPropertyFlags *kinds = mem == MEM_MAPPED ? mapped_kinds : device_kinds;
    int nkinds = mem == MEM_MAPPED ? 2 : 4;
    if (mem == MEM_DEVICE && force_unmapped) {
        kinds = device_kinds + 2; /* any device-local memory, left unmapped */
        nkinds = 1;
    }
    VkMemoryPropertyFlags got = 0;
    r = allocate(c, &req, kinds, nkinds, &d->mem[which], &got);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY && mem == MEM_MAPPED)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY,
                                  "vulkan: no host-visible coherent memory for %zu bytes", size);
    if (r != VK_SUCCESS) return vk_fail(r, "vkAllocateMemory");
    r = VK_CALL(vkBindBufferMemory(c->device, d->buf[which], d->mem[which], 0));
    if (r != VK_SUCCESS) return vk_fail(r, "vkBindBufferMemory");
    *mapped = (got & host) == host && !(mem == MEM_DEVICE && force_unmapped);
    if (!*mapped) return EMBER_OK;
    r = VK_CALL(vkMapMemory(c->device, d->mem[which], 0, VK_WHOLE_SIZE, 0, &d->map[which]));
    if (r != VK_SUCCESS) return vk_fail(r, "vkMapMemory");
    return EMBER_OK;
}

/* The shader variants for a delegate: EMBER_VULKAN_KERNELS where it names
 * one, else VK_KERNELS_GPU on a GPU and VK_KERNELS_SIMPLE on a CPU device. */
static uint8_t kernels_for(const vk_context *c) {
    static const struct {
        const char *name;
        uint8_t kernels;
    } names[] = {{"simple", VK_KERNELS_SIMPLE}, {"gpu", VK_KERNELS_GPU},
                 {"matvec", VK_KERNELS_MATVEC}, {"tiled", VK_KERNELS_TILED}};
    const char *env = getenv("EMBER_VULKAN_KERNELS");
    for (size_t k = 0; env != NULL && k < sizeof names / sizeof names[0]; k++)
        if (strcmp(env, names[k].name) == 0) return names[k].kernels;
    return c->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? VK_KERNELS_SIMPLE
                                                                : VK_KERNELS_GPU;
}

ember_status vk_device_open(vk_graph *g) {
    TRY_RET(context_acquire());
    g->dev = ember_platform_alloc(sizeof(struct vk_device), _Alignof(struct vk_device));
    if (g->dev == NULL) {
        context_release();
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory");
    }
    memset(g->dev, 0, sizeof *g->dev);
    size_t align = (size_t)g_ctx.props.limits.minStorageBufferOffsetAlignment;
    g->align = align < 16 ? 16 : align;
    g->max_range = (size_t)g_ctx.props.limits.maxStorageBufferRange;
    g->i8_storage = !storage_forced_f32();
    g->f16_storage = g_ctx.f16_storage && g->i8_storage;
    g->kernels = kernels_for(&g_ctx);
    const char *sg = getenv("EMBER_VULKAN_SUBGROUPS");
    g->subgroups = g_ctx.subgroups && !(sg != NULL && strcmp(sg, "off") == 0);
    return EMBER_OK;
}

/* Waits for the delegate's submitted work and resets its fence. A minute is
 * far beyond any dispatch list; a lost device reports here. Where the wait
 * fails the work stays pending: the next run and vk_device_close() wait
 * again before they touch the fence. */
static ember_status finish(const vk_context *c, struct vk_device *d) {
    VkResult r = VK_CALL(vkWaitForFences(c->device, 1, &d->fence, VK_TRUE, UINT64_C(60000000000)));
    if (r != VK_SUCCESS) return vk_fail(r, "vkWaitForFences");
    d->pending = false;
    if ((r = VK_CALL(vkResetFences(c->device, 1, &d->fence))) != VK_SUCCESS)
        return vk_fail(r, "vkResetFences");
    return EMBER_OK;
}

/* Submits the upload command buffer as recorded so far and waits for it. */
static ember_status upload_submit(struct vk_device *d) {
    const vk_context *c = &g_ctx;
    VkResult r = VK_CALL(vkEndCommandBuffer(d->upload));
    if (r != VK_SUCCESS) return vk_fail(r, "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &d->upload;
    pthread_mutex_lock(&g_queue_lock);
    r = VK_CALL(vkQueueSubmit(c->queue, 1, &si, d->fence));
    pthread_mutex_unlock(&g_queue_lock);
    if (r != VK_SUCCESS) return vk_fail(r, "vkQueueSubmit");
    d->pending = true;
    TRY_RET(finish(c, d));
    if ((r = VK_CALL(vkResetCommandBuffer(d->upload, 0))) != VK_SUCCESS)
        return vk_fail(r, "vkResetCommandBuffer");
    return EMBER_OK;
}

static ember_status upload_begin(struct vk_device *d) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult r = VK_CALL(vkBeginCommandBuffer(d->upload, &bi));
    return r == VK_SUCCESS ? EMBER_OK : vk_fail(r, "vkBeginCommandBuffer");
}

/* Transfers written by the upload reach every later command. */
static void upload_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

/* Copies the staged bytes into the weights buffer (at d->staged_at). */
static ember_status upload_flush(struct vk_device *d) {
    if (d->staged == 0) return EMBER_OK;
    TRY_RET(upload_begin(d));
    VkBufferCopy region = {0, d->staged_at, d->staged};
    vkCmdCopyBuffer(d->upload, d->buf[BUF_STAGING], d->buf[BUF_WEIGHTS], 1, &region);
    upload_barrier(d->upload);
    TRY_RET(upload_submit(d));
    d->staged = 0;
    return EMBER_OK;
}

/* Where constant v's bytes go: the mapped weights buffer, or the staging
 * buffer, which mirrors the weights from d->staged_at (flushed first where
 * v does not fit after what it holds). */
static ember_status weight_dst(vk_graph *g, const vk_value *v, size_t bytes, uint8_t **dst) {
    struct vk_device *d = g->dev;
    if (d->map[BUF_WEIGHTS] != NULL) {
        *dst = (uint8_t *)d->map[BUF_WEIGHTS] + v->offset;
        return EMBER_OK;
    }
    size_t end;
    if (ember_add_overflow(v->offset, bytes, &end))
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: weights overflow");
    size_t cap = d->staging_bytes;
    if (d->staged > 0 && (v->offset < d->staged_at || end - d->staged_at > cap))
        TRY_RET(upload_flush(d));
    if (d->staged == 0) d->staged_at = v->offset;
    if (end - d->staged_at > cap)
        return ember_backend_fail(EMBER_ERR_INVALID_STATE, "vulkan: constant of %zu bytes is "
                                  "larger than the staging buffer (%zu)", bytes, cap);
    *dst = (uint8_t *)d->map[BUF_STAGING] + (v->offset - d->staged_at);
    d->staged = end - d->staged_at;
    return EMBER_OK;
}

ember_status vk_device_upload_weight(vk_graph *g, uint32_t vi, const void *bytes, size_t size) {
    const vk_value *v = &g->values[vi];
    uint8_t *dst = NULL;
    size_t n = v->bound_numel, want;
    size_t elem = v->dtype == VK_DT_INT64                                  ? 8
                  : v->dtype == VK_DT_FLOAT32 || v->dtype == VK_DT_INT32 ? 4
                  : v->dtype == VK_DT_FLOAT16                            ? 2
                                                                         : 1; /* bool, 8-bit */
    if (ember_mul_overflow(n, elem, &want) || size < want)
        return ember_backend_bad_payload("vulkan",
                                         "constant of value %u has %zu bytes, its %zu %s "
                                         "elements need %zu",
                                         vi, size, n, vk_dtype_name(v->dtype), want);
    size_t held;
    if (!vk_storage_bytes(v->storage, n, &held))
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: value %u overflows", vi);
    TRY_RET(weight_dst(g, v, held, &dst));
    const uint8_t *src = bytes;
    if (v->storage != VK_ST_F32) { /* float16 halves, 8-bit bytes: as they are */
        memcpy(dst, src, want);
        return EMBER_OK;
    }
    for (size_t i = 0; i < n; i++) {
        float x;
        switch (v->dtype) {
        case VK_DT_FLOAT32: memcpy(&x, src + 4 * i, 4); break;
        case VK_DT_FLOAT16: {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            x = ember_half_to_float(h);
            break;
        }
        case VK_DT_INT32: {
            int32_t k;
            memcpy(&k, src + 4 * i, 4);
            x = (float)k;
            break;
        }
        case VK_DT_INT64: {
            int64_t k;
            memcpy(&k, src + 8 * i, 8);
            x = (float)k;
            break;
        }
        case VK_DT_INT8: x = (float)(int8_t)src[i]; break;
        case VK_DT_UINT8: x = (float)src[i]; break;
        default: x = src[i] != 0; break;
        }
        memcpy(dst + 4 * i, &x, 4);
    }
    return EMBER_OK;
}

ember_status vk_device_upload_finish(vk_graph *g) {
    struct vk_device *d = g->dev;
    TRY_RET(upload_flush(d));
    const VkDevice dev = g_ctx.device;
    if (d->map[BUF_STAGING]) vkUnmapMemory(dev, d->mem[BUF_STAGING]);
    d->map[BUF_STAGING] = NULL;
    if (d->buf[BUF_STAGING]) {
        vkDestroyBuffer(dev, d->buf[BUF_STAGING], NULL);
        uncount();
        d->buf[BUF_STAGING] = VK_NULL_HANDLE;
    }
    if (d->mem[BUF_STAGING]) {
        vkFreeMemory(dev, d->mem[BUF_STAGING], NULL);
        uncount();
        d->mem[BUF_STAGING] = VK_NULL_HANDLE;
    }
    return EMBER_OK;
}

/* Where the arena is not mapped: copies of the inputs from the I/O buffer
 * into the arena (before = true, at the start of the command buffer) or of
 * the outputs back (at its end), with the barriers that order them against
 * the dispatches and the host. */
static void record_io(vk_graph *g, VkCommandBuffer cmd, bool before) {
    struct vk_device *d = g->dev;
    if (g->io == NULL) return;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    if (!before) {
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    }
    uint32_t count = before ? g->num_inputs : g->num_outputs;
    for (uint32_t k = 0; k < count; k++) {
        const vk_value *v = &g->values[before ? g->inputs[k] : g->outputs[k]];
        size_t bytes = 0;
        if (v->kind != VK_V_TENSOR) continue;
        (void)vk_storage_bytes(v->storage, v->bound_numel, &bytes); /* checked at plan */
        VkBufferCopy region = {before ? v->io_offset : v->offset,
                               before ? v->offset : v->io_offset, bytes};
        vkCmdCopyBuffer(cmd, d->buf[before ? BUF_IO : BUF_ARENA],
                        d->buf[before ? BUF_ARENA : BUF_IO], 1, &region);
    }
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = before ? VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT
                              : VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         before ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

/* Records every dispatch into cmd, each followed by a barrier; with a
 * query pool, timestamp k is written before dispatch k and the last one
 * after them all. */
static ember_status record(vk_graph *g, VkCommandBuffer cmd, VkQueryPool stamps) {
    const vk_context *c = &g_ctx;
    struct vk_device *d = g->dev;
    VkResult r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if ((r = VK_CALL(vkBeginCommandBuffer(cmd, &bi))) != VK_SUCCESS)
        return vk_fail(r, "vkBeginCommandBuffer");
    if (stamps != VK_NULL_HANDLE) {
        vkCmdResetQueryPool(cmd, stamps, 0, g->num_dispatches + 1);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, stamps, 0);
    }
    record_io(g, cmd, true);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        const vk_dispatch *dp = &g->dispatches[k];
        VkDescriptorSet set = (VkDescriptorSet)dp->set;
        VkPipeline pipe = (VkPipeline)dp->pipe;
        if (!dp->skip) {
            vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
            vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->layout, 0, 1, &set,
                                    0, NULL);
            vkCmdDispatchIndirect(cmd, d->buf[BUF_CONTROL], dp->indirect_at);
            if (!dp->no_barrier)
                vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                                     NULL);
        }
        if (stamps != VK_NULL_HANDLE)
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, stamps, k + 1);
    }
    record_io(g, cmd, false);
    VkMemoryBarrier hb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    hb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    hb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &hb, 0, NULL, 0, NULL);
    if ((r = VK_CALL(vkEndCommandBuffer(cmd))) != VK_SUCCESS)
        return vk_fail(r, "vkEndCommandBuffer");
    return EMBER_OK;
}

/* EMBER_VULKAN_MEMORY=staged: the arena and the weights in device-local
 * memory left unmapped (inputs and outputs through the I/O buffer, weights
 * through the staging buffer), as on a GPU whose device-local memory the
 * host cannot map, even where it could. */
static bool memory_forced_staged(void) {
    const char *env = getenv("EMBER_VULKAN_MEMORY");
    return env != NULL && strcmp(env, "staged") == 0;
}

/* The I/O buffer's layout (an unmapped arena): each input and output
 * tensor at its own offset, in its storage type at its bound. */
static ember_status io_layout(vk_graph *g, size_t *total) {
    size_t at = 0;
    for (uint32_t vi = 0; vi < g->num_values; vi++) g->values[vi].io_offset = SIZE_MAX;
    for (uint32_t k = 0; k < g->num_inputs + g->num_outputs; k++) {
        vk_value *v = &g->values[k < g->num_inputs ? g->inputs[k] : g->outputs[k - g->num_inputs]];
        size_t bytes;
        if (v->kind != VK_V_TENSOR || v->io_offset != SIZE_MAX) continue;
        if (!vk_storage_bytes(v->storage, v->bound_numel, &bytes))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: I/O overflows");
        v->io_offset = at;
        if (ember_add_overflow(at, bytes, &at))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: I/O overflows");
    }
    *total = at;
    return EMBER_OK;
}

/* Buffers for what is not mapped: the I/O buffer, the staging buffer for
 * the weights (its size: VK_STAGING_BYTES, or the largest constant, at
 * most all of them) and the upload command buffer, which zeroes the arena
 * first. Called once the command pool and the fence exist. */
static ember_status make_staging(vk_graph *g) {
    const vk_context *c = &g_ctx;
    struct vk_device *d = g->dev;
    const VkBufferUsageFlags both = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bool mapped;
    if (d->map[BUF_ARENA] == NULL) {
        size_t io = 0;
        TRY_RET(io_layout(g, &io));
        TRY_RET(make_buffer(d, BUF_IO, io, both, MEM_MAPPED, false, &mapped));
        memset(d->map[BUF_IO], 0, io);
        g->io = d->map[BUF_IO];
    }
    if (d->map[BUF_WEIGHTS] == NULL) {
        size_t most = VK_STAGING_BYTES;
        for (uint32_t vi = 0; vi < g->num_values; vi++) {
            const vk_value *v = &g->values[vi];
            size_t bytes;
            if (v->kind == VK_V_TENSOR && v->is_const &&
                vk_storage_bytes(v->storage, v->bound_numel, &bytes) && bytes > most)
                most = bytes;
        }
        d->staging_bytes = most < g->weights_bytes ? most : g->weights_bytes;
        TRY_RET(make_buffer(d, BUF_STAGING, d->staging_bytes, both, MEM_MAPPED, false, &mapped));
    }
    if (g->io == NULL && d->map[BUF_WEIGHTS] != NULL) return EMBER_OK;
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ca.commandPool = d->cmd_pool;
    ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ca.commandBufferCount = 1;
    VkResult r = VK_CALL(vkAllocateCommandBuffers(c->device, &ca, &d->upload));
    if (r != VK_SUCCESS) return vk_fail(r, "vkAllocateCommandBuffers");
    if (g->io == NULL) return EMBER_OK;
    TRY_RET(upload_begin(d));
    vkCmdFillBuffer(d->upload, d->buf[BUF_ARENA], 0, VK_WHOLE_SIZE, 0);
    upload_barrier(d->upload);
    return upload_submit(d);
}

ember_status vk_device_build(vk_graph *g) {
    const vk_context *c = &g_ctx;
    struct vk_device *d = g->dev;
    const VkBufferUsageFlags storage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    const VkBufferUsageFlags copied = storage | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const bool staged = memory_forced_staged();
    bool mapped;
    TRY_RET(make_buffer(d, BUF_ARENA, g->arena_bytes, copied, MEM_DEVICE, staged, &mapped));
    TRY_RET(make_buffer(d, BUF_WEIGHTS, g->weights_bytes, copied, MEM_DEVICE, staged, &mapped));
    TRY_RET(make_buffer(d, BUF_CONTROL, g->control_bytes,
                        storage | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, MEM_MAPPED, false, &mapped));
    memset(d->map[BUF_CONTROL], 0, g->control_bytes);
    if (d->map[BUF_ARENA] != NULL) memset(d->map[BUF_ARENA], 0, g->arena_bytes);
    g->control = d->map[BUF_CONTROL];
    g->arena = d->map[BUF_ARENA];
    pthread_mutex_lock(&g_ctx_lock);
    d->weights_bytes = g->weights_bytes;
    d->arena_bytes = g->arena_bytes;
    g_ctx.weights_bytes += d->weights_bytes;
    g_ctx.arena_bytes += d->arena_bytes;
    pthread_mutex_unlock(&g_ctx_lock);

    VkResult r;
    uint32_t sets = g->num_dispatches ? g->num_dispatches : 1;
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * BINDINGS};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = sets;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    if ((r = VK_MAKE(vkCreateDescriptorPool(c->device, &pi, NULL, &d->pool))) != VK_SUCCESS)
        return vk_fail(r, "vkCreateDescriptorPool");
    const VkDeviceSize max_range = c->props.limits.maxStorageBufferRange;
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        vk_dispatch *dp = &g->dispatches[k];
        if (dp->skip) continue;
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        VkDescriptorSet set;
        ai.descriptorPool = d->pool;
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &c->set_layout;
        if ((r = VK_CALL(vkAllocateDescriptorSets(c->device, &ai, &set))) != VK_SUCCESS)
            return vk_fail(r, "vkAllocateDescriptorSets");
        dp->set = (void *)set;
        VkDescriptorBufferInfo info[BINDINGS];
        VkWriteDescriptorSet w[BINDINGS];
        for (uint32_t b = 0; b < BINDINGS; b++) {
            if (b < VK_MAX_BINDINGS && dp->bind[b] != VK_NONE) {
                const vk_value *v = &g->values[dp->bind[b]];
                bool weight = v->is_const ||
                              (v->alias_of != VK_NONE && g->values[v->alias_of].is_const);
                info[b].buffer = d->buf[weight ? BUF_WEIGHTS : BUF_ARENA];
                size_t bytes = 0;
                (void)vk_storage_bytes(v->storage, v->bound_numel, &bytes); /* checked at plan */
                info[b].offset = v->offset;
                info[b].range = bytes;
                if (info[b].range > max_range)
                    return ember_backend_fail(EMBER_ERR_NOT_SUPPORTED,
                                              "vulkan: value %u needs %llu bytes, the device binds "
                                              "at most %llu",
                                              dp->bind[b], (unsigned long long)info[b].range,
                                              (unsigned long long)max_range);
            } else if (b < VK_MAX_BINDINGS) { /* unused: the arena's dummy bytes */
                info[b].buffer = d->buf[BUF_ARENA];
                info[b].offset = 0;
                info[b].range = 16;
            } else {
                info[b].buffer = d->buf[BUF_CONTROL];
                info[b].offset = b == VK_MAX_BINDINGS ? dp->params_at : 0;
                info[b].range = b == VK_MAX_BINDINGS ? VK_PARAM_WORDS * 4 : 16;
            }
            memset(&w[b], 0, sizeof w[b]);
            w[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
            w[b].dstSet = set;
            w[b].dstBinding = b;
            w[b].descriptorCount = 1;
            w[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w[b].pBufferInfo = &info[b];
        }
        vkUpdateDescriptorSets(c->device, BINDINGS, w, 0, NULL);
    }

    VkCommandPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT; /* the upload buffer */
    ci.queueFamilyIndex = c->family;
    if ((r = VK_MAKE(vkCreateCommandPool(c->device, &ci, NULL, &d->cmd_pool))) != VK_SUCCESS)
        return vk_fail(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ca.commandPool = d->cmd_pool;
    ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ca.commandBufferCount = 1;
    if ((r = VK_CALL(vkAllocateCommandBuffers(c->device, &ca, &d->cmd))) != VK_SUCCESS)
        return vk_fail(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = VK_MAKE(vkCreateFence(c->device, &fi, NULL, &d->fence))) != VK_SUCCESS)
        return vk_fail(r, "vkCreateFence");
    TRY_RET(make_staging(g));

    /* the pipelines this graph needs */
    ember_status st = EMBER_OK;
    pthread_mutex_lock(&g_ctx_lock);
    for (uint32_t k = 0; k < g->num_dispatches && st == EMBER_OK; k++) {
        VkPipeline pipe = VK_NULL_HANDLE;
        if (g->dispatches[k].skip) continue;
        st = get_pipeline(&g_ctx, &g->dispatches[k], &pipe);
        g->dispatches[k].pipe = (void *)pipe;
    }
    if (st == EMBER_OK) cache_save(&g_ctx); /* where this init compiled pipelines */
    pthread_mutex_unlock(&g_ctx_lock);
    TRY_RET(st);

    /* record once: every dispatch, each followed by a barrier; where the
     * queue has timestamps, a second buffer for traced runs stamps the
     * start and the end of every dispatch */
    TRY_RET(record(g, d->cmd, VK_NULL_HANDLE));
    if (!c->timestamps) return EMBER_OK;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = g->num_dispatches + 1;
    if ((r = VK_MAKE(vkCreateQueryPool(c->device, &qi, NULL, &d->stamps))) != VK_SUCCESS)
        return vk_fail(r, "vkCreateQueryPool");
    ca.commandBufferCount = 1;
    if ((r = VK_CALL(vkAllocateCommandBuffers(c->device, &ca, &d->cmd_timed))) != VK_SUCCESS)
        return vk_fail(r, "vkAllocateCommandBuffers");
    return record(g, d->cmd_timed, d->stamps);
}

bool vk_device_timed(const vk_graph *g) { return g->dev->cmd_timed != VK_NULL_HANDLE; }

ember_status vk_device_run(vk_graph *g, bool timed) {
    const vk_context *c = &g_ctx;
    struct vk_device *d = g->dev;
    timed = timed && d->cmd_timed != VK_NULL_HANDLE;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = timed ? &d->cmd_timed : &d->cmd;
    if (d->pending) TRY_RET(finish(c, d));
    /* traced runs: the host's side of the run, from the submission (the
     * queue's lock included) to the fence wait's return */
    if (timed) g->submit_ns = ember_ticks_ns();
    pthread_mutex_lock(&g_queue_lock);
    VkResult r = VK_CALL(vkQueueSubmit(c->queue, 1, &si, d->fence));
    pthread_mutex_unlock(&g_queue_lock);
    if (r != VK_SUCCESS) return vk_fail(r, "vkQueueSubmit");
    d->pending = true;
    TRY_RET(finish(c, d));
    if (!timed) return EMBER_OK;
    g->waited_ns = ember_ticks_ns();
    uint32_t n = g->num_dispatches + 1;
    r = VK_CALL(vkGetQueryPoolResults(c->device, d->stamps, 0, n, sizeof(uint64_t) * n,
                                      g->stamps, sizeof(uint64_t),
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    if (r != VK_SUCCESS) return vk_fail(r, "vkGetQueryPoolResults");
    /* ticks -> nanoseconds since the first stamp */
    uint64_t first = g->stamps[0];
    for (uint32_t k = 0; k < n; k++)
        g->stamps[k] = g->stamps[k] >= first
                           ? (uint64_t)((double)(g->stamps[k] - first) * c->tick_ns)
                           : 0;
    return EMBER_OK;
}

void vk_device_close(vk_graph *g) {
    struct vk_device *d = g->dev;
    if (d == NULL) return;
    /* the context outlives its delegates (vk_device_release() refuses while
     * one is loaded), so its device is there */
    VkDevice dev = g_ctx.device;
    /* work a failed wait left on the queue finishes before its objects go */
    if (d->pending) (void)vkWaitForFences(dev, 1, &d->fence, VK_TRUE, UINT64_C(60000000000));
    if (d->fence) {
        vkDestroyFence(dev, d->fence, NULL);
        uncount();
    }
    if (d->stamps) {
        vkDestroyQueryPool(dev, d->stamps, NULL);
        uncount();
    }
    if (d->cmd_pool) { /* and its command buffers */
        vkDestroyCommandPool(dev, d->cmd_pool, NULL);
        uncount();
    }
    if (d->pool) { /* and its descriptor sets */
        vkDestroyDescriptorPool(dev, d->pool, NULL);
        uncount();
    }
    for (int k = 0; k < BUF_COUNT; k++) {
        if (d->map[k]) vkUnmapMemory(dev, d->mem[k]);
        if (d->buf[k]) {
            vkDestroyBuffer(dev, d->buf[k], NULL);
            uncount();
        }
        if (d->mem[k]) {
            vkFreeMemory(dev, d->mem[k], NULL);
            uncount();
        }
    }
    pthread_mutex_lock(&g_ctx_lock);
    g_ctx.weights_bytes -= d->weights_bytes;
    g_ctx.arena_bytes -= d->arena_bytes;
    /* the pipelines its dispatches got (those before a failed one) */
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        VkPipeline pipe = (VkPipeline)g->dispatches[k].pipe;
        for (uint32_t j = 0; pipe != VK_NULL_HANDLE && j < g_ctx.num_pipelines; j++)
            if (g_ctx.pipelines[j].pipe == pipe && g_ctx.pipelines[j].users > 0) {
                g_ctx.pipelines[j].users--;
                break;
            }
        g->dispatches[k].pipe = NULL;
    }
    pthread_mutex_unlock(&g_ctx_lock);
    ember_platform_free(d);
    g->dev = NULL;
    context_release();
}
