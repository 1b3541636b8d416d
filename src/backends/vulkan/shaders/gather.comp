#version 450
// Indexed reads along one dim: index_select and index.Tensor (the index
// picks a slice of the dim for each output position along it) and gather
// (the index has the output's shape). An index outside the dim writes zero
// and records the node (u[4]) in the status word.
//   u[0] n, u[1] rank, u[2] dim, u[3] size of the dim in the input, u[4] node + 1,
//   u[5] gather (the index has the output's shape), u[6] negative indices wrap
//   u[8..13] out sizes, u[16..21] input strides (the indexed dim's unused)
// bindings: 0 out, 1 in, 2 index
#include "common.glsl"

void main() {
    uint i = invocation();
    if (i >= u[0]) return;
    uint rank = u[1], dim = u[2];
    uint rem = i, src = 0u, pos = 0u;
    for (int d = int(rank) - 1; d >= 0; d--) {
        uint size = u[8 + uint(d)];
        uint coord = rem % size;
        rem /= size;
        if (uint(d) == dim) pos = coord;
        else src += coord * u[16 + uint(d)];
    }
    float fi = ld2(u[5] != 0u ? i : pos);
    float size = float(u[3]);
    if (u[6] != 0u && fi < 0.0) fi += size;
    if (fi < 0.0 || fi >= size || fi != floor(fi)) {
        atomicMax(status[0], u[4]);
        st0(i, 0.0);
        return;
    }
    st0(i, ld1(src + uint(fi) * u[16 + dim]));
}
