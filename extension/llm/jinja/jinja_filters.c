/*
 * extension/llm/jinja/jinja_filters.c — jinja2's filters and tests, the
 * Python methods of str, dict and list that templates call, and the global
 * functions (range, namespace, dict, raise_exception, strftime_now).
 *
 * Each one follows the jinja2 / Python definition it is named after, down
 * to the quirks (default() only replaces undefined values, `title` splits
 * words at "-", spaces and brackets, `indent` keeps a line's own
 * indentation, tojson is transformers' json.dumps(ensure_ascii=False)).
 */
#define _POSIX_C_SOURCE 200809L

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja_internal.h"

/* The sandbox's largest range(). */
#define MAX_RANGE 100000

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#define NAME_IS(p, n, w) ((n) == sizeof(w) - 1 && memcmp((p), (w), (n)) == 0)

static ember_status new_string(jj_render *r, const jj_node *at, const char *p, size_t n,
                               jj_value *out) {
    char *s = jj_strdup(&r->arena, p, n);
    if (s == NULL) return jj_fail_oom(r, at);
    *out = jj_str(s, n);
    return jj_charge(r, at, n);
}

static jj_buf new_buf(jj_render *r) {
    jj_buf b = {NULL, 0, 0, r->max_output, false, false};
    return b;
}

static jj_value dict_value(jj_dict *d) {
    jj_value v = jj_none();
    v.type = JJ_DICT;
    v.u.dict = d;
    return v;
}

static bool is_num(jj_value v) { return v.type == JJ_BOOL || v.type == JJ_INT || v.type == JJ_FLOAT; }
static bool is_intlike(jj_value v) { return v.type == JJ_BOOL || v.type == JJ_INT; }
static int64_t ival(jj_value v) { return v.type == JJ_BOOL ? (int64_t)v.u.b : v.u.i; }
static double fval(jj_value v) { return v.type == JJ_FLOAT ? v.u.f : (double)ival(v); }

/* Arguments bound to parameter names, as Python binds a call. */
#define MAX_PARAMS 8

typedef struct bound {
    jj_value v[MAX_PARAMS];
    bool given[MAX_PARAMS];
} bound;

static ember_status bind(jj_render *r, const jj_node *at, const char *fname,
                         const char *const *names, size_t nnames, const jj_value *args,
                         size_t nargs, const jj_kwval *kw, size_t nkw, bound *b) {
    memset(b, 0, sizeof *b);
    if (nargs > nnames)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s takes at most %zu argument(s) (%zu given)",
                       fname, nnames, nargs);
    for (size_t k = 0; k < nargs; k++) {
        b->v[k] = args[k];
        b->given[k] = true;
    }
    for (size_t k = 0; k < nkw; k++) {
        size_t i;
        for (i = 0; i < nnames; i++)
            if (strlen(names[i]) == kw[k].len && memcmp(names[i], kw[k].name, kw[k].len) == 0) break;
        if (i == nnames)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "%s got an unexpected keyword argument '%.*s'", fname, (int)kw[k].len,
                           kw[k].name);
        if (b->given[i])
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s got multiple values for '%s'",
                           fname, names[i]);
        b->v[i] = kw[k].value;
        b->given[i] = true;
    }
    return EMBER_OK;
}

static ember_status need_str(jj_render *r, const jj_node *at, const char *what, jj_value v) {
    if (v.type == JJ_STR) return EMBER_OK;
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s must be a string, not '%s'", what,
                   jj_type_name(v));
}

static ember_status need_int(jj_render *r, const jj_node *at, const char *what, jj_value v,
                             int64_t *out) {
    if (is_intlike(v)) {
        *out = ival(v);
        return EMBER_OK;
    }
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s must be an integer, not '%s'", what,
                   jj_type_name(v));
}

/* Decodes s into code points (arena); *count set. */
static uint32_t *code_points(jj_render *r, const char *s, size_t n, size_t *count) {
    uint32_t *cps = jj_alloc_array(&r->arena, n + 1, sizeof *cps);
    if (cps == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += jj_utf8_next(s + i, n - i, &cp);
        cps[k++] = cp;
    }
    *count = k;
    return cps;
}

/* Finds needle in s[from..n) (bytes); SIZE_MAX when absent. */
static size_t find_bytes(const char *s, size_t n, size_t from, const char *needle, size_t nn) {
    if (nn == 0) return from <= n ? from : SIZE_MAX;
    for (size_t i = from; i + nn <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, nn) == 0) return i;
    return SIZE_MAX;
}

static size_t rfind_bytes(const char *s, size_t n, const char *needle, size_t nn) {
    if (nn > n) return SIZE_MAX;
    for (size_t i = n - nn + 1; i-- > 0;)
        if (memcmp(s + i, needle, nn) == 0) return i;
    return SIZE_MAX;
}

/* str.strip / lstrip / rstrip: whitespace, or the code points of chars. */
static ember_status strip(jj_render *r, const jj_node *at, jj_value s, jj_value chars, bool left,
                          bool right, jj_value *out) {
    const char *p = s.u.s.p;
    size_t b = 0, e = s.u.s.n;
    size_t nset = 0;
    uint32_t *set = NULL;
    if (chars.type == JJ_STR) {
        set = code_points(r, chars.u.s.p, chars.u.s.n, &nset);
        if (set == NULL) return jj_fail_oom(r, at);
    }
    for (;;) {
        if (!left || b >= e) break;
        uint32_t cp;
        size_t l = jj_utf8_next(p + b, e - b, &cp);
        bool in = false;
        if (set == NULL) {
            in = jj_is_space(cp);
        } else {
            for (size_t k = 0; k < nset && !in; k++) in = set[k] == cp;
        }
        if (!in) break;
        b += l;
    }
    while (right && e > b) {
        size_t k = e - 1;
        while (k > b && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
        uint32_t cp;
        size_t l = jj_utf8_next(p + k, e - k, &cp);
        if (l != e - k) cp = 0xFFFD;
        bool in = false;
        if (set == NULL) {
            in = jj_is_space(cp);
        } else {
            for (size_t q = 0; q < nset && !in; q++) in = set[q] == cp;
        }
        if (!in) break;
        e = k;
    }
    *out = jj_str(p + b, e - b);
    return jj_charge(r, at, s.u.s.n);
}

/* Python's str.replace(old, new, count). */
static ember_status replace(jj_render *r, const jj_node *at, jj_value s, jj_value old, jj_value nw,
                            int64_t count, jj_value *out) {
    jj_buf b = new_buf(r);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, on = old.u.s.n;
    int64_t done = 0;
    if (on == 0) {
        /* An empty pattern matches before every character and at the end. */
        for (size_t i = 0;;) {
            if (count < 0 || done < count) {
                jj_buf_put(&b, nw.u.s.p, nw.u.s.n);
                done++;
            }
            if (i >= n) break;
            uint32_t cp;
            size_t l = jj_utf8_next(p + i, n - i, &cp);
            jj_buf_put(&b, p + i, l);
            i += l;
        }
    } else {
        size_t i = 0;
        while (count < 0 || done < count) {
            size_t k = find_bytes(p, n, i, old.u.s.p, on);
            if (k == SIZE_MAX) break;
            jj_buf_put(&b, p + i, k - i);
            jj_buf_put(&b, nw.u.s.p, nw.u.s.n);
            i = k + on;
            done++;
        }
        jj_buf_put(&b, p + i, n - i);
    }
    return jj_buf_to_value(r, at, &b, out);
}

/* Python's str.split / rsplit; sep NONE splits on whitespace runs. */
static ember_status split(jj_render *r, const jj_node *at, jj_value s, jj_value sep,
                          int64_t maxsplit, bool from_right, jj_value *out) {
    jj_list *l = jj_list_new(&r->arena, 0);
    if (l == NULL) return jj_fail_oom(r, at);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n;
    ember_status st = jj_charge(r, at, n);
    if (st != EMBER_OK) return st;
    if (sep.type == JJ_STR) {
        size_t sn = sep.u.s.n;
        if (sn == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "empty separator");
        if (!from_right) {
            size_t i = 0;
            int64_t done = 0;
            while (maxsplit < 0 || done < maxsplit) {
                size_t k = find_bytes(p, n, i, sep.u.s.p, sn);
                if (k == SIZE_MAX) break;
                if (!jj_list_push(&r->arena, l, jj_str(p + i, k - i))) return jj_fail_oom(r, at);
                i = k + sn;
                done++;
            }
            if (!jj_list_push(&r->arena, l, jj_str(p + i, n - i))) return jj_fail_oom(r, at);
        } else {
            size_t e = n;
            int64_t done = 0;
            while (maxsplit < 0 || done < maxsplit) {
                size_t k = rfind_bytes(p, e, sep.u.s.p, sn);
                if (k == SIZE_MAX) break;
                if (!jj_list_push(&r->arena, l, jj_str(p + k + sn, e - k - sn))) return jj_fail_oom(r, at);
                e = k;
                done++;
            }
            if (!jj_list_push(&r->arena, l, jj_str(p, e))) return jj_fail_oom(r, at);
            for (size_t a = 0, b = l->n ? l->n - 1 : 0; a < b; a++, b--) {
                jj_value t = l->items[a];
                l->items[a] = l->items[b];
                l->items[b] = t;
            }
        }
        *out = jj_list_value(l, false);
        return EMBER_OK;
    }
    /* Whitespace: runs of spaces separate, ends are dropped. */
    size_t count = 0;
    uint32_t *cps = code_points(r, p, n, &count);
    size_t *offs = jj_alloc_array(&r->arena, count + 1, sizeof *offs);
    if (cps == NULL || offs == NULL) return jj_fail_oom(r, at);
    for (size_t i = 0, k = 0; k < count; k++) {
        offs[k] = i;
        uint32_t cp;
        i += jj_utf8_next(p + i, n - i, &cp);
    }
    offs[count] = n;
    int64_t done = 0;
    if (!from_right) {
        size_t k = 0;
        for (;;) {
            while (k < count && jj_is_space(cps[k])) k++;
            if (k >= count) break;
            if (maxsplit >= 0 && done >= maxsplit) {
                size_t e = count;
                if (!jj_list_push(&r->arena, l, jj_str(p + offs[k], offs[e] - offs[k]))) return jj_fail_oom(r, at);
                break;
            }
            size_t w = k;
            while (k < count && !jj_is_space(cps[k])) k++;
            if (!jj_list_push(&r->arena, l, jj_str(p + offs[w], offs[k] - offs[w]))) return jj_fail_oom(r, at);
            done++;
        }
    } else {
        size_t k = count;
        for (;;) {
            while (k > 0 && jj_is_space(cps[k - 1])) k--;
            if (k == 0) break;
            if (maxsplit >= 0 && done >= maxsplit) {
                if (!jj_list_push(&r->arena, l, jj_str(p, offs[k]))) return jj_fail_oom(r, at);
                break;
            }
            size_t e = k;
            while (k > 0 && !jj_is_space(cps[k - 1])) k--;
            if (!jj_list_push(&r->arena, l, jj_str(p + offs[k], offs[e] - offs[k]))) return jj_fail_oom(r, at);
            done++;
        }
        for (size_t a = 0, b = l->n ? l->n - 1 : 0; a < b; a++, b--) {
            jj_value t = l->items[a];
            l->items[a] = l->items[b];
            l->items[b] = t;
        }
    }
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

/* Python's str.splitlines(keepends). */
static ember_status splitlines(jj_render *r, const jj_node *at, const char *p, size_t n,
                               bool keepends, jj_list **out) {
    jj_list *l = jj_list_new(&r->arena, 0);
    if (l == NULL) return jj_fail_oom(r, at);
    size_t start = 0, i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = jj_utf8_next(p + i, n - i, &cp);
        if (!jj_is_linebreak(cp)) {
            i += len;
            continue;
        }
        size_t eol = i + len;
        if (cp == '\r' && eol < n && p[eol] == '\n') eol++;
        if (!jj_list_push(&r->arena, l, jj_str(p + start, (keepends ? eol : i) - start)))
            return jj_fail_oom(r, at);
        start = i = eol;
    }
    if (start < n && !jj_list_push(&r->arena, l, jj_str(p + start, n - start)))
        return jj_fail_oom(r, at);
    *out = l;
    return jj_charge(r, at, n);
}

/* Case changes. mode: 0 lower, 1 upper, 2 str.capitalize, 3 str.title,
 * 4 jinja2's title filter. */
static ember_status change_case(jj_render *r, const jj_node *at, jj_value s, int mode,
                                jj_value *out) {
    jj_buf b = new_buf(r);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n;
    if (mode <= 1) {
        jj_buf_map_case(&b, p, n, mode == 1 ? JJ_UPPER : JJ_LOWER);
        return jj_buf_to_value(r, at, &b, out);
    }
    bool prev_cased = false;
    size_t rest = 0, rest_end = n; /* mode 4: the lowered part of the current word */
    for (size_t i = 0, k = 0; i < n; k++) {
        uint32_t cp;
        size_t l = jj_utf8_next(p + i, n - i, &cp);
        if (mode == 2) {
            jj_buf_case(&b, p, n, i, l, k == 0 ? JJ_TITLE : JJ_LOWER);
        } else if (mode == 3) {
            jj_buf_case(&b, p, n, i, l, prev_cased ? JJ_LOWER : JJ_TITLE);
            prev_cased = jj_is_cased(cp);
        } else if (i >= rest_end || i == 0) {
            /* jinja2 splits at runs of "-", whitespace, "(", "{", "[", "<",
             * then upper-cases each piece's first character and lower-cases
             * the rest of the piece on its own. */
            bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || jj_is_space(cp);
            size_t e = i + l;
            while (e < n) {
                uint32_t c2;
                size_t l2 = jj_utf8_next(p + e, n - e, &c2);
                bool sep2 = c2 == '-' || c2 == '(' || c2 == '{' || c2 == '[' || c2 == '<' || jj_is_space(c2);
                if (sep2 != sep) break;
                e += l2;
            }
            jj_buf_case(&b, p, n, i, l, JJ_UPPER);
            rest = i + l;
            rest_end = e;
        } else {
            jj_buf_case(&b, p + rest, rest_end - rest, i - rest, l, JJ_LOWER);
        }
        i += l;
    }
    return jj_buf_to_value(r, at, &b, out);
}

/* jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0. */
static ember_status attr_get(jj_render *r, const jj_node *at, jj_value item, jj_value attribute,
                             jj_value *out) {
    if (is_intlike(attribute)) return jj_getitem(r, at, item, attribute, out);
    ember_status st = need_str(r, at, "attribute", attribute);
    if (st != EMBER_OK) return st;
    const char *p = attribute.u.s.p;
    size_t n = attribute.u.s.n, i = 0;
    jj_value cur = item;
    for (;;) {
        size_t e = i;
        while (e < n && p[e] != '.') e++;
        bool digits = e > i;
        int64_t idx = 0;
        for (size_t k = i; k < e; k++) {
            if (p[k] < '0' || p[k] > '9' || idx > INT64_MAX / 10 - 10) {
                digits = false;
                break;
            }
            idx = idx * 10 + (p[k] - '0');
        }
        jj_value key = digits ? jj_int(idx) : jj_str(p + i, e - i);
        if ((st = jj_getitem(r, at, cur, key, &cur)) != EMBER_OK) return st;
        if (e >= n) break;
        i = e + 1;
    }
    *out = cur;
    return EMBER_OK;
}

/* A string lowercased when case_sensitive is false (jinja2's ignore_case). */
static ember_status sort_key(jj_render *r, const jj_node *at, jj_value v, bool case_sensitive,
                             jj_value *out) {
    if (case_sensitive || v.type != JJ_STR) {
        *out = v;
        return EMBER_OK;
    }
    return change_case(r, at, v, 0, out);
}

/* Stable merge sort of items by keys (Python's sorted). */
static ember_status sort_items(jj_render *r, const jj_node *at, jj_value *items, jj_value *keys,
                               size_t n, bool reverse) {
    if (n < 2) return EMBER_OK;
    jj_value *ti = jj_alloc_array(&r->arena, n, sizeof *ti);
    jj_value *tk = jj_alloc_array(&r->arena, n, sizeof *tk);
    if (ti == NULL || tk == NULL) return jj_fail_oom(r, at);
    ember_status st = jj_charge(r, at, n * 16);
    if (st != EMBER_OK) return st;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                bool less;
                /* take from the right only when strictly before (stable) */
                jj_value x = reverse ? keys[a] : keys[b], y = reverse ? keys[b] : keys[a];
                if (jj_less(x, y, &less) != 0)
                    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                                   "'<' not supported between instances of '%s' and '%s'",
                                   jj_type_name(keys[b]), jj_type_name(keys[a]));
                if (less) {
                    ti[o] = items[b];
                    tk[o++] = keys[b++];
                } else {
                    ti[o] = items[a];
                    tk[o++] = keys[a++];
                }
            }
            while (a < mid) {
                ti[o] = items[a];
                tk[o++] = keys[a++];
            }
            while (b < hi) {
                ti[o] = items[b];
                tk[o++] = keys[b++];
            }
        }
        memcpy(items, ti, n * sizeof *items);
        memcpy(keys, tk, n * sizeof *keys);
        if ((st = jj_charge(r, at, n * 16)) != EMBER_OK) return st;
    }
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Filters                                                                   */
/* ------------------------------------------------------------------------ */

typedef ember_status (*filter_fn)(jj_render *r, const jj_node *at, jj_value v,
                                  const jj_value *args, size_t nargs, const jj_kwval *kw,
                                  size_t nkw, jj_value *out);

#define FILTER(name)                                                                              \
    static ember_status f_##name(jj_render *r, const jj_node *at, jj_value v,                     \
                                 const jj_value *args, size_t nargs, const jj_kwval *kw,          \
                                 size_t nkw, jj_value *out)

#define BIND(fname, ...)                                                                          \
    static const char *const params_[] = {__VA_ARGS__};                                           \
    bound b;                                                                                      \
    ember_status st = bind(r, at, fname, params_, sizeof params_ / sizeof *params_, args, nargs,  \
                           kw, nkw, &b);                                                          \
    if (st != EMBER_OK) return st

#define NO_ARGS(fname)                                                                            \
    ember_status st = EMBER_OK;                                                                   \
    (void)st;                                                                                     \
    (void)args;                                                                                   \
    (void)kw;                                                                                     \
    if (nargs != 0 || nkw != 0)                                                                   \
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s takes no arguments", fname)

static ember_status apply_named_filter(jj_render *r, const jj_node *at, jj_value name, jj_value v,
                                       const jj_value *args, size_t nargs, const jj_kwval *kw,
                                       size_t nkw, jj_value *out);
static ember_status apply_named_test(jj_render *r, const jj_node *at, jj_value name, jj_value v,
                                     const jj_value *args, size_t nargs, bool *out);

FILTER(abs) {
    NO_ARGS("abs");
    if (v.type == JJ_FLOAT) {
        *out = jj_float(fabs(v.u.f));
        return EMBER_OK;
    }
    if (is_intlike(v)) {
        int64_t i = ival(v);
        if (i == INT64_MIN)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
        *out = jj_int(i < 0 ? -i : i);
        return EMBER_OK;
    }
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "bad operand type for abs(): '%s'",
                   jj_type_name(v));
}

FILTER(attr) {
    BIND("attr", "name");
    if (!b.given[0]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "attr needs a name");
    if ((st = need_str(r, at, "attr name", b.v[0])) != EMBER_OK) return st;
    /* Python's getattr only: a dict's keys are not its attributes. */
    const char *p = b.v[0].u.s.p;
    size_t n = b.v[0].u.s.n;
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    if (v.type == JJ_DICT) {
        if (!jj_method(v, p, n, out)) *out = jj_undef("no such attribute");
        return EMBER_OK;
    }
    return jj_getattr(r, at, v, p, n, out);
}

FILTER(batch) {
    BIND("batch", "linecount", "fill_with");
    int64_t count = 0;
    if ((st = need_int(r, at, "linecount", b.v[0], &count)) != EMBER_OK) return st;
    if (count <= 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "batch size must be positive");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    jj_list *res = jj_list_new(&r->arena, 0), *cur = NULL;
    if (res == NULL) return jj_fail_oom(r, at);
    for (size_t i = 0; i < items->n; i++) {
        if (cur == NULL || (int64_t)cur->n == count) {
            cur = jj_list_new(&r->arena, 0);
            if (cur == NULL || !jj_list_push(&r->arena, res, jj_list_value(cur, false)))
                return jj_fail_oom(r, at);
        }
        if (!jj_list_push(&r->arena, cur, items->items[i])) return jj_fail_oom(r, at);
    }
    if (cur != NULL && b.given[1] && b.v[1].type != JJ_NONE)
        while ((int64_t)cur->n < count)
            if (!jj_list_push(&r->arena, cur, b.v[1])) return jj_fail_oom(r, at);
    *out = jj_list_value(res, false);
    return jj_charge(r, at, items->n * 8);
}

FILTER(capitalize) {
    NO_ARGS("capitalize");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    return change_case(r, at, s, 2, out);
}

FILTER(default) {
    BIND("default", "default_value", "boolean");
    jj_value def = b.given[0] ? b.v[0] : jj_str("", 0);
    bool boolean = b.given[1] && jj_truthy(b.v[1]);
    if (v.type == JJ_UNDEF || (boolean && !jj_truthy(v))) *out = def;
    else *out = v;
    return EMBER_OK;
}

FILTER(dictsort) {
    BIND("dictsort", "case_sensitive", "by", "reverse");
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    if (v.type != JJ_DICT)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "dictsort needs a mapping");
    bool cs = b.given[0] && jj_truthy(b.v[0]);
    int pos = 0;
    if (b.given[1]) {
        if ((st = need_str(r, at, "by", b.v[1])) != EMBER_OK) return st;
        if (NAME_IS(b.v[1].u.s.p, b.v[1].u.s.n, "value")) pos = 1;
        else if (!NAME_IS(b.v[1].u.s.p, b.v[1].u.s.n, "key"))
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "You can only sort by either \"key\" or \"value\"");
    }
    const jj_dict *d = v.u.dict;
    jj_value *items = jj_alloc_array(&r->arena, d->n + 1, sizeof *items);
    jj_value *keys = jj_alloc_array(&r->arena, d->n + 1, sizeof *keys);
    if (items == NULL || keys == NULL) return jj_fail_oom(r, at);
    for (size_t m = 0; m < d->n; m++) {
        jj_list *pair = jj_list_new(&r->arena, 2);
        if (pair == NULL) return jj_fail_oom(r, at);
        pair->items[0] = d->keys[m];
        pair->items[1] = d->vals[m];
        pair->n = 2;
        items[m] = jj_list_value(pair, true);
        if ((st = sort_key(r, at, pos ? d->vals[m] : d->keys[m], cs, &keys[m])) != EMBER_OK) return st;
    }
    if ((st = sort_items(r, at, items, keys, d->n, b.given[2] && jj_truthy(b.v[2]))) != EMBER_OK) return st;
    jj_list *l = jj_list_new(&r->arena, d->n);
    if (l == NULL) return jj_fail_oom(r, at);
    memcpy(l->items, items, d->n * sizeof *items);
    l->n = d->n;
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

FILTER(escape) {
    NO_ARGS("escape");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    jj_buf b = new_buf(r);
    for (size_t i = 0; i < s.u.s.n; i++) {
        char c = s.u.s.p[i];
        switch (c) {
        case '&': jj_buf_puts(&b, "&amp;"); break;
        case '<': jj_buf_puts(&b, "&lt;"); break;
        case '>': jj_buf_puts(&b, "&gt;"); break;
        case '"': jj_buf_puts(&b, "&#34;"); break;
        case '\'': jj_buf_puts(&b, "&#39;"); break;
        default: jj_buf_putc(&b, c);
        }
    }
    return jj_buf_to_value(r, at, &b, out);
}

FILTER(first) {
    NO_ARGS("first");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    *out = items->n ? items->items[0] : jj_undef("No first item, sequence was empty.");
    return EMBER_OK;
}

FILTER(last) {
    NO_ARGS("last");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    *out = items->n ? items->items[items->n - 1] : jj_undef("No last item, sequence was empty.");
    return EMBER_OK;
}

/* Python's float(str): whitespace around, optional sign, digits with
 * underscores, inf/nan spellings. */
static bool parse_float_str(const char *p, size_t n, double *out) {
    size_t b = 0, e = n;
    while (b < e && jj_is_space((unsigned char)p[b])) b++;
    while (e > b && jj_is_space((unsigned char)p[e - 1])) e--;
    if (b == e || e - b > 300) return false;
    char buf[320];
    size_t o = 0;
    for (size_t k = b; k < e; k++) {
        char c = p[k];
        if (c == '_') {
            if (k == b || k + 1 == e || !(p[k - 1] >= '0' && p[k - 1] <= '9') ||
                !(p[k + 1] >= '0' && p[k + 1] <= '9'))
                return false;
            continue;
        }
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
              (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return false;
        buf[o++] = c;
    }
    buf[o] = '\0';
    const char *q = buf;
    bool neg = false;
    if (*q == '+' || *q == '-') neg = *q++ == '-';
    char low[16];
    size_t ql = strlen(q);
    if (ql < sizeof low) {
        for (size_t k = 0; k <= ql; k++) low[k] = (char)((q[k] >= 'A' && q[k] <= 'Z') ? q[k] + 32 : q[k]);
        if (strcmp(low, "inf") == 0 || strcmp(low, "infinity") == 0) {
            *out = neg ? -INFINITY : INFINITY;
            return true;
        }
        if (strcmp(low, "nan") == 0) {
            *out = NAN;
            return true;
        }
    }
    /* digits [. digits] [e [sign] digits], at least one digit before e */
    size_t k = 0, digits = 0;
    while (q[k] >= '0' && q[k] <= '9') k++, digits++;
    if (q[k] == '.') {
        k++;
        while (q[k] >= '0' && q[k] <= '9') k++, digits++;
    }
    if (digits == 0) return false;
    if (q[k] == 'e' || q[k] == 'E') {
        k++;
        if (q[k] == '+' || q[k] == '-') k++;
        if (!(q[k] >= '0' && q[k] <= '9')) return false;
        while (q[k] >= '0' && q[k] <= '9') k++;
    }
    if (q[k] != '\0') return false;
    /* strtod in the C locale's spelling of the point */
    struct lconv *lc = localeconv();
    char conv[340];
    size_t c = 0;
    for (const char *s = buf; *s && c + 8 < sizeof conv; s++) {
        if (*s == '.' && lc && lc->decimal_point && strcmp(lc->decimal_point, ".") != 0) {
            size_t pl = strlen(lc->decimal_point);
            if (c + pl + 1 >= sizeof conv) return false;
            memcpy(conv + c, lc->decimal_point, pl);
            c += pl;
        } else {
            conv[c++] = *s;
        }
    }
    conv[c] = '\0';
    *out = strtod(conv, NULL);
    return true;
}

/* Python's int(str, base) for bases 2..36 and 0; false when invalid. */
static int parse_int_str(const char *p, size_t n, int64_t base, int64_t *out) {
    size_t b = 0, e = n;
    while (b < e && jj_is_space((unsigned char)p[b])) b++;
    while (e > b && jj_is_space((unsigned char)p[e - 1])) e--;
    bool neg = false;
    if (b < e && (p[b] == '+' || p[b] == '-')) neg = p[b++] == '-';
    if (base == 0 || base == 16 || base == 8 || base == 2) {
        if (e - b >= 2 && p[b] == '0') {
            char x = (char)(p[b + 1] | 0x20);
            int64_t pb = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
            if (pb != 0 && (base == 0 || base == pb)) {
                base = pb;
                b += 2;
                if (b < e && p[b] == '_') b++;
            }
        }
        if (base == 0) base = 10;
    }
    if (base < 2 || base > 36 || b == e) return 0;
    int64_t v = 0;
    for (size_t k = b; k < e; k++) {
        char c = p[k];
        if (c == '_' && k > b && k + 1 < e && p[k + 1] != '_') continue;
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return 0;
        if (!jj_mul_i64(v, base, &v) || !jj_add_i64(v, d, &v)) return -1;
    }
    *out = neg ? -v : v;
    return 1;
}

FILTER(int) {
    BIND("int", "default", "base");
    jj_value def = b.given[0] ? b.v[0] : jj_int(0);
    int64_t base = 10;
    if (b.given[1] && (st = need_int(r, at, "base", b.v[1], &base)) != EMBER_OK) return st;
    switch (v.type) {
    case JJ_UNDEF: return jj_fail_undefined(r, at, v);
    case JJ_BOOL:
    case JJ_INT: *out = jj_int(ival(v)); return EMBER_OK;
    case JJ_FLOAT:
        if (v.u.f != v.u.f) {
            *out = def;
            return EMBER_OK;
        }
        if (!(v.u.f > -9223372036854775809.0 && v.u.f < 9223372036854775808.0))
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "cannot convert float to a 64-bit integer");
        *out = jj_int((int64_t)v.u.f);
        return EMBER_OK;
    case JJ_STR: {
        int64_t i;
        int rc = parse_int_str(v.u.s.p, v.u.s.n, base, &i);
        if (rc == 1) {
            *out = jj_int(i);
            return EMBER_OK;
        }
        if (rc < 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
        double d;
        if (parse_float_str(v.u.s.p, v.u.s.n, &d) && d == d) {
            if (!(d > -9223372036854775809.0 && d < 9223372036854775808.0))
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "cannot convert float to a 64-bit integer");
            *out = jj_int((int64_t)d);
            return EMBER_OK;
        }
        *out = def;
        return EMBER_OK;
    }
    default: *out = def; return EMBER_OK;
    }
}

FILTER(float) {
    BIND("float", "default");
    jj_value def = b.given[0] ? b.v[0] : jj_float(0.0);
    double d;
    switch (v.type) {
    case JJ_UNDEF: return jj_fail_undefined(r, at, v);
    case JJ_BOOL:
    case JJ_INT:
    case JJ_FLOAT: *out = jj_float(fval(v)); return EMBER_OK;
    case JJ_STR: *out = parse_float_str(v.u.s.p, v.u.s.n, &d) ? jj_float(d) : def; return EMBER_OK;
    default: *out = def; return EMBER_OK;
    }
}

FILTER(format) {
    jj_list *l = jj_list_new(&r->arena, nargs);
    if (l == NULL) return jj_fail_oom(r, at);
    for (size_t k = 0; k < nargs; k++) l->items[l->n++] = args[k];
    jj_value s, fargs = jj_list_value(l, true);
    ember_status st = jj_to_string(r, at, v, &s);
    if (st != EMBER_OK) return st;
    if (nkw > 0) {
        jj_dict *d = jj_dict_new(&r->arena);
        if (d == NULL) return jj_fail_oom(r, at);
        for (size_t k = 0; k < nkw; k++)
            if (!jj_dict_set(&r->arena, d, jj_str(kw[k].name, kw[k].len), kw[k].value))
                return jj_fail_oom(r, at);
        fargs = dict_value(d);
    }
    return jj_percent_format(r, at, s, fargs, out);
}

FILTER(indent) {
    BIND("indent", "width", "first", "blank");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    jj_value ind;
    if (b.given[0] && b.v[0].type == JJ_STR) {
        ind = b.v[0];
    } else {
        int64_t w = 4;
        if (b.given[0] && (st = need_int(r, at, "width", b.v[0], &w)) != EMBER_OK) return st;
        if (w < 0) w = 0;
        if ((uint64_t)w > r->max_output) return jj_fail_oom(r, at);
        char *sp = jj_alloc(&r->arena, (size_t)w + 1);
        if (sp == NULL) return jj_fail_oom(r, at);
        memset(sp, ' ', (size_t)w);
        ind = jj_str(sp, (size_t)w);
    }
    bool first = b.given[1] && jj_truthy(b.v[1]), blank = b.given[2] && jj_truthy(b.v[2]);
    /* jinja2 appends "\n" so that splitlines keeps a final empty line. */
    jj_buf tmp = new_buf(r);
    jj_buf_put(&tmp, s.u.s.p, s.u.s.n);
    jj_buf_putc(&tmp, '\n');
    jj_value text;
    if ((st = jj_buf_to_value(r, at, &tmp, &text)) != EMBER_OK) return st;
    jj_list *lines;
    if ((st = splitlines(r, at, text.u.s.p, text.u.s.n, false, &lines)) != EMBER_OK) return st;
    jj_buf o = new_buf(r);
    if (first) jj_buf_put(&o, ind.u.s.p, ind.u.s.n);
    for (size_t k = 0; k < lines->n; k++) {
        jj_value line = lines->items[k];
        if (k > 0) {
            jj_buf_putc(&o, '\n');
            if (blank || line.u.s.n > 0) jj_buf_put(&o, ind.u.s.p, ind.u.s.n);
        }
        jj_buf_put(&o, line.u.s.p, line.u.s.n);
    }
    return jj_buf_to_value(r, at, &o, out);
}

FILTER(items) {
    NO_ARGS("items");
    jj_list *l = jj_list_new(&r->arena, 0);
    if (l == NULL) return jj_fail_oom(r, at);
    if (v.type == JJ_UNDEF) {
        *out = jj_list_value(l, false);
        return st;
    }
    if (v.type != JJ_DICT)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Can only get item pairs from a mapping.");
    for (size_t m = 0; m < v.u.dict->n; m++) {
        jj_list *pair = jj_list_new(&r->arena, 2);
        if (pair == NULL) return jj_fail_oom(r, at);
        pair->items[0] = v.u.dict->keys[m];
        pair->items[1] = v.u.dict->vals[m];
        pair->n = 2;
        if (!jj_list_push(&r->arena, l, jj_list_value(pair, true))) return jj_fail_oom(r, at);
    }
    *out = jj_list_value(l, false);
    return jj_charge(r, at, l->n * 16);
}

FILTER(join) {
    BIND("join", "d", "attribute");
    jj_value sep = jj_str("", 0);
    if (b.given[0] && (st = jj_to_string(r, at, b.v[0], &sep)) != EMBER_OK) return st;
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    jj_buf o = new_buf(r);
    for (size_t k = 0; k < items->n; k++) {
        jj_value item = items->items[k];
        if (b.given[1] && b.v[1].type != JJ_NONE &&
            (st = attr_get(r, at, item, b.v[1], &item)) != EMBER_OK) {
            jj_buf_free(&o);
            return st;
        }
        if (k) jj_buf_put(&o, sep.u.s.p, sep.u.s.n);
        jj_write_str(&o, item);
    }
    return jj_buf_to_value(r, at, &o, out);
}

FILTER(length) {
    NO_ARGS("length");
    switch (v.type) {
    case JJ_UNDEF: *out = jj_int(0); break;
    case JJ_STR:
        *out = jj_int((int64_t)jj_utf8_count(v.u.s.p, v.u.s.n));
        st = jj_charge(r, at, v.u.s.n);
        break;
    case JJ_LIST: *out = jj_int((int64_t)v.u.list->n); break;
    case JJ_DICT: *out = jj_int((int64_t)v.u.dict->n); break;
    case JJ_LOOP: *out = jj_int(v.u.loop->length); break;
    default:
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "object of type '%s' has no len()",
                       jj_type_name(v));
    }
    return st;
}

FILTER(list) {
    NO_ARGS("list");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    jj_list *l = jj_list_new(&r->arena, items->n);
    if (l == NULL) return jj_fail_oom(r, at);
    if (items->n) memcpy(l->items, items->items, items->n * sizeof *items->items);
    l->n = items->n;
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

FILTER(lower) {
    NO_ARGS("lower");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    return change_case(r, at, s, 0, out);
}

FILTER(upper) {
    NO_ARGS("upper");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    return change_case(r, at, s, 1, out);
}

FILTER(title) {
    NO_ARGS("title");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    return change_case(r, at, s, 4, out);
}

FILTER(map) {
    jj_list *items;
    ember_status st = jj_iterate(r, at, v, &items);
    if (st != EMBER_OK) return st;
    jj_list *l = jj_list_new(&r->arena, items->n);
    if (l == NULL) return jj_fail_oom(r, at);
    bool by_attr = nargs == 0 && nkw > 0;
    jj_value attribute = jj_none(), def = jj_none();
    bool has_def = false;
    if (by_attr) {
        bool have = false;
        for (size_t k = 0; k < nkw; k++) {
            if (NAME_IS(kw[k].name, kw[k].len, "attribute")) {
                attribute = kw[k].value;
                have = true;
            } else if (NAME_IS(kw[k].name, kw[k].len, "default")) {
                def = kw[k].value;
                has_def = true;
            } else {
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Unexpected keyword argument '%.*s'",
                               (int)kw[k].len, kw[k].name);
            }
        }
        if (!have) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "map requires a filter argument");
    } else if (nargs == 0) {
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "map requires a filter argument");
    }
    for (size_t k = 0; k < items->n; k++) {
        jj_value res;
        if (by_attr) {
            st = attr_get(r, at, items->items[k], attribute, &res);
            if (st == EMBER_OK && has_def && res.type == JJ_UNDEF) res = def;
        } else {
            st = apply_named_filter(r, at, args[0], items->items[k], args + 1, nargs - 1, kw, nkw, &res);
        }
        if (st != EMBER_OK) return st;
        l->items[l->n++] = res;
    }
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

/* min / max: mode 0 min, 1 max. */
static ember_status min_max(jj_render *r, const jj_node *at, jj_value v, const jj_value *args,
                            size_t nargs, const jj_kwval *kw, size_t nkw, jj_value *out, int mode) {
    BIND(mode ? "max" : "min", "case_sensitive", "attribute");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    if (items->n == 0) {
        *out = jj_undef(mode ? "No largest item, sequence was empty." : "No smallest item, sequence was empty.");
        return EMBER_OK;
    }
    bool cs = b.given[0] && jj_truthy(b.v[0]);
    jj_value best = items->items[0], best_key;
    if (b.given[1] && b.v[1].type != JJ_NONE && (st = attr_get(r, at, best, b.v[1], &best_key)) != EMBER_OK) return st;
    if (!(b.given[1] && b.v[1].type != JJ_NONE)) best_key = best;
    if ((st = sort_key(r, at, best_key, cs, &best_key)) != EMBER_OK) return st;
    for (size_t k = 1; k < items->n; k++) {
        jj_value key = items->items[k];
        if (b.given[1] && b.v[1].type != JJ_NONE && (st = attr_get(r, at, key, b.v[1], &key)) != EMBER_OK) return st;
        if ((st = sort_key(r, at, key, cs, &key)) != EMBER_OK) return st;
        bool less;
        if (jj_less(mode ? best_key : key, mode ? key : best_key, &less) != 0)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "'<' not supported between instances of '%s' and '%s'",
                           jj_type_name(key), jj_type_name(best_key));
        if (less) {
            best = items->items[k];
            best_key = key;
        }
    }
    *out = best;
    return EMBER_OK;
}

FILTER(min) { return min_max(r, at, v, args, nargs, kw, nkw, out, 0); }
FILTER(max) { return min_max(r, at, v, args, nargs, kw, nkw, out, 1); }

/* select / reject / selectattr / rejectattr. */
static ember_status select_items(jj_render *r, const jj_node *at, jj_value v,
                                 const jj_value *args, size_t nargs, const jj_kwval *kw,
                                 size_t nkw, jj_value *out, bool keep, bool by_attr) {
    (void)kw;
    if (nkw > 0)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "select filters take no keyword arguments");
    jj_list *items;
    ember_status st = jj_iterate(r, at, v, &items);
    if (st != EMBER_OK) return st;
    size_t off = 0;
    if (by_attr) {
        if (nargs == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Missing parameter for attribute name");
        off = 1;
    }
    jj_list *l = jj_list_new(&r->arena, 0);
    if (l == NULL) return jj_fail_oom(r, at);
    for (size_t k = 0; k < items->n; k++) {
        jj_value item = items->items[k];
        if (by_attr && (st = attr_get(r, at, item, args[0], &item)) != EMBER_OK) return st;
        bool res;
        if (nargs > off) {
            st = apply_named_test(r, at, args[off], item, args + off + 1, nargs - off - 1, &res);
            if (st != EMBER_OK) return st;
        } else {
            res = jj_truthy(item);
        }
        if (res == keep && !jj_list_push(&r->arena, l, items->items[k])) return jj_fail_oom(r, at);
    }
    *out = jj_list_value(l, false);
    return jj_charge(r, at, items->n * 8);
}

FILTER(select) { return select_items(r, at, v, args, nargs, kw, nkw, out, true, false); }
FILTER(reject) { return select_items(r, at, v, args, nargs, kw, nkw, out, false, false); }
FILTER(selectattr) { return select_items(r, at, v, args, nargs, kw, nkw, out, true, true); }
FILTER(rejectattr) { return select_items(r, at, v, args, nargs, kw, nkw, out, false, true); }

FILTER(replace) {
    BIND("replace", "old", "new", "count");
    if (!b.given[0] || !b.given[1])
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "replace needs old and new");
    jj_value s, o, n2;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    if ((st = jj_to_string(r, at, b.v[0], &o)) != EMBER_OK) return st;
    if ((st = jj_to_string(r, at, b.v[1], &n2)) != EMBER_OK) return st;
    int64_t count = -1;
    if (b.given[2] && b.v[2].type != JJ_NONE && (st = need_int(r, at, "count", b.v[2], &count)) != EMBER_OK)
        return st;
    return replace(r, at, s, o, n2, count, out);
}

FILTER(reverse) {
    NO_ARGS("reverse");
    if (v.type == JJ_STR) {
        jj_buf o = new_buf(r);
        size_t n = v.u.s.n;
        size_t e = n;
        while (e > 0) {
            size_t k = e - 1;
            while (k > 0 && ((unsigned char)v.u.s.p[k] & 0xC0) == 0x80) k--;
            jj_buf_put(&o, v.u.s.p + k, e - k);
            e = k;
        }
        return jj_buf_to_value(r, at, &o, out);
    }
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    jj_list *l = jj_list_new(&r->arena, items->n);
    if (l == NULL) return jj_fail_oom(r, at);
    for (size_t k = items->n; k-- > 0;) l->items[l->n++] = items->items[k];
    *out = jj_list_value(l, false);
    return jj_charge(r, at, items->n * 8);
}

FILTER(round) {
    BIND("round", "precision", "method");
    int64_t prec = 0;
    if (b.given[0] && (st = need_int(r, at, "precision", b.v[0], &prec)) != EMBER_OK) return st;
    int method = 0; /* common, ceil, floor */
    if (b.given[1]) {
        if ((st = need_str(r, at, "method", b.v[1])) != EMBER_OK) return st;
        if (NAME_IS(b.v[1].u.s.p, b.v[1].u.s.n, "ceil")) method = 1;
        else if (NAME_IS(b.v[1].u.s.p, b.v[1].u.s.n, "floor")) method = 2;
        else if (!NAME_IS(b.v[1].u.s.p, b.v[1].u.s.n, "common"))
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "method must be common, ceil or floor");
    }
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    if (!is_num(v))
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "type %s doesn't define __round__ method",
                       jj_type_name(v));
    if (prec > 400) prec = 400;
    if (prec < -400) prec = -400;
    if (method != 0) {
        double scale = pow(10.0, (double)prec);
        double x = fval(v) * scale;
        *out = jj_float((method == 1 ? ceil(x) : floor(x)) / scale);
        return EMBER_OK;
    }
    if (is_intlike(v)) {
        /* round(int, ndigits) stays an int; negative ndigits round half to even. */
        int64_t i = ival(v);
        if (prec >= 0) {
            *out = jj_int(i);
            return EMBER_OK;
        }
        if (prec < -18) {
            *out = jj_int(0);
            return EMBER_OK;
        }
        int64_t p10 = 1;
        for (int64_t k = 0; k < -prec; k++) p10 *= 10;
        int64_t q = i / p10, rem = i % p10;
        if (rem < 0) {
            q -= 1;
            rem += p10;
        }
        if (rem * 2 > p10 || (rem * 2 == p10 && (q & 1))) q += 1;
        int64_t res;
        if (!jj_mul_i64(q, p10, &res)) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
        *out = jj_int(res);
        return EMBER_OK;
    }
    double x = v.u.f;
    if (!isfinite(x)) {
        *out = jj_float(x);
        return EMBER_OK;
    }
    if (prec >= 0) {
        /* printf rounds the exact binary value half to even, as Python does. */
        char buf[512];
        snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
        *out = jj_float(strtod(buf, NULL));
    } else {
        double scale = pow(10.0, (double)-prec);
        double y = x / scale, fl = floor(y), diff = y - fl;
        double rounded = diff > 0.5 ? fl + 1 : diff < 0.5 ? fl : (fmod(fl, 2.0) == 0 ? fl : fl + 1);
        *out = jj_float(rounded * scale);
    }
    return EMBER_OK;
}

FILTER(safe) {
    NO_ARGS("safe");
    return jj_to_string(r, at, v, out);
}

FILTER(sort) {
    BIND("sort", "reverse", "case_sensitive", "attribute");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    size_t n = items->n;
    jj_value *vals = jj_alloc_array(&r->arena, n + 1, sizeof *vals);
    jj_value *keys = jj_alloc_array(&r->arena, n + 1, sizeof *keys);
    if (vals == NULL || keys == NULL) return jj_fail_oom(r, at);
    bool cs = b.given[1] && jj_truthy(b.v[1]);
    for (size_t k = 0; k < n; k++) {
        vals[k] = items->items[k];
        jj_value key = vals[k];
        if (b.given[2] && b.v[2].type != JJ_NONE && (st = attr_get(r, at, key, b.v[2], &key)) != EMBER_OK)
            return st;
        if ((st = sort_key(r, at, key, cs, &keys[k])) != EMBER_OK) return st;
    }
    if ((st = sort_items(r, at, vals, keys, n, b.given[0] && jj_truthy(b.v[0]))) != EMBER_OK) return st;
    jj_list *l = jj_list_new(&r->arena, n);
    if (l == NULL) return jj_fail_oom(r, at);
    if (n) memcpy(l->items, vals, n * sizeof *vals);
    l->n = n;
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

FILTER(string) {
    NO_ARGS("string");
    return jj_to_string(r, at, v, out);
}

FILTER(sum) {
    BIND("sum", "attribute", "start");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    jj_value total = b.given[1] ? b.v[1] : jj_int(0);
    if (total.type == JJ_STR)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "sum() can't sum strings");
    for (size_t k = 0; k < items->n; k++) {
        jj_value item = items->items[k];
        if (b.given[0] && b.v[0].type != JJ_NONE && (st = attr_get(r, at, item, b.v[0], &item)) != EMBER_OK)
            return st;
        if (item.type == JJ_UNDEF) return jj_fail_undefined(r, at, item);
        if (is_intlike(total) && is_intlike(item)) {
            int64_t z;
            if (!jj_add_i64(ival(total), ival(item), &z))
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
            total = jj_int(z);
        } else if (is_num(total) && is_num(item)) {
            total = jj_float(fval(total) + fval(item));
        } else if (total.type == JJ_LIST && item.type == JJ_LIST &&
                   (total.flags & JJ_F_TUPLE) == (item.flags & JJ_F_TUPLE)) {
            jj_list *l = jj_list_new(&r->arena, total.u.list->n + item.u.list->n);
            if (l == NULL) return jj_fail_oom(r, at);
            for (size_t i = 0; i < total.u.list->n; i++) l->items[l->n++] = total.u.list->items[i];
            for (size_t i = 0; i < item.u.list->n; i++) l->items[l->n++] = item.u.list->items[i];
            total = jj_list_value(l, (total.flags & JJ_F_TUPLE) != 0);
            if ((st = jj_charge(r, at, l->n * 8)) != EMBER_OK) return st;
        } else {
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "unsupported operand type(s) for +: '%s' and '%s'", jj_type_name(total),
                           jj_type_name(item));
        }
    }
    *out = total;
    return EMBER_OK;
}

FILTER(tojson) {
    BIND("tojson", "ensure_ascii", "indent", "separators", "sort_keys");
    jj_json_style style;
    memset(&style, 0, sizeof style);
    style.ensure_ascii = b.given[0] && jj_truthy(b.v[0]);
    style.sort_keys = b.given[3] && jj_truthy(b.v[3]);
    if (b.given[1] && b.v[1].type != JJ_NONE) {
        if (b.v[1].type == JJ_STR) {
            style.indent = b.v[1].u.s.p;
            style.indent_len = b.v[1].u.s.n;
        } else {
            int64_t w = 0;
            if ((st = need_int(r, at, "indent", b.v[1], &w)) != EMBER_OK) return st;
            if (w < 0) w = 0;
            if (w > 1000) return jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "indent over 1000");
            char *sp = jj_alloc(&r->arena, (size_t)w + 1);
            if (sp == NULL) return jj_fail_oom(r, at);
            memset(sp, ' ', (size_t)w);
            style.indent = sp;
            style.indent_len = (size_t)w;
        }
    }
    style.item_sep = style.indent ? "," : ", ";
    style.key_sep = ": ";
    if (b.given[2] && b.v[2].type != JJ_NONE) {
        jj_value s = b.v[2];
        if (s.type != JJ_LIST || s.u.list->n != 2 || s.u.list->items[0].type != JJ_STR ||
            s.u.list->items[1].type != JJ_STR)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "separators must be a pair of strings");
        style.item_sep = s.u.list->items[0].u.s.p;
        style.item_sep_len = s.u.list->items[0].u.s.n;
        style.key_sep = s.u.list->items[1].u.s.p;
        style.key_sep_len = s.u.list->items[1].u.s.n;
    } else {
        style.item_sep_len = strlen(style.item_sep);
        style.key_sep_len = strlen(style.key_sep);
    }
    jj_buf o = new_buf(r);
    char err[160] = "";
    int rc = jj_write_json(&o, v, &style, err, sizeof err, 0);
    if (rc == -1) {
        jj_buf_free(&o);
        if (v.type == JJ_UNDEF) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s (%.*s)", err, (int)v.u.s.n, v.u.s.p);
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s", err);
    }
    return jj_buf_to_value(r, at, &o, out);
}

FILTER(trim) {
    BIND("trim", "chars");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    jj_value chars = b.given[0] ? b.v[0] : jj_none();
    if (chars.type != JJ_NONE && (st = need_str(r, at, "chars", chars)) != EMBER_OK) return st;
    return strip(r, at, s, chars, true, true, out);
}

FILTER(unique) {
    BIND("unique", "case_sensitive", "attribute");
    jj_list *items;
    if ((st = jj_iterate(r, at, v, &items)) != EMBER_OK) return st;
    bool cs = b.given[0] && jj_truthy(b.v[0]);
    jj_list *l = jj_list_new(&r->arena, 0), *seen = jj_list_new(&r->arena, 0);
    if (l == NULL || seen == NULL) return jj_fail_oom(r, at);
    for (size_t k = 0; k < items->n; k++) {
        jj_value key = items->items[k];
        if (b.given[1] && b.v[1].type != JJ_NONE && (st = attr_get(r, at, key, b.v[1], &key)) != EMBER_OK)
            return st;
        if ((st = sort_key(r, at, key, cs, &key)) != EMBER_OK) return st;
        bool dup = false;
        for (size_t s = 0; s < seen->n && !dup; s++) dup = jj_equal(seen->items[s], key);
        if ((st = jj_charge(r, at, seen->n * 4)) != EMBER_OK) return st;
        if (dup) continue;
        if (!jj_list_push(&r->arena, seen, key) || !jj_list_push(&r->arena, l, items->items[k]))
            return jj_fail_oom(r, at);
    }
    *out = jj_list_value(l, false);
    return EMBER_OK;
}

FILTER(wordcount) {
    NO_ARGS("wordcount");
    jj_value s;
    if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
    int64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.u.s.n;) {
        uint32_t cp;
        i += jj_utf8_next(s.u.s.p + i, s.u.s.n - i, &cp);
        bool w = cp == '_' || jj_is_alpha(cp) || jj_is_digit(cp);
        if (w && !in_word) words++;
        in_word = w;
    }
    *out = jj_int(words);
    return jj_charge(r, at, s.u.s.n);
}

typedef struct filter_entry {
    const char *name;
    filter_fn fn;
} filter_entry;

static const filter_entry k_filters[] = {
    {"abs", f_abs},           {"attr", f_attr},         {"batch", f_batch},
    {"capitalize", f_capitalize}, {"count", f_length},  {"d", f_default},
    {"default", f_default},   {"dictsort", f_dictsort}, {"e", f_escape},
    {"escape", f_escape},     {"first", f_first},       {"float", f_float},
    {"format", f_format},     {"indent", f_indent},     {"int", f_int},
    {"items", f_items},       {"join", f_join},         {"last", f_last},
    {"length", f_length},     {"list", f_list},         {"lower", f_lower},
    {"map", f_map},           {"max", f_max},           {"min", f_min},
    {"reject", f_reject},     {"rejectattr", f_rejectattr}, {"replace", f_replace},
    {"reverse", f_reverse},   {"round", f_round},       {"safe", f_safe},
    {"select", f_select},     {"selectattr", f_selectattr}, {"sort", f_sort},
    {"string", f_string},     {"sum", f_sum},           {"title", f_title},
    {"tojson", f_tojson},     {"trim", f_trim},         {"unique", f_unique},
    {"upper", f_upper},       {"wordcount", f_wordcount},
};

#define N_FILTERS (sizeof k_filters / sizeof *k_filters)

int jj_filter_id(const char *name, size_t n) {
    for (size_t k = 0; k < N_FILTERS; k++)
        if (strlen(k_filters[k].name) == n && memcmp(k_filters[k].name, name, n) == 0) return (int)k;
    return -1;
}

ember_status jj_apply_filter(jj_render *r, const jj_node *at, int id, jj_value v,
                             const jj_value *args, size_t nargs, const jj_kwval *kw, size_t nkw,
                             jj_value *out) {
    if (id < 0 || (size_t)id >= N_FILTERS)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "no such filter");
    return k_filters[id].fn(r, at, v, args, nargs, kw, nkw, out);
}

static ember_status apply_named_filter(jj_render *r, const jj_node *at, jj_value name, jj_value v,
                                       const jj_value *args, size_t nargs, const jj_kwval *kw,
                                       size_t nkw, jj_value *out) {
    ember_status st = need_str(r, at, "filter name", name);
    if (st != EMBER_OK) return st;
    int id = jj_filter_id(name.u.s.p, name.u.s.n);
    if (id < 0)
        return jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "filter '%.*s' is unknown or not supported",
                       (int)name.u.s.n, name.u.s.p);
    return jj_apply_filter(r, at, id, v, args, nargs, kw, nkw, out);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */
/* ------------------------------------------------------------------------ */

enum {
    TS_DEFINED, TS_UNDEFINED, TS_NONE, TS_BOOLEAN, TS_FALSE, TS_TRUE, TS_INTEGER, TS_FLOAT, TS_NUMBER,
    TS_STRING, TS_MAPPING, TS_ITERABLE, TS_SEQUENCE, TS_CALLABLE, TS_SAMEAS, TS_ESCAPED, TS_LOWER,
    TS_UPPER, TS_ODD, TS_EVEN, TS_DIVISIBLEBY, TS_EQ, TS_NE, TS_LT, TS_LE, TS_GT, TS_GE, TS_IN, TS_FILTER,
    TS_TEST
};

typedef struct test_entry {
    const char *name;
    int id;
} test_entry;

static const test_entry k_tests[] = {
    {"defined", TS_DEFINED},   {"undefined", TS_UNDEFINED}, {"none", TS_NONE},
    {"boolean", TS_BOOLEAN},   {"false", TS_FALSE},         {"true", TS_TRUE},
    {"integer", TS_INTEGER},   {"float", TS_FLOAT},         {"number", TS_NUMBER},
    {"string", TS_STRING},     {"mapping", TS_MAPPING},     {"iterable", TS_ITERABLE},
    {"sequence", TS_SEQUENCE}, {"callable", TS_CALLABLE},   {"sameas", TS_SAMEAS},
    {"escaped", TS_ESCAPED},   {"lower", TS_LOWER},         {"upper", TS_UPPER},
    {"odd", TS_ODD},           {"even", TS_EVEN},           {"divisibleby", TS_DIVISIBLEBY},
    {"eq", TS_EQ},             {"equalto", TS_EQ},          {"==", TS_EQ},
    {"ne", TS_NE},             {"!=", TS_NE},               {"lt", TS_LT},
    {"lessthan", TS_LT},       {"<", TS_LT},                {"le", TS_LE},
    {"<=", TS_LE},             {"gt", TS_GT},               {"greaterthan", TS_GT},
    {">", TS_GT},              {"ge", TS_GE},               {">=", TS_GE},
    {"in", TS_IN},             {"filter", TS_FILTER},       {"test", TS_TEST},
};

#define N_TESTS (sizeof k_tests / sizeof *k_tests)

int jj_test_id(const char *name, size_t n) {
    for (size_t k = 0; k < N_TESTS; k++)
        if (strlen(k_tests[k].name) == n && memcmp(k_tests[k].name, name, n) == 0) return k_tests[k].id;
    return -1;
}

/* value % divisor == want, Python semantics. */
static ember_status mod_is(jj_render *r, const jj_node *at, jj_value v, jj_value d, int64_t want,
                           bool *out) {
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
    if (d.type == JJ_UNDEF) return jj_fail_undefined(r, at, d);
    if (!is_num(v) || !is_num(d))
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                       "unsupported operand type(s) for %%: '%s' and '%s'", jj_type_name(v),
                       jj_type_name(d));
    if (is_intlike(v) && is_intlike(d)) {
        int64_t x = ival(v), y = ival(d);
        if (y == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
        if (y == -1) {
            *out = want == 0;
            return EMBER_OK;
        }
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        *out = m == want;
        return EMBER_OK;
    }
    double x = fval(v), y = fval(d);
    if (y == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "float modulo");
    double m = fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    *out = m == (double)want;
    return EMBER_OK;
}

/* Python's str.islower() / str.isupper(). */
static bool all_lower_or_upper(jj_value s, bool upper) {
    bool cased = false;
    for (size_t i = 0; i < s.u.s.n;) {
        uint32_t cp;
        i += jj_utf8_next(s.u.s.p + i, s.u.s.n - i, &cp);
        if (jj_is_title(cp) || (upper ? jj_is_lower(cp) : jj_is_upper(cp))) return false;
        if (upper ? jj_is_upper(cp) : jj_is_lower(cp)) cased = true;
    }
    return cased;
}

ember_status jj_apply_test(jj_render *r, const jj_node *at, int id, jj_value v,
                           const jj_value *args, size_t nargs, const jj_kwval *kw, size_t nkw,
                           bool *out) {
    (void)kw;
    if (nkw > 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "tests take no keyword arguments");
    size_t want_args = (id == TS_SAMEAS || id == TS_DIVISIBLEBY || (id >= TS_EQ && id <= TS_IN)) ? 1 : 0;
    if (nargs != want_args)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "this test takes %zu argument(s), %zu given",
                       want_args, nargs);
    jj_value a = nargs ? args[0] : jj_none();
    ember_status st = EMBER_OK;
    switch (id) {
    case TS_DEFINED: *out = v.type != JJ_UNDEF; break;
    case TS_UNDEFINED: *out = v.type == JJ_UNDEF; break;
    case TS_NONE: *out = v.type == JJ_NONE; break;
    case TS_BOOLEAN: *out = v.type == JJ_BOOL; break;
    case TS_FALSE: *out = v.type == JJ_BOOL && !v.u.b; break;
    case TS_TRUE: *out = v.type == JJ_BOOL && v.u.b; break;
    case TS_INTEGER: *out = v.type == JJ_INT; break;
    case TS_FLOAT: *out = v.type == JJ_FLOAT; break;
    case TS_NUMBER: *out = is_num(v); break;
    case TS_STRING: *out = v.type == JJ_STR; break;
    case TS_MAPPING: *out = v.type == JJ_DICT; break;
    case TS_ITERABLE:
        *out = v.type == JJ_STR || v.type == JJ_LIST || v.type == JJ_DICT || v.type == JJ_UNDEF ||
               v.type == JJ_LOOP;
        break;
    case TS_SEQUENCE:
        *out = v.type == JJ_STR || v.type == JJ_LIST || v.type == JJ_DICT || v.type == JJ_UNDEF;
        break;
    case TS_CALLABLE: *out = v.type == JJ_FUNC || v.type == JJ_MACRO || v.type == JJ_UNDEF; break;
    case TS_SAMEAS:
        if (v.type != a.type) *out = false;
        else if (v.type == JJ_NONE || v.type == JJ_UNDEF) *out = true;
        else if (v.type == JJ_BOOL) *out = v.u.b == a.u.b;
        else if (v.type == JJ_INT) *out = v.u.i == a.u.i;
        else if (v.type == JJ_STR) *out = v.u.s.p == a.u.s.p && v.u.s.n == a.u.s.n;
        else *out = jj_equal(v, a) && v.u.list == a.u.list;
        break;
    case TS_ESCAPED: *out = false; break;
    case TS_LOWER:
    case TS_UPPER: {
        jj_value s;
        if ((st = jj_to_string(r, at, v, &s)) != EMBER_OK) return st;
        *out = all_lower_or_upper(s, id == TS_UPPER);
        break;
    }
    case TS_ODD: return mod_is(r, at, v, jj_int(2), 1, out);
    case TS_EVEN: return mod_is(r, at, v, jj_int(2), 0, out);
    case TS_DIVISIBLEBY: return mod_is(r, at, v, a, 0, out);
    case TS_EQ: *out = jj_equal(v, a); break;
    case TS_NE: *out = !jj_equal(v, a); break;
    case TS_LT:
    case TS_LE:
    case TS_GT:
    case TS_GE: {
        if (v.type == JJ_UNDEF) return jj_fail_undefined(r, at, v);
        if (a.type == JJ_UNDEF) return jj_fail_undefined(r, at, a);
        bool less;
        jj_value x = (id == TS_GT || id == TS_GE) ? a : v, y = (id == TS_GT || id == TS_GE) ? v : a;
        if (jj_less(x, y, &less) != 0)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "comparison not supported between instances of '%s' and '%s'",
                           jj_type_name(v), jj_type_name(a));
        *out = less || ((id == TS_LE || id == TS_GE) && jj_equal(x, y));
        break;
    }
    case TS_IN: {
        jj_value items = a;
        if (items.type == JJ_STR) {
            if (v.type != JJ_STR)
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                               "'in <string>' requires string as left operand, not %s", jj_type_name(v));
            *out = find_bytes(items.u.s.p, items.u.s.n, 0, v.u.s.p, v.u.s.n) != SIZE_MAX;
        } else if (items.type == JJ_DICT) {
            *out = jj_dict_get(items.u.dict, v) != NULL;
        } else if (items.type == JJ_LIST) {
            *out = false;
            for (size_t k = 0; k < items.u.list->n && !*out; k++) *out = jj_equal(items.u.list->items[k], v);
        } else if (items.type == JJ_UNDEF) {
            *out = false;
        } else {
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "argument of type '%s' is not iterable",
                           jj_type_name(items));
        }
        break;
    }
    case TS_FILTER: *out = v.type == JJ_STR && jj_filter_id(v.u.s.p, v.u.s.n) >= 0; break;
    case TS_TEST: *out = v.type == JJ_STR && jj_test_id(v.u.s.p, v.u.s.n) >= 0; break;
    default: return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "no such test");
    }
    return st;
}

static ember_status apply_named_test(jj_render *r, const jj_node *at, jj_value name, jj_value v,
                                     const jj_value *args, size_t nargs, bool *out) {
    ember_status st = need_str(r, at, "test name", name);
    if (st != EMBER_OK) return st;
    int id = jj_test_id(name.u.s.p, name.u.s.n);
    if (id < 0)
        return jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "test '%.*s' is unknown or not supported",
                       (int)name.u.s.n, name.u.s.p);
    return jj_apply_test(r, at, id, v, args, nargs, NULL, 0, out);
}

/* ------------------------------------------------------------------------ */
/* Functions and methods                                                     */
/* ------------------------------------------------------------------------ */

enum {
    F_RANGE, F_NAMESPACE, F_DICT, F_RAISE, F_STRFTIME,
    /* str */
    M_CAPITALIZE, M_COUNT, M_ENDSWITH, M_FIND, M_FORMAT, M_INDEX, M_ISALNUM, M_ISALPHA, M_ISDIGIT,
    M_ISLOWER, M_ISSPACE, M_ISUPPER, M_JOIN, M_LOWER, M_LSTRIP, M_REPLACE, M_RFIND, M_RSPLIT,
    M_RSTRIP, M_SPLIT, M_SPLITLINES, M_STARTSWITH, M_STRIP, M_TITLE, M_UPPER,
    /* dict */
    M_ITEMS, M_KEYS, M_VALUES, M_GET,
    /* list */
    M_LIST_COUNT, M_LIST_INDEX,
    /* loop */
    M_CYCLE,
    F_UNSAFE /* a mutating method: calling it fails */
};

typedef struct method_entry {
    const char *name;
    int id;
} method_entry;

static const method_entry k_str_methods[] = {
    {"capitalize", M_CAPITALIZE}, {"count", M_COUNT},     {"endswith", M_ENDSWITH},
    {"find", M_FIND},             {"format", M_FORMAT},   {"index", M_INDEX},
    {"isalnum", M_ISALNUM},       {"isalpha", M_ISALPHA}, {"isdigit", M_ISDIGIT},
    {"islower", M_ISLOWER},       {"isspace", M_ISSPACE}, {"isupper", M_ISUPPER},
    {"join", M_JOIN},             {"lower", M_LOWER},     {"lstrip", M_LSTRIP},
    {"replace", M_REPLACE},       {"rfind", M_RFIND},     {"rsplit", M_RSPLIT},
    {"rstrip", M_RSTRIP},         {"split", M_SPLIT},     {"splitlines", M_SPLITLINES},
    {"startswith", M_STARTSWITH}, {"strip", M_STRIP},     {"title", M_TITLE},
    {"upper", M_UPPER},
};

static const method_entry k_dict_methods[] = {
    {"items", M_ITEMS}, {"keys", M_KEYS}, {"values", M_VALUES}, {"get", M_GET},
    {"clear", F_UNSAFE}, {"pop", F_UNSAFE}, {"popitem", F_UNSAFE}, {"setdefault", F_UNSAFE},
    {"update", F_UNSAFE},
};

static const method_entry k_list_methods[] = {
    {"count", M_LIST_COUNT}, {"index", M_LIST_INDEX}, {"append", F_UNSAFE}, {"clear", F_UNSAFE},
    {"extend", F_UNSAFE},    {"insert", F_UNSAFE},    {"pop", F_UNSAFE},    {"remove", F_UNSAFE},
    {"reverse", F_UNSAFE},   {"sort", F_UNSAFE},
};

static int find_method(const method_entry *t, size_t n, const char *name, size_t len) {
    for (size_t k = 0; k < n; k++)
        if (strlen(t[k].name) == len && memcmp(t[k].name, name, len) == 0) return t[k].id;
    return -1;
}

bool jj_global(const char *name, size_t n, jj_value *out) {
    int id = -1;
    if (NAME_IS(name, n, "range")) id = F_RANGE;
    else if (NAME_IS(name, n, "namespace")) id = F_NAMESPACE;
    else if (NAME_IS(name, n, "dict")) id = F_DICT;
    else if (NAME_IS(name, n, "raise_exception")) id = F_RAISE;
    else if (NAME_IS(name, n, "strftime_now")) id = F_STRFTIME;
    if (id < 0) return false;
    *out = jj_none();
    out->type = JJ_FUNC;
    out->fn = (uint16_t)id;
    out->self_type = JJ_NONE;
    return true;
}

bool jj_method(jj_value self, const char *name, size_t n, jj_value *out) {
    int id = -1;
    if (self.type == JJ_STR) id = find_method(k_str_methods, sizeof k_str_methods / sizeof *k_str_methods, name, n);
    else if (self.type == JJ_DICT) id = find_method(k_dict_methods, sizeof k_dict_methods / sizeof *k_dict_methods, name, n);
    else if (self.type == JJ_LIST && !(self.flags & JJ_F_TUPLE))
        id = find_method(k_list_methods, sizeof k_list_methods / sizeof *k_list_methods, name, n);
    else if (self.type == JJ_LIST) {
        id = find_method(k_list_methods, 2, name, n);
    } else if (self.type == JJ_LOOP && NAME_IS(name, n, "cycle")) id = M_CYCLE;
    if (id < 0) return false;
    if (id == F_UNSAFE) {
        /* jinja2's sandbox answers with an undefined value that fails when used. */
        *out = jj_undef(self.type == JJ_DICT ? "access to a mutating method of 'dict' object is unsafe"
                                             : "access to a mutating method of 'list' object is unsafe");
        return true;
    }
    *out = self;
    out->type = JJ_FUNC;
    out->fn = (uint16_t)id;
    out->self_type = self.type;
    out->self_flags = self.flags;
    out->flags = 0;
    return true;
}

static jj_value self_of(jj_value fn) {
    jj_value s = fn;
    s.type = fn.self_type;
    s.flags = fn.self_flags;
    s.fn = 0;
    s.self_type = 0;
    s.self_flags = 0;
    return s;
}

static ember_status fn_range(jj_render *r, const jj_node *at, const jj_value *args, size_t nargs,
                             size_t nkw, jj_value *out) {
    if (nkw > 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "range() takes no keyword arguments");
    if (nargs < 1 || nargs > 3)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "range expected 1 to 3 arguments, got %zu", nargs);
    int64_t v[3] = {0, 0, 1};
    for (size_t k = 0; k < nargs; k++) {
        ember_status st = need_int(r, at, "range() argument", args[k], &v[nargs == 1 ? 1 : k]);
        if (st != EMBER_OK) return st;
    }
    int64_t start = v[0], stop = v[1], step = v[2];
    if (step == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "range() arg 3 must not be zero");
    uint64_t count = 0;
    if (step > 0 && start < stop) count = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
    if (step < 0 && start > stop) count = ((uint64_t)start - (uint64_t)stop - 1) / ((uint64_t)0 - (uint64_t)step) + 1;
    if (count > MAX_RANGE)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                       "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", MAX_RANGE);
    jj_list *l = jj_list_new(&r->arena, (size_t)count);
    if (l == NULL) return jj_fail_oom(r, at);
    for (uint64_t k = 0; k < count; k++) l->items[l->n++] = jj_int(start + (int64_t)k * step);
    *out = jj_list_value(l, false);
    return jj_charge(r, at, count * 8);
}

/* dict(mapping or pairs, **kw) / namespace(...). */
static ember_status fn_dict(jj_render *r, const jj_node *at, const jj_value *args, size_t nargs,
                            const jj_kwval *kw, size_t nkw, bool ns, jj_value *out) {
    if (nargs > 1)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%s expected at most 1 argument, got %zu",
                       ns ? "namespace" : "dict", nargs);
    jj_dict *d = jj_dict_new(&r->arena);
    if (d == NULL) return jj_fail_oom(r, at);
    if (nargs == 1) {
        jj_value a = args[0];
        if (a.type == JJ_DICT) {
            for (size_t m = 0; m < a.u.dict->n; m++)
                if (!jj_dict_set(&r->arena, d, a.u.dict->keys[m], a.u.dict->vals[m])) return jj_fail_oom(r, at);
        } else {
            jj_list *items;
            ember_status st = jj_iterate(r, at, a, &items);
            if (st != EMBER_OK) return st;
            for (size_t k = 0; k < items->n; k++) {
                jj_value pair = items->items[k];
                if (pair.type != JJ_LIST || pair.u.list->n != 2)
                    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                                   "dictionary update sequence element #%zu has the wrong length", k);
                if (!jj_dict_set(&r->arena, d, pair.u.list->items[0], pair.u.list->items[1]))
                    return jj_fail_oom(r, at);
            }
        }
    }
    for (size_t k = 0; k < nkw; k++)
        if (!jj_dict_set(&r->arena, d, jj_str(kw[k].name, kw[k].len), kw[k].value)) return jj_fail_oom(r, at);
    *out = dict_value(d);
    if (ns) out->type = JJ_NS;
    return EMBER_OK;
}

static ember_status fn_strftime(jj_render *r, const jj_node *at, const jj_value *args, size_t nargs,
                                size_t nkw, jj_value *out) {
    if (nargs != 1 || nkw != 0)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "strftime_now takes one argument (a format)");
    ember_status st = need_str(r, at, "format", args[0]);
    if (st != EMBER_OK) return st;
    char fmt[256];
    if (args[0].u.s.n >= sizeof fmt || memchr(args[0].u.s.p, '\0', args[0].u.s.n) != NULL)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "strftime_now: format too long");
    memcpy(fmt, args[0].u.s.p, args[0].u.s.n);
    fmt[args[0].u.s.n] = '\0';
    time_t t = r->fixed_time ? (time_t)r->time : time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "strftime_now: the time cannot be shown");
    char buf[1024];
    size_t n = fmt[0] ? strftime(buf, sizeof buf, fmt, &tm) : 0;
    if (n == 0 && fmt[0] != '\0')
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "strftime_now: the result is empty or too long");
    return new_string(r, at, buf, n, out);
}

/* Python's str.format (auto or explicit field numbers, names, !r / !s,
 * and the [[fill]align][width][.precision][type] part of format specs). */
static ember_status str_format(jj_render *r, const jj_node *at, jj_value fmt, const jj_value *args,
                               size_t nargs, const jj_kwval *kw, size_t nkw, jj_value *out) {
    jj_buf o = new_buf(r);
    const char *p = fmt.u.s.p;
    size_t n = fmt.u.s.n, auto_idx = 0;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        char c = p[i];
        if (c == '}' ) {
            if (i + 1 < n && p[i + 1] == '}') {
                jj_buf_putc(&o, '}');
                i += 2;
                continue;
            }
            st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Single '}' encountered in format string");
            break;
        }
        if (c != '{') {
            jj_buf_putc(&o, c);
            i++;
            continue;
        }
        if (i + 1 < n && p[i + 1] == '{') {
            jj_buf_putc(&o, '{');
            i += 2;
            continue;
        }
        size_t e = i + 1;
        while (e < n && p[e] != '}') e++;
        if (e >= n) {
            st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Single '{' encountered in format string");
            break;
        }
        /* field [!conv] [:spec] */
        size_t fb = i + 1, fe = fb;
        while (fe < e && p[fe] != '!' && p[fe] != ':') fe++;
        char conv = 0;
        size_t sb = e, se = e;
        size_t k = fe;
        if (k < e && p[k] == '!') {
            conv = k + 1 < e ? p[k + 1] : 0;
            k += 2;
        }
        if (k < e && p[k] == ':') sb = k + 1;
        /* the field's first part: number, name or empty */
        size_t pe = fb;
        while (pe < fe && p[pe] != '.' && p[pe] != '[') pe++;
        jj_value val;
        if (pe == fb) {
            if (auto_idx >= nargs) {
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Replacement index %zu out of range", auto_idx);
                break;
            }
            val = args[auto_idx++];
        } else if (p[fb] >= '0' && p[fb] <= '9') {
            size_t idx = 0;
            for (size_t q = fb; q < pe; q++) idx = idx * 10 + (size_t)(p[q] - '0');
            if (idx >= nargs) {
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Replacement index %zu out of range", idx);
                break;
            }
            val = args[idx];
        } else {
            bool found = false;
            for (size_t q = 0; q < nkw && !found; q++)
                if (kw[q].len == pe - fb && memcmp(kw[q].name, p + fb, pe - fb) == 0) {
                    val = kw[q].value;
                    found = true;
                }
            if (!found) {
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "KeyError: '%.*s'", (int)(pe - fb), p + fb);
                break;
            }
        }
        /* .attr and [key] parts */
        while (pe < fe && st == EMBER_OK) {
            if (p[pe] == '.') {
                size_t ae = pe + 1;
                while (ae < fe && p[ae] != '.' && p[ae] != '[') ae++;
                st = jj_getattr(r, at, val, p + pe + 1, ae - pe - 1, &val);
                pe = ae;
            } else {
                size_t ke = pe + 1;
                while (ke < fe && p[ke] != ']') ke++;
                bool digits = ke > pe + 1;
                int64_t idx = 0;
                for (size_t q = pe + 1; q < ke; q++) {
                    if (p[q] < '0' || p[q] > '9' || idx > 100000000) digits = false;
                    else idx = idx * 10 + (p[q] - '0');
                }
                st = jj_getitem(r, at, val, digits ? jj_int(idx) : jj_str(p + pe + 1, ke - pe - 1), &val);
                pe = ke + 1;
            }
        }
        if (st != EMBER_OK) break;
        if (val.type == JJ_UNDEF) {
            st = jj_fail_undefined(r, at, val);
            break;
        }
        /* spec: [[fill]align][sign][0][width][.precision][type] */
        char fill = ' ', align = 0, type = 0;
        size_t width = 0, q = sb;
        int prec = -1;
        if (se - q >= 2 && (p[q + 1] == '<' || p[q + 1] == '>' || p[q + 1] == '^')) {
            fill = p[q];
            align = p[q + 1];
            q += 2;
        } else if (q < se && (p[q] == '<' || p[q] == '>' || p[q] == '^')) {
            align = p[q++];
        }
        if (q < se && p[q] == '0') {
            fill = '0';
            if (!align) align = '=';
            q++;
        }
        while (q < se && p[q] >= '0' && p[q] <= '9' && width < 10000) width = width * 10 + (size_t)(p[q++] - '0');
        if (q < se && p[q] == '.') {
            prec = 0;
            q++;
            while (q < se && p[q] >= '0' && p[q] <= '9' && prec < 1000) prec = prec * 10 + (p[q++] - '0');
        }
        if (q < se) type = p[q++];
        if (q != se) {
            st = jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "format spec '%.*s' is not supported", (int)(se - sb), p + sb);
            break;
        }
        jj_buf field = new_buf(r);
        if (conv == 'r') {
            jj_write_repr(&field, val);
        } else if (type == 'f' || type == 'F' || type == 'e' || type == 'g' || type == '%') {
            if (!is_num(val)) {
                jj_buf_free(&field);
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Unknown format code '%c' for object of type '%s'", type, jj_type_name(val));
                break;
            }
            char num[400];
            double d = fval(val) * (type == '%' ? 100.0 : 1.0);
            snprintf(num, sizeof num, type == 'e' ? "%.*e" : type == 'g' ? "%.*g" : "%.*f",
                     prec < 0 ? 6 : (prec > 300 ? 300 : prec), d);
            jj_buf_puts(&field, num);
            if (type == '%') jj_buf_putc(&field, '%');
        } else if (type == 'd') {
            if (!is_intlike(val)) {
                jj_buf_free(&field);
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "Unknown format code 'd' for object of type '%s'", jj_type_name(val));
                break;
            }
            jj_write_str(&field, jj_int(ival(val)));
        } else if (type == 0 || type == 's') {
            jj_write_str(&field, val);
            if (prec >= 0 && field.n > 0) {
                size_t cut = jj_utf8_offset(field.p, field.n, (size_t)prec);
                field.n = cut;
            }
        } else {
            jj_buf_free(&field);
            st = jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "format type '%c' is not supported", type);
            break;
        }
        size_t chars = field.p ? jj_utf8_count(field.p, field.n) : 0;
        size_t pad = width > chars ? width - chars : 0;
        if (!align) align = is_num(val) && conv == 0 ? '>' : '<';
        size_t left = align == '>' || align == '=' ? pad : align == '^' ? pad / 2 : 0;
        for (size_t z = 0; z < left; z++) jj_buf_putc(&o, fill);
        if (field.p) jj_buf_put(&o, field.p, field.n);
        for (size_t z = left; z < pad; z++) jj_buf_putc(&o, fill);
        jj_buf_free(&field);
        i = e + 1;
    }
    if (st != EMBER_OK) {
        jj_buf_free(&o);
        return st;
    }
    return jj_buf_to_value(r, at, &o, out);
}

ember_status jj_percent_format(jj_render *r, const jj_node *at, jj_value fmt, jj_value args,
                               jj_value *out) {
    const jj_value *items = &args;
    size_t nitems = 1, next = 0;
    const jj_dict *map = NULL;
    if (args.type == JJ_LIST && (args.flags & JJ_F_TUPLE)) {
        items = args.u.list->items;
        nitems = args.u.list->n;
    } else if (args.type == JJ_DICT) {
        map = args.u.dict;
    }
    jj_buf o = new_buf(r);
    const char *p = fmt.u.s.p;
    size_t n = fmt.u.s.n;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK;) {
        if (p[i] != '%') {
            jj_buf_putc(&o, p[i++]);
            continue;
        }
        i++;
        jj_value val;
        bool have = false;
        if (i < n && p[i] == '(') {
            size_t e = i + 1;
            while (e < n && p[e] != ')') e++;
            if (map == NULL || e >= n) {
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "format requires a mapping");
                break;
            }
            const jj_value *v = jj_dict_get_str(map, p + i + 1, e - i - 1);
            if (v == NULL) {
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "KeyError: '%.*s'", (int)(e - i - 1), p + i + 1);
                break;
            }
            val = *v;
            have = true;
            i = e + 1;
        }
        bool left = false, zero = false, plus = false, space = false;
        while (i < n && (p[i] == '-' || p[i] == '0' || p[i] == '+' || p[i] == ' ' || p[i] == '#')) {
            if (p[i] == '-') left = true;
            if (p[i] == '0') zero = true;
            if (p[i] == '+') plus = true;
            if (p[i] == ' ') space = true;
            i++;
        }
        size_t width = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9' && width < 10000) width = width * 10 + (size_t)(p[i++] - '0');
        int prec = -1;
        if (i < n && p[i] == '.') {
            prec = 0;
            i++;
            while (i < n && p[i] >= '0' && p[i] <= '9' && prec < 1000) prec = prec * 10 + (p[i++] - '0');
        }
        if (i >= n) {
            st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "incomplete format");
            break;
        }
        char conv = p[i++];
        if (conv == '%') {
            jj_buf_putc(&o, '%');
            continue;
        }
        if (!have) {
            if (map != NULL) {
                val = args;
            } else {
                if (next >= nitems) {
                    st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "not enough arguments for format string");
                    break;
                }
                val = items[next++];
            }
        }
        jj_buf field = new_buf(r);
        char num[400];
        if (conv == 's' || conv == 'r' || conv == 'a') {
            if (conv == 's') jj_write_str(&field, val);
            else jj_write_repr(&field, val);
            if (prec >= 0 && field.n > 0) field.n = jj_utf8_offset(field.p, field.n, (size_t)prec);
            zero = false;
        } else if (conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x' || conv == 'X' || conv == 'o') {
            if (!is_num(val)) {
                jj_buf_free(&field);
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%%%c format: a number is required, not %s",
                             conv, jj_type_name(val));
                break;
            }
            int64_t iv = val.type == JJ_FLOAT ? (int64_t)val.u.f : ival(val);
            if (conv == 'x' || conv == 'X' || conv == 'o')
                snprintf(num, sizeof num, conv == 'x' ? "%s%llx" : conv == 'X' ? "%s%llX" : "%s%llo",
                         iv < 0 ? "-" : plus ? "+" : space ? " " : "",
                         (unsigned long long)(iv < 0 ? -(uint64_t)iv : (uint64_t)iv));
            else
                snprintf(num, sizeof num, plus ? "%+lld" : space ? "% lld" : "%lld", (long long)iv);
            jj_buf_puts(&field, num);
        } else if (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' || conv == 'G') {
            if (!is_num(val)) {
                jj_buf_free(&field);
                st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "must be real number, not %s", jj_type_name(val));
                break;
            }
            char f[16];
            snprintf(f, sizeof f, "%%%s%s.*%c", plus ? "+" : "", space ? " " : "", conv);
            snprintf(num, sizeof num, f, prec < 0 ? 6 : (prec > 300 ? 300 : prec), fval(val));
            jj_buf_puts(&field, num);
        } else {
            jj_buf_free(&field);
            st = jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "format character '%c' is not supported", conv);
            break;
        }
        size_t chars = field.p ? jj_utf8_count(field.p, field.n) : 0;
        size_t pad = width > chars ? width - chars : 0;
        if (left) {
            if (field.p) jj_buf_put(&o, field.p, field.n);
            for (size_t z = 0; z < pad; z++) jj_buf_putc(&o, ' ');
        } else if (zero && field.p && (field.p[0] == '-' || field.p[0] == '+' || field.p[0] == ' ')) {
            jj_buf_putc(&o, field.p[0]);
            for (size_t z = 0; z < pad; z++) jj_buf_putc(&o, '0');
            jj_buf_put(&o, field.p + 1, field.n - 1);
        } else {
            for (size_t z = 0; z < pad; z++) jj_buf_putc(&o, zero ? '0' : ' ');
            if (field.p) jj_buf_put(&o, field.p, field.n);
        }
        jj_buf_free(&field);
    }
    if (st == EMBER_OK && map == NULL && next < nitems)
        st = jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "not all arguments converted during string formatting");
    if (st != EMBER_OK) {
        jj_buf_free(&o);
        return st;
    }
    return jj_buf_to_value(r, at, &o, out);
}

/* str.find / rfind / index / count, in code points. */
static ember_status str_search(jj_render *r, const jj_node *at, int id, jj_value s, jj_value sub,
                               jj_value *out) {
    ember_status st = need_str(r, at, "substring", sub);
    if (st != EMBER_OK) return st;
    if ((st = jj_charge(r, at, s.u.s.n)) != EMBER_OK) return st;
    if (id == M_COUNT) {
        int64_t count = 0;
        if (sub.u.s.n == 0) {
            count = (int64_t)jj_utf8_count(s.u.s.p, s.u.s.n) + 1;
        } else {
            for (size_t i = 0;;) {
                size_t k = find_bytes(s.u.s.p, s.u.s.n, i, sub.u.s.p, sub.u.s.n);
                if (k == SIZE_MAX) break;
                count++;
                i = k + sub.u.s.n;
            }
        }
        *out = jj_int(count);
        return EMBER_OK;
    }
    size_t k = id == M_RFIND ? rfind_bytes(s.u.s.p, s.u.s.n, sub.u.s.p, sub.u.s.n)
                             : find_bytes(s.u.s.p, s.u.s.n, 0, sub.u.s.p, sub.u.s.n);
    if (k == SIZE_MAX) {
        if (id == M_INDEX) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "substring not found");
        *out = jj_int(-1);
        return EMBER_OK;
    }
    *out = jj_int((int64_t)jj_utf8_count(s.u.s.p, k));
    return EMBER_OK;
}

/* startswith / endswith with a string or a tuple of strings. */
static ember_status str_affix(jj_render *r, const jj_node *at, bool end, jj_value s, jj_value fix,
                              jj_value *out) {
    const jj_value *cands = &fix;
    size_t nc = 1;
    if (fix.type == JJ_LIST && (fix.flags & JJ_F_TUPLE)) {
        cands = fix.u.list->items;
        nc = fix.u.list->n;
    }
    bool res = false;
    for (size_t k = 0; k < nc; k++) {
        jj_value c = cands[k];
        if (c.type != JJ_STR)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "%s first arg must be str or a tuple of str, not %s",
                           end ? "endswith" : "startswith", jj_type_name(c));
        if (c.u.s.n <= s.u.s.n &&
            memcmp(s.u.s.p + (end ? s.u.s.n - c.u.s.n : 0), c.u.s.p, c.u.s.n) == 0)
            res = true;
    }
    *out = jj_bool(res);
    return EMBER_OK;
}

static ember_status str_is(jj_render *r, const jj_node *at, int id, jj_value s, jj_value *out) {
    bool res = s.u.s.n > 0, any_cased = false;
    for (size_t i = 0; i < s.u.s.n && res;) {
        uint32_t cp;
        i += jj_utf8_next(s.u.s.p + i, s.u.s.n - i, &cp);
        switch (id) {
        case M_ISALNUM: res = jj_is_alpha(cp) || jj_is_digit(cp); break;
        case M_ISALPHA: res = jj_is_alpha(cp); break;
        case M_ISDIGIT: res = jj_is_digit(cp); break;
        case M_ISSPACE: res = jj_is_space(cp); break;
        case M_ISLOWER:
            if (jj_is_upper(cp) || jj_is_title(cp)) res = false;
            if (jj_is_lower(cp)) any_cased = true;
            break;
        case M_ISUPPER:
            if (jj_is_lower(cp) || jj_is_title(cp)) res = false;
            if (jj_is_upper(cp)) any_cased = true;
            break;
        default: break;
        }
    }
    if (id == M_ISLOWER || id == M_ISUPPER) res = res && any_cased;
    *out = jj_bool(res);
    return jj_charge(r, at, s.u.s.n);
}

static ember_status call_str_method(jj_render *r, const jj_node *at, int id, jj_value s,
                                    const jj_value *args, size_t nargs, const jj_kwval *kw,
                                    size_t nkw, jj_value *out) {
    switch (id) {
    case M_FORMAT: return str_format(r, at, s, args, nargs, kw, nkw, out);
    case M_STRIP:
    case M_LSTRIP:
    case M_RSTRIP: {
        BIND("strip", "chars");
        jj_value chars = b.given[0] ? b.v[0] : jj_none();
        if (chars.type != JJ_NONE && (st = need_str(r, at, "chars", chars)) != EMBER_OK) return st;
        return strip(r, at, s, chars, id != M_RSTRIP, id != M_LSTRIP, out);
    }
    case M_SPLIT:
    case M_RSPLIT: {
        BIND("split", "sep", "maxsplit");
        jj_value sep = b.given[0] ? b.v[0] : jj_none();
        if (sep.type != JJ_NONE && (st = need_str(r, at, "sep", sep)) != EMBER_OK) return st;
        int64_t maxsplit = -1;
        if (b.given[1] && (st = need_int(r, at, "maxsplit", b.v[1], &maxsplit)) != EMBER_OK) return st;
        return split(r, at, s, sep, maxsplit, id == M_RSPLIT, out);
    }
    case M_SPLITLINES: {
        BIND("splitlines", "keepends");
        jj_list *l;
        if ((st = splitlines(r, at, s.u.s.p, s.u.s.n, b.given[0] && jj_truthy(b.v[0]), &l)) != EMBER_OK)
            return st;
        *out = jj_list_value(l, false);
        return EMBER_OK;
    }
    case M_STARTSWITH:
    case M_ENDSWITH: {
        BIND(id == M_ENDSWITH ? "endswith" : "startswith", "fix");
        if (!b.given[0]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "startswith/endswith need an argument");
        return str_affix(r, at, id == M_ENDSWITH, s, b.v[0], out);
    }
    case M_REPLACE: {
        BIND("replace", "old", "new", "count");
        if (!b.given[0] || !b.given[1]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "replace needs 2 arguments");
        if ((st = need_str(r, at, "old", b.v[0])) != EMBER_OK) return st;
        if ((st = need_str(r, at, "new", b.v[1])) != EMBER_OK) return st;
        int64_t count = -1;
        if (b.given[2] && (st = need_int(r, at, "count", b.v[2], &count)) != EMBER_OK) return st;
        return replace(r, at, s, b.v[0], b.v[1], count, out);
    }
    case M_FIND:
    case M_RFIND:
    case M_INDEX:
    case M_COUNT: {
        BIND("find", "sub");
        if (!b.given[0]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "a substring is needed");
        return str_search(r, at, id, s, b.v[0], out);
    }
    case M_JOIN: {
        BIND("join", "iterable");
        jj_list *items;
        if ((st = jj_iterate(r, at, b.v[0], &items)) != EMBER_OK) return st;
        jj_buf o = new_buf(r);
        for (size_t k = 0; k < items->n; k++) {
            if (items->items[k].type != JJ_STR) {
                jj_buf_free(&o);
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                               "sequence item %zu: expected str instance, %s found", k,
                               jj_type_name(items->items[k]));
            }
            if (k) jj_buf_put(&o, s.u.s.p, s.u.s.n);
            jj_buf_put(&o, items->items[k].u.s.p, items->items[k].u.s.n);
        }
        return jj_buf_to_value(r, at, &o, out);
    }
    case M_ISALNUM:
    case M_ISALPHA:
    case M_ISDIGIT:
    case M_ISLOWER:
    case M_ISSPACE:
    case M_ISUPPER: {
        NO_ARGS("str.is*");
        return str_is(r, at, id, s, out);
    }
    default: {
        NO_ARGS("this method");
        int mode = id == M_LOWER ? 0 : id == M_UPPER ? 1 : id == M_CAPITALIZE ? 2 : 3;
        return change_case(r, at, s, mode, out);
    }
    }
}

ember_status jj_call_function(jj_render *r, const jj_node *at, jj_value fn,
                              const jj_value *args, size_t nargs, const jj_kwval *kw,
                              size_t nkw, jj_value *out) {
    jj_value self = self_of(fn);
    ember_status st;
    switch (fn.fn) {
    case F_RANGE: return fn_range(r, at, args, nargs, nkw, out);
    case F_NAMESPACE: return fn_dict(r, at, args, nargs, kw, nkw, true, out);
    case F_DICT: return fn_dict(r, at, args, nargs, kw, nkw, false, out);
    case F_RAISE: {
        jj_value msg = nargs ? args[0] : jj_str("", 0);
        if ((st = jj_to_string(r, at, msg, &msg)) != EMBER_OK) return st;
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "raise_exception: %.*s",
                       (int)(msg.u.s.n > 400 ? 400 : msg.u.s.n), msg.u.s.p);
    }
    case F_STRFTIME: return fn_strftime(r, at, args, nargs, nkw, out);
    case M_ITEMS:
    case M_KEYS:
    case M_VALUES: {
        NO_ARGS("dict method");
        const jj_dict *d = self.u.dict;
        jj_list *l = jj_list_new(&r->arena, d->n);
        if (l == NULL) return jj_fail_oom(r, at);
        for (size_t m = 0; m < d->n; m++) {
            if (fn.fn == M_ITEMS) {
                jj_list *pair = jj_list_new(&r->arena, 2);
                if (pair == NULL) return jj_fail_oom(r, at);
                pair->items[0] = d->keys[m];
                pair->items[1] = d->vals[m];
                pair->n = 2;
                l->items[l->n++] = jj_list_value(pair, true);
            } else {
                l->items[l->n++] = fn.fn == M_KEYS ? d->keys[m] : d->vals[m];
            }
        }
        *out = jj_list_value(l, false);
        return jj_charge(r, at, d->n * 16);
    }
    case M_GET: {
        BIND("get", "key", "default");
        if (!b.given[0]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "get expected at least 1 argument");
        const jj_value *v = jj_dict_get(self.u.dict, b.v[0]);
        *out = v ? *v : (b.given[1] ? b.v[1] : jj_none());
        return EMBER_OK;
    }
    case M_LIST_COUNT:
    case M_LIST_INDEX: {
        BIND("list method", "value");
        if (!b.given[0]) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "an argument is needed");
        int64_t count = 0, first = -1;
        for (size_t k = 0; k < self.u.list->n; k++)
            if (jj_equal(self.u.list->items[k], b.v[0])) {
                if (first < 0) first = (int64_t)k;
                count++;
            }
        if (fn.fn == M_LIST_INDEX && first < 0)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "value is not in list");
        *out = jj_int(fn.fn == M_LIST_COUNT ? count : first);
        return jj_charge(r, at, self.u.list->n * 8);
    }
    case M_CYCLE: {
        if (nkw > 0 || nargs == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "no items for cycling given");
        *out = args[self.u.loop->index0 % (int64_t)nargs];
        return EMBER_OK;
    }
    default:
        if (self.type == JJ_STR) return call_str_method(r, at, fn.fn, self, args, nargs, kw, nkw, out);
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "not callable");
    }
}
