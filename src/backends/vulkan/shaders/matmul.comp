#version 450
// out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[m, n]
// through strides, so that linear (B = W^T), mm, bmm and addmm share it.
// Each invocation computes four adjacent columns of one row.
//   u[0] batch, u[1] M, u[2] N, u[3] K
//   u[4..6] A strides (batch, m, k), u[8..10] B strides (batch, k, n)
//   u[11] has bias, u[12] bias m stride, u[13] bias n stride, u[14] alpha, u[15] beta
// bindings: 0 out (contiguous), 1 A, 2 B, 3 bias
#include "common.glsl"

void main() {
    uint i = invocation();
    uint M = u[1], N = u[2], K = u[3];
    uint nq = (N + 3u) / 4u;
    if (i >= u[0] * M * nq) return;
    uint n0 = (i % nq) * 4u;
    uint m = (i / nq) % M;
    uint bt = i / (nq * M);
    uint a = bt * u[4] + m * u[5];
    uint sak = u[6], sbk = u[9], sbn = u[10];
    uint b = bt * u[8] + n0 * sbn;
    uint cols = min(4u, N - n0);
    vec4 acc = vec4(0.0);
    for (uint k = 0u; k < K; k++) {
        float x = t1[a + k * sak];
        uint bk = b + k * sbk;
        acc.x += x * t2[bk];
        if (cols > 1u) acc.y += x * t2[bk + sbn];
        if (cols > 2u) acc.z += x * t2[bk + 2u * sbn];
        if (cols > 3u) acc.w += x * t2[bk + 3u * sbn];
    }
    float alpha = pf(14u), beta = pf(15u);
    uint o = (bt * M + m) * N + n0;
    for (uint c = 0u; c < cols; c++) {
        float r = alpha * acc[c];
        if (u[11] != 0u) r += beta * t3[m * u[12] + (n0 + c) * u[13]];
        t0[o + c] = r;
    }
}
