/*
 * extension/llm/text/regex.h — a backtracking regular-expression engine over
 * UTF-8 text, for the pre-tokenizer split patterns of LLM tokenizers
 * (tokenizer.json files run by Oniguruma, tiktoken patterns run by Rust's
 * fancy-regex).
 *
 *     ember_regex *re;
 *     if (ember_regex_compile(pat, strlen(pat), &re) != EMBER_OK) ... ember_last_error() ...
 *     size_t pos = 0, s, e;
 *     bool found;
 *     while (pos <= len && ember_regex_search(re, text, len, pos, &s, &e, &found) == EMBER_OK &&
 *            found) {
 *         ... piece text[s..e) ...
 *         pos = e > s ? e : e + (length of the character at e, or 1 at the end);
 *     }
 *     ember_regex_destroy(re);
 *
 * Semantics are Perl's, PCRE's and Oniguruma's: the leftmost match, and at
 * that position the first one in pattern order (alternatives left to right,
 * greedy quantifiers longest first, lazy ones shortest first). Matching works
 * on code points; offsets are byte offsets.
 *
 * Supported:
 *   literals (any UTF-8 character), escaped metacharacters, '.', '|',
 *   groups ( ) (?: ) (?<name> ) (?P<name> ) (captures are not reported),
 *   atomic groups (?> ), lookahead (?= ) (?! ), lookbehind (?<= ) (?<! )
 *   whose alternatives have a bounded length (at most 255 characters),
 *   quantifiers * + ? {n} {n,} {n,m} {,m}, each greedy, lazy (?) or
 *   possessive (+), counts up to 100000;
 *   classes [...] [^...] with ranges, escapes and nested classes ([a[bc]]);
 *   \s \S \d \D \w \W (Oniguruma's Unicode sets, see unicode.h),
 *   \p{..} \P{..} \pL \p{^..} with general categories and their groups
 *   (L Lu Ll Lt Lm Lo LC M Mn Mc Me N Nd Nl No P.. S.. Z.. C.., short or
 *   long names), Any, Assigned, ASCII, White_Space (Space), Word;
 *   \t \n \r \f \v (U+000B) \a \e \0 \0oo \xHH \x{H..} \uHHHH \UHHHHHHHH;
 *   anchors ^ $ \A \z \Z (end or before a final newline) \b \B (word
 *   boundaries by \w) \G (the search's start offset);
 *   inline flags (?i) (?m) (?s) (?-i) ... for the rest of the enclosing
 *   group, and scoped (?i: ) (?-i: ) (?i-s: ). (?m) is Perl's multiline
 *   (^ and $ at line breaks), not Ruby's dot-all.
 *   Case-insensitive matching compares simple case foldings (k, K and the
 *   Kelvin sign are one letter), for literals and classes alike. As in Perl,
 *   PCRE and Python, an iteration of a group that matches nothing ends the
 *   loop.
 *
 * Refused with EMBER_ERR_NOT_SUPPORTED: backreferences (\1, \k<..>),
 * subroutine calls (\g), conditionals (?(..)), recursion, \K \X \R \N \C,
 * \Q..\E, POSIX brackets [:alpha:], class operations (&&), Unicode scripts
 * and properties other than the ones above, (?x), unbounded lookbehind.
 * Syntax errors give EMBER_ERR_INVALID_ARGUMENT. Both messages name the
 * byte offset in the pattern and quote the construct.
 *
 * Invalid UTF-8 in the text: every invalid byte is one character that no
 * literal, range or positive class (\p{..}, \s, \d, \w, [abc]) matches, and
 * every complemented one (\P{..}, \S, \D, \W, [^..]) and '.' match — as if
 * it were a code point outside every set. Invalid UTF-8 in the pattern is
 * an error.
 *
 * ^ and $: by default, as in PCRE and Python, ^ matches at the start of the
 * text and $ at the end or before a final "\n". EMBER_REGEX_MULTILINE gives
 * the line anchors of Oniguruma's Ruby syntax, the one Hugging Face's
 * tokenizers compile tokenizer.json patterns with (^ after every "\n"
 * except one that ends the text, $ before every "\n");
 * EMBER_REGEX_DOLLAR_ENDONLY gives Rust's regex (tiktoken): $ only at the
 * very end.
 *
 * Where Python's regex module differs (the tests compare against it): its \Z
 * is the very end (here, as in PCRE and Oniguruma, also before a final
 * "\n"; \z is the very end); with MULTILINE its ^ also matches after a
 * "\n" that ends the text; its \w is another set (see unicode.h); \p{L&}
 * there includes Lm; an inline (?i) in the middle of a pattern applies to
 * the whole pattern in its default mode (here to the rest of the group);
 * (?i)i also matches U+0130 there (Turkic folding; not here). None of these
 * occur in tokenizer patterns.
 *
 * Cost: the engine backtracks, so a pathological pattern can take
 * exponential time. Each search counts its steps and fails with
 * EMBER_ERR_LOOP_LIMIT past the limit (EMBER_REGEX_DEFAULT_STEP_LIMIT unless
 * the options set one). The backtracking stack is bounded too
 * (EMBER_ERR_OUT_OF_MEMORY past 8 Mi entries).
 *
 * Threads: a compiled regex is immutable; any number of threads may search
 * with it at once. Searches allocate nothing unless a match needs more than
 * 256 backtracking entries or the pattern has more than 32 atomic groups,
 * lookarounds and repeated groups that can match nothing, in all.
 */
#ifndef EMBER_LLM_TEXT_REGEX_H
#define EMBER_LLM_TEXT_REGEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A compiled pattern (opaque). */
typedef struct ember_regex ember_regex;

/** Compile flags (ember_regex_options.flags). */
#define EMBER_REGEX_CASELESS (1u << 0)       /**< as if the pattern began with (?i) */
#define EMBER_REGEX_MULTILINE (1u << 1)      /**< ^ and $ at line breaks (Oniguruma, Ruby syntax) */
#define EMBER_REGEX_DOTALL (1u << 2)         /**< '.' matches "\n" too */
#define EMBER_REGEX_DOLLAR_ENDONLY (1u << 3) /**< $ only at the end (Rust's regex) */

/** Steps a search may take unless the options say otherwise. */
#define EMBER_REGEX_DEFAULT_STEP_LIMIT 50000000u

/** Largest count in {n,m}. */
#define EMBER_REGEX_MAX_REPEAT 100000u

/** Options of ember_regex_compile_ex(). Zero-initialize, then set struct_size. */
typedef struct ember_regex_options {
    size_t struct_size;  /**< sizeof(ember_regex_options) */
    uint32_t flags;      /**< EMBER_REGEX_* */
    uint64_t step_limit; /**< steps per search; 0 means EMBER_REGEX_DEFAULT_STEP_LIMIT */
} ember_regex_options;

/**
 * Compiles a pattern with the default options.
 *
 * @param[in]  pattern  the pattern, UTF-8, len bytes (not NUL-terminated;
 *                      may be NULL when len is 0); not kept
 * @param[in]  len      its length
 * @param[out] out      the compiled regex (release with ember_regex_destroy());
 *                      untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or a syntax
 *         error: the message names the offset and the construct);
 *         EMBER_ERR_NOT_SUPPORTED (a construct this engine refuses, named
 *         with its offset); EMBER_ERR_OUT_OF_MEMORY (including a program
 *         too large after expanding counted repetitions).
 * Allocates. Thread-safe.
 */
ember_status ember_regex_compile(const char *pattern, size_t len, ember_regex **out);

/**
 * Compiles a pattern with options.
 *
 * @param[in]  pattern  as ember_regex_compile()
 * @param[in]  len      its length
 * @param[in]  options  flags and step limit (copied), or NULL for the defaults
 * @param[out] out      as ember_regex_compile()
 * @return as ember_regex_compile(); EMBER_ERR_INVALID_ARGUMENT also for an
 *         options struct_size that is too small or an unknown flag.
 */
ember_status ember_regex_compile_ex(const char *pattern, size_t len,
                                    const ember_regex_options *options, ember_regex **out);

/** Releases a compiled regex. NULL is a no-op. */
void ember_regex_destroy(ember_regex *re);

/**
 * Finds the leftmost match that starts at or after byte offset start. The
 * text before start still counts for lookbehind, \b and ^; \A is offset 0
 * and \G is start.
 *
 * @param[in]  re           the compiled regex
 * @param[in]  text         the text, len bytes (any bytes; may be NULL when
 *                          len is 0)
 * @param[in]  len          its length
 * @param[in]  start        where to begin, 0..len; a match may start there
 *                          only on a character boundary as seen from offset 0
 *                          (the caller passes boundaries)
 * @param[out] match_start  offset of the match when found
 * @param[out] match_end    offset just past it (equal to match_start for an
 *                          empty match)
 * @param[out] found        whether a match was found
 * @return EMBER_OK (found or not); EMBER_ERR_INVALID_ARGUMENT (a NULL
 *         argument, start > len); EMBER_ERR_LOOP_LIMIT (the step limit was
 *         reached: the message says so, *found is false);
 *         EMBER_ERR_OUT_OF_MEMORY (the backtracking stack).
 * Allocates only when a match needs a deep backtracking stack. Thread-safe.
 */
ember_status ember_regex_search(const ember_regex *re, const char *text, size_t len, size_t start,
                                size_t *match_start, size_t *match_end, bool *found);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_TEXT_REGEX_H */
