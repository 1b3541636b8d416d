/*
 * vk_testing.h — test hooks of VulkanBackend (not part of the public API).
 *
 * They let tests/c/test_vulkan.c drive the failure paths of a delegate's
 * init one Vulkan call at a time and check that each leaves no Vulkan
 * object behind (ember_vulkan_info.objects). In builds without Vulkan they
 * do nothing.
 */
#ifndef EMBER_BACKENDS_VULKAN_VK_TESTING_H
#define EMBER_BACKENDS_VULKAN_VK_TESTING_H

#include <stdbool.h>
#include <stdint.h>

/* Fallible Vulkan calls VulkanBackend has made (or failed on purpose) since
 * the process started: every call that returns a VkResult. */
uint32_t vk_testing_calls(void);

/* Makes the n-th fallible Vulkan call from now fail with
 * VK_ERROR_OUT_OF_HOST_MEMORY instead of being made; 0 disarms. */
void vk_testing_fail_call(uint32_t n);

/* Caps the pipelines the context caches at n (0: the built-in cap), so a
 * test can fill the cache with two small programs. */
void vk_testing_pipeline_cap(uint32_t n);

/* Makes a bare instance of the test's own, kept to the end of the process,
 * so the Vulkan loader keeps the driver loaded while the test lets
 * VulkanBackend's context go and come back (some drivers keep per-load state
 * that no unload gives back, such as Mesa's CPU topology on AMD processors).
 * Returns whether the instance exists. */
bool vk_testing_hold_driver(void);

/* Pipeline cache files the context failed to write since the process
 * started (a failed Vulkan call or file operation; a failure is logged and
 * fails no load), so a test can tell a save that a failed call cut short
 * from a load that should have failed. */
uint32_t vk_testing_cache_save_failures(void);

#endif /* EMBER_BACKENDS_VULKAN_VK_TESTING_H */
