#version 450
// out[b, m, n] = alpha * sum_g scale[g, n] * sum_{k in group g} A[b, m, k] * B[b, k, n]
//                + beta * bias[m, n]
// through strides, so that linear (B = W^T), mm, bmm, addmm, the int8
// weight-only linear (B an int8 weight read in registers, one group of K
// with its per-channel scales) and the 4-bit groupwise linear (B 4-bit
// values read from their byte pairs in registers, a scale per group of
// u[17] rows of K and column) share it. Without scales there is one group.
// The simple variant (matvec.comp and matmul_tiled.comp are the others,
// with the same parameters): each invocation computes a 4x4 tile (rows m0.., columns n0..): per k it
// loads four values of A and four of B for sixteen products.
//   u[0] batch, u[1] M, u[2] N, u[3] K
//   u[4..6] A strides (batch, m, k), u[8..10] B strides (batch, k, n)
//   u[11] has bias, u[12] bias m stride, u[13] bias n stride, u[14] alpha, u[15] beta,
//   u[16] has scale, u[17] group size (rows of K, >= 1), u[18] scale group stride,
//   u[19] B holds 4-bit values: element i of B is the low (i even) or high
//         (i odd) half of byte i / 2, less 8 (ExecuTorch's linear_q4gsw packing)
// bindings: 0 out (contiguous), 1 A, 2 B, 3 bias, 4 scale [groups, stride >= N]
#include "common.glsl"
#include "products.glsl"

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
    uint c1 = cols > 1u ? 1u : 0u, c2 = cols > 2u ? 2u : 0u, c3 = cols > 3u ? 3u : 0u;
    uint G = u[17];
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k0 = 0u, s = n0; k0 < K; k0 += G, s += u[18]) {
        uint k1 = min(K, k0 + G);
        vec4 p0 = vec4(0.0), p1 = vec4(0.0), p2 = vec4(0.0), p3 = vec4(0.0);
        for (uint k = k0; k < k1; k++) {
            uint ka = k * sak, kb = k * sbk;
            vec4 b = vec4(ldb(b0 + kb), ldb(b1 + kb), ldb(b2 + kb), ldb(b3 + kb));
            p0 += ld1(a0 + ka) * b;
            p1 += ld1(a1 + ka) * b;
            p2 += ld1(a2 + ka) * b;
            p3 += ld1(a3 + ka) * b;
        }
        if (u[16] != 0u) {
            vec4 sc = vec4(ld4(s), ld4(s + c1), ld4(s + c2), ld4(s + c3));
            p0 *= sc;
            p1 *= sc;
            p2 *= sc;
            p3 *= sc;
        }
        acc0 += p0;
        acc1 += p1;
        acc2 += p2;
        acc3 += p3;
    }
    float alpha = pf(14u), beta = pf(15u);
    for (uint r = 0u; r < rows; r++) {
        vec4 acc = r == 0u ? acc0 : r == 1u ? acc1 : r == 2u ? acc2 : acc3;
        uint m = m0 + r;
        uint o = (bt * M + m) * N + n0;
        for (uint c = 0u; c < cols; c++) {
            float v = alpha * acc[c];
            if (u[11] != 0u) v += beta * ld3(m * u[12] + (n0 + c) * u[13]);
            st0(o + c, v);
        }
    }
}
