#version 450
// out[b, m, n] = alpha * scale[n] * sum_k A[b, m, k] * B[b, k, n] + beta * bias[m, n]
// through strides, so that linear (B = W^T), mm, bmm, addmm and the int8
// weight-only linear (B an int8 weight read in registers, scale its
// per-channel scales) share it.
// Each invocation computes a 4x4 tile (rows m0.., columns n0..): per k it
// loads four values of A and four of B for sixteen products.
//   u[0] batch, u[1] M, u[2] N, u[3] K
//   u[4..6] A strides (batch, m, k), u[8..10] B strides (batch, k, n)
//   u[11] has bias, u[12] bias m stride, u[13] bias n stride, u[14] alpha, u[15] beta,
//   u[16] has scale
// bindings: 0 out (contiguous), 1 A, 2 B, 3 bias, 4 scale [N]
#include "common.glsl"

void main() {
    uint i = invocation();
    uint M = u[1], N = u[2], K = u[3];
    uint nq = (N + 3u) / 4u, mq = (M + 3u) / 4u;
    if (i >= u[0] * mq * nq) return;
    uint n0 = (i % nq) * 4u;
    uint m0 = ((i / nq) % mq) * 4u;
    uint bt = i / (nq * mq);
    uint rows = min(4u, M - m0), cols = min(4u, N - n0);
    uint sam = u[5], sak = u[6], sbk = u[9], sbn = u[10];
    // rows and columns past the edge read row/column 0 again (their
    // results are not written), so the loop needs no branches
    uint a0 = bt * u[4] + m0 * sam;
    uint a1 = a0 + (rows > 1u ? sam : 0u), a2 = a0 + (rows > 2u ? 2u * sam : 0u);
    uint a3 = a0 + (rows > 3u ? 3u * sam : 0u);
    uint b0 = bt * u[8] + n0 * sbn;
    uint b1 = b0 + (cols > 1u ? sbn : 0u), b2 = b0 + (cols > 2u ? 2u * sbn : 0u);
    uint b3 = b0 + (cols > 3u ? 3u * sbn : 0u);
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k = 0u; k < K; k++) {
        uint ka = k * sak, kb = k * sbk;
        vec4 b = vec4(ld2(b0 + kb), ld2(b1 + kb), ld2(b2 + kb), ld2(b3 + kb));
        acc0 += ld1(a0 + ka) * b;
        acc1 += ld1(a1 + ka) * b;
        acc2 += ld1(a2 + ka) * b;
        acc3 += ld1(a3 + ka) * b;
    }
    float alpha = pf(14u), beta = pf(15u);
    for (uint r = 0u; r < rows; r++) {
        vec4 acc = r == 0u ? acc0 : r == 1u ? acc1 : r == 2u ? acc2 : acc3;
        uint m = m0 + r;
        uint o = (bt * M + m) * N + n0;
        for (uint c = 0u; c < cols; c++) {
            float v = alpha * acc[c];
            if (u[16] != 0u) v *= ld4(n0 + c);
            if (u[11] != 0u) v += beta * ld3(m * u[12] + (n0 + c) * u[13]);
            st0(o + c, v);
        }
    }
}
