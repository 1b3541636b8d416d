/*
 * extension/llm/jinja/jinja_eval.c — runs a syntax tree over a context.
 *
 * Scopes follow jinja2: the template's top level is one frame ("if" opens
 * none); a for loop gives its body a fresh frame on every iteration, so a
 * `set` inside a loop is gone at the next one (hence namespace()); a macro
 * call runs in a frame whose parent is the top level. Names not found in
 * frames come from the context, then from the globals.
 *
 * Every value made while rendering lives in one arena freed at the end;
 * what one loop iteration makes is freed after it, unless the iteration
 * stored something in a namespace (the only way a value outlives its
 * iteration). The arena's limit, the output limit, the step count and the
 * recursion depth bound what a template can make the engine do.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

typedef struct frame_var {
    const char *p;
    size_t n;
    jj_value v;
} frame_var;

struct jj_frame {
    jj_frame *parent;
    frame_var *vars; /* (cap) */
    size_t n, cap;
};

enum { FLOW_NONE, FLOW_BREAK, FLOW_CONTINUE };

/* ------------------------------------------------------------------------ */
/* Errors and limits                                                         */
/* ------------------------------------------------------------------------ */

ember_status jj_fail(jj_render *r, const jj_node *at, ember_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unsigned line = at ? (unsigned)at->line : 0, col = at ? (unsigned)at->col : 0;
    return ember_error_set(st, "%s:%u:%u: %s", r->tpl->name, line, col, msg);
}

ember_status jj_fail_oom(jj_render *r, const jj_node *at) {
    return jj_fail(r, at, EMBER_ERR_OUT_OF_MEMORY,
                   "out of memory (values made while rendering are limited to %zu bytes)",
                   r->arena.limit);
}

ember_status jj_fail_undefined(jj_render *r, const jj_node *at, jj_value v) {
    if (v.type == JJ_UNDEF && v.u.s.n > 0)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "%.*s", (int)v.u.s.n, v.u.s.p);
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "undefined value used");
}

ember_status jj_charge(jj_render *r, const jj_node *at, uint64_t bytes) {
    r->steps += 1 + bytes / 64;
    if (r->steps > r->max_steps)
        return jj_fail(r, at, EMBER_ERR_LOOP_LIMIT,
                       "the template ran past the limit of %llu evaluation steps",
                       (unsigned long long)r->max_steps);
    return EMBER_OK;
}

static ember_status enter(jj_render *r, const jj_node *at) {
    if (r->depth >= r->max_depth)
        return jj_fail(r, at, EMBER_ERR_LOOP_LIMIT,
                       "recursion deeper than %zu (nested expressions, blocks and macro calls)",
                       r->max_depth);
    r->depth++;
    return jj_charge(r, at, 0);
}

static void leave(jj_render *r) { r->depth--; }

/* The status for a buffer that failed. */
static ember_status buf_failed(jj_render *r, const jj_node *at, const jj_buf *b) {
    if (b->over)
        return jj_fail(r, at, EMBER_ERR_OUT_OF_MEMORY, "output larger than the limit of %zu bytes",
                       b->limit);
    return jj_fail(r, at, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
}

ember_status jj_buf_to_value(jj_render *r, const jj_node *at, jj_buf *b, jj_value *out) {
    if (b->over || b->oom) {
        ember_status st = buf_failed(r, at, b);
        jj_buf_free(b);
        return st;
    }
    char *p = jj_strdup(&r->arena, b->p ? b->p : "", b->n);
    size_t n = b->n;
    jj_buf_free(b);
    if (p == NULL) return jj_fail_oom(r, at);
    *out = jj_str(p, n);
    return jj_charge(r, at, n);
}

ember_status jj_to_string(jj_render *r, const jj_node *at, jj_value v, jj_value *out) {
    if (v.type == JJ_STR) {
        *out = v;
        return EMBER_OK;
    }
    jj_buf b = {NULL, 0, 0, r->max_output, false, false};
    jj_write_str(&b, v);
    return jj_buf_to_value(r, at, &b, out);
}

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */
/* ------------------------------------------------------------------------ */

static jj_frame *frame_new(jj_render *r, jj_frame *parent) {
    jj_frame *f = jj_alloc(&r->arena, sizeof *f);
    if (f == NULL) return NULL;
    f->parent = parent;
    f->vars = NULL;
    f->n = f->cap = 0;
    return f;
}

static bool frame_set(jj_render *r, jj_frame *f, const char *p, size_t n, jj_value v) {
    for (size_t k = 0; k < f->n; k++)
        if (f->vars[k].n == n && memcmp(f->vars[k].p, p, n) == 0) {
            f->vars[k].v = v;
            return true;
        }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        frame_var *vars = jj_alloc_array(&r->arena, cap, sizeof *vars);
        if (vars == NULL) return false;
        if (f->n) memcpy(vars, f->vars, f->n * sizeof *vars);
        f->vars = vars;
        f->cap = cap;
    }
    f->vars[f->n].p = p;
    f->vars[f->n].n = n;
    f->vars[f->n].v = v;
    f->n++;
    return true;
}

static const jj_value *frame_get(const jj_frame *f, const char *p, size_t n) {
    for (; f != NULL; f = f->parent)
        for (size_t k = f->n; k-- > 0;)
            if (f->vars[k].n == n && memcmp(f->vars[k].p, p, n) == 0) return &f->vars[k].v;
    return NULL;
}

static ember_status lookup(jj_render *r, const jj_node *at, jj_frame *f, const char *p, size_t n,
                           jj_value *out) {
    const jj_value *v = frame_get(f, p, n);
    if (v == NULL && r->vars != NULL) v = jj_dict_get_str(r->vars, p, n);
    if (v != NULL) {
        *out = *v;
        return EMBER_OK;
    }
    if (jj_global(p, n, out)) return EMBER_OK;
    char msg[128];
    int len = snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)(n > 64 ? 64 : n), p);
    char *why = jj_strdup(&r->arena, msg, (size_t)len);
    if (why == NULL) return jj_fail_oom(r, at);
    *out = jj_undef(why);
    return EMBER_OK;
}

/* An undefined value explaining that obj has no attribute/item name. */
static ember_status no_attr(jj_render *r, const jj_node *at, jj_value obj, const char *name,
                            size_t n, jj_value *out) {
    char msg[160];
    const char *tn = jj_type_name(obj);
    int len;
    if (obj.type == JJ_NONE)
        len = snprintf(msg, sizeof msg, "'None' has no attribute '%.*s'", (int)(n > 64 ? 64 : n), name);
    else
        len = snprintf(msg, sizeof msg, "'%s object' has no attribute '%.*s'", tn,
                       (int)(n > 64 ? 64 : n), name);
    char *why = jj_strdup(&r->arena, msg, (size_t)len);
    if (why == NULL) return jj_fail_oom(r, at);
    *out = jj_undef(why);
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Attributes, items, iteration                                              */
/* ------------------------------------------------------------------------ */

static jj_value loop_item(const jj_loop *l, int64_t k) {
    if (k < 0 || k >= l->length) return jj_undef(NULL);
    return l->items[k];
}

static bool loop_attr(const jj_loop *l, const char *p, size_t n, jj_value *out) {
#define IS(w) (n == sizeof(w) - 1 && memcmp(p, w, n) == 0)
    if (IS("index")) *out = jj_int(l->index0 + 1);
    else if (IS("index0")) *out = jj_int(l->index0);
    else if (IS("revindex")) *out = jj_int(l->length - l->index0);
    else if (IS("revindex0")) *out = jj_int(l->length - l->index0 - 1);
    else if (IS("first")) *out = jj_bool(l->index0 == 0);
    else if (IS("last")) *out = jj_bool(l->index0 == l->length - 1);
    else if (IS("length")) *out = jj_int(l->length);
    else if (IS("depth")) *out = jj_int(1);
    else if (IS("depth0")) *out = jj_int(0);
    else if (IS("previtem")) *out = loop_item(l, l->index0 - 1);
    else if (IS("nextitem")) *out = loop_item(l, l->index0 + 1);
    else return false;
    return true;
#undef IS
}

ember_status jj_getattr(jj_render *r, const jj_node *at, jj_value obj, const char *name,
                        size_t n, jj_value *out) {
    switch (obj.type) {
    case JJ_UNDEF: return jj_fail_undefined(r, at, obj);
    case JJ_DICT: {
        if (jj_method(obj, name, n, out)) return EMBER_OK;
        const jj_value *v = jj_dict_get_str(obj.u.dict, name, n);
        if (v != NULL) {
            *out = *v;
            return EMBER_OK;
        }
        break;
    }
    case JJ_NS: {
        const jj_value *v = jj_dict_get_str(obj.u.dict, name, n);
        if (v != NULL) {
            *out = *v;
            return EMBER_OK;
        }
        break;
    }
    case JJ_LOOP:
        if (loop_attr(obj.u.loop, name, n, out)) return EMBER_OK;
        if (jj_method(obj, name, n, out)) return EMBER_OK;
        break;
    default:
        if (jj_method(obj, name, n, out)) return EMBER_OK;
        break;
    }
    return no_attr(r, at, obj, name, n, out);
}

/* Python's index of a list / string of len items: wraps negatives; false
 * when out of range. */
static bool wrap_index(int64_t i, size_t len, size_t *k) {
    if (i < 0) i += (int64_t)len;
    if (i < 0 || (uint64_t)i >= len) return false;
    *k = (size_t)i;
    return true;
}

ember_status jj_getitem(jj_render *r, const jj_node *at, jj_value obj, jj_value key,
                        jj_value *out) {
    bool int_key = key.type == JJ_INT || key.type == JJ_BOOL;
    int64_t ki = key.type == JJ_BOOL ? (int64_t)key.u.b : key.u.i;
    switch (obj.type) {
    case JJ_UNDEF: return jj_fail_undefined(r, at, obj);
    case JJ_DICT: {
        const jj_value *v = jj_dict_get(obj.u.dict, key);
        if (v != NULL) {
            *out = *v;
            return EMBER_OK;
        }
        break;
    }
    case JJ_LIST:
        if (int_key) {
            size_t k;
            if (wrap_index(ki, obj.u.list->n, &k)) {
                *out = obj.u.list->items[k];
                return EMBER_OK;
            }
        }
        break;
    case JJ_STR:
        if (int_key) {
            size_t len = jj_utf8_count(obj.u.s.p, obj.u.s.n), k;
            if (wrap_index(ki, len, &k)) {
                size_t b = jj_utf8_offset(obj.u.s.p, obj.u.s.n, k);
                size_t e = jj_utf8_offset(obj.u.s.p + b, obj.u.s.n - b, 1) + b;
                *out = jj_str(obj.u.s.p + b, e - b);
                return jj_charge(r, at, obj.u.s.n);
            }
        }
        break;
    default: break;
    }
    /* jinja2 then tries the key as an attribute name. */
    if (key.type == JJ_STR) return jj_getattr(r, at, obj, key.u.s.p, key.u.s.n, out);
    char msg[64];
    snprintf(msg, sizeof msg, "'%s object' has no item of that key", jj_type_name(obj));
    char *why = jj_strdup(&r->arena, msg, strlen(msg));
    if (why == NULL) return jj_fail_oom(r, at);
    *out = jj_undef(why);
    return EMBER_OK;
}

ember_status jj_iterate(jj_render *r, const jj_node *at, jj_value v, jj_list **out) {
    switch (v.type) {
    case JJ_LIST: *out = v.u.list; return EMBER_OK;
    case JJ_UNDEF: {
        jj_list *l = jj_list_new(&r->arena, 0);
        if (l == NULL) return jj_fail_oom(r, at);
        *out = l;
        return EMBER_OK;
    }
    case JJ_DICT: {
        jj_list *l = jj_list_new(&r->arena, v.u.dict->n);
        if (l == NULL) return jj_fail_oom(r, at);
        for (size_t m = 0; m < v.u.dict->n; m++) l->items[l->n++] = v.u.dict->keys[m];
        *out = l;
        return jj_charge(r, at, v.u.dict->n * 8);
    }
    case JJ_STR: {
        size_t count = jj_utf8_count(v.u.s.p, v.u.s.n);
        jj_list *l = jj_list_new(&r->arena, count);
        if (l == NULL) return jj_fail_oom(r, at);
        for (size_t i = 0; i < v.u.s.n;) {
            uint32_t cp;
            size_t len = jj_utf8_next(v.u.s.p + i, v.u.s.n - i, &cp);
            l->items[l->n++] = jj_str(v.u.s.p + i, len);
            i += len;
        }
        *out = l;
        return jj_charge(r, at, v.u.s.n * 8);
    }
    default:
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "'%s' object is not iterable",
                       jj_type_name(v));
    }
}

/* Python's slice.indices(): the start, the step and the count of items. */
static ember_status slice_range(jj_render *r, const jj_node *at, const jj_value *sv, size_t len,
                                int64_t *start_out, int64_t *step_out, size_t *count_out) {
    int64_t vals[3];
    bool given[3];
    for (int k = 0; k < 3; k++) {
        given[k] = sv[k].type != JJ_NONE;
        if (sv[k].type == JJ_NONE) {
            vals[k] = 0;
        } else if (sv[k].type == JJ_INT || sv[k].type == JJ_BOOL) {
            vals[k] = sv[k].type == JJ_BOOL ? sv[k].u.b : sv[k].u.i;
        } else {
            if (sv[k].type == JJ_UNDEF) return jj_fail_undefined(r, at, sv[k]);
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "slice indices must be integers or None");
        }
    }
    int64_t step = given[2] ? vals[2] : 1;
    if (step == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    int64_t n = (int64_t)len;
    int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
    int64_t start, stop;
    if (!given[0]) {
        start = step < 0 ? upper : lower;
    } else {
        start = vals[0];
        if (start < 0) start = start < -n ? lower : start + n;
        if (start < lower) start = lower;
        if (start > upper) start = upper;
    }
    if (!given[1]) {
        stop = step < 0 ? lower : upper;
    } else {
        stop = vals[1];
        if (stop < 0) stop = stop < -n ? lower : stop + n;
        if (stop < lower) stop = lower;
        if (stop > upper) stop = upper;
    }
    size_t count = 0;
    if (step > 0 && start < stop) count = (size_t)((stop - start - 1) / step + 1);
    if (step < 0 && start > stop) count = (size_t)((start - stop - 1) / (-step) + 1);
    *start_out = start;
    *step_out = step;
    *count_out = count;
    return EMBER_OK;
}

static ember_status do_slice(jj_render *r, const jj_node *at, jj_value obj, const jj_value *sv,
                             jj_value *out) {
    if (obj.type == JJ_UNDEF) return jj_fail_undefined(r, at, obj);
    if (obj.type == JJ_LIST) {
        int64_t start, step;
        size_t count;
        ember_status st = slice_range(r, at, sv, obj.u.list->n, &start, &step, &count);
        if (st != EMBER_OK) return st;
        jj_list *l = jj_list_new(&r->arena, count);
        if (l == NULL) return jj_fail_oom(r, at);
        for (size_t k = 0; k < count; k++) l->items[l->n++] = obj.u.list->items[start + (int64_t)k * step];
        *out = jj_list_value(l, (obj.flags & JJ_F_TUPLE) != 0);
        return jj_charge(r, at, count * 8);
    }
    if (obj.type == JJ_STR) {
        size_t len = jj_utf8_count(obj.u.s.p, obj.u.s.n);
        int64_t start, step;
        size_t count;
        ember_status st = slice_range(r, at, sv, len, &start, &step, &count);
        if (st != EMBER_OK) return st;
        if (step == 1) {
            size_t b = jj_utf8_offset(obj.u.s.p, obj.u.s.n, (size_t)start);
            size_t e = b + jj_utf8_offset(obj.u.s.p + b, obj.u.s.n - b, count);
            *out = jj_str(obj.u.s.p + b, e - b);
            return jj_charge(r, at, obj.u.s.n);
        }
        /* Code point offsets, then pick. */
        size_t *offs = jj_alloc_array(&r->arena, len + 1, sizeof *offs);
        char *buf = jj_alloc(&r->arena, obj.u.s.n + 1);
        if (offs == NULL || buf == NULL) return jj_fail_oom(r, at);
        size_t k = 0;
        for (size_t i = 0; i < obj.u.s.n;) {
            uint32_t cp;
            offs[k++] = i;
            i += jj_utf8_next(obj.u.s.p + i, obj.u.s.n - i, &cp);
        }
        offs[len] = obj.u.s.n;
        size_t o = 0;
        for (size_t c = 0; c < count; c++) {
            size_t idx = (size_t)(start + (int64_t)c * step);
            size_t cl = offs[idx + 1] - offs[idx];
            memcpy(buf + o, obj.u.s.p + offs[idx], cl);
            o += cl;
        }
        *out = jj_str(buf, o);
        return jj_charge(r, at, obj.u.s.n * 4);
    }
    *out = jj_undef("this object cannot be sliced");
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Operators                                                                 */
/* ------------------------------------------------------------------------ */

static bool is_num(jj_value v) { return v.type == JJ_BOOL || v.type == JJ_INT || v.type == JJ_FLOAT; }
static bool is_intlike(jj_value v) { return v.type == JJ_BOOL || v.type == JJ_INT; }
static int64_t ival(jj_value v) { return v.type == JJ_BOOL ? (int64_t)v.u.b : v.u.i; }
static double fval(jj_value v) { return v.type == JJ_FLOAT ? v.u.f : (double)ival(v); }

static ember_status overflow(jj_render *r, const jj_node *at) {
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                   "integer overflow (integers are 64-bit here)");
}

static ember_status bad_operands(jj_render *r, const jj_node *at, const char *op, jj_value a,
                                 jj_value b) {
    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                   "unsupported operand type(s) for %s: '%s' and '%s'", op, jj_type_name(a),
                   jj_type_name(b));
}

/* Repeats s count times (count <= 0: empty). */
static ember_status repeat(jj_render *r, const jj_node *at, jj_value s, int64_t count,
                           jj_value *out) {
    if (count <= 0) {
        *out = s.type == JJ_STR ? jj_str("", 0) : jj_list_value(jj_list_new(&r->arena, 0), s.flags);
        if (s.type == JJ_LIST && out->u.list == NULL) return jj_fail_oom(r, at);
        return EMBER_OK;
    }
    size_t unit = s.type == JJ_STR ? s.u.s.n : s.u.list->n * sizeof(jj_value);
    if (unit != 0 && (uint64_t)count > (uint64_t)(r->arena.limit / unit))
        return jj_fail_oom(r, at);
    ember_status st = jj_charge(r, at, unit * (uint64_t)count);
    if (st != EMBER_OK) return st;
    if (s.type == JJ_STR) {
        size_t n = s.u.s.n * (size_t)count;
        char *p = jj_alloc(&r->arena, n + 1);
        if (p == NULL) return jj_fail_oom(r, at);
        for (int64_t k = 0; k < count; k++) memcpy(p + (size_t)k * s.u.s.n, s.u.s.p, s.u.s.n);
        *out = jj_str(p, n);
        return EMBER_OK;
    }
    size_t n = s.u.list->n * (size_t)count;
    jj_list *l = jj_list_new(&r->arena, n);
    if (l == NULL) return jj_fail_oom(r, at);
    for (int64_t k = 0; k < count; k++)
        for (size_t i = 0; i < s.u.list->n; i++) l->items[l->n++] = s.u.list->items[i];
    *out = jj_list_value(l, (s.flags & JJ_F_TUPLE) != 0);
    return EMBER_OK;
}

/* Python's float floor division and modulo. */
static void float_divmod(double vx, double wx, double *floordiv, double *modulo) {
    double mod = fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, wx);
    }
    double fd;
    if (div != 0) {
        fd = floor(div);
        if (div - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, vx / wx);
    }
    *floordiv = fd;
    *modulo = mod;
}

static ember_status int_pow(jj_render *r, const jj_node *at, int64_t base, int64_t e,
                            jj_value *out) {
    int64_t result = 1;
    while (e > 0) {
        if ((e & 1) && !jj_mul_i64(result, base, &result)) return overflow(r, at);
        e >>= 1;
        if (e > 0 && !jj_mul_i64(base, base, &base)) return overflow(r, at);
    }
    *out = jj_int(result);
    return EMBER_OK;
}

static ember_status binop(jj_render *r, const jj_node *at, int op, jj_value a, jj_value b,
                          jj_value *out) {
    static const char *const names[] = {"+", "-", "/", "//", "*", "%", "**"};
    const char *name = op <= OP_POW ? names[op] : "?";
    if (a.type == JJ_UNDEF) return jj_fail_undefined(r, at, a);
    if (b.type == JJ_UNDEF) return jj_fail_undefined(r, at, b);
    if (op == OP_ADD) {
        if (a.type == JJ_STR && b.type == JJ_STR) {
            size_t n = a.u.s.n + b.u.s.n;
            char *p = jj_alloc(&r->arena, n + 1);
            if (p == NULL) return jj_fail_oom(r, at);
            memcpy(p, a.u.s.p, a.u.s.n);
            memcpy(p + a.u.s.n, b.u.s.p, b.u.s.n);
            *out = jj_str(p, n);
            return jj_charge(r, at, n);
        }
        if (a.type == JJ_LIST && b.type == JJ_LIST && (a.flags & JJ_F_TUPLE) == (b.flags & JJ_F_TUPLE)) {
            jj_list *l = jj_list_new(&r->arena, a.u.list->n + b.u.list->n);
            if (l == NULL) return jj_fail_oom(r, at);
            for (size_t i = 0; i < a.u.list->n; i++) l->items[l->n++] = a.u.list->items[i];
            for (size_t i = 0; i < b.u.list->n; i++) l->items[l->n++] = b.u.list->items[i];
            *out = jj_list_value(l, (a.flags & JJ_F_TUPLE) != 0);
            return jj_charge(r, at, l->n * 8);
        }
    }
    if (op == OP_MUL) {
        if ((a.type == JJ_STR || a.type == JJ_LIST) && is_intlike(b)) return repeat(r, at, a, ival(b), out);
        if ((b.type == JJ_STR || b.type == JJ_LIST) && is_intlike(a)) return repeat(r, at, b, ival(a), out);
    }
    if (op == OP_MOD && a.type == JJ_STR) return jj_percent_format(r, at, a, b, out);
    if (!is_num(a) || !is_num(b)) return bad_operands(r, at, name, a, b);

    if (is_intlike(a) && is_intlike(b)) {
        int64_t x = ival(a), y = ival(b), z;
        switch (op) {
        case OP_ADD:
            if (!jj_add_i64(x, y, &z)) return overflow(r, at);
            *out = jj_int(z);
            return EMBER_OK;
        case OP_SUB:
            if (!jj_sub_i64(x, y, &z)) return overflow(r, at);
            *out = jj_int(z);
            return EMBER_OK;
        case OP_MUL:
            if (!jj_mul_i64(x, y, &z)) return overflow(r, at);
            *out = jj_int(z);
            return EMBER_OK;
        case OP_DIV:
            if (y == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "division by zero");
            *out = jj_float((double)x / (double)y);
            return EMBER_OK;
        case OP_FLOORDIV:
        case OP_MOD: {
            if (y == 0)
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) {
                if (op == OP_FLOORDIV) return overflow(r, at);
                *out = jj_int(0);
                return EMBER_OK;
            }
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                q -= 1;
                m += y;
            }
            *out = jj_int(op == OP_FLOORDIV ? q : m);
            return EMBER_OK;
        }
        case OP_POW:
            if (y >= 0) return int_pow(r, at, x, y, out);
            if (x == 0)
                return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                               "0.0 cannot be raised to a negative power");
            *out = jj_float(pow((double)x, (double)y));
            return EMBER_OK;
        default: return bad_operands(r, at, name, a, b);
        }
    }
    double x = fval(a), y = fval(b);
    switch (op) {
    case OP_ADD: *out = jj_float(x + y); return EMBER_OK;
    case OP_SUB: *out = jj_float(x - y); return EMBER_OK;
    case OP_MUL: *out = jj_float(x * y); return EMBER_OK;
    case OP_DIV:
        if (y == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "float division by zero");
        *out = jj_float(x / y);
        return EMBER_OK;
    case OP_FLOORDIV:
    case OP_MOD: {
        if (y == 0) return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "float modulo or division by zero");
        double fd, md;
        float_divmod(x, y, &fd, &md);
        *out = jj_float(op == OP_FLOORDIV ? fd : md);
        return EMBER_OK;
    }
    case OP_POW: {
        if (x == 0 && y < 0)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "0.0 cannot be raised to a negative power");
        if (x < 0 && y != floor(y) && isfinite(y))
            return jj_fail(r, at, EMBER_ERR_NOT_SUPPORTED, "complex results are not supported");
        double z = pow(x, y);
        if (isinf(z) && isfinite(x) && isfinite(y))
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "numerical result out of range");
        *out = jj_float(z);
        return EMBER_OK;
    }
    default: return bad_operands(r, at, name, a, b);
    }
}

static ember_status contains(jj_render *r, const jj_node *at, jj_value container, jj_value item,
                             bool *out) {
    switch (container.type) {
    case JJ_STR: {
        if (item.type == JJ_UNDEF) return jj_fail_undefined(r, at, item);
        if (item.type != JJ_STR)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "'in <string>' requires string as left operand, not %s",
                           jj_type_name(item));
        const char *h = container.u.s.p;
        size_t hn = container.u.s.n, nn = item.u.s.n;
        *out = false;
        if (nn == 0) {
            *out = true;
        } else {
            for (size_t i = 0; i + nn <= hn; i++)
                if (h[i] == item.u.s.p[0] && memcmp(h + i, item.u.s.p, nn) == 0) {
                    *out = true;
                    break;
                }
        }
        return jj_charge(r, at, hn);
    }
    case JJ_LIST:
        *out = false;
        for (size_t i = 0; i < container.u.list->n; i++)
            if (jj_equal(container.u.list->items[i], item)) {
                *out = true;
                break;
            }
        return jj_charge(r, at, container.u.list->n * 8);
    case JJ_DICT: *out = jj_dict_get(container.u.dict, item) != NULL; return EMBER_OK;
    case JJ_UNDEF: *out = false; return EMBER_OK;
    default:
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "argument of type '%s' is not iterable",
                       jj_type_name(container));
    }
}

static ember_status compare(jj_render *r, const jj_node *at, int op, jj_value a, jj_value b,
                            bool *out) {
    if (op == OP_EQ || op == OP_NE) {
        bool eq = jj_equal(a, b);
        *out = op == OP_EQ ? eq : !eq;
        return EMBER_OK;
    }
    if (op == CMP_IN || op == CMP_NOTIN) {
        ember_status st = contains(r, at, b, a, out);
        if (op == CMP_NOTIN) *out = !*out;
        return st;
    }
    if (a.type == JJ_UNDEF) return jj_fail_undefined(r, at, a);
    if (b.type == JJ_UNDEF) return jj_fail_undefined(r, at, b);
    bool less;
    jj_value x = a, y = b;
    if (op == OP_GT || op == OP_GTEQ) {
        x = b;
        y = a;
    }
    if (jj_less(x, y, &less) != 0) {
        static const char *const sym[] = {[OP_LT] = "<", [OP_LTEQ] = "<=", [OP_GT] = ">",
                                          [OP_GTEQ] = ">="};
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                       "'%s' not supported between instances of '%s' and '%s'", sym[op],
                       jj_type_name(a), jj_type_name(b));
    }
    if (op == OP_LTEQ || op == OP_GTEQ) less = less || jj_equal(x, y);
    *out = less;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */
/* ------------------------------------------------------------------------ */

static ember_status eval(jj_render *r, const jj_node *n, jj_frame *f, jj_value *out);
static ember_status exec_body(jj_render *r, const jj_nodes *body, jj_frame *f, int *flow);

static ember_status eval_args(jj_render *r, const jj_node *n, jj_frame *f, jj_value **args,
                              jj_kwval **kw) {
    *args = NULL;
    *kw = NULL;
    if (n->u.call.args.n > 0) {
        *args = jj_alloc_array(&r->arena, n->u.call.args.n, sizeof **args);
        if (*args == NULL) return jj_fail_oom(r, n);
        for (size_t k = 0; k < n->u.call.args.n; k++) {
            ember_status st = eval(r, n->u.call.args.v[k], f, &(*args)[k]);
            if (st != EMBER_OK) return st;
        }
    }
    if (n->u.call.nkw > 0) {
        *kw = jj_alloc_array(&r->arena, n->u.call.nkw, sizeof **kw);
        if (*kw == NULL) return jj_fail_oom(r, n);
        for (size_t k = 0; k < n->u.call.nkw; k++) {
            (*kw)[k].name = n->u.call.kw[k].name;
            (*kw)[k].len = n->u.call.kw[k].len;
            ember_status st = eval(r, n->u.call.kw[k].value, f, &(*kw)[k].value);
            if (st != EMBER_OK) return st;
        }
    }
    return EMBER_OK;
}

static ember_status call_macro(jj_render *r, const jj_node *at, const jj_closure *c,
                               const jj_value *args, size_t nargs, const jj_kwval *kw, size_t nkw,
                               jj_value *out) {
    const jj_node *m = c->node;
    size_t np = m->u.macro.params.n;
    if (nargs > np && !m->u.macro.varargs)
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                       "macro '%.*s' takes not more than %zu argument(s)", (int)m->u.macro.n,
                       m->u.macro.p, np);
    jj_frame *mf = frame_new(r, c->frame ? c->frame : r->root);
    jj_dict *extra_kw = m->u.macro.kwargs ? jj_dict_new(&r->arena) : NULL;
    if (mf == NULL || (m->u.macro.kwargs && extra_kw == NULL)) return jj_fail_oom(r, at);
    for (size_t k = 0; k < nkw; k++) {
        if (m->u.macro.caller && kw[k].len == 6 && memcmp(kw[k].name, "caller", 6) == 0) {
            if (!frame_set(r, mf, "caller", 6, kw[k].value)) return jj_fail_oom(r, at);
            continue;
        }
        bool is_param = false;
        for (size_t i = 0; i < np; i++) {
            const jj_node *pn = m->u.macro.params.v[i];
            if (pn->u.name.n == kw[k].len && memcmp(pn->u.name.p, kw[k].name, kw[k].len) == 0) {
                if (i < nargs)
                    return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                                   "macro '%.*s' got multiple values for argument '%.*s'",
                                   (int)m->u.macro.n, m->u.macro.p, (int)kw[k].len, kw[k].name);
                is_param = true;
            }
        }
        if (is_param) continue;
        if (extra_kw == NULL)
            return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT,
                           "macro '%.*s' takes no keyword argument '%.*s'", (int)m->u.macro.n,
                           m->u.macro.p, (int)kw[k].len, kw[k].name);
        if (!jj_dict_set(&r->arena, extra_kw, jj_str(kw[k].name, kw[k].len), kw[k].value))
            return jj_fail_oom(r, at);
    }
    for (size_t i = 0; i < np; i++) {
        const jj_node *pn = m->u.macro.params.v[i];
        jj_value v;
        bool have = false;
        if (i < nargs) {
            v = args[i];
            have = true;
        }
        for (size_t k = 0; !have && k < nkw; k++)
            if (pn->u.name.n == kw[k].len && memcmp(pn->u.name.p, kw[k].name, kw[k].len) == 0) {
                v = kw[k].value;
                have = true;
            }
        if (!have) {
            const jj_node *def = m->u.macro.defaults.v[i];
            if (def != NULL) {
                ember_status st = eval(r, def, mf, &v);
                if (st != EMBER_OK) return st;
            } else {
                char msg[128];
                int len = snprintf(msg, sizeof msg, "parameter '%.*s' was not provided",
                                   (int)(pn->u.name.n > 64 ? 64 : pn->u.name.n), pn->u.name.p);
                char *why = jj_strdup(&r->arena, msg, (size_t)len);
                if (why == NULL) return jj_fail_oom(r, at);
                v = jj_undef(why);
            }
        }
        if (!frame_set(r, mf, pn->u.name.p, pn->u.name.n, v)) return jj_fail_oom(r, at);
    }
    if (m->u.macro.varargs) {
        size_t extra = nargs > np ? nargs - np : 0;
        jj_list *l = jj_list_new(&r->arena, extra);
        if (l == NULL) return jj_fail_oom(r, at);
        for (size_t i = np; i < nargs; i++) l->items[l->n++] = args[i];
        if (!frame_set(r, mf, "varargs", 7, jj_list_value(l, true))) return jj_fail_oom(r, at);
    }
    if (extra_kw != NULL) {
        jj_value d = jj_none();
        d.type = JJ_DICT;
        d.u.dict = extra_kw;
        if (!frame_set(r, mf, "kwargs", 6, d)) return jj_fail_oom(r, at);
    }
    jj_buf buf = {NULL, 0, 0, r->max_output, false, false};
    jj_buf *saved = r->out;
    r->out = &buf;
    int flow = FLOW_NONE;
    ember_status st = exec_body(r, &m->u.macro.body, mf, &flow);
    r->out = saved;
    if (st != EMBER_OK) {
        jj_buf_free(&buf);
        return st;
    }
    return jj_buf_to_value(r, at, &buf, out);
}

ember_status jj_call(jj_render *r, const jj_node *at, jj_value fn, const jj_value *args,
                     size_t nargs, const jj_kwval *kw, size_t nkw, jj_value *out) {
    switch (fn.type) {
    case JJ_FUNC: return jj_call_function(r, at, fn, args, nargs, kw, nkw, out);
    case JJ_MACRO: return call_macro(r, at, fn.u.macro, args, nargs, kw, nkw, out);
    case JJ_UNDEF: return jj_fail_undefined(r, at, fn);
    default:
        return jj_fail(r, at, EMBER_ERR_INVALID_ARGUMENT, "'%s' object is not callable",
                       jj_type_name(fn));
    }
}

static ember_status eval_inner(jj_render *r, const jj_node *n, jj_frame *f, jj_value *out) {
    ember_status st;
    switch (n->kind) {
    case N_CONST: *out = n->u.cst; return EMBER_OK;
    case N_NAME: return lookup(r, n, f, n->u.name.p, n->u.name.n, out);
    case N_LIST:
    case N_TUPLE: {
        jj_list *l = jj_list_new(&r->arena, n->u.items.n);
        if (l == NULL) return jj_fail_oom(r, n);
        for (size_t k = 0; k < n->u.items.n; k++) {
            if ((st = eval(r, n->u.items.v[k], f, &l->items[k])) != EMBER_OK) return st;
            l->n++;
        }
        *out = jj_list_value(l, n->kind == N_TUPLE);
        return EMBER_OK;
    }
    case N_DICT: {
        jj_dict *d = jj_dict_new(&r->arena);
        if (d == NULL) return jj_fail_oom(r, n);
        for (size_t k = 0; k + 1 < n->u.items.n; k += 2) {
            jj_value key, val;
            if ((st = eval(r, n->u.items.v[k], f, &key)) != EMBER_OK) return st;
            if ((st = eval(r, n->u.items.v[k + 1], f, &val)) != EMBER_OK) return st;
            if (key.type == JJ_LIST && !(key.flags & JJ_F_TUPLE))
                return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "unhashable type: 'list'");
            if (key.type == JJ_DICT || key.type == JJ_NS)
                return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "unhashable type: '%s'",
                               jj_type_name(key));
            if (!jj_dict_set(&r->arena, d, key, val)) return jj_fail_oom(r, n);
        }
        *out = jj_none();
        out->type = JJ_DICT;
        out->u.dict = d;
        return EMBER_OK;
    }
    case N_GETATTR: {
        jj_value obj;
        if ((st = eval(r, n->u.attr.obj, f, &obj)) != EMBER_OK) return st;
        return jj_getattr(r, n, obj, n->u.attr.p, n->u.attr.n, out);
    }
    case N_GETITEM: {
        jj_value obj;
        if ((st = eval(r, n->u.item.obj, f, &obj)) != EMBER_OK) return st;
        const jj_node *key = n->u.item.key;
        if (key->kind == N_SLICE) {
            jj_value sv[3] = {jj_none(), jj_none(), jj_none()};
            const jj_node *parts[3] = {key->u.slice.start, key->u.slice.stop, key->u.slice.step};
            for (int k = 0; k < 3; k++)
                if (parts[k] != NULL && (st = eval(r, parts[k], f, &sv[k])) != EMBER_OK) return st;
            return do_slice(r, n, obj, sv, out);
        }
        jj_value k;
        if ((st = eval(r, key, f, &k)) != EMBER_OK) return st;
        return jj_getitem(r, n, obj, k, out);
    }
    case N_SLICE: return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "a slice outside [ ]");
    case N_CALL: {
        jj_value fn;
        jj_value *args;
        jj_kwval *kw;
        if ((st = eval(r, n->u.call.fn, f, &fn)) != EMBER_OK) return st;
        if ((st = eval_args(r, n, f, &args, &kw)) != EMBER_OK) return st;
        return jj_call(r, n, fn, args, n->u.call.args.n, kw, n->u.call.nkw, out);
    }
    case N_FILTER: {
        jj_value v;
        jj_value *args;
        jj_kwval *kw;
        if ((st = eval(r, n->u.call.fn, f, &v)) != EMBER_OK) return st;
        if ((st = eval_args(r, n, f, &args, &kw)) != EMBER_OK) return st;
        return jj_apply_filter(r, n, n->id, v, args, n->u.call.args.n, kw, n->u.call.nkw, out);
    }
    case N_TEST: {
        jj_value v;
        jj_value *args;
        jj_kwval *kw;
        bool res;
        if ((st = eval(r, n->u.call.fn, f, &v)) != EMBER_OK) return st;
        if ((st = eval_args(r, n, f, &args, &kw)) != EMBER_OK) return st;
        st = jj_apply_test(r, n, n->id, v, args, n->u.call.args.n, kw, n->u.call.nkw, &res);
        if (st != EMBER_OK) return st;
        *out = jj_bool(n->op ? !res : res);
        return EMBER_OK;
    }
    case N_NOT: {
        jj_value a;
        if ((st = eval(r, n->u.bin.a, f, &a)) != EMBER_OK) return st;
        *out = jj_bool(!jj_truthy(a));
        return EMBER_OK;
    }
    case N_NEG:
    case N_POS: {
        jj_value a;
        if ((st = eval(r, n->u.bin.a, f, &a)) != EMBER_OK) return st;
        if (a.type == JJ_UNDEF) return jj_fail_undefined(r, n, a);
        if (!is_num(a))
            return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "bad operand type for unary %s: '%s'",
                           n->kind == N_NEG ? "-" : "+", jj_type_name(a));
        if (n->kind == N_POS) {
            *out = a.type == JJ_BOOL ? jj_int(a.u.b) : a;
        } else if (a.type == JJ_FLOAT) {
            *out = jj_float(-a.u.f);
        } else {
            int64_t i = ival(a);
            if (i == INT64_MIN) return overflow(r, n);
            *out = jj_int(-i);
        }
        return EMBER_OK;
    }
    case N_BINOP: {
        jj_value a, b;
        if ((st = eval(r, n->u.bin.a, f, &a)) != EMBER_OK) return st;
        if ((st = eval(r, n->u.bin.b, f, &b)) != EMBER_OK) return st;
        return binop(r, n, n->op, a, b, out);
    }
    case N_AND:
    case N_OR: {
        jj_value a;
        if ((st = eval(r, n->u.bin.a, f, &a)) != EMBER_OK) return st;
        if (jj_truthy(a) == (n->kind == N_OR)) {
            *out = a;
            return EMBER_OK;
        }
        return eval(r, n->u.bin.b, f, out);
    }
    case N_CONCAT: {
        jj_buf b = {NULL, 0, 0, r->max_output, false, false};
        for (size_t k = 0; k < n->u.items.n; k++) {
            jj_value v;
            if ((st = eval(r, n->u.items.v[k], f, &v)) != EMBER_OK) {
                jj_buf_free(&b);
                return st;
            }
            jj_write_str(&b, v);
        }
        return jj_buf_to_value(r, n, &b, out);
    }
    case N_COMPARE: {
        jj_value left;
        if ((st = eval(r, n->u.cmp.first, f, &left)) != EMBER_OK) return st;
        for (size_t k = 0; k < n->u.cmp.rest.n; k++) {
            jj_value right;
            bool ok = false;
            if ((st = eval(r, n->u.cmp.rest.v[k], f, &right)) != EMBER_OK) return st;
            if ((st = compare(r, n, n->u.cmp.ops[k], left, right, &ok)) != EMBER_OK) return st;
            if (!ok) {
                *out = jj_bool(false);
                return EMBER_OK;
            }
            left = right;
        }
        *out = jj_bool(true);
        return EMBER_OK;
    }
    case N_COND: {
        jj_value t;
        if ((st = eval(r, n->u.cond.test, f, &t)) != EMBER_OK) return st;
        if (jj_truthy(t)) return eval(r, n->u.cond.yes, f, out);
        if (n->u.cond.no != NULL) return eval(r, n->u.cond.no, f, out);
        *out = jj_undef("the inline if-expression evaluated to false and no else section was defined");
        return EMBER_OK;
    }
    default: return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "not an expression");
    }
}

static ember_status eval(jj_render *r, const jj_node *n, jj_frame *f, jj_value *out) {
    ember_status st = enter(r, n);
    if (st != EMBER_OK) return st;
    st = eval_inner(r, n, f, out);
    leave(r);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                                */
/* ------------------------------------------------------------------------ */

static ember_status assign(jj_render *r, const jj_node *target, jj_value v, jj_frame *f) {
    if (target->kind == N_NAME) {
        if (!frame_set(r, f, target->u.name.p, target->u.name.n, v)) return jj_fail_oom(r, target);
        return EMBER_OK;
    }
    if (target->kind == N_NSREF) {
        jj_value ns;
        const jj_node *obj = target->u.attr.obj;
        ember_status st = lookup(r, target, f, obj->u.name.p, obj->u.name.n, &ns);
        if (st != EMBER_OK) return st;
        if (ns.type != JJ_NS)
            return jj_fail(r, target, EMBER_ERR_INVALID_ARGUMENT,
                           "cannot assign attribute on non-namespace object");
        if (!jj_dict_set(&r->arena, ns.u.dict, jj_str(target->u.attr.p, target->u.attr.n), v))
            return jj_fail_oom(r, target);
        r->escapes++;
        return EMBER_OK;
    }
    /* A tuple of targets: unpack. */
    jj_list *items;
    if (v.type == JJ_UNDEF) return jj_fail_undefined(r, target, v);
    ember_status st = jj_iterate(r, target, v, &items);
    if (st != EMBER_OK) return st;
    size_t want = target->u.items.n;
    if (items->n != want)
        return jj_fail(r, target, EMBER_ERR_INVALID_ARGUMENT,
                       items->n < want ? "not enough values to unpack (expected %zu, got %zu)"
                                       : "too many values to unpack (expected %zu, got %zu)",
                       want, items->n);
    for (size_t k = 0; k < want; k++)
        if ((st = assign(r, target->u.items.v[k], items->items[k], f)) != EMBER_OK) return st;
    return EMBER_OK;
}

static ember_status write_value(jj_render *r, const jj_node *at, jj_value v) {
    size_t before = r->out->n;
    jj_write_str(r->out, v);
    if (r->out->over || r->out->oom) return buf_failed(r, at, r->out);
    return jj_charge(r, at, r->out->n - before);
}

static ember_status exec_for(jj_render *r, const jj_node *n, jj_frame *f) {
    jj_value seq;
    ember_status st = eval(r, n->u.for_.iter, f, &seq);
    if (st != EMBER_OK) return st;
    jj_list *items;
    if ((st = jj_iterate(r, n, seq, &items)) != EMBER_OK) return st;
    jj_frame *lf = frame_new(r, f);
    if (lf == NULL) return jj_fail_oom(r, n);
    if (n->u.for_.cond != NULL) {
        /* The loop filter runs before the loop, with the target bound. */
        jj_list *kept = jj_list_new(&r->arena, items->n);
        if (kept == NULL) return jj_fail_oom(r, n);
        for (size_t k = 0; k < items->n; k++) {
            jj_value ok;
            lf->n = 0;
            if ((st = jj_charge(r, n, 0)) != EMBER_OK) return st;
            if ((st = assign(r, n->u.for_.target, items->items[k], lf)) != EMBER_OK) return st;
            if ((st = eval(r, n->u.for_.cond, lf, &ok)) != EMBER_OK) return st;
            if (jj_truthy(ok)) kept->items[kept->n++] = items->items[k];
        }
        items = kept;
    }
    jj_loop *loop = jj_alloc(&r->arena, sizeof *loop);
    if (loop == NULL) return jj_fail_oom(r, n);
    loop->items = items->items;
    loop->length = (int64_t)items->n;
    jj_value lv = jj_none();
    lv.type = JJ_LOOP;
    lv.u.loop = loop;
    for (size_t k = 0; k < items->n; k++) {
        if ((st = jj_charge(r, n, 0)) != EMBER_OK) return st;
        /* What an iteration makes dies with it, unless it went into a
         * namespace: then the arena keeps it. */
        jj_mark mark = jj_arena_mark(&r->arena);
        uint64_t escapes = r->escapes;
        loop->index0 = (int64_t)k;
        lf->n = 0; /* a fresh scope per iteration */
        if (!frame_set(r, lf, "loop", 4, lv)) return jj_fail_oom(r, n);
        if ((st = assign(r, n->u.for_.target, items->items[k], lf)) != EMBER_OK) return st;
        int flow = FLOW_NONE;
        if ((st = exec_body(r, &n->u.for_.body, lf, &flow)) != EMBER_OK) return st;
        if (r->escapes == escapes) {
            jj_arena_reset(&r->arena, mark);
            lf->n = 0;
            lf->vars = NULL;
            lf->cap = 0;
        }
        if (flow == FLOW_BREAK) break;
    }
    if (items->n == 0 && n->u.for_.else_body.n > 0) {
        jj_frame *ef = frame_new(r, f);
        if (ef == NULL) return jj_fail_oom(r, n);
        int flow = FLOW_NONE;
        return exec_body(r, &n->u.for_.else_body, ef, &flow);
    }
    return EMBER_OK;
}

static ember_status exec_stmt(jj_render *r, const jj_node *n, jj_frame *f, int *flow) {
    ember_status st;
    switch (n->kind) {
    case N_TEXT:
        if (!jj_buf_put(r->out, n->u.name.p, n->u.name.n)) return buf_failed(r, n, r->out);
        return jj_charge(r, n, n->u.name.n);
    case N_OUTPUT: {
        jj_value v;
        if ((st = eval(r, n->u.out.expr, f, &v)) != EMBER_OK) return st;
        return write_value(r, n, v);
    }
    case N_IF: {
        jj_value t;
        if ((st = eval(r, n->u.if_.test, f, &t)) != EMBER_OK) return st;
        return exec_body(r, jj_truthy(t) ? &n->u.if_.body : &n->u.if_.else_body, f, flow);
    }
    case N_FOR: return exec_for(r, n, f);
    case N_SET: {
        jj_value v;
        if ((st = eval(r, n->u.set.expr, f, &v)) != EMBER_OK) return st;
        return assign(r, n->u.set.target, v, f);
    }
    case N_SET_BLOCK: {
        jj_buf buf = {NULL, 0, 0, r->max_output, false, false};
        jj_buf *saved = r->out;
        r->out = &buf;
        int inner = FLOW_NONE;
        st = exec_body(r, &n->u.set.body, f, &inner);
        r->out = saved;
        jj_value v;
        if (st == EMBER_OK) st = jj_buf_to_value(r, n, &buf, &v);
        else jj_buf_free(&buf);
        if (st != EMBER_OK) return st;
        if (inner != FLOW_NONE) *flow = inner;
        return assign(r, n->u.set.target, v, f);
    }
    case N_MACRO: {
        jj_closure *c = jj_alloc(&r->arena, sizeof *c);
        if (c == NULL) return jj_fail_oom(r, n);
        c->node = n;
        c->frame = NULL;
        jj_value m = jj_none();
        m.type = JJ_MACRO;
        m.u.macro = c;
        if (!frame_set(r, f, n->u.macro.p, n->u.macro.n, m)) return jj_fail_oom(r, n);
        return EMBER_OK;
    }
    case N_CALL_BLOCK: {
        /* The block becomes `caller`, reading names from this frame. */
        const jj_node *call = n->u.macro.call;
        jj_closure *c = jj_alloc(&r->arena, sizeof *c);
        if (c == NULL) return jj_fail_oom(r, n);
        c->node = n;
        c->frame = f;
        jj_value fn, res, *args;
        jj_kwval *kw;
        if ((st = eval(r, call->u.call.fn, f, &fn)) != EMBER_OK) return st;
        if ((st = eval_args(r, call, f, &args, &kw)) != EMBER_OK) return st;
        size_t nkw = call->u.call.nkw;
        jj_kwval *kw2 = jj_alloc_array(&r->arena, nkw + 1, sizeof *kw2);
        if (kw2 == NULL) return jj_fail_oom(r, n);
        if (nkw) memcpy(kw2, kw, nkw * sizeof *kw2);
        kw2[nkw].name = "caller";
        kw2[nkw].len = 6;
        kw2[nkw].value = jj_none();
        kw2[nkw].value.type = JJ_MACRO;
        kw2[nkw].value.u.macro = c;
        if (fn.type != JJ_MACRO)
            return jj_fail(r, call, EMBER_ERR_INVALID_ARGUMENT, "a call block needs a macro");
        if ((st = jj_call(r, call, fn, args, call->u.call.args.n, kw2, nkw + 1, &res)) != EMBER_OK)
            return st;
        return write_value(r, n, res);
    }
    case N_BREAK: *flow = FLOW_BREAK; return EMBER_OK;
    case N_CONTINUE: *flow = FLOW_CONTINUE; return EMBER_OK;
    case N_BLOCK: return exec_body(r, &n->u.body, f, flow);
    default: return jj_fail(r, n, EMBER_ERR_INVALID_ARGUMENT, "not a statement");
    }
}

static ember_status exec_body(jj_render *r, const jj_nodes *body, jj_frame *f, int *flow) {
    for (size_t k = 0; k < body->n; k++) {
        const jj_node *n = body->v[k];
        ember_status st = enter(r, n);
        if (st != EMBER_OK) return st;
        st = exec_stmt(r, n, f, flow);
        leave(r);
        if (st != EMBER_OK) return st;
        if (*flow != FLOW_NONE) return EMBER_OK;
    }
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Public                                                                    */
/* ------------------------------------------------------------------------ */

ember_status ember_jinja_render(const ember_jinja_template *tpl, const ember_jinja_context *ctx,
                                const ember_jinja_render_options *opt, char **out,
                                size_t *out_len) {
    if (out != NULL) *out = NULL;
    if (tpl == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_jinja_render: NULL argument");
    jj_render r;
    memset(&r, 0, sizeof r);
    r.tpl = tpl;
    r.vars = jj_context_vars(ctx);
    r.max_output = EMBER_JINJA_DEFAULT_MAX_OUTPUT;
    r.max_steps = EMBER_JINJA_DEFAULT_MAX_STEPS;
    r.max_depth = EMBER_JINJA_DEFAULT_MAX_DEPTH;
    r.arena.limit = EMBER_JINJA_DEFAULT_MAX_MEMORY;
    if (opt != NULL) {
        if (opt->struct_size < sizeof *opt)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_jinja_render: options struct_size %zu is too small",
                                   opt->struct_size);
        if (opt->max_depth > EMBER_JINJA_MAX_DEPTH_LIMIT)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_jinja_render: max_depth %zu is over the limit %d",
                                   opt->max_depth, EMBER_JINJA_MAX_DEPTH_LIMIT);
        if (opt->max_output) r.max_output = opt->max_output;
        if (opt->max_steps) r.max_steps = opt->max_steps;
        if (opt->max_depth) r.max_depth = opt->max_depth;
        if (opt->max_memory) r.arena.limit = opt->max_memory;
        r.fixed_time = opt->fixed_time;
        r.time = opt->time;
    }
    jj_buf buf = {NULL, 0, 0, r.max_output, false, false};
    r.out = &buf;
    ember_status st = EMBER_OK;
    r.root = frame_new(&r, NULL);
    if (r.root == NULL) st = jj_fail_oom(&r, NULL);
    int flow = FLOW_NONE;
    if (st == EMBER_OK) st = exec_body(&r, &tpl->body, r.root, &flow);
    if (st == EMBER_OK && buf.p == NULL && !jj_buf_put(&buf, "", 0)) st = buf_failed(&r, NULL, &buf);
    jj_arena_free(&r.arena);
    if (st != EMBER_OK) {
        jj_buf_free(&buf);
        return st;
    }
    *out = buf.p;
    if (out_len != NULL) *out_len = buf.n;
    return EMBER_OK;
}
