#version 450
// Transposed 2-d convolution, NCHW, grouped, with an optional bias and an
// output clamp; one invocation per output element, gathering the input
// positions whose strided, padded kernel window reaches it.
//   u[0] N, u[1] C, u[2] H, u[3] W, u[4] OC, u[5] OH, u[6] OW, u[7] KH, u[8] KW,
//   u[9] stride h, u[10] stride w, u[11] pad h, u[12] pad w, u[13] dil h, u[14] dil w,
//   u[15] groups, u[16] has bias, u[17] clamp min, u[18] clamp max
// bindings: 0 out, 1 in, 2 weight [C, OC/groups, KH, KW], 3 bias
#include "common.glsl"

void main() {
    uint i = invocation();
    uint C = u[1], H = u[2], W = u[3], OC = u[4], OH = u[5], OW = u[6], KH = u[7], KW = u[8];
    if (i >= u[0] * OC * OH * OW) return;
    uint ow = i % OW, oh = (i / OW) % OH, oc = (i / (OW * OH)) % OC, n = i / (OW * OH * OC);
    uint cg = C / u[15], ocg = OC / u[15];
    uint c0 = (oc / ocg) * cg, ocl = oc % ocg;
    float acc = u[16] != 0u ? ld3(oc) : 0.0;
    for (uint kh = 0u; kh < KH; kh++) {
        int th = int(oh) + int(u[11]) - int(kh * u[13]);
        if (th < 0 || th % int(u[9]) != 0) continue;
        uint ih = uint(th) / u[9];
        if (ih >= H) continue;
        for (uint kw = 0u; kw < KW; kw++) {
            int tw = int(ow) + int(u[12]) - int(kw * u[14]);
            if (tw < 0 || tw % int(u[10]) != 0) continue;
            uint iw = uint(tw) / u[10];
            if (iw >= W) continue;
            for (uint c = 0u; c < cg; c++) {
                float x = ld1(((n * C + c0 + c) * H + ih) * W + iw);
                acc += x * ld2((((c0 + c) * ocg + ocl) * KH + kh) * KW + kw);
            }
        }
    }
    st0(i, min(max(acc, pf(17u)), pf(18u)));
}
