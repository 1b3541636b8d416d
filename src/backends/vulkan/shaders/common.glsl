// Bindings shared by every shader: six tensors (float32 elements), the
// dispatch's parameter block and the delegate's status word.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer T0 { float t0[]; };
layout(std430, binding = 1) readonly buffer T1 { float t1[]; };
layout(std430, binding = 2) readonly buffer T2 { float t2[]; };
layout(std430, binding = 3) readonly buffer T3 { float t3[]; };
layout(std430, binding = 4) buffer T4 { float t4[]; };
layout(std430, binding = 5) buffer T5 { float t5[]; };
layout(std430, binding = 6) restrict readonly buffer P { uint u[]; };
layout(std430, binding = 7) buffer S { uint status[]; };

// The invocation's linear index: workgroups are laid out over x, then y.
uint invocation() {
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
}
float pf(uint k) { return uintBitsToFloat(u[k]); }
