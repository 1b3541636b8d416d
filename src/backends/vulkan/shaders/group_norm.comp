#version 450
// Group norm over NCHW: each (n, group) normalizes its C/G channels of HxW
// elements together, then every channel takes its weight and bias; one
// invocation per (n, group), which also writes the group's mean and rstd.
//   u[0] N * G, u[1] elements per channel (HxW), u[2] channels per group,
//   u[3] groups, u[4] eps, u[5] has weight, u[6] has bias
// bindings: 0 out, 1 in, 2 weight [C], 3 bias [C], 4 mean [N, G], 5 rstd [N, G]
#include "common.glsl"

void main() {
    uint ng = invocation();
    if (ng >= u[0]) return;
    uint hw = u[1], cg = u[2];
    uint count = hw * cg, base = ng * count, c0 = (ng % u[3]) * cg;
    float mean = 0.0;
    for (uint k = 0u; k < count; k++) mean += ld1(base + k);
    mean /= float(max(count, 1u));
    float var = 0.0;
    for (uint k = 0u; k < count; k++) {
        float d = ld1(base + k) - mean;
        var += d * d;
    }
    float rstd = inversesqrt(var / float(max(count, 1u)) + pf(4u));
    for (uint c = 0u; c < cg; c++) {
        float w = u[5] != 0u ? ld2(c0 + c) : 1.0;
        float b = u[6] != 0u ? ld3(c0 + c) : 0.0;
        for (uint k = 0u; k < hw; k++) {
            uint at = base + c * hw + k;
            st0(at, (ld1(at) - mean) * rstd * w + b);
        }
    }
    st4(ng, mean);
    st5(ng, rstd);
}
