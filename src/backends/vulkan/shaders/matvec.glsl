// The body of matvec.comp and matvec_sg.comp (which defines SUBGROUPS: the
// partial sums are added with subgroup operations first, where the device
// has them for compute shaders).
shared float part[64 * 16];

// The sixteen sums (rows 0-3 x columns 0-3) of slot k into part[16k ..].
void put_sums(uint k, vec4 s0, vec4 s1, vec4 s2, vec4 s3) {
    for (uint c = 0u; c < 4u; c++) {
        part[k * 16u + c] = s0[c];
        part[k * 16u + 4u + c] = s1[c];
        part[k * 16u + 8u + c] = s2[c];
        part[k * 16u + 12u + c] = s3[c];
    }
}

void main() {
    uint M = u[1], N = u[2], K = u[3];
    uint nq = (N + 3u) / 4u, mq = (M + 3u) / 4u;
    uint wg = workgroup(), t = gl_LocalInvocationID.x;
    if (wg >= u[0] * mq * nq) return; // the whole workgroup
    uint n0 = (wg % nq) * 4u, m0 = ((wg / nq) % mq) * 4u, bt = wg / (nq * mq);
    uint rows = min(4u, M - m0), cols = min(4u, N - n0);
    uint sam = u[5], sak = u[6], sbk = u[9], sbn = u[10];
    // rows and columns past the edge read row / column 0 again (not written)
    uint a0 = bt * u[4] + m0 * sam;
    uint a1 = a0 + (rows > 1u ? sam : 0u), a2 = a0 + (rows > 2u ? 2u * sam : 0u);
    uint a3 = a0 + (rows > 3u ? 3u * sam : 0u);
    uint c1 = cols > 1u ? 1u : 0u, c2 = cols > 2u ? 2u : 0u, c3 = cols > 3u ? 3u : 0u;
    uint b0 = bt * u[8] + n0 * sbn;
    uint b1 = b0 + c1 * sbn, b2 = b0 + c2 * sbn, b3 = b0 + c3 * sbn;
    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k = t; k < K; k += 64u) {
        uint kb = k * sbk, ka = k * sak;
        vec4 b = vec4(ldb(b0 + kb), ldb(b1 + kb), ldb(b2 + kb), ldb(b3 + kb));
        if (u[16] != 0u)
            b *= vec4(scale_of(k, n0), scale_of(k, n0 + c1), scale_of(k, n0 + c2),
                      scale_of(k, n0 + c3));
        acc0 += ld1(a0 + ka) * b;
        acc1 += ld1(a1 + ka) * b;
        acc2 += ld1(a2 + ka) * b;
        acc3 += ld1(a3 + ka) * b;
    }
#ifdef SUBGROUPS
    // each subgroup adds its invocations' sums in registers; the first
    // invocation of each writes its sixteen, which the first sixteen
    // invocations then add up
    uint sg = gl_SubgroupID;
    vec4 r0 = subgroupAdd(acc0), r1 = subgroupAdd(acc1), r2 = subgroupAdd(acc2),
         r3 = subgroupAdd(acc3);
    if (subgroupElect()) put_sums(sg, r0, r1, r2, r3);
    barrier();
    if (t < 16u && t / 4u < rows && t % 4u < cols) {
        float s = 0.0;
        for (uint j = 0u; j < gl_NumSubgroups; j++) s += part[j * 16u + t];
        store_out(bt, m0 + t / 4u, n0 + t % 4u, s);
    }
#else
    put_sums(t, acc0, acc1, acc2, acc3);
    barrier();
    // output o = t % 16 (row o / 4, column o % 4): quarter t / 16 of the
    // invocations' partial sums, then the four quarters
    uint o = t & 15u, q = t >> 4u;
    float s = 0.0;
    for (uint j = 0u; j < 16u; j++) s += part[(q * 16u + j) * 16u + o];
    barrier();
    part[q * 16u + o] = s;
    barrier();
    if (t < 16u && t / 4u < rows && t % 4u < cols)
        store_out(bt, m0 + t / 4u, n0 + t % 4u, part[t] + part[16u + t] + part[32u + t] + part[48u + t]);
#endif
}
