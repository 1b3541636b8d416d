/*
 * CPU feature detection and the instruction-set level in use (see cpu.h).
 */
#include "cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define EKO_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

typedef struct cpu_info {
    bool probed;
    bool level[EKO_ISA_COUNT];
    bool vnni;
    bool avxvnni;
    bool dotprod;
} cpu_info;

static cpu_info g_cpu;
static int g_active = -1; /* -1: not chosen yet */
static bool g_hide_dot_ext; /* test hook: pretend the CPU lacks VNNI / DOTPROD */

#ifdef EKO_X86
/* XCR0: which register states the OS saves on a context switch. */
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static void probe(void) {
    if (g_cpu.probed) return;
    memset(&g_cpu, 0, sizeof g_cpu);
    g_cpu.level[EKO_ISA_SCALAR] = true;
#ifdef EKO_X86
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
        uint64_t xcr0 = osxsave ? xgetbv0() : 0;
        bool ymm = (xcr0 & 0x6) == 0x6;            /* SSE + AVX state */
        bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;   /* opmask + ZMM_Hi256 + Hi16_ZMM */
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            bool avx2 = (b >> 5) & 1;
            bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
            g_cpu.level[EKO_ISA_AVX2] = ymm && avx && avx2 && fma && f16c;
            g_cpu.level[EKO_ISA_AVX512] = g_cpu.level[EKO_ISA_AVX2] && zmm && f && dq && bw && vl;
            g_cpu.vnni = g_cpu.level[EKO_ISA_AVX512] && ((c >> 11) & 1);
        }
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
            g_cpu.avxvnni = g_cpu.level[EKO_ISA_AVX2] && ((a >> 4) & 1); /* AVX-VNNI */
    }
#endif
#if defined(__aarch64__)
    g_cpu.level[EKO_ISA_NEON] = true; /* Advanced SIMD is part of AArch64 */
#if defined(__linux__)
    g_cpu.dotprod = (getauxval(AT_HWCAP) >> 20) & 1; /* HWCAP_ASIMDDP */
#endif
#endif
    /* A level the build did not compile kernels for does not count. */
#ifndef EMBER_HAVE_AVX2_KERNELS
    g_cpu.level[EKO_ISA_AVX2] = false;
#endif
#ifndef EMBER_HAVE_AVX512_KERNELS
    g_cpu.level[EKO_ISA_AVX512] = false;
#endif
#ifndef EMBER_HAVE_AVX512VNNI_KERNELS
    g_cpu.vnni = false;
#endif
#ifndef EMBER_HAVE_AVX2VNNI_KERNELS
    g_cpu.avxvnni = false;
#endif
#ifndef EMBER_HAVE_NEONDOT_KERNELS
    g_cpu.dotprod = false;
#endif
#ifndef EMBER_HAVE_NEON_KERNELS
    g_cpu.level[EKO_ISA_NEON] = false;
#endif
    g_cpu.probed = true;
}

bool eko_isa_supported(eko_isa isa) {
    probe();
    return (unsigned)isa < EKO_ISA_COUNT && g_cpu.level[isa];
}

const char *eko_isa_name(eko_isa isa) {
    switch (isa) {
    case EKO_ISA_SCALAR: return "scalar";
    case EKO_ISA_AVX2: return "avx2";
    case EKO_ISA_AVX512: return "avx512";
    case EKO_ISA_NEON: return "neon";
    }
    return "?";
}

static eko_isa best(void) {
    static const eko_isa order[] = {EKO_ISA_AVX512, EKO_ISA_NEON, EKO_ISA_AVX2};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (eko_isa_supported(order[i])) return order[i];
    return EKO_ISA_SCALAR;
}

eko_isa eko_isa_active(void) {
    if (g_active < 0) {
        eko_isa isa = best();
        const char *env = getenv("EMBER_ISA");
        for (int i = 0; env != NULL && i < EKO_ISA_COUNT; i++)
            if (strcmp(env, eko_isa_name((eko_isa)i)) == 0 && eko_isa_supported((eko_isa)i))
                isa = (eko_isa)i;
        g_active = (int)isa;
    }
    return (eko_isa)g_active;
}

bool eko_isa_set(eko_isa isa) {
    if (!eko_isa_supported(isa)) return false;
    g_active = (int)isa;
    return true;
}

bool eko_cpu_has_vnni(void) {
    probe();
    return g_cpu.vnni && !g_hide_dot_ext;
}

bool eko_cpu_has_avxvnni(void) {
    probe();
    return g_cpu.avxvnni && !g_hide_dot_ext;
}

void eko_cpu_hide_dot_ext(bool hide) { g_hide_dot_ext = hide; }

bool eko_cpu_has_dotprod(void) {
    probe();
    return g_cpu.dotprod && !g_hide_dot_ext;
}
