#version 450
// Softmax (or log-softmax) along one dim of a contiguous tensor viewed as
// [outer, dim, inner]; one invocation per (outer, inner) line.
//   u[0] outer, u[1] dim, u[2] inner, u[3] log
#include "common.glsl"

void main() {
    uint i = invocation();
    uint dim = u[1], inner = u[2];
    if (i >= u[0] * inner) return;
    uint base = (i / inner) * dim * inner + i % inner;
    float mx = -1.0 / 0.0;
    for (uint k = 0u; k < dim; k++) mx = max(mx, ld1(base + k * inner));
    float sum = 0.0;
    for (uint k = 0u; k < dim; k++) sum += exp(ld1(base + k * inner) - mx);
    if (u[3] != 0u) {
        float ls = log(sum);
        for (uint k = 0u; k < dim; k++) st0(base + k * inner, ld1(base + k * inner) - mx - ls);
    } else {
        float inv = 1.0 / sum;
        for (uint k = 0u; k < dim; k++) st0(base + k * inner, exp(ld1(base + k * inner) - mx) * inv);
    }
}
