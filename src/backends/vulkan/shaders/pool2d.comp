#version 450
// Max or average 2-d pooling over NCHW planes; one invocation per output.
//   u[0] planes (N*C), u[1] H, u[2] W, u[3] OH, u[4] OW, u[5] KH, u[6] KW,
//   u[7] stride h, u[8] stride w, u[9] pad h, u[10] pad w, u[11] dil h, u[12] dil w,
//   u[13] op (0 max, 1 avg), u[14] count_include_pad, u[15] divisor override (0: none)
#include "common.glsl"

void main() {
    uint i = invocation();
    uint H = u[1], W = u[2], OH = u[3], OW = u[4];
    if (i >= u[0] * OH * OW) return;
    uint ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
    int ih0 = int(oh * u[7]) - int(u[9]), iw0 = int(ow * u[8]) - int(u[10]);
    bool is_max = u[13] == 0u;
    float acc = is_max ? -1.0 / 0.0 : 0.0;
    uint count = 0u, padded = 0u;
    for (uint kh = 0u; kh < u[5]; kh++) {
        int ih = ih0 + int(kh * u[11]);
        for (uint kw = 0u; kw < u[6]; kw++) {
            int iw = iw0 + int(kw * u[12]);
            // average pooling counts the padding (not beyond it) when asked
            if (ih < int(H + u[9]) && iw < int(W + u[10])) padded++;
            if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) continue;
            float x = ld1(p * H * W + uint(ih) * W + uint(iw));
            acc = is_max ? max(acc, x) : acc + x;
            count++;
        }
    }
    if (!is_max) {
        float div = u[15] != 0u ? float(u[15]) : u[14] != 0u ? float(padded) : float(count);
        acc /= div;
    }
    st0(i, acc);
}
