/*
 * extension/llm/text/regex.c — a backtracking regex engine (see regex.h).
 *
 * Three stages:
 *   parse    pattern -> syntax tree (re_node) and character classes (re_class)
 *   emit     tree -> a flat program (re_inst): counted repetitions expanded,
 *            repetitions of one character item kept as one instruction
 *   analyse  for every branch point, the set of first bytes that can start
 *            each side (a "guard"), so matching skips alternatives that
 *            cannot match without trying them
 *
 * Matching runs the program on an explicit backtracking stack (re_frame):
 * no recursion, so deep patterns or long texts cannot overflow the C stack.
 * Atomic groups and lookarounds push a barrier frame; leaving them cuts the
 * stack back to it. Registers (loop start positions, barrier indices) are
 * restored on backtracking through undo frames.
 */
#include "regex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

#define RE_NONE UINT32_MAX
#define RE_INF UINT32_MAX
#define RE_MAX_DEPTH 200           /* nested groups and classes */
#define RE_MAX_INSTS (1u << 20)    /* program size after expansion */
#define RE_MAX_LOOKBEHIND 255      /* characters */
#define RE_MAX_STACK ((size_t)8 << 20) /* backtracking frames per search */
#define RE_GUARD_VISITS 4096       /* analysis effort per branch point */
#define RE_GUARD_BUDGET (1u << 22) /* and for the whole program */
#define RE_LOCAL_FRAMES 256
#define RE_LOCAL_REGS 32
#define ALL_CATS ((1u << EMBER_UC_COUNT) - 1u)

/* ------------------------------------------------------------------------ */
/* Program                                                                   */
/* ------------------------------------------------------------------------ */

enum re_op {
    OP_CHAR,     /* a: code point */
    OP_FOLD,     /* a: simple case folding to compare with */
    OP_ANY,      /* anything but "\n" */
    OP_ANYNL,    /* anything */
    OP_CLASS,    /* a: class index */
    OP_REPEAT,   /* kind: item op (above), a: item argument, b: min, c: max, d: guard after */
    OP_SPLIT,    /* try a, then b; c, d: their guards */
    OP_JMP,      /* a: target */
    OP_MATCH,
    OP_ASSERT,   /* kind: enum re_assert */
    OP_MARK,     /* a: register := position */
    OP_PROGRESS, /* a: register; an iteration that matched nothing leaves the loop for b */
    OP_ATOMIC,   /* a: register := barrier index */
    OP_ATOMIC_END,
    OP_LOOK,     /* kind: LOOK_*, a: register, b: continuation, c, d: lookbehind lengths */
    OP_LOOK_END  /* kind, a: as OP_LOOK */
};

enum re_mode { MODE_GREEDY, MODE_LAZY, MODE_POSSESSIVE };

enum re_assert {
    AS_TEXT_START,  /* \A, ^ */
    AS_TEXT_END,    /* \z, $ (dollar-endonly) */
    AS_TEXT_END_NL, /* \Z, $: end, or before a final "\n" */
    AS_LINE_START,  /* ^ multiline */
    AS_LINE_END,    /* $ multiline */
    AS_WORD_B,      /* \b */
    AS_NOT_WORD_B,  /* \B */
    AS_SEARCH_START /* \G */
};

#define LOOK_NEG 1u
#define LOOK_BEHIND 2u

/* re_inst.pad bits */
#define INST_TAIL 1u /* OP_REPEAT: only jumps lead from it to the match */

typedef struct re_inst {
    uint8_t op;
    uint8_t kind;
    uint8_t mode;
    uint8_t pad;
    uint32_t a, b, c, d;
} re_inst;

typedef struct re_class {
    uint64_t ascii[2];   /* membership of U+0000..U+007F, after negation and case */
    uint64_t first[4];   /* bytes that can start a matching character */
    uint32_t cat_mask;   /* categories that match */
    uint32_t props_any;  /* matches a code point with any of these property bits */
    uint32_t props_none; /* matches a code point lacking any of these */
    uint32_t range_off, range_count; /* sorted disjoint ranges in ember_regex.ranges */
    uint32_t sub_off, sub_count;     /* nested negated classes in ember_regex.subs */
    bool invalid;        /* holds a complemented item, so invalid bytes match */
    bool negated;
    bool caseless;
} re_class;

struct ember_regex {
    re_inst *code;          /* (n_code) */
    size_t n_code;
    re_class *classes;      /* (n_classes) */
    size_t n_classes;
    uint32_t (*ranges)[2];  /* (n_ranges) */
    size_t n_ranges;
    uint32_t *subs;         /* (n_subs) class indices */
    size_t n_subs;
    uint64_t (*guards)[4];  /* (n_guards) first-byte sets */
    size_t n_guards;
    uint64_t first[4];      /* bytes that can start a match */
    bool nullable;          /* a match may be empty (then first[] is not used) */
    bool anchored;          /* the program starts with \A */
    bool lead_skip;         /* starts with an unbounded greedy repeat: see search */
    uint32_t n_regs;
    uint64_t step_limit;
};

static bool bit_test(const uint64_t *set, unsigned b) { return (set[b >> 6] >> (b & 63)) & 1u; }
static void bit_set(uint64_t *set, unsigned b) { set[b >> 6] |= (uint64_t)1 << (b & 63); }

/* ------------------------------------------------------------------------ */
/* Character classes                                                         */
/* ------------------------------------------------------------------------ */

/* r: n pairs {first, last}, sorted and disjoint. */
static bool in_ranges(const uint32_t *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[2 * mid]) hi = mid;
        else if (cp > r[2 * mid + 1]) lo = mid + 1;
        else return true;
    }
    return false;
}

/* Whether the class's own items (not its nested classes) hold cp. */
static bool class_items(const ember_regex *re, const re_class *c, uint32_t cp) {
    if (EMBER_UNICODE_IS_INVALID(cp)) return c->invalid;
    uint32_t props = ember_unicode_props(cp);
    if ((c->cat_mask >> (props & EMBER_UNICODE_PROP_CATEGORY)) & 1u) return true;
    if (props & c->props_any) return true;
    if (c->props_none & ~props) return true;
    return c->range_count && in_ranges(&re->ranges[c->range_off][0], c->range_count, cp);
}

/* Full membership of any unit (the ASCII bitmap is not consulted). Under
 * case-insensitivity a class holds cp when its items hold a case equivalent
 * of cp; a nested class is itself closed under case equivalence (every
 * class inside a caseless class is caseless), so it is asked about cp
 * alone, which keeps the cost linear in the nesting. */
static bool class_eval(const ember_regex *re, const re_class *c, uint32_t cp) {
    bool r = class_items(re, c, cp);
    if (!r && c->caseless && !EMBER_UNICODE_IS_INVALID(cp)) {
        uint32_t eq[EMBER_UNICODE_MAX_CASE_EQUIVALENTS];
        size_t n = ember_unicode_case_equivalents(cp, eq);
        for (size_t i = 1; i < n && !r; i++) r = class_items(re, c, eq[i]);
    }
    for (uint32_t i = 0; i < c->sub_count && !r; i++)
        r = class_eval(re, &re->classes[re->subs[c->sub_off + i]], cp);
    return r != c->negated;
}

/* First byte of the UTF-8 form of a code point. */
static unsigned lead_byte(uint32_t cp) {
    char b[4];
    if (ember_utf8_encode(cp, b) == 0) return 0xFF;
    return (unsigned char)b[0];
}

/* Fills the ASCII bitmap and the first-byte set of a finished class. */
static void class_finish(const ember_regex *re, re_class *c) {
    memset(c->ascii, 0, sizeof c->ascii);
    memset(c->first, 0, sizeof c->first);
    for (uint32_t cp = 0; cp < 0x80; cp++) {
        if (class_eval(re, c, cp)) {
            bit_set(c->ascii, cp);
            bit_set(c->first, cp);
        }
    }
    bool ranges_only = !c->negated && !c->caseless && !c->invalid && c->cat_mask == 0 &&
                       c->props_any == 0 && c->props_none == 0 && c->sub_count == 0;
    if (!ranges_only) {
        for (unsigned b = 0x80; b < 0x100; b++) bit_set(c->first, b);
        return;
    }
    for (uint32_t i = 0; i < c->range_count; i++) {
        uint32_t lo = re->ranges[c->range_off + i][0], hi = re->ranges[c->range_off + i][1];
        if (hi < 0x80) continue;
        if (lo < 0x80) lo = 0x80;
        /* UTF-8 keeps code point order, so the lead bytes form one span. */
        unsigned a = lead_byte(lo >= 0xD800 && lo <= 0xDFFF ? 0xE000 : lo);
        unsigned z = lead_byte(hi >= 0xD800 && hi <= 0xDFFF ? 0xD7FF : hi);
        for (unsigned b = a; b <= z && b < 0x100; b++) bit_set(c->first, b);
    }
}

/* ------------------------------------------------------------------------ */
/* Parser                                                                    */
/* ------------------------------------------------------------------------ */

enum re_node_type {
    N_EMPTY,
    N_CHAR,   /* value: code point */
    N_FOLD,   /* value: case folding */
    N_ANY,
    N_ANYNL,
    N_CLASS,  /* value: class index */
    N_CAT,    /* children in order */
    N_ALT,    /* alternatives in order */
    N_REPEAT, /* child, min, max, mode */
    N_ATOMIC, /* child */
    N_LOOK,   /* child, mode: LOOK_* */
    N_ASSERT  /* mode: enum re_assert */
};

typedef struct re_node {
    uint8_t type;
    uint8_t mode;
    bool len_known;           /* len_min, len_max computed */
    uint32_t value;
    uint32_t min, max;
    uint32_t child;           /* first child, RE_NONE if none */
    uint32_t next;            /* next sibling, RE_NONE if last */
    uint32_t len_min, len_max; /* characters it can match (node_len) */
    size_t offset;            /* in the pattern */
} re_node;

/* Inline flags. */
#define FL_I 1u
#define FL_M 2u
#define FL_S 4u

typedef struct class_builder {
    uint32_t (*r)[2]; /* (nr) */
    size_t nr, cap;
    uint32_t *subs;   /* (nsubs) */
    size_t nsubs, subs_cap;
    uint32_t cat_mask, props_any, props_none;
    bool invalid;
} class_builder;

typedef struct parser {
    const char *p;
    size_t n, i;
    uint32_t options;    /* EMBER_REGEX_* */
    re_node *nodes;      /* (n_nodes) */
    size_t n_nodes, cap_nodes;
    ember_regex *re;     /* classes, ranges and subs go here */
    size_t cap_classes, cap_ranges, cap_subs;
    int depth;
    bool failed;
    ember_status status; /* of the first failure */
} parser;

/* Grows *arr (of elem bytes each, *cap entries) to hold need entries. */
static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *p = realloc(*arr, c * elem);
    if (p == NULL) return false;
    *arr = p;
    *cap = c;
    return true;
}

/* Quotes up to 24 bytes of the pattern from off for a message; valid UTF-8
 * is kept, other bytes and control characters become \xHH. */
static void quote(const char *p, size_t n, size_t off, char *out, size_t cap) {
    size_t o = 0, i = off;
    while (i < n && i < off + 24 && o + 8 < cap) {
        unsigned char b = (unsigned char)p[i];
        if (b >= 0x80) {
            uint32_t cp;
            size_t l = ember_utf8_decode(p + i, n - i, &cp);
            if (!EMBER_UNICODE_IS_INVALID(cp)) {
                memcpy(out + o, p + i, l);
                o += l;
                i += l;
                continue;
            }
        }
        if (b < 0x20 || b == 0x7F || b >= 0x80 || b == '"') {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02X", b);
        } else {
            out[o++] = (char)b;
        }
        i++;
    }
    if (i < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static uint32_t fail_at(parser *ps, ember_status st, size_t off, const char *what) {
    if (!ps->failed) {
        char q[128];
        quote(ps->p, ps->n, off, q, sizeof q);
        ps->status = ember_error_set(st, "regex: %s at offset %zu: \"%s\"", what, off, q);
        ps->failed = true;
    }
    return RE_NONE;
}

static uint32_t syntax(parser *ps, size_t off, const char *what) {
    return fail_at(ps, EMBER_ERR_INVALID_ARGUMENT, off, what);
}

static uint32_t unsupported(parser *ps, size_t off, const char *what) {
    return fail_at(ps, EMBER_ERR_NOT_SUPPORTED, off, what);
}

static uint32_t oom(parser *ps) {
    if (!ps->failed) {
        ps->status = ember_error_set(EMBER_ERR_OUT_OF_MEMORY,
                                     "regex: out of memory compiling the pattern");
        ps->failed = true;
    }
    return RE_NONE;
}

static uint32_t new_node(parser *ps, uint8_t type, size_t off) {
    if (!grow((void **)&ps->nodes, &ps->cap_nodes, ps->n_nodes + 1, sizeof(re_node)))
        return oom(ps);
    re_node *nd = &ps->nodes[ps->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->type = type;
    nd->child = RE_NONE;
    nd->next = RE_NONE;
    nd->offset = off;
    return (uint32_t)ps->n_nodes++;
}

static bool at_end(const parser *ps) { return ps->i >= ps->n; }
static char peek(const parser *ps) { return ps->i < ps->n ? ps->p[ps->i] : '\0'; }
static char peek_at(const parser *ps, size_t k) {
    return ps->i + k < ps->n ? ps->p[ps->i + k] : '\0';
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads exactly `digits` hex digits (or 1..digits when at_least_one). */
static bool read_hex(parser *ps, int digits, bool at_least_one, uint32_t *v) {
    uint32_t x = 0;
    int k = 0;
    while (k < digits && !at_end(ps) && hex_value(peek(ps)) >= 0) {
        x = x * 16 + (uint32_t)hex_value(peek(ps));
        ps->i++;
        k++;
    }
    *v = x;
    return at_least_one ? k >= 1 : k == digits;
}

static bool valid_scalar(uint32_t cp) {
    return cp <= EMBER_UNICODE_MAX && !(cp >= 0xD800 && cp <= 0xDFFF);
}

/* ---- class builder ---- */

static bool cb_range(class_builder *b, uint32_t lo, uint32_t hi) {
    if (!grow((void **)&b->r, &b->cap, b->nr + 1, sizeof b->r[0])) return false;
    b->r[b->nr][0] = lo;
    b->r[b->nr][1] = hi;
    b->nr++;
    return true;
}

static bool cb_sub(class_builder *b, uint32_t cls) {
    if (!grow((void **)&b->subs, &b->subs_cap, b->nsubs + 1, sizeof b->subs[0])) return false;
    b->subs[b->nsubs++] = cls;
    return true;
}

static void cb_free(class_builder *b) {
    free(b->r);
    free(b->subs);
}

static int cmp_range(const void *x, const void *y) {
    const uint32_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/* Stores the builder as a new class (ranges sorted and merged); returns its
 * index. Classes are finished later, once all exist. */
static uint32_t cb_store(parser *ps, class_builder *b, bool negated, bool caseless) {
    ember_regex *re = ps->re;
    if (b->nr > 1) qsort(b->r, b->nr, sizeof b->r[0], cmp_range);
    size_t m = 0;
    for (size_t i = 0; i < b->nr; i++) {
        if (m > 0 && b->r[i][0] <= b->r[m - 1][1] + 1) {
            if (b->r[i][1] > b->r[m - 1][1]) b->r[m - 1][1] = b->r[i][1];
        } else {
            b->r[m][0] = b->r[i][0];
            b->r[m][1] = b->r[i][1];
            m++;
        }
    }
    if (!grow((void **)&re->classes, &ps->cap_classes, re->n_classes + 1, sizeof(re_class)) ||
        !grow((void **)&re->ranges, &ps->cap_ranges, re->n_ranges + m + 1, sizeof re->ranges[0]) ||
        !grow((void **)&re->subs, &ps->cap_subs, re->n_subs + b->nsubs + 1, sizeof re->subs[0]))
        return oom(ps);
    re_class *c = &re->classes[re->n_classes];
    memset(c, 0, sizeof *c);
    c->cat_mask = b->cat_mask;
    c->props_any = b->props_any;
    c->props_none = b->props_none;
    c->invalid = b->invalid;
    c->negated = negated;
    c->caseless = caseless;
    c->range_off = (uint32_t)re->n_ranges;
    c->range_count = (uint32_t)m;
    if (m) memcpy(re->ranges + re->n_ranges, b->r, m * sizeof b->r[0]);
    re->n_ranges += m;
    c->sub_off = (uint32_t)re->n_subs;
    c->sub_count = (uint32_t)b->nsubs;
    if (b->nsubs) memcpy(re->subs + re->n_subs, b->subs, b->nsubs * sizeof b->subs[0]);
    re->n_subs += b->nsubs;
    return (uint32_t)re->n_classes++;
}

/* Merges a positive nested class into the builder of its parent. */
static bool cb_merge(parser *ps, class_builder *b, uint32_t cls) {
    const ember_regex *re = ps->re;
    const re_class c = re->classes[cls];
    b->cat_mask |= c.cat_mask;
    b->props_any |= c.props_any;
    b->props_none |= c.props_none;
    b->invalid |= c.invalid;
    for (uint32_t i = 0; i < c.range_count; i++)
        if (!cb_range(b, re->ranges[c.range_off + i][0], re->ranges[c.range_off + i][1]))
            return false;
    for (uint32_t i = 0; i < c.sub_count; i++)
        if (!cb_sub(b, re->subs[c.sub_off + i])) return false;
    return true;
}

/* ---- escapes ---- */

/* What an escape stands for. */
enum esc_kind { ESC_CHAR, ESC_SET, ESC_ASSERT, ESC_ERROR };

typedef struct escape {
    int kind;
    uint32_t cp;     /* ESC_CHAR */
    uint32_t cat_mask, props_any, props_none;
    uint32_t lo, hi; /* ESC_SET: one range (lo > hi: none) */
    bool invalid;
    int assert_kind; /* ESC_ASSERT */
    int onig_word;   /* 1: \w or \p{Word} outside a class, 2: \W or \P{Word} */
} escape;

static void esc_set_init(escape *e) {
    memset(e, 0, sizeof *e);
    e->kind = ESC_SET;
    e->lo = 1;
    e->hi = 0;
}

/* \p{name}, \P{name}, \pL (ps->i just past 'p' or 'P'). */
static escape parse_property(parser *ps, bool negated, size_t start, bool in_class) {
    escape e;
    esc_set_init(&e);
    const char *name;
    size_t len;
    if (peek(ps) == '{') {
        ps->i++;
        size_t s = ps->i;
        while (!at_end(ps) && peek(ps) != '}' && ps->i - s < 64) ps->i++;
        if (peek(ps) != '}') {
            syntax(ps, start, "unterminated property name \\p{");
            e.kind = ESC_ERROR;
            return e;
        }
        name = ps->p + s;
        len = ps->i - s;
        ps->i++;
        if (len > 0 && name[0] == '^') {
            negated = !negated;
            name++;
            len--;
        }
    } else if (!at_end(ps) && ((peek(ps) >= 'A' && peek(ps) <= 'Z') ||
                               (peek(ps) >= 'a' && peek(ps) <= 'z'))) {
        name = ps->p + ps->i;
        len = 1;
        ps->i++;
    } else {
        syntax(ps, start, "\\p needs a property name");
        e.kind = ESC_ERROR;
        return e;
    }
    uint32_t mask;
    char key[64];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < sizeof key; i++) {
        char c = name[i];
        if (c == '_' || c == '-' || c == ' ') continue;
        key[k++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    key[k] = '\0';
    if (ember_unicode_category_lookup(name, len, &mask)) {
        e.cat_mask = mask;
    } else if (strcmp(key, "any") == 0) {
        e.cat_mask = ALL_CATS;
    } else if (strcmp(key, "assigned") == 0) {
        e.cat_mask = ALL_CATS & ~EMBER_UC_BIT(EMBER_UC_CN);
    } else if (strcmp(key, "ascii") == 0) {
        e.lo = 0;
        e.hi = 0x7F;
    } else if (strcmp(key, "whitespace") == 0 || strcmp(key, "space") == 0 ||
               strcmp(key, "wspace") == 0) {
        e.props_any = EMBER_UNICODE_PROP_WHITE_SPACE;
    } else if (strcmp(key, "word") == 0) {
        e.props_any = EMBER_UNICODE_PROP_WORD;
        if (!in_class) {
            e.onig_word = negated ? 2 : 1;
            return e;
        }
    } else {
        unsupported(ps, start,
                    "unknown or unsupported Unicode property (general categories, Any, "
                    "Assigned, ASCII, White_Space and Word are supported)");
        e.kind = ESC_ERROR;
        return e;
    }
    if (negated) {
        /* The complement of a set of categories is the other categories
         * (and invalid bytes); of a property, the code points lacking it. */
        escape c;
        esc_set_init(&c);
        c.invalid = true;
        c.cat_mask = ALL_CATS & ~e.cat_mask;
        if (e.props_any) {
            c.cat_mask = 0;
            c.props_none = e.props_any;
        }
        if (e.lo <= e.hi) {
            c.cat_mask = 0;
            c.lo = e.hi + 1;
            c.hi = EMBER_UNICODE_MAX;
        }
        return c;
    }
    return e;
}

/* Parses an escape (ps->i at the backslash). in_class: inside [...]. */
static escape parse_escape(parser *ps, bool in_class) {
    size_t start = ps->i;
    escape e;
    memset(&e, 0, sizeof e);
    e.kind = ESC_CHAR;
    ps->i++;
    if (at_end(ps)) {
        syntax(ps, start, "pattern ends with a backslash");
        e.kind = ESC_ERROR;
        return e;
    }
    char c = ps->p[ps->i++];
    switch (c) {
    case 't': e.cp = '\t'; return e;
    case 'n': e.cp = '\n'; return e;
    case 'r': e.cp = '\r'; return e;
    case 'f': e.cp = '\f'; return e;
    case 'v': e.cp = 0x0B; return e;
    case 'a': e.cp = 0x07; return e;
    case 'e': e.cp = 0x1B; return e;
    case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
        esc_set_init(&e);
        if (c == 'd') e.cat_mask = EMBER_UC_BIT(EMBER_UC_ND);
        if (c == 'D') e.cat_mask = ALL_CATS & ~EMBER_UC_BIT(EMBER_UC_ND), e.invalid = true;
        if (c == 's') e.props_any = EMBER_UNICODE_PROP_WHITE_SPACE;
        if (c == 'S') e.props_none = EMBER_UNICODE_PROP_WHITE_SPACE, e.invalid = true;
        if (c == 'w') e.props_any = EMBER_UNICODE_PROP_WORD;
        if (c == 'W') e.props_none = EMBER_UNICODE_PROP_WORD, e.invalid = true;
        if (!in_class && (c == 'w' || c == 'W')) {
            e.props_any = EMBER_UNICODE_PROP_WORD;
            e.props_none = 0;
            e.invalid = false;
            e.onig_word = c == 'w' ? 1 : 2;
        }
        return e;
    case 'p':
    case 'P':
        return parse_property(ps, c == 'P', start, in_class);
    case 'x': {
        uint32_t v;
        if (peek(ps) == '{') {
            ps->i++;
            if (!read_hex(ps, 8, true, &v) || peek(ps) != '}') {
                syntax(ps, start, "\\x{...} needs 1 to 8 hex digits and a closing brace");
                e.kind = ESC_ERROR;
                return e;
            }
            ps->i++;
        } else if (!read_hex(ps, 2, true, &v)) {
            syntax(ps, start, "\\x needs hex digits");
            e.kind = ESC_ERROR;
            return e;
        }
        if (!valid_scalar(v)) {
            syntax(ps, start, "escape is not a Unicode scalar value");
            e.kind = ESC_ERROR;
            return e;
        }
        e.cp = v;
        return e;
    }
    case 'u':
    case 'U': {
        uint32_t v;
        if (!read_hex(ps, c == 'u' ? 4 : 8, false, &v)) {
            syntax(ps, start, c == 'u' ? "\\u needs 4 hex digits" : "\\U needs 8 hex digits");
            e.kind = ESC_ERROR;
            return e;
        }
        if (!valid_scalar(v)) {
            syntax(ps, start, "escape is not a Unicode scalar value");
            e.kind = ESC_ERROR;
            return e;
        }
        e.cp = v;
        return e;
    }
    case '0': {
        uint32_t v = 0;
        for (int k = 0; k < 2 && peek(ps) >= '0' && peek(ps) <= '7'; k++)
            v = v * 8 + (uint32_t)(ps->p[ps->i++] - '0');
        e.cp = v;
        return e;
    }
    case 'b':
        if (in_class) {
            e.cp = 0x08;
            return e;
        }
        e.kind = ESC_ASSERT;
        e.assert_kind = AS_WORD_B;
        return e;
    case 'B': case 'A': case 'z': case 'Z': case 'G':
        if (in_class) break;
        e.kind = ESC_ASSERT;
        e.assert_kind = c == 'B' ? AS_NOT_WORD_B : c == 'A' ? AS_TEXT_START
                      : c == 'z' ? AS_TEXT_END : c == 'Z' ? AS_TEXT_END_NL : AS_SEARCH_START;
        return e;
    case 'k': case 'g':
        unsupported(ps, start, "backreferences and subroutine calls are not supported");
        e.kind = ESC_ERROR;
        return e;
    case 'K': case 'X': case 'R': case 'N': case 'C': case 'Q': case 'E':
        unsupported(ps, start, "this escape is not supported");
        e.kind = ESC_ERROR;
        return e;
    default:
        break;
    }
    if (c >= '1' && c <= '9') {
        if (in_class) syntax(ps, start, "octal or backreference escape in a class");
        else unsupported(ps, start, "backreferences are not supported");
        e.kind = ESC_ERROR;
        return e;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        syntax(ps, start, in_class ? "unknown escape in a class" : "unknown escape");
        e.kind = ESC_ERROR;
        return e;
    }
    /* Any other character stands for itself. */
    ps->i--;
    uint32_t cp;
    size_t l = ember_utf8_decode(ps->p + ps->i, ps->n - ps->i, &cp);
    if (EMBER_UNICODE_IS_INVALID(cp)) {
        syntax(ps, ps->i, "invalid UTF-8 in the pattern");
        e.kind = ESC_ERROR;
        return e;
    }
    ps->i += l;
    e.cp = cp;
    return e;
}

static bool cb_escape_set(class_builder *b, const escape *e) {
    b->cat_mask |= e->cat_mask;
    b->props_any |= e->props_any;
    b->props_none |= e->props_none;
    b->invalid |= e->invalid;
    if (e->lo <= e->hi && !cb_range(b, e->lo, e->hi)) return false;
    return true;
}

/* One character of a class (for a range end): a literal or a character escape. */
static bool class_char(parser *ps, uint32_t *cp, escape *set, bool *is_set) {
    *is_set = false;
    if (peek(ps) == '\\') {
        escape e = parse_escape(ps, true);
        if (e.kind == ESC_ERROR) return false;
        if (e.kind == ESC_SET) {
            *set = e;
            *is_set = true;
            return true;
        }
        *cp = e.cp;
        return true;
    }
    size_t at = ps->i;
    size_t l = ember_utf8_decode(ps->p + ps->i, ps->n - ps->i, cp);
    if (EMBER_UNICODE_IS_INVALID(*cp)) {
        syntax(ps, at, "invalid UTF-8 in the pattern");
        return false;
    }
    ps->i += l;
    return true;
}

/* [...] with ps->i at '['; returns the class index. */
static uint32_t parse_class(parser *ps, bool caseless) {
    size_t start = ps->i;
    if (++ps->depth > RE_MAX_DEPTH) return syntax(ps, start, "classes nested too deeply");
    ps->i++;
    bool negated = false;
    if (peek(ps) == '^') {
        negated = true;
        ps->i++;
    }
    class_builder b;
    memset(&b, 0, sizeof b);
    bool first = true;
    uint32_t result = RE_NONE;
    for (;;) {
        if (at_end(ps)) {
            syntax(ps, start, "missing ] to close the character class");
            goto done;
        }
        char c = peek(ps);
        if (c == ']' && !first) {
            ps->i++;
            break;
        }
        first = false;
        if (c == '[') {
            if (peek_at(ps, 1) == ':') {
                size_t k = ps->i + 2;
                while (k < ps->n && ((ps->p[k] >= 'a' && ps->p[k] <= 'z') || ps->p[k] == '^')) k++;
                if (k + 1 < ps->n && ps->p[k] == ':' && ps->p[k + 1] == ']') {
                    unsupported(ps, ps->i, "POSIX bracket classes are not supported");
                    goto done;
                }
            }
            size_t nested_at = ps->i;
            bool nested_neg = peek_at(ps, 1) == '^';
            uint32_t sub = parse_class(ps, caseless);
            if (sub == RE_NONE) goto done;
            bool ok = nested_neg ? cb_sub(&b, sub) : cb_merge(ps, &b, sub);
            if (!ok) {
                oom(ps);
                goto done;
            }
            if (peek(ps) == '-' && peek_at(ps, 1) != ']') {
                syntax(ps, nested_at, "a range cannot start with a class");
                goto done;
            }
            continue;
        }
        if (c == '&' && peek_at(ps, 1) == '&') {
            unsupported(ps, ps->i, "class intersection && is not supported");
            goto done;
        }
        size_t item_at = ps->i;
        uint32_t lo;
        escape set;
        bool is_set;
        if (!class_char(ps, &lo, &set, &is_set)) goto done;
        if (is_set) {
            if (!cb_escape_set(&b, &set)) {
                oom(ps);
                goto done;
            }
            if (peek(ps) == '-' && peek_at(ps, 1) != ']' && ps->i + 1 < ps->n) {
                syntax(ps, item_at, "a range cannot start with a class escape");
                goto done;
            }
            continue;
        }
        uint32_t hi = lo;
        if (peek(ps) == '-' && ps->i + 1 < ps->n && peek_at(ps, 1) != ']') {
            ps->i++;
            if (peek(ps) == '[') {
                syntax(ps, item_at, "a range cannot end with a class");
                goto done;
            }
            if (!class_char(ps, &hi, &set, &is_set)) goto done;
            if (is_set) {
                syntax(ps, item_at, "a range cannot end with a class escape");
                goto done;
            }
            if (hi < lo) {
                syntax(ps, item_at, "range out of order in the character class");
                goto done;
            }
        }
        if (!cb_range(&b, lo, hi)) {
            oom(ps);
            goto done;
        }
    }
    result = cb_store(ps, &b, negated, caseless);
done:
    cb_free(&b);
    ps->depth--;
    return result;
}

/* Oniguruma's Latin-1 table counts these numbers (No) as word characters:
 * its \w, \W and \b outside classes follow that table below U+0100, while
 * classes use the Unicode word set. */
static const uint32_t k_latin1_word[][2] = {{0xB2, 0xB3}, {0xB9, 0xB9}, {0xBC, 0xBE}};

static bool onig_word(uint32_t cp) {
    if (cp >= 0xB2 && cp <= 0xBE) {
        for (size_t i = 0; i < 3; i++)
            if (cp >= k_latin1_word[i][0] && cp <= k_latin1_word[i][1]) return true;
    }
    return ember_unicode_is_word(cp);
}

/* A class node made from one escape like \d or \p{L}. */
static uint32_t escape_class_node(parser *ps, const escape *e, bool caseless, size_t off) {
    class_builder b;
    memset(&b, 0, sizeof b);
    uint32_t cls = RE_NONE;
    bool ok = cb_escape_set(&b, e);
    for (size_t i = 0; ok && e->onig_word && i < 3; i++)
        ok = cb_range(&b, k_latin1_word[i][0], k_latin1_word[i][1]);
    if (!ok) oom(ps);
    else cls = cb_store(ps, &b, e->onig_word == 2, caseless);
    cb_free(&b);
    if (cls == RE_NONE) return RE_NONE;
    uint32_t nd = new_node(ps, N_CLASS, off);
    if (nd != RE_NONE) ps->nodes[nd].value = cls;
    return nd;
}

/* A literal, case-folded when caseless and the character has other cases. */
static uint32_t char_node(parser *ps, uint32_t cp, bool caseless, size_t off) {
    uint32_t eq[EMBER_UNICODE_MAX_CASE_EQUIVALENTS];
    bool fold = caseless && ember_unicode_case_equivalents(cp, eq) > 1;
    uint32_t nd = new_node(ps, fold ? N_FOLD : N_CHAR, off);
    if (nd != RE_NONE) ps->nodes[nd].value = fold ? ember_unicode_simple_fold(cp) : cp;
    return nd;
}

/* Reads {n}, {n,}, {n,m} or {,m} at ps->i ('{'). Returns false, leaving
 * ps->i alone, when the brace does not start a quantifier (then it is a
 * literal). *too_big is set for a well-formed quantifier with a count above
 * EMBER_REGEX_MAX_REPEAT. */
static bool read_braces(parser *ps, uint32_t *min, uint32_t *max, bool *too_big) {
    size_t k = ps->i + 1;
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false, comma = false;
    *too_big = false;
    while (k < ps->n && ps->p[k] >= '0' && ps->p[k] <= '9') {
        if (a <= EMBER_REGEX_MAX_REPEAT) a = a * 10 + (uint64_t)(ps->p[k] - '0');
        has_a = true;
        k++;
    }
    if (k < ps->n && ps->p[k] == ',') {
        comma = true;
        k++;
        while (k < ps->n && ps->p[k] >= '0' && ps->p[k] <= '9') {
            if (b <= EMBER_REGEX_MAX_REPEAT) b = b * 10 + (uint64_t)(ps->p[k] - '0');
            has_b = true;
            k++;
        }
    }
    if (k >= ps->n || ps->p[k] != '}' || (!has_a && !has_b)) return false;
    ps->i = k + 1;
    *min = has_a ? (uint32_t)(a > EMBER_REGEX_MAX_REPEAT ? EMBER_REGEX_MAX_REPEAT + 1 : a) : 0;
    if (!comma) *max = *min;
    else if (!has_b) *max = RE_INF;
    else *max = (uint32_t)(b > EMBER_REGEX_MAX_REPEAT ? EMBER_REGEX_MAX_REPEAT + 1 : b);
    if (*min > EMBER_REGEX_MAX_REPEAT || (*max != RE_INF && *max > EMBER_REGEX_MAX_REPEAT))
        *too_big = true;
    return true;
}

static bool is_quantifier_start(const parser *ps) {
    char c = peek(ps);
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    parser probe = *ps;
    uint32_t a, b;
    bool big;
    return read_braces(&probe, &a, &b, &big);
}

static uint32_t parse_alt(parser *ps, uint32_t flags);

/* Inline flags after "(?" (ps->i at the first flag letter). Sets *scoped
 * when they end with ':' (a group follows), else they end with ')'. */
static bool parse_flags(parser *ps, uint32_t *flags, bool *scoped, size_t start) {
    bool neg = false;
    uint32_t f = *flags;
    for (;;) {
        if (at_end(ps)) {
            syntax(ps, start, "unterminated inline flags");
            return false;
        }
        char c = ps->p[ps->i++];
        uint32_t bit = 0;
        switch (c) {
        case 'i': bit = FL_I; break;
        case 'm': bit = FL_M; break;
        case 's': bit = FL_S; break;
        case '-':
            if (neg) {
                syntax(ps, start, "bad inline flags");
                return false;
            }
            neg = true;
            continue;
        case ':': *scoped = true; *flags = f; return true;
        case ')': *scoped = false; *flags = f; return true;
        case 'x':
            unsupported(ps, start, "extended mode (?x) is not supported");
            return false;
        default:
            syntax(ps, start, "unknown inline flag");
            return false;
        }
        f = neg ? (f & ~bit) : (f | bit);
    }
}

/* A group, ps->i at '('. *flags may change for "(?i)". Returns RE_NONE on
 * error, or a node (N_EMPTY for a bare flag change). */
static uint32_t parse_group(parser *ps, uint32_t *flags) {
    size_t start = ps->i;
    ps->i++;
    uint8_t look = 0;
    bool is_look = false, atomic = false;
    uint32_t inner = *flags;
    if (peek(ps) == '?') {
        ps->i++;
        char c = peek(ps);
        if (c == ':') {
            ps->i++;
        } else if (c == '>') {
            ps->i++;
            atomic = true;
        } else if (c == '=' || c == '!') {
            ps->i++;
            is_look = true;
            look = c == '!' ? LOOK_NEG : 0;
        } else if (c == '<' && (peek_at(ps, 1) == '=' || peek_at(ps, 1) == '!')) {
            is_look = true;
            look = LOOK_BEHIND | (peek_at(ps, 1) == '!' ? LOOK_NEG : 0);
            ps->i += 2;
        } else if (c == '<' || (c == 'P' && peek_at(ps, 1) == '<')) {
            /* A named group: the name is only checked for shape. */
            ps->i += c == 'P' ? 2 : 1;
            size_t s = ps->i;
            if (peek(ps) >= '0' && peek(ps) <= '9') return syntax(ps, start, "bad group name");
            while (!at_end(ps) && peek(ps) != '>' &&
                   ((peek(ps) >= 'a' && peek(ps) <= 'z') || (peek(ps) >= 'A' && peek(ps) <= 'Z') ||
                    (peek(ps) >= '0' && peek(ps) <= '9') || peek(ps) == '_'))
                ps->i++;
            if (peek(ps) != '>' || ps->i == s) return syntax(ps, start, "bad group name");
            ps->i++;
        } else if (c == 'P' && (peek_at(ps, 1) == '=' || peek_at(ps, 1) == '>')) {
            return unsupported(ps, start, "backreferences and subroutine calls are not supported");
        } else if (c == '(') {
            return unsupported(ps, start, "conditional groups are not supported");
        } else if (c == '#') {
            while (!at_end(ps) && peek(ps) != ')') ps->i++;
            if (at_end(ps)) return syntax(ps, start, "unterminated comment group");
            ps->i++;
            return new_node(ps, N_EMPTY, start);
        } else if (c == 'R' || c == '&' || (c >= '0' && c <= '9') || c == '+' ||
                   c == '|' || c == '~') {
            return unsupported(ps, start,
                               "recursion, branch reset and absent groups are not supported");
        } else {
            bool scoped = false;
            if (!parse_flags(ps, &inner, &scoped, start)) return RE_NONE;
            if (!scoped) {
                *flags = inner;
                return new_node(ps, N_EMPTY, start);
            }
        }
    }
    if (++ps->depth > RE_MAX_DEPTH) return syntax(ps, start, "groups nested too deeply");
    uint32_t body = parse_alt(ps, inner);
    ps->depth--;
    if (body == RE_NONE) return RE_NONE;
    if (peek(ps) != ')') return syntax(ps, start, "missing ) to close the group");
    ps->i++;
    if (atomic || is_look) {
        uint32_t nd = new_node(ps, atomic ? N_ATOMIC : N_LOOK, start);
        if (nd == RE_NONE) return RE_NONE;
        ps->nodes[nd].child = body;
        ps->nodes[nd].mode = look;
        return nd;
    }
    return body;
}

/* One atom with its quantifier; RE_NONE on error. *quantifiable says
 * whether a quantifier may follow. */
static uint32_t parse_atom(parser *ps, uint32_t *flags, bool *quantifiable) {
    size_t at = ps->i;
    char c = peek(ps);
    *quantifiable = true;
    switch (c) {
    case '(': {
        uint32_t nd = parse_group(ps, flags);
        if (nd != RE_NONE && (ps->nodes[nd].type == N_LOOK ||
                              (ps->nodes[nd].type == N_EMPTY && ps->p[at + 1] == '?' &&
                               ps->p[at + 2] != ':')))
            *quantifiable = false;
        return nd;
    }
    case '[': {
        uint32_t cls = parse_class(ps, (*flags & FL_I) != 0);
        if (cls == RE_NONE) return RE_NONE;
        uint32_t nd = new_node(ps, N_CLASS, at);
        if (nd != RE_NONE) ps->nodes[nd].value = cls;
        return nd;
    }
    case '.':
        ps->i++;
        return new_node(ps, (*flags & FL_S) ? N_ANYNL : N_ANY, at);
    case '^':
    case '$': {
        ps->i++;
        *quantifiable = false;
        uint32_t nd = new_node(ps, N_ASSERT, at);
        if (nd == RE_NONE) return nd;
        if (c == '^') ps->nodes[nd].mode = (*flags & FL_M) ? AS_LINE_START : AS_TEXT_START;
        else if (*flags & FL_M) ps->nodes[nd].mode = AS_LINE_END;
        else if (ps->options & EMBER_REGEX_DOLLAR_ENDONLY) ps->nodes[nd].mode = AS_TEXT_END;
        else ps->nodes[nd].mode = AS_TEXT_END_NL;
        return nd;
    }
    case '\\': {
        escape e = parse_escape(ps, false);
        if (e.kind == ESC_ERROR) return RE_NONE;
        if (e.kind == ESC_ASSERT) {
            *quantifiable = false;
            uint32_t nd = new_node(ps, N_ASSERT, at);
            if (nd != RE_NONE) ps->nodes[nd].mode = (uint8_t)e.assert_kind;
            return nd;
        }
        if (e.kind == ESC_SET) return escape_class_node(ps, &e, (*flags & FL_I) != 0, at);
        return char_node(ps, e.cp, (*flags & FL_I) != 0, at);
    }
    case '*':
    case '+':
    case '?':
        return syntax(ps, at, "quantifier with nothing to repeat");
    case '{':
        if (is_quantifier_start(ps)) return syntax(ps, at, "quantifier with nothing to repeat");
        ps->i++;
        return char_node(ps, '{', false, at);
    default: {
        uint32_t cp;
        size_t l = ember_utf8_decode(ps->p + ps->i, ps->n - ps->i, &cp);
        if (EMBER_UNICODE_IS_INVALID(cp)) return syntax(ps, at, "invalid UTF-8 in the pattern");
        ps->i += l;
        return char_node(ps, cp, (*flags & FL_I) != 0, at);
    }
    }
}

/* A sequence up to '|' or ')' or the end. */
static uint32_t parse_seq(parser *ps, uint32_t *flags) {
    uint32_t seq = new_node(ps, N_CAT, ps->i);
    if (seq == RE_NONE) return RE_NONE;
    uint32_t last = RE_NONE;
    while (!at_end(ps) && peek(ps) != '|' && peek(ps) != ')') {
        bool quantifiable;
        uint32_t atom = parse_atom(ps, flags, &quantifiable);
        if (atom == RE_NONE) return RE_NONE;
        if (is_quantifier_start(ps)) {
            size_t qat = ps->i;
            if (!quantifiable)
                return syntax(ps, qat, "quantifier after an assertion or lookaround");
            uint32_t min = 0, max = RE_INF;
            char q = peek(ps);
            if (q == '*') {
                ps->i++;
            } else if (q == '+') {
                min = 1;
                ps->i++;
            } else if (q == '?') {
                max = 1;
                ps->i++;
            } else {
                bool too_big;
                read_braces(ps, &min, &max, &too_big);
                if (too_big) return syntax(ps, qat, "repetition count above 100000");
                if (min > max) return syntax(ps, qat, "repetition range min greater than max");
            }
            uint8_t mode = MODE_GREEDY;
            if (peek(ps) == '?') {
                mode = MODE_LAZY;
                ps->i++;
            } else if (peek(ps) == '+') {
                mode = MODE_POSSESSIVE;
                ps->i++;
            }
            if (is_quantifier_start(ps)) return syntax(ps, ps->i, "nested quantifier");
            uint32_t rep = new_node(ps, N_REPEAT, qat);
            if (rep == RE_NONE) return RE_NONE;
            ps->nodes[rep].child = atom;
            ps->nodes[rep].min = min;
            ps->nodes[rep].max = max;
            ps->nodes[rep].mode = mode;
            atom = rep;
        }
        if (last == RE_NONE) ps->nodes[seq].child = atom;
        else ps->nodes[last].next = atom;
        last = atom;
    }
    return seq;
}

/* Alternatives up to ')' or the end, with flags for the group. */
static uint32_t parse_alt(parser *ps, uint32_t flags) {
    uint32_t alt = new_node(ps, N_ALT, ps->i);
    if (alt == RE_NONE) return RE_NONE;
    uint32_t last = RE_NONE;
    for (;;) {
        uint32_t seq = parse_seq(ps, &flags);
        if (seq == RE_NONE) return RE_NONE;
        if (last == RE_NONE) ps->nodes[alt].child = seq;
        else ps->nodes[last].next = seq;
        last = seq;
        if (peek(ps) != '|' || at_end(ps)) break;
        ps->i++;
    }
    return alt;
}

/* ------------------------------------------------------------------------ */
/* Emitting the program                                                      */
/* ------------------------------------------------------------------------ */

typedef struct emitter {
    parser *ps;
    re_inst *code; /* (n) */
    size_t n, cap;
    uint32_t n_regs;
} emitter;

static uint32_t emit(emitter *em, uint8_t op) {
    if (em->n >= RE_MAX_INSTS) {
        if (!em->ps->failed) {
            em->ps->status = ember_error_set(
                EMBER_ERR_OUT_OF_MEMORY,
                "regex: the program exceeds %u instructions after expanding counted repetitions",
                (unsigned)RE_MAX_INSTS);
            em->ps->failed = true;
        }
        return RE_NONE;
    }
    if (!grow((void **)&em->code, &em->cap, em->n + 1, sizeof(re_inst))) return oom(em->ps);
    re_inst *in = &em->code[em->n];
    memset(in, 0, sizeof *in);
    in->op = op;
    in->a = in->b = in->c = in->d = RE_NONE;
    return (uint32_t)em->n++;
}

static void node_len_compute(const parser *ps, uint32_t nd, uint32_t *min, uint32_t *max);

/* Lengths in characters of what a node can match (max RE_INF: unbounded),
 * remembered in the node: counted repetitions emit a subtree many times. */
static void node_len(const parser *ps, uint32_t nd, uint32_t *min, uint32_t *max) {
    re_node *n = &ps->nodes[nd];
    if (!n->len_known) {
        node_len_compute(ps, nd, &n->len_min, &n->len_max);
        n->len_known = true;
    }
    *min = n->len_min;
    *max = n->len_max;
}

static void node_len_compute(const parser *ps, uint32_t nd, uint32_t *min, uint32_t *max) {
    const re_node *n = &ps->nodes[nd];
    switch (n->type) {
    case N_CHAR: case N_FOLD: case N_ANY: case N_ANYNL: case N_CLASS:
        *min = *max = 1;
        return;
    case N_CAT: {
        uint64_t lo = 0, hi = 0;
        for (uint32_t c = n->child; c != RE_NONE; c = ps->nodes[c].next) {
            uint32_t a, b;
            node_len(ps, c, &a, &b);
            lo += a;
            hi = (hi == RE_INF || b == RE_INF) ? RE_INF : hi + b;
            if (lo > RE_INF - 1) lo = RE_INF - 1;
            if (hi != RE_INF && hi >= RE_INF) hi = RE_INF;
        }
        *min = (uint32_t)lo;
        *max = (uint32_t)hi;
        return;
    }
    case N_ALT: {
        uint32_t lo = RE_INF, hi = 0;
        for (uint32_t c = n->child; c != RE_NONE; c = ps->nodes[c].next) {
            uint32_t a, b;
            node_len(ps, c, &a, &b);
            if (a < lo) lo = a;
            if (b > hi) hi = b;
        }
        *min = lo == RE_INF ? 0 : lo;
        *max = hi;
        return;
    }
    case N_REPEAT: {
        uint32_t a, b;
        node_len(ps, n->child, &a, &b);
        uint64_t lo = (uint64_t)a * n->min;
        *min = lo >= RE_INF ? RE_INF - 1 : (uint32_t)lo;
        if (b == 0 || n->max == 0) *max = 0;
        else if (b == RE_INF || n->max == RE_INF) *max = RE_INF;
        else {
            uint64_t hi = (uint64_t)b * n->max;
            *max = hi >= RE_INF ? RE_INF : (uint32_t)hi;
        }
        return;
    }
    case N_ATOMIC:
        node_len(ps, n->child, min, max);
        return;
    default:
        *min = *max = 0;
        return;
    }
}

static bool is_item(uint8_t type) {
    return type == N_CHAR || type == N_FOLD || type == N_ANY || type == N_ANYNL || type == N_CLASS;
}

static uint8_t item_op(uint8_t type) {
    switch (type) {
    case N_CHAR: return OP_CHAR;
    case N_FOLD: return OP_FOLD;
    case N_ANY: return OP_ANY;
    case N_ANYNL: return OP_ANYNL;
    default: return OP_CLASS;
    }
}

static bool emit_node(emitter *em, uint32_t nd);

/* An unbounded or counted repetition of a general node. */
static bool emit_repeat(emitter *em, const re_node *n) {
    const parser *ps = em->ps;
    uint32_t cmin, cmax;
    node_len(ps, n->child, &cmin, &cmax);
    bool nullable = cmin == 0;
    uint32_t atomic_reg = 0;
    uint32_t at = 0;
    if (n->mode == MODE_POSSESSIVE) {
        at = emit(em, OP_ATOMIC);
        if (at == RE_NONE) return false;
        atomic_reg = em->n_regs++;
        em->code[at].a = atomic_reg;
    }
    bool lazy = n->mode == MODE_LAZY;
    for (uint32_t k = 0; k < n->min; k++)
        if (!emit_node(em, n->child)) return false;
    if (n->max == RE_INF) {
        /* L1: SPLIT body, out; body: [MARK r] child [PROGRESS r]; JMP L1; out: */
        uint32_t split = emit(em, OP_SPLIT);
        if (split == RE_NONE) return false;
        uint32_t reg = 0;
        if (nullable) {
            uint32_t mark = emit(em, OP_MARK);
            if (mark == RE_NONE) return false;
            reg = em->n_regs++;
            em->code[mark].a = reg;
        }
        uint32_t body = split + 1;
        if (!emit_node(em, n->child)) return false;
        if (nullable) {
            uint32_t prog = emit(em, OP_PROGRESS);
            if (prog == RE_NONE) return false;
            em->code[prog].a = reg;
        }
        uint32_t jmp = emit(em, OP_JMP);
        if (jmp == RE_NONE) return false;
        em->code[jmp].a = split;
        uint32_t out = (uint32_t)em->n;
        em->code[split].a = lazy ? out : body;
        em->code[split].b = lazy ? body : out;
        /* As in Perl and PCRE, an empty iteration ends the loop. */
        if (nullable) em->code[jmp - 1].b = out;
    } else if (n->max > n->min) {
        /* SPLIT c1, out; c1: [MARK r] child [PROGRESS r]; SPLIT c2, out; ... out:
         * (an optional iteration that matches nothing ends the loop, as in
         * Python's and Perl's engines) */
        uint32_t first_split = (uint32_t)em->n;
        uint32_t reg = nullable ? em->n_regs++ : 0;
        for (uint32_t k = n->min; k < n->max; k++) {
            uint32_t split = emit(em, OP_SPLIT);
            if (split == RE_NONE) return false;
            if (nullable) {
                uint32_t mark = emit(em, OP_MARK);
                if (mark == RE_NONE) return false;
                em->code[mark].a = reg;
            }
            if (!emit_node(em, n->child)) return false;
            if (nullable) {
                uint32_t prog = emit(em, OP_PROGRESS);
                if (prog == RE_NONE) return false;
                em->code[prog].a = reg;
                em->code[prog].kind = 1; /* exit patched below */
            }
        }
        uint32_t out = (uint32_t)em->n;
        for (uint32_t pc = first_split; pc < out; pc++) {
            re_inst *in = &em->code[pc];
            /* Only this loop's SPLITs and PROGRESSes still lack targets. */
            if (in->op == OP_PROGRESS && in->kind == 1 && in->b == RE_NONE) {
                in->b = out;
                in->kind = 0;
            }
            if (in->op != OP_SPLIT || in->a != RE_NONE || in->b != RE_NONE) continue;
            in->a = lazy ? out : pc + 1;
            in->b = lazy ? pc + 1 : out;
        }
    }
    if (n->mode == MODE_POSSESSIVE) {
        uint32_t end = emit(em, OP_ATOMIC_END);
        if (end == RE_NONE) return false;
        em->code[end].a = atomic_reg;
    }
    return true;
}

static bool emit_node(emitter *em, uint32_t nd) {
    const re_node *n = &em->ps->nodes[nd];
    switch (n->type) {
    case N_EMPTY:
        return true;
    case N_CHAR: case N_FOLD: case N_ANY: case N_ANYNL: case N_CLASS: {
        uint32_t pc = emit(em, item_op(n->type));
        if (pc == RE_NONE) return false;
        em->code[pc].a = n->value;
        return true;
    }
    case N_CAT:
        for (uint32_t c = n->child; c != RE_NONE; c = em->ps->nodes[c].next)
            if (!emit_node(em, c)) return false;
        return true;
    case N_ALT: {
        if (n->child == RE_NONE) return true;
        if (em->ps->nodes[n->child].next == RE_NONE) return emit_node(em, n->child);
        /* SPLIT a1, next; a1: ...; JMP end; next: SPLIT a2, next2; ...; last alternative; end: */
        uint32_t jumps_from = (uint32_t)em->n;
        for (uint32_t c = n->child; c != RE_NONE; c = em->ps->nodes[c].next) {
            bool last = em->ps->nodes[c].next == RE_NONE;
            uint32_t split = RE_NONE;
            if (!last) {
                split = emit(em, OP_SPLIT);
                if (split == RE_NONE) return false;
                em->code[split].a = split + 1;
            }
            if (!emit_node(em, c)) return false;
            if (!last) {
                uint32_t jmp = emit(em, OP_JMP);
                if (jmp == RE_NONE) return false;
                em->code[jmp].kind = 1; /* marks a jump to this alternation's end */
                em->code[split].b = (uint32_t)em->n;
            }
        }
        uint32_t end = (uint32_t)em->n;
        for (uint32_t pc = jumps_from; pc < end; pc++) {
            re_inst *in = &em->code[pc];
            if (in->op == OP_JMP && in->kind == 1 && in->a == RE_NONE) {
                in->a = end;
                in->kind = 0;
            }
        }
        return true;
    }
    case N_REPEAT: {
        const re_node *c = &em->ps->nodes[n->child];
        if (n->max == 0) return true;
        if (is_item(c->type) && n->min == 1 && n->max == 1) return emit_node(em, n->child);
        if (is_item(c->type)) {
            uint32_t pc = emit(em, OP_REPEAT);
            if (pc == RE_NONE) return false;
            re_inst *in = &em->code[pc];
            in->kind = item_op(c->type);
            in->mode = n->mode;
            in->a = c->value;
            in->b = n->min;
            in->c = n->max;
            return true;
        }
        return emit_repeat(em, n);
    }
    case N_ATOMIC: {
        uint32_t at = emit(em, OP_ATOMIC);
        if (at == RE_NONE) return false;
        uint32_t reg = em->n_regs++;
        em->code[at].a = reg;
        if (!emit_node(em, n->child)) return false;
        uint32_t end = emit(em, OP_ATOMIC_END);
        if (end == RE_NONE) return false;
        em->code[end].a = reg;
        return true;
    }
    case N_LOOK: {
        uint32_t lmin = 0, lmax = 0;
        if (n->mode & LOOK_BEHIND) {
            node_len(em->ps, n->child, &lmin, &lmax);
            if (lmax == RE_INF || lmax > RE_MAX_LOOKBEHIND) {
                unsupported(em->ps, n->offset,
                            "lookbehind must have a bounded length of at most 255 characters");
                return false;
            }
        }
        uint32_t at = emit(em, OP_LOOK);
        if (at == RE_NONE) return false;
        uint32_t reg = em->n_regs++;
        if (!emit_node(em, n->child)) return false;
        uint32_t end = emit(em, OP_LOOK_END);
        if (end == RE_NONE) return false;
        re_inst *in = &em->code[at];
        in->kind = n->mode;
        in->a = reg;
        in->b = end + 1;
        in->c = lmin;
        in->d = lmax;
        em->code[end].kind = n->mode;
        em->code[end].a = reg;
        return true;
    }
    case N_ASSERT: {
        uint32_t pc = emit(em, OP_ASSERT);
        if (pc == RE_NONE) return false;
        em->code[pc].kind = n->mode;
        return true;
    }
    default:
        return false;
    }
}

/* ------------------------------------------------------------------------ */
/* Analysis: first bytes                                                     */
/* ------------------------------------------------------------------------ */

typedef struct analyser {
    const ember_regex *re;
    uint32_t *seen;   /* (n_code) epoch of the last visit */
    uint32_t epoch;
    uint32_t *todo;   /* (n_code) */
    size_t budget;    /* visits left for the whole program; then no more guards */
} analyser;

static void item_first(const ember_regex *re, uint8_t op, uint32_t arg, uint64_t *set) {
    switch (op) {
    case OP_CHAR:
        bit_set(set, lead_byte(arg));
        return;
    case OP_FOLD: {
        uint32_t eq[EMBER_UNICODE_MAX_CASE_EQUIVALENTS];
        size_t n = ember_unicode_case_equivalents(arg, eq);
        for (size_t i = 0; i < n; i++) bit_set(set, lead_byte(eq[i]));
        return;
    }
    case OP_ANY:
        for (unsigned b = 0; b < 256; b++)
            if (b != '\n') bit_set(set, b);
        return;
    case OP_ANYNL:
        for (int k = 0; k < 4; k++) set[k] = UINT64_MAX;
        return;
    default:
        for (int k = 0; k < 4; k++) set[k] |= re->classes[arg].first[k];
        return;
    }
}

/* The bytes that can start what the program matches from pc on; false when
 * it may match nothing there (or the analysis gave up): no guard then. */
static bool first_bytes(analyser *an, uint32_t pc0, uint64_t set[4]) {
    const ember_regex *re = an->re;
    memset(set, 0, 4 * sizeof(uint64_t));
    an->epoch++;
    size_t top = 0, visits = 0;
    an->todo[top++] = pc0;
    an->seen[pc0] = an->epoch;
    while (top > 0) {
        uint32_t pc = an->todo[--top];
        if (++visits > RE_GUARD_VISITS || an->budget == 0) return false;
        an->budget--;
        const re_inst *in = &re->code[pc];
        uint32_t next[2];
        int n_next = 0;
        switch (in->op) {
        case OP_CHAR: case OP_FOLD: case OP_ANY: case OP_ANYNL: case OP_CLASS:
            item_first(re, in->op, in->a, set);
            break;
        case OP_REPEAT:
            item_first(re, in->kind, in->a, set);
            if (in->b == 0) next[n_next++] = pc + 1;
            break;
        case OP_SPLIT:
            next[n_next++] = in->a;
            next[n_next++] = in->b;
            break;
        case OP_JMP:
            next[n_next++] = in->a;
            break;
        case OP_LOOK:
            next[n_next++] = in->b;
            break;
        case OP_PROGRESS:
            next[n_next++] = pc + 1;
            next[n_next++] = in->b;
            break;
        case OP_MATCH:
        case OP_LOOK_END:
        case OP_ATOMIC_END:
            /* Reaching the end of an atomic group cuts the backtracking
             * stack, so a branch through it must not be skipped early. */
            return false;
        default: /* assertions, registers, atomic markers: zero-width */
            next[n_next++] = pc + 1;
            break;
        }
        for (int k = 0; k < n_next; k++) {
            if (an->seen[next[k]] == an->epoch) continue;
            an->seen[next[k]] = an->epoch;
            an->todo[top++] = next[k];
        }
    }
    return true;
}

static bool add_guard(ember_regex *re, size_t *cap, const uint64_t set[4], uint32_t *index) {
    if (!grow((void **)&re->guards, cap, re->n_guards + 1, sizeof re->guards[0])) return false;
    memcpy(re->guards[re->n_guards], set, sizeof re->guards[0]);
    *index = (uint32_t)re->n_guards++;
    return true;
}

static bool analyse(ember_regex *re) {
    analyser an;
    an.re = re;
    an.epoch = 0;
    an.budget = RE_GUARD_BUDGET;
    an.seen = calloc(re->n_code, sizeof(uint32_t));
    an.todo = malloc(re->n_code * sizeof(uint32_t));
    bool ok = an.seen != NULL && an.todo != NULL;
    size_t cap = 0;
    uint64_t set[4];
    for (size_t pc = 0; ok && pc < re->n_code; pc++) {
        re_inst *in = &re->code[pc];
        if (in->op == OP_SPLIT) {
            if (first_bytes(&an, in->a, set)) ok = add_guard(re, &cap, set, &in->c);
            if (ok && first_bytes(&an, in->b, set)) ok = add_guard(re, &cap, set, &in->d);
        } else if (in->op == OP_REPEAT) {
            if (first_bytes(&an, (uint32_t)pc + 1, set)) ok = add_guard(re, &cap, set, &in->d);
            uint32_t next = (uint32_t)pc + 1;
            for (size_t hops = 0; re->code[next].op == OP_JMP && hops < re->n_code; hops++)
                next = re->code[next].a;
            if (re->code[next].op == OP_MATCH) in->pad |= INST_TAIL;
        }
    }
    if (ok) re->nullable = !first_bytes(&an, 0, re->first);
    bool jumps_to_start = false;
    for (size_t pc = 0; pc < re->n_code; pc++) {
        const re_inst *in = &re->code[pc];
        if ((in->op == OP_SPLIT && (in->a == 0 || in->b == 0)) || (in->op == OP_JMP && in->a == 0))
            jumps_to_start = true;
    }
    const re_inst *first = &re->code[0];
    re->anchored = !jumps_to_start && first->op == OP_ASSERT && first->kind == AS_TEXT_START;
    re->lead_skip = !jumps_to_start && first->op == OP_REPEAT && first->c == RE_INF &&
                    first->mode != MODE_LAZY;
    free(an.seen);
    free(an.todo);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Compile                                                                   */
/* ------------------------------------------------------------------------ */

void ember_regex_destroy(ember_regex *re) {
    if (re == NULL) return;
    free(re->code);
    free(re->classes);
    free(re->ranges);
    free(re->subs);
    free(re->guards);
    free(re);
}

ember_status ember_regex_compile(const char *pattern, size_t len, ember_regex **out) {
    return ember_regex_compile_ex(pattern, len, NULL, out);
}

ember_status ember_regex_compile_ex(const char *pattern, size_t len,
                                    const ember_regex_options *options, ember_regex **out) {
    if ((pattern == NULL && len != 0) || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_regex_compile: NULL argument");
    uint32_t flags = 0;
    uint64_t limit = EMBER_REGEX_DEFAULT_STEP_LIMIT;
    if (options != NULL) {
        if (options->struct_size < sizeof(ember_regex_options))
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_regex_compile_ex: options.struct_size %zu is too small",
                                   options->struct_size);
        if (options->flags & ~(EMBER_REGEX_CASELESS | EMBER_REGEX_MULTILINE | EMBER_REGEX_DOTALL |
                               EMBER_REGEX_DOLLAR_ENDONLY))
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_regex_compile_ex: unknown flags 0x%x",
                                   (unsigned)options->flags);
        flags = options->flags;
        if (options->step_limit) limit = options->step_limit;
    }
    ember_regex *re = calloc(1, sizeof *re);
    if (re == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "regex: out of memory");
    re->step_limit = limit;
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.p = len ? pattern : "";
    ps.n = len;
    ps.options = flags;
    ps.re = re;
    uint32_t initial = ((flags & EMBER_REGEX_CASELESS) ? FL_I : 0) |
                       ((flags & EMBER_REGEX_MULTILINE) ? FL_M : 0) |
                       ((flags & EMBER_REGEX_DOTALL) ? FL_S : 0);
    emitter em;
    memset(&em, 0, sizeof em);
    em.ps = &ps;
    uint32_t root = parse_alt(&ps, initial);
    if (root != RE_NONE && !at_end(&ps)) root = syntax(&ps, ps.i, "unbalanced )");
    bool ok = root != RE_NONE;
    if (ok) {
        for (size_t i = 0; i < re->n_classes; i++) class_finish(re, &re->classes[i]);
        ok = emit_node(&em, root) && emit(&em, OP_MATCH) != RE_NONE;
    }
    if (ok) {
        re->code = em.code;
        re->n_code = em.n;
        re->n_regs = em.n_regs;
        em.code = NULL;
        if (!analyse(re)) ok = oom(&ps) != RE_NONE;
    }
    free(ps.nodes);
    free(em.code);
    if (!ok || ps.failed) {
        ember_status st = ps.failed ? ps.status : EMBER_ERR_INVALID_ARGUMENT;
        ember_regex_destroy(re);
        return st;
    }
    *out = re;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */
/* ------------------------------------------------------------------------ */

enum re_frame_type {
    BT_BRANCH,   /* resume at pc, pos */
    BT_GREEDY,   /* a repeat at pc ended at pos with aux characters to give back */
    BT_LAZY,     /* a repeat at pc has matched aux characters up to pos */
    BT_REG,      /* restore register pc to aux */
    BT_ATOMIC,   /* barrier of an atomic group */
    BT_LOOK,     /* barrier of a positive lookaround started at pos */
    BT_LOOK_NEG, /* barrier of a negative lookaround: continue at pc, pos when popped */
    BT_BEHIND    /* lookbehind at pc: next start before pos, aux characters back */
};

typedef struct re_frame {
    uint32_t type;
    uint32_t pc;
    size_t pos;
    size_t aux;
} re_frame;

typedef struct re_exec {
    const ember_regex *re;
    const unsigned char *t;
    size_t len;
    size_t search_start;
    re_frame *stack; /* (cap) */
    size_t sp, cap;
    bool heap;       /* stack was allocated (else it is the caller's array) */
    size_t *regs;    /* (re->n_regs) */
    uint64_t steps, limit;
    size_t lead_end; /* where the leading repeat stopped in the last attempt */
} re_exec;

enum { RUN_NO_MATCH = 0, RUN_MATCH = 1, RUN_LIMIT = -1, RUN_OOM = -2 };

/* Doubles the stack (moving it to the heap the first time). */
static bool grow_stack(re_exec *x) {
    if (x->cap >= RE_MAX_STACK) return false;
    size_t cap = x->cap * 2;
    re_frame *s;
    if (x->heap) {
        s = realloc(x->stack, cap * sizeof *s);
    } else {
        s = malloc(cap * sizeof *s);
        if (s != NULL) memcpy(s, x->stack, x->sp * sizeof *s);
    }
    if (s == NULL) return false;
    x->stack = s;
    x->cap = cap;
    x->heap = true;
    return true;
}

/* Length of the unit at pos (< len). */
static size_t unit_len(const unsigned char *t, size_t len, size_t pos) {
    if (t[pos] < 0x80) return 1;
    uint32_t cp;
    return ember_utf8_decode((const char *)t + pos, len - pos, &cp);
}

/* Length of the unit that ends at pos (> 0). */
static size_t unit_len_back(const unsigned char *t, size_t pos) {
    if (t[pos - 1] < 0x80) return 1;
    uint32_t cp;
    return ember_utf8_decode_last((const char *)t, pos, &cp);
}

/* Matches one item at pos (< len); returns its length or 0. */
static size_t item_match(const ember_regex *re, uint8_t op, uint32_t arg, const unsigned char *t,
                         size_t len, size_t pos) {
    unsigned char b = t[pos];
    uint32_t cp;
    size_t l;
    if (b < 0x80) {
        switch (op) {
        case OP_CHAR: return b == arg;
        case OP_FOLD: return (uint32_t)(b >= 'A' && b <= 'Z' ? b + ('a' - 'A') : b) == arg;
        case OP_ANY: return b != '\n';
        case OP_ANYNL: return 1;
        default: return bit_test(re->classes[arg].ascii, b);
        }
    }
    l = ember_utf8_decode((const char *)t + pos, len - pos, &cp);
    switch (op) {
    case OP_CHAR: return cp == arg ? l : 0;
    case OP_FOLD:
        return !EMBER_UNICODE_IS_INVALID(cp) && ember_unicode_simple_fold(cp) == arg ? l : 0;
    case OP_ANY:
    case OP_ANYNL: return l;
    default: return class_eval(re, &re->classes[arg], cp) ? l : 0;
    }
}

static bool guard_ok(const ember_regex *re, uint32_t g, const unsigned char *t, size_t len,
                     size_t pos) {
    return g == RE_NONE || (pos < len && bit_test(re->guards[g], t[pos]));
}

/* guard_ok() for a byte already read: next is t[pos], or 256 at the end. */
static bool guard_byte_ok(const ember_regex *re, uint32_t g, unsigned next) {
    return g == RE_NONE || (next < 256 && bit_test(re->guards[g], next));
}

static bool is_word_at(const unsigned char *t, size_t len, size_t pos) {
    if (pos >= len) return false;
    uint32_t cp;
    if (t[pos] < 0x80) cp = t[pos];
    else ember_utf8_decode((const char *)t + pos, len - pos, &cp);
    return onig_word(cp);
}

static bool is_word_before(const unsigned char *t, size_t pos) {
    if (pos == 0) return false;
    uint32_t cp;
    ember_utf8_decode_last((const char *)t, pos, &cp);
    return onig_word(cp);
}

static bool assert_ok(const re_exec *x, uint8_t kind, size_t pos) {
    const unsigned char *t = x->t;
    size_t len = x->len;
    switch (kind) {
    case AS_TEXT_START: return pos == 0;
    case AS_TEXT_END: return pos == len;
    case AS_TEXT_END_NL: return pos == len || (pos + 1 == len && t[pos] == '\n');
    case AS_LINE_START: return pos == 0 || (pos < len && t[pos - 1] == '\n');
    case AS_LINE_END: return pos == len || t[pos] == '\n';
    case AS_WORD_B: return is_word_before(t, pos) != is_word_at(t, len, pos);
    case AS_NOT_WORD_B: return is_word_before(t, pos) == is_word_at(t, len, pos);
    default: return pos == x->search_start;
    }
}

/* Scans up to lim repetitions of an item from *pos; returns the count. */
static uint32_t scan_items(re_exec *x, const re_inst *in, uint32_t lim, size_t *pos) {
    const ember_regex *re = x->re;
    const unsigned char *t = x->t;
    size_t p = *pos, len = x->len;
    uint32_t count = 0;
    if (in->kind == OP_CLASS) {
        const re_class *c = &re->classes[in->a];
        const uint64_t lo = c->ascii[0], hi = c->ascii[1];
        while (count < lim && p < len) {
            unsigned char b = t[p];
            if (b < 0x80) {
                if (!(((b < 64 ? lo : hi) >> (b & 63)) & 1u)) break;
                p++;
            } else {
                uint32_t cp;
                size_t l = ember_utf8_decode((const char *)t + p, len - p, &cp);
                if (!class_eval(re, c, cp)) break;
                p += l;
            }
            count++;
        }
    } else {
        while (count < lim && p < len) {
            size_t l = item_match(re, in->kind, in->a, t, len, p);
            if (l == 0) break;
            p += l;
            count++;
        }
    }
    *pos = p;
    return count;
}

/* Pushes a frame; the stack and its top live in locals of run(). */
#define PUSH(TYPE, PC, POS, AUX)                                                                  \
    do {                                                                                          \
        if (sp == x->cap) {                                                                       \
            x->sp = sp;                                                                           \
            if (!grow_stack(x)) return RUN_OOM;                                                   \
            stack = x->stack;                                                                     \
        }                                                                                         \
        re_frame *f_ = &stack[sp++];                                                              \
        f_->type = (TYPE);                                                                        \
        f_->pc = (PC);                                                                            \
        f_->pos = (POS);                                                                          \
        f_->aux = (AUX);                                                                          \
    } while (0)

/* Counts one step; stops the search past the limit. */
#define STEP(N)                                                                                   \
    do {                                                                                          \
        steps += (N);                                                                             \
        if (steps > limit) {                                                                      \
            x->steps = steps;                                                                     \
            return RUN_LIMIT;                                                                     \
        }                                                                                         \
    } while (0)

/* Runs the program from pc 0 at pos; *end is the match's end on RUN_MATCH. */
static int run(re_exec *x, size_t pos, size_t *end) {
    const ember_regex *re = x->re;
    const re_inst *code = re->code;
    const unsigned char *t = x->t;
    const size_t len = x->len;
    size_t *regs = x->regs;
    re_frame *stack = x->stack;
    size_t sp = 0;
    uint64_t steps = x->steps;
    const uint64_t limit = x->limit;
    uint32_t pc = 0;
    for (;;) {
        STEP(1);
        const re_inst *in = &code[pc];
        switch (in->op) {
        case OP_CHAR: case OP_FOLD: case OP_ANY: case OP_ANYNL: case OP_CLASS: {
            if (pos >= len) goto fail;
            size_t l = item_match(re, in->op, in->a, t, len, pos);
            if (l == 0) goto fail;
            pos += l;
            pc++;
            continue;
        }
        case OP_REPEAT: {
            size_t p = pos;
            uint32_t lim = in->mode == MODE_LAZY ? in->b : in->c;
            uint32_t count = scan_items(x, in, lim, &p);
            STEP(count);
            if (count < in->b) goto fail;
            if (pc == 0) x->lead_end = p;
            /* Before the end of the pattern nothing can fail, so there is
             * nothing to come back for. */
            if (!(in->pad & INST_TAIL)) {
                if (in->mode == MODE_GREEDY && count > in->b) PUSH(BT_GREEDY, pc, p, count - in->b);
                if (in->mode == MODE_LAZY && count < in->c) PUSH(BT_LAZY, pc, p, count);
            }
            pos = p;
            pc++;
            if (in->mode != MODE_LAZY && !guard_ok(re, in->d, t, len, pos)) goto fail;
            continue;
        }
        case OP_SPLIT: {
            /* Walk down a chain of alternatives whose first bytes exclude
             * this one without going through the dispatch each time. */
            unsigned next = pos < len ? t[pos] : 256;
            while (!guard_byte_ok(re, in->c, next)) {
                if (!guard_byte_ok(re, in->d, next)) goto fail;
                pc = in->b;
                in = &code[pc];
                if (in->op != OP_SPLIT) break;
            }
            if (in->op != OP_SPLIT) continue;
            if (guard_byte_ok(re, in->d, next)) PUSH(BT_BRANCH, in->b, pos, 0);
            pc = in->a;
            continue;
        }
        case OP_JMP:
            pc = in->a;
            continue;
        case OP_MATCH:
            *end = pos;
            x->steps = steps;
            return RUN_MATCH;
        case OP_ASSERT:
            if (!assert_ok(x, in->kind, pos)) goto fail;
            pc++;
            continue;
        case OP_MARK:
            PUSH(BT_REG, in->a, 0, regs[in->a]);
            regs[in->a] = pos;
            pc++;
            continue;
        case OP_PROGRESS:
            pc = pos == regs[in->a] ? in->b : pc + 1;
            continue;
        case OP_ATOMIC:
            PUSH(BT_REG, in->a, 0, regs[in->a]);
            regs[in->a] = sp;
            PUSH(BT_ATOMIC, pc, pos, 0);
            pc++;
            continue;
        case OP_ATOMIC_END:
            sp = regs[in->a];
            pc++;
            continue;
        case OP_LOOK: {
            PUSH(BT_REG, in->a, 0, regs[in->a]);
            regs[in->a] = sp;
            PUSH((in->kind & LOOK_NEG) ? BT_LOOK_NEG : BT_LOOK, in->b, pos, 0);
            if (in->kind & LOOK_BEHIND) {
                /* Try starts min, min+1, ... max characters back. */
                size_t q = pos;
                uint32_t k = 0;
                while (k < in->c && q > 0) {
                    q -= unit_len_back(t, q);
                    k++;
                }
                if (k < in->c) goto fail;
                if (k < in->d && q > 0) PUSH(BT_BEHIND, pc, q, k);
                pos = q;
            }
            pc++;
            continue;
        }
        case OP_LOOK_END: {
            size_t at = regs[in->a];
            size_t origin = stack[at].pos;
            if ((in->kind & LOOK_BEHIND) && pos != origin) goto fail;
            sp = at;
            if (in->kind & LOOK_NEG) goto fail;
            pos = origin;
            pc++;
            continue;
        }
        default:
            goto fail;
        }
    fail:
        for (;;) {
            if (sp == 0) {
                x->steps = steps;
                return RUN_NO_MATCH;
            }
            STEP(1);
            re_frame f = stack[--sp];
            switch (f.type) {
            case BT_BRANCH:
                pc = f.pc;
                pos = f.pos;
                goto resume;
            case BT_GREEDY: {
                const re_inst *r = &code[f.pc];
                size_t p = f.pos, left = f.aux;
                while (left > 0) {
                    p -= unit_len_back(t, p);
                    left--;
                    STEP(1);
                    if (guard_ok(re, r->d, t, len, p)) {
                        if (left > 0) PUSH(BT_GREEDY, f.pc, p, left);
                        pc = f.pc + 1;
                        pos = p;
                        goto resume;
                    }
                }
                continue;
            }
            case BT_LAZY: {
                const re_inst *r = &code[f.pc];
                size_t p = f.pos, count = f.aux;
                while (count < r->c && p < len) {
                    size_t l = item_match(re, r->kind, r->a, t, len, p);
                    if (l == 0) break;
                    p += l;
                    count++;
                    STEP(1);
                    if (guard_ok(re, r->d, t, len, p)) {
                        if (count < r->c) PUSH(BT_LAZY, f.pc, p, count);
                        pc = f.pc + 1;
                        pos = p;
                        goto resume;
                    }
                }
                continue;
            }
            case BT_REG:
                regs[f.pc] = f.aux;
                continue;
            case BT_ATOMIC:
            case BT_LOOK:
                continue;
            case BT_LOOK_NEG:
                pc = f.pc;
                pos = f.pos;
                goto resume;
            case BT_BEHIND: {
                const re_inst *r = &code[f.pc];
                size_t q = f.pos - unit_len_back(t, f.pos);
                size_t k = f.aux + 1;
                if (k < r->d && q > 0) PUSH(BT_BEHIND, f.pc, q, k);
                pc = f.pc + 1;
                pos = q;
                goto resume;
            }
            default:
                continue;
            }
        }
    resume:;
    }
}

#undef PUSH
#undef STEP

ember_status ember_regex_search(const ember_regex *re, const char *text, size_t len, size_t start,
                                size_t *match_start, size_t *match_end, bool *found) {
    if (re == NULL || (text == NULL && len != 0) || match_start == NULL || match_end == NULL ||
        found == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_regex_search: NULL argument");
    if (start > len)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_regex_search: start %zu is past the end of the text (%zu)",
                               start, len);
    *found = false;
    re_frame local_stack[RE_LOCAL_FRAMES];
    size_t local_regs[RE_LOCAL_REGS];
    re_exec x;
    memset(&x, 0, sizeof x);
    x.re = re;
    x.t = (const unsigned char *)(len ? text : "");
    x.len = len;
    x.search_start = start;
    x.stack = local_stack;
    x.cap = RE_LOCAL_FRAMES;
    x.limit = re->step_limit;
    x.regs = local_regs;
    if (re->n_regs > RE_LOCAL_REGS) {
        x.regs = calloc(re->n_regs, sizeof(size_t));
        if (x.regs == NULL)
            return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "regex: out of memory for a search");
    }
    ember_status st = EMBER_OK;
    const unsigned char *t = x.t;
    size_t p = start;
    for (;;) {
        if (!re->nullable) {
            /* Skip to a byte that can start a match. */
            while (p < len && !bit_test(re->first, t[p])) p += unit_len(t, len, p);
            if (p >= len) break;
        }
        if (re->anchored && p > 0) break;
        size_t end = 0;
        x.lead_end = 0;
        int r = run(&x, p, &end);
        if (r == RUN_MATCH) {
            *match_start = p;
            *match_end = end;
            *found = true;
            break;
        }
        if (r == RUN_LIMIT) {
            st = ember_error_set(EMBER_ERR_LOOP_LIMIT,
                                 "regex: search stopped after %llu steps (the pattern backtracks "
                                 "too much on this text)",
                                 (unsigned long long)re->step_limit);
            break;
        }
        if (r == RUN_OOM) {
            st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY,
                                 "regex: the backtracking stack outgrew its limit");
            break;
        }
        if (p >= len) break;
        size_t next = p + unit_len(t, len, p);
        /* A failed attempt that began with an unbounded repeat tried every
         * end of that run; starting inside the run only tries a subset. */
        if (re->lead_skip && x.lead_end > next) next = x.lead_end;
        p = next;
    }
    if (x.heap) free(x.stack);
    if (x.regs != local_regs) free(x.regs);
    return st;
}
