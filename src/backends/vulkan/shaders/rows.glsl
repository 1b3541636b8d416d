// Sums and maxima over a workgroup, for shaders that give a row (or a
// line, or a head) to each workgroup: its 64 invocations stride the row and
// combine their partial results here, in shared memory (a tree of six
// steps). Every invocation of the workgroup must call them, in the same
// order; all of them get the result.
shared float row_part[64];

float row_sum(float x) {
    uint t = gl_LocalInvocationID.x;
    row_part[t] = x;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1u) {
        if (t < s) row_part[t] += row_part[t + s];
        barrier();
    }
    float r = row_part[0];
    barrier();
    return r;
}

float row_max(float x) {
    uint t = gl_LocalInvocationID.x;
    row_part[t] = x;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1u) {
        if (t < s) row_part[t] = max(row_part[t], row_part[t + s]);
        barrier();
    }
    float r = row_part[0];
    barrier();
    return r;
}

// The workgroup's linear index: workgroups are laid out over x, then y.
uint row_group() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// Specialization constant 0: 1 where the dispatch gives a workgroup to each
// row (VK_KERNELS_GPU), 0 where each invocation takes a row.
layout(constant_id = 0) const uint ROWS = 0u;
