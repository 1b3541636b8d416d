#version 450
// Attention over a KV cache: query s of a call at start position `start`
// attends causally to cache positions [0, start + s].
//   u[0] B, u[1] S, u[2] H, u[3] D (<= 128), u[4] L (cache length), u[5] start, u[6] scale,
//   u[7] parts P (ROWS = 1, 2), u[8] keys per part, u[9] query tiles (ROWS = 1)
// bindings: 0 out [B, S, H, D], 1 q [B, S, H, D], 2 k cache [B, L, H, D], 3 v cache,
//   4 scratch [B * S * H * P, D + 2] (ROWS = 1, 2 with P > 1)
//
// ROWS = 0: one invocation per (batch, query, head), two passes over the
// keys (max, then weighted sum).
// ROWS = 1 (a GPU): one workgroup per (batch, query, head) and part of its
// keys (P parts of u[8] keys: flash-decoding, so that a decode step's few
// heads still fill the device). It takes its keys 64 at a time, one key's
// score per invocation, keeps a running maximum and sum (the weights seen
// so far are rescaled when the maximum grows), and adds the 64 weighted
// value rows with each invocation holding two of the D output elements, so
// neighbouring invocations read neighbouring values. With one part it
// writes the output; with more, its maximum, sum and D unnormalized sums go
// to the scratch.
// ROWS = 2: one workgroup per (batch, query, head) combines its P parts.
// ROWS = 1 with u[9]: tiles of queries for a prefill (tiled(), below).
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
    uint P = u[7];
    uint i = row_group() / P, part = row_group() % P, t = gl_LocalInvocationID.x;
    uint S = u[1], H = u[2], D = u[3], L = u[4], start = u[5];
    if (i >= u[0] * S * H) return; // the whole workgroup
    uint h = i % H, s = (i / H) % S, b = i / (H * S);
    float scale = pf(6u);
    uint qb = ((b * S + s) * H + h) * D;
    uint n = min(start + s + 1u, L);
    uint first = part * u[8], last = min(n, first + u[8]);
    for (uint d = t; d < D; d += 64u) qs[d] = ld1(qb + d);
    barrier();
    uint row = H * D, base = b * L * row + h * D; // key j at base + j * row
    float mx = -1.0 / 0.0, sum = 0.0, acc0 = 0.0, acc1 = 0.0;
    for (uint j0 = first; j0 < last; j0 += 64u) {
        uint j = j0 + t;
        float score = -1.0 / 0.0;
        if (j < last) {
            float dot = 0.0;
            for (uint d = 0u; d < D; d++) dot += qs[d] * ld2(base + j * row + d);
            score = dot * scale;
        }
        float m = max(mx, row_max(score));
        float w = j < last ? exp(score - m) : 0.0;
        float keep = exp(mx - m); // 0 on the first block (mx is -inf)
        sum = sum * keep + row_sum(w);
        ws[t] = w;
        barrier();
        acc0 *= keep;
        acc1 *= keep;
        uint count = min(64u, last - j0);
        for (uint k = 0u; k < count; k++) {
            uint vb = base + (j0 + k) * row;
            float wk = ws[k];
            if (t < D) acc0 += wk * ld3(vb + t);
            if (t + 64u < D) acc1 += wk * ld3(vb + t + 64u);
        }
        barrier();
        mx = m;
    }
    if (P == 1u) {
        if (t < D) st0(qb + t, acc0 / sum);
        if (t + 64u < D) st0(qb + t + 64u, acc1 / sum);
        return;
    }
    // a part past the last key leaves maximum -inf and sum 0
    uint at = row_group() * (D + 2u);
    if (t == 0u) {
        st4(at, mx);
        st4(at + 1u, sum);
    }
    if (t < D) st4(at + 2u + t, acc0);
    if (t + 64u < D) st4(at + 2u + t + 64u, acc1);
}

// ROWS = 1 with u[9] (a prefill of many queries): one workgroup per
// (batch, head, tile of 16 queries). Keys and values come by in blocks of
// 16 rows through shared memory, read once for the tile's 16 queries; four
// invocations share a query, each holding a quarter of its dot products and
// of its D outputs (d = lane, lane + 4, ...), and they keep that query's
// running maximum and sum in step.
shared float tq[16 * 128];
shared float tk[16 * 128];
shared float tv[16 * 128];
shared float tdot[16 * 16 * 4];

void tiled() {
    uint S = u[1], H = u[2], D = u[3], L = u[4], start = u[5];
    uint tiles = (S + 15u) / 16u, i = row_group(), t = gl_LocalInvocationID.x;
    if (i >= u[0] * H * tiles) return; // the whole workgroup
    uint tile = i % tiles, h = (i / tiles) % H, b = i / (tiles * H);
    uint qi = t / 4u, lane = t % 4u, s0 = tile * 16u, s = s0 + qi;
    float scale = pf(6u);
    for (uint e = t; e < 16u * D; e += 64u) {
        uint r = e / D, d = e % D;
        tq[e] = s0 + r < S ? ld1(((b * S + s0 + r) * H + h) * D + d) : 0.0;
    }
    // the tile's last query sees the most keys
    uint n_tile = min(start + min(S, s0 + 16u), L);
    uint n = min(start + s + 1u, L); // this query's keys (s past S: unused)
    uint row = H * D, base = b * L * row + h * D;
    float mx = -1.0 / 0.0, sum = 0.0;
    float acc[32];
    for (uint x = 0u; x < 32u; x++) acc[x] = 0.0;
    for (uint j0 = 0u; j0 < n_tile; j0 += 16u) {
        barrier(); // the last block's readers are done
        for (uint e = t; e < 16u * D; e += 64u) {
            uint r = e / D, d = e % D;
            bool inside = j0 + r < n_tile;
            tk[e] = inside ? ld2(base + (j0 + r) * row + d) : 0.0;
            tv[e] = inside ? ld3(base + (j0 + r) * row + d) : 0.0;
        }
        barrier();
        for (uint k = 0u; k < 16u; k++) {
            float p = 0.0;
            for (uint d = lane; d < D; d += 4u) p += tq[qi * D + d] * tk[k * D + d];
            tdot[(qi * 16u + k) * 4u + lane] = p;
        }
        barrier();
        float sc[16];
        float m = mx;
        for (uint k = 0u; k < 16u; k++) {
            uint at = (qi * 16u + k) * 4u;
            float dot = tdot[at] + tdot[at + 1u] + tdot[at + 2u] + tdot[at + 3u];
            sc[k] = j0 + k < n ? dot * scale : -1.0 / 0.0;
            m = max(m, sc[k]);
        }
        if (m == -1.0 / 0.0) continue; // no key of this block for this query
        float keep = exp(mx - m);
        sum *= keep;
        for (uint x = 0u; x < 32u; x++) acc[x] *= keep;
        for (uint k = 0u; k < 16u; k++) {
            float w = exp(sc[k] - m); // 0 for a masked key
            sum += w;
            for (uint x = 0u, d = lane; d < D; x++, d += 4u) acc[x] += w * tv[k * D + d];
        }
        mx = m;
    }
    if (s >= S) return;
    uint qb = ((b * S + s) * H + h) * D;
    for (uint x = 0u, d = lane; d < D; x++, d += 4u) st0(qb + d, acc[x] / sum);
}

void combine() {
    uint P = u[7], i = row_group(), t = gl_LocalInvocationID.x;
    uint S = u[1], H = u[2], D = u[3];
    if (i >= u[0] * S * H) return;
    uint at = i * P * (D + 2u);
    float mx = -1.0 / 0.0;
    for (uint p = 0u; p < P; p++) mx = max(mx, ld4(at + p * (D + 2u)));
    float sum = 0.0, acc0 = 0.0, acc1 = 0.0;
    for (uint p = 0u; p < P; p++) {
        uint pa = at + p * (D + 2u);
        float w = exp(ld4(pa) - mx); // 0 for an empty part
        sum += w * ld4(pa + 1u);
        if (t < D) acc0 += w * ld4(pa + 2u + t);
        if (t + 64u < D) acc1 += w * ld4(pa + 2u + t + 64u);
    }
    uint qb = i * D; // out [B, S, H, D]: head i's row
    if (t < D) st0(qb + t, acc0 / sum);
    if (t + 64u < D) st0(qb + t + 64u, acc1 / sum);
}

void main() {
    if (ROWS == 2u) combine();
    else if (ROWS == 1u && u[9] != 0u) tiled();
    else if (ROWS == 1u) per_workgroup();
    else per_invocation();
}
