/*
 * VulkanBackend, compiled out (EMBER_VULKAN=OFF, or no Vulkan headers,
 * loader or glslc at build time): the backend is registered so that a
 * program naming it fails to load with a clean error instead of an unknown
 * backend id.
 */
#include <stddef.h>
#include <string.h>

#include "ember/backend.h"
#include "vk_testing.h"

static bool vk_available(void) { return false; }

static ember_status vk_init(const ember_backend_init_ctx *ctx, const void *payload,
                            size_t payload_size, const ember_compile_spec *specs, size_t num_specs,
                            void **handle) {
    (void)ctx, (void)payload, (void)payload_size, (void)specs, (void)num_specs, (void)handle;
    return ember_backend_fail(EMBER_ERR_BACKEND_MISSING,
                              "vulkan: this build of ember has no Vulkan support");
}

static ember_status vk_execute(void *handle, ember_value **args, size_t nargs) {
    (void)handle, (void)args, (void)nargs;
    return EMBER_ERR_BACKEND_MISSING;
}

static const ember_backend g_vulkan = {
    sizeof(ember_backend), "VulkanBackend", vk_available, vk_init, vk_execute, NULL,
};

ember_status ember_vulkan_backend_register(void) { return ember_backend_register(&g_vulkan); }

const char *ember_vulkan_device_name(void) { return NULL; }

ember_status ember_vulkan_info_get(ember_vulkan_info *info) {
    memset(info, 0, sizeof *info);
    return ember_backend_fail(EMBER_ERR_BACKEND_MISSING,
                              "vulkan: this build of ember has no Vulkan support");
}

ember_status ember_vulkan_device_release(void) { return EMBER_OK; }

ember_status ember_vulkan_set_pipeline_cache_file(const char *path) {
    (void)path;
    return EMBER_OK;
}

uint32_t vk_testing_calls(void) { return 0; }

void vk_testing_fail_call(uint32_t n) { (void)n; }

void vk_testing_pipeline_cap(uint32_t n) { (void)n; }

bool vk_testing_hold_driver(void) { return false; }

uint32_t vk_testing_cache_save_failures(void) { return 0; }
