#version 450
// Nearest or bilinear 2-d upsampling over NCHW planes; one invocation per
// output element. The host passes the source scale of each axis (input over
// output size, or the inverse of a given scale factor; align_corners:
// (in - 1) / (out - 1)).
//   u[0] planes (N*C), u[1] H, u[2] W, u[3] OH, u[4] OW, u[5] scale h, u[6] scale w,
//   u[7] mode (0 nearest, 1 bilinear), u[8] align_corners
// bindings: 0 out, 1 in
#include "common.glsl"

// Bilinear source coordinate of output index o (PyTorch's area_pixel rule).
float source(uint o, float scale, bool align) {
    if (align) return scale * float(o);
    return max(scale * (float(o) + 0.5) - 0.5, 0.0);
}

void main() {
    uint i = invocation();
    uint H = u[1], W = u[2], OH = u[3], OW = u[4];
    if (i >= u[0] * OH * OW) return;
    uint ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
    uint base = p * H * W;
    float sh = pf(5u), sw = pf(6u);
    if (u[7] == 0u) {
        uint ih = min(uint(floor(float(oh) * sh)), H - 1u);
        uint iw = min(uint(floor(float(ow) * sw)), W - 1u);
        st0(i, ld1(base + ih * W + iw));
        return;
    }
    bool align = u[8] != 0u;
    float fh = source(oh, sh, align), fw = source(ow, sw, align);
    uint h0 = min(uint(fh), H - 1u), w0 = min(uint(fw), W - 1u);
    uint h1 = h0 + (h0 < H - 1u ? 1u : 0u), w1 = w0 + (w0 < W - 1u ? 1u : 0u);
    float lh = fh - float(h0), lw = fw - float(w0);
    float top = (1.0 - lw) * ld1(base + h0 * W + w0) + lw * ld1(base + h0 * W + w1);
    float bottom = (1.0 - lw) * ld1(base + h1 * W + w0) + lw * ld1(base + h1 * W + w1);
    st0(i, (1.0 - lh) * top + lh * bottom);
}
