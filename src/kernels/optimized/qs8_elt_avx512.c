/*
 * qs8_elt.h compiled for AVX512 (the body, vectorized by the compiler).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

#include "qs8_elt.h"

/* The 256-byte table as sixteen rows of 16, each in every 128-bit lane: a
 * byte's high nibble picks the row (one compare per row, a masked shuffle
 * of the rows that match), its low nibble the entry. 64 bytes per step. */
static void elt_lut_avx512(size_t n, const int8_t *x, const int8_t *table, int8_t *y) {
    __m512i row[16];
    for (int k = 0; k < 16; k++) {
        const __m128i r = _mm_loadu_si128((const __m128i *)(const void *)(table + 16 * k));
        row[k] = _mm512_broadcast_i32x4(r);
    }
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    for (size_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        const __m512i lo = _mm512_and_si512(v, nibble);
        __m512i r = _mm512_setzero_si512();
        for (int k = 0; k < 16; k++)
            r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8((char)k)),
                                         row[k], lo);
        _mm512_mask_storeu_epi8(y + i, m, r);
    }
}
#define QS8_ELT_LUT elt_lut_avx512

#define QS8_ELT_TABLE eko_qs8_elt_avx512
#define QS8_ELT_ISA EKO_ISA_AVX512
#include "qs8_elt_body.h"
#else
typedef int eko_no_avx512_qs8_elt; /* this build has no AVX512 kernels */
#endif
