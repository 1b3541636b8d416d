#version 450
// One output element per invocation over a strided, broadcast view of up to
// three inputs: every unary, binary and ternary operator, fills, ranges and
// the data-movement operators (copy through strides).
// The operator is a specialization constant: each one gets a pipeline of its
// own, so the switch below folds away when the pipeline is made.
//   u[0] n, u[1] rank, u[3] inputs
//   u[4..9] out sizes, u[10..15] out strides, u[16] out offset
//   u[17..22] in0 strides, u[23] in0 offset; u[24..30] in1; u[31..37] in2
//   u[38] f0, u[39] f1 (scalars; a binary operator without in1 uses f0)
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0u;

const uint COPY = 0u, RELU = 1u, GELU = 2u, GELU_TANH = 3u, CLAMP = 4u, HARDSWISH = 5u,
           SIGMOID = 6u, TANH = 7u, EXP = 8u, NEG = 9u, ABS = 10u, SQRT = 11u, RSQRT = 12u,
           NOT = 13u, FILL = 14u, ARANGE = 15u, LOG = 16u, SIN = 17u, COS = 18u, TRUNC = 19u,
           ADD = 20u, SUB = 21u, MUL = 22u, DIV = 23u, EQ = 24u, NE = 25u, LT = 26u, LE = 27u,
           GT = 28u, GE = 29u, AND = 30u, OR = 31u, MAX = 32u, MIN = 33u, POW = 34u,
           WHERE = 40u;

float gelu_erf(float x) {
    // erf by Abramowitz-Stegun 7.1.26 is too coarse; use the tanh-free series
    // through the complementary error function's rational approximation.
    float z = abs(x) * 0.70710678118654752;
    float t = 1.0 / (1.0 + 0.5 * z);
    float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
              t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
              t * (-0.82215223 + t * 0.17087277)))))))));
    float erf_z = 1.0 - r;
    float e = x >= 0.0 ? erf_z : -erf_z;
    return 0.5 * x * (1.0 + e);
}

// pow as C and torch define it: a negative base with an integer exponent
// keeps the sign of its odd powers (GLSL's pow is undefined below 0);
// squares and square roots exactly
float power(float x, float y) {
    if (y == 0.0) return 1.0;
    if (y == 1.0) return x;
    if (y == 2.0) return x * x;
    if (y == 0.5 && x >= 0.0) return sqrt(x);
    float m = x == 0.0 ? (y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u)) : pow(abs(x), y);
    if (x >= 0.0) return m;
    if (trunc(y) != y) return uintBitsToFloat(0x7fc00000u);
    return mod(y, 2.0) == 1.0 ? -m : m;
}

void main() {
    uint i = invocation();
    if (i >= u[0]) return;
    uint rank = u[1], op = OP, nin = u[3];
    uint rem = i, o = u[16], a = u[23], b = u[30], c = u[37];
    for (int d = int(rank) - 1; d >= 0; d--) {
        uint size = u[4 + d];
        uint k = rem % size;
        rem /= size;
        o += k * u[10 + d];
        a += k * u[17 + d];
        b += k * u[24 + d];
        c += k * u[31 + d];
    }
    float f0 = pf(38u), f1 = pf(39u);
    float x = nin > 0u ? ld1(a) : 0.0;
    float y = nin > 1u ? ld2(b) : f0;
    float r;
    switch (op) {
    case COPY: r = x; break;
    case RELU: r = max(x, 0.0); break;
    case GELU: r = gelu_erf(x); break;
    case GELU_TANH: {
        float inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
        r = 0.5 * x * (1.0 + tanh(clamp(inner, -15.0, 15.0)));
        break;
    }
    case CLAMP: r = min(max(x, f0), f1); break;
    case HARDSWISH: r = x * min(max(x + 3.0, 0.0), 6.0) / 6.0; break;
    case SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
    case TANH: r = tanh(clamp(x, -15.0, 15.0)); break;
    case EXP: r = exp(x); break;
    case NEG: r = -x; break;
    case ABS: r = abs(x); break;
    case SQRT: r = sqrt(x); break;
    case RSQRT: r = inversesqrt(x); break;
    case NOT: r = x == 0.0 ? 1.0 : 0.0; break;
    case FILL: r = f0; break;
    case ARANGE: r = f0 + float(i) * f1; break;
    case LOG: r = log(x); break;
    case SIN: r = sin(x); break;
    case COS: r = cos(x); break;
    case TRUNC: r = trunc(x); break;
    case ADD: r = x + f1 * y; break;
    case SUB: r = x - f1 * y; break;
    case MUL: r = x * y; break;
    case DIV: r = x / y; break;
    case EQ: r = x == y ? 1.0 : 0.0; break;
    case NE: r = x != y ? 1.0 : 0.0; break;
    case LT: r = x < y ? 1.0 : 0.0; break;
    case LE: r = x <= y ? 1.0 : 0.0; break;
    case GT: r = x > y ? 1.0 : 0.0; break;
    case GE: r = x >= y ? 1.0 : 0.0; break;
    case AND: r = (x != 0.0 && y != 0.0) ? 1.0 : 0.0; break;
    case OR: r = (x != 0.0 || y != 0.0) ? 1.0 : 0.0; break;
    case MAX: r = max(x, y); break;
    case MIN: r = min(x, y); break;
    case POW: r = power(x, y); break;
    case WHERE: r = x != 0.0 ? y : ld3(c); break;
    default: r = 0.0; break;
    }
    st0(o, r);
}
