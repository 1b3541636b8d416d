// Bindings shared by every shader: six tensors, the dispatch's parameter
// block and the delegate's status word.
//
// Storage. A tensor is held on the device in one of four storage types
// (vk_graph.h): float32 words (float tensors, and integer and boolean tensors
// as exact float values), float16 halves (float16 tensors, where the device
// has 16-bit storage), int8 bytes packed four to a 32-bit word (int8
// weights; read only) or uint8 bytes packed the same way (the byte pairs of
// 4-bit weights; read only). The specialization constant STORAGE
// (constant_id 1) gives each binding's type, two bits per binding (binding k
// at bits 2k): 0 float32, 1 float16, 2 int8, 3 uint8. A shader reads tensor k with ldK(i) and
// writes tensors 0, 4 and 5 with stK(i, x), always in float32 registers;
// the branches on STORAGE fold away when the pipeline is made. Shaders
// compiled with -DSTORAGE_F16 (the module used where a dispatch binds a
// float16 tensor) declare the float16 views; the others never see float16.
//
// Converting a shader written against the float arrays t0..t5: replace each
// read tK[i] by ldK(i) and each write tK[i] = x by stK(i, x), then list the
// shader in EMBER_VULKAN_STORAGE_SHADERS (cmake/EmberVulkan.cmake). A shader
// not listed there still compiles and runs: the tensors it binds are held as
// float32 words.
#extension GL_GOOGLE_include_directive : enable
#ifdef STORAGE_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
layout(local_size_x = 64) in;
layout(constant_id = 1) const uint STORAGE = 0u;
layout(std430, binding = 0) buffer T0 { float t0[]; };
layout(std430, binding = 1) readonly buffer T1 { float t1[]; };
layout(std430, binding = 2) readonly buffer T2 { float t2[]; };
layout(std430, binding = 3) readonly buffer T3 { float t3[]; };
layout(std430, binding = 4) buffer T4 { float t4[]; };
layout(std430, binding = 5) buffer T5 { float t5[]; };
layout(std430, binding = 6) restrict readonly buffer P { uint u[]; };
layout(std430, binding = 7) buffer S { uint status[]; };

// The same bindings as 32-bit words (8-bit weights) and float16 halves.
layout(std430, binding = 1) readonly buffer Q1 { uint q1[]; };
layout(std430, binding = 2) readonly buffer Q2 { uint q2[]; };
layout(std430, binding = 3) readonly buffer Q3 { uint q3[]; };
#ifdef STORAGE_F16
layout(std430, binding = 0) buffer H0 { float16_t h0[]; };
layout(std430, binding = 1) readonly buffer H1 { float16_t h1[]; };
layout(std430, binding = 2) readonly buffer H2 { float16_t h2[]; };
layout(std430, binding = 3) readonly buffer H3 { float16_t h3[]; };
layout(std430, binding = 4) buffer H4 { float16_t h4[]; };
layout(std430, binding = 5) buffer H5 { float16_t h5[]; };
#define HALF_LD(h, k, i) if (((STORAGE >> (2u * k)) & 3u) == 1u) return float(h[i]);
#define HALF_ST(h, k, i, x) if (((STORAGE >> (2u * k)) & 3u) == 1u) { h[i] = float16_t(x); return; }
#else
#define HALF_LD(h, k, i)
#define HALF_ST(h, k, i, x)
#endif

// Element i of an int8 tensor packed four to a word (little-endian bytes).
#define INT8_LD(q, k, i) \
    if (((STORAGE >> (2u * k)) & 3u) == 2u) return float(int(q[i >> 2u] << (24u - 8u * (i & 3u))) >> 24);

// Element i of a uint8 tensor packed four to a word.
#define UINT8_LD(q, k, i) \
    if (((STORAGE >> (2u * k)) & 3u) == 3u) return float((q[i >> 2u] >> (8u * (i & 3u))) & 255u);

float ld0(uint i) { HALF_LD(h0, 0u, i) return t0[i]; }
float ld1(uint i) { HALF_LD(h1, 1u, i) INT8_LD(q1, 1u, i) UINT8_LD(q1, 1u, i) return t1[i]; }
float ld2(uint i) { HALF_LD(h2, 2u, i) INT8_LD(q2, 2u, i) UINT8_LD(q2, 2u, i) return t2[i]; }
float ld3(uint i) { HALF_LD(h3, 3u, i) INT8_LD(q3, 3u, i) UINT8_LD(q3, 3u, i) return t3[i]; }
float ld4(uint i) { HALF_LD(h4, 4u, i) return t4[i]; }
float ld5(uint i) { HALF_LD(h5, 5u, i) return t5[i]; }
void st0(uint i, float x) { HALF_ST(h0, 0u, i, x) t0[i] = x; }
void st4(uint i, float x) { HALF_ST(h4, 4u, i, x) t4[i] = x; }
void st5(uint i, float x) { HALF_ST(h5, 5u, i, x) t5[i] = x; }

// The invocation's linear index: workgroups are laid out over x, then y.
uint invocation() {
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
}
float pf(uint k) { return uintBitsToFloat(u[k]); }
