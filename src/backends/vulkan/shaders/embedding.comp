#version 450
// out[r, j] = weight[indices[r], j]. An index outside the table writes zeros
// and records the node (u[3]) in the status word.
//   u[0] rows, u[1] dim, u[2] vocab, u[3] node + 1
// bindings: 0 out, 1 weight, 2 indices
#include "common.glsl"

void main() {
    uint i = invocation();
    uint dim = u[1];
    if (i >= u[0] * dim) return;
    uint r = i / dim, j = i % dim;
    float fi = ld2(r);
    if (fi < 0.0 || fi >= float(u[2]) || fi != floor(fi)) {
        atomicMax(status[0], u[3]);
        st0(i, 0.0);
        return;
    }
    st0(i, ld1(uint(fi) * dim + j));
}
