/*
 * tok_unicode.c — the Unicode services the tokenizers use, over
 * text/unicode.h: characters as the `tokenizers` library (Rust) classifies
 * them, GPT-2's byte-level alphabet, normalization and lowercase.
 */
#include <stdlib.h>

#include "text/unicode.h"
#include "tok_internal.h"

size_t tok_utf8_char(const char *t, size_t n, size_t i, uint32_t *cp) {
    uint32_t c;
    size_t k = i < n ? ember_utf8_decode(t + i, n - i, &c) : 0;
    if (k == 0 || EMBER_UNICODE_IS_INVALID(c)) {
        *cp = TOK_INVALID_CP;
        return 1;
    }
    *cp = c;
    return k;
}

size_t tok_utf8_put(uint32_t cp, char out[4]) {
    size_t k = ember_utf8_encode(cp, out);
    if (k > 0) return k;
    out[0] = (char)0xEF, out[1] = (char)0xBF, out[2] = (char)0xBD; /* U+FFFD */
    return 3;
}

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves; the
 * others, in byte order, take U+0100 on (0x00-0x20, then 0x7F-0xA0, then
 * 0xAD). */
uint32_t tok_byte_char(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100u + b;
    if (b >= 0x7F && b <= 0xA0) return 0x121u + (b - 0x7Fu);
    return 0x143u; /* 0xAD */
}

int tok_bytelevel_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(0x7F + cp - 0x121);
    if (cp == 0x143) return 0xAD;
    return -1;
}

bool tok_is_whitespace(uint32_t cp) {
    return cp != TOK_INVALID_CP && ember_unicode_is_white_space(cp);
}

bool tok_is_numeric(uint32_t cp) {
    return cp != TOK_INVALID_CP && ember_unicode_in_categories(cp, EMBER_UC_MASK_N);
}

bool tok_is_punctuation(uint32_t cp) {
    if (cp < 0x80) /* Rust's is_ascii_punctuation: every printable non-alphanumeric */
        return cp > 0x20 && cp < 0x7F && !((cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') ||
                                           (cp >= 'a' && cp <= 'z'));
    return cp != TOK_INVALID_CP && ember_unicode_in_categories(cp, EMBER_UC_MASK_P);
}

/* Rust regex's \w: Alphabetic, marks, Nd, Pc (ember_unicode_is_word()) and
 * Join_Control. */
bool tok_is_rust_word(uint32_t cp) {
    if (cp == TOK_INVALID_CP) return false;
    return cp == 0x200C || cp == 0x200D || ember_unicode_is_word(cp);
}

bool tok_is_mark(uint32_t cp) {
    return cp != TOK_INVALID_CP && ember_unicode_in_categories(cp, EMBER_UC_MASK_M);
}

static ember_status take(ember_status st, char *s, size_t n, tok_buf *out) {
    out->len = 0;
    if (st == EMBER_OK) st = tok_buf_append(out, s, n);
    free(s);
    return st;
}

ember_status tok_normalize(int form, const char *t, size_t n, tok_buf *out) {
    static const ember_unicode_form forms[] = {EMBER_UNICODE_NFC, EMBER_UNICODE_NFD,
                                               EMBER_UNICODE_NFKC, EMBER_UNICODE_NFKD};
    char *s = NULL;
    size_t len = 0;
    ember_status st = ember_unicode_normalize(forms[form], t ? t : "", n, &s, &len);
    return take(st, s, len, out);
}

ember_status tok_lowercase(const char *t, size_t n, tok_buf *out) {
    char *s = NULL;
    size_t len = 0;
    ember_status st = ember_unicode_lowercase(t ? t : "", n, &s, &len);
    return take(st, s, len, out);
}
