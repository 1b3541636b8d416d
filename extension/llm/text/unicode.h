/*
 * extension/llm/text/unicode.h — the Unicode layer of the tokenizers: UTF-8,
 * general categories and the classes regular expressions use, case mapping,
 * normalization (NFC, NFD, NFKC, NFKD) and lowercasing.
 *
 * The tables follow Unicode 14.0.0 (ember_unicode_version()), generated from
 * Python 3.11's unicodedata by gen_unicode_data.py.
 *
 * Invalid UTF-8. Text comes from outside and may hold any bytes. The decoder
 * reads an invalid or truncated sequence (overlong forms, surrogates, values
 * above U+10FFFF, stray continuation bytes included) as one "invalid" unit of
 * exactly one byte, reported as EMBER_UNICODE_INVALID_BASE + the byte, a value
 * above every code point. The next unit starts at the following byte, so
 * every byte of the text belongs to exactly one unit, and the units are the
 * same whether the text is read forward or backward. Invalid units have no
 * properties: category Cn from ember_unicode_category() but no category
 * mask, not White_Space, not a word character; case mapping leaves them
 * alone, and normalization and lowercasing copy their byte through unchanged
 * (they never combine with their neighbours).
 *
 * Character classes. \s, \d and \w are those of Oniguruma's Unicode mode, the
 * engine the Hugging Face tokenizers library runs its patterns with:
 *   \s  White_Space: U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
 *       U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 — the same set
 *       as Rust's regex (tiktoken) and Python's regex module.
 *   \d  general category Nd — the same in all three.
 *   \w  Alphabetic, marks, Nd and Pc (ember_unicode_is_word()). That is
 *       Oniguruma's \w inside a class; outside classes (and for \b)
 *       Oniguruma also counts U+00B2 U+00B3 U+00B9 U+00BC..U+00BE, which its
 *       Latin-1 table marks as word characters — the regex engine reproduces
 *       both. Rust's regex and Python's regex module use one set: this one
 *       plus U+200C and U+200D (Join_Control).
 *
 * Case. Simple mappings are one code point to one; the full lowercase adds
 * the unconditional SpecialCasing.txt entries (U+0130 becomes "i" U+0307; no
 * context, so capital sigma is always small sigma U+03C3). Simple case
 * folding is CaseFolding.txt's statuses C and S (no Turkic T entries).
 *
 * This module allocates only in the functions that return a new string.
 * Everything here is thread-safe (the tables are constant).
 */
#ifndef EMBER_LLM_TEXT_UNICODE_H
#define EMBER_LLM_TEXT_UNICODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest code point. */
#define EMBER_UNICODE_MAX 0x10FFFFu

/** An invalid byte b decodes to EMBER_UNICODE_INVALID_BASE + b. */
#define EMBER_UNICODE_INVALID_BASE 0x110000u

/** True when a decoded value stands for an invalid byte. */
#define EMBER_UNICODE_IS_INVALID(cp) ((cp) >= EMBER_UNICODE_INVALID_BASE)

/** The Unicode version of the tables, "14.0.0". */
const char *ember_unicode_version(void);

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

/**
 * Decodes the unit at the start of s.
 *
 * @param[in]  s   bytes; may be NULL when n is 0
 * @param[in]  n   number of bytes available
 * @param[out] cp  the code point, or EMBER_UNICODE_INVALID_BASE + s[0] when
 *                 the bytes are not a valid, complete UTF-8 sequence
 * @return bytes consumed: 1..4 for a code point, 1 for an invalid byte,
 *         0 only when n is 0 (cp untouched). Never allocates.
 */
size_t ember_utf8_decode(const char *s, size_t n, uint32_t *cp);

/**
 * Decodes the unit that ends at s[end] (exclusive): the one a forward
 * decode from the start of the text would produce there.
 *
 * @param[in]  s    the text
 * @param[in]  end  offset just past the unit, 1..length of the text
 * @param[out] cp   as ember_utf8_decode()
 * @return its length in bytes (1..4); 0 when end is 0. Never allocates.
 */
size_t ember_utf8_decode_last(const char *s, size_t end, uint32_t *cp);

/**
 * Encodes a code point as UTF-8.
 *
 * @param[in]  cp   a Unicode scalar value (not a surrogate, at most U+10FFFF)
 * @param[out] out  room for 4 bytes
 * @return bytes written (1..4), or 0 if cp is not a scalar value.
 */
size_t ember_utf8_encode(uint32_t cp, char out[4]);

/**
 * Whether s[0..n) is entirely valid UTF-8 (no invalid unit).
 * Never allocates.
 */
bool ember_utf8_valid(const char *s, size_t n);

/* ------------------------------------------------------------------------ */
/* Properties                                                                */
/* ------------------------------------------------------------------------ */

/** The 30 general categories (Cn first: unassigned code points). */
typedef enum ember_general_category {
    EMBER_UC_CN = 0,
    EMBER_UC_LU, EMBER_UC_LL, EMBER_UC_LT, EMBER_UC_LM, EMBER_UC_LO,
    EMBER_UC_MN, EMBER_UC_MC, EMBER_UC_ME,
    EMBER_UC_ND, EMBER_UC_NL, EMBER_UC_NO,
    EMBER_UC_PC, EMBER_UC_PD, EMBER_UC_PS, EMBER_UC_PE, EMBER_UC_PI, EMBER_UC_PF, EMBER_UC_PO,
    EMBER_UC_SM, EMBER_UC_SC, EMBER_UC_SK, EMBER_UC_SO,
    EMBER_UC_ZS, EMBER_UC_ZL, EMBER_UC_ZP,
    EMBER_UC_CC, EMBER_UC_CF, EMBER_UC_CS, EMBER_UC_CO,
    EMBER_UC_COUNT
} ember_general_category;

/** Bit of one category in a category mask. */
#define EMBER_UC_BIT(cat) (1u << (cat))

/** Masks of the major classes (\p{L}, \p{M}, ...). */
#define EMBER_UC_MASK_L                                                                           \
    (EMBER_UC_BIT(EMBER_UC_LU) | EMBER_UC_BIT(EMBER_UC_LL) | EMBER_UC_BIT(EMBER_UC_LT) |          \
     EMBER_UC_BIT(EMBER_UC_LM) | EMBER_UC_BIT(EMBER_UC_LO))
#define EMBER_UC_MASK_LC                                                                          \
    (EMBER_UC_BIT(EMBER_UC_LU) | EMBER_UC_BIT(EMBER_UC_LL) | EMBER_UC_BIT(EMBER_UC_LT))
#define EMBER_UC_MASK_M                                                                           \
    (EMBER_UC_BIT(EMBER_UC_MN) | EMBER_UC_BIT(EMBER_UC_MC) | EMBER_UC_BIT(EMBER_UC_ME))
#define EMBER_UC_MASK_N                                                                           \
    (EMBER_UC_BIT(EMBER_UC_ND) | EMBER_UC_BIT(EMBER_UC_NL) | EMBER_UC_BIT(EMBER_UC_NO))
#define EMBER_UC_MASK_P                                                                           \
    (EMBER_UC_BIT(EMBER_UC_PC) | EMBER_UC_BIT(EMBER_UC_PD) | EMBER_UC_BIT(EMBER_UC_PS) |          \
     EMBER_UC_BIT(EMBER_UC_PE) | EMBER_UC_BIT(EMBER_UC_PI) | EMBER_UC_BIT(EMBER_UC_PF) |          \
     EMBER_UC_BIT(EMBER_UC_PO))
#define EMBER_UC_MASK_S                                                                           \
    (EMBER_UC_BIT(EMBER_UC_SM) | EMBER_UC_BIT(EMBER_UC_SC) | EMBER_UC_BIT(EMBER_UC_SK) |          \
     EMBER_UC_BIT(EMBER_UC_SO))
#define EMBER_UC_MASK_Z                                                                           \
    (EMBER_UC_BIT(EMBER_UC_ZS) | EMBER_UC_BIT(EMBER_UC_ZL) | EMBER_UC_BIT(EMBER_UC_ZP))
#define EMBER_UC_MASK_C                                                                           \
    (EMBER_UC_BIT(EMBER_UC_CN) | EMBER_UC_BIT(EMBER_UC_CC) | EMBER_UC_BIT(EMBER_UC_CF) |          \
     EMBER_UC_BIT(EMBER_UC_CS) | EMBER_UC_BIT(EMBER_UC_CO))

/**
 * General category of a code point. Values above U+10FFFF (invalid units
 * included) give EMBER_UC_CN. Never allocates.
 */
ember_general_category ember_unicode_category(uint32_t cp);

/** Two-letter name of a category ("Lu", ...); "??" when out of range. */
const char *ember_unicode_category_name(ember_general_category cat);

/**
 * Looks up a category or major class by name, as \p{...} writes it: the
 * short names ("L", "Lu", "LC", "L&", "Nd", ...) and the long ones
 * ("Letter", "Uppercase_Letter", "Cased_Letter", "Decimal_Number", ...),
 * compared ignoring case, spaces, '_' and '-'.
 *
 * @param[in]  name  the name, len bytes (not NUL-terminated)
 * @param[in]  len   its length
 * @param[out] mask  the category mask (EMBER_UC_BIT of each member)
 * @return true when the name is known. Never allocates.
 */
bool ember_unicode_category_lookup(const char *name, size_t len, uint32_t *mask);

/** Property bits of ember_unicode_props(), above the category in bits 0..4. */
#define EMBER_UNICODE_PROP_CATEGORY 0x1Fu   /**< mask of the category */
#define EMBER_UNICODE_PROP_WHITE_SPACE 0x100u /**< White_Space (= \s) */
#define EMBER_UNICODE_PROP_WORD 0x200u       /**< ember_unicode_is_word() */

/**
 * Category and property bits of a code point in one lookup (for matchers
 * that test several classes). Invalid units and values above U+10FFFF: 0
 * with no bits — callers that must tell them from Cn test
 * EMBER_UNICODE_IS_INVALID first. Never allocates.
 */
uint32_t ember_unicode_props(uint32_t cp);

/** Whether cp's category is in mask (false for invalid units). */
bool ember_unicode_in_categories(uint32_t cp, uint32_t mask);

/** White_Space property, which is also \s. */
bool ember_unicode_is_white_space(uint32_t cp);

/** \d: general category Nd. */
bool ember_unicode_is_digit(uint32_t cp);

/** Word character: Alphabetic, Mark, Nd or Pc (see \w at the top of this file). */
bool ember_unicode_is_word(uint32_t cp);

/** Canonical combining class (0 for starters and invalid units). */
uint8_t ember_unicode_combining_class(uint32_t cp);

/* ------------------------------------------------------------------------ */
/* Case                                                                      */
/* ------------------------------------------------------------------------ */

/** Simple lowercase mapping (UnicodeData.txt); cp itself when it has none. */
uint32_t ember_unicode_simple_lower(uint32_t cp);

/** Simple uppercase mapping (UnicodeData.txt); cp itself when it has none. */
uint32_t ember_unicode_simple_upper(uint32_t cp);

/** Simple case folding (CaseFolding.txt C and S); cp itself when it has none. */
uint32_t ember_unicode_simple_fold(uint32_t cp);

/** Most code points a full lowercase mapping produces. */
#define EMBER_UNICODE_MAX_FULL_LOWER 3

/**
 * Full lowercase of one code point: the unconditional SpecialCasing.txt
 * mapping when there is one (U+0130 -> U+0069 U+0307), else the simple one.
 *
 * @param[in]  cp   code point (an invalid unit maps to itself)
 * @param[out] out  room for EMBER_UNICODE_MAX_FULL_LOWER code points
 * @return the number written, 1..EMBER_UNICODE_MAX_FULL_LOWER.
 */
size_t ember_unicode_full_lower(uint32_t cp, uint32_t out[EMBER_UNICODE_MAX_FULL_LOWER]);

/** Most code points that share one simple case folding (Unicode 14: 4). */
#define EMBER_UNICODE_MAX_CASE_EQUIVALENTS 4

/**
 * Every code point whose simple case folding equals cp's (cp included,
 * first): what case-insensitive matching treats as the same character,
 * e.g. k, K and U+212A KELVIN SIGN.
 *
 * @param[in]  cp   code point (an invalid unit gives only itself)
 * @param[out] out  room for EMBER_UNICODE_MAX_CASE_EQUIVALENTS code points
 * @return the number written, 1..EMBER_UNICODE_MAX_CASE_EQUIVALENTS.
 */
size_t ember_unicode_case_equivalents(uint32_t cp,
                                      uint32_t out[EMBER_UNICODE_MAX_CASE_EQUIVALENTS]);

/* ------------------------------------------------------------------------ */
/* Whole strings                                                             */
/* ------------------------------------------------------------------------ */

/** Normalization forms (UAX #15). */
typedef enum ember_unicode_form {
    EMBER_UNICODE_NFC = 0,
    EMBER_UNICODE_NFD = 1,
    EMBER_UNICODE_NFKC = 2,
    EMBER_UNICODE_NFKD = 3
} ember_unicode_form;

/**
 * Normalizes UTF-8 text into a new buffer: full decomposition (canonical,
 * or compatibility for the K forms; Hangul syllables algorithmically),
 * canonical ordering, and for NFC / NFKC canonical composition (composition
 * exclusions respected, Hangul composed algorithmically). Invalid bytes are
 * copied through unchanged and block composition across them.
 *
 * @param[in]  form     the normalization form
 * @param[in]  text     the text, len bytes (may hold NUL bytes; may be NULL
 *                      when len is 0)
 * @param[in]  len      its length
 * @param[out] out      the result, allocated with malloc and NUL-terminated
 *                      (the terminator is not counted); the caller frees it
 *                      with free(). Untouched on failure.
 * @param[out] out_len  its length in bytes
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, an unknown
 *         form); EMBER_ERR_OUT_OF_MEMORY (including sizes that overflow).
 * Allocates the result and scratch memory. Thread-safe.
 */
ember_status ember_unicode_normalize(ember_unicode_form form, const char *text, size_t len,
                                     char **out, size_t *out_len);

/**
 * Lowercases UTF-8 text into a new buffer, one code point at a time with
 * the full lowercase mapping (ember_unicode_full_lower()): what Hugging
 * Face's Lowercase normalizer does (Rust's char::to_lowercase, so no
 * final-sigma rule: "ΟΔΟΣ" becomes "οδοσ", where Python's str.lower() gives
 * "οδος"). Invalid bytes are copied through.
 *
 * @param[in]  text     the text, len bytes (may be NULL when len is 0)
 * @param[in]  len      its length
 * @param[out] out      the result (malloc, NUL-terminated, caller frees);
 *                      untouched on failure
 * @param[out] out_len  its length in bytes
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument);
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates the result. Thread-safe.
 */
ember_status ember_unicode_lowercase(const char *text, size_t len, char **out, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_TEXT_UNICODE_H */
