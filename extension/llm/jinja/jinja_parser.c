/*
 * extension/llm/jinja/jinja_parser.c — tokens to a syntax tree, following
 * jinja2's grammar (parser.py) rule for rule:
 *
 *   expression  condexpr: or ("if" or ["else" condexpr])*
 *   or, and     "or" / "and" chains;  not: "not"* compare
 *   compare     math1 ((== != < <= > >= in "not in") math1)*
 *   math1       concat ((+ -) concat)*;  concat: math2 ("~" math2)*
 *   math2       pow ((* / // %) pow)*;  pow: unary ("**" unary)*
 *   unary       ("-" | "+") unary | primary postfix, then filters, tests, calls
 *
 * Every construct this engine does not run is refused here, with its name
 * and position, so a template that parses can be rendered.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

typedef struct parser {
    const char *name;
    const jj_token *t;
    size_t n, i;
    jj_arena *a;
    size_t nesting, max_nesting;
    int loop_depth;   /* for loops around the current statement (this macro) */
    jj_node *macro;   /* innermost macro being read */
} parser;

static ember_status fail_tok(parser *p, const jj_token *t, ember_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static ember_status fail_tok(parser *p, const jj_token *t, ember_status st, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ember_error_set(st, "%s:%u:%u: %s", p->name, (unsigned)t->line, (unsigned)t->col, msg);
}

static const jj_token *cur(const parser *p) { return &p->t[p->i]; }

static const jj_token *look(const parser *p) {
    return p->i + 1 < p->n ? &p->t[p->i + 1] : &p->t[p->n - 1];
}

static void advance(parser *p) {
    if (p->i + 1 < p->n) p->i++;
}

static bool is_name(const jj_token *t, const char *w) {
    return t->type == T_NAME && t->u.s.n == strlen(w) && memcmp(t->u.s.p, w, t->u.s.n) == 0;
}

static bool is_op(const jj_token *t, jj_op op) { return t->type == T_OP && t->op == op; }

static const char *op_text(jj_op op) {
    static const char *const text[] = {"+", "-", "/", "//", "*", "%", "**", "~", "[", "]", "(", ")",
                                       "{", "}", "==", "!=", ">", ">=", "<", "<=", "=", ".", ":",
                                       "|", ",", ";"};
    return (size_t)op < sizeof text / sizeof *text ? text[op] : "?";
}

/* How jinja2 names a token in messages. */
static void describe(const jj_token *t, char *buf, size_t cap) {
    switch (t->type) {
    case T_EOF: snprintf(buf, cap, "end of template"); break;
    case T_DATA: snprintf(buf, cap, "template data"); break;
    case T_VAR_BEGIN: snprintf(buf, cap, "begin of print statement"); break;
    case T_VAR_END: snprintf(buf, cap, "end of print statement"); break;
    case T_BLOCK_BEGIN: snprintf(buf, cap, "begin of statement block"); break;
    case T_BLOCK_END: snprintf(buf, cap, "end of statement block"); break;
    case T_NAME: snprintf(buf, cap, "'%.*s'", (int)(t->u.s.n > 40 ? 40 : t->u.s.n), t->u.s.p); break;
    case T_STRING: snprintf(buf, cap, "string"); break;
    case T_INT: snprintf(buf, cap, "integer"); break;
    case T_FLOAT: snprintf(buf, cap, "float"); break;
    default: snprintf(buf, cap, "'%s'", op_text((jj_op)t->op)); break;
    }
}

static ember_status unexpected(parser *p, const char *wanted) {
    char got[64];
    describe(cur(p), got, sizeof got);
    if (wanted != NULL)
        return fail_tok(p, cur(p), EMBER_ERR_INVALID_ARGUMENT, "expected %s, got %s", wanted, got);
    return fail_tok(p, cur(p), EMBER_ERR_INVALID_ARGUMENT, "unexpected %s", got);
}

static ember_status expect_op(parser *p, jj_op op) {
    if (!is_op(cur(p), op)) {
        char want[16];
        snprintf(want, sizeof want, "'%s'", op_text(op));
        return unexpected(p, want);
    }
    advance(p);
    return EMBER_OK;
}

static ember_status expect_type(parser *p, jj_tok_type type, const char *what) {
    if (cur(p)->type != type) return unexpected(p, what);
    advance(p);
    return EMBER_OK;
}

static ember_status oom(parser *p) {
    return fail_tok(p, cur(p), EMBER_ERR_OUT_OF_MEMORY, "out of memory");
}

static ember_status enter(parser *p) {
    if (p->nesting >= p->max_nesting)
        return fail_tok(p, cur(p), EMBER_ERR_NOT_SUPPORTED, "nesting deeper than %zu",
                        p->max_nesting);
    p->nesting++;
    return EMBER_OK;
}

static void leave(parser *p) { p->nesting--; }

static jj_node *node_at(parser *p, jj_kind kind, const jj_token *t) {
    jj_node *n = jj_alloc(p->a, sizeof *n);
    if (n == NULL) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = t->line;
    n->col = t->col;
    return n;
}

/* A growable list of nodes in the arena. */
typedef struct vec {
    jj_nodes v;
    size_t cap;
} vec;

static bool vec_push(parser *p, vec *v, jj_node *n) {
    if (v->v.n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        jj_node **items = jj_alloc_array(p->a, cap, sizeof *items);
        if (items == NULL) return false;
        if (v->v.n) memcpy(items, v->v.v, v->v.n * sizeof *items);
        v->v.v = items;
        v->cap = cap;
    }
    v->v.v[v->v.n++] = n;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */
/* ------------------------------------------------------------------------ */

static ember_status parse_expression(parser *p, bool with_condexpr, jj_node **out);
static ember_status parse_tuple(parser *p, bool simplified, bool with_condexpr,
                                const char *extra_end, bool explicit_parens, jj_node **out);
static ember_status parse_unary(parser *p, bool with_filter, jj_node **out);
static ember_status parse_postfix(parser *p, jj_node **node);

static ember_status parse_list(parser *p, jj_node **out) {
    jj_node *n = node_at(p, N_LIST, cur(p));
    if (n == NULL) return oom(p);
    ember_status st = expect_op(p, OP_LBRACKET);
    vec items = {{NULL, 0}, 0};
    while (st == EMBER_OK && !is_op(cur(p), OP_RBRACKET)) {
        if (items.v.n && (st = expect_op(p, OP_COMMA)) != EMBER_OK) break;
        if (is_op(cur(p), OP_RBRACKET)) break;
        jj_node *item = NULL;
        if ((st = parse_expression(p, true, &item)) != EMBER_OK) break;
        if (!vec_push(p, &items, item)) return oom(p);
    }
    if (st == EMBER_OK) st = expect_op(p, OP_RBRACKET);
    n->u.items = items.v;
    *out = n;
    return st;
}

static ember_status parse_dict(parser *p, jj_node **out) {
    jj_node *n = node_at(p, N_DICT, cur(p));
    if (n == NULL) return oom(p);
    ember_status st = expect_op(p, OP_LBRACE);
    vec items = {{NULL, 0}, 0};
    while (st == EMBER_OK && !is_op(cur(p), OP_RBRACE)) {
        if (items.v.n && (st = expect_op(p, OP_COMMA)) != EMBER_OK) break;
        if (is_op(cur(p), OP_RBRACE)) break;
        jj_node *key = NULL, *val = NULL;
        if ((st = parse_expression(p, true, &key)) != EMBER_OK) break;
        if ((st = expect_op(p, OP_COLON)) != EMBER_OK) break;
        if ((st = parse_expression(p, true, &val)) != EMBER_OK) break;
        if (!vec_push(p, &items, key) || !vec_push(p, &items, val)) return oom(p);
    }
    if (st == EMBER_OK) st = expect_op(p, OP_RBRACE);
    n->u.items = items.v;
    *out = n;
    return st;
}

static ember_status parse_primary(parser *p, jj_node **out) {
    const jj_token *t = cur(p);
    jj_node *n = NULL;
    ember_status st = EMBER_OK;
    switch (t->type) {
    case T_NAME:
        n = node_at(p, N_CONST, t);
        if (n == NULL) return oom(p);
        if (is_name(t, "true") || is_name(t, "True")) {
            n->u.cst = jj_bool(true);
        } else if (is_name(t, "false") || is_name(t, "False")) {
            n->u.cst = jj_bool(false);
        } else if (is_name(t, "none") || is_name(t, "None")) {
            n->u.cst = jj_none();
        } else {
            n->kind = N_NAME;
            n->u.name.p = t->u.s.p;
            n->u.name.n = t->u.s.n;
            if (p->macro != NULL && is_name(t, "varargs")) p->macro->u.macro.varargs = true;
            if (p->macro != NULL && is_name(t, "kwargs")) p->macro->u.macro.kwargs = true;
            if (p->macro != NULL && is_name(t, "caller")) p->macro->u.macro.caller = true;
        }
        advance(p);
        break;
    case T_STRING: {
        n = node_at(p, N_CONST, t);
        if (n == NULL) return oom(p);
        /* Adjacent strings join: "a" "b" is "ab". */
        size_t len = 0, k = p->i;
        for (; p->t[k].type == T_STRING; k++) len += p->t[k].u.s.n;
        if (k == p->i + 1) {
            n->u.cst = jj_str(t->u.s.p, t->u.s.n);
            advance(p);
        } else {
            char *s = jj_alloc(p->a, len + 1);
            if (s == NULL) return oom(p);
            size_t o = 0;
            while (cur(p)->type == T_STRING) {
                memcpy(s + o, cur(p)->u.s.p, cur(p)->u.s.n);
                o += cur(p)->u.s.n;
                advance(p);
            }
            n->u.cst = jj_str(s, o);
        }
        break;
    }
    case T_INT:
    case T_FLOAT:
        n = node_at(p, N_CONST, t);
        if (n == NULL) return oom(p);
        n->u.cst = t->type == T_INT ? jj_int(t->u.i) : jj_float(t->u.f);
        advance(p);
        break;
    case T_OP:
        if (t->op == OP_LPAREN) {
            advance(p);
            if ((st = parse_tuple(p, false, true, NULL, true, &n)) != EMBER_OK) return st;
            if ((st = expect_op(p, OP_RPAREN)) != EMBER_OK) return st;
        } else if (t->op == OP_LBRACKET) {
            if ((st = parse_list(p, &n)) != EMBER_OK) return st;
        } else if (t->op == OP_LBRACE) {
            if ((st = parse_dict(p, &n)) != EMBER_OK) return st;
        } else {
            return unexpected(p, NULL);
        }
        break;
    default: return unexpected(p, NULL);
    }
    *out = n;
    return EMBER_OK;
}

static ember_status parse_call_args(parser *p, jj_node *call) {
    ember_status st = expect_op(p, OP_LPAREN);
    if (st != EMBER_OK) return st;
    vec args = {{NULL, 0}, 0};
    jj_kwarg *kw = NULL;
    size_t nkw = 0, kwcap = 0;
    bool need_comma = false;
    while (!is_op(cur(p), OP_RPAREN)) {
        if (need_comma) {
            if ((st = expect_op(p, OP_COMMA)) != EMBER_OK) return st;
            if (is_op(cur(p), OP_RPAREN)) break;
        }
        if (is_op(cur(p), OP_MUL) || is_op(cur(p), OP_POW))
            return fail_tok(p, cur(p), EMBER_ERR_NOT_SUPPORTED,
                            "*args and **kwargs in calls are not supported");
        if (cur(p)->type == T_NAME && is_op(look(p), OP_ASSIGN)) {
            const jj_token *name = cur(p);
            advance(p);
            advance(p);
            jj_node *value = NULL;
            if ((st = parse_expression(p, true, &value)) != EMBER_OK) return st;
            if (nkw == kwcap) {
                size_t cap = kwcap ? kwcap * 2 : 4;
                jj_kwarg *k2 = jj_alloc_array(p->a, cap, sizeof *k2);
                if (k2 == NULL) return oom(p);
                if (nkw) memcpy(k2, kw, nkw * sizeof *kw);
                kw = k2;
                kwcap = cap;
            }
            kw[nkw].name = name->u.s.p;
            kw[nkw].len = name->u.s.n;
            kw[nkw].value = value;
            nkw++;
        } else {
            if (nkw > 0)
                return fail_tok(p, cur(p), EMBER_ERR_INVALID_ARGUMENT,
                                "invalid syntax for function call expression "
                                "(a positional argument after a keyword argument)");
            jj_node *arg = NULL;
            if ((st = parse_expression(p, true, &arg)) != EMBER_OK) return st;
            if (!vec_push(p, &args, arg)) return oom(p);
        }
        need_comma = true;
    }
    if ((st = expect_op(p, OP_RPAREN)) != EMBER_OK) return st;
    call->u.call.args = args.v;
    call->u.call.kw = kw;
    call->u.call.nkw = nkw;
    return EMBER_OK;
}

static ember_status parse_call(parser *p, jj_node **node) {
    jj_node *n = node_at(p, N_CALL, cur(p));
    if (n == NULL) return oom(p);
    /* Errors of a call point at what is called. */
    n->line = (*node)->line;
    n->col = (*node)->col;
    n->u.call.fn = *node;
    *node = n;
    return parse_call_args(p, n);
}

/* "a.b.c" names of filters and tests. */
static ember_status dotted_name(parser *p, char *buf, size_t cap, size_t *len) {
    if (cur(p)->type != T_NAME) return unexpected(p, "a name");
    size_t o = 0;
    for (;;) {
        const jj_token *t = cur(p);
        if (o + t->u.s.n + 1 >= cap)
            return fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "name too long");
        memcpy(buf + o, t->u.s.p, t->u.s.n);
        o += t->u.s.n;
        advance(p);
        if (!is_op(cur(p), OP_DOT)) break;
        advance(p);
        if (cur(p)->type != T_NAME) return unexpected(p, "a name");
        buf[o++] = '.';
    }
    buf[o] = '\0';
    *len = o;
    return EMBER_OK;
}

static ember_status parse_filter(parser *p, jj_node **node) {
    while (is_op(cur(p), OP_PIPE)) {
        advance(p);
        const jj_token *t = cur(p);
        char name[64];
        size_t len;
        ember_status st = dotted_name(p, name, sizeof name, &len);
        if (st != EMBER_OK) return st;
        int id = jj_filter_id(name, len);
        if (id < 0)
            return fail_tok(p, t, EMBER_ERR_NOT_SUPPORTED, "filter '%s' is unknown or not supported",
                            name);
        jj_node *n = node_at(p, N_FILTER, t);
        if (n == NULL) return oom(p);
        n->id = (uint16_t)id;
        n->u.call.fn = *node;
        if (is_op(cur(p), OP_LPAREN) && (st = parse_call_args(p, n)) != EMBER_OK) return st;
        *node = n;
    }
    return EMBER_OK;
}

static ember_status parse_test(parser *p, jj_node **node) {
    const jj_token *is_tok = cur(p);
    advance(p); /* "is" */
    bool negated = false;
    if (is_name(cur(p), "not")) {
        negated = true;
        advance(p);
    }
    const jj_token *t = cur(p);
    char name[64];
    size_t len;
    ember_status st = dotted_name(p, name, sizeof name, &len);
    if (st != EMBER_OK) return st;
    int id = jj_test_id(name, len);
    if (id < 0)
        return fail_tok(p, t, EMBER_ERR_NOT_SUPPORTED, "test '%s' is unknown or not supported", name);
    jj_node *n = node_at(p, N_TEST, is_tok);
    if (n == NULL) return oom(p);
    n->id = (uint16_t)id;
    n->op = negated ? 1 : 0;
    n->u.call.fn = *node;
    const jj_token *c = cur(p);
    if (is_op(c, OP_LPAREN)) {
        if ((st = parse_call_args(p, n)) != EMBER_OK) return st;
    } else if ((c->type == T_NAME || c->type == T_STRING || c->type == T_INT ||
                c->type == T_FLOAT || is_op(c, OP_LBRACKET) || is_op(c, OP_LBRACE)) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
        if (is_name(c, "is"))
            return fail_tok(p, c, EMBER_ERR_INVALID_ARGUMENT, "you cannot chain multiple tests with is");
        jj_node *arg = NULL;
        if ((st = parse_primary(p, &arg)) != EMBER_OK) return st;
        if ((st = parse_postfix(p, &arg)) != EMBER_OK) return st;
        jj_node **args = jj_alloc(p->a, sizeof *args);
        if (args == NULL) return oom(p);
        args[0] = arg;
        n->u.call.args.v = args;
        n->u.call.args.n = 1;
    }
    *node = n;
    return EMBER_OK;
}

/* One item inside [ ]: an expression or a slice a:b:c. */
static ember_status parse_subscribed(parser *p, jj_node **out) {
    const jj_token *t = cur(p);
    jj_node *parts[3] = {NULL, NULL, NULL};
    ember_status st;
    if (is_op(cur(p), OP_COLON)) {
        advance(p);
    } else {
        jj_node *e = NULL;
        if ((st = parse_expression(p, true, &e)) != EMBER_OK) return st;
        if (!is_op(cur(p), OP_COLON)) {
            *out = e;
            return EMBER_OK;
        }
        advance(p);
        parts[0] = e;
    }
    if (!is_op(cur(p), OP_COLON) && !is_op(cur(p), OP_RBRACKET) && !is_op(cur(p), OP_COMMA))
        if ((st = parse_expression(p, true, &parts[1])) != EMBER_OK) return st;
    if (is_op(cur(p), OP_COLON)) {
        advance(p);
        if (!is_op(cur(p), OP_RBRACKET) && !is_op(cur(p), OP_COMMA))
            if ((st = parse_expression(p, true, &parts[2])) != EMBER_OK) return st;
    }
    jj_node *n = node_at(p, N_SLICE, t);
    if (n == NULL) return oom(p);
    n->u.slice.start = parts[0];
    n->u.slice.stop = parts[1];
    n->u.slice.step = parts[2];
    *out = n;
    return EMBER_OK;
}

static ember_status parse_subscript(parser *p, jj_node **node) {
    const jj_token *t = cur(p);
    ember_status st;
    if (is_op(t, OP_DOT)) {
        advance(p);
        const jj_token *a = cur(p);
        if (a->type == T_NAME) {
            jj_node *n = node_at(p, N_GETATTR, t);
            if (n == NULL) return oom(p);
            n->u.attr.obj = *node;
            n->u.attr.p = a->u.s.p;
            n->u.attr.n = a->u.s.n;
            advance(p);
            *node = n;
            return EMBER_OK;
        }
        if (a->type != T_INT) return unexpected(p, "a name or number");
        jj_node *k = node_at(p, N_CONST, a);
        jj_node *n = node_at(p, N_GETITEM, t);
        if (k == NULL || n == NULL) return oom(p);
        k->u.cst = jj_int(a->u.i);
        n->u.item.obj = *node;
        n->u.item.key = k;
        advance(p);
        *node = n;
        return EMBER_OK;
    }
    advance(p); /* [ */
    vec args = {{NULL, 0}, 0};
    while (!is_op(cur(p), OP_RBRACKET)) {
        if (args.v.n && (st = expect_op(p, OP_COMMA)) != EMBER_OK) return st;
        jj_node *a = NULL;
        if ((st = parse_subscribed(p, &a)) != EMBER_OK) return st;
        if (!vec_push(p, &args, a)) return oom(p);
    }
    if ((st = expect_op(p, OP_RBRACKET)) != EMBER_OK) return st;
    if (args.v.n == 0) return fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "expected a subscript");
    jj_node *key = args.v.v[0];
    if (args.v.n > 1) {
        key = node_at(p, N_TUPLE, t);
        if (key == NULL) return oom(p);
        key->u.items = args.v;
    }
    jj_node *n = node_at(p, N_GETITEM, t);
    if (n == NULL) return oom(p);
    n->u.item.obj = *node;
    n->u.item.key = key;
    *node = n;
    return EMBER_OK;
}

static ember_status parse_postfix(parser *p, jj_node **node) {
    for (;;) {
        ember_status st;
        if (is_op(cur(p), OP_DOT) || is_op(cur(p), OP_LBRACKET)) st = parse_subscript(p, node);
        else if (is_op(cur(p), OP_LPAREN)) st = parse_call(p, node);
        else return EMBER_OK;
        if (st != EMBER_OK) return st;
    }
}

static ember_status parse_filter_expr(parser *p, jj_node **node) {
    for (;;) {
        ember_status st;
        if (is_op(cur(p), OP_PIPE)) st = parse_filter(p, node);
        else if (is_name(cur(p), "is")) st = parse_test(p, node);
        else if (is_op(cur(p), OP_LPAREN)) st = parse_call(p, node);
        else return EMBER_OK;
        if (st != EMBER_OK) return st;
    }
}

static ember_status parse_unary(parser *p, bool with_filter, jj_node **out) {
    const jj_token *t = cur(p);
    jj_node *n = NULL;
    ember_status st;
    if (is_op(t, OP_SUB) || is_op(t, OP_ADD)) {
        if ((st = enter(p)) != EMBER_OK) return st;
        advance(p);
        jj_node *operand = NULL;
        st = parse_unary(p, false, &operand);
        leave(p);
        if (st != EMBER_OK) return st;
        n = node_at(p, is_op(t, OP_SUB) ? N_NEG : N_POS, t);
        if (n == NULL) return oom(p);
        n->u.bin.a = operand;
    } else if ((st = parse_primary(p, &n)) != EMBER_OK) {
        return st;
    }
    if ((st = parse_postfix(p, &n)) != EMBER_OK) return st;
    if (with_filter && (st = parse_filter_expr(p, &n)) != EMBER_OK) return st;
    *out = n;
    return EMBER_OK;
}

static ember_status binop(parser *p, const jj_token *t, jj_kind kind, jj_op op, jj_node *a,
                          jj_node *b, jj_node **out) {
    jj_node *n = node_at(p, kind, t);
    if (n == NULL) return oom(p);
    n->op = (uint8_t)op;
    n->u.bin.a = a;
    n->u.bin.b = b;
    *out = n;
    return EMBER_OK;
}

static ember_status parse_pow(parser *p, jj_node **out) {
    ember_status st = parse_unary(p, true, out);
    while (st == EMBER_OK && is_op(cur(p), OP_POW)) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_unary(p, true, &b)) != EMBER_OK) return st;
        st = binop(p, t, N_BINOP, OP_POW, *out, b, out);
    }
    return st;
}

static ember_status parse_math2(parser *p, jj_node **out) {
    ember_status st = parse_pow(p, out);
    while (st == EMBER_OK && cur(p)->type == T_OP &&
           (cur(p)->op == OP_MUL || cur(p)->op == OP_DIV || cur(p)->op == OP_FLOORDIV ||
            cur(p)->op == OP_MOD)) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_pow(p, &b)) != EMBER_OK) return st;
        st = binop(p, t, N_BINOP, (jj_op)t->op, *out, b, out);
    }
    return st;
}

static ember_status parse_concat(parser *p, jj_node **out) {
    const jj_token *t = cur(p);
    jj_node *first = NULL;
    ember_status st = parse_math2(p, &first);
    if (st != EMBER_OK || !is_op(cur(p), OP_TILDE)) {
        *out = first;
        return st;
    }
    vec parts = {{NULL, 0}, 0};
    if (!vec_push(p, &parts, first)) return oom(p);
    while (is_op(cur(p), OP_TILDE)) {
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_math2(p, &b)) != EMBER_OK) return st;
        if (!vec_push(p, &parts, b)) return oom(p);
    }
    jj_node *n = node_at(p, N_CONCAT, t);
    if (n == NULL) return oom(p);
    n->u.items = parts.v;
    *out = n;
    return EMBER_OK;
}

static ember_status parse_math1(parser *p, jj_node **out) {
    ember_status st = parse_concat(p, out);
    while (st == EMBER_OK && (is_op(cur(p), OP_ADD) || is_op(cur(p), OP_SUB))) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_concat(p, &b)) != EMBER_OK) return st;
        st = binop(p, t, N_BINOP, (jj_op)t->op, *out, b, out);
    }
    return st;
}

static ember_status parse_compare(parser *p, jj_node **out) {
    const jj_token *t0 = cur(p);
    jj_node *first = NULL;
    ember_status st = parse_math1(p, &first);
    if (st != EMBER_OK) return st;
    vec rest = {{NULL, 0}, 0};
    uint8_t ops[64];
    for (;;) {
        const jj_token *t = cur(p);
        int op;
        if (t->type == T_OP && (t->op == OP_EQ || t->op == OP_NE || t->op == OP_LT ||
                                t->op == OP_LTEQ || t->op == OP_GT || t->op == OP_GTEQ)) {
            op = t->op;
            advance(p);
        } else if (is_name(t, "in")) {
            op = CMP_IN;
            advance(p);
        } else if (is_name(t, "not") && is_name(look(p), "in")) {
            op = CMP_NOTIN;
            advance(p);
            advance(p);
        } else {
            break;
        }
        if (rest.v.n >= sizeof ops)
            return fail_tok(p, t, EMBER_ERR_NOT_SUPPORTED, "comparison chain too long");
        jj_node *b = NULL;
        if ((st = parse_math1(p, &b)) != EMBER_OK) return st;
        ops[rest.v.n] = (uint8_t)op;
        if (!vec_push(p, &rest, b)) return oom(p);
    }
    if (rest.v.n == 0) {
        *out = first;
        return EMBER_OK;
    }
    jj_node *n = node_at(p, N_COMPARE, t0);
    uint8_t *o = jj_alloc(p->a, rest.v.n);
    if (n == NULL || o == NULL) return oom(p);
    memcpy(o, ops, rest.v.n);
    n->u.cmp.first = first;
    n->u.cmp.rest = rest.v;
    n->u.cmp.ops = o;
    *out = n;
    return EMBER_OK;
}

static ember_status parse_not(parser *p, jj_node **out) {
    if (!is_name(cur(p), "not")) return parse_compare(p, out);
    const jj_token *t = cur(p);
    ember_status st = enter(p);
    if (st != EMBER_OK) return st;
    advance(p);
    jj_node *a = NULL;
    st = parse_not(p, &a);
    leave(p);
    if (st != EMBER_OK) return st;
    jj_node *n = node_at(p, N_NOT, t);
    if (n == NULL) return oom(p);
    n->u.bin.a = a;
    *out = n;
    return EMBER_OK;
}

static ember_status parse_and(parser *p, jj_node **out) {
    ember_status st = parse_not(p, out);
    while (st == EMBER_OK && is_name(cur(p), "and")) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_not(p, &b)) != EMBER_OK) return st;
        st = binop(p, t, N_AND, OP_ADD, *out, b, out);
    }
    return st;
}

static ember_status parse_or(parser *p, jj_node **out) {
    ember_status st = parse_and(p, out);
    while (st == EMBER_OK && is_name(cur(p), "or")) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *b = NULL;
        if ((st = parse_and(p, &b)) != EMBER_OK) return st;
        st = binop(p, t, N_OR, OP_ADD, *out, b, out);
    }
    return st;
}

static ember_status parse_condexpr(parser *p, jj_node **out) {
    ember_status st = parse_or(p, out);
    while (st == EMBER_OK && is_name(cur(p), "if")) {
        const jj_token *t = cur(p);
        advance(p);
        jj_node *test = NULL, *no = NULL;
        if ((st = parse_or(p, &test)) != EMBER_OK) return st;
        if (is_name(cur(p), "else")) {
            advance(p);
            if ((st = enter(p)) != EMBER_OK) return st;
            st = parse_condexpr(p, &no);
            leave(p);
            if (st != EMBER_OK) return st;
        }
        jj_node *n = node_at(p, N_COND, t);
        if (n == NULL) return oom(p);
        n->u.cond.test = test;
        n->u.cond.yes = *out;
        n->u.cond.no = no;
        *out = n;
    }
    return st;
}

static ember_status parse_expression(parser *p, bool with_condexpr, jj_node **out) {
    ember_status st = enter(p);
    if (st != EMBER_OK) return st;
    st = with_condexpr ? parse_condexpr(p, out) : parse_or(p, out);
    leave(p);
    return st;
}

static bool is_tuple_end(const parser *p, const char *extra_end) {
    const jj_token *t = cur(p);
    if (t->type == T_VAR_END || t->type == T_BLOCK_END || is_op(t, OP_RPAREN)) return true;
    return extra_end != NULL && is_name(t, extra_end);
}

static ember_status parse_tuple(parser *p, bool simplified, bool with_condexpr,
                                const char *extra_end, bool explicit_parens, jj_node **out) {
    const jj_token *t0 = cur(p);
    vec args = {{NULL, 0}, 0};
    bool is_tuple = false;
    ember_status st;
    for (;;) {
        if (args.v.n && (st = expect_op(p, OP_COMMA)) != EMBER_OK) return st;
        if (is_tuple_end(p, extra_end)) break;
        jj_node *e = NULL;
        if (simplified) {
            if ((st = enter(p)) != EMBER_OK) return st;
            st = parse_primary(p, &e);
            leave(p);
        } else {
            st = parse_expression(p, with_condexpr, &e);
        }
        if (st != EMBER_OK) return st;
        if (!vec_push(p, &args, e)) return oom(p);
        if (is_op(cur(p), OP_COMMA)) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (args.v.n) {
            *out = args.v.v[0];
            return EMBER_OK;
        }
        if (!explicit_parens) return unexpected(p, "an expression");
    }
    jj_node *n = node_at(p, N_TUPLE, t0);
    if (n == NULL) return oom(p);
    n->u.items = args.v;
    *out = n;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                                */
/* ------------------------------------------------------------------------ */

static ember_status subparse(parser *p, const char *const *ends, size_t n_ends, jj_nodes *out);

static bool can_assign(const jj_node *n) {
    if (n->kind == N_NAME) return true;
    if (n->kind != N_TUPLE) return false;
    for (size_t k = 0; k < n->u.items.n; k++)
        if (!can_assign(n->u.items.v[k])) return false;
    return true;
}

static ember_status parse_assign_target(parser *p, bool with_namespace, const char *extra_end,
                                        jj_node **out) {
    const jj_token *t = cur(p);
    ember_status st;
    if (with_namespace && t->type == T_NAME && is_op(look(p), OP_DOT)) {
        advance(p);
        advance(p);
        const jj_token *attr = cur(p);
        if ((st = expect_type(p, T_NAME, "a name")) != EMBER_OK) return st;
        jj_node *obj = node_at(p, N_NAME, t);
        jj_node *n = node_at(p, N_NSREF, t);
        if (obj == NULL || n == NULL) return oom(p);
        obj->u.name.p = t->u.s.p;
        obj->u.name.n = t->u.s.n;
        n->u.attr.obj = obj;
        n->u.attr.p = attr->u.s.p;
        n->u.attr.n = attr->u.s.n;
        *out = n;
        return EMBER_OK;
    }
    jj_node *n = NULL;
    if ((st = parse_tuple(p, true, true, extra_end, false, &n)) != EMBER_OK) return st;
    if (!can_assign(n)) {
        return fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "can't assign to %s",
                        n->kind == N_CONST ? "a constant" : "this expression");
    }
    *out = n;
    return EMBER_OK;
}

/* Reads "%}" then statements up to one of the end tags; leaves the stream
 * at the end tag's name (or past it when drop). */
static ember_status parse_statements(parser *p, const char *const *ends, size_t n_ends, bool drop,
                                     jj_nodes *out) {
    if (is_op(cur(p), OP_COLON)) advance(p);
    ember_status st = expect_type(p, T_BLOCK_END, "end of statement block");
    if (st != EMBER_OK) return st;
    if ((st = subparse(p, ends, n_ends, out)) != EMBER_OK) return st;
    if (drop) advance(p);
    return EMBER_OK;
}

static const char *const k_endfor_else[] = {"endfor", "else"};
static const char *const k_endfor[] = {"endfor"};
static const char *const k_if_ends[] = {"elif", "else", "endif"};
static const char *const k_endif[] = {"endif"};
static const char *const k_endset[] = {"endset"};
static const char *const k_endmacro[] = {"endmacro"};
static const char *const k_endcall[] = {"endcall"};
static const char *const k_endgeneration[] = {"endgeneration"};

static ember_status parse_for(parser *p, jj_node *n) {
    advance(p); /* for */
    ember_status st = parse_assign_target(p, false, "in", &n->u.for_.target);
    if (st != EMBER_OK) return st;
    if (!is_name(cur(p), "in")) return unexpected(p, "'in'");
    advance(p);
    if ((st = parse_tuple(p, false, false, "recursive", false, &n->u.for_.iter)) != EMBER_OK)
        return st;
    if (is_name(cur(p), "if")) {
        advance(p);
        if ((st = parse_expression(p, true, &n->u.for_.cond)) != EMBER_OK) return st;
    }
    if (is_name(cur(p), "recursive"))
        return fail_tok(p, cur(p), EMBER_ERR_NOT_SUPPORTED, "recursive loops are not supported");
    p->loop_depth++;
    st = parse_statements(p, k_endfor_else, 2, false, &n->u.for_.body);
    p->loop_depth--;
    if (st != EMBER_OK) return st;
    if (is_name(cur(p), "endfor")) {
        advance(p);
        return EMBER_OK;
    }
    advance(p); /* else */
    return parse_statements(p, k_endfor, 1, true, &n->u.for_.else_body);
}

static ember_status parse_if(parser *p, jj_node *n) {
    advance(p); /* if */
    for (;;) {
        ember_status st = parse_tuple(p, false, false, NULL, false, &n->u.if_.test);
        if (st != EMBER_OK) return st;
        if ((st = parse_statements(p, k_if_ends, 3, false, &n->u.if_.body)) != EMBER_OK) return st;
        const jj_token *t = cur(p);
        advance(p);
        if (is_name(t, "elif")) {
            jj_node *next = node_at(p, N_IF, t);
            jj_node **one = jj_alloc(p->a, sizeof *one);
            if (next == NULL || one == NULL) return oom(p);
            one[0] = next;
            n->u.if_.else_body.v = one;
            n->u.if_.else_body.n = 1;
            n = next;
            continue;
        }
        if (is_name(t, "else")) return parse_statements(p, k_endif, 1, true, &n->u.if_.else_body);
        return EMBER_OK;
    }
}

static ember_status parse_set(parser *p, jj_node *n) {
    advance(p); /* set */
    ember_status st = parse_assign_target(p, true, NULL, &n->u.set.target);
    if (st != EMBER_OK) return st;
    if (is_op(cur(p), OP_ASSIGN)) {
        advance(p);
        return parse_tuple(p, false, true, NULL, false, &n->u.set.expr);
    }
    if (is_op(cur(p), OP_PIPE))
        return fail_tok(p, cur(p), EMBER_ERR_NOT_SUPPORTED, "filters on a block set are not supported");
    if (n->u.set.target->kind == N_TUPLE)
        return fail_tok(p, cur(p), EMBER_ERR_INVALID_ARGUMENT, "a block set assigns one name");
    n->kind = N_SET_BLOCK;
    return parse_statements(p, k_endset, 1, true, &n->u.set.body);
}

/* "(a, b=default, ...)" of a macro or a call block. */
static ember_status parse_signature(parser *p, jj_node *n) {
    ember_status st = expect_op(p, OP_LPAREN);
    if (st != EMBER_OK) return st;
    vec params = {{NULL, 0}, 0}, defaults = {{NULL, 0}, 0};
    bool any_default = false;
    while (!is_op(cur(p), OP_RPAREN)) {
        if (params.v.n && (st = expect_op(p, OP_COMMA)) != EMBER_OK) return st;
        const jj_token *pt = cur(p);
        if ((st = expect_type(p, T_NAME, "a parameter name")) != EMBER_OK) return st;
        jj_node *param = node_at(p, N_NAME, pt);
        if (param == NULL) return oom(p);
        param->u.name.p = pt->u.s.p;
        param->u.name.n = pt->u.s.n;
        jj_node *def = NULL;
        if (is_op(cur(p), OP_ASSIGN)) {
            advance(p);
            if ((st = parse_expression(p, true, &def)) != EMBER_OK) return st;
            any_default = true;
        } else if (any_default) {
            return fail_tok(p, pt, EMBER_ERR_INVALID_ARGUMENT,
                            "non-default argument follows default argument");
        }
        if (!vec_push(p, &params, param) || !vec_push(p, &defaults, def)) return oom(p);
    }
    advance(p); /* ) */
    n->u.macro.params = params.v;
    n->u.macro.defaults = defaults.v;
    return EMBER_OK;
}

/* The body of a macro or call block: a scope of its own (no loop around). */
static ember_status parse_macro_body(parser *p, jj_node *n, const char *const *ends) {
    jj_node *outer = p->macro;
    int outer_loops = p->loop_depth;
    p->macro = n;
    p->loop_depth = 0;
    ember_status st = parse_statements(p, ends, 1, true, &n->u.macro.body);
    p->macro = outer;
    p->loop_depth = outer_loops;
    return st;
}

static ember_status parse_macro(parser *p, jj_node *n) {
    advance(p); /* macro */
    const jj_token *t = cur(p);
    ember_status st = expect_type(p, T_NAME, "a macro name");
    if (st != EMBER_OK) return st;
    n->u.macro.p = t->u.s.p;
    n->u.macro.n = t->u.s.n;
    if ((st = parse_signature(p, n)) != EMBER_OK) return st;
    return parse_macro_body(p, n, k_endmacro);
}

/* {% call [(params)] macro(args) %}body{% endcall %}: the macro is called
 * with `caller`, a macro whose body is the block. */
static ember_status parse_call_block(parser *p, jj_node *n) {
    advance(p); /* call */
    n->u.macro.p = "caller";
    n->u.macro.n = 6;
    ember_status st;
    if (is_op(cur(p), OP_LPAREN) && (st = parse_signature(p, n)) != EMBER_OK) return st;
    const jj_token *t = cur(p);
    if ((st = parse_expression(p, true, &n->u.macro.call)) != EMBER_OK) return st;
    if (n->u.macro.call->kind != N_CALL)
        return fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "expected a call after 'call'");
    return parse_macro_body(p, n, k_endcall);
}

static ember_status parse_statement(parser *p, jj_node **out) {
    const jj_token *t = cur(p);
    if (t->type != T_NAME) return unexpected(p, "a tag name");
    ember_status st = enter(p);
    if (st != EMBER_OK) return st;
    jj_node *n = node_at(p, N_TEXT, t);
    if (n == NULL) return oom(p);
    if (is_name(t, "for")) {
        n->kind = N_FOR;
        st = parse_for(p, n);
    } else if (is_name(t, "if")) {
        n->kind = N_IF;
        st = parse_if(p, n);
    } else if (is_name(t, "set")) {
        n->kind = N_SET;
        st = parse_set(p, n);
    } else if (is_name(t, "macro")) {
        n->kind = N_MACRO;
        st = parse_macro(p, n);
    } else if (is_name(t, "call")) {
        n->kind = N_CALL_BLOCK;
        st = parse_call_block(p, n);
    } else if (is_name(t, "print")) {
        n->kind = N_OUTPUT;
        advance(p);
        st = parse_tuple(p, false, true, NULL, false, &n->u.out.expr);
    } else if (is_name(t, "break") || is_name(t, "continue")) {
        if (p->loop_depth == 0)
            st = fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "'%.*s' outside of a for loop",
                          (int)t->u.s.n, t->u.s.p);
        n->kind = is_name(t, "break") ? N_BREAK : N_CONTINUE;
        advance(p);
    } else if (is_name(t, "generation")) {
        /* transformers' assistant-mask extension: the body renders in place. */
        n->kind = N_BLOCK;
        advance(p);
        st = parse_statements(p, k_endgeneration, 1, true, &n->u.body);
    } else {
        static const char *const unsupported[] = {"block", "extends", "include", "import", "from",
                                                  "with", "filter", "autoescape", "do",
                                                  "trans", "pluralize", "raw"};
        bool known = false;
        for (size_t k = 0; k < sizeof unsupported / sizeof *unsupported; k++)
            if (is_name(t, unsupported[k])) known = true;
        if (known)
            st = fail_tok(p, t, EMBER_ERR_NOT_SUPPORTED, "the '%.*s' tag is not supported",
                          (int)t->u.s.n, t->u.s.p);
        else
            st = fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT, "unknown tag '%.*s'",
                          (int)(t->u.s.n > 40 ? 40 : t->u.s.n), t->u.s.p);
    }
    leave(p);
    *out = n;
    return st;
}

static ember_status subparse(parser *p, const char *const *ends, size_t n_ends, jj_nodes *out) {
    vec body = {{NULL, 0}, 0};
    ember_status st;
    for (;;) {
        const jj_token *t = cur(p);
        if (t->type == T_EOF) {
            if (n_ends > 0) {
                char want[128];
                size_t o = 0;
                for (size_t k = 0; k < n_ends && o < sizeof want; k++)
                    o += (size_t)snprintf(want + o, sizeof want - o, "%s'%s'", k ? " or " : "",
                                          ends[k]);
                return fail_tok(p, t, EMBER_ERR_INVALID_ARGUMENT,
                                "unexpected end of template: expected %s", want);
            }
            break;
        }
        if (t->type == T_DATA) {
            jj_node *n = node_at(p, N_TEXT, t);
            if (n == NULL) return oom(p);
            n->u.name.p = t->u.s.p;
            n->u.name.n = t->u.s.n;
            if (!vec_push(p, &body, n)) return oom(p);
            advance(p);
        } else if (t->type == T_VAR_BEGIN) {
            advance(p);
            jj_node *n = node_at(p, N_OUTPUT, t);
            if (n == NULL) return oom(p);
            if ((st = parse_tuple(p, false, true, NULL, false, &n->u.out.expr)) != EMBER_OK)
                return st;
            if ((st = expect_type(p, T_VAR_END, "end of print statement")) != EMBER_OK) return st;
            if (!vec_push(p, &body, n)) return oom(p);
        } else if (t->type == T_BLOCK_BEGIN) {
            advance(p);
            for (size_t k = 0; k < n_ends; k++)
                if (is_name(cur(p), ends[k])) {
                    *out = body.v;
                    return EMBER_OK;
                }
            jj_node *n = NULL;
            if ((st = parse_statement(p, &n)) != EMBER_OK) return st;
            if ((st = expect_type(p, T_BLOCK_END, "end of statement block")) != EMBER_OK) return st;
            if (!vec_push(p, &body, n)) return oom(p);
        } else {
            return unexpected(p, NULL);
        }
    }
    *out = body.v;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Public                                                                    */
/* ------------------------------------------------------------------------ */

ember_status ember_jinja_parse(const char *source, size_t len,
                               const ember_jinja_parse_options *opt,
                               ember_jinja_template **out) {
    if (out == NULL || (source == NULL && len > 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_jinja_parse: NULL argument");
    const char *name = "template";
    size_t max_nesting = EMBER_JINJA_DEFAULT_MAX_NESTING;
    if (opt != NULL) {
        if (opt->struct_size < sizeof *opt)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_jinja_parse: options struct_size %zu is too small",
                                   opt->struct_size);
        if (opt->name != NULL) name = opt->name;
        if (opt->max_nesting > EMBER_JINJA_MAX_NESTING_LIMIT)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "ember_jinja_parse: max_nesting %zu is over the limit %d",
                                   opt->max_nesting, EMBER_JINJA_MAX_NESTING_LIMIT);
        if (opt->max_nesting > 0) max_nesting = opt->max_nesting;
    }
    if (len > EMBER_JINJA_MAX_SOURCE)
        return ember_error_set(EMBER_ERR_NOT_SUPPORTED, "%s: template of %zu bytes is too large",
                               name, len);

    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t l = jj_utf8_next(source + i, len - i, &cp);
        if (l == 1 && (unsigned char)source[i] >= 0x80) {
            size_t line = 1, col = 1;
            for (size_t k = 0; k < i; k++) {
                if (source[k] == '\n') line++, col = 1;
                else if (((unsigned char)source[k] & 0xC0) != 0x80) col++;
            }
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s:%zu:%zu: invalid UTF-8", name,
                                   line, col);
        }
        i += l;
    }

    ember_jinja_template *tpl = malloc(sizeof *tpl);
    if (tpl == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    memset(tpl, 0, sizeof *tpl);
    ember_status st = EMBER_OK;
    tpl->name = jj_strdup(&tpl->arena, name, strlen(name));
    /* jinja2 reads "\r\n" and "\r" as "\n" and drops one final newline. */
    char *src = jj_alloc(&tpl->arena, len + 1);
    if (tpl->name == NULL || src == NULL) {
        st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    } else {
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
            if (source[i] == '\r') {
                src[n++] = '\n';
                if (i + 1 < len && source[i + 1] == '\n') i++;
            } else {
                src[n++] = source[i];
            }
        }
        if (n > 0 && src[n - 1] == '\n') n--;
        src[n] = '\0';
        jj_tokens toks = {NULL, 0, 0};
        st = jj_lex(tpl->name, src, n, &tpl->arena, &toks);
        if (st == EMBER_OK) {
            parser p;
            memset(&p, 0, sizeof p);
            p.name = tpl->name;
            p.t = toks.v;
            p.n = toks.n;
            p.a = &tpl->arena;
            p.max_nesting = max_nesting;
            st = subparse(&p, NULL, 0, &tpl->body);
        }
        free(toks.v);
    }
    if (st != EMBER_OK) {
        jj_arena_free(&tpl->arena);
        free(tpl);
        return st;
    }
    *out = tpl;
    return EMBER_OK;
}

void ember_jinja_template_destroy(ember_jinja_template *tpl) {
    if (tpl == NULL) return;
    jj_arena_free(&tpl->arena);
    free(tpl);
}
