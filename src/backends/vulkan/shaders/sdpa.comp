#version 450
// Attention over a KV cache: query s of a call at start position `start`
// attends causally to cache positions [0, start + s].
//   u[0] B, u[1] S, u[2] H, u[3] D (<= 128), u[4] L (cache length), u[5] start, u[6] scale
// bindings: 0 out [B, S, H, D], 1 q [B, S, H, D], 2 k cache [B, L, H, D], 3 v cache
//
// One invocation per (batch, query, head), two passes over the keys (max,
// then weighted sum); or (ROWS, a GPU) one workgroup per (batch, query,
// head) that splits the keys over its invocations: it takes the keys 64 at
// a time, one key's score per invocation, keeps a running maximum and sum
// (the weights seen so far are rescaled when the maximum grows), and adds
// the 64 weighted value rows with each invocation holding two of the D
// output elements, so neighbouring invocations read neighbouring values.
#include "common.glsl"
#include "rows.glsl"

shared float qs[128];
shared float ws[64];

void per_invocation() {
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

void per_workgroup() {
    uint i = row_group(), t = gl_LocalInvocationID.x;
    uint S = u[1], H = u[2], D = u[3], L = u[4], start = u[5];
    if (i >= u[0] * S * H) return; // the whole workgroup
    uint h = i % H, s = (i / H) % S, b = i / (H * S);
    float scale = pf(6u);
    uint qb = ((b * S + s) * H + h) * D;
    uint n = min(start + s + 1u, L);
    for (uint d = t; d < D; d += 64u) qs[d] = ld1(qb + d);
    barrier();
    uint row = H * D, base = b * L * row + h * D; // key j at base + j * row
    float mx = -1.0 / 0.0, sum = 0.0, acc0 = 0.0, acc1 = 0.0;
    for (uint j0 = 0u; j0 < n; j0 += 64u) {
        uint j = j0 + t;
        float score = -1.0 / 0.0;
        if (j < n) {
            float dot = 0.0;
            for (uint d = 0u; d < D; d++) dot += qs[d] * ld2(base + j * row + d);
            score = dot * scale;
        }
        float m = max(mx, row_max(score));
        float w = j < n ? exp(score - m) : 0.0;
        float keep = exp(mx - m); // 0 on the first block (mx is -inf)
        sum = sum * keep + row_sum(w);
        ws[t] = w;
        barrier();
        acc0 *= keep;
        acc1 *= keep;
        uint count = min(64u, n - j0);
        for (uint k = 0u; k < count; k++) {
            uint vb = base + (j0 + k) * row;
            float wk = ws[k];
            if (t < D) acc0 += wk * ld3(vb + t);
            if (t + 64u < D) acc1 += wk * ld3(vb + t + 64u);
        }
        barrier();
        mx = m;
    }
    if (t < D) st0(qb + t, acc0 / sum);
    if (t + 64u < D) st0(qb + t + 64u, acc1 / sum);
}

void main() {
    if (ROWS != 0u) per_workgroup();
    else per_invocation();
}
