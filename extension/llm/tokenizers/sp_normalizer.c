/*
 * extension/llm/tokenizers/sp_normalizer.c — the library's text normalizer.
 *
 * A precompiled charsmap is
 *
 *   uint32 (little endian)  T, the size of the trie in bytes
 *   T bytes                 a darts-clone double array: uint32 units, each
 *                           holding a label (low byte, bit 31 set on value
 *                           units), a has-leaf flag (bit 8) and an offset to
 *                           its children (bits 10..31, shifted left by 8 more
 *                           when bit 9 is set); a node's child for byte c is
 *                           at (node ^ offset ^ c), and a key ends where a unit
 *                           has a leaf: its value unit is at (node ^ offset)
 *   the rest                the replacement strings, each ended by a NUL; a
 *                           key's value is the offset of its replacement
 *
 * At each position the longest key that matches wins; its replacement is the
 * normalized text. Loading checks the charsmap as the library does (sizes,
 * the final NUL, every unit's reach); the walk still checks every index.
 */
#include <string.h>

#include "sp_internal.h"

#define REPLACEMENT_CHAR "\xEF\xBF\xBD" /* U+FFFD */

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

static bool is_trail(uint8_t b) { return (b & 0xC0) == 0x80; }

static bool valid_cp(uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); }

size_t sp_utf8_valid_len(const uint8_t *s, size_t n) {
    uint8_t b = s[0];
    if (b < 0x80) return 1;
    if (n >= 2 && (b & 0xE0) == 0xC0) {
        uint32_t c = (uint32_t)(b & 0x1F) << 6 | (uint32_t)(s[1] & 0x3F);
        return is_trail(s[1]) && c >= 0x80 && valid_cp(c) ? 2 : 0;
    }
    if (n >= 3 && (b & 0xF0) == 0xE0) {
        uint32_t c = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 |
                     (uint32_t)(s[2] & 0x3F);
        return is_trail(s[1]) && is_trail(s[2]) && c >= 0x800 && valid_cp(c) ? 3 : 0;
    }
    if (n >= 4 && (b & 0xF8) == 0xF0) {
        uint32_t c = (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
                     (uint32_t)(s[2] & 0x3F) << 6 | (uint32_t)(s[3] & 0x3F);
        return is_trail(s[1]) && is_trail(s[2]) && is_trail(s[3]) && c >= 0x10000 && valid_cp(c)
                   ? 4
                   : 0;
    }
    return 0;
}

size_t sp_utf8_want(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The charsmap                                                              */
/* ------------------------------------------------------------------------ */

static uint32_t unit_at(const sp_normalizer *n, size_t i) {
    const uint8_t *u = n->trie + 4 * i;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static size_t unit_offset(uint32_t u) { return (size_t)((u >> 10) << ((u & (1u << 9)) >> 6)); }

/* The library's checks of a double array: the root leads somewhere, every
 * node's block of 256 children lies inside the array, a node where a key
 * ends has a value unit, and every value points into the replacement
 * strings. Afterwards no walk can leave the array. */
static bool units_valid(const sp_normalizer *n) {
    uint32_t root = unit_at(n, 0);
    size_t off = unit_offset(root);
    if ((root & ((1u << 31) | 0xFF)) != 0 || ((root >> 8) & 1) != 0 || off == 0 ||
        (off | 0xFF) >= n->n_units)
        return false;
    for (size_t i = 1; i < n->n_units; i++) {
        uint32_t u = unit_at(n, i);
        if ((u & (1u << 31)) == 0) {
            size_t child = i ^ unit_offset(u);
            if ((child | 0xFF) >= n->n_units) return false;
            /* A key ending here has its value unit where the children start. */
            if (((u >> 8) & 1) != 0 && (unit_at(n, child) & (1u << 31)) == 0) return false;
        } else if ((u & 0x7FFFFFFFu) >= n->n_repl) {
            return false;
        }
    }
    return true;
}

ember_status sp_normalizer_init(sp_normalizer *n, const char *name, const char *field,
                                const sp_raw_normalizer *spec, const uint8_t *charsmap,
                                size_t charsmap_len, bool treat_whitespace_as_suffix) {
    memset(n, 0, sizeof *n);
    n->add_dummy_prefix = spec->add_dummy_prefix;
    n->remove_extra_whitespaces = spec->remove_extra_whitespaces;
    n->escape_whitespaces = spec->escape_whitespaces;
    n->treat_whitespace_as_suffix = treat_whitespace_as_suffix;
    if (charsmap_len == 0) return EMBER_OK;
    if (charsmap_len <= 4)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: %s.precompiled_charsmap is broken (%zu bytes, no room for a "
                               "trie)",
                               name, field, charsmap_len);
    uint32_t trie_bytes = (uint32_t)charsmap[0] | (uint32_t)charsmap[1] << 8 |
                          (uint32_t)charsmap[2] << 16 | (uint32_t)charsmap[3] << 24;
    if (trie_bytes >= charsmap_len - 4)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: %s.precompiled_charsmap: a trie of %u bytes leaves no "
                               "replacement strings in the %zu-byte charsmap",
                               name, field, (unsigned)trie_bytes, charsmap_len);
    /* darts-clone arrays come in blocks of 256 units. */
    if (trie_bytes < 1024 || trie_bytes % 1024 != 0)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: %s.precompiled_charsmap: the trie size %u is not a positive "
                               "multiple of 1024 bytes",
                               name, field, (unsigned)trie_bytes);
    if (charsmap[charsmap_len - 1] != 0)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: %s.precompiled_charsmap: the replacement strings do not end "
                               "with a NUL",
                               name, field);
    n->trie = charsmap + 4;
    n->n_units = trie_bytes / 4;
    n->replacements = charsmap + 4 + trie_bytes;
    n->n_repl = charsmap_len - 4 - trie_bytes;
    if (!units_valid(n))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: %s.precompiled_charsmap: the trie points outside itself or "
                               "its strings",
                               name, field);
    size_t root = unit_offset(unit_at(n, 0));
    for (unsigned b = 0; b < 256; b++) {
        size_t node = root ^ b;
        n->may_start[b] = node < n->n_units && (unit_at(n, node) & ((1u << 31) | 0xFF)) == b;
    }
    return EMBER_OK;
}

/* The longest charsmap key at s[0..len) (len >= 1): its length (0 if none)
 * and its replacement. */
static size_t charsmap_match(const sp_normalizer *n, const uint8_t *s, size_t len,
                             const uint8_t **repl, size_t *repl_len) {
    if (n->n_units == 0) return 0;
    size_t best = 0;
    size_t node = unit_offset(unit_at(n, 0));
    for (size_t i = 0; i < len; i++) {
        node ^= s[i];
        if (node >= n->n_units) break;
        uint32_t u = unit_at(n, node);
        if ((u & ((1u << 31) | 0xFF)) != s[i]) break;
        node ^= unit_offset(u);
        if (((u >> 8) & 1) == 0) continue;
        if (node >= n->n_units) break;
        size_t value = unit_at(n, node) & 0x7FFFFFFFu;
        if (value >= n->n_repl) continue;
        const uint8_t *r = n->replacements + value;
        const uint8_t *nul = memchr(r, 0, n->n_repl - value);
        best = i + 1;
        *repl = r;
        *repl_len = nul != NULL ? (size_t)(nul - r) : n->n_repl - value;
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* Normalize                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct prefix {
    const uint8_t *p; /* normalized text of the prefix */
    size_t n;
    size_t consumed;  /* input bytes it stands for */
} prefix;

/* The library's NormalizePrefix: a user-defined symbol as is, else the
 * charsmap's longest match, else one UTF-8 character (U+FFFD for one byte
 * that is not valid UTF-8). len >= 1. */
static prefix normalize_prefix(const sp_normalizer *n, const sp_trie *user, const uint8_t *s,
                               size_t len) {
    prefix r;
    if (user != NULL) {
        size_t u = sp_trie_longest(user, s, len);
        if (u > 0) return (prefix){s, u, u};
    }
    size_t m = charsmap_match(n, s, len, &r.p, &r.n);
    if (m > 0) {
        r.consumed = m;
        return r;
    }
    size_t l = sp_utf8_valid_len(s, len);
    if (l == 0) return (prefix){(const uint8_t *)REPLACEMENT_CHAR, 3, 1};
    return (prefix){s, l, l};
}

static bool ends_with(const sp_buf *b, size_t start, const char *s, size_t n) {
    return b->n - start >= n && memcmp(b->p + b->n - n, s, n) == 0;
}

bool sp_normalize(const sp_normalizer *n, const sp_trie *user, const uint8_t *text, size_t len,
                  sp_buf *out) {
    size_t i = 0;
    if (n->remove_extra_whitespaces) {
        while (i < len) {
            prefix p = normalize_prefix(n, user, text + i, len - i);
            if (p.n != 1 || p.p[0] != ' ') break;
            i += p.consumed;
        }
    }
    if (i == len) return true;

    const char *space = n->escape_whitespaces ? SP_SPACE : " ";
    size_t space_len = n->escape_whitespaces ? SP_SPACE_LEN : 1;
    size_t start = out->n;
    if (!n->treat_whitespace_as_suffix && n->add_dummy_prefix && !sp_buf_put(out, space, space_len))
        return false;

    bool prev_space = n->remove_extra_whitespaces;
    while (i < len) {
        /* Plain ASCII that no rule or symbol starts with stands for itself. */
        uint8_t c = text[i];
        prefix p;
        if (c < 0x80 && !n->may_start[c] && (user == NULL || sp_trie_child(user, 0, c) == SP_NO_NODE))
            p = (prefix){text + i, 1, 1};
        else
            p = normalize_prefix(n, user, text + i, len - i);
        const uint8_t *s = p.p;
        size_t sn = p.n;
        /* Spaces right after a space are dropped (remove_extra_whitespaces). */
        while (prev_space && sn > 0 && s[0] == ' ') s++, sn--;
        if (sn > 0) {
            size_t room;
            if (!sp_mul_ok(sn, 3, &room)) return false;
            if (out->cap - out->n < room && !sp_buf_reserve(out, room)) return false;
            char *o = out->p + out->n;
            for (size_t k = 0; k < sn; k++) {
                if (s[k] == ' ' && n->escape_whitespaces) {
                    memcpy(o, SP_SPACE, SP_SPACE_LEN);
                    o += SP_SPACE_LEN;
                } else {
                    *o++ = (char)s[k];
                }
            }
            out->n = (size_t)(o - out->p);
            prev_space = s[sn - 1] == ' ';
        }
        i += p.consumed;
        if (!n->remove_extra_whitespaces) prev_space = false;
    }
    if (n->remove_extra_whitespaces)
        while (ends_with(out, start, space, space_len)) out->n -= space_len;
    if (n->treat_whitespace_as_suffix && n->add_dummy_prefix && !sp_buf_put(out, space, space_len))
        return false;
    return true;
}
