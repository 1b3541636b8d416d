/*
 * extension/llm/jinja/jinja_internal.h — what the engine's files share:
 * the arena, byte buffers, values, the syntax tree and the render state.
 *
 *   jinja_text.c     UTF-8, Python's whitespace and case mapping
 *   jinja_case_tables.c  case tables generated from Python (see the file)
 *   jinja_value.c    values, Python's ==, <, str(), repr(), json.dumps,
 *                    contexts (public API)
 *   jinja_lexer.c    source -> tokens (delimiters, whitespace control)
 *   jinja_parser.c   tokens -> tree (public ember_jinja_parse)
 *   jinja_eval.c     tree + context -> text (public ember_jinja_render)
 *   jinja_filters.c  filters, tests, methods and global functions
 */
#ifndef EMBER_LLM_JINJA_INTERNAL_H
#define EMBER_LLM_JINJA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "jinja.h"

/* ------------------------------------------------------------------------ */
/* Arena: many small allocations, freed together                             */
/* ------------------------------------------------------------------------ */

typedef struct jj_block jj_block;

typedef struct jj_arena {
    jj_block *head;
    size_t total; /* bytes held in blocks */
    size_t limit; /* most bytes to hold; 0: no limit */
} jj_arena;

/* size bytes aligned to 8, or NULL (malloc failed or the limit is reached). */
void *jj_alloc(jj_arena *a, size_t size);
/* n * size bytes, NULL also on overflow. */
void *jj_alloc_array(jj_arena *a, size_t n, size_t size);
/* A NUL-terminated copy of s[0..n). */
char *jj_strdup(jj_arena *a, const char *s, size_t n);
void jj_arena_free(jj_arena *a);

/* A point in an arena's history; resetting to it frees what came after. */
typedef struct jj_mark {
    jj_block *head;
    size_t used;
} jj_mark;

jj_mark jj_arena_mark(const jj_arena *a);
void jj_arena_reset(jj_arena *a, jj_mark m);

/* ------------------------------------------------------------------------ */
/* Byte buffer (malloc), with an optional size limit                         */
/* ------------------------------------------------------------------------ */

typedef struct jj_buf {
    char *p;
    size_t n, cap;
    size_t limit;   /* most bytes; 0: no limit */
    bool over;      /* a put went past the limit */
    bool oom;       /* malloc failed */
} jj_buf;

bool jj_buf_put(jj_buf *b, const char *s, size_t n);
bool jj_buf_putc(jj_buf *b, char c);
bool jj_buf_puts(jj_buf *b, const char *s);
void jj_buf_free(jj_buf *b);

/* Checked int64 arithmetic: false on overflow. */
static inline bool jj_add_i64(int64_t a, int64_t b, int64_t *out) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return false;
    *out = a + b;
    return true;
}

static inline bool jj_sub_i64(int64_t a, int64_t b, int64_t *out) {
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return false;
    *out = a - b;
    return true;
}

static inline bool jj_mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a != 0 && b != 0) {
        if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                  : (b > 0 ? a < INT64_MIN / b : b < INT64_MAX / a))
            return false;
    }
    *out = a * b;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Text (jinja_text.c)                                                       */
/* ------------------------------------------------------------------------ */

/* Decodes the code point at s[0..n) (n > 0); returns its length, 1 for an
 * invalid byte (decoded as U+FFFD). */
size_t jj_utf8_next(const char *s, size_t n, uint32_t *cp);
/* True when s[0..n) is valid UTF-8. */
bool jj_utf8_valid(const char *s, size_t n);
/* Number of code points in s[0..n). */
size_t jj_utf8_count(const char *s, size_t n);
/* Byte offset of code point k (k <= count). */
size_t jj_utf8_offset(const char *s, size_t n, size_t k);
/* Python's str.isspace() for one code point. */
bool jj_is_space(uint32_t cp);
/* Python's str.splitlines() boundaries (\n \r \v \f \x1c-\x1e \x85 \u2028 \u2029). */
bool jj_is_linebreak(uint32_t cp);
/* Case tables (jinja_case_tables.c, generated from Python's str methods). */
typedef struct jj_case_range {
    uint32_t first, last, stride;
    int32_t upper, lower, title; /* mapping = code point + difference */
    uint32_t flags;              /* JJ_CASE_* */
} jj_case_range;

typedef struct jj_case_special {
    uint32_t cp;
    const char *upper, *lower, *title; /* UTF-8 */
} jj_case_special;

enum {
    JJ_CASE_LOWER = 1,
    JJ_CASE_UPPER = 2,
    JJ_CASE_TITLE = 4,
    JJ_CASE_CASED = 8,
    JJ_CASE_SPECIAL = 16
};

extern const jj_case_range jj_case_ranges[];
extern const size_t jj_case_ranges_count;
extern const jj_case_special jj_case_specials[];
extern const size_t jj_case_specials_count;

/* Python's islower / isupper / istitle / "cased" for one code point. */
bool jj_is_lower(uint32_t cp);
bool jj_is_upper(uint32_t cp);
bool jj_is_title(uint32_t cp);
bool jj_is_cased(uint32_t cp);
bool jj_is_alpha(uint32_t cp);
bool jj_is_digit(uint32_t cp);
/* Python's str.isprintable() for one code point (approximate outside ASCII
 * and Latin-1: control, format, separator and private-use code points are
 * not printable). */
bool jj_is_printable(uint32_t cp);
/* Case modes of jj_buf_case(). */
enum { JJ_LOWER, JJ_UPPER, JJ_TITLE };

/* Appends the case mapping (mode) of the code point of len bytes at s[i],
 * as Python maps it: 'ß' upper is "SS", and a capital sigma that ends a
 * word (s gives its neighbours) lowers to 'ς'. */
bool jj_buf_case(jj_buf *b, const char *s, size_t n, size_t i, size_t len, int mode);
/* Appends s[0..n) mapped to lower or upper case as a whole. */
bool jj_buf_map_case(jj_buf *b, const char *s, size_t n, int mode);

/* ------------------------------------------------------------------------ */
/* Values                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum jj_type {
    JJ_UNDEF,  /* u.s: why (a message for errors), may be empty */
    JJ_NONE,
    JJ_BOOL,
    JJ_INT,
    JJ_FLOAT,
    JJ_STR,    /* u.s: UTF-8 bytes */
    JJ_LIST,   /* u.list; JJ_F_TUPLE for a tuple */
    JJ_DICT,   /* u.dict */
    JJ_NS,     /* u.dict: a namespace's attributes (mutable while rendering) */
    JJ_FUNC,   /* fn: a global function or a method; a method's object is
                  self_type / self_flags / u (no allocation) */
    JJ_MACRO,  /* u.macro */
    JJ_LOOP    /* u.loop: a for loop's `loop` */
} jj_type;

enum { JJ_F_TUPLE = 1 };

typedef struct jj_list jj_list;
typedef struct jj_dict jj_dict;
typedef struct jj_node jj_node;
typedef struct jj_loop jj_loop;
typedef struct jj_value jj_value;
typedef struct jj_frame jj_frame;

/* A macro (or a call block's caller) and the frame its body reads names
 * from (NULL: the top level). */
typedef struct jj_closure {
    const jj_node *node;
    jj_frame *frame;
} jj_closure;

struct jj_value {
    uint8_t type;
    uint8_t flags;
    uint8_t self_type;  /* JJ_FUNC: type of the bound object (JJ_NONE: none) */
    uint8_t self_flags; /* JJ_FUNC: its flags */
    uint16_t fn;        /* JJ_FUNC: jinja_filters.c's function id */
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t n;
        } s;
        jj_list *list;
        jj_dict *dict;
        const jj_closure *macro;
        jj_loop *loop;
    } u;
};

struct jj_list {
    size_t n, cap;
    jj_value *items; /* (cap) */
};

/* Insertion-ordered; a hash index once it has more than a few members. */
struct jj_dict {
    size_t n, cap;
    jj_value *keys, *vals; /* (cap) */
    uint32_t *index;       /* (index_cap) member + 1, 0 when free; or NULL */
    size_t index_cap;
};

struct jj_loop {
    const jj_value *items; /* (length) what the loop runs over */
    int64_t length;
    int64_t index0;
};

/* The public opaque value is an internal one. */
struct ember_jinja_value {
    jj_value v;
};

jj_value jj_none(void);
jj_value jj_bool(bool b);
jj_value jj_int(int64_t i);
jj_value jj_float(double d);
jj_value jj_str(const char *p, size_t n);
jj_value jj_undef(const char *why);
jj_value jj_list_value(jj_list *l, bool tuple);

jj_list *jj_list_new(jj_arena *a, size_t cap);
bool jj_list_push(jj_arena *a, jj_list *l, jj_value v);
jj_dict *jj_dict_new(jj_arena *a);
/* Sets key (replacing the value of an equal key in place). */
bool jj_dict_set(jj_arena *a, jj_dict *d, jj_value key, jj_value val);
const jj_value *jj_dict_get(const jj_dict *d, jj_value key);
const jj_value *jj_dict_get_str(const jj_dict *d, const char *p, size_t n);

/* Python's truth value. */
bool jj_truthy(jj_value v);
/* Python's == (1 == 1.0 == True; a tuple never equals a list). */
bool jj_equal(jj_value a, jj_value b);
/* Python's < for numbers, strings, lists and tuples: 0 ok (*less set), -1
 * when the types cannot be ordered. */
int jj_less(jj_value a, jj_value b, bool *less);
/* Python's type name ("str", "int", "dict", ..., "Undefined"). */
const char *jj_type_name(jj_value v);
/* Appends Python's str(v) / repr(v). False when the buffer failed. */
bool jj_write_str(jj_buf *b, jj_value v);
bool jj_write_repr(jj_buf *b, jj_value v);
/* Python's repr(float). buf needs 32 bytes; returns the length. */
size_t jj_format_float(double d, char *buf);

/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys): indent
 * NULL for none; separators NULL for the defaults. Returns 0, or -1 with a
 * message in err (a value JSON cannot hold) or -2 when the buffer failed. */
typedef struct jj_json_style {
    const char *indent; /* NULL: no newlines */
    size_t indent_len;
    const char *item_sep, *key_sep;
    size_t item_sep_len, key_sep_len;
    bool sort_keys;
    bool ensure_ascii; /* non-ASCII as \uXXXX escapes */
} jj_json_style;
int jj_write_json(jj_buf *b, jj_value v, const jj_json_style *style, char *err, size_t err_cap,
                  size_t depth);

/* Converts a JSON value into arena a (false: out of memory, or nested
 * deeper than the value depth limit). */
bool jj_from_json(jj_arena *a, const ember_json *json, jj_value *out);
/* A context's variables (NULL for a NULL context). */
const jj_dict *jj_context_vars(const ember_jinja_context *ctx);

/* ------------------------------------------------------------------------ */
/* Tokens (jinja_lexer.c)                                                    */
/* ------------------------------------------------------------------------ */

typedef enum jj_tok_type {
    T_EOF,
    T_DATA,       /* text (s) */
    T_VAR_BEGIN,  /* {{ */
    T_VAR_END,    /* }} */
    T_BLOCK_BEGIN,/* {% */
    T_BLOCK_END,  /* %} */
    T_NAME,       /* s */
    T_STRING,     /* s: decoded */
    T_INT,        /* i */
    T_FLOAT,      /* f */
    T_OP          /* op */
} jj_tok_type;

typedef enum jj_op {
    OP_ADD, OP_SUB, OP_DIV, OP_FLOORDIV, OP_MUL, OP_MOD, OP_POW, OP_TILDE,
    OP_LBRACKET, OP_RBRACKET, OP_LPAREN, OP_RPAREN, OP_LBRACE, OP_RBRACE,
    OP_EQ, OP_NE, OP_GT, OP_GTEQ, OP_LT, OP_LTEQ, OP_ASSIGN, OP_DOT, OP_COLON,
    OP_PIPE, OP_COMMA, OP_SEMICOLON
} jj_op;

typedef struct jj_token {
    uint8_t type;
    uint8_t op;
    uint32_t line, col;
    union {
        struct {
            const char *p;
            size_t n;
        } s;
        int64_t i;
        double f;
    } u;
} jj_token;

typedef struct jj_tokens {
    jj_token *v;
    size_t n, cap;
} jj_tokens;

/* Turns src (already normalized: "\n" line ends, final newline dropped)
 * into tokens; strings and text point into arena a or src. */
ember_status jj_lex(const char *name, const char *src, size_t n, jj_arena *a, jj_tokens *out);

/* ------------------------------------------------------------------------ */
/* Syntax tree (jinja_parser.c)                                              */
/* ------------------------------------------------------------------------ */

typedef enum jj_kind {
    /* expressions */
    N_CONST,    /* u.cst */
    N_NAME,     /* u.name */
    N_LIST,     /* u.items */
    N_TUPLE,    /* u.items */
    N_DICT,     /* u.items: key, value, key, value, ... */
    N_GETATTR,  /* u.attr */
    N_GETITEM,  /* u.item */
    N_SLICE,    /* u.slice (only as the key of N_GETITEM) */
    N_CALL,     /* u.call: fn(args, kw) */
    N_FILTER,   /* u.call: fn | filter id(args, kw) */
    N_TEST,     /* u.call: fn is [not] test id(args, kw) */
    N_NOT,      /* u.bin.a */
    N_NEG,      /* u.bin.a */
    N_POS,      /* u.bin.a */
    N_BINOP,    /* u.bin, op: OP_ADD ... OP_POW */
    N_AND,      /* u.bin */
    N_OR,       /* u.bin */
    N_CONCAT,   /* u.items */
    N_COMPARE,  /* u.cmp */
    N_COND,     /* u.cond */
    N_NSREF,    /* u.attr: name.attr as an assignment target */
    /* statements */
    N_TEXT,     /* u.name: text */
    N_OUTPUT,   /* u.out */
    N_IF,       /* u.if_ */
    N_FOR,      /* u.for_ */
    N_SET,      /* u.set */
    N_SET_BLOCK,/* u.set: target and body */
    N_MACRO,    /* u.macro */
    N_CALL_BLOCK, /* u.macro: the caller (named "caller"), u.macro.call the call */
    N_BREAK,
    N_CONTINUE,
    N_BLOCK     /* u.body: statements run in place (generation) */
} jj_kind;

/* Comparison operators of N_COMPARE beyond the jj_op ones. */
enum { CMP_IN = 100, CMP_NOTIN = 101 };

typedef struct jj_nodes {
    jj_node **v;
    size_t n;
} jj_nodes;

typedef struct jj_kwarg {
    const char *name;
    size_t len;
    jj_node *value;
} jj_kwarg;

struct jj_node {
    uint8_t kind;
    uint8_t op;      /* N_BINOP: jj_op; N_TEST: 1 when negated */
    uint16_t id;     /* N_FILTER / N_TEST: filter or test id */
    uint32_t line, col;
    union {
        jj_value cst;
        struct {
            const char *p;
            size_t n;
        } name;
        jj_nodes items;
        struct {
            jj_node *obj;
            const char *p;
            size_t n;
        } attr;
        struct {
            jj_node *obj, *key;
        } item;
        struct {
            jj_node *start, *stop, *step;
        } slice;
        struct {
            jj_node *fn;
            jj_nodes args;
            jj_kwarg *kw;
            size_t nkw;
        } call;
        struct {
            jj_node *a, *b;
        } bin;
        struct {
            jj_node *first;
            jj_nodes rest;
            uint8_t *ops;
        } cmp;
        struct {
            jj_node *test, *yes, *no;
        } cond;
        struct {
            jj_node *expr;
        } out;
        struct {
            jj_node *test;
            jj_nodes body, else_body;
        } if_;
        struct {
            jj_node *target, *iter, *cond;
            jj_nodes body, else_body;
        } for_;
        struct {
            jj_node *target, *expr;
            jj_nodes body;
        } set;
        struct {
            const char *p;
            size_t n;
            jj_nodes params;   /* N_NAME */
            jj_nodes defaults; /* aligned with params; NULL when none */
            jj_nodes body;
            bool varargs, kwargs, caller; /* the body reads `varargs`, `kwargs`, `caller` */
            jj_node *call;                /* N_CALL_BLOCK: the macro call */
        } macro;
        jj_nodes body;
    } u;
};

struct ember_jinja_template {
    jj_arena arena;  /* nodes, names, strings */
    char *name;      /* for messages */
    jj_nodes body;
};

/* ------------------------------------------------------------------------ */
/* Rendering (jinja_eval.c)                                                  */
/* ------------------------------------------------------------------------ */

typedef struct jj_render {
    const ember_jinja_template *tpl;
    const jj_dict *vars;    /* the context's variables, or NULL */
    jj_arena arena;         /* scratch values, freed after the render */
    jj_buf *out;            /* where text goes now */
    size_t max_output;
    uint64_t steps, max_steps;
    size_t depth, max_depth;
    uint64_t escapes;       /* assignments into existing objects (namespaces) */
    jj_frame *root;
    bool fixed_time;
    int64_t time;
} jj_render;

typedef struct jj_kwval {
    const char *name;
    size_t len;
    jj_value value;
} jj_kwval;

/* Records "NAME:LINE:COL: what" for node at and returns st. */
ember_status jj_fail(jj_render *r, const jj_node *at, ember_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* The error for scratch memory: the memory limit or malloc. */
ember_status jj_fail_oom(jj_render *r, const jj_node *at);
/* The error for using an undefined value. */
ember_status jj_fail_undefined(jj_render *r, const jj_node *at, jj_value v);

/* A string value holding str(v) (v itself when it is a string). */
ember_status jj_to_string(jj_render *r, const jj_node *at, jj_value v, jj_value *out);
/* A string value made from a buffer's bytes (the buffer is freed). */
ember_status jj_buf_to_value(jj_render *r, const jj_node *at, jj_buf *b, jj_value *out);
/* jinja2's getattr / getitem. */
ember_status jj_getattr(jj_render *r, const jj_node *at, jj_value obj, const char *name,
                        size_t n, jj_value *out);
ember_status jj_getitem(jj_render *r, const jj_node *at, jj_value obj, jj_value key,
                        jj_value *out);
/* The items a for loop would visit (dict keys, string characters, ...). */
ember_status jj_iterate(jj_render *r, const jj_node *at, jj_value v, jj_list **out);
/* Calls a function, bound method or macro. */
ember_status jj_call(jj_render *r, const jj_node *at, jj_value fn, const jj_value *args,
                     size_t nargs, const jj_kwval *kw, size_t nkw, jj_value *out);
/* One evaluation step plus one more per 64 bytes of work (counts toward
 * max_steps, so work on long strings and lists is bounded too). */
ember_status jj_charge(jj_render *r, const jj_node *at, uint64_t bytes);

/* ------------------------------------------------------------------------ */
/* Filters, tests, functions (jinja_filters.c)                               */
/* ------------------------------------------------------------------------ */

/* Ids by name, or -1. */
int jj_filter_id(const char *name, size_t n);
int jj_test_id(const char *name, size_t n);
/* A global function (range, namespace, dict, raise_exception,
 * strftime_now) by name, as a value; false if none. */
bool jj_global(const char *name, size_t n, jj_value *out);
/* A method of a str, dict, list or loop as a bound value; false if none. */
bool jj_method(jj_value self, const char *name, size_t n, jj_value *out);

ember_status jj_apply_filter(jj_render *r, const jj_node *at, int id, jj_value v,
                             const jj_value *args, size_t nargs, const jj_kwval *kw, size_t nkw,
                             jj_value *out);
ember_status jj_apply_test(jj_render *r, const jj_node *at, int id, jj_value v,
                           const jj_value *args, size_t nargs, const jj_kwval *kw, size_t nkw,
                           bool *out);
/* Calls a JJ_FUNC value. */
ember_status jj_call_function(jj_render *r, const jj_node *at, jj_value fn,
                              const jj_value *args, size_t nargs, const jj_kwval *kw,
                              size_t nkw, jj_value *out);

/* Python's a % b for strings ("%s" formatting). */
ember_status jj_percent_format(jj_render *r, const jj_node *at, jj_value fmt, jj_value args,
                               jj_value *out);

#endif /* EMBER_LLM_JINJA_INTERNAL_H */
