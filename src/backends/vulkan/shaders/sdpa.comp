#version 450
// Attention over a KV cache: query s of a call at start position `start`
// attends causally to cache positions [0, start + s]; one invocation per
// (batch, query, head), two passes over the keys (max, then weighted sum).
//   u[0] B, u[1] S, u[2] H, u[3] D (<= 128), u[4] L (cache length), u[5] start, u[6] scale
// bindings: 0 out [B, S, H, D], 1 q [B, S, H, D], 2 k cache [B, L, H, D], 3 v cache
#include "common.glsl"

void main() {
    uint i = invocation();
    uint S = u[1], H = u[2], D = u[3], L = u[4], start = u[5];
    if (i >= u[0] * S * H) return;
    uint h = i % H, s = (i / H) % S, b = i / (H * S);
    float scale = pf(6u);
    uint qb = ((b * S + s) * H + h) * D;
    uint n = min(start + s + 1u, L);
    float mx = -1.0 / 0.0;
    for (uint j = 0u; j < n; j++) {
        uint kb = ((b * L + j) * H + h) * D;
        float dot = 0.0;
        for (uint d = 0u; d < D; d++) dot += ld1(qb + d) * ld2(kb + d);
        mx = max(mx, dot * scale);
    }
    float acc[128];
    for (uint d = 0u; d < D; d++) acc[d] = 0.0;
    float sum = 0.0;
    for (uint j = 0u; j < n; j++) {
        uint kb = ((b * L + j) * H + h) * D;
        float dot = 0.0;
        for (uint d = 0u; d < D; d++) dot += ld1(qb + d) * ld2(kb + d);
        float w = exp(dot * scale - mx);
        sum += w;
        for (uint d = 0u; d < D; d++) acc[d] += w * ld3(kb + d);
    }
    for (uint d = 0u; d < D; d++) st0(qb + d, acc[d] / sum);
}
