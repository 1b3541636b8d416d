#version 450
// out[b, m, n] for products with few rows (a decode step's linears): one
// workgroup per 4 rows x 4 columns of the output. Its 64 invocations stride
// the reduction dim K, so neighbouring invocations read neighbouring
// elements of B (coalesced wherever B's k stride is 1, as in every linear:
// B = W^T), weights are dequantized in registers (int8 through the storage
// accessors, 4-bit pairs and group scales through products.glsl), and the
// sixteen partial sums are added across the workgroup (matvec.glsl).
// Parameters and bindings as matmul.comp.
#include "common.glsl"
#include "products.glsl"
#include "matvec.glsl"

