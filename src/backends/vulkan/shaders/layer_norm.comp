#version 450
// Layer norm over the last `cols` elements of each row: one invocation a
// row, or (ROWS, a GPU) one workgroup a row, its invocations striding it.
//   u[0] rows, u[1] cols, u[2] eps, u[3] has weight, u[4] has bias,
//   u[5] writes mean and rstd
// bindings: 0 out, 1 in, 2 weight, 3 bias, 4 mean, 5 rstd
#include "common.glsl"
#include "rows.glsl"

void main() {
    uint row = ROWS != 0u ? row_group() : invocation();
    uint cols = u[1];
    if (row >= u[0]) return; // with ROWS, the whole workgroup
    uint base = row * cols;
    uint first = ROWS != 0u ? gl_LocalInvocationID.x : 0u, step = ROWS != 0u ? 64u : 1u;
    float mean = 0.0;
    for (uint k = first; k < cols; k += step) mean += ld1(base + k);
    if (ROWS != 0u) mean = row_sum(mean);
    mean /= float(cols);
    float var = 0.0;
    for (uint k = first; k < cols; k += step) {
        float d = ld1(base + k) - mean;
        var += d * d;
    }
    if (ROWS != 0u) var = row_sum(var);
    float rstd = inversesqrt(var / float(cols) + pf(2u));
    for (uint k = first; k < cols; k += step) {
        float r = (ld1(base + k) - mean) * rstd;
        if (u[3] != 0u) r *= ld2(k);
        if (u[4] != 0u) r += ld3(k);
        st0(base + k, r);
    }
    if (u[5] != 0u && first == 0u) {
        st4(row, mean);
        st5(row, rstd);
    }
}
