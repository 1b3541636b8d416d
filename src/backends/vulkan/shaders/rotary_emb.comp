#version 450
// Rotary embeddings of one tensor x [B, S, H, D]: each (even, odd) pair of
// the last dim is rotated by its position's angle; one invocation per pair.
//   out[2k]   = x[2k] * cos[s, k] - x[2k+1] * sin[s, k]
//   out[2k+1] = x[2k] * sin[s, k] + x[2k+1] * cos[s, k]
// cos and sin are [S, D/2], or [S, H, D/2] (u[5] != 0: per head).
//   u[0] pairs (B*S*H*D/2), u[1] S, u[2] H, u[3] D/2, u[5] per head
// bindings: 0 out, 1 x, 2 cos, 3 sin
#include "common.glsl"

void main() {
    uint p = invocation();
    if (p >= u[0]) return;
    uint half_d = u[3], H = u[2];
    uint k = p % half_d, h = (p / half_d) % H, s = (p / (half_d * H)) % u[1];
    uint f = u[5] != 0u ? (s * H + h) * half_d + k : s * half_d + k;
    float c = ld2(f), sn = ld3(f);
    float xr = ld1(2u * p), xi = ld1(2u * p + 1u);
    st0(2u * p, xr * c - xi * sn);
    st0(2u * p + 1u, xr * sn + xi * c);
}
