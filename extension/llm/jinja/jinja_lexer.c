/*
 * extension/llm/jinja/jinja_lexer.c — template source to tokens, with
 * jinja2's whitespace rules under trim_blocks and lstrip_blocks:
 *
 *   {%- / {{- / {#-   strip all whitespace before the tag
 *   -%} / -}} / -#}   strip all whitespace after the tag
 *   {%+ / {#+         keep the spaces before the tag (no lstrip)
 *   +%} / +#}         keep the newline after the tag (no trim)
 *   lstrip_blocks     spaces and tabs between a line start and {% or {# go
 *   trim_blocks       one newline right after %} or #} goes
 *
 * Inside a tag, an end delimiter counts only outside brackets, so
 * {{ {'a': {'b': 1}} }} reads as one expression.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"
#include "text/unicode.h"

typedef struct lexer {
    const char *name;
    const char *s;
    size_t n, i;
    jj_arena *a;
    jj_tokens *out;
    bool line_starting;
    /* position cache for line:column (tokens come in order) */
    size_t pos_off, pos_line, pos_col;
    char brackets[256]; /* open brackets inside the current tag */
    size_t depth;
} lexer;

static void line_col(lexer *lx, size_t off, uint32_t *line, uint32_t *col) {
    if (off < lx->pos_off) {
        lx->pos_off = 0;
        lx->pos_line = 1;
        lx->pos_col = 1;
    }
    for (size_t k = lx->pos_off; k < off && k < lx->n; k++) {
        unsigned char c = (unsigned char)lx->s[k];
        if (c == '\n') {
            lx->pos_line++;
            lx->pos_col = 1;
        } else if ((c & 0xC0) != 0x80) {
            lx->pos_col++;
        }
    }
    lx->pos_off = off;
    *line = lx->pos_line > UINT32_MAX ? UINT32_MAX : (uint32_t)lx->pos_line;
    *col = lx->pos_col > UINT32_MAX ? UINT32_MAX : (uint32_t)lx->pos_col;
}

static ember_status fail(lexer *lx, size_t off, ember_status st, const char *what) {
    uint32_t line, col;
    line_col(lx, off, &line, &col);
    return ember_error_set(st, "%s:%u:%u: %s", lx->name, (unsigned)line, (unsigned)col, what);
}

static ember_status emit(lexer *lx, size_t off, jj_token t) {
    line_col(lx, off, &t.line, &t.col);
    jj_tokens *o = lx->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        if (cap > SIZE_MAX / sizeof *o->v) return fail(lx, off, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        jj_token *v = realloc(o->v, cap * sizeof *v);
        if (v == NULL) return fail(lx, off, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = t;
    return EMBER_OK;
}

static jj_token tok(jj_tok_type type) {
    jj_token t;
    memset(&t, 0, sizeof t);
    t.type = (uint8_t)type;
    return t;
}

/* Length of the Python-whitespace code point at s[i..n), or 0. */
static size_t space_at(const lexer *lx, size_t i) {
    if (i >= lx->n) return 0;
    unsigned char c = (unsigned char)lx->s[i];
    if (c < 0x80) return jj_is_space(c) ? 1 : 0;
    uint32_t cp;
    size_t l = jj_utf8_next(lx->s + i, lx->n - i, &cp);
    return jj_is_space(cp) ? l : 0;
}

static size_t skip_spaces(const lexer *lx, size_t i) {
    size_t l;
    while ((l = space_at(lx, i)) != 0) i += l;
    return i;
}

/* End of text s[start..end) once trailing Python whitespace is removed. */
static size_t rstrip_end(const lexer *lx, size_t start, size_t end) {
    while (end > start) {
        size_t k = end - 1;
        while (k > start && ((unsigned char)lx->s[k] & 0xC0) == 0x80) k--;
        if (space_at(lx, k) != end - k) break;
        end = k;
    }
    return end;
}

static bool at(const lexer *lx, size_t i, const char *w) {
    size_t l = strlen(w);
    return lx->n - i >= l && i <= lx->n && memcmp(lx->s + i, w, l) == 0;
}

static ember_status emit_data(lexer *lx, size_t start, size_t end) {
    if (end <= start) return EMBER_OK;
    jj_token t = tok(T_DATA);
    t.u.s.p = lx->s + start;
    t.u.s.n = end - start;
    return emit(lx, start, t);
}

/* Applies "-" / lstrip_blocks to the text before a tag; returns its end. */
static size_t strip_before(lexer *lx, size_t start, size_t end, char sign, bool is_var) {
    if (sign == '-') return rstrip_end(lx, start, end);
    if (sign == '+' || is_var) return end;
    size_t l_pos = end;
    while (l_pos > start && lx->s[l_pos - 1] != '\n') l_pos--;
    if (l_pos == start && !lx->line_starting) return end;
    for (size_t k = l_pos; k < end; k++)
        if (lx->s[k] != ' ' && lx->s[k] != '\t') return end;
    return l_pos;
}

/* ------------------------------------------------------------------------ */
/* Inside tags                                                               */
/* ------------------------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Digits with single underscores between them, (\d+_)*\d+; returns the end
 * or i when none. */
static size_t digits_end(const lexer *lx, size_t i) {
    if (i >= lx->n || !is_digit(lx->s[i])) return i;
    size_t k = i;
    for (;;) {
        while (k < lx->n && is_digit(lx->s[k])) k++;
        if (k + 1 < lx->n && lx->s[k] == '_' && is_digit(lx->s[k + 1])) {
            k++;
            continue;
        }
        return k;
    }
}

static double c_strtod(const char *text) {
    const char *point = localeconv()->decimal_point;
    if (point == NULL || strcmp(point, ".") == 0 || strchr(text, '.') == NULL)
        return strtod(text, NULL);
    char buf[400];
    size_t o = 0, pl = strlen(point);
    for (const char *p = text; *p && o + pl + 1 < sizeof buf; p++) {
        if (*p == '.') {
            memcpy(buf + o, point, pl);
            o += pl;
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = '\0';
    return strtod(buf, NULL);
}

static ember_status lex_number(lexer *lx) {
    size_t start = lx->i;
    size_t end = digits_end(lx, start);
    bool is_float = false;
    /* A float never starts right after a dot ("x.0.1" is items, not 0.1). */
    if (start == 0 || lx->s[start - 1] != '.') {
        size_t k = end;
        if (k < lx->n && lx->s[k] == '.' && digits_end(lx, k + 1) > k + 1) {
            k = digits_end(lx, k + 1);
            is_float = true;
        }
        if (k < lx->n && (lx->s[k] == 'e' || lx->s[k] == 'E')) {
            size_t e = k + 1;
            if (e < lx->n && (lx->s[e] == '+' || lx->s[e] == '-')) e++;
            if (digits_end(lx, e) > e) {
                k = digits_end(lx, e);
                is_float = true;
            }
        }
        if (is_float) end = k;
    }
    char buf[400];
    if (end - start >= sizeof buf) return fail(lx, start, EMBER_ERR_NOT_SUPPORTED, "number literal too long");
    size_t o = 0;
    for (size_t k = start; k < end; k++)
        if (lx->s[k] != '_') buf[o++] = lx->s[k];
    buf[o] = '\0';
    jj_token t = tok(is_float ? T_FLOAT : T_INT);
    if (is_float) {
        t.u.f = c_strtod(buf);
    } else {
        int64_t v = 0;
        for (size_t k = 0; k < o; k++) {
            int d = buf[k] - '0';
            if (v > (INT64_MAX - d) / 10)
                return fail(lx, start, EMBER_ERR_NOT_SUPPORTED,
                            "integer literal too large (integers are 64-bit)");
            v = v * 10 + d;
        }
        t.u.i = v;
    }
    lx->i = end;
    return emit(lx, start, t);
}

static int hex_val(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads a string literal, decoding Python's escapes as jinja2 does. */
static ember_status lex_string(lexer *lx) {
    size_t start = lx->i;
    char q = lx->s[start];
    size_t k = start + 1;
    while (k < lx->n && lx->s[k] != q) k += (lx->s[k] == '\\' && k + 1 < lx->n) ? 2 : 1;
    if (k >= lx->n) return fail(lx, start, EMBER_ERR_INVALID_ARGUMENT, "unterminated string literal");
    size_t b = start + 1, e = k;
    char *out = jj_alloc(lx->a, e - b + 1);
    if (out == NULL) return fail(lx, start, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    size_t o = 0;
    for (size_t i = b; i < e;) {
        char c = lx->s[i];
        if (c != '\\') {
            out[o++] = c;
            i++;
            continue;
        }
        char x = lx->s[i + 1];
        uint32_t cp = 0;
        int ndig = 0;
        i += 2;
        switch (x) {
        case '\n': continue;
        case '\\': out[o++] = '\\'; continue;
        case '\'': out[o++] = '\''; continue;
        case '"': out[o++] = '"'; continue;
        case 'a': out[o++] = '\a'; continue;
        case 'b': out[o++] = '\b'; continue;
        case 'f': out[o++] = '\f'; continue;
        case 'n': out[o++] = '\n'; continue;
        case 'r': out[o++] = '\r'; continue;
        case 't': out[o++] = '\t'; continue;
        case 'v': out[o++] = '\v'; continue;
        case 'x': ndig = 2; break;
        case 'u': ndig = 4; break;
        case 'U': ndig = 8; break;
        case 'N':
            return fail(lx, i - 2, EMBER_ERR_NOT_SUPPORTED, "\\N{...} escapes are not supported");
        default:
            if (x >= '0' && x <= '7') {
                cp = (uint32_t)(x - '0');
                for (int d = 0; d < 2 && i < e && lx->s[i] >= '0' && lx->s[i] <= '7'; d++)
                    cp = cp * 8 + (uint32_t)(lx->s[i++] - '0');
                o += ember_utf8_encode(cp, out + o);
                continue;
            }
            /* Python keeps an unknown escape as it is. */
            out[o++] = '\\';
            i--;
            continue;
        }
        for (int d = 0; d < ndig; d++) {
            int h = i < e ? hex_val(lx->s[i]) : -1;
            if (h < 0) return fail(lx, i, EMBER_ERR_INVALID_ARGUMENT, "truncated \\x, \\u or \\U escape");
            cp = cp * 16 + (uint32_t)h;
            i++;
        }
        if (cp > 0x10FFFF) return fail(lx, i, EMBER_ERR_INVALID_ARGUMENT, "escape past U+10FFFF");
        if (cp >= 0xD800 && cp <= 0xDFFF)
            return fail(lx, i, EMBER_ERR_NOT_SUPPORTED, "surrogate escapes are not supported");
        o += ember_utf8_encode(cp, out + o);
    }
    out[o] = '\0';
    jj_token t = tok(T_STRING);
    t.u.s.p = out;
    t.u.s.n = o;
    lx->i = e + 1;
    return emit(lx, start, t);
}

typedef struct op_spell {
    const char *s;
    jj_op op;
} op_spell;

/* Longest first. */
static const op_spell k_ops[] = {
    {"//", OP_FLOORDIV}, {"**", OP_POW},  {"==", OP_EQ},       {"!=", OP_NE},
    {">=", OP_GTEQ},     {"<=", OP_LTEQ}, {"+", OP_ADD},       {"-", OP_SUB},
    {"/", OP_DIV},       {"*", OP_MUL},   {"%", OP_MOD},       {"~", OP_TILDE},
    {"[", OP_LBRACKET},  {"]", OP_RBRACKET}, {"(", OP_LPAREN}, {")", OP_RPAREN},
    {"{", OP_LBRACE},    {"}", OP_RBRACE}, {">", OP_GT},       {"<", OP_LT},
    {"=", OP_ASSIGN},    {".", OP_DOT},   {":", OP_COLON},     {"|", OP_PIPE},
    {",", OP_COMMA},     {";", OP_SEMICOLON},
};

static ember_status lex_op(lexer *lx) {
    size_t start = lx->i;
    for (size_t k = 0; k < sizeof k_ops / sizeof *k_ops; k++) {
        if (!at(lx, start, k_ops[k].s)) continue;
        char c = k_ops[k].s[0];
        char want = c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0;
        if (c == '(' || c == '[' || c == '{') {
            if (lx->depth >= sizeof lx->brackets)
                return fail(lx, start, EMBER_ERR_NOT_SUPPORTED, "brackets nested too deeply");
            lx->brackets[lx->depth++] = c;
        } else if (want != 0) {
            char msg[64];
            if (lx->depth == 0) {
                snprintf(msg, sizeof msg, "unexpected '%c'", c);
                return fail(lx, start, EMBER_ERR_INVALID_ARGUMENT, msg);
            }
            if (lx->brackets[lx->depth - 1] != want) {
                char open = lx->brackets[lx->depth - 1];
                snprintf(msg, sizeof msg, "unexpected '%c', expected '%c'", c,
                         open == '(' ? ')' : open == '[' ? ']' : '}');
                return fail(lx, start, EMBER_ERR_INVALID_ARGUMENT, msg);
            }
            lx->depth--;
        }
        jj_token t = tok(T_OP);
        t.op = (uint8_t)k_ops[k].op;
        lx->i = start + strlen(k_ops[k].s);
        return emit(lx, start, t);
    }
    char msg[64];
    unsigned char c = (unsigned char)lx->s[start];
    if (c >= 0x20 && c < 0x7F) snprintf(msg, sizeof msg, "unexpected character '%c'", c);
    else snprintf(msg, sizeof msg, "unexpected character (byte 0x%02X)", c);
    return fail(lx, start, EMBER_ERR_INVALID_ARGUMENT, msg);
}

/* Reads the inside of {% %} (block) or {{ }} up to and including its end. */
static ember_status lex_tag(lexer *lx, bool block, size_t tag_start) {
    lx->depth = 0;
    for (;;) {
        size_t i = lx->i;
        if (lx->depth == 0) {
            size_t end = 0;
            bool found = false;
            if (block) {
                if (at(lx, i, "+%}")) {
                    end = i + 3, found = true;
                } else if (at(lx, i, "-%}")) {
                    end = skip_spaces(lx, i + 3), found = true;
                } else if (at(lx, i, "%}")) {
                    end = i + 2, found = true;
                    if (end < lx->n && lx->s[end] == '\n') end++;
                }
            } else {
                if (at(lx, i, "-}}")) {
                    end = skip_spaces(lx, i + 3), found = true;
                } else if (at(lx, i, "}}")) {
                    end = i + 2, found = true;
                }
            }
            if (found) {
                ember_status st = emit(lx, i, tok(block ? T_BLOCK_END : T_VAR_END));
                if (st != EMBER_OK) return st;
                lx->line_starting = end > i && lx->s[end - 1] == '\n';
                lx->i = end;
                return EMBER_OK;
            }
        }
        if (i >= lx->n)
            return fail(lx, tag_start, EMBER_ERR_INVALID_ARGUMENT,
                        block ? "unexpected end of template: missing '%}'"
                              : "unexpected end of template: missing '}}'");
        size_t sp = space_at(lx, i);
        if (sp != 0) {
            lx->i = i + sp;
            continue;
        }
        char c = lx->s[i];
        ember_status st;
        if (is_digit(c)) {
            st = lex_number(lx);
        } else if (is_name_start(c)) {
            size_t k = i;
            while (k < lx->n && (is_name_start(lx->s[k]) || is_digit(lx->s[k]))) k++;
            jj_token t = tok(T_NAME);
            t.u.s.p = lx->s + i;
            t.u.s.n = k - i;
            lx->i = k;
            st = emit(lx, i, t);
        } else if (c == '\'' || c == '"') {
            st = lex_string(lx);
        } else {
            st = lex_op(lx);
        }
        if (st != EMBER_OK) return st;
    }
}

/* ------------------------------------------------------------------------ */
/* Outside tags                                                              */
/* ------------------------------------------------------------------------ */

/* "{%[-+]? raw [-]?%}" at i: the end of the tag (after "-%}" spaces), or 0. */
static size_t raw_begin_end(const lexer *lx, size_t i) {
    size_t k = i + 2;
    if (k < lx->n && (lx->s[k] == '-' || lx->s[k] == '+')) k++;
    k = skip_spaces(lx, k);
    if (!at(lx, k, "raw")) return 0;
    k = skip_spaces(lx, k + 3);
    if (at(lx, k, "-%}")) return skip_spaces(lx, k + 3);
    if (at(lx, k, "%}")) return k + 2;
    return 0;
}

static ember_status lex_raw(lexer *lx, size_t tag_start) {
    for (size_t i = lx->i; i + 1 < lx->n; i++) {
        if (lx->s[i] != '{' || lx->s[i + 1] != '%') continue;
        size_t k = i + 2;
        char sign = 0;
        if (k < lx->n && (lx->s[k] == '-' || lx->s[k] == '+')) sign = lx->s[k++];
        k = skip_spaces(lx, k);
        if (!at(lx, k, "endraw")) continue;
        k = skip_spaces(lx, k + 6);
        size_t end;
        if (at(lx, k, "+%}")) {
            end = k + 3;
        } else if (at(lx, k, "-%}")) {
            end = skip_spaces(lx, k + 3);
        } else if (at(lx, k, "%}")) {
            end = k + 2;
            if (end < lx->n && lx->s[end] == '\n') end++;
        } else {
            continue;
        }
        size_t text_end = strip_before(lx, lx->i, i, sign, false);
        ember_status st = emit_data(lx, lx->i, text_end);
        if (st != EMBER_OK) return st;
        lx->line_starting = lx->s[end - 1] == '\n';
        lx->i = end;
        return EMBER_OK;
    }
    return fail(lx, tag_start, EMBER_ERR_INVALID_ARGUMENT, "missing {% endraw %}");
}

static ember_status lex_comment(lexer *lx, size_t tag_start) {
    for (size_t i = lx->i; i < lx->n; i++) {
        size_t end = 0;
        if ((lx->s[i] == '+' || lx->s[i] == '-') && at(lx, i + 1, "#}")) {
            end = lx->s[i] == '-' ? skip_spaces(lx, i + 3) : i + 3;
        } else if (at(lx, i, "#}")) {
            end = i + 2;
            if (end < lx->n && lx->s[end] == '\n') end++;
        } else {
            continue;
        }
        lx->line_starting = lx->s[end - 1] == '\n';
        lx->i = end;
        return EMBER_OK;
    }
    return fail(lx, tag_start, EMBER_ERR_INVALID_ARGUMENT, "missing end of comment tag '#}'");
}

ember_status jj_lex(const char *name, const char *src, size_t n, jj_arena *a, jj_tokens *out) {
    lexer lx;
    memset(&lx, 0, sizeof lx);
    lx.name = name;
    lx.s = src;
    lx.n = n;
    lx.a = a;
    lx.out = out;
    lx.line_starting = true;
    lx.pos_line = lx.pos_col = 1;
    ember_status st;
    while (lx.i < lx.n) {
        /* The next tag start. */
        size_t t = lx.i;
        char kind = 0;
        while (t + 1 < lx.n) {
            if (lx.s[t] == '{' && (lx.s[t + 1] == '{' || lx.s[t + 1] == '%' || lx.s[t + 1] == '#')) {
                kind = lx.s[t + 1];
                break;
            }
            t++;
        }
        if (kind == 0) {
            st = emit_data(&lx, lx.i, lx.n);
            if (st != EMBER_OK) return st;
            lx.i = lx.n;
            break;
        }
        char sign = 0;
        if (t + 2 < lx.n && (lx.s[t + 2] == '-' || lx.s[t + 2] == '+')) sign = lx.s[t + 2];
        size_t raw_end = kind == '%' ? raw_begin_end(&lx, t) : 0;
        size_t text_end = strip_before(&lx, lx.i, t, sign, kind == '{');
        st = emit_data(&lx, lx.i, text_end);
        if (st != EMBER_OK) return st;
        if (raw_end != 0) {
            lx.line_starting = lx.s[raw_end - 1] == '\n';
            lx.i = raw_end;
            st = lex_raw(&lx, t);
        } else {
            lx.line_starting = false;
            lx.i = t + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                st = lex_comment(&lx, t);
            } else {
                st = emit(&lx, t, tok(kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN));
                if (st == EMBER_OK) st = lex_tag(&lx, kind == '%', t);
            }
        }
        if (st != EMBER_OK) return st;
    }
    return emit(&lx, lx.n, tok(T_EOF));
}
