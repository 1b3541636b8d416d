#version 450
// Layer norm over the last `cols` elements of each row; one invocation a row.
//   u[0] rows, u[1] cols, u[2] eps, u[3] has weight, u[4] has bias,
//   u[5] writes mean and rstd
// bindings: 0 out, 1 in, 2 weight, 3 bias, 4 mean, 5 rstd
#include "common.glsl"

void main() {
    uint row = invocation();
    uint cols = u[1];
    if (row >= u[0]) return;
    uint base = row * cols;
    float mean = 0.0;
    for (uint k = 0u; k < cols; k++) mean += ld1(base + k);
    mean /= float(cols);
    float var = 0.0;
    for (uint k = 0u; k < cols; k++) {
        float d = ld1(base + k) - mean;
        var += d * d;
    }
    float rstd = inversesqrt(var / float(cols) + pf(2u));
    for (uint k = 0u; k < cols; k++) {
        float r = (ld1(base + k) - mean) * rstd;
        if (u[3] != 0u) r *= ld2(k);
        if (u[4] != 0u) r += ld3(k);
        st0(base + k, r);
    }
    if (u[5] != 0u) {
        st4(row, mean);
        st5(row, rstd);
    }
}
