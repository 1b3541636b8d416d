/*
 * extension/llm/text/unicode.c — UTF-8, properties, case and normalization
 * over the tables of unicode_data.c (see unicode.h and gen_unicode_data.py).
 */
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Tables (unicode_data.c)                                                   */
/* ------------------------------------------------------------------------ */

extern const char ember_ucd_version[];
extern const unsigned ember_ucd_shift;
extern const uint16_t ember_ucd_stage1[];
extern const uint16_t ember_ucd_stage2[];
extern const int32_t ember_ucd_records[][4];
extern const uint32_t ember_ucd_canon_index[][2];
extern const size_t ember_ucd_canon_count;
extern const uint32_t ember_ucd_canon_pool[];
extern const uint32_t ember_ucd_compat_index[][2];
extern const size_t ember_ucd_compat_count;
extern const uint32_t ember_ucd_compat_pool[];
extern const uint32_t ember_ucd_comp[][3];
extern const size_t ember_ucd_comp_count;
extern const uint32_t ember_ucd_orbit[][2];
extern const size_t ember_ucd_orbit_count;
extern const uint32_t ember_ucd_special_lower[][5];
extern const size_t ember_ucd_special_lower_count;

/* Flags in bits 8..15 of a record's info (gen_unicode_data.py). */
#define UCD_WHITE_SPACE 0x01u
#define UCD_WORD 0x02u
#define UCD_CANON 0x04u
#define UCD_COMPAT 0x08u
#define UCD_COMP_SECOND 0x10u
#define UCD_SPECIAL_LOWER 0x20u

enum { REC_INFO, REC_LOWER, REC_UPPER, REC_FOLD };

/* Hangul syllables (Unicode chapter 3.12). */
#define HANGUL_S_BASE 0xAC00u
#define HANGUL_L_BASE 0x1100u
#define HANGUL_V_BASE 0x1161u
#define HANGUL_T_BASE 0x11A7u
#define HANGUL_L_COUNT 19u
#define HANGUL_V_COUNT 21u
#define HANGUL_T_COUNT 28u
#define HANGUL_N_COUNT (HANGUL_V_COUNT * HANGUL_T_COUNT)
#define HANGUL_S_COUNT (HANGUL_L_COUNT * HANGUL_N_COUNT)

/* The record of a code point (cp <= EMBER_UNICODE_MAX). */
static const int32_t *ucd_record(uint32_t cp) {
    uint32_t block = ember_ucd_stage1[cp >> ember_ucd_shift];
    uint32_t mask = (1u << ember_ucd_shift) - 1;
    return ember_ucd_records[ember_ucd_stage2[(block << ember_ucd_shift) | (cp & mask)]];
}

static uint32_t ucd_info(uint32_t cp) {
    return cp > EMBER_UNICODE_MAX ? 0 : (uint32_t)ucd_record(cp)[REC_INFO];
}

static uint32_t info_flags(uint32_t info) { return (info >> 8) & 0xFFu; }
static uint32_t info_ccc(uint32_t info) { return (info >> 16) & 0xFFu; }

const char *ember_unicode_version(void) { return ember_ucd_version; }

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

static bool is_cont(unsigned char b) { return (b & 0xC0) == 0x80; }

size_t ember_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    /* The second byte's allowed range depends on the first (RFC 3629): it
     * excludes overlong forms, surrogates and values above U+10FFFF. */
    unsigned char lo = 0x80, hi = 0xBF;
    size_t len;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0Fu;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07u;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *cp = EMBER_UNICODE_INVALID_BASE + c;
        return 1;
    }
    if (n < len || u[1] < lo || u[1] > hi) {
        *cp = EMBER_UNICODE_INVALID_BASE + c;
        return 1;
    }
    v = (v << 6) | (u[1] & 0x3Fu);
    for (size_t i = 2; i < len; i++) {
        if (!is_cont(u[i])) {
            *cp = EMBER_UNICODE_INVALID_BASE + c;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3Fu);
    }
    *cp = v;
    return len;
}

size_t ember_utf8_decode_last(const char *s, size_t end, uint32_t *cp) {
    if (end == 0) return 0;
    const unsigned char *u = (const unsigned char *)s;
    if (u[end - 1] < 0x80) {
        *cp = u[end - 1];
        return 1;
    }
    /* Only the nearest byte that is not a continuation byte can start the
     * unit; if it does not decode to exactly the bytes up to end, the last
     * byte stands alone. */
    for (size_t k = 1; k <= 4 && k <= end; k++) {
        if (is_cont(u[end - k])) continue;
        uint32_t v;
        if (ember_utf8_decode(s + end - k, k, &v) == k && !EMBER_UNICODE_IS_INVALID(v)) {
            *cp = v;
            return k;
        }
        break;
    }
    *cp = EMBER_UNICODE_INVALID_BASE + u[end - 1];
    return 1;
}

size_t ember_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > EMBER_UNICODE_MAX) return 0;
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool ember_utf8_valid(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        i += ember_utf8_decode(s + i, n - i, &cp);
        if (EMBER_UNICODE_IS_INVALID(cp)) return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Properties                                                                */
/* ------------------------------------------------------------------------ */

static const char k_category_names[EMBER_UC_COUNT][3] = {
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
    "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};

ember_general_category ember_unicode_category(uint32_t cp) {
    return (ember_general_category)(ucd_info(cp) & EMBER_UNICODE_PROP_CATEGORY);
}

const char *ember_unicode_category_name(ember_general_category cat) {
    if ((unsigned)cat >= EMBER_UC_COUNT) return "??";
    return k_category_names[cat];
}

typedef struct category_alias {
    const char *name; /* lowercase, without '_', '-' or spaces */
    uint32_t mask;
} category_alias;

#define B(x) EMBER_UC_BIT(EMBER_UC_##x)
static const category_alias k_category_aliases[] = {
    {"l", EMBER_UC_MASK_L}, {"letter", EMBER_UC_MASK_L},
    {"lc", EMBER_UC_MASK_LC}, {"l&", EMBER_UC_MASK_LC}, {"casedletter", EMBER_UC_MASK_LC},
    {"lu", B(LU)}, {"uppercaseletter", B(LU)},
    {"ll", B(LL)}, {"lowercaseletter", B(LL)},
    {"lt", B(LT)}, {"titlecaseletter", B(LT)},
    {"lm", B(LM)}, {"modifierletter", B(LM)},
    {"lo", B(LO)}, {"otherletter", B(LO)},
    {"m", EMBER_UC_MASK_M}, {"mark", EMBER_UC_MASK_M}, {"combiningmark", EMBER_UC_MASK_M},
    {"mn", B(MN)}, {"nonspacingmark", B(MN)},
    {"mc", B(MC)}, {"spacingmark", B(MC)},
    {"me", B(ME)}, {"enclosingmark", B(ME)},
    {"n", EMBER_UC_MASK_N}, {"number", EMBER_UC_MASK_N},
    {"nd", B(ND)}, {"decimalnumber", B(ND)}, {"digit", B(ND)},
    {"nl", B(NL)}, {"letternumber", B(NL)},
    {"no", B(NO)}, {"othernumber", B(NO)},
    {"p", EMBER_UC_MASK_P}, {"punctuation", EMBER_UC_MASK_P}, {"punct", EMBER_UC_MASK_P},
    {"pc", B(PC)}, {"connectorpunctuation", B(PC)},
    {"pd", B(PD)}, {"dashpunctuation", B(PD)},
    {"ps", B(PS)}, {"openpunctuation", B(PS)},
    {"pe", B(PE)}, {"closepunctuation", B(PE)},
    {"pi", B(PI)}, {"initialpunctuation", B(PI)},
    {"pf", B(PF)}, {"finalpunctuation", B(PF)},
    {"po", B(PO)}, {"otherpunctuation", B(PO)},
    {"s", EMBER_UC_MASK_S}, {"symbol", EMBER_UC_MASK_S},
    {"sm", B(SM)}, {"mathsymbol", B(SM)},
    {"sc", B(SC)}, {"currencysymbol", B(SC)},
    {"sk", B(SK)}, {"modifiersymbol", B(SK)},
    {"so", B(SO)}, {"othersymbol", B(SO)},
    {"z", EMBER_UC_MASK_Z}, {"separator", EMBER_UC_MASK_Z},
    {"zs", B(ZS)}, {"spaceseparator", B(ZS)},
    {"zl", B(ZL)}, {"lineseparator", B(ZL)},
    {"zp", B(ZP)}, {"paragraphseparator", B(ZP)},
    {"c", EMBER_UC_MASK_C}, {"other", EMBER_UC_MASK_C},
    {"cc", B(CC)}, {"control", B(CC)}, {"cntrl", B(CC)},
    {"cf", B(CF)}, {"format", B(CF)},
    {"cs", B(CS)}, {"surrogate", B(CS)},
    {"co", B(CO)}, {"privateuse", B(CO)},
    {"cn", B(CN)}, {"unassigned", B(CN)},
};
#undef B

bool ember_unicode_category_lookup(const char *name, size_t len, uint32_t *mask) {
    char key[32];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == '_' || c == '-' || c == ' ') continue;
        if (n + 1 >= sizeof key) return false;
        key[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    key[n] = '\0';
    for (size_t i = 0; i < sizeof k_category_aliases / sizeof k_category_aliases[0]; i++) {
        if (strcmp(key, k_category_aliases[i].name) == 0) {
            *mask = k_category_aliases[i].mask;
            return true;
        }
    }
    return false;
}

uint32_t ember_unicode_props(uint32_t cp) {
    uint32_t info = ucd_info(cp);
    return (info & EMBER_UNICODE_PROP_CATEGORY) |
           ((info_flags(info) & UCD_WHITE_SPACE) ? EMBER_UNICODE_PROP_WHITE_SPACE : 0) |
           ((info_flags(info) & UCD_WORD) ? EMBER_UNICODE_PROP_WORD : 0);
}

bool ember_unicode_in_categories(uint32_t cp, uint32_t mask) {
    if (cp > EMBER_UNICODE_MAX) return false;
    return (mask >> (ucd_info(cp) & EMBER_UNICODE_PROP_CATEGORY)) & 1u;
}

bool ember_unicode_is_white_space(uint32_t cp) {
    return (info_flags(ucd_info(cp)) & UCD_WHITE_SPACE) != 0;
}

bool ember_unicode_is_digit(uint32_t cp) {
    return ember_unicode_in_categories(cp, EMBER_UC_BIT(EMBER_UC_ND));
}

bool ember_unicode_is_word(uint32_t cp) { return (info_flags(ucd_info(cp)) & UCD_WORD) != 0; }

uint8_t ember_unicode_combining_class(uint32_t cp) { return (uint8_t)info_ccc(ucd_info(cp)); }

/* ------------------------------------------------------------------------ */
/* Case                                                                      */
/* ------------------------------------------------------------------------ */

static uint32_t apply_delta(uint32_t cp, int field) {
    if (cp > EMBER_UNICODE_MAX) return cp;
    return (uint32_t)((int32_t)cp + ucd_record(cp)[field]);
}

uint32_t ember_unicode_simple_lower(uint32_t cp) { return apply_delta(cp, REC_LOWER); }
uint32_t ember_unicode_simple_upper(uint32_t cp) { return apply_delta(cp, REC_UPPER); }
uint32_t ember_unicode_simple_fold(uint32_t cp) { return apply_delta(cp, REC_FOLD); }

/* Index of key in the first column of a table sorted by it, or count. */
static size_t find_first_column(const uint32_t *rows, size_t stride, size_t count, uint32_t key) {
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t v = rows[mid * stride];
        if (v < key) lo = mid + 1;
        else if (v > key) hi = mid;
        else return mid;
    }
    return count;
}

size_t ember_unicode_full_lower(uint32_t cp, uint32_t out[EMBER_UNICODE_MAX_FULL_LOWER]) {
    if (cp <= EMBER_UNICODE_MAX) {
        const int32_t *rec = ucd_record(cp);
        if (info_flags((uint32_t)rec[REC_INFO]) & UCD_SPECIAL_LOWER) {
            size_t i = find_first_column(&ember_ucd_special_lower[0][0], 5,
                                         ember_ucd_special_lower_count, cp);
            if (i < ember_ucd_special_lower_count) {
                const uint32_t *e = ember_ucd_special_lower[i];
                size_t n = e[1];
                for (size_t k = 0; k < n; k++) out[k] = e[2 + k];
                return n;
            }
        }
        out[0] = (uint32_t)((int32_t)cp + rec[REC_LOWER]);
        return 1;
    }
    out[0] = cp;
    return 1;
}

size_t ember_unicode_case_equivalents(uint32_t cp,
                                      uint32_t out[EMBER_UNICODE_MAX_CASE_EQUIVALENTS]) {
    out[0] = cp;
    size_t n = 1;
    if (cp > EMBER_UNICODE_MAX) return n;
    uint32_t next = cp;
    for (;;) {
        size_t i = find_first_column(&ember_ucd_orbit[0][0], 2, ember_ucd_orbit_count, next);
        if (i == ember_ucd_orbit_count) break;
        next = ember_ucd_orbit[i][1];
        if (next == cp || n == EMBER_UNICODE_MAX_CASE_EQUIVALENTS) break;
        out[n++] = next;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Growable arrays with checked sizes                                        */
/* ------------------------------------------------------------------------ */

typedef struct cp_buf {
    uint32_t *v; /* (cap) */
    size_t n, cap;
} cp_buf;

static bool cp_reserve(cp_buf *b, size_t extra) {
    if (extra <= b->cap - b->n) return true;
    if (extra > SIZE_MAX / sizeof(uint32_t) - b->n) return false;
    size_t want = b->n + extra;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < want) cap = cap > SIZE_MAX / sizeof(uint32_t) / 2 ? want : cap * 2;
    uint32_t *v = realloc(b->v, cap * sizeof(uint32_t));
    if (v == NULL) return false;
    b->v = v;
    b->cap = cap;
    return true;
}

typedef struct byte_buf {
    char *s; /* (cap) */
    size_t n, cap;
} byte_buf;

static bool bytes_reserve(byte_buf *b, size_t extra) {
    if (extra <= b->cap - b->n) return true;
    if (extra > SIZE_MAX - 1 - b->n) return false;
    size_t want = b->n + extra + 1; /* room for the terminator */
    size_t cap = b->cap ? b->cap : 64;
    while (cap < want) cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    char *s = realloc(b->s, cap);
    if (s == NULL) return false;
    b->s = s;
    b->cap = cap;
    return true;
}

/* Appends the UTF-8 of one unit (an invalid unit as its byte); the caller
 * reserved 4 bytes. */
static void put_unit(byte_buf *b, uint32_t cp) {
    if (EMBER_UNICODE_IS_INVALID(cp)) {
        b->s[b->n++] = (char)(cp - EMBER_UNICODE_INVALID_BASE);
        return;
    }
    b->n += ember_utf8_encode(cp, b->s + b->n);
}

static ember_status string_oom(const char *what) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for %s", what);
}

/* ------------------------------------------------------------------------ */
/* Normalization                                                             */
/* ------------------------------------------------------------------------ */

/* The full decomposition of cp from one of the two tables, or NULL. */
static const uint32_t *decomposition(const uint32_t (*index)[2], size_t count,
                                     const uint32_t *pool, uint32_t cp, size_t *len) {
    size_t i = find_first_column(&index[0][0], 2, count, cp);
    if (i == count) return NULL;
    *len = index[i][1] & 31u;
    return pool + (index[i][1] >> 5);
}

/* Appends the full decomposition of one unit. */
static bool decompose_unit(cp_buf *d, uint32_t cp, bool compat) {
    if (!cp_reserve(d, 32)) return false;
    if (cp - HANGUL_S_BASE < HANGUL_S_COUNT) {
        uint32_t s = cp - HANGUL_S_BASE;
        d->v[d->n++] = HANGUL_L_BASE + s / HANGUL_N_COUNT;
        d->v[d->n++] = HANGUL_V_BASE + (s % HANGUL_N_COUNT) / HANGUL_T_COUNT;
        if (s % HANGUL_T_COUNT != 0) d->v[d->n++] = HANGUL_T_BASE + s % HANGUL_T_COUNT;
        return true;
    }
    uint32_t flags = info_flags(ucd_info(cp));
    const uint32_t *seq = NULL;
    size_t len = 0;
    if (compat && (flags & UCD_COMPAT))
        seq = decomposition(ember_ucd_compat_index, ember_ucd_compat_count, ember_ucd_compat_pool,
                            cp, &len);
    if (seq == NULL && (flags & UCD_CANON))
        seq = decomposition(ember_ucd_canon_index, ember_ucd_canon_count, ember_ucd_canon_pool,
                            cp, &len);
    if (seq == NULL) {
        d->v[d->n++] = cp;
        return true;
    }
    memcpy(d->v + d->n, seq, len * sizeof(uint32_t));
    d->n += len;
    return true;
}

/* Runs of non-starters longer than this are sorted by counting. */
#define SHORT_RUN 16

/* Canonical ordering: a stable sort by combining class of every run of
 * non-starters. cls holds each element's class. Long runs use a counting
 * sort so that hostile input (a million combining marks) stays linear. */
static bool canonical_order(uint32_t *v, uint8_t *cls, size_t n) {
    size_t i = 0;
    uint32_t *tmp = NULL;
    uint8_t *tmp_cls = NULL;
    size_t tmp_cap = 0;
    bool ok = true;
    while (i < n) {
        if (cls[i] == 0) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < n && cls[i] != 0) i++;
        size_t len = i - start;
        if (len < 2) continue;
        uint32_t *r = v + start;
        uint8_t *c = cls + start;
        if (len <= SHORT_RUN) {
            for (size_t a = 1; a < len; a++) {
                uint32_t x = r[a];
                uint8_t k = c[a];
                size_t b = a;
                while (b > 0 && c[b - 1] > k) {
                    r[b] = r[b - 1];
                    c[b] = c[b - 1];
                    b--;
                }
                r[b] = x;
                c[b] = k;
            }
            continue;
        }
        if (len > tmp_cap) {
            free(tmp);
            free(tmp_cls);
            tmp = malloc(len * sizeof(uint32_t));
            tmp_cls = malloc(len);
            tmp_cap = len;
            if (tmp == NULL || tmp_cls == NULL) {
                ok = false;
                break;
            }
        }
        size_t count[257] = {0};
        for (size_t a = 0; a < len; a++) count[c[a] + 1]++;
        for (size_t k = 1; k < 257; k++) count[k] += count[k - 1];
        for (size_t a = 0; a < len; a++) {
            size_t to = count[c[a]]++;
            tmp[to] = r[a];
            tmp_cls[to] = c[a];
        }
        memcpy(r, tmp, len * sizeof(uint32_t));
        memcpy(c, tmp_cls, len);
    }
    free(tmp);
    free(tmp_cls);
    return ok;
}

/* The primary composite of a + b, or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b) {
    if (a - HANGUL_L_BASE < HANGUL_L_COUNT && b - HANGUL_V_BASE < HANGUL_V_COUNT)
        return HANGUL_S_BASE +
               ((a - HANGUL_L_BASE) * HANGUL_V_COUNT + (b - HANGUL_V_BASE)) * HANGUL_T_COUNT;
    if (a - HANGUL_S_BASE < HANGUL_S_COUNT && (a - HANGUL_S_BASE) % HANGUL_T_COUNT == 0 &&
        b - (HANGUL_T_BASE + 1) < HANGUL_T_COUNT - 1)
        return a + (b - HANGUL_T_BASE);
    if (!(info_flags(ucd_info(b)) & UCD_COMP_SECOND)) return 0;
    size_t lo = 0, hi = ember_ucd_comp_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const uint32_t *e = ember_ucd_comp[mid];
        if (e[0] < a || (e[0] == a && e[1] < b)) lo = mid + 1;
        else if (e[0] > a || e[1] > b) hi = mid;
        else return e[2];
    }
    return 0;
}

/* Canonical composition in place; returns the new length. A code point is
 * blocked from the last starter when an uncomposed code point between them
 * has a class of 0 or at least its own; in canonical order that is the last
 * one kept (last_cls). Invalid units end the current starter. */
static size_t compose(uint32_t *v, const uint8_t *cls, size_t n) {
    const size_t none = SIZE_MAX;
    size_t starter = none, w = 0;
    int last_cls = -1; /* -1: nothing kept since the starter */
    for (size_t i = 0; i < n; i++) {
        uint32_t c = v[i];
        int k = cls[i];
        if (starter != none && (last_cls < 0 || last_cls < k) && !EMBER_UNICODE_IS_INVALID(c)) {
            uint32_t comp = compose_pair(v[starter], c);
            if (comp != 0) {
                v[starter] = comp;
                continue;
            }
        }
        if (k == 0) {
            starter = EMBER_UNICODE_IS_INVALID(c) ? none : w;
            last_cls = -1;
        } else {
            last_cls = k;
        }
        v[w++] = c;
    }
    return w;
}

static bool all_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

/* A malloc'ed NUL-terminated copy of s[0..n). */
static ember_status copy_out(const char *s, size_t n, char **out, size_t *out_len,
                             const char *what) {
    if (n == SIZE_MAX) return string_oom(what);
    char *r = malloc(n + 1);
    if (r == NULL) return string_oom(what);
    if (n) memcpy(r, s, n);
    r[n] = '\0';
    *out = r;
    *out_len = n;
    return EMBER_OK;
}

ember_status ember_unicode_normalize(ember_unicode_form form, const char *text, size_t len,
                                     char **out, size_t *out_len) {
    if ((text == NULL && len != 0) || out == NULL || out_len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_unicode_normalize: NULL argument");
    if ((unsigned)form > EMBER_UNICODE_NFKD)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_unicode_normalize: unknown form %d", (int)form);
    /* ASCII is unchanged by every form. */
    if (all_ascii(text, len)) return copy_out(text, len, out, out_len, "normalized text");

    bool compat = form == EMBER_UNICODE_NFKC || form == EMBER_UNICODE_NFKD;
    bool comp = form == EMBER_UNICODE_NFC || form == EMBER_UNICODE_NFKC;
    cp_buf d = {0};
    uint8_t *cls = NULL;
    byte_buf o = {0};
    ember_status st = EMBER_OK;

    if (!cp_reserve(&d, len / 2 + 16)) goto oom;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += ember_utf8_decode(text + i, len - i, &cp);
        if (!decompose_unit(&d, cp, compat)) goto oom;
    }
    cls = malloc(d.n ? d.n : 1);
    if (cls == NULL) goto oom;
    for (size_t i = 0; i < d.n; i++)
        cls[i] = d.v[i] < 0x300 ? 0 : (uint8_t)info_ccc(ucd_info(d.v[i]));
    if (!canonical_order(d.v, cls, d.n)) goto oom;
    if (comp) d.n = compose(d.v, cls, d.n);

    if (d.n > (SIZE_MAX - 1) / 4 || !bytes_reserve(&o, d.n * 4)) goto oom;
    for (size_t i = 0; i < d.n; i++) put_unit(&o, d.v[i]);
    o.s[o.n] = '\0';
    *out = o.s;
    *out_len = o.n;
    o.s = NULL;
    goto done;
oom:
    st = string_oom("normalized text");
done:
    free(d.v);
    free(cls);
    free(o.s);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Lowercase                                                                 */
/* ------------------------------------------------------------------------ */

ember_status ember_unicode_lowercase(const char *text, size_t len, char **out, size_t *out_len) {
    if ((text == NULL && len != 0) || out == NULL || out_len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_unicode_lowercase: NULL argument");
    byte_buf o = {0};
    if (!bytes_reserve(&o, len + 16)) return string_oom("lowercased text");
    for (size_t i = 0; i < len;) {
        unsigned char b = (unsigned char)text[i];
        if (b < 0x80) {
            if (o.n == o.cap - 1 && !bytes_reserve(&o, 1)) goto oom;
            o.s[o.n++] = (char)(b >= 'A' && b <= 'Z' ? b + ('a' - 'A') : b);
            i++;
            continue;
        }
        uint32_t cp, low[EMBER_UNICODE_MAX_FULL_LOWER];
        i += ember_utf8_decode(text + i, len - i, &cp);
        size_t n = ember_unicode_full_lower(cp, low);
        if (!bytes_reserve(&o, 4 * EMBER_UNICODE_MAX_FULL_LOWER)) goto oom;
        for (size_t k = 0; k < n; k++) put_unit(&o, low[k]);
    }
    o.s[o.n] = '\0';
    *out = o.s;
    *out_len = o.n;
    return EMBER_OK;
oom:
    free(o.s);
    return string_oom("lowercased text");
}
