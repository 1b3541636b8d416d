/*
 * extension/llm/text/json.c — strict JSON reader (see json.h).
 *
 * The parser is iterative: an explicit stack of open containers (so a deep
 * document cannot overflow the C stack) and a scratch stack of finished
 * values. When a container closes, its children move from the scratch
 * stack into the document's arena in one copy, so every array and object
 * ends up contiguous:
 *
 *   array   items   (n)      value, value, ...
 *   object  items   (2 * n)  key, value, key, value, ... (keys are strings)
 *           index   (1 + cap) cap, then open-addressing slots holding
 *                             member index + 1 (0 = free); only for objects
 *                             of more than JSON_INDEX_MIN members
 */
#include "json.h"
#include "unicode.h"

#include <float.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_INDEX_MIN 8

enum { FLAG_TRUE = 1, FLAG_INT = 2 };

struct ember_json {
    uint8_t type;  /* ember_json_type */
    uint8_t flags; /* FLAG_TRUE for true; FLAG_INT for numbers exact in int64 */
    uint32_t n;    /* bytes of a string or number text; items of an array;
                      members of an object */
    union {
        const char *str;          /* string bytes, number text (NUL-terminated) */
        const struct ember_json *items;
    } p;
    union {
        double d;                 /* number without FLAG_INT */
        int64_t i;                /* number with FLAG_INT */
        const uint32_t *index;    /* object: hash index, or NULL */
    } x;
};

/* ------------------------------------------------------------------------ */
/* Arena                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct arena_block {
    struct arena_block *next;
    size_t cap, used;
    max_align_t data[]; /* (cap bytes) */
} arena_block;

typedef struct arena {
    arena_block *head; /* the block being filled; older ones follow */
    size_t total;      /* bytes in all blocks */
} arena;

#define ARENA_ALIGN 8
#define ARENA_MIN_BLOCK ((size_t)64 * 1024)

static void arena_free(arena *a) {
    arena_block *b = a->head;
    while (b != NULL) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* size bytes aligned to ARENA_ALIGN, or NULL when out of memory. A new block
 * is at least as large as everything before it, so the blocks' total stays
 * within twice what is used. */
static void *arena_alloc(arena *a, size_t size) {
    if (size > SIZE_MAX - ARENA_ALIGN) return NULL;
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    arena_block *b = a->head;
    if (b == NULL || b->cap - b->used < size) {
        size_t cap = a->total > ARENA_MIN_BLOCK ? a->total : ARENA_MIN_BLOCK;
        if (cap < size) cap = size;
        if (cap > SIZE_MAX - sizeof(arena_block)) return NULL;
        b = malloc(sizeof(arena_block) + cap);
        if (b == NULL) return NULL;
        b->next = a->head;
        b->cap = cap;
        b->used = 0;
        a->head = b;
        a->total += cap;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

/* ------------------------------------------------------------------------ */
/* Parser state                                                              */
/* ------------------------------------------------------------------------ */

typedef struct open_container {
    uint8_t type;  /* EMBER_JSON_ARRAY or EMBER_JSON_OBJECT */
    size_t base;   /* first child's slot on the value stack */
} open_container;

typedef struct parser {
    const unsigned char *s;
    size_t n, i;
    const char *name;
    size_t max_depth;
    arena *ar;
    ember_json *vals; /* (vals_cap) finished values not yet in a container */
    size_t n_vals, vals_cap;
    open_container *open; /* (open_cap) containers being read, outermost first */
    size_t n_open, open_cap;
} parser;

/* Line and column (1-based; the column in characters) of byte offset at. */
static void line_col(const unsigned char *s, size_t at, size_t *line, size_t *col) {
    size_t l = 1, c = 1;
    for (size_t k = 0; k < at; k++) {
        if (s[k] == '\n') {
            l++;
            c = 1;
        } else if ((s[k] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static ember_status fail_at(const parser *p, size_t at, ember_status st, const char *what) {
    size_t line, col;
    line_col(p->s, at, &line, &col);
    return ember_error_set(st, "%s:%zu:%zu: %s", p->name, line, col, what);
}

static ember_status syntax(const parser *p, size_t at, const char *what) {
    if (at >= p->n) what = "unexpected end of input";
    return fail_at(p, at, EMBER_ERR_INVALID_ARGUMENT, what);
}

static ember_status oom(const parser *p) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", p->name);
}

static bool push_val(parser *p, const ember_json *v) {
    if (p->n_vals == p->vals_cap) {
        size_t cap = p->vals_cap ? p->vals_cap * 2 : 256;
        if (cap > SIZE_MAX / sizeof *p->vals) return false;
        ember_json *nv = realloc(p->vals, cap * sizeof *nv);
        if (nv == NULL) return false;
        p->vals = nv;
        p->vals_cap = cap;
    }
    p->vals[p->n_vals++] = *v;
    return true;
}

static bool push_open(parser *p, uint8_t type) {
    if (p->n_open == p->open_cap) {
        size_t cap = p->open_cap ? p->open_cap * 2 : 32;
        if (cap > SIZE_MAX / sizeof *p->open) return false;
        open_container *no = realloc(p->open, cap * sizeof *no);
        if (no == NULL) return false;
        p->open = no;
        p->open_cap = cap;
    }
    p->open[p->n_open].type = type;
    p->open[p->n_open].base = p->n_vals;
    p->n_open++;
    return true;
}

static void skip_ws(parser *p) {
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c == ' ' && p->n - p->i >= 8) {
            /* Pretty-printed files indent with runs of spaces. */
            uint64_t w;
            memcpy(&w, p->s + p->i, 8);
            if (w == 0x2020202020202020ull) {
                p->i += 8;
                continue;
            }
        }
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        p->i++;
    }
}

/* ------------------------------------------------------------------------ */
/* Strings                                                                   */
/* ------------------------------------------------------------------------ */

/* Length (2..4) of the valid UTF-8 sequence starting with a byte >= 0x80 at
 * s[0..n), or 0 (overlong forms, surrogates and values past U+10FFFF are
 * invalid). */
static size_t utf8_valid_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && s[1] >= 0x90) return 0; /* past U+10FFFF */
        return 4;
    }
    return 0;
}

/* True when some byte of w is '"', '\\', below 0x20 or above 0x7F. The
 * zero-byte tests may also flag bytes after a real hit, never miss one. */
static bool word_special(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"');
    uint64_t b = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
    return (hit & highs) != 0;
}

static int hex_val(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The four hex digits at s[at..]; -1 when they are not there. */
static long hex4(const parser *p, size_t at) {
    if (p->n - at < 4) return -1;
    long v = 0;
    for (size_t k = 0; k < 4; k++) {
        int d = hex_val(p->s[at + k]);
        if (d < 0) return -1;
        v = (v << 4) | d;
    }
    return v;
}

/* Reads the string whose opening quote is at p->i into out (type STRING). */
static ember_status parse_string(parser *p, ember_json *out) {
    size_t start = ++p->i; /* first byte after the quote */
    size_t i = start;
    bool escaped = false;
    /* Pass 1: find the closing quote, checking UTF-8 and escapes' shape. */
    for (;;) {
        while (p->n - i >= 8) {
            uint64_t w;
            memcpy(&w, p->s + i, 8);
            if (word_special(w)) break;
            i += 8;
        }
        if (i >= p->n) return syntax(p, i, "unterminated string");
        unsigned char c = p->s[i];
        if (c == '"') break;
        if (c < 0x20) return syntax(p, i, "control character in a string (write it as an escape)");
        if (c < 0x80 && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t l = utf8_valid_len(p->s + i, p->n - i);
            if (l == 0) return syntax(p, i, "invalid UTF-8 in a string");
            i += l;
            continue;
        }
        escaped = true;
        if (i + 1 >= p->n) return syntax(p, p->n, "");
        unsigned char e = p->s[i + 1];
        if (e == 'u') {
            long cp = hex4(p, i + 2);
            if (cp < 0) return syntax(p, i, "\\u needs four hex digits");
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return syntax(p, i, "lone surrogate (a low surrogate \\u" "DC00-\\uDFFF without a high one)");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = -1;
                if (p->n - i >= 8 && p->s[i + 6] == '\\' && p->s[i + 7] == 'u') lo = hex4(p, i + 8);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return syntax(p, i, "lone surrogate (a high surrogate not followed by a low one)");
                i += 12;
            } else {
                i += 6;
            }
            continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't')
            return syntax(p, i, "invalid escape (use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)");
        i += 2;
    }
    size_t raw = i - start;
    p->i = i + 1;
    if (raw > UINT32_MAX - 1) return fail_at(p, start, EMBER_ERR_NOT_SUPPORTED, "string too long");
    /* Decoding never lengthens a string: an escape of k bytes gives at most k. */
    char *dst = arena_alloc(p->ar, raw + 1);
    if (dst == NULL) return oom(p);
    size_t len;
    if (!escaped) {
        memcpy(dst, p->s + start, raw);
        len = raw;
    } else {
        /* Pass 2: decode (shapes were checked in pass 1). */
        len = 0;
        for (size_t k = start; k < i;) {
            unsigned char c = p->s[k];
            if (c != '\\') {
                dst[len++] = (char)c;
                k++;
                continue;
            }
            unsigned char e = p->s[k + 1];
            char ch = 0;
            switch (e) {
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'n': ch = '\n'; break;
            case 'r': ch = '\r'; break;
            case 't': ch = '\t'; break;
            case 'u': {
                uint32_t cp = (uint32_t)hex4(p, k + 2);
                k += 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo = (uint32_t)hex4(p, k + 2);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    k += 6;
                }
                len += ember_utf8_encode(cp, dst + len);
                continue;
            }
            default: ch = (char)e; break; /* " \ / */
            }
            dst[len++] = ch;
            k += 2;
        }
    }
    dst[len] = '\0';
    out->type = EMBER_JSON_STRING;
    out->flags = 0;
    out->n = (uint32_t)len;
    out->p.str = dst;
    out->x.i = 0;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------ */

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Exact powers of ten as doubles (10^22 is the largest one). */
static const double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* strtod of a NUL-terminated JSON number, whatever the C locale's decimal
 * point is. */
static double strtod_c(const char *text, size_t len) {
    const char *point = localeconv()->decimal_point;
    if (point == NULL || strcmp(point, ".") == 0 || memchr(text, '.', len) == NULL)
        return strtod(text, NULL);
    size_t pl = strlen(point);
    char small[128];
    size_t need = len + pl + 1;
    char *buf = need <= sizeof small ? small : malloc(need);
    if (buf == NULL) return strtod(text, NULL);
    size_t o = 0;
    for (size_t k = 0; k < len; k++) {
        if (text[k] == '.') {
            memcpy(buf + o, point, pl);
            o += pl;
        } else {
            buf[o++] = text[k];
        }
    }
    buf[o] = '\0';
    double d = strtod(buf, NULL);
    if (buf != small) free(buf);
    return d;
}

static ember_status parse_number(parser *p, ember_json *out) {
    const unsigned char *s = p->s;
    size_t start = p->i, i = p->i;
    bool neg = false;
    if (s[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= p->n || !is_digit(s[i])) return syntax(p, i, "invalid number (a digit must follow '-')");
    /* Significant digits go into mant (at most 19 of them); dropped counts
     * the rest, so the value is mant * 10^(exp10) with exp10 adjusted. */
    uint64_t mant = 0;
    int sig = 0;
    bool many = false;
    long exp10 = 0;
    if (s[i] == '0') {
        i++;
        if (i < p->n && is_digit(s[i]))
            return syntax(p, i - 1, "invalid number (no leading zeros)");
    } else {
        while (i < p->n && is_digit(s[i])) {
            if (sig < 19) {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                sig++;
            } else {
                many = true;
                exp10++;
            }
            i++;
        }
    }
    bool integer = true;
    if (i < p->n && s[i] == '.') {
        integer = false;
        i++;
        if (i >= p->n || !is_digit(s[i]))
            return syntax(p, i, "invalid number (a digit must follow '.')");
        while (i < p->n && is_digit(s[i])) {
            if (mant == 0 && s[i] == '0') {
                exp10--;
            } else if (sig < 19) {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                sig++;
                exp10--;
            } else {
                many = true;
            }
            i++;
        }
    }
    if (i < p->n && (s[i] == 'e' || s[i] == 'E')) {
        integer = false;
        i++;
        bool eneg = false;
        if (i < p->n && (s[i] == '+' || s[i] == '-')) {
            eneg = s[i] == '-';
            i++;
        }
        if (i >= p->n || !is_digit(s[i]))
            return syntax(p, i, "invalid number (a digit must follow the exponent)");
        long e = 0;
        while (i < p->n && is_digit(s[i])) {
            if (e < 1000000) e = e * 10 + (s[i] - '0');
            i++;
        }
        exp10 += eneg ? -e : e;
    }
    size_t len = i - start;
    p->i = i;
    char *text = arena_alloc(p->ar, len + 1);
    if (text == NULL) return oom(p);
    memcpy(text, s + start, len);
    text[len] = '\0';

    out->type = EMBER_JSON_NUMBER;
    out->flags = 0;
    out->n = (uint32_t)len;
    out->p.str = text;
    if (integer && !many) {
        /* Up to 19 digits: fits uint64; int64 holds it unless it is past
         * 2^63 - 1 (2^63 when negative). */
        uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        if (mant <= lim) {
            out->flags = FLAG_INT;
            out->x.i = neg ? (mant == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mant)
                           : (int64_t)mant;
            return EMBER_OK;
        }
    }
    double d;
#if FLT_EVAL_METHOD == 0
    /* Clinger's fast path: both factors exact, so one rounding. */
    if (!many && mant <= ((uint64_t)1 << 53) && exp10 >= -22 && exp10 <= 22) {
        d = (double)mant;
        d = exp10 < 0 ? d / k_pow10[-exp10] : d * k_pow10[exp10];
        if (neg) d = -d;
    } else {
        d = strtod_c(text, len);
    }
#else
    (void)k_pow10;
    d = strtod_c(text, len);
#endif
    out->x.d = d;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Containers                                                                */
/* ------------------------------------------------------------------------ */

static uint64_t hash_key(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t k = 0; k < n; k++) {
        h ^= (unsigned char)s[k];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static bool key_eq(const ember_json *k, const char *s, size_t n) {
    return k->n == n && (n == 0 || memcmp(k->p.str, s, n) == 0);
}

/* Builds the hash index of an object of n members (items: 2n nodes). A
 * repeated key's slot ends up holding its last member. */
static bool build_index(parser *p, ember_json *obj) {
    size_t n = obj->n, cap = 16;
    while (cap / 2 < n) cap *= 2; /* n < 2^31, so no overflow */
    uint32_t *index = arena_alloc(p->ar, (cap + 1) * sizeof *index);
    if (index == NULL) return false;
    memset(index, 0, (cap + 1) * sizeof *index);
    index[0] = (uint32_t)cap;
    uint32_t *slots = index + 1;
    size_t mask = cap - 1;
    for (size_t m = 0; m < n; m++) {
        const ember_json *k = &obj->p.items[2 * m];
        size_t h = (size_t)hash_key(k->p.str, k->n) & mask;
        while (slots[h] != 0 && !key_eq(&obj->p.items[2 * (slots[h] - 1)], k->p.str, k->n))
            h = (h + 1) & mask;
        slots[h] = (uint32_t)(m + 1);
    }
    obj->x.index = index;
    return true;
}

/* Closes the innermost open container: its children leave the value stack
 * for the arena and the container takes their place. */
static ember_status close_container(parser *p) {
    open_container oc = p->open[--p->n_open];
    size_t count = p->n_vals - oc.base;
    ember_json node;
    node.type = oc.type;
    node.flags = 0;
    node.n = (uint32_t)(oc.type == EMBER_JSON_OBJECT ? count / 2 : count);
    node.p.items = NULL;
    node.x.index = NULL;
    if (count > 0) {
        ember_json *items = arena_alloc(p->ar, count * sizeof *items);
        if (items == NULL) return oom(p);
        memcpy(items, p->vals + oc.base, count * sizeof *items);
        node.p.items = items;
        if (oc.type == EMBER_JSON_OBJECT && node.n > JSON_INDEX_MIN && !build_index(p, &node))
            return oom(p);
    }
    p->n_vals = oc.base;
    if (!push_val(p, &node)) return oom(p);
    return EMBER_OK;
}

/* Reads `"key" :` of an object member and pushes the key. */
static ember_status parse_key(parser *p) {
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != '"')
        return syntax(p, p->i, "expected a string key (object keys are double-quoted strings)");
    ember_json key;
    ember_status st = parse_string(p, &key);
    if (st != EMBER_OK) return st;
    if (!push_val(p, &key)) return oom(p);
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != ':') return syntax(p, p->i, "expected ':' after an object key");
    p->i++;
    return EMBER_OK;
}

static bool match_word(const parser *p, const char *w, size_t wl) {
    return p->n - p->i >= wl && memcmp(p->s + p->i, w, wl) == 0;
}

static ember_status parse_document(parser *p) {
    ember_status st;
    for (;;) {
        /* A value starts here. */
        skip_ws(p);
        if (p->i >= p->n) return syntax(p, p->i, "");
        unsigned char c = p->s[p->i];
        ember_json v;
        if (c == '[' || c == '{') {
            if (p->n_open >= p->max_depth) {
                char msg[96];
                snprintf(msg, sizeof msg, "nesting deeper than %zu arrays and objects", p->max_depth);
                return fail_at(p, p->i, EMBER_ERR_NOT_SUPPORTED, msg);
            }
            uint8_t type = c == '[' ? EMBER_JSON_ARRAY : EMBER_JSON_OBJECT;
            if (!push_open(p, type)) return oom(p);
            p->i++;
            skip_ws(p);
            if (p->i < p->n && p->s[p->i] == (c == '[' ? ']' : '}')) {
                p->i++;
                if ((st = close_container(p)) != EMBER_OK) return st;
            } else {
                if (type == EMBER_JSON_OBJECT && (st = parse_key(p)) != EMBER_OK) return st;
                continue;
            }
        } else {
            if (c == '"') {
                st = parse_string(p, &v);
            } else if (c == '-' || is_digit(c)) {
                st = parse_number(p, &v);
            } else if (match_word(p, "true", 4) || match_word(p, "false", 5)) {
                bool t = c == 't';
                p->i += t ? 4 : 5;
                v = (ember_json){.type = EMBER_JSON_BOOL, .flags = t ? FLAG_TRUE : 0};
                st = EMBER_OK;
            } else if (match_word(p, "null", 4)) {
                p->i += 4;
                v = (ember_json){.type = EMBER_JSON_NULL};
                st = EMBER_OK;
            } else {
                st = syntax(p, p->i, "expected a value");
            }
            if (st != EMBER_OK) return st;
            if (!push_val(p, &v)) return oom(p);
        }
        /* A value ended: close containers, or go on to the next item. */
        for (;;) {
            if (p->n_open == 0) return EMBER_OK;
            skip_ws(p);
            uint8_t type = p->open[p->n_open - 1].type;
            unsigned char d = p->i < p->n ? p->s[p->i] : 0;
            if (d == ',') {
                p->i++;
                if (type == EMBER_JSON_OBJECT && (st = parse_key(p)) != EMBER_OK) return st;
                break;
            }
            if ((type == EMBER_JSON_ARRAY && d == ']') || (type == EMBER_JSON_OBJECT && d == '}')) {
                p->i++;
                if ((st = close_container(p)) != EMBER_OK) return st;
                continue;
            }
            return syntax(p, p->i, type == EMBER_JSON_ARRAY
                                       ? "expected ',' or ']' after an array item"
                                       : "expected ',' or '}' after an object member");
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                 */
/* ------------------------------------------------------------------------ */

struct ember_json_doc {
    arena ar;
    ember_json root;
};

ember_status ember_json_parse_ex(const char *text, size_t len, const ember_json_options *opt,
                                 ember_json_doc **out) {
    if (out == NULL || (text == NULL && len > 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_json_parse: NULL argument");
    const char *name = "json";
    size_t max_depth = EMBER_JSON_DEFAULT_MAX_DEPTH;
    if (opt != NULL) {
        if (opt->struct_size < sizeof(ember_json_options))
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_json_parse_ex: options struct_size %zu is too small",
                                   opt->struct_size);
        if (opt->name != NULL) name = opt->name;
        if (opt->max_depth > EMBER_JSON_MAX_DEPTH_LIMIT)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_json_parse_ex: max_depth %zu is over the limit %d",
                                   opt->max_depth, EMBER_JSON_MAX_DEPTH_LIMIT);
        if (opt->max_depth > 0) max_depth = opt->max_depth;
    }
    if (len > EMBER_JSON_MAX_BYTES)
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED, "%s: document of %zu bytes is too large",
                               name, len);

    ember_json_doc *doc = malloc(sizeof *doc);
    if (doc == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    doc->ar.head = NULL;
    doc->ar.total = 0;

    static const unsigned char empty[1] = {0};
    parser p = {0};
    p.s = text != NULL ? (const unsigned char *)text : empty;
    p.n = len;
    p.name = name;
    p.max_depth = max_depth;
    p.ar = &doc->ar;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.i = 3;

    ember_status st = parse_document(&p);
    if (st == EMBER_OK) {
        skip_ws(&p);
        if (p.i < p.n) st = syntax(&p, p.i, "unexpected text after the document");
    }
    if (st == EMBER_OK) doc->root = p.vals[0];
    free(p.vals);
    free(p.open);
    if (st != EMBER_OK) {
        arena_free(&doc->ar);
        free(doc);
        return st;
    }
    *out = doc;
    return EMBER_OK;
}

ember_status ember_json_parse(const char *text, size_t len, ember_json_doc **out) {
    return ember_json_parse_ex(text, len, NULL, out);
}

void ember_json_doc_destroy(ember_json_doc *doc) {
    if (doc == NULL) return;
    arena_free(&doc->ar);
    free(doc);
}

const ember_json *ember_json_root(const ember_json_doc *doc) {
    return doc != NULL ? &doc->root : NULL;
}

ember_json_type ember_json_type_of(const ember_json *v) {
    return v != NULL ? (ember_json_type)v->type : EMBER_JSON_NULL;
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */
/* ------------------------------------------------------------------------ */

size_t ember_json_object_size(const ember_json *obj) {
    return obj != NULL && obj->type == EMBER_JSON_OBJECT ? obj->n : 0;
}

const ember_json *ember_json_object_at(const ember_json *obj, size_t i, const char **key,
                                       size_t *key_len) {
    if (obj == NULL || obj->type != EMBER_JSON_OBJECT || i >= obj->n) return NULL;
    const ember_json *k = &obj->p.items[2 * i];
    if (key != NULL) *key = k->p.str;
    if (key_len != NULL) *key_len = k->n;
    return k + 1;
}

const ember_json *ember_json_get(const ember_json *obj, const char *key, size_t key_len) {
    if (obj == NULL || obj->type != EMBER_JSON_OBJECT || (key == NULL && key_len > 0)) return NULL;
    const ember_json *items = obj->p.items;
    if (obj->x.index == NULL) {
        for (size_t m = obj->n; m-- > 0;)
            if (key_eq(&items[2 * m], key, key_len)) return &items[2 * m + 1];
        return NULL;
    }
    size_t mask = obj->x.index[0] - 1;
    const uint32_t *slots = obj->x.index + 1;
    size_t h = (size_t)hash_key(key, key_len) & mask;
    while (slots[h] != 0) {
        size_t m = slots[h] - 1;
        if (key_eq(&items[2 * m], key, key_len)) return &items[2 * m + 1];
        h = (h + 1) & mask;
    }
    return NULL;
}

const ember_json *ember_json_find(const ember_json *obj, const char *key) {
    if (key == NULL) return NULL;
    return ember_json_get(obj, key, strlen(key));
}

size_t ember_json_array_size(const ember_json *arr) {
    return arr != NULL && arr->type == EMBER_JSON_ARRAY ? arr->n : 0;
}

const ember_json *ember_json_array_at(const ember_json *arr, size_t i) {
    if (arr == NULL || arr->type != EMBER_JSON_ARRAY || i >= arr->n) return NULL;
    return &arr->p.items[i];
}

static const char *type_name(const ember_json *v) {
    static const char *const names[] = {"null", "a boolean", "a number",
                                        "a string", "an array", "an object"};
    if (v == NULL) return "no value";
    return v->type <= EMBER_JSON_OBJECT ? names[v->type] : "?";
}

static ember_status want(const ember_json *v, ember_json_type type, const void *outp,
                         const char *what) {
    if (outp == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_json_%s: NULL output", what);
    if (v == NULL || v->type != type)
        return ember_error_set(EMBER_ERR_TYPE_MISMATCH, "json: expected %s, found %s",
                               type == EMBER_JSON_STRING   ? "a string"
                               : type == EMBER_JSON_NUMBER ? "a number"
                                                           : "a boolean",
                               type_name(v));
    return EMBER_OK;
}

ember_status ember_json_string(const ember_json *v, const char **s, size_t *len) {
    ember_status st = want(v, EMBER_JSON_STRING, s, "string");
    if (st != EMBER_OK) return st;
    *s = v->p.str;
    if (len != NULL) *len = v->n;
    return EMBER_OK;
}

ember_status ember_json_number(const ember_json *v, double *out) {
    ember_status st = want(v, EMBER_JSON_NUMBER, out, "number");
    if (st != EMBER_OK) return st;
    *out = (v->flags & FLAG_INT) ? (double)v->x.i : v->x.d;
    return EMBER_OK;
}

ember_status ember_json_int64(const ember_json *v, int64_t *out, bool *exact) {
    ember_status st = want(v, EMBER_JSON_NUMBER, out, "int64");
    if (st != EMBER_OK) return st;
    if (v->flags & FLAG_INT) {
        *out = v->x.i;
        if (exact != NULL) *exact = true;
        return EMBER_OK;
    }
    double d = v->x.d;
    /* -2^63 and 2^63 are exact doubles; the int64 range is [-2^63, 2^63). */
    if (d != d) *out = 0;
    else if (d >= 9223372036854775808.0) *out = INT64_MAX;
    else if (d <= -9223372036854775808.0) *out = INT64_MIN;
    else *out = (int64_t)d;
    if (exact != NULL) *exact = false;
    return EMBER_OK;
}

ember_status ember_json_number_text(const ember_json *v, const char **text, size_t *len) {
    ember_status st = want(v, EMBER_JSON_NUMBER, text, "number_text");
    if (st != EMBER_OK) return st;
    *text = v->p.str;
    if (len != NULL) *len = v->n;
    return EMBER_OK;
}

ember_status ember_json_bool(const ember_json *v, bool *out) {
    ember_status st = want(v, EMBER_JSON_BOOL, out, "bool");
    if (st != EMBER_OK) return st;
    *out = (v->flags & FLAG_TRUE) != 0;
    return EMBER_OK;
}
