#version 450
// matvec.comp with its partial sums added by subgroup operations (a GPU's
// subgroups of 8 to 64 invocations), then across subgroups in shared
// memory; chosen where the device has subgroup arithmetic in compute
// shaders and subgroups that divide the workgroup.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define SUBGROUPS
#include "common.glsl"
#include "products.glsl"
#include "matvec.glsl"
