/*
 * Tests of the regex engine (extension/llm/text/regex.h): every construct
 * the tokenizer split patterns use and the rest of the supported syntax,
 * leftmost-first alternation, greedy / lazy / possessive quantifiers, atomic
 * groups, lookaround, case-insensitive matching by simple folding, anchors
 * under each flag, invalid UTF-8 in the text, empty matches, compile errors
 * (message with offset and construct), refused constructs, the step limit
 * on a pathological pattern, and threads sharing one compiled regex.
 *
 * Harness modes (used by tests/python/test_llm_regex.py):
 *   test_regex --findall PATTERN_FILE INPUT_FILE [--flags N] [--step-limit N]
 *       PATTERN_FILE holds the pattern's bytes; INPUT_FILE holds records
 *       "<length>\n<bytes>\n". For each record one line: the spans of the
 *       find-all loop ("start end" pairs, byte offsets, after an empty match
 *       the next search starts one character later), or "ERR <message>".
 *       A pattern that fails to compile prints "COMPILE_ERR <message>".
 *   test_regex --bench PATTERN_FILE TEXT_FILE [--flags N] [--repeat N]
 *       runs the find-all loop over the whole file and prints MB/s.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "text/regex.h"
#include "text/unicode.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static ember_regex *compile_flags(const char *pat, uint32_t flags) {
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = flags;
    ember_regex *re = NULL;
    ember_status st = ember_regex_compile_ex(pat, strlen(pat), &o, &re);
    CHECK_MSG(st == EMBER_OK, "compiling /%s/: %s", pat, ember_last_error());
    return re;
}

/* Length of the character at pos (1 at an invalid byte). */
static size_t char_len(const char *t, size_t n, size_t pos) {
    uint32_t cp;
    return ember_utf8_decode(t + pos, n - pos, &cp);
}

/* The find-all loop: writes "s-e s-e ..." into out. Returns the status of
 * the first failing search. */
static ember_status find_all(const ember_regex *re, const char *t, size_t n, char *out,
                             size_t cap) {
    size_t pos = 0, o = 0;
    out[0] = '\0';
    while (pos <= n) {
        size_t s, e;
        bool found;
        ember_status st = ember_regex_search(re, t, n, pos, &s, &e, &found);
        if (st != EMBER_OK) return st;
        if (!found) break;
        int w = snprintf(out + o, cap - o, "%s%zu-%zu", o ? " " : "", s, e);
        if (w > 0 && (size_t)w < cap - o) o += (size_t)w;
        if (e > s) {
            pos = e;
        } else {
            if (e >= n) break;
            pos = e + char_len(t, n, e);
        }
    }
    return EMBER_OK;
}

/* Pieces of the find-all loop joined by '|'. */
static void pieces(const ember_regex *re, const char *t, size_t n, char *out, size_t cap) {
    size_t pos = 0, o = 0;
    out[0] = '\0';
    while (pos <= n) {
        size_t s, e;
        bool found;
        if (ember_regex_search(re, t, n, pos, &s, &e, &found) != EMBER_OK || !found) break;
        if (o && o + 1 < cap) out[o++] = '|';
        for (size_t i = s; i < e && o + 1 < cap; i++) out[o++] = t[i];
        out[o] = '\0';
        if (e > s) pos = e;
        else if (e >= n) break;
        else pos = e + char_len(t, n, e);
    }
}

#define SPANS_FLAGS(pat, flags, text, want)                                                       \
    do {                                                                                          \
        ember_regex *re_ = compile_flags(pat, flags);                                             \
        if (re_ != NULL) {                                                                        \
            char got_[1024];                                                                      \
            CHECK_OK(find_all(re_, text, strlen(text), got_, sizeof got_));                       \
            CHECK_MSG(strcmp(got_, want) == 0, "/%s/ on \"%s\": got \"%s\", want \"%s\"", pat,    \
                      text, got_, want);                                                          \
            ember_regex_destroy(re_);                                                             \
        }                                                                                         \
    } while (0)

#define SPANS(pat, text, want) SPANS_FLAGS(pat, 0, text, want)

#define PIECES_FLAGS(pat, flags, text, want)                                                      \
    do {                                                                                          \
        ember_regex *re_ = compile_flags(pat, flags);                                             \
        if (re_ != NULL) {                                                                        \
            char got_[1024];                                                                      \
            pieces(re_, text, strlen(text), got_, sizeof got_);                                   \
            CHECK_MSG(strcmp(got_, want) == 0, "/%s/ on \"%s\": got \"%s\", want \"%s\"", pat,    \
                      text, got_, want);                                                          \
            ember_regex_destroy(re_);                                                             \
        }                                                                                         \
    } while (0)

#define PIECES(pat, text, want) PIECES_FLAGS(pat, 0, text, want)

/* Compiling must fail with status want and a message holding both substrings. */
#define COMPILE_FAILS(pat, want, sub1, sub2)                                                      \
    do {                                                                                          \
        ember_regex *re_ = NULL;                                                                  \
        ember_status st_ = ember_regex_compile(pat, strlen(pat), &re_);                           \
        CHECK_MSG(st_ == (want), "/%s/ status 0x%x, message \"%s\"", pat, (unsigned)st_,         \
                  ember_last_error());                                                            \
        CHECK_CONTAINS(ember_last_error(), sub1);                                                 \
        CHECK_CONTAINS(ember_last_error(), sub2);                                                 \
        CHECK(re_ == NULL);                                                                       \
        ember_regex_destroy(re_);                                                                 \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Constructs                                                                */
/* ------------------------------------------------------------------------ */

static void test_literals(void) {
    check_section("literals and concatenation");
    SPANS("abc", "xxabcabc", "2-5 5-8");
    SPANS("é", "café é", "3-5 6-8");
    SPANS("日本", "日本語の日本", "0-6 12-18");
    SPANS("a.c", "abc a\nc aéc", "0-3 8-12");
    SPANS("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\^\\$", ".*+?()[]{}|\\^$", "0-14");
    SPANS("a{", "a{b", "0-2");
    SPANS("x{1,2", "x{1,2", "0-5");
    SPANS("}]", "a}]", "1-3");
    SPANS("\\t\\n\\r\\f\\v\\a\\e", "\t\n\r\f\v\a\x1b", "0-7");
    SPANS("\\x41\\x{42}\\u0043\\U00000044\\x{1F600}", "ABCD\xF0\x9F\x98\x80", "0-8");
    SPANS("x\\012\\0", "x\n", "");
    SPANS("x\\012", "x\n", "0-2");
    SPANS("#", "a#b", "1-2");
    SPANS(" ", "a b", "1-2");
}

static void test_alternation(void) {
    check_section("alternation (leftmost, then first alternative)");
    SPANS("a|ab", "ab", "0-1");
    SPANS("ab|a", "ab", "0-2");
    SPANS("b|ab", "ab", "0-2");
    SPANS("cat|category", "category", "0-3");
    SPANS("x(?:a|b|c)+y", "xabcacy xy", "0-7");
    SPANS("|a", "a", "0-0 1-1");
    SPANS("a|", "ab", "0-1 1-1 2-2");
    SPANS("(a|b)(c|d)", "ad bc ac", "0-2 3-5 6-8");
    SPANS("(?:'s|'t|'re|'ve|'m|'ll|'d)", "it's we're I'd", "2-4 7-10 12-14");
}

static void test_quantifiers(void) {
    check_section("greedy, lazy and possessive quantifiers");
    SPANS("a*", "aaab", "0-3 3-3 4-4");
    SPANS("a+", "baaab", "1-4");
    SPANS("a?", "ab", "0-1 1-1 2-2");
    SPANS("a{2}", "aaaaa", "0-2 2-4");
    SPANS("a{2,}", "a aa aaaa", "2-4 5-9");
    SPANS("a{1,2}", "aaaaa", "0-2 2-4 4-5");
    SPANS("a{,2}", "aaa", "0-2 2-3 3-3");
    SPANS("a{0}b", "ab", "1-2");
    SPANS("a*?b", "aaab", "0-4");
    SPANS("a+?", "aaa", "0-1 1-2 2-3");
    SPANS("a??", "a", "0-0 1-1");
    SPANS("a{2,3}?", "aaaa", "0-2 2-4");
    SPANS("<.*>", "<a><b>", "0-6");
    SPANS("<.*?>", "<a><b>", "0-3 3-6");
    SPANS("a*+a", "aaa", "");
    SPANS("a++b", "aab", "0-3");
    SPANS("a?+a", "a", "");
    SPANS("a{1,3}+a", "aaaa", "0-4");
    SPANS("(?:ab)*", "ababa", "0-4 4-4 5-5");
    SPANS("(?:ab)+?c", "ababc", "0-5");
    SPANS("(?:ab){2}", "ababab", "0-4");
    SPANS("(?:a|b){2,3}", "abbab", "0-3 3-5");
    SPANS("(?:ab)*+ab", "abab", "");
    SPANS("(?:ab|a)*+c", "abac", "0-4");
    SPANS("(?:a*)*b", "aab", "0-3");
    SPANS("(?:a?)+b", "aab b", "0-3 4-5");
    SPANS("(?:|a)*b", "aab", "0-3");
    SPANS("\\p{N}{1,3}", "12345", "0-3 3-5");
    SPANS("x(?:y{2}z){2,}", "xyyzyyz xyyz", "0-7");
}

static void test_groups(void) {
    check_section("groups, atomic groups, lookaround");
    SPANS("(a)(?:b)(?<n>c)(?P<m>d)", "abcd", "0-4");
    SPANS("(?>a+)b", "aaab", "0-4");
    SPANS("(?>a|ab)c", "abc", "");
    SPANS("(?:a|ab)c", "abc", "0-3");
    SPANS("(?>x*)y|x", "xxz", "0-1 1-2");
    SPANS("a(?=b)", "ab ac", "0-1");
    SPANS("a(?!b)", "ab ac", "3-4");
    SPANS("\\s+(?!\\S)", "a   b", "1-3");
    SPANS("(?<=a)b", "ab cb", "1-2");
    SPANS("(?<!a)b", "ab cb", "4-5");
    SPANS("(?<=ab|c)d", "abd cd bd", "2-3 5-6");
    SPANS("(?<=é)x", "éx ex", "2-3");
    SPANS("(?<=\\p{L}{2,3})1", "a1 ab1 abc1 abcd1", "5-6 10-11 16-17");
    SPANS("(?<!\\d)\\d", "1 22", "0-1 2-3");
    SPANS("(?=(?:a|b)c)\\w+", "bc ac", "0-2 3-5");
    SPANS("(?!a)\\w", "abc", "1-2 2-3");
    SPANS("(?:(?=a)a|b)+", "abab", "0-4");
    SPANS("(?<=^|,)\\w+", "ab,cd", "0-2 3-5");
    SPANS("(?#comment)a", "a", "0-1");
    SPANS("(?>(?:a|ab)(?!x))c", "abc", "");
    SPANS("(?>(?:a+)(?=b))b", "aab", "0-3");
}

static void test_classes(void) {
    check_section("classes");
    SPANS("[abc]+", "xbcaz", "1-4");
    SPANS("[a-c0-2]+", "zb1a2d", "1-5");
    SPANS("[^abc]+", "abxyc", "2-4");
    SPANS("[]a]+", "a]b", "0-2");
    SPANS("[^]a]+", "a]b", "2-3");
    SPANS("[a-]+", "a-b", "0-2");
    SPANS("[-a]+", "a-b", "0-2");
    SPANS("[\\]\\-\\\\]+", "]-\\x", "0-3");
    SPANS("[\\d]+", "a12b", "1-3");
    SPANS("[\\s\\d]+", "a 1\t2b", "1-5");
    SPANS("[^\\s\\p{L}\\p{N}]+", "ab!?1 .,", "2-4 6-8");
    SPANS("[\\p{L}\\p{M}]+", "cafe\xCC\x81 x", "0-6 7-8");
    SPANS("[一-龥]+", "日本語のテキスト中文", "0-9 24-30");
    SPANS("[\\x{3040}-\\x{309F}]+", "日本語のテキスト", "9-12");
    SPANS("[a[bc]]+", "abcd", "0-3");
    SPANS("[^(\\s|[.,!?…])]+", "Hello, world! (a|b) [x]…y", "0-5 7-12 15-16 17-18 20-23 26-27");
    SPANS("[^[a]]", "ab", "1-2");
    SPANS("[a[^b]]+", "abc", "0-1 2-3");
    SPANS("[\\p{Lu}\\p{Lt}]+", "aBCd ǅ", "1-3 5-7");
    SPANS("[\\P{L}]+", "ab12", "2-4");
    SPANS("[\\p{^L}]+", "ab12", "2-4");
    SPANS("[\\w-]+", "a-b c", "0-3 4-5");
    SPANS("[.]", "a.b", "1-2");
    SPANS("[$^]+", "a^$", "1-3");
    SPANS("[\\b]", "a\bb", "1-2");
    SPANS("[!-/:-~]+", "09!?{}", "2-6");
    SPANS("[\\x{10000}-\\x{10FFFF}]", "a\xF0\x9F\x98\x80", "1-5");
    /* Case closure applies once, to the outermost class. */
    SPANS("(?i)[^[^θ]]+", "θΘϑϴx", "0-8");
    {
        /* 150 nested negations (an even count) around a letter with four case
         * forms: the cost stays linear in the nesting. */
        char pat[1024];
        size_t n = 0;
        n += (size_t)snprintf(pat + n, sizeof pat - n, "(?i)");
        for (int k = 0; k < 150; k++) n += (size_t)snprintf(pat + n, sizeof pat - n, "[^");
        n += (size_t)snprintf(pat + n, sizeof pat - n, "θ");
        for (int k = 0; k < 150; k++) n += (size_t)snprintf(pat + n, sizeof pat - n, "]");
        SPANS(pat, "ϴx", "0-2");
    }
}

static void test_escapes_and_properties(void) {
    check_section("\\s \\d \\w and Unicode properties");
    SPANS("\\s+", "a \t\n\r\f\vb\xC2\xA0\xE3\x80\x80" "c\xC2\x85", "1-7 8-13 14-16");
    SPANS("\\S+", "ab  c", "0-2 4-5");
    SPANS("\\d+", "a12٣٤b", "1-7");
    SPANS("\\D+", "a12b", "0-1 3-4");
    SPANS("\\w+", "héllo_wörld 12 ²", "0-13 14-16 17-19");
    SPANS("\\W+", "a, b", "1-3");
    /* Oniguruma: \w outside a class takes six Latin-1 numbers, inside not. */
    SPANS("\\w", "²³¹¼½¾", "0-2 2-4 4-6 6-8 8-10 10-12");
    SPANS("\\p{Word}+", "a²", "0-3");
    SPANS("[\\w]+", "a²b", "0-1 3-4");
    SPANS("[\\p{Word}]+", "a²b", "0-1 3-4");
    SPANS("[^\\w\\s]+", "a²'b", "1-4");
    SPANS("\\W", "²\xE2\x80\x8D", "2-5");
    SPANS("\\P{Word}", "²\xE2\x80\x8D", "2-5");
    SPANS("[\\W]+", "²a", "0-2");
    SPANS("\\b.", "a²³ ½", "0-1 5-6 6-8");
    SPANS("\\w+", "\xE2\x93\x90_\xE2\x80\xBF", "0-7");
    SPANS("\\p{L}+", "abc123日本", "0-3 6-12");
    SPANS("\\pL+", "abc123", "0-3");
    SPANS("\\PL+", "abc123", "3-6");
    SPANS("\\p{^L}+", "abc123", "3-6");
    SPANS("\\P{^L}+", "abc123", "0-3");
    SPANS("\\p{Lu}+", "aBCd", "1-3");
    SPANS("\\p{Ll}", "aB", "0-1");
    SPANS("\\p{Lt}", "ǅ", "0-2");
    SPANS("\\p{Lm}", "ʰ", "0-2");
    SPANS("\\p{Lo}", "a日", "1-4");
    SPANS("\\p{M}", "e\xCC\x81", "1-3");
    SPANS("\\p{Mn}", "e\xCC\x81", "1-3");
    SPANS("\\p{N}+", "x½Ⅻ٣7", "1-9");
    SPANS("\\p{Nd}+", "x½Ⅻ٣7", "6-9");
    SPANS("\\p{Nl}", "x½Ⅻ", "3-6");
    SPANS("\\p{No}", "x½Ⅻ", "1-3");
    SPANS("\\p{P}+", "a.,!b", "1-4");
    SPANS("\\p{S}+", "a+$^b", "1-4");
    SPANS("\\p{Z}+", "a \xE2\x80\xA8" "b", "1-5");
    SPANS("\\p{C}", "a\x01", "1-2");
    SPANS("\\p{Cc}", "a\x01", "1-2");
    SPANS("\\p{Letter}+", "ab1", "0-2");
    SPANS("\\p{Uppercase_Letter}+", "aBC", "1-3");
    SPANS("\\p{lowercase letter}+", "aBC", "0-1");
    SPANS("\\p{L&}+", "aBʰ", "0-2");
    SPANS("\\p{Any}", "a", "0-1");
    SPANS("\\p{ASCII}+", "aé", "0-1");
    SPANS("\\p{White_Space}+", "a  b", "1-3");
    SPANS("\\p{Word}+", "a_b c", "0-3 4-5");
    SPANS("\\p{Assigned}", "\xCD\xB8" "a", "2-3");
    SPANS("\\p{Cn}", "\xCD\xB8" "a", "0-2");
}

static void test_anchors(void) {
    check_section("anchors and flags");
    SPANS("^a", "aa\na", "0-1");
    SPANS("a$", "a\na", "2-3");
    SPANS("a$", "a\na\n", "2-3");
    SPANS("\\s+$", "a  \nb  \n", "5-8");
    SPANS_FLAGS("\\s+$", EMBER_REGEX_MULTILINE, "a  \nb  ", "1-3 5-7");
    SPANS_FLAGS("^a", EMBER_REGEX_MULTILINE, "aa\na\n", "0-1 3-4");
    SPANS_FLAGS("^", EMBER_REGEX_MULTILINE, "a\n\nb\n", "0-0 2-2 3-3");
    SPANS_FLAGS("a$", EMBER_REGEX_MULTILINE, "a\na\n", "0-1 2-3");
    SPANS_FLAGS("a$", EMBER_REGEX_DOLLAR_ENDONLY, "a\na\n", "");
    SPANS_FLAGS("a$", EMBER_REGEX_DOLLAR_ENDONLY, "a\na", "2-3");
    SPANS("(?m)^a", "a\na", "0-1 2-3");
    SPANS("\\Aa", "aa", "0-1");
    SPANS("a\\z", "aa\n", "");
    SPANS("a\\Z", "aa\n", "1-2");
    SPANS("\\bab\\b", "ab cab ab_ ab", "0-2 11-13");
    SPANS("\\Bb", "ab b", "1-2");
    SPANS("\\b", "ab c", "0-0 2-2 3-3 4-4");
    SPANS(".", "a\nb", "0-1 2-3");
    SPANS("(?s).", "a\nb", "0-1 1-2 2-3");
    SPANS_FLAGS(".", EMBER_REGEX_DOTALL, "a\n", "0-1 1-2");
    SPANS("(?s:a.)b.", "a\nbc a\nb\n", "0-4");
    SPANS("\\Ga", "aab", "0-1 1-2");
}

static void test_case_insensitive(void) {
    check_section("case-insensitive matching");
    SPANS("(?i)abc", "ABC aBc abd", "0-3 4-7");
    SPANS("(?i:'s|'t|'re|'ve|'m|'ll|'d)", "IT'S WE'RE I'D YOU'LL 'ſ",
          "2-4 7-10 12-14 18-21 22-25");
    SPANS("'(?i:[sdmt]|ll|ve|re)", "'S 'D 'M 'T 'LL 'Ve 'rE 'x",
          "0-2 3-5 6-8 9-11 12-15 16-19 20-23");
    SPANS("(?i)k", "kK\xE2\x84\xAA", "0-1 1-2 2-5");
    SPANS("(?i)\xE2\x84\xAA", "kK", "0-1 1-2");
    SPANS("(?i)[a-c]+", "ABCabcd", "0-6");
    SPANS("(?i)[^a-c]+", "ABCd", "3-4");
    SPANS("(?i)σ", "Σσς", "0-2 2-4 4-6");
    SPANS("(?i)ß", "ẞß", "0-3 3-5");
    SPANS("a(?i)b|c", "aB C", "0-2 3-4");
    SPANS("(?i)a(?-i)b", "Ab AB", "0-2");
    SPANS("(?i:a)b", "Ab AB", "0-2");
    SPANS("(?i)\\p{Lu}", "a", "0-1");
    SPANS_FLAGS("abc", EMBER_REGEX_CASELESS, "ABC", "0-3");
    SPANS_FLAGS("(?-i)abc", EMBER_REGEX_CASELESS, "ABC abc", "4-7");
}

static void test_invalid_utf8_text(void) {
    check_section("invalid UTF-8 in the text");
    /* \xFF, a truncated sequence, a lone continuation byte, an overlong '/',
     * an encoded surrogate: each byte one character. */
    SPANS(".", "a\xFF\xE2\x82\xC0\xAF\xED\xA0\x80", "0-1 1-2 2-3 3-4 4-5 5-6 6-7 7-8 8-9");
    SPANS("[^a]+", "a\xFF\xFE" "b", "1-4");
    SPANS("\\S+", "\xFF \xFE", "0-1 2-3");
    SPANS("\\W+", "a\xFF", "1-2");
    SPANS("\\D", "\xFF", "0-1");
    SPANS("\\P{L}", "\xFF", "0-1");
    SPANS("[^\\s\\p{L}\\p{N}]+", "a\xFF\x80!b", "1-4");
    SPANS("\\p{L}|\\p{N}|\\s|\\w|\\d|[\\x00-\\x{10FFFF}]|\\p{Any}|\\p{C}", "\xFF\x80", "");
    SPANS("[^\\P{L}]", "\xFF", "");
    SPANS("\\xFF", "\xFF\xC3\xBF", "1-3");
    SPANS("(?i)\\xFF", "\xFF", "");
    SPANS("\xC3\xA9+", "\xC3\xA9\xC3\xA9\xC3", "0-4");
    SPANS("(?<=\\xE9)x|(?<=.)y", "\xC3\xA9x\xE9x\xE9y", "2-3 6-7");
    PIECES("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
           "ab\xFF\xFE cd \xE2\x82", "ab|\xFF\xFE| cd| \xE2\x82");
}

static void test_empty_matches(void) {
    check_section("empty matches and the find-all loop");
    SPANS("", "", "0-0");
    SPANS("", "ab", "0-0 1-1 2-2");
    SPANS("", "é", "0-0 2-2");
    SPANS("x*", "é", "0-0 2-2");
    SPANS("\\b|a", "a", "0-0 1-1");
    SPANS("(?=a)", "aa", "0-0 1-1");
    SPANS("a*", "", "0-0");
    SPANS("a", "", "");
    SPANS("$", "ab\n", "2-2 3-3");
    ember_regex *re = compile_flags("b", 0);
    size_t s = 9, e = 9;
    bool found = true;
    CHECK_OK(ember_regex_search(re, "abc", 3, 3, &s, &e, &found));
    CHECK(!found);
    CHECK_OK(ember_regex_search(re, "abc", 3, 1, &s, &e, &found));
    CHECK(found && s == 1 && e == 2);
    CHECK_OK(ember_regex_search(re, "abc", 3, 2, &s, &e, &found));
    CHECK(!found);
    CHECK_ERR(ember_regex_search(re, "abc", 3, 4, &s, &e, &found), EMBER_ERR_INVALID_ARGUMENT,
              "start 4");
    CHECK_STATUS(ember_regex_search(NULL, "abc", 3, 0, &s, &e, &found), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_regex_search(re, NULL, 3, 0, &s, &e, &found), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_OK(ember_regex_search(re, NULL, 0, 0, &s, &e, &found));
    CHECK(!found);
    ember_regex_destroy(re);
    ember_regex_destroy(NULL);
}

/* ------------------------------------------------------------------------ */
/* Tokenizer patterns                                                        */
/* ------------------------------------------------------------------------ */

static const char k_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char k_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char k_cl100k[] =
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| "
    "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";
static const char k_o200k[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static void test_tokenizer_patterns(void) {
    check_section("tokenizer split patterns");
    PIECES(k_gpt2, "Hello world! It's 2024...  ok\n", "Hello| world|!| It|'s| 2024|...| | ok|\n");
    PIECES(k_gpt2, "a  b   ", "a| | b|   ");
    PIECES(k_llama3, "I'LL pay 12345 dollars!!\n\n  x", "I|'LL| pay| |123|45| dollars|!!\n\n| | x");
    PIECES(k_llama3, "  hello\r\n\tworld", " | hello|\r\n|\tworld");
    PIECES_FLAGS(k_cl100k, EMBER_REGEX_DOLLAR_ENDONLY, "Don't stop   \n",
                 "Don|'t| stop|   \n");
    PIECES_FLAGS(k_cl100k, EMBER_REGEX_DOLLAR_ENDONLY, "x  \n  y", "x|  \n| | y");
    PIECES(k_o200k, "HelloWorld CamelCase's URL/path\n", "Hello|World| Camel|Case's| URL|/path|\n");
}

/* ------------------------------------------------------------------------ */
/* Errors, limits, threads                                                   */
/* ------------------------------------------------------------------------ */

static void test_compile_errors(void) {
    check_section("compile errors name the offset and the construct");
    COMPILE_FAILS("ab(cd", EMBER_ERR_INVALID_ARGUMENT, "missing )", "offset 2");
    COMPILE_FAILS("ab)cd", EMBER_ERR_INVALID_ARGUMENT, "unbalanced )", "offset 2");
    COMPILE_FAILS("[abc", EMBER_ERR_INVALID_ARGUMENT, "missing ]", "offset 0");
    COMPILE_FAILS("x[^", EMBER_ERR_INVALID_ARGUMENT, "missing ]", "offset 1");
    COMPILE_FAILS("*a", EMBER_ERR_INVALID_ARGUMENT, "nothing to repeat", "offset 0");
    COMPILE_FAILS("a|+", EMBER_ERR_INVALID_ARGUMENT, "nothing to repeat", "offset 2");
    COMPILE_FAILS("(?:+)", EMBER_ERR_INVALID_ARGUMENT, "nothing to repeat", "offset 3");
    COMPILE_FAILS("a**", EMBER_ERR_INVALID_ARGUMENT, "nested quantifier", "offset 2");
    COMPILE_FAILS("a{2}{3}", EMBER_ERR_INVALID_ARGUMENT, "nested quantifier", "offset 4");
    COMPILE_FAILS("^*", EMBER_ERR_INVALID_ARGUMENT, "quantifier after an assertion", "offset 1");
    COMPILE_FAILS("(?=a)+", EMBER_ERR_INVALID_ARGUMENT, "lookaround", "offset 5");
    COMPILE_FAILS("a{3,2}", EMBER_ERR_INVALID_ARGUMENT, "min greater than max", "offset 1");
    COMPILE_FAILS("a{100001}", EMBER_ERR_INVALID_ARGUMENT, "above 100000", "offset 1");
    COMPILE_FAILS("[z-a]", EMBER_ERR_INVALID_ARGUMENT, "out of order", "offset 1");
    COMPILE_FAILS("[a-\\d]", EMBER_ERR_INVALID_ARGUMENT, "range", "offset 1");
    COMPILE_FAILS("[\\d-z]", EMBER_ERR_INVALID_ARGUMENT, "range", "offset 1");
    COMPILE_FAILS("ab\\", EMBER_ERR_INVALID_ARGUMENT, "ends with a backslash", "offset 2");
    COMPILE_FAILS("\\q", EMBER_ERR_INVALID_ARGUMENT, "unknown escape", "\\q");
    COMPILE_FAILS("[\\A]", EMBER_ERR_INVALID_ARGUMENT, "unknown escape in a class", "offset 1");
    COMPILE_FAILS("\\x{110000}", EMBER_ERR_INVALID_ARGUMENT, "scalar value", "offset 0");
    COMPILE_FAILS("\\uD800", EMBER_ERR_INVALID_ARGUMENT, "scalar value", "offset 0");
    COMPILE_FAILS("\\u12", EMBER_ERR_INVALID_ARGUMENT, "4 hex digits", "offset 0");
    COMPILE_FAILS("\\x{12", EMBER_ERR_INVALID_ARGUMENT, "\\x{", "offset 0");
    COMPILE_FAILS("\\xZ", EMBER_ERR_INVALID_ARGUMENT, "hex digits", "offset 0");
    COMPILE_FAILS("\\p{L", EMBER_ERR_INVALID_ARGUMENT, "unterminated property", "offset 0");
    COMPILE_FAILS("\\p", EMBER_ERR_INVALID_ARGUMENT, "property name", "offset 0");
    COMPILE_FAILS("(?z)", EMBER_ERR_INVALID_ARGUMENT, "unknown inline flag", "offset 0");
    COMPILE_FAILS("(?i", EMBER_ERR_INVALID_ARGUMENT, "unterminated inline flags", "offset 0");
    COMPILE_FAILS("(?<1a>x)", EMBER_ERR_INVALID_ARGUMENT, "bad group name", "offset 0");
    COMPILE_FAILS("a\xFF", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8", "offset 1");
    COMPILE_FAILS("[\xC3]", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8", "\\xC3");
    COMPILE_FAILS("((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                  "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                  "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                  "a",
                  EMBER_ERR_INVALID_ARGUMENT, "nested too deeply", "offset 200");
    COMPILE_FAILS("(?:(?:ab){1000}){1000}", EMBER_ERR_OUT_OF_MEMORY,
                  "exceeds", "instructions");

    check_section("refused constructs");
    COMPILE_FAILS("(a)\\1", EMBER_ERR_NOT_SUPPORTED, "backreferences", "offset 3");
    COMPILE_FAILS("(?<n>a)\\k<n>", EMBER_ERR_NOT_SUPPORTED, "backreferences", "offset 7");
    COMPILE_FAILS("(?(1)a|b)", EMBER_ERR_NOT_SUPPORTED, "conditional", "offset 0");
    COMPILE_FAILS("a(?R)", EMBER_ERR_NOT_SUPPORTED, "recursion", "offset 1");
    COMPILE_FAILS("\\p{Han}", EMBER_ERR_NOT_SUPPORTED, "Unicode property", "\\p{Han}");
    COMPILE_FAILS("[[:alpha:]]", EMBER_ERR_NOT_SUPPORTED, "POSIX", "offset 1");
    COMPILE_FAILS("[a-z&&[^aeiou]]", EMBER_ERR_NOT_SUPPORTED, "&&", "offset 4");
    COMPILE_FAILS("(?x)a b", EMBER_ERR_NOT_SUPPORTED, "(?x)", "offset 0");
    COMPILE_FAILS("(?<=a+)b", EMBER_ERR_NOT_SUPPORTED, "lookbehind", "offset 0");
    COMPILE_FAILS("(?<=a{300})b", EMBER_ERR_NOT_SUPPORTED, "lookbehind", "255");
    COMPILE_FAILS("\\Qa\\E", EMBER_ERR_NOT_SUPPORTED, "escape", "offset 0");
    COMPILE_FAILS("a\\K", EMBER_ERR_NOT_SUPPORTED, "escape", "offset 1");

    check_section("API misuse");
    ember_regex *re = NULL;
    CHECK_STATUS(ember_regex_compile(NULL, 3, &re), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_regex_compile("a", 1, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    CHECK_ERR(ember_regex_compile_ex("a", 1, &o, &re), EMBER_ERR_INVALID_ARGUMENT, "struct_size");
    o.struct_size = sizeof o;
    o.flags = 1u << 20;
    CHECK_ERR(ember_regex_compile_ex("a", 1, &o, &re), EMBER_ERR_INVALID_ARGUMENT, "flags");
    CHECK(re == NULL);
    CHECK_OK(ember_regex_compile(NULL, 0, &re));
    ember_regex_destroy(re);
    re = NULL;
    /* A pattern may hold NUL bytes. */
    CHECK_OK(ember_regex_compile("a\0b", 3, &re));
    size_t s, e;
    bool found;
    CHECK_OK(ember_regex_search(re, "xa\0b", 4, 0, &s, &e, &found));
    CHECK(found && s == 1 && e == 4);
    ember_regex_destroy(re);
}

static void test_step_limit(void) {
    check_section("the step limit stops pathological backtracking");
    char text[64];
    memset(text, 'a', 40);
    text[40] = '\0';
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.step_limit = 200000;
    ember_regex *re = NULL;
    const char *pat = "(?:a+)+b";
    if (CHECK_OK(ember_regex_compile_ex(pat, strlen(pat), &o, &re))) {
        size_t s, e;
        bool found = true;
        CHECK_ERR(ember_regex_search(re, text, 40, 0, &s, &e, &found), EMBER_ERR_LOOP_LIMIT,
                  "200000 steps");
        CHECK(!found);
        /* Short inputs still complete. */
        CHECK_OK(ember_regex_search(re, "aaab", 4, 0, &s, &e, &found));
        CHECK(found && s == 0 && e == 4);
        ember_regex_destroy(re);
    }
    /* With the default limit it fails too, in a fraction of a second. */
    re = NULL;
    pat = "(a|aa)*(?:b|c)";
    if (CHECK_OK(ember_regex_compile(pat, strlen(pat), &re))) {
        size_t s, e;
        bool found = true;
        CHECK_ERR(ember_regex_search(re, text, 40, 0, &s, &e, &found), EMBER_ERR_LOOP_LIMIT,
                  "steps");
        ember_regex_destroy(re);
    }
    /* A long run that a leading repeat rescans at every start stays linear:
     * 200000 spaces then "x" against \s+$ (multiline) and \s++$. */
    size_t n = 200000;
    char *big = malloc(n + 2);
    if (big != NULL) {
        memset(big, ' ', n);
        big[n] = 'x';
        big[n + 1] = '\0';
        const char *pats[] = {"\\s+$", "\\s++$", "\\s*$"};
        for (size_t k = 0; k < 3; k++) {
            memset(&o, 0, sizeof o);
            o.struct_size = sizeof o;
            o.flags = EMBER_REGEX_MULTILINE;
            o.step_limit = 10 * n;
            re = NULL;
            if (!CHECK_OK(ember_regex_compile_ex(pats[k], strlen(pats[k]), &o, &re))) continue;
            size_t s, e;
            bool found;
            CHECK_OK(ember_regex_search(re, big, n + 1, 0, &s, &e, &found));
            CHECK_MSG(found == (k == 2) && (k != 2 || (s == n + 1 && e == n + 1)), "pattern %s",
                      pats[k]);
            ember_regex_destroy(re);
        }
        free(big);
    }
}

typedef struct thread_job {
    const ember_regex *re;
    const char *text;
    const char *want;
    bool ok;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *job = arg;
    job->ok = true;
    for (int i = 0; i < 200; i++) {
        char got[1024];
        if (find_all(job->re, job->text, strlen(job->text), got, sizeof got) != EMBER_OK ||
            strcmp(got, job->want) != 0)
            job->ok = false;
    }
    return NULL;
}

static void test_threads(void) {
    check_section("one compiled regex, several threads");
    ember_regex *re = compile_flags(k_llama3, 0);
    if (re == NULL) return;
    const char *texts[4] = {"Hello, world! It's 2024.", "  spaces   and\ttabs\n\n",
                            "日本語のテキスト、中文文本", "I'M HERE, YOU'RE LATE"};
    char wants[4][1024];
    thread_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        CHECK_OK(find_all(re, texts[i], strlen(texts[i]), wants[i], sizeof wants[i]));
        jobs[i].re = re;
        jobs[i].text = texts[i];
        jobs[i].want = wants[i];
        jobs[i].ok = false;
    }
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, thread_main, &jobs[i]) == 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(jobs[i].ok, "thread %d", i);
    }
    ember_regex_destroy(re);
}

static void test_deep_backtracking(void) {
    check_section("deep backtracking stacks and long texts");
    /* (?:a|b)* over 100000 characters pushes one frame per character. */
    size_t n = 100000;
    char *t = malloc(n + 1);
    if (t == NULL) return;
    for (size_t i = 0; i < n; i++) t[i] = (char)(i % 2 ? 'a' : 'b');
    t[n] = '\0';
    ember_regex *re = compile_flags("(?:a|b)*c|(?:a|b)*", 0);
    if (re != NULL) {
        size_t s, e;
        bool found;
        CHECK_OK(ember_regex_search(re, t, n, 0, &s, &e, &found));
        CHECK(found && s == 0 && e == n);
        ember_regex_destroy(re);
    }
    re = compile_flags("(?>(?:a|b)*)|x", 0);
    if (re != NULL) {
        size_t s, e;
        bool found;
        CHECK_OK(ember_regex_search(re, t, n, 0, &s, &e, &found));
        CHECK(found && s == 0 && e == n);
        ember_regex_destroy(re);
    }
    free(t);
}

static uint64_t fuzz_state = 0x9E3779B97F4A7C15ull;
static uint32_t fuzz_next(void) {
    fuzz_state ^= fuzz_state << 13;
    fuzz_state ^= fuzz_state >> 7;
    fuzz_state ^= fuzz_state << 17;
    return (uint32_t)(fuzz_state >> 11);
}

static void test_random_patterns_never_crash(void) {
    check_section("random patterns and texts: clean statuses, no crash");
    static const char *const pieces[] = {
        "(", ")", "(?:", "(?i)", "(?i:", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?<n>", "[", "]",
        "[^", "{", "}", "{2}", "{1,3}", "{,2}", "{2,}", "|", "*", "+", "?", "*?", "++", ".", "^",
        "$", "\\", "\\d", "\\w", "\\s", "\\S", "\\p{L}", "\\P{N}", "\\pL", "\\p{", "\\x",
        "\\x{41}", "\\u00e9", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\1", "\\k", "-", "a",
        "b", "é", "日", "\xFF", "\xC3", " ", "\n", ",", "0", "9", ":", "#", "&&", "[:", ":]"};
    static const char *const texts[] = {"", "a", "ab ba", "aaaaaaaaaaaaaaaaaaab", "é日 \n\xFFx",
                                        "(a|b)*[c]{2}", "  \n\n  end "};
    size_t n_pieces = sizeof pieces / sizeof pieces[0];
    int compiled = 0, statuses_ok = 1;
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.step_limit = 20000;
    for (int iter = 0; iter < 20000; iter++) {
        char pat[256];
        size_t n = 0, parts = 1 + fuzz_next() % 12;
        for (size_t k = 0; k < parts; k++) {
            const char *p = pieces[fuzz_next() % n_pieces];
            size_t l = strlen(p);
            if (n + l >= sizeof pat) break;
            memcpy(pat + n, p, l);
            n += l;
        }
        o.flags = fuzz_next() % 16;
        ember_regex *re = NULL;
        ember_status st = ember_regex_compile_ex(pat, n, &o, &re);
        if (st != EMBER_OK) {
            if ((st != EMBER_ERR_INVALID_ARGUMENT && st != EMBER_ERR_NOT_SUPPORTED) ||
                strstr(ember_last_error(), "offset") == NULL)
                statuses_ok = 0;
            continue;
        }
        compiled++;
        for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
            char got[1024];
            st = find_all(re, texts[k], strlen(texts[k]), got, sizeof got);
            if (st != EMBER_OK && st != EMBER_ERR_LOOP_LIMIT) statuses_ok = 0;
        }
        ember_regex_destroy(re);
    }
    CHECK_MSG(statuses_ok, "every failure is a syntax error, a refusal or the step limit");
    CHECK_MSG(compiled > 1000, "%d of the random patterns compiled", compiled);
}

/* ------------------------------------------------------------------------ */
/* Harness modes                                                             */
/* ------------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n == cap) {
            char *b = realloc(buf, cap * 2);
            if (b == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Compiles the pattern file with the harness options. */
static ember_regex *harness_compile(const char *path, int argc, char **argv, int from) {
    size_t plen;
    char *pat = read_file(path, &plen);
    if (pat == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    for (int i = from; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--flags") == 0) o.flags = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        if (strcmp(argv[i], "--step-limit") == 0) o.step_limit = strtoull(argv[i + 1], NULL, 0);
    }
    ember_regex *re = NULL;
    if (ember_regex_compile_ex(pat, plen, &o, &re) != EMBER_OK)
        printf("COMPILE_ERR %s\n", ember_last_error());
    free(pat);
    return re;
}

static int harness_findall(int argc, char **argv) {
    if (argc < 4) return 2;
    ember_regex *re = harness_compile(argv[2], argc, argv, 4);
    if (re == NULL) return 3;
    size_t len;
    char *in = read_file(argv[3], &len);
    if (in == NULL) {
        ember_regex_destroy(re);
        return 2;
    }
    size_t i = 0;
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    while (i < len && line != NULL) {
        char *nl = memchr(in + i, '\n', len - i);
        if (nl == NULL) break;
        size_t n = strtoul(in + i, NULL, 10);
        i = (size_t)(nl - in) + 1;
        if (n > len - i) break;
        const char *t = in + i;
        size_t pos = 0, o = 0;
        ember_status st = EMBER_OK;
        while (pos <= n) {
            size_t s, e;
            bool found;
            st = ember_regex_search(re, t, n, pos, &s, &e, &found);
            if (st != EMBER_OK || !found) break;
            if (cap - o < 64) {
                char *l2 = realloc(line, cap * 2);
                if (l2 == NULL) break;
                line = l2;
                cap *= 2;
            }
            o += (size_t)snprintf(line + o, cap - o, "%s%zu %zu", o ? " " : "", s, e);
            if (e > s) pos = e;
            else if (e >= n) break;
            else pos = e + char_len(t, n, e);
        }
        if (st != EMBER_OK) printf("ERR %s\n", ember_last_error());
        else printf("%.*s\n", (int)o, line);
        i += n + 1;
    }
    free(line);
    free(in);
    ember_regex_destroy(re);
    return 0;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int harness_bench(int argc, char **argv) {
    if (argc < 4) return 2;
    ember_regex *re = harness_compile(argv[2], argc, argv, 4);
    if (re == NULL) return 3;
    size_t len;
    char *t = read_file(argv[3], &len);
    int repeat = 5;
    for (int i = 4; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--repeat") == 0) repeat = atoi(argv[i + 1]);
    double best = 1e30;
    size_t pieces_n = 0;
    for (int r = 0; r < repeat && t != NULL; r++) {
        double t0 = now_seconds();
        size_t pos = 0, count = 0;
        while (pos <= len) {
            size_t s, e;
            bool found;
            if (ember_regex_search(re, t, len, pos, &s, &e, &found) != EMBER_OK || !found) break;
            count++;
            if (e > s) pos = e;
            else if (e >= len) break;
            else pos = e + char_len(t, len, e);
        }
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
        pieces_n = count;
    }
    printf("%zu bytes, %zu pieces, best of %d: %.4f s, %.1f MB/s\n", len, pieces_n, repeat, best,
           (double)len / best / 1e6);
    free(t);
    ember_regex_destroy(re);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--findall") == 0) return harness_findall(argc, argv);
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return harness_bench(argc, argv);
    test_literals();
    test_alternation();
    test_quantifiers();
    test_groups();
    test_classes();
    test_escapes_and_properties();
    test_anchors();
    test_case_insensitive();
    test_invalid_utf8_text();
    test_empty_matches();
    test_tokenizer_patterns();
    test_compile_errors();
    test_step_limit();
    test_threads();
    test_deep_backtracking();
    test_random_patterns_never_crash();
    return check_finish();
}
