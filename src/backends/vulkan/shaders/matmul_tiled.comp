#version 450
// out[b, m, n] for products with many rows (prefill): one workgroup per
// 32 x 32 tile of the output, each invocation a 4 x 4 block of it in
// registers. K goes by in steps of 16: the workgroup loads a 32 x 16 slab of
// A and a 16 x 32 slab of B into shared memory (neighbouring invocations
// reading neighbouring elements along whichever dim has stride 1; B
// dequantized and scaled as it is loaded), then every invocation reads its
// four rows and four columns from there. Parameters and bindings as
// matmul.comp.
#include "common.glsl"
#include "products.glsl"

shared float As[16][33]; // [k][m]
shared float Bs[16][33]; // [k][n]

void main() {
    uint M = u[1], N = u[2], K = u[3];
    uint nq = (N + 31u) / 32u, mq = (M + 31u) / 32u;
    uint wg = workgroup(), t = gl_LocalInvocationID.x;
    if (wg >= u[0] * mq * nq) return; // the whole workgroup
    uint n0 = (wg % nq) * 32u, m0 = ((wg / nq) % mq) * 32u, bt = wg / (nq * mq);
    uint sam = u[5], sak = u[6], sbk = u[9], sbn = u[10];
    uint abase = bt * u[4], bbase = bt * u[8];
    uint tm = (t / 8u) * 4u, tn = (t % 8u) * 4u;
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k0 = 0u; k0 < K; k0 += 16u) {
        for (uint j = 0u; j < 8u; j++) {
            uint e = t + 64u * j;
            uint kk = sak == 1u ? e & 15u : e >> 5u, mm = sak == 1u ? e >> 4u : e & 31u;
            uint m = m0 + mm, k = k0 + kk;
            As[kk][mm] = m < M && k < K ? ld1(abase + m * sam + k * sak) : 0.0;
            kk = sbk == 1u ? e & 15u : e >> 5u;
            uint nn = sbk == 1u ? e >> 4u : e & 31u, n = n0 + nn;
            k = k0 + kk;
            Bs[kk][nn] = n < N && k < K ? ldb(bbase + k * sbk + n * sbn) * scale_of(k, n) : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < 16u; kk++) {
            vec4 a = vec4(As[kk][tm], As[kk][tm + 1u], As[kk][tm + 2u], As[kk][tm + 3u]);
            vec4 b = vec4(Bs[kk][tn], Bs[kk][tn + 1u], Bs[kk][tn + 2u], Bs[kk][tn + 3u]);
            acc0 += a.x * b;
            acc1 += a.y * b;
            acc2 += a.z * b;
            acc3 += a.w * b;
        }
        barrier();
    }
    for (uint r = 0u; r < 4u; r++) {
        vec4 acc = r == 0u ? acc0 : r == 1u ? acc1 : r == 2u ? acc2 : acc3;
        uint m = m0 + tm + r;
        for (uint c = 0u; c < 4u; c++)
            if (m < M && tn + n0 + c < N) store_out(bt, m, n0 + tn + c, acc[c]);
    }
}
