#version 450
// Sum, mean, max, min or any over up to four dims; one invocation per output
// element. The output (contiguous) has the input's rank with reduced dims 1.
//   u[0] n out, u[1] rank, u[2..7] out sizes, u[8..13] in strides of those dims,
//   u[14] reduced dims, u[15..18] their sizes, u[19..22] their strides,
//   u[23] op (0 sum, 1 mean, 2 max, 3 min, 4 any)
#include "common.glsl"

void main() {
    uint i = invocation();
    if (i >= u[0]) return;
    uint rem = i, base = 0u;
    for (int d = int(u[1]) - 1; d >= 0; d--) {
        uint k = rem % u[2 + d];
        rem /= u[2 + d];
        base += k * u[8 + d];
    }
    uint op = u[23], nr = u[14];
    uint s0 = nr > 0u ? u[15] : 1u, s1 = nr > 1u ? u[16] : 1u;
    uint s2 = nr > 2u ? u[17] : 1u, s3 = nr > 3u ? u[18] : 1u;
    float acc = op == 2u ? -1.0 / 0.0 : op == 3u ? 1.0 / 0.0 : 0.0;
    for (uint a = 0u; a < s0; a++)
        for (uint b = 0u; b < s1; b++)
            for (uint c = 0u; c < s2; c++)
                for (uint e = 0u; e < s3; e++) {
                    float x = ld1(base + a * u[19] + b * u[20] + c * u[21] + e * u[22]);
                    if (op == 4u) acc = max(acc, x != 0.0 ? 1.0 : 0.0);
                    else if (op == 2u) acc = max(acc, x);
                    else if (op == 3u) acc = min(acc, x);
                    else acc += x;
                }
    if (op == 1u) acc /= float(s0 * s1 * s2 * s3);
    st0(i, acc);
}
