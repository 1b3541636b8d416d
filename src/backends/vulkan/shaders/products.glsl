// What the three product shaders (matmul, matvec, matmul_tiled) share: their
// parameter block (matmul.comp lists it) and how they read B and its scales.

// Element i of B: as stored, or (u[19]) the low (i even) or high (i odd)
// 4-bit half of byte i / 2, less 8.
float ldb(uint i) {
    if (u[19] == 0u) return ld2(i);
    uint byte = uint(ld2(i >> 1u));
    return float((byte >> (4u * (i & 1u))) & 15u) - 8.0;
}

// The scale of row k of B in column n (1 without scales).
float scale_of(uint k, uint n) {
    if (u[16] == 0u) return 1.0;
    return ld4((k / u[17]) * u[18] + n);
}

// alpha * acc + beta * bias[m, n], into out[b, m, n].
void store_out(uint bt, uint m, uint n, float acc) {
    float v = pf(14u) * acc;
    if (u[11] != 0u) v += pf(15u) * ld3(m * u[12] + n * u[13]);
    st0((bt * u[1] + m) * u[2] + n, v);
}

// The workgroup's linear index: workgroups are laid out over x, then y.
uint workgroup() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }
