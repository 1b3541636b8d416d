/*
 * extension/llm/jinja/jinja_value.c — values and their Python behaviour
 * (==, <, str(), repr(), json.dumps), the arena and buffers they live in,
 * and the public context API.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

/* Containers nest at most this deep in comparisons, printing and JSON. */
#define VALUE_MAX_DEPTH 1000

/* ------------------------------------------------------------------------ */
/* Arena                                                                     */
/* ------------------------------------------------------------------------ */

struct jj_block {
    jj_block *next;
    size_t cap, used;
    max_align_t data[]; /* (cap bytes) */
};

#define BLOCK_MIN ((size_t)16 * 1024)

void *jj_alloc(jj_arena *a, size_t size) {
    if (size > SIZE_MAX / 2) return NULL;
    size = (size + 7) & ~(size_t)7;
    if (size == 0) size = 8;
    jj_block *b = a->head;
    if (b == NULL || b->cap - b->used < size) {
        /* Each block at least doubles the total, so waste stays bounded. */
        size_t cap = a->total > BLOCK_MIN ? a->total : BLOCK_MIN;
        if (cap < size) cap = size;
        if (a->limit != 0) {
            if (a->total >= a->limit || a->limit - a->total < size) return NULL;
            if (cap > a->limit - a->total) cap = a->limit - a->total;
        }
        if (cap > SIZE_MAX - sizeof(jj_block)) return NULL;
        b = malloc(sizeof(jj_block) + cap);
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

void *jj_alloc_array(jj_arena *a, size_t n, size_t size) {
    if (size != 0 && n > SIZE_MAX / 4 / size) return NULL;
    return jj_alloc(a, n * size);
}

char *jj_strdup(jj_arena *a, const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *p = jj_alloc(a, n + 1);
    if (p == NULL) return NULL;
    if (n > 0) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void jj_arena_free(jj_arena *a) {
    jj_block *b = a->head;
    while (b != NULL) {
        jj_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

jj_mark jj_arena_mark(const jj_arena *a) {
    jj_mark m;
    m.head = a->head;
    m.used = a->head ? a->head->used : 0;
    return m;
}

void jj_arena_reset(jj_arena *a, jj_mark m) {
    while (a->head != NULL && a->head != m.head) {
        jj_block *b = a->head;
        a->head = b->next;
        a->total -= b->cap;
        free(b);
    }
    if (a->head != NULL) a->head->used = m.used;
}

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

bool jj_buf_put(jj_buf *b, const char *s, size_t n) {
    if (b->over || b->oom) return false;
    if (n > SIZE_MAX - b->n - 1) {
        b->oom = true;
        return false;
    }
    if (b->limit != 0 && b->n + n > b->limit) {
        b->over = true;
        return false;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) {
            if (cap > SIZE_MAX / 2) {
                cap = b->n + n + 1;
                break;
            }
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return false;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n > 0) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

bool jj_buf_putc(jj_buf *b, char c) { return jj_buf_put(b, &c, 1); }

bool jj_buf_puts(jj_buf *b, const char *s) { return jj_buf_put(b, s, strlen(s)); }

void jj_buf_free(jj_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ------------------------------------------------------------------------ */
/* Constructors and containers                                               */
/* ------------------------------------------------------------------------ */

jj_value jj_none(void) {
    jj_value v;
    memset(&v, 0, sizeof v);
    v.type = JJ_NONE;
    return v;
}

jj_value jj_bool(bool b) {
    jj_value v = jj_none();
    v.type = JJ_BOOL;
    v.u.b = b;
    return v;
}

jj_value jj_int(int64_t i) {
    jj_value v = jj_none();
    v.type = JJ_INT;
    v.u.i = i;
    return v;
}

jj_value jj_float(double d) {
    jj_value v = jj_none();
    v.type = JJ_FLOAT;
    v.u.f = d;
    return v;
}

jj_value jj_str(const char *p, size_t n) {
    jj_value v = jj_none();
    v.type = JJ_STR;
    v.u.s.p = n ? p : "";
    v.u.s.n = n;
    return v;
}

jj_value jj_undef(const char *why) {
    jj_value v = jj_none();
    v.type = JJ_UNDEF;
    v.u.s.p = why ? why : "";
    v.u.s.n = why ? strlen(why) : 0;
    return v;
}

jj_value jj_list_value(jj_list *l, bool tuple) {
    jj_value v = jj_none();
    v.type = JJ_LIST;
    v.flags = tuple ? JJ_F_TUPLE : 0;
    v.u.list = l;
    return v;
}

jj_list *jj_list_new(jj_arena *a, size_t cap) {
    jj_list *l = jj_alloc(a, sizeof *l);
    if (l == NULL) return NULL;
    l->n = 0;
    l->cap = cap;
    l->items = NULL;
    if (cap > 0) {
        l->items = jj_alloc_array(a, cap, sizeof *l->items);
        if (l->items == NULL) return NULL;
    }
    return l;
}

bool jj_list_push(jj_arena *a, jj_list *l, jj_value v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jj_value *items = jj_alloc_array(a, cap, sizeof *items);
        if (items == NULL) return false;
        if (l->n > 0) memcpy(items, l->items, l->n * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return true;
}

jj_dict *jj_dict_new(jj_arena *a) {
    jj_dict *d = jj_alloc(a, sizeof *d);
    if (d == NULL) return NULL;
    memset(d, 0, sizeof *d);
    return d;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Equal values hash alike (1, 1.0 and True included). */
static uint64_t hash_value(jj_value v, size_t depth) {
    switch (v.type) {
    case JJ_STR: {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < v.u.s.n; i++) {
            h ^= (unsigned char)v.u.s.p[i];
            h *= 1099511628211ull;
        }
        return h;
    }
    case JJ_BOOL: return mix64((uint64_t)v.u.b);
    case JJ_INT: return mix64((uint64_t)v.u.i);
    case JJ_FLOAT: {
        double f = v.u.f;
        if (f == floor(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0)
            return mix64((uint64_t)(int64_t)f);
        uint64_t bits;
        memcpy(&bits, &f, sizeof bits);
        return mix64(bits);
    }
    case JJ_NONE: return 0x9e3779b97f4a7c15ull;
    case JJ_LIST: {
        uint64_t h = 0x51ed270b27e3f3c1ull;
        if (depth < 8)
            for (size_t i = 0; i < v.u.list->n; i++)
                h = mix64(h ^ hash_value(v.u.list->items[i], depth + 1));
        return h;
    }
    default: return mix64((uint64_t)(uintptr_t)v.u.dict);
    }
}

#define DICT_INDEX_MIN 8

static bool dict_reindex(jj_arena *a, jj_dict *d) {
    size_t cap = 16;
    while (cap < d->n * 2) cap *= 2;
    uint32_t *index = jj_alloc_array(a, cap, sizeof *index);
    if (index == NULL) return false;
    memset(index, 0, cap * sizeof *index);
    for (size_t m = 0; m < d->n; m++) {
        size_t h = (size_t)hash_value(d->keys[m], 0) & (cap - 1);
        while (index[h] != 0) h = (h + 1) & (cap - 1);
        index[h] = (uint32_t)(m + 1);
    }
    d->index = index;
    d->index_cap = cap;
    return true;
}

static size_t dict_find(const jj_dict *d, jj_value key) {
    if (d->index == NULL) {
        for (size_t m = 0; m < d->n; m++)
            if (jj_equal(d->keys[m], key)) return m;
        return SIZE_MAX;
    }
    size_t mask = d->index_cap - 1;
    size_t h = (size_t)hash_value(key, 0) & mask;
    while (d->index[h] != 0) {
        size_t m = d->index[h] - 1;
        if (jj_equal(d->keys[m], key)) return m;
        h = (h + 1) & mask;
    }
    return SIZE_MAX;
}

bool jj_dict_set(jj_arena *a, jj_dict *d, jj_value key, jj_value val) {
    size_t m = dict_find(d, key);
    if (m != SIZE_MAX) {
        d->vals[m] = val;
        return true;
    }
    if (d->n >= UINT32_MAX - 1) return false;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        jj_value *keys = jj_alloc_array(a, cap, sizeof *keys);
        jj_value *vals = jj_alloc_array(a, cap, sizeof *vals);
        if (keys == NULL || vals == NULL) return false;
        if (d->n > 0) {
            memcpy(keys, d->keys, d->n * sizeof *keys);
            memcpy(vals, d->vals, d->n * sizeof *vals);
        }
        d->keys = keys;
        d->vals = vals;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n] = val;
    d->n++;
    if (d->n > DICT_INDEX_MIN) {
        if (d->index == NULL || d->n * 2 > d->index_cap) return dict_reindex(a, d);
        size_t mask = d->index_cap - 1;
        size_t h = (size_t)hash_value(key, 0) & mask;
        while (d->index[h] != 0) h = (h + 1) & mask;
        d->index[h] = (uint32_t)d->n;
    }
    return true;
}

const jj_value *jj_dict_get(const jj_dict *d, jj_value key) {
    size_t m = dict_find(d, key);
    return m == SIZE_MAX ? NULL : &d->vals[m];
}

const jj_value *jj_dict_get_str(const jj_dict *d, const char *p, size_t n) {
    return jj_dict_get(d, jj_str(p, n));
}

/* ------------------------------------------------------------------------ */
/* Truth, equality, order                                                    */
/* ------------------------------------------------------------------------ */

bool jj_truthy(jj_value v) {
    switch (v.type) {
    case JJ_UNDEF:
    case JJ_NONE: return false;
    case JJ_BOOL: return v.u.b;
    case JJ_INT: return v.u.i != 0;
    case JJ_FLOAT: return v.u.f != 0.0;
    case JJ_STR: return v.u.s.n != 0;
    case JJ_LIST: return v.u.list->n != 0;
    case JJ_DICT: return v.u.dict->n != 0;
    default: return true;
    }
}

static bool is_number(jj_value v) {
    return v.type == JJ_BOOL || v.type == JJ_INT || v.type == JJ_FLOAT;
}

static int64_t as_int(jj_value v) { return v.type == JJ_BOOL ? (int64_t)v.u.b : v.u.i; }

/* -1, 0, 1 comparing int i and double f exactly; 2 when f is NaN. */
static int cmp_int_float(int64_t i, double f) {
    if (f != f) return 2;
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    if (i < fi) return -1;
    if (i > fi) return 1;
    return f > fl ? -1 : 0;
}

/* Numeric comparison: -1, 0, 1, or 2 when unordered (NaN). */
static int cmp_numbers(jj_value a, jj_value b) {
    if (a.type != JJ_FLOAT && b.type != JJ_FLOAT) {
        int64_t x = as_int(a), y = as_int(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.type == JJ_FLOAT && b.type == JJ_FLOAT) {
        if (a.u.f < b.u.f) return -1;
        if (a.u.f > b.u.f) return 1;
        return a.u.f == b.u.f ? 0 : 2;
    }
    if (a.type == JJ_FLOAT) {
        int c = cmp_int_float(as_int(b), a.u.f);
        return c == 2 ? 2 : -c;
    }
    return cmp_int_float(as_int(a), b.u.f);
}

static bool equal_depth(jj_value a, jj_value b, size_t depth) {
    if (depth > VALUE_MAX_DEPTH) return false;
    if (is_number(a) && is_number(b)) return cmp_numbers(a, b) == 0;
    if (a.type != b.type) return false;
    switch (a.type) {
    case JJ_UNDEF:
    case JJ_NONE: return true;
    case JJ_STR: return a.u.s.n == b.u.s.n && memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0;
    case JJ_LIST: {
        if ((a.flags & JJ_F_TUPLE) != (b.flags & JJ_F_TUPLE)) return false;
        if (a.u.list->n != b.u.list->n) return false;
        for (size_t i = 0; i < a.u.list->n; i++)
            if (!equal_depth(a.u.list->items[i], b.u.list->items[i], depth + 1)) return false;
        return true;
    }
    case JJ_DICT: {
        const jj_dict *x = a.u.dict, *y = b.u.dict;
        if (x->n != y->n) return false;
        for (size_t m = 0; m < x->n; m++) {
            const jj_value *w = jj_dict_get(y, x->keys[m]);
            if (w == NULL || !equal_depth(x->vals[m], *w, depth + 1)) return false;
        }
        return true;
    }
    case JJ_FUNC:
        return a.fn == b.fn && a.self_type == b.self_type && a.u.s.p == b.u.s.p &&
               a.u.s.n == b.u.s.n;
    case JJ_MACRO: return a.u.macro == b.u.macro;
    case JJ_LOOP: return a.u.loop == b.u.loop;
    default: return a.u.dict == b.u.dict;
    }
}

bool jj_equal(jj_value a, jj_value b) { return equal_depth(a, b, 0); }

static int less_depth(jj_value a, jj_value b, bool *less, size_t depth) {
    if (depth > VALUE_MAX_DEPTH) return -1;
    if (is_number(a) && is_number(b)) {
        *less = cmp_numbers(a, b) == -1;
        return 0;
    }
    if (a.type == JJ_STR && b.type == JJ_STR) {
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int c = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
        *less = c < 0 || (c == 0 && a.u.s.n < b.u.s.n);
        return 0;
    }
    if (a.type == JJ_LIST && b.type == JJ_LIST && (a.flags & JJ_F_TUPLE) == (b.flags & JJ_F_TUPLE)) {
        const jj_list *x = a.u.list, *y = b.u.list;
        for (size_t i = 0; i < x->n && i < y->n; i++) {
            if (equal_depth(x->items[i], y->items[i], depth + 1)) continue;
            return less_depth(x->items[i], y->items[i], less, depth + 1);
        }
        *less = x->n < y->n;
        return 0;
    }
    return -1;
}

int jj_less(jj_value a, jj_value b, bool *less) { return less_depth(a, b, less, 0); }

const char *jj_type_name(jj_value v) {
    switch (v.type) {
    case JJ_UNDEF: return "Undefined";
    case JJ_NONE: return "NoneType";
    case JJ_BOOL: return "bool";
    case JJ_INT: return "int";
    case JJ_FLOAT: return "float";
    case JJ_STR: return "str";
    case JJ_LIST: return (v.flags & JJ_F_TUPLE) ? "tuple" : "list";
    case JJ_DICT: return "dict";
    case JJ_NS: return "Namespace";
    case JJ_FUNC: return "builtin_function_or_method";
    case JJ_MACRO: return "Macro";
    case JJ_LOOP: return "LoopContext";
    default: return "object";
    }
}

/* ------------------------------------------------------------------------ */
/* str() and repr()                                                          */
/* ------------------------------------------------------------------------ */

size_t jj_format_float(double d, char *buf) {
    if (d != d) return (size_t)snprintf(buf, 32, "nan");
    if (isinf(d)) return (size_t)snprintf(buf, 32, d < 0 ? "-inf" : "inf");
    if (d == 0) return (size_t)snprintf(buf, 32, signbit(d) ? "-0.0" : "0.0");
    /* Shortest digits that read back as d, as Python's repr chooses. */
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    if (prec > 17) prec = 17;
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
    /* tmp: [-]D[<point>DDD]e[+-]XX, the point in the C locale's spelling. */
    char digits[24];
    size_t nd = 0;
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    while (*p != 'e' && *p != '\0') {
        if (*p >= '0' && *p <= '9' && nd < sizeof digits - 1) digits[nd++] = *p;
        p++;
    }
    int exp10 = *p == 'e' ? atoi(p + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    size_t o = 0;
    if (neg) buf[o++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            buf[o++] = '0';
            buf[o++] = '.';
            for (int k = -1; k > exp10; k--) buf[o++] = '0';
            for (size_t k = 0; k < nd; k++) buf[o++] = digits[k];
        } else {
            for (int k = 0; k <= exp10; k++) buf[o++] = (size_t)k < nd ? digits[k] : '0';
            buf[o++] = '.';
            if ((size_t)exp10 + 1 < nd) {
                for (size_t k = (size_t)exp10 + 1; k < nd; k++) buf[o++] = digits[k];
            } else {
                buf[o++] = '0';
            }
        }
    } else {
        buf[o++] = digits[0];
        if (nd > 1) {
            buf[o++] = '.';
            for (size_t k = 1; k < nd; k++) buf[o++] = digits[k];
        }
        o += (size_t)snprintf(buf + o, 32 - o, "e%c%02d", exp10 < 0 ? '-' : '+',
                              exp10 < 0 ? -exp10 : exp10);
    }
    buf[o] = '\0';
    return o;
}

static bool write_repr_depth(jj_buf *b, jj_value v, size_t depth);

static bool write_str_repr(jj_buf *b, const char *s, size_t n) {
    bool has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
    char quote = has_single && !has_double ? '"' : '\'';
    if (!jj_buf_putc(b, quote)) return false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = jj_utf8_next(s + i, n - i, &cp);
        char tmp[16];
        if (cp == (uint32_t)quote || cp == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)cp;
            if (!jj_buf_put(b, tmp, 2)) return false;
        } else if (cp == '\t') {
            if (!jj_buf_puts(b, "\\t")) return false;
        } else if (cp == '\n') {
            if (!jj_buf_puts(b, "\\n")) return false;
        } else if (cp == '\r') {
            if (!jj_buf_puts(b, "\\r")) return false;
        } else if (cp < 0x80 ? (cp < 0x20 || cp == 0x7F) : !jj_is_printable(cp)) {
            if (cp <= 0xFF) snprintf(tmp, sizeof tmp, "\\x%02x", (unsigned)cp);
            else if (cp <= 0xFFFF) snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)cp);
            else snprintf(tmp, sizeof tmp, "\\U%08x", (unsigned)cp);
            if (!jj_buf_puts(b, tmp)) return false;
        } else {
            if (!jj_buf_put(b, s + i, l)) return false;
        }
        i += l;
    }
    return jj_buf_putc(b, quote);
}

static bool write_str_depth(jj_buf *b, jj_value v, size_t depth) {
    char num[40];
    switch (v.type) {
    case JJ_UNDEF: return true;
    case JJ_NONE: return jj_buf_puts(b, "None");
    case JJ_BOOL: return jj_buf_puts(b, v.u.b ? "True" : "False");
    case JJ_INT:
        snprintf(num, sizeof num, "%" PRId64, v.u.i);
        return jj_buf_puts(b, num);
    case JJ_FLOAT: return jj_buf_put(b, num, jj_format_float(v.u.f, num));
    case JJ_STR: return jj_buf_put(b, v.u.s.p, v.u.s.n);
    case JJ_LIST: {
        bool tuple = (v.flags & JJ_F_TUPLE) != 0;
        if (depth > VALUE_MAX_DEPTH) return jj_buf_puts(b, tuple ? "(...)" : "[...]");
        if (!jj_buf_putc(b, tuple ? '(' : '[')) return false;
        for (size_t i = 0; i < v.u.list->n; i++) {
            if (i && !jj_buf_puts(b, ", ")) return false;
            if (!write_repr_depth(b, v.u.list->items[i], depth + 1)) return false;
        }
        if (tuple && v.u.list->n == 1 && !jj_buf_putc(b, ',')) return false;
        return jj_buf_putc(b, tuple ? ')' : ']');
    }
    case JJ_DICT:
    case JJ_NS: {
        if (depth > VALUE_MAX_DEPTH) return jj_buf_puts(b, "{...}");
        if (v.type == JJ_NS && !jj_buf_puts(b, "<Namespace ")) return false;
        if (!jj_buf_putc(b, '{')) return false;
        for (size_t m = 0; m < v.u.dict->n; m++) {
            if (m && !jj_buf_puts(b, ", ")) return false;
            if (!write_repr_depth(b, v.u.dict->keys[m], depth + 1) || !jj_buf_puts(b, ": ") ||
                !write_repr_depth(b, v.u.dict->vals[m], depth + 1))
                return false;
        }
        if (!jj_buf_putc(b, '}')) return false;
        return v.type == JJ_NS ? jj_buf_putc(b, '>') : true;
    }
    case JJ_FUNC: return jj_buf_puts(b, "<built-in function>");
    case JJ_MACRO: {
        if (!jj_buf_puts(b, "<Macro '")) return false;
        if (!jj_buf_put(b, v.u.macro->node->u.macro.p, v.u.macro->node->u.macro.n)) return false;
        return jj_buf_puts(b, "'>");
    }
    case JJ_LOOP:
        snprintf(num, sizeof num, "<LoopContext %" PRId64 "/%" PRId64 ">", v.u.loop->index0 + 1,
                 v.u.loop->length);
        return jj_buf_puts(b, num);
    default: return true;
    }
}

static bool write_repr_depth(jj_buf *b, jj_value v, size_t depth) {
    if (v.type == JJ_STR) return write_str_repr(b, v.u.s.p, v.u.s.n);
    if (v.type == JJ_UNDEF) return jj_buf_puts(b, "Undefined");
    return write_str_depth(b, v, depth);
}

bool jj_write_str(jj_buf *b, jj_value v) { return write_str_depth(b, v, 0); }

bool jj_write_repr(jj_buf *b, jj_value v) { return write_repr_depth(b, v, 0); }

/* ------------------------------------------------------------------------ */
/* json.dumps                                                                */
/* ------------------------------------------------------------------------ */

static bool json_string(jj_buf *b, const char *s, size_t n, bool ascii) {
    if (!jj_buf_putc(b, '"')) return false;
    size_t run = 0; /* start of bytes not yet written */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[16];
        if (ascii && c >= 0x80) {
            uint32_t cp;
            size_t l = jj_utf8_next(s + i, n - i, &cp);
            if (cp >= 0x10000)
                snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", (unsigned)(0xD800 + ((cp - 0x10000) >> 10)),
                         (unsigned)(0xDC00 + ((cp - 0x10000) & 0x3FF)));
            else
                snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)cp);
            if (!jj_buf_put(b, s + run, i - run) || !jj_buf_puts(b, tmp)) return false;
            i += l - 1;
            run = i + 1;
            continue;
        }
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                esc = tmp;
            }
        }
        if (esc == NULL) continue;
        if (!jj_buf_put(b, s + run, i - run) || !jj_buf_puts(b, esc)) return false;
        run = i + 1;
    }
    return jj_buf_put(b, s + run, n - run) && jj_buf_putc(b, '"');
}

static bool json_float(jj_buf *b, double d) {
    if (d != d) return jj_buf_puts(b, "NaN");
    if (isinf(d)) return jj_buf_puts(b, d < 0 ? "-Infinity" : "Infinity");
    char num[40];
    return jj_buf_put(b, num, jj_format_float(d, num));
}

static bool json_newline(jj_buf *b, const jj_json_style *st, size_t level) {
    if (st->indent == NULL) return true;
    if (!jj_buf_putc(b, '\n')) return false;
    for (size_t k = 0; k < level; k++)
        if (!jj_buf_put(b, st->indent, st->indent_len)) return false;
    return true;
}

/* A dict key as json.dumps writes it; -1 when JSON keys cannot hold it. */
static int json_key(jj_buf *b, jj_value k, bool ascii) {
    char num[40];
    switch (k.type) {
    case JJ_STR: return json_string(b, k.u.s.p, k.u.s.n, ascii) ? 0 : -2;
    case JJ_BOOL: return jj_buf_puts(b, k.u.b ? "\"true\"" : "\"false\"") ? 0 : -2;
    case JJ_NONE: return jj_buf_puts(b, "\"null\"") ? 0 : -2;
    case JJ_INT:
        snprintf(num, sizeof num, "\"%" PRId64 "\"", k.u.i);
        return jj_buf_puts(b, num) ? 0 : -2;
    case JJ_FLOAT:
        if (!jj_buf_putc(b, '"') || !json_float(b, k.u.f) || !jj_buf_putc(b, '"')) return -2;
        return 0;
    default: return -1;
    }
}

/* Member order for sort_keys: a stable insertion sort by key (n is small). */
static int sorted_members(const jj_dict *d, size_t *order, char *err, size_t err_cap) {
    for (size_t m = 0; m < d->n; m++) {
        size_t j = m;
        while (j > 0) {
            bool less;
            if (jj_less(d->keys[m], d->keys[order[j - 1]], &less) != 0) {
                snprintf(err, err_cap, "'<' not supported between instances of '%s' and '%s'",
                         jj_type_name(d->keys[m]), jj_type_name(d->keys[order[j - 1]]));
                return -1;
            }
            if (!less) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = m;
    }
    return 0;
}

int jj_write_json(jj_buf *b, jj_value v, const jj_json_style *st, char *err, size_t err_cap,
                  size_t depth) {
    char num[40];
    if (depth > VALUE_MAX_DEPTH) {
        snprintf(err, err_cap, "value nested too deeply for JSON");
        return -1;
    }
    switch (v.type) {
    case JJ_NONE: return jj_buf_puts(b, "null") ? 0 : -2;
    case JJ_BOOL: return jj_buf_puts(b, v.u.b ? "true" : "false") ? 0 : -2;
    case JJ_INT:
        snprintf(num, sizeof num, "%" PRId64, v.u.i);
        return jj_buf_puts(b, num) ? 0 : -2;
    case JJ_FLOAT: return json_float(b, v.u.f) ? 0 : -2;
    case JJ_STR: return json_string(b, v.u.s.p, v.u.s.n, st->ensure_ascii) ? 0 : -2;
    case JJ_LIST: {
        const jj_list *l = v.u.list;
        if (l->n == 0) return jj_buf_puts(b, "[]") ? 0 : -2;
        if (!jj_buf_putc(b, '[') || !json_newline(b, st, depth + 1)) return -2;
        for (size_t i = 0; i < l->n; i++) {
            if (i && (!jj_buf_put(b, st->item_sep, st->item_sep_len) ||
                      !json_newline(b, st, depth + 1)))
                return -2;
            int rc = jj_write_json(b, l->items[i], st, err, err_cap, depth + 1);
            if (rc != 0) return rc;
        }
        if (!json_newline(b, st, depth) || !jj_buf_putc(b, ']')) return -2;
        return 0;
    }
    case JJ_DICT: {
        const jj_dict *d = v.u.dict;
        if (d->n == 0) return jj_buf_puts(b, "{}") ? 0 : -2;
        size_t *order = NULL;
        if (st->sort_keys) {
            order = malloc(d->n * sizeof *order);
            if (order == NULL) return -2;
            if (sorted_members(d, order, err, err_cap) != 0) {
                free(order);
                return -1;
            }
        }
        int rc = 0;
        if (!jj_buf_putc(b, '{') || !json_newline(b, st, depth + 1)) rc = -2;
        for (size_t i = 0; rc == 0 && i < d->n; i++) {
            size_t m = order ? order[i] : i;
            if (i && (!jj_buf_put(b, st->item_sep, st->item_sep_len) ||
                      !json_newline(b, st, depth + 1))) {
                rc = -2;
                break;
            }
            rc = json_key(b, d->keys[m], st->ensure_ascii);
            if (rc == -1)
                snprintf(err, err_cap, "keys must be str, int, float, bool or None, not %s",
                         jj_type_name(d->keys[m]));
            if (rc != 0) break;
            if (!jj_buf_put(b, st->key_sep, st->key_sep_len)) {
                rc = -2;
                break;
            }
            rc = jj_write_json(b, d->vals[m], st, err, err_cap, depth + 1);
        }
        free(order);
        if (rc != 0) return rc;
        if (!json_newline(b, st, depth) || !jj_buf_putc(b, '}')) return -2;
        return 0;
    }
    default:
        snprintf(err, err_cap, "Object of type %s is not JSON serializable", jj_type_name(v));
        return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* From JSON                                                                 */
/* ------------------------------------------------------------------------ */

static bool from_json_depth(jj_arena *a, const ember_json *j, jj_value *out, size_t depth) {
    if (depth > VALUE_MAX_DEPTH) return false;
    switch (ember_json_type_of(j)) {
    case EMBER_JSON_NULL: *out = jj_none(); return true;
    case EMBER_JSON_BOOL: {
        bool b = false;
        ember_json_bool(j, &b);
        *out = jj_bool(b);
        return true;
    }
    case EMBER_JSON_NUMBER: {
        int64_t i = 0;
        bool exact = false;
        ember_json_int64(j, &i, &exact);
        /* Python reads an integer literal as an int, whatever its size; past
         * int64 it becomes a float here. */
        if (exact) {
            *out = jj_int(i);
        } else {
            double d = 0;
            ember_json_number(j, &d);
            *out = jj_float(d);
        }
        return true;
    }
    case EMBER_JSON_STRING: {
        const char *s;
        size_t n;
        ember_json_string(j, &s, &n);
        char *p = jj_strdup(a, s, n);
        if (p == NULL) return false;
        *out = jj_str(p, n);
        return true;
    }
    case EMBER_JSON_ARRAY: {
        size_t n = ember_json_array_size(j);
        jj_list *l = jj_list_new(a, n);
        if (l == NULL) return false;
        for (size_t i = 0; i < n; i++) {
            if (!from_json_depth(a, ember_json_array_at(j, i), &l->items[i], depth + 1)) return false;
            l->n++;
        }
        *out = jj_list_value(l, false);
        return true;
    }
    case EMBER_JSON_OBJECT: {
        jj_dict *d = jj_dict_new(a);
        if (d == NULL) return false;
        for (size_t m = 0; m < ember_json_object_size(j); m++) {
            const char *key;
            size_t kl;
            const ember_json *mv = ember_json_object_at(j, m, &key, &kl);
            char *kp = jj_strdup(a, key, kl);
            jj_value val;
            if (kp == NULL || !from_json_depth(a, mv, &val, depth + 1)) return false;
            if (!jj_dict_set(a, d, jj_str(kp, kl), val)) return false;
        }
        *out = jj_none();
        out->type = JJ_DICT;
        out->u.dict = d;
        return true;
    }
    }
    return false;
}

bool jj_from_json(jj_arena *a, const ember_json *json, jj_value *out) {
    return from_json_depth(a, json, out, 0);
}

/* ------------------------------------------------------------------------ */
/* Contexts (public)                                                         */
/* ------------------------------------------------------------------------ */

struct ember_jinja_context {
    jj_arena arena;
    jj_dict *vars;
};

const jj_dict *jj_context_vars(const ember_jinja_context *ctx) {
    return ctx != NULL ? ctx->vars : NULL;
}

static ember_status ctx_oom(void) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "jinja: out of memory for a context value");
}

static ember_status json_failed(void) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY,
                           "jinja: cannot convert JSON (out of memory, or nested deeper than %d)",
                           VALUE_MAX_DEPTH);
}

static ember_status null_arg(const char *fn) {
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
}

ember_status ember_jinja_context_create(ember_jinja_context **out) {
    if (out == NULL) return null_arg("ember_jinja_context_create");
    ember_jinja_context *ctx = malloc(sizeof *ctx);
    if (ctx == NULL) return ctx_oom();
    ctx->arena.head = NULL;
    ctx->arena.total = 0;
    ctx->arena.limit = 0;
    ctx->vars = jj_dict_new(&ctx->arena);
    if (ctx->vars == NULL) {
        jj_arena_free(&ctx->arena);
        free(ctx);
        return ctx_oom();
    }
    *out = ctx;
    return EMBER_OK;
}

void ember_jinja_context_destroy(ember_jinja_context *ctx) {
    if (ctx == NULL) return;
    jj_arena_free(&ctx->arena);
    free(ctx);
}

static ember_status make_value(ember_jinja_context *ctx, jj_value v, ember_jinja_value **out,
                               const char *fn) {
    if (ctx == NULL || out == NULL) return null_arg(fn);
    ember_jinja_value *p = jj_alloc(&ctx->arena, sizeof *p);
    if (p == NULL) return ctx_oom();
    p->v = v;
    *out = p;
    return EMBER_OK;
}

ember_status ember_jinja_value_none(ember_jinja_context *ctx, ember_jinja_value **out) {
    return make_value(ctx, jj_none(), out, "ember_jinja_value_none");
}

ember_status ember_jinja_value_bool(ember_jinja_context *ctx, bool b, ember_jinja_value **out) {
    return make_value(ctx, jj_bool(b), out, "ember_jinja_value_bool");
}

ember_status ember_jinja_value_int(ember_jinja_context *ctx, int64_t i, ember_jinja_value **out) {
    return make_value(ctx, jj_int(i), out, "ember_jinja_value_int");
}

ember_status ember_jinja_value_float(ember_jinja_context *ctx, double d, ember_jinja_value **out) {
    return make_value(ctx, jj_float(d), out, "ember_jinja_value_float");
}

ember_status ember_jinja_value_string(ember_jinja_context *ctx, const char *s, size_t len,
                                      ember_jinja_value **out) {
    if (ctx == NULL || out == NULL || (s == NULL && len > 0))
        return null_arg("ember_jinja_value_string");
    if (!jj_utf8_valid(s, len))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_jinja_value_string: the bytes are not valid UTF-8");
    char *p = jj_strdup(&ctx->arena, s, len);
    if (p == NULL) return ctx_oom();
    return make_value(ctx, jj_str(p, len), out, "ember_jinja_value_string");
}

ember_status ember_jinja_value_list(ember_jinja_context *ctx, ember_jinja_value **out) {
    if (ctx == NULL || out == NULL) return null_arg("ember_jinja_value_list");
    jj_list *l = jj_list_new(&ctx->arena, 0);
    if (l == NULL) return ctx_oom();
    return make_value(ctx, jj_list_value(l, false), out, "ember_jinja_value_list");
}

ember_status ember_jinja_value_dict(ember_jinja_context *ctx, ember_jinja_value **out) {
    if (ctx == NULL || out == NULL) return null_arg("ember_jinja_value_dict");
    jj_dict *d = jj_dict_new(&ctx->arena);
    if (d == NULL) return ctx_oom();
    jj_value v = jj_none();
    v.type = JJ_DICT;
    v.u.dict = d;
    return make_value(ctx, v, out, "ember_jinja_value_dict");
}

ember_status ember_jinja_value_from_json(ember_jinja_context *ctx, const ember_json *json,
                                         ember_jinja_value **out) {
    if (ctx == NULL || json == NULL || out == NULL) return null_arg("ember_jinja_value_from_json");
    jj_value v;
    if (!jj_from_json(&ctx->arena, json, &v)) return json_failed();
    return make_value(ctx, v, out, "ember_jinja_value_from_json");
}

ember_status ember_jinja_list_append(ember_jinja_context *ctx, ember_jinja_value *list,
                                     const ember_jinja_value *item) {
    if (ctx == NULL || list == NULL || item == NULL) return null_arg("ember_jinja_list_append");
    if (list->v.type != JJ_LIST)
        return ember_error_set(EMBER_ERR_TYPE_MISMATCH, "ember_jinja_list_append: not a list");
    if (!jj_list_push(&ctx->arena, list->v.u.list, item->v)) return ctx_oom();
    return EMBER_OK;
}

ember_status ember_jinja_dict_set(ember_jinja_context *ctx, ember_jinja_value *dict,
                                  const char *key, size_t key_len,
                                  const ember_jinja_value *value) {
    if (ctx == NULL || dict == NULL || value == NULL || (key == NULL && key_len > 0))
        return null_arg("ember_jinja_dict_set");
    if (dict->v.type != JJ_DICT)
        return ember_error_set(EMBER_ERR_TYPE_MISMATCH, "ember_jinja_dict_set: not a dict");
    if (!jj_utf8_valid(key, key_len))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_jinja_dict_set: the key is not valid UTF-8");
    char *k = jj_strdup(&ctx->arena, key, key_len);
    if (k == NULL || !jj_dict_set(&ctx->arena, dict->v.u.dict, jj_str(k, key_len), value->v))
        return ctx_oom();
    return EMBER_OK;
}

ember_status ember_jinja_context_set(ember_jinja_context *ctx, const char *name,
                                     const ember_jinja_value *value) {
    if (ctx == NULL || name == NULL || value == NULL) return null_arg("ember_jinja_context_set");
    size_t n = strlen(name);
    char *k = jj_strdup(&ctx->arena, name, n);
    if (k == NULL || !jj_dict_set(&ctx->arena, ctx->vars, jj_str(k, n), value->v))
        return ctx_oom();
    return EMBER_OK;
}

ember_status ember_jinja_context_set_json(ember_jinja_context *ctx, const ember_json *object) {
    if (ctx == NULL || object == NULL) return null_arg("ember_jinja_context_set_json");
    if (ember_json_type_of(object) != EMBER_JSON_OBJECT)
        return ember_error_set(EMBER_ERR_TYPE_MISMATCH,
                               "ember_jinja_context_set_json: expected a JSON object");
    for (size_t m = 0; m < ember_json_object_size(object); m++) {
        const char *key;
        size_t kl;
        const ember_json *mv = ember_json_object_at(object, m, &key, &kl);
        char *k = jj_strdup(&ctx->arena, key, kl);
        jj_value v;
        if (k == NULL || !jj_from_json(&ctx->arena, mv, &v)) return json_failed();
        if (!jj_dict_set(&ctx->arena, ctx->vars, jj_str(k, kl), v)) return ctx_oom();
    }
    return EMBER_OK;
}
