/*
 * extension/llm/jinja/jinja_text.c — UTF-8 and the bits of Python's Unicode
 * behaviour the engine needs: isspace, splitlines boundaries, case mapping
 * (from tables generated from Python, jinja_case_tables.c), isprintable
 * for repr().
 */
#include <string.h>

#include "jinja_internal.h"
#include "text/unicode.h"

size_t jj_utf8_next(const char *str, size_t n, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (n < len) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return len;
}

bool jj_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t l = jj_utf8_next(s + i, n - i, &cp);
        if (l == 1) return false; /* a lone byte >= 0x80 decodes as U+FFFD, length 1 */
        i += l;
    }
    return true;
}

size_t jj_utf8_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += jj_utf8_next(s + i, n - i, &cp);
        k++;
    }
    return k;
}

size_t jj_utf8_offset(const char *s, size_t n, size_t k) {
    size_t i = 0;
    while (k > 0 && i < n) {
        uint32_t cp;
        i += jj_utf8_next(s + i, n - i, &cp);
        k--;
    }
    return i;
}

bool jj_is_space(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool jj_is_linebreak(uint32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* The case range holding cp, or NULL. Ranges are sorted by their first
 * code point; ranges of stride 2 interleave, so a few earlier ones are
 * checked too (the table's generator checks that this suffices). */
static const jj_case_range *case_of(uint32_t cp) {
    size_t lo = 0, hi = jj_case_ranges_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (jj_case_ranges[mid].first <= cp) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo, tries = 0; k-- > 0 && tries < 4; tries++) {
        const jj_case_range *r = &jj_case_ranges[k];
        if (cp <= r->last && (cp - r->first) % r->stride == 0) return r;
    }
    return NULL;
}

static const jj_case_special *special_of(uint32_t cp) {
    size_t lo = 0, hi = jj_case_specials_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (jj_case_specials[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < jj_case_specials_count && jj_case_specials[lo].cp == cp ? &jj_case_specials[lo] : NULL;
}

static uint32_t case_flags(uint32_t cp) {
    const jj_case_range *r = case_of(cp);
    return r ? r->flags : 0;
}

bool jj_is_lower(uint32_t cp) { return (case_flags(cp) & JJ_CASE_LOWER) != 0; }
bool jj_is_upper(uint32_t cp) { return (case_flags(cp) & JJ_CASE_UPPER) != 0; }
bool jj_is_title(uint32_t cp) { return (case_flags(cp) & JJ_CASE_TITLE) != 0; }
bool jj_is_cased(uint32_t cp) { return (case_flags(cp) & JJ_CASE_CASED) != 0; }

/* The code point before byte offset i, or 0. */
static uint32_t cp_before(const char *s, size_t i) {
    if (i == 0) return 0;
    size_t k = i - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    uint32_t cp;
    jj_utf8_next(s + k, i - k, &cp);
    return cp;
}

bool jj_buf_case(jj_buf *b, const char *s, size_t n, size_t i, size_t len, int mode) {
    uint32_t cp;
    jj_utf8_next(s + i, n - i, &cp);
    if (cp == 0xFFFD && len == 1 && (unsigned char)s[i] >= 0x80)
        return jj_buf_put(b, s + i, 1); /* an invalid byte stays */
    if (mode == JJ_LOWER && cp == 0x03A3) {
        /* Final sigma: after a cased letter and not before one. */
        uint32_t next = 0;
        if (i + len < n) jj_utf8_next(s + i + len, n - i - len, &next);
        bool final = jj_is_cased(cp_before(s, i)) && !jj_is_cased(next);
        char tmp[4];
        return jj_buf_put(b, tmp, ember_utf8_encode(final ? 0x03C2 : 0x03C3, tmp));
    }
    const jj_case_range *r = case_of(cp);
    if (r == NULL) return jj_buf_put(b, s + i, len);
    if (r->flags & JJ_CASE_SPECIAL) {
        const jj_case_special *sp = special_of(cp);
        if (sp != NULL) {
            const char *m = mode == JJ_LOWER ? sp->lower : mode == JJ_UPPER ? sp->upper : sp->title;
            return jj_buf_puts(b, m);
        }
        return jj_buf_put(b, s + i, len);
    }
    int32_t d = mode == JJ_LOWER ? r->lower : mode == JJ_UPPER ? r->upper : r->title;
    char tmp[4];
    return jj_buf_put(b, tmp, ember_utf8_encode((uint32_t)((int32_t)cp + d), tmp));
}

bool jj_buf_map_case(jj_buf *b, const char *s, size_t n, int mode) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = jj_utf8_next(s + i, n - i, &cp);
        if (cp < 0x80 && mode != JJ_TITLE) {
            char c = (char)cp;
            if (mode == JJ_LOWER && c >= 'A' && c <= 'Z') c = (char)(c + 32);
            if (mode == JJ_UPPER && c >= 'a' && c <= 'z') c = (char)(c - 32);
            if (!jj_buf_putc(b, c)) return false;
        } else if (!jj_buf_case(b, s, n, i, l, mode)) {
            return false;
        }
        i += l;
    }
    return true;
}

bool jj_is_alpha(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return ember_unicode_in_categories(c, EMBER_UC_MASK_L);
}

bool jj_is_digit(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return ember_unicode_in_categories(c, EMBER_UC_MASK_N);
}

bool jj_is_printable(uint32_t c) {
    if (c < 0x20 || c == 0x7F) return false;
    if (c < 0x7F) return true;
    if (c <= 0xA0 || c == 0xAD) return false;               /* C1 controls, NBSP, soft hyphen */
    if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F)) return false; /* spaces, ZW, marks */
    if (c >= 0x2028 && c <= 0x202F) return false;            /* separators, bidi */
    if (c >= 0x205F && c <= 0x206F) return false;
    if (c == 0x3000 || c == 0xFEFF) return false;
    if (c >= 0xD800 && c <= 0xF8FF) return false;            /* surrogates, private use */
    if (c >= 0xFFF0 && c <= 0xFFFB) return false;
    if (c == 0xFFFE || c == 0xFFFF) return false;
    if (c >= 0xE0000) return false;                          /* tags, private use planes */
    return true;
}
