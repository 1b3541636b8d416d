#version 450
// Direct 2-d convolution, NCHW, grouped (depthwise when groups == C), with
// an optional bias and an output clamp; one invocation per output element.
//   u[0] N, u[1] C, u[2] H, u[3] W, u[4] OC, u[5] OH, u[6] OW, u[7] KH, u[8] KW,
//   u[9] stride h, u[10] stride w, u[11] pad h, u[12] pad w, u[13] dil h, u[14] dil w,
//   u[15] groups, u[16] has bias, u[17] clamp min, u[18] clamp max
// bindings: 0 out, 1 in, 2 weight [OC, C/groups, KH, KW], 3 bias
#include "common.glsl"

void main() {
    uint i = invocation();
    uint C = u[1], H = u[2], W = u[3], OC = u[4], OH = u[5], OW = u[6], KH = u[7], KW = u[8];
    if (i >= u[0] * OC * OH * OW) return;
    uint ow = i % OW, oh = (i / OW) % OH, oc = (i / (OW * OH)) % OC, n = i / (OW * OH * OC);
    uint cg = C / u[15], ocg = OC / u[15];
    uint c0 = (oc / ocg) * cg;
    float acc = u[16] != 0u ? ld3(oc) : 0.0;
    int ih0 = int(oh * u[9]) - int(u[11]), iw0 = int(ow * u[10]) - int(u[12]);
    for (uint c = 0u; c < cg; c++) {
        uint in_base = (n * C + c0 + c) * H * W;
        uint w_base = (oc * cg + c) * KH * KW;
        for (uint kh = 0u; kh < KH; kh++) {
            int ih = ih0 + int(kh * u[13]);
            if (ih < 0 || ih >= int(H)) continue;
            for (uint kw = 0u; kw < KW; kw++) {
                int iw = iw0 + int(kw * u[14]);
                if (iw < 0 || iw >= int(W)) continue;
                acc += ld1(in_base + uint(ih) * W + uint(iw)) * ld2(w_base + kh * KW + kw);
            }
        }
    }
    st0(i, min(max(acc, pf(17u)), pf(18u)));
}
