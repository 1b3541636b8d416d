#version 450
// Softmax (or log-softmax) along one dim of a contiguous tensor viewed as
// [outer, dim, inner]: one invocation per (outer, inner) line, or (ROWS, a
// GPU) one workgroup per line, its invocations striding the line.
//   u[0] outer, u[1] dim, u[2] inner, u[3] log
#include "common.glsl"
#include "rows.glsl"

void main() {
    uint dim = u[1], inner = u[2];
    uint i = ROWS != 0u ? row_group() : invocation();
    if (i >= u[0] * inner) return; // with ROWS, the whole workgroup
    uint base = (i / inner) * dim * inner + i % inner;
    uint first = ROWS != 0u ? gl_LocalInvocationID.x : 0u, step = ROWS != 0u ? 64u : 1u;
    float mx = -1.0 / 0.0;
    for (uint k = first; k < dim; k += step) mx = max(mx, ld1(base + k * inner));
    if (ROWS != 0u) mx = row_max(mx);
    float sum = 0.0;
    for (uint k = first; k < dim; k += step) sum += exp(ld1(base + k * inner) - mx);
    if (ROWS != 0u) sum = row_sum(sum);
    if (u[3] != 0u) {
        float ls = log(sum);
        for (uint k = first; k < dim; k += step)
            st0(base + k * inner, ld1(base + k * inner) - mx - ls);
    } else {
        float inv = 1.0 / sum;
        for (uint k = first; k < dim; k += step)
            st0(base + k * inner, exp(ld1(base + k * inner) - mx) * inv);
    }
}
