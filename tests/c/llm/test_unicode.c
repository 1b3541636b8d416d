/*
 * Tests of the Unicode layer (extension/llm/text/unicode.h): UTF-8 decoding
 * with its one-byte rule for invalid sequences (forward and backward agree),
 * encoding, general categories and the classes the regex engine uses, case
 * mappings and case-equivalence sets, normalization (NFD, NFC, NFKD, NFKC:
 * ordering, composition, exclusions, Hangul, invalid bytes, hostile runs of
 * combining marks) and lowercasing. The comparison with Python's
 * unicodedata over every code point is tests/python/test_llm_unicode.py.
 *
 * Harness modes (used by that test):
 *   test_unicode --props
 *       one line per code point 0..10FFFF: "cat lower upper fold ccc ws word"
 *       (category name, the mappings in hex, the combining class, 0/1 flags)
 *   test_unicode --nfc | --nfd | --nfkc | --nfkd | --lower
 *       reads records "<length>\n<bytes>\n" from stdin and writes each result
 *       the same way to stdout
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "text/unicode.h"

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

/* Decoding s must give the units (cp, length) listed in want. */
static void check_units(const char *s, size_t n, const uint32_t *want_cp, const size_t *want_len,
                        size_t count) {
    size_t i = 0, k = 0;
    bool ok = true;
    while (i < n) {
        uint32_t cp;
        size_t l = ember_utf8_decode(s + i, n - i, &cp);
        if (k >= count || cp != want_cp[k] || l != want_len[k]) ok = false;
        i += l;
        k++;
    }
    CHECK_MSG(ok && k == count, "decoding %zu bytes gave %zu units", n, k);
}

#define UNITS(s, ...)                                                                             \
    do {                                                                                          \
        const uint32_t cps_[] = {__VA_ARGS__};                                                    \
        size_t lens_[sizeof cps_ / sizeof cps_[0]];                                               \
        for (size_t q_ = 0; q_ < sizeof cps_ / sizeof cps_[0]; q_++) {                           \
            char b_[4];                                                                           \
            size_t e_ = ember_utf8_encode(cps_[q_], b_);                                          \
            lens_[q_] = EMBER_UNICODE_IS_INVALID(cps_[q_]) ? 1 : e_;                              \
        }                                                                                         \
        check_units(s, sizeof(s) - 1, cps_, lens_, sizeof cps_ / sizeof cps_[0]);                 \
    } while (0)

#define BAD(b) (EMBER_UNICODE_INVALID_BASE + (b))

static void test_utf8_decode(void) {
    check_section("UTF-8 decoding");
    UNITS("a\x7F", 'a', 0x7F);
    UNITS("\xC2\x80\xDF\xBF", 0x80, 0x7FF);
    UNITS("\xE0\xA0\x80\xEF\xBF\xBF", 0x800, 0xFFFF);
    UNITS("\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", 0x10000, 0x10FFFF);
    UNITS("\xE2\x82\xAC", 0x20AC);
    /* Overlong forms, surrogates, values above U+10FFFF, bytes that never
     * occur, stray continuation bytes: one invalid unit per byte. */
    UNITS("\xC0\x80", BAD(0xC0), BAD(0x80));
    UNITS("\xC1\xBF", BAD(0xC1), BAD(0xBF));
    UNITS("\xE0\x80\x80", BAD(0xE0), BAD(0x80), BAD(0x80));
    UNITS("\xE0\x9F\xBF", BAD(0xE0), BAD(0x9F), BAD(0xBF));
    UNITS("\xF0\x80\x80\x80", BAD(0xF0), BAD(0x80), BAD(0x80), BAD(0x80));
    UNITS("\xED\xA0\x80", BAD(0xED), BAD(0xA0), BAD(0x80));
    UNITS("\xED\x9F\xBF", 0xD7FF);
    UNITS("\xF4\x90\x80\x80", BAD(0xF4), BAD(0x90), BAD(0x80), BAD(0x80));
    UNITS("\xF5\x80\xFF\xFE", BAD(0xF5), BAD(0x80), BAD(0xFF), BAD(0xFE));
    UNITS("\x80" "a", BAD(0x80), 'a');
    /* Truncated sequences: the lead byte alone, then what follows. */
    UNITS("\xE2\x82" "a", BAD(0xE2), BAD(0x82), 'a');
    UNITS("\xF0\x9F\x98", BAD(0xF0), BAD(0x9F), BAD(0x98));
    UNITS("\xC3", BAD(0xC3));
    UNITS("\xE2\xF0\x9F\x98\x80", BAD(0xE2), 0x1F600);
    uint32_t cp = 7;
    CHECK_EQ_INT(ember_utf8_decode(NULL, 0, &cp), 0);
    CHECK_EQ_INT(cp, 7);
    CHECK(EMBER_UNICODE_IS_INVALID(BAD(0)));
    CHECK(!EMBER_UNICODE_IS_INVALID(EMBER_UNICODE_MAX));
}

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static void test_utf8_backward(void) {
    check_section("UTF-8: backward decoding agrees with forward decoding");
    /* Random strings biased toward the bytes that make sequences. */
    static const unsigned char pool[] = {'a', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2,
                                         0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
    bool ok = true;
    for (int iter = 0; iter < 20000 && ok; iter++) {
        char s[12];
        size_t n = 1 + rng_next() % sizeof s;
        for (size_t i = 0; i < n; i++) s[i] = (char)pool[rng_next() % sizeof pool];
        size_t bounds[16], cps_[16], nb = 0;
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            size_t l = ember_utf8_decode(s + i, n - i, &cp);
            cps_[nb] = cp;
            i += l;
            bounds[nb++] = i;
        }
        size_t end = n;
        for (size_t k = nb; k-- > 0;) {
            uint32_t cp;
            size_t l = ember_utf8_decode_last(s, end, &cp);
            if (end != bounds[k] || cp != cps_[k]) ok = false;
            end -= l;
        }
        if (end != 0) ok = false;
    }
    CHECK(ok);
    uint32_t cp = 9;
    CHECK_EQ_INT(ember_utf8_decode_last("a", 0, &cp), 0);
    CHECK_EQ_INT(ember_utf8_decode_last("\xE2\x82\xAC", 3, &cp), 3);
    CHECK_EQ_INT(cp, 0x20AC);
    CHECK_EQ_INT(ember_utf8_decode_last("\xE2\x82\xAC\xAC", 4, &cp), 1);
    CHECK_EQ_INT(cp, BAD(0xAC));
}

static void test_utf8_encode(void) {
    check_section("UTF-8 encoding");
    bool ok = true;
    for (uint32_t cp = 0; cp <= EMBER_UNICODE_MAX; cp++) {
        char b[4];
        size_t n = ember_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            if (n != 0) ok = false;
            continue;
        }
        uint32_t back;
        if (n == 0 || ember_utf8_decode(b, n, &back) != n || back != cp) ok = false;
    }
    CHECK_MSG(ok, "every scalar value round-trips");
    char b[4];
    CHECK_EQ_INT(ember_utf8_encode(0x110000, b), 0);
    CHECK_EQ_INT(ember_utf8_encode(BAD(0x80), b), 0);
    CHECK(ember_utf8_valid("", 0));
    CHECK(ember_utf8_valid("h\xC3\xA9llo \xF0\x9F\x98\x80", 11));
    CHECK(!ember_utf8_valid("h\xC3", 2));
    CHECK(!ember_utf8_valid("\xED\xA0\x80", 3));
}

/* ------------------------------------------------------------------------ */
/* Properties                                                                */
/* ------------------------------------------------------------------------ */

static void check_cat(uint32_t cp, const char *want) {
    CHECK_MSG(strcmp(ember_unicode_category_name(ember_unicode_category(cp)), want) == 0,
              "U+%04X is %s, want %s", (unsigned)cp,
              ember_unicode_category_name(ember_unicode_category(cp)), want);
}

static void test_categories(void) {
    check_section("general categories");
    check_cat('A', "Lu");
    check_cat('z', "Ll");
    check_cat(0x01C5, "Lt");
    check_cat(0x02B0, "Lm");
    check_cat(0x65E5, "Lo");
    check_cat(0x0301, "Mn");
    check_cat(0x0903, "Mc");
    check_cat(0x20DD, "Me");
    check_cat('7', "Nd");
    check_cat(0x216B, "Nl");
    check_cat(0x00BD, "No");
    check_cat('_', "Pc");
    check_cat('-', "Pd");
    check_cat('(', "Ps");
    check_cat(')', "Pe");
    check_cat(0x00AB, "Pi");
    check_cat(0x00BB, "Pf");
    check_cat('!', "Po");
    check_cat('+', "Sm");
    check_cat('$', "Sc");
    check_cat('^', "Sk");
    check_cat(0x00A9, "So");
    check_cat(' ', "Zs");
    check_cat(0x2028, "Zl");
    check_cat(0x2029, "Zp");
    check_cat(0x0001, "Cc");
    check_cat(0x200B, "Cf");
    check_cat(0xD800, "Cs");
    check_cat(0xE000, "Co");
    check_cat(0x0378, "Cn");
    check_cat(0x10FFFF, "Cn");
    check_cat(0x1FAF6, "So"); /* added in Unicode 14 */
    check_cat(0x1FAF7, "Cn"); /* added in Unicode 15 */
    check_cat(BAD(0xFF), "Cn");
    CHECK_EQ_STR(ember_unicode_version(), "14.0.0");
    CHECK_EQ_STR(ember_unicode_category_name((ember_general_category)99), "??");

    uint32_t counts[EMBER_UC_COUNT] = {0};
    for (uint32_t cp = 0; cp <= EMBER_UNICODE_MAX; cp++) counts[ember_unicode_category(cp)]++;
    bool all = true;
    for (int c = 0; c < EMBER_UC_COUNT; c++) all = all && counts[c] > 0;
    CHECK_MSG(all, "every category occurs");
    CHECK_EQ_INT(counts[EMBER_UC_CS], 2048);
    CHECK_EQ_INT(counts[EMBER_UC_CO], 137468);
    CHECK_EQ_INT(counts[EMBER_UC_LT], 31);

    check_section("category names");
    uint32_t mask = 0;
    CHECK(ember_unicode_category_lookup("L", 1, &mask) && mask == EMBER_UC_MASK_L);
    CHECK(ember_unicode_category_lookup("Lu", 2, &mask) && mask == EMBER_UC_BIT(EMBER_UC_LU));
    CHECK(ember_unicode_category_lookup("uppercase_letter", 16, &mask) &&
          mask == EMBER_UC_BIT(EMBER_UC_LU));
    CHECK(ember_unicode_category_lookup("Decimal Number", 14, &mask) &&
          mask == EMBER_UC_BIT(EMBER_UC_ND));
    CHECK(ember_unicode_category_lookup("L&", 2, &mask) && mask == EMBER_UC_MASK_LC);
    CHECK(ember_unicode_category_lookup("P", 1, &mask) && mask == EMBER_UC_MASK_P);
    CHECK(ember_unicode_category_lookup("Cn", 2, &mask) && mask == EMBER_UC_BIT(EMBER_UC_CN));
    CHECK(!ember_unicode_category_lookup("Han", 3, &mask));
    CHECK(!ember_unicode_category_lookup("Lx", 2, &mask));
    CHECK(!ember_unicode_category_lookup("", 0, &mask));
    CHECK(!ember_unicode_category_lookup("a_very_long_name_that_is_not_a_category", 39, &mask));
}

static void test_classes(void) {
    check_section("White_Space, \\d, \\w and category masks");
    static const uint32_t ws[] = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
                                  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                  0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F,
                                  0x205F, 0x3000};
    size_t n_ws = 0;
    bool listed = true;
    for (uint32_t cp = 0; cp <= EMBER_UNICODE_MAX; cp++) {
        if (!ember_unicode_is_white_space(cp)) continue;
        if (n_ws >= sizeof ws / sizeof ws[0] || ws[n_ws] != cp) listed = false;
        n_ws++;
    }
    CHECK_MSG(listed && n_ws == sizeof ws / sizeof ws[0], "%zu White_Space code points", n_ws);
    CHECK(!ember_unicode_is_white_space(0x180E));
    CHECK(!ember_unicode_is_white_space(0x200B));
    CHECK(!ember_unicode_is_white_space(0x1C));
    CHECK(!ember_unicode_is_white_space(BAD(0x20)));
    CHECK(ember_unicode_is_digit('0') && ember_unicode_is_digit(0x0663));
    CHECK(!ember_unicode_is_digit(0x00BD) && !ember_unicode_is_digit(0x216B));
    CHECK(ember_unicode_is_word('a') && ember_unicode_is_word('_') && ember_unicode_is_word('9'));
    CHECK(ember_unicode_is_word(0x0301) && ember_unicode_is_word(0x216B));
    CHECK(ember_unicode_is_word(0x24D0)); /* circled small a: Other_Alphabetic */
    CHECK(ember_unicode_is_word(0x1F170));
    CHECK(!ember_unicode_is_word(0x00B2)); /* Oniguruma's Latin-1 quirk lives in the regex */
    CHECK(!ember_unicode_is_word(0x200D));
    CHECK(!ember_unicode_is_word(0x00BD) && !ember_unicode_is_word('-'));
    CHECK(!ember_unicode_is_word(BAD('a')));
    CHECK(ember_unicode_in_categories('a', EMBER_UC_MASK_L));
    CHECK(!ember_unicode_in_categories('a', EMBER_UC_MASK_N));
    CHECK(ember_unicode_in_categories(0x0378, EMBER_UC_MASK_C));
    CHECK(!ember_unicode_in_categories(BAD(0x80), EMBER_UC_MASK_C));
    uint32_t p = ember_unicode_props(' ');
    CHECK((p & EMBER_UNICODE_PROP_CATEGORY) == EMBER_UC_ZS && (p & EMBER_UNICODE_PROP_WHITE_SPACE));
    p = ember_unicode_props(0x00E9);
    CHECK((p & EMBER_UNICODE_PROP_CATEGORY) == EMBER_UC_LL && (p & EMBER_UNICODE_PROP_WORD));
    CHECK_EQ_INT(ember_unicode_props(BAD(0x41)), 0);
    CHECK_EQ_INT(ember_unicode_combining_class(0x0301), 230);
    CHECK_EQ_INT(ember_unicode_combining_class(0x0327), 202);
    CHECK_EQ_INT(ember_unicode_combining_class(0x05B0), 10);
    CHECK_EQ_INT(ember_unicode_combining_class('a'), 0);
    CHECK_EQ_INT(ember_unicode_combining_class(BAD(0xCC)), 0);
}

/* ------------------------------------------------------------------------ */
/* Case                                                                      */
/* ------------------------------------------------------------------------ */

static bool same_set(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb; j++) found = found || a[i] == b[j];
        if (!found) return false;
    }
    return true;
}

#define EQUIVALENTS(cp, ...)                                                                      \
    do {                                                                                          \
        const uint32_t want_[] = {__VA_ARGS__};                                                   \
        uint32_t got_[EMBER_UNICODE_MAX_CASE_EQUIVALENTS];                                        \
        size_t n_ = ember_unicode_case_equivalents(cp, got_);                                     \
        CHECK_MSG(got_[0] == (cp) && same_set(got_, n_, want_, sizeof want_ / sizeof want_[0]),   \
                  "case equivalents of U+%04X", (unsigned)(cp));                                  \
    } while (0)

static void test_case(void) {
    check_section("case mappings");
    CHECK_EQ_INT(ember_unicode_simple_lower('A'), 'a');
    CHECK_EQ_INT(ember_unicode_simple_lower('a'), 'a');
    CHECK_EQ_INT(ember_unicode_simple_upper('a'), 'A');
    CHECK_EQ_INT(ember_unicode_simple_lower(0x0130), 'i');
    CHECK_EQ_INT(ember_unicode_simple_upper(0x0131), 'I');
    CHECK_EQ_INT(ember_unicode_simple_upper(0x00DF), 0x00DF);
    CHECK_EQ_INT(ember_unicode_simple_lower(0x1E9E), 0x00DF);
    CHECK_EQ_INT(ember_unicode_simple_upper(0x01C6), 0x01C4);
    CHECK_EQ_INT(ember_unicode_simple_lower(0x01C5), 0x01C6);
    CHECK_EQ_INT(ember_unicode_simple_upper(0x1FB3), 0x1FBC);
    CHECK_EQ_INT(ember_unicode_simple_upper(0x03C2), 0x03A3);
    CHECK_EQ_INT(ember_unicode_simple_lower(0x03A3), 0x03C3);
    CHECK_EQ_INT(ember_unicode_simple_lower(0x10400), 0x10428);
    CHECK_EQ_INT(ember_unicode_simple_lower(BAD(0x41)), BAD(0x41));
    CHECK_EQ_INT(ember_unicode_simple_fold('K'), 'k');
    CHECK_EQ_INT(ember_unicode_simple_fold(0x212A), 'k');
    CHECK_EQ_INT(ember_unicode_simple_fold(0x017F), 's');
    CHECK_EQ_INT(ember_unicode_simple_fold(0x03C2), 0x03C3);
    CHECK_EQ_INT(ember_unicode_simple_fold(0x1E9E), 0x00DF);
    CHECK_EQ_INT(ember_unicode_simple_fold(0x00DF), 0x00DF);
    CHECK_EQ_INT(ember_unicode_simple_fold(0x1F88), 0x1F80);
    CHECK_EQ_INT(ember_unicode_simple_fold(0x0130), 0x0130);
    CHECK_EQ_INT(ember_unicode_simple_fold(0x13F8), 0x13F0);
    uint32_t low[EMBER_UNICODE_MAX_FULL_LOWER];
    CHECK_EQ_INT(ember_unicode_full_lower(0x0130, low), 2);
    CHECK(low[0] == 'i' && low[1] == 0x0307);
    CHECK_EQ_INT(ember_unicode_full_lower(0x03A3, low), 1);
    CHECK_EQ_INT(low[0], 0x03C3);
    CHECK_EQ_INT(ember_unicode_full_lower('Q', low), 1);
    CHECK_EQ_INT(low[0], 'q');
    CHECK_EQ_INT(ember_unicode_full_lower(BAD(0xC3), low), 1);
    CHECK_EQ_INT(low[0], BAD(0xC3));

    check_section("case equivalents");
    EQUIVALENTS('k', 'k', 'K', 0x212A);
    EQUIVALENTS(0x212A, 0x212A, 'k', 'K');
    EQUIVALENTS('s', 's', 'S', 0x017F);
    EQUIVALENTS(0x03B8, 0x03B8, 0x0398, 0x03D1, 0x03F4);
    EQUIVALENTS(0x0345, 0x0345, 0x0399, 0x03B9, 0x1FBE);
    EQUIVALENTS(0x00DF, 0x00DF, 0x1E9E);
    EQUIVALENTS('1', '1');
    EQUIVALENTS(0x0130, 0x0130);
    EQUIVALENTS(BAD('a'), BAD('a'));
    /* Every member of every set folds alike, and the folding is a member. */
    bool ok = true;
    for (uint32_t cp = 0; cp <= EMBER_UNICODE_MAX && ok; cp++) {
        uint32_t eq[EMBER_UNICODE_MAX_CASE_EQUIVALENTS];
        size_t n = ember_unicode_case_equivalents(cp, eq);
        uint32_t f = ember_unicode_simple_fold(cp);
        bool has_fold = false;
        for (size_t i = 0; i < n; i++) {
            if (ember_unicode_simple_fold(eq[i]) != f) ok = false;
            has_fold = has_fold || eq[i] == f;
        }
        if (!has_fold || ember_unicode_simple_fold(f) != f) ok = false;
        if (!ok) printf("  U+%04X breaks the case sets\n", (unsigned)cp);
    }
    CHECK(ok);
}

/* ------------------------------------------------------------------------ */
/* Normalization and lowercase                                               */
/* ------------------------------------------------------------------------ */

static void check_norm(ember_unicode_form form, const char *in, size_t in_len, const char *want,
                       size_t want_len) {
    char *out = NULL;
    size_t n = 0;
    if (!CHECK_OK(ember_unicode_normalize(form, in, in_len, &out, &n))) return;
    bool ok = n == want_len && memcmp(out, want, n) == 0 && out[n] == '\0';
    CHECK_MSG(ok, "form %d of \"%.*s\": got \"%.*s\"", (int)form, (int)in_len, in, (int)n, out);
    free(out);
}

#define NORM(form, in, want) check_norm(form, in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_normalize(void) {
    check_section("normalization");
    const ember_unicode_form C = EMBER_UNICODE_NFC, D = EMBER_UNICODE_NFD,
                             KC = EMBER_UNICODE_NFKC, KD = EMBER_UNICODE_NFKD;
    NORM(C, "", "");
    NORM(D, "plain ascii", "plain ascii");
    NORM(D, "\xC3\xA9", "e\xCC\x81");
    NORM(C, "e\xCC\x81", "\xC3\xA9");
    NORM(C, "\xC3\xA9", "\xC3\xA9");
    /* Hangul: syllable <-> jamo, LV + T composes. */
    NORM(D, "\xED\x95\x9C", "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB");
    NORM(C, "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB", "\xED\x95\x9C");
    NORM(C, "\xEA\xB0\x80\xE1\x86\xA8", "\xEA\xB0\x81");
    NORM(C, "\xE1\x84\x80\xE1\x85\xA1", "\xEA\xB0\x80");
    /* Canonical ordering, then composition in two steps: c + cedilla + acute. */
    NORM(D, "c\xCC\x81\xCC\xA7", "c\xCC\xA7\xCC\x81");
    NORM(C, "c\xCC\x81\xCC\xA7", "\xE1\xB8\x89");
    /* Blocked: a second acute cannot compose past the first. */
    NORM(C, "e\xCC\x81\xCC\x81", "\xC3\xA9\xCC\x81");
    /* Compatibility forms. */
    NORM(KC, "\xEF\xAC\x81", "fi");
    NORM(C, "\xEF\xAC\x81", "\xEF\xAC\x81");
    NORM(KC, "\xE2\x91\xA0", "1");
    NORM(KD, "\xE1\xBA\x9B", "s\xCC\x87");
    NORM(KC, "\xE1\xBA\x9B", "\xE1\xB9\xA1");
    NORM(KC, "\xEF\xBE\x8A\xEF\xBE\x9F", "\xE3\x83\x91");
    NORM(KC, "\xE3\x8C\x80", "\xE3\x82\xA2\xE3\x83\x91\xE3\x83\xBC\xE3\x83\x88");
    /* Singletons and composition exclusions. */
    NORM(C, "\xE2\x84\xAB", "\xC3\x85");
    NORM(C, "\xE2\x84\xA6", "\xCE\xA9");
    NORM(C, "\xE0\xA5\x98", "\xE0\xA4\x95\xE0\xA4\xBC");
    NORM(C, "\xCD\x84", "\xCC\x88\xCC\x81");
    /* Invalid bytes pass through and block composition. */
    NORM(C, "a\xFF" "e\xCC\x81", "a\xFF\xC3\xA9");
    NORM(C, "e\xFF\xCC\x81", "e\xFF\xCC\x81");
    NORM(D, "\xC3\xA9\xE2\x82", "e\xCC\x81\xE2\x82");
    NORM(KC, "\xC0\xAF\xEF\xAC\x81", "\xC0\xAF" "fi");

    check_section("normalization: long runs of combining marks");
    size_t marks = 100000;
    size_t len = 1 + marks * 2;
    char *in = malloc(len);
    if (in != NULL) {
        in[0] = 'a';
        /* Alternating U+0301 (230) and U+0316 (220): NFD sorts all 220s first. */
        for (size_t i = 0; i < marks; i++) {
            in[1 + 2 * i] = (char)0xCC;
            in[2 + 2 * i] = (char)(i % 2 ? 0x96 : 0x81);
        }
        char *out = NULL;
        size_t n = 0;
        if (CHECK_OK(ember_unicode_normalize(D, in, len, &out, &n))) {
            bool sorted = n == len && out[0] == 'a';
            for (size_t i = 0; sorted && i < marks; i++)
                sorted = (unsigned char)out[2 + 2 * i] == (i < marks / 2 ? 0x96 : 0x81);
            CHECK(sorted);
            free(out);
        }
        out = NULL;
        if (CHECK_OK(ember_unicode_normalize(C, in, len, &out, &n))) {
            /* The first acute is not blocked by the class-220 marks before
             * it: a + acute composes to U+00E1, one byte shorter. */
            CHECK(n == len - 1 && (unsigned char)out[0] == 0xC3 && (unsigned char)out[1] == 0xA1);
            free(out);
        }
        free(in);
    }

    check_section("normalization: errors");
    char *out = NULL;
    size_t n = 0;
    CHECK_STATUS(ember_unicode_normalize(C, NULL, 3, &out, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_unicode_normalize(C, "a", 1, NULL, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(ember_unicode_normalize((ember_unicode_form)9, "a", 1, &out, &n),
              EMBER_ERR_INVALID_ARGUMENT, "form");
    CHECK(out == NULL);
    CHECK_OK(ember_unicode_normalize(KD, NULL, 0, &out, &n));
    CHECK(out != NULL && n == 0);
    free(out);
}

static void check_lower(const char *in, size_t in_len, const char *want, size_t want_len) {
    char *out = NULL;
    size_t n = 0;
    if (!CHECK_OK(ember_unicode_lowercase(in, in_len, &out, &n))) return;
    CHECK_MSG(n == want_len && memcmp(out, want, n) == 0 && out[n] == '\0',
              "lowercase of \"%.*s\": got \"%.*s\"", (int)in_len, in, (int)n, out);
    free(out);
}

#define LOWER(in, want) check_lower(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_lowercase(void) {
    check_section("lowercase");
    LOWER("", "");
    LOWER("Hello, WORLD 123", "hello, world 123");
    /* No final-sigma rule: every capital sigma becomes U+03C3. */
    LOWER("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83");
    LOWER("\xC4\xB0", "i\xCC\x87");
    LOWER("\xC3\x89\xC3\x9F\xE1\xBA\x9E", "\xC3\xA9\xC3\x9F\xC3\x9F");
    LOWER("\xC8\xBA", "\xE2\xB1\xA5");
    LOWER("\xF0\x90\x90\x80", "\xF0\x90\x90\xA8");
    LOWER("A\xFF" "B\xC3", "a\xFF" "b\xC3");
    char *out = NULL;
    size_t n = 0;
    CHECK_STATUS(ember_unicode_lowercase(NULL, 1, &out, &n), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_unicode_lowercase("a", 1, &out, NULL), EMBER_ERR_INVALID_ARGUMENT);
    /* Growth: 10000 U+0130 (2 bytes each) become 3 bytes each. */
    size_t count = 10000;
    char *in = malloc(count * 2);
    if (in != NULL) {
        for (size_t i = 0; i < count; i++) in[2 * i] = (char)0xC4, in[2 * i + 1] = (char)0xB0;
        if (CHECK_OK(ember_unicode_lowercase(in, count * 2, &out, &n))) {
            CHECK_EQ_INT(n, count * 3);
            free(out);
        }
        free(in);
    }
}

/* ------------------------------------------------------------------------ */
/* Harness modes                                                             */
/* ------------------------------------------------------------------------ */

static int harness_props(void) {
    for (uint32_t cp = 0; cp <= EMBER_UNICODE_MAX; cp++) {
        printf("%s %X %X %X %u %d %d\n", ember_unicode_category_name(ember_unicode_category(cp)),
               (unsigned)ember_unicode_simple_lower(cp), (unsigned)ember_unicode_simple_upper(cp),
               (unsigned)ember_unicode_simple_fold(cp), (unsigned)ember_unicode_combining_class(cp),
               ember_unicode_is_white_space(cp) ? 1 : 0, ember_unicode_is_word(cp) ? 1 : 0);
    }
    return 0;
}

/* Reads one record "<length>\n<bytes>\n" from stdin; false at the end. */
static bool read_record(char **buf, size_t *cap, size_t *len) {
    unsigned long n;
    if (scanf("%lu", &n) != 1 || getchar() != '\n') return false;
    if (n + 1 > *cap) {
        char *b = realloc(*buf, n + 1);
        if (b == NULL) return false;
        *buf = b;
        *cap = n + 1;
    }
    if (fread(*buf, 1, n, stdin) != n || getchar() != '\n') return false;
    *len = n;
    return true;
}

static int harness_strings(const char *mode) {
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = 0;
    while (read_record(&buf, &cap, &len)) {
        char *out = NULL;
        size_t n = 0;
        ember_status st;
        if (strcmp(mode, "--lower") == 0) {
            st = ember_unicode_lowercase(buf, len, &out, &n);
        } else {
            ember_unicode_form f = strcmp(mode, "--nfc") == 0    ? EMBER_UNICODE_NFC
                                   : strcmp(mode, "--nfd") == 0  ? EMBER_UNICODE_NFD
                                   : strcmp(mode, "--nfkc") == 0 ? EMBER_UNICODE_NFKC
                                                                 : EMBER_UNICODE_NFKD;
            st = ember_unicode_normalize(f, buf, len, &out, &n);
        }
        if (st != EMBER_OK) {
            fprintf(stderr, "%s\n", ember_last_error());
            rc = 1;
            break;
        }
        printf("%zu\n", n);
        fwrite(out, 1, n, stdout);
        printf("\n");
        free(out);
    }
    free(buf);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--props") == 0) return harness_props();
    if (argc > 1 && (strcmp(argv[1], "--nfc") == 0 || strcmp(argv[1], "--nfd") == 0 ||
                     strcmp(argv[1], "--nfkc") == 0 || strcmp(argv[1], "--nfkd") == 0 ||
                     strcmp(argv[1], "--lower") == 0))
        return harness_strings(argv[1]);
    test_utf8_decode();
    test_utf8_backward();
    test_utf8_encode();
    test_categories();
    test_classes();
    test_case();
    test_normalize();
    test_lowercase();
    return check_finish();
}
