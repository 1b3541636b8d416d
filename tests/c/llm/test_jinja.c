/*
 * Tests of the Jinja engine (extension/llm/jinja/jinja.h): printing values
 * as Python does, whitespace control, operators, attribute and item access,
 * undefined values, every statement, filter, test, method and global, the
 * tojson filter, parse errors with their line:column, the limits (nesting,
 * steps, recursion, output, memory), the context API, the chat templates
 * of tests/fixtures/llm/chat_templates, and truncated, flipped and random
 * templates (a status, never a crash). The comparison with jinja2 itself
 * is tests/python/test_llm_jinja.py.
 *
 * Harness modes, used by tests/python/test_llm_jinja.py:
 *   test_jinja --render TEMPLATE CONTEXT_JSON [--now EPOCH]
 *       prints the rendered text (exactly, no newline added), or
 *       "error: MESSAGE" on stderr and exits 1
 *   test_jinja --render-many TEMPLATE CONTEXTS_JSON [--now EPOCH]
 *       CONTEXTS_JSON is an array of contexts; prints, for each, "\x1e" then
 *       "OK\x1f" and the text, or "ERR\x1f" and the message
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jinja/jinja.h"
#include "text/json.h"

/* ------------------------------------------------------------------------ */
/* Harness                                                                   */
/* ------------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    while (s != NULL) {
        n += fread(s + n, 1, cap - n, f);
        if (n < cap) break;
        char *t = realloc(s, cap * 2);
        if (t == NULL) {
            free(s);
            s = NULL;
            break;
        }
        s = t;
        cap *= 2;
    }
    fclose(f);
    *len = n;
    return s;
}

/* Renders tpl with the JSON object ctx; the text or NULL (error in *st). */
static char *render_json(const ember_jinja_template *tpl, const ember_json *ctx_json,
                         const ember_jinja_render_options *opt, size_t *len, ember_status *st) {
    ember_jinja_context *ctx = NULL;
    char *out = NULL;
    *st = ember_jinja_context_create(&ctx);
    if (*st == EMBER_OK) *st = ember_jinja_context_set_json(ctx, ctx_json);
    if (*st == EMBER_OK) *st = ember_jinja_render(tpl, ctx, opt, &out, len);
    ember_jinja_context_destroy(ctx);
    return out;
}

static int harness(int argc, char **argv) {
    bool many = strcmp(argv[1], "--render-many") == 0;
    ember_jinja_render_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    if (argc == 6 && strcmp(argv[4], "--now") == 0) {
        opt.fixed_time = true;
        opt.time = strtoll(argv[5], NULL, 10);
    } else if (argc != 4) {
        fprintf(stderr, "usage: test_jinja --render[-many] TEMPLATE CONTEXT_JSON [--now EPOCH]\n");
        return 2;
    }
    size_t tlen, clen;
    char *tsrc = read_file(argv[2], &tlen);
    char *csrc = read_file(argv[3], &clen);
    if (tsrc == NULL || csrc == NULL) {
        fprintf(stderr, "error: cannot read %s\n", tsrc == NULL ? argv[2] : argv[3]);
        free(tsrc);
        free(csrc);
        return 2;
    }
    int rc = 0;
    ember_json_doc *doc = NULL;
    ember_jinja_template *tpl = NULL;
    ember_jinja_parse_options popt;
    memset(&popt, 0, sizeof popt);
    popt.struct_size = sizeof popt;
    if (ember_json_parse(csrc, clen, &doc) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        rc = 2;
    } else if (ember_jinja_parse(tsrc, tlen, &popt, &tpl) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        rc = 1;
    } else if (!many) {
        size_t len = 0;
        ember_status st;
        char *out = render_json(tpl, ember_json_root(doc), &opt, &len, &st);
        if (st != EMBER_OK) {
            fprintf(stderr, "error: %s\n", ember_last_error());
            rc = 1;
        } else {
            fwrite(out, 1, len, stdout);
        }
        free(out);
    } else {
        const ember_json *all = ember_json_root(doc);
        for (size_t i = 0; i < ember_json_array_size(all); i++) {
            size_t len = 0;
            ember_status st;
            char *out = render_json(tpl, ember_json_array_at(all, i), &opt, &len, &st);
            if (st != EMBER_OK) {
                printf("\x1e" "ERR\x1f%s", ember_last_error());
            } else {
                fputs("\x1e" "OK\x1f", stdout);
                fwrite(out, 1, len, stdout);
            }
            free(out);
        }
    }
    ember_jinja_template_destroy(tpl);
    ember_json_doc_destroy(doc);
    free(tsrc);
    free(csrc);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Unit test helpers                                                         */
/* ------------------------------------------------------------------------ */

static ember_jinja_render_options g_opt;

/* Renders src with the context given as a JSON object text; returns the
 * text (caller frees) or NULL with *st set. */
static char *run(const char *src, const char *ctx_json, ember_status *st) {
    ember_jinja_template *tpl = NULL;
    *st = ember_jinja_parse(src, strlen(src), NULL, &tpl);
    if (*st != EMBER_OK) return NULL;
    ember_json_doc *doc = NULL;
    const char *cj = ctx_json ? ctx_json : "{}";
    char *out = NULL;
    if (ember_json_parse(cj, strlen(cj), &doc) != EMBER_OK) {
        printf("bad test context: %s\n", ember_last_error());
        *st = EMBER_ERR_INVALID_ARGUMENT;
    } else {
        size_t len;
        out = render_json(tpl, ember_json_root(doc), &g_opt, &len, st);
        if (out != NULL && strlen(out) != len) printf("NUL inside output of %s\n", src);
    }
    ember_json_doc_destroy(doc);
    ember_jinja_template_destroy(tpl);
    return out;
}

#define EXPECT(src, ctx, want) expect_((src), (ctx), (want), __FILE__, __LINE__)
#define EXPECT_ERR(src, ctx, status, substr) expect_err_((src), (ctx), (status), (substr), __FILE__, __LINE__)

static void expect_(const char *src, const char *ctx, const char *want, const char *file, int line) {
    ember_status st;
    char *out = run(src, ctx, &st);
    if (out == NULL) {
        check_report_(false, file, line, src, "failed: %s", ember_last_error());
        return;
    }
    check_report_(strcmp(out, want) == 0, file, line, src, "got \"%s\", want \"%s\"", out, want);
    free(out);
}

static void expect_err_(const char *src, const char *ctx, ember_status want, const char *substr,
                        const char *file, int line) {
    ember_status st;
    char *out = run(src, ctx, &st);
    if (out != NULL) {
        check_report_(false, file, line, src, "rendered \"%s\", want an error", out);
        free(out);
        return;
    }
    const char *msg = ember_last_error();
    check_report_(st == want && strstr(msg, substr) != NULL, file, line, src,
                  "status %s, message \"%s\"; want %s with \"%s\"", ember_status_str(st), msg,
                  ember_status_str(want), substr);
}

/* ------------------------------------------------------------------------ */
/* Output and literals                                                       */
/* ------------------------------------------------------------------------ */

static const char k_ctx[] =
    "{\"d\": {\"a\": 1, \"b\": [1, 2], \"items\": 5, \"name\": \"Bob\"}, \"l\": [3, 1, 2],"
    " \"s\": \"Hello World\", \"n\": null, \"e\": [], \"u\": \"\xC3\xA7\xC3\xA9 \xC3\x80\xC3\x89\","
    " \"t\": true, \"f\": 1.5, \"i\": 7, \"z\": 0, \"big\": 9223372036854775807,"
    " \"msgs\": [{\"role\": \"user\", \"content\": \" hi \"},"
    " {\"role\": \"assistant\", \"content\": \"yo\"}]}";

static void test_output(void) {
    check_section("printing values as Python's str()");
    EXPECT("plain text", NULL, "plain text");
    EXPECT("", NULL, "");
    EXPECT("{{ 1 }}|{{ -2 }}|{{ 1.0 }}|{{ 1.5 }}|{{ 0.1 + 0.2 }}|{{ 1/3 }}", NULL,
           "1|-2|1.0|1.5|0.30000000000000004|0.3333333333333333");
    EXPECT("{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ -0.0 }}|{{ 1e300*1e300 }}", NULL,
           "1e+16|1000000000000000.0|0.0001|1e-05|-0.0|inf");
    EXPECT("{{ none }}|{{ None }}|{{ true }}|{{ False }}", NULL, "None|None|True|False");
    EXPECT("{{ [1, 'a', none, true, 1.5] }}", NULL, "[1, 'a', None, True, 1.5]");
    EXPECT("{{ {'k': 'v', 'n': [1]} }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }}", NULL,
           "{'k': 'v', 'n': [1]}|(1,)|(1, 2)|()");
    EXPECT("{{ [\"it's\", 'say \"x\"', 'both \\' \"', '\\n\\t\\x01\\u00e9'] }}", NULL,
           "[\"it's\", 'say \"x\"', 'both \\' \"', '\\n\\t\\x01\xC3\xA9']");
    EXPECT("{{ d }}", k_ctx, "{'a': 1, 'b': [1, 2], 'items': 5, 'name': 'Bob'}");
    EXPECT("{{ big }}|{{ u }}", k_ctx, "9223372036854775807|\xC3\xA7\xC3\xA9 \xC3\x80\xC3\x89");
    EXPECT("{{ 'a', 'b' }}", NULL, "('a', 'b')");
    EXPECT("{% print 'p' %}", NULL, "p");
}

static void test_whitespace(void) {
    check_section("whitespace: trim_blocks, lstrip_blocks, - and +");
    EXPECT("a\n{% if true %}\nb\n{% endif %}\nc", NULL, "a\nb\nc");
    EXPECT("  {% if true %}\n  x\n  {% endif %}\n", NULL, "  x\n");
    EXPECT("    {%+ if true %}x{% endif %}", NULL, "    x");
    EXPECT("{% if true +%}\nx{% endif %}", NULL, "\nx");
    EXPECT("a  {%- if true -%}  b  {%- endif -%}  c", NULL, "abc");
    EXPECT("a \n {{- 'b' -}} \n c", NULL, "abc");
    EXPECT("  {{ 'v' }}  \n", NULL, "  v  ");
    EXPECT("x  {# comment #}\ny", NULL, "x  y");
    EXPECT("  {# comment #}\ny", NULL, "y");
    EXPECT("a {#- c -#} b", NULL, "ab");
    EXPECT("{# multi\nline #}z", NULL, "z");
    EXPECT("{% raw %}{{ x }}{% if %}{% endraw %}", NULL, "{{ x }}{% if %}");
    EXPECT("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\rd", NULL, "a\nb\nc\nd");
    EXPECT("end\n", NULL, "end");
    EXPECT("end\n\n", NULL, "end\n");
    EXPECT("x\xC2\xA0{%- if true %}y{% endif %}", NULL, "xy");
    EXPECT("\t {% if true %}tab{% endif %}", NULL, "tab");
    EXPECT("a {% if true %}b{% endif %}", NULL, "a b");
    EXPECT("{{ {'a': {'b': 1}} }}", NULL, "{'a': {'b': 1}}");
    EXPECT("{{ '{{' }}{{ '}}' }}", NULL, "{{}}");
    EXPECT("line\n{%- for x in [1, 2] %}\n  - {{ x }}\n{%- endfor %}\nend", NULL,
           "line  - 1  - 2end");
    EXPECT("line\n{% for x in [1, 2] %}\n  - {{ x }}\n{% endfor %}\nend", NULL,
           "line\n  - 1\n  - 2\nend");
}

static void test_operators(void) {
    check_section("operators as Python's");
    EXPECT("{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % -3 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ 6 / 2 }}", NULL,
           "3|-4|-2|2|3.5|3.0");
    EXPECT("{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 0.5 }}|{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}", NULL,
           "1024|0.5|1.4142135623730951|64|4");
    EXPECT("{{ 5.0 // 2 }}|{{ -5.5 % 2 }}|{{ 7 % 2.5 }}|{{ true + 1 }}", NULL, "2.0|0.5|2.0|2");
    EXPECT("{{ 'a' + 'b' }}|{{ 'ab' * 2 }}|{{ 2 * 'x' }}|{{ 'x' * 0 }}|{{ [1] * 3 }}|{{ [1] + [2] }}",
           NULL, "ab|abab|xx||[1, 1, 1]|[1, 2]");
    EXPECT("{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ [1] ~ undefined_name }}", NULL, "a1NoneTrue1.0[1]");
    EXPECT("{{ 1 == 1.0 }}|{{ true == 1 }}|{{ 'a' == 'a' }}|{{ [1, 2] == [1, 2] }}|{{ (1,) == [1] }}",
           NULL, "True|True|True|True|False");
    EXPECT("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'a' < 'b' }}|{{ [1, 2] < [1, 3] }}|{{ 2 >= 2.0 }}",
           NULL, "True|False|True|True|True");
    EXPECT("{{ 'a' in 'cat' }}|{{ 2 in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 3 not in [1] }}|{{ '' in 'x' }}",
           NULL, "True|True|True|True|True");
    EXPECT("{{ 0 or 'x' }}|{{ 1 and 2 }}|{{ '' and 1 }}|{{ none or [] }}|{{ not 0 }}|{{ not [1] }}",
           NULL, "x|2||[]|True|False");
    EXPECT("{{ 'y' if true else 'n' }}|{{ 'y' if 0 else 'n' }}|{{ 'y' if 0 }}|{{ 1 if 0 else 2 if 1 else 3 }}",
           NULL, "y|n||2");
    EXPECT("{{ -i }}|{{ +i }}|{{ -f }}|{{ -(1) }}|{{ -i|abs }}", k_ctx, "-7|7|-1.5|-1|7");
    EXPECT("{{ 'a' 'b' }}|{{ \"d\\\"q\" }}|{{ 's\\'q' }}|{{ 'x\\ty' }}|{{ '\\u00e9\\U0001F600' }}|{{ '\\101' }}",
           NULL, "ab|d\"q|s'q|x\ty|\xC3\xA9\xF0\x9F\x98\x80|A");
    EXPECT("{{ 1_000 }}|{{ 1.5e3 }}|{{ 2E-2 }}|{{ 0.5 }}", NULL, "1000|1500.0|0.02|0.5");
    EXPECT_ERR("{{ 1 / 0 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:6: division by zero");
    EXPECT_ERR("{{ 1 // 0 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "by zero");
    EXPECT_ERR("{{ 1 % 0 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "by zero");
    EXPECT_ERR("{{ 'a' + 1 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'str' and 'int'");
    EXPECT_ERR("{{ 1 < 'a' }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'<' not supported");
    EXPECT_ERR("{{ 'a' in 1 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "not iterable");
    EXPECT_ERR("{{ 1 in 'a' }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "requires string");
    EXPECT_ERR("{{ big + 1 }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
    EXPECT_ERR("{{ 2 ** 64 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "integer overflow");
    EXPECT_ERR("{{ -'a' }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "bad operand type for unary -");
    EXPECT_ERR("{{ (-8) ** 0.5 }}", NULL, EMBER_ERR_NOT_SUPPORTED, "complex");
}

static void test_access(void) {
    check_section("attributes, items, slices");
    EXPECT("{{ d.a }}|{{ d['a'] }}|{{ d['items'] }}|{{ d.missing }}|{{ msgs[0].role }}|{{ msgs.1.content }}",
           k_ctx, "1|1|5||user|yo");
    EXPECT("{{ l[0] }}|{{ l[-1] }}|{{ l[9] }}|{{ s[1] }}|{{ s[-1] }}|{{ u[1] }}|{{ l[true] }}", k_ctx,
           "3|2||e|d|\xC3\xA9|1");
    EXPECT("{{ l[1:] }}|{{ l[:1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[-2:] }}|{{ l[5:9] }}|{{ l[2:0:-1] }}",
           k_ctx, "[1, 2]|[3]|[2, 1, 3]|[3, 2]|[1, 2]|[]|[2, 1]");
    EXPECT("{{ s[1:3] }}|{{ s[::-1] }}|{{ s[:-6] }}|{{ u[::-1] }}|{{ u[1:4] }}|{{ (1, 2, 3)[1:] }}", k_ctx,
           "el|dlroW olleH|Hello|\xC3\x89\xC3\x80 \xC3\xA9\xC3\xA7|\xC3\xA9 \xC3\x80|(2, 3)");
    EXPECT("{{ d.keys()|list }}|{{ s['upper']() }}|{{ l[1.5] }}|{{ n.x }}|{{ n[0] }}", k_ctx,
           "['a', 'b', 'items', 'name']|HELLO WORLD|||");
    EXPECT_ERR("{{ l[::0] }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    EXPECT_ERR("{{ l['a':] }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "slice indices");
}

static void test_undefined(void) {
    check_section("undefined values (jinja2's default Undefined)");
    EXPECT("[{{ foo }}]|{{ foo is defined }}|{{ foo is undefined }}|{{ d.zz is defined }}", k_ctx,
           "[]|False|True|False");
    EXPECT("{% for x in foo %}{{ x }}{% else %}none{% endfor %}|{{ foo|length }}|{{ foo|list }}", NULL,
           "none|0|[]");
    EXPECT("{{ foo|default('dflt') }}|{{ foo or 'or' }}|{{ 'a' ~ foo ~ 'b' }}|{{ foo|trim }}|{{ not foo }}",
           NULL, "dflt|or|ab||True");
    EXPECT("{{ 'x' in foo }}|{{ foo == foo }}|{{ foo|first }}|{{ foo|join }}|{{ foo|string }}", NULL,
           "False|True|||");
    EXPECT_ERR("{{ foo.bar }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:7: 'foo' is undefined");
    EXPECT_ERR("{{ foo['x'] }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ foo + 1 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ foo() }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ foo|tojson }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "not JSON serializable");
    EXPECT_ERR("{{ foo|int }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ d.missing.x }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT,
               "'dict object' has no attribute 'missing'");
    EXPECT_ERR("{{ foo < 1 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ foo is odd }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'foo' is undefined");
    EXPECT_ERR("{{ s.nomethod() }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "has no attribute 'nomethod'");
    EXPECT_ERR("{{ l.append(1) }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "unsafe");
}

static void test_statements(void) {
    check_section("if, for, set, namespace, macro, break, continue");
    EXPECT("{% if i > 9 %}a{% elif i > 5 %}b{% elif true %}c{% else %}d{% endif %}", k_ctx, "b");
    EXPECT("{% if z %}a{% else %}e{% endif %}{% if 1, 2 %}t{% endif %}", k_ctx, "et");
    EXPECT("{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
           "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}",
           k_ctx,
           "1032TrueFalse31|2121FalseFalse332|3210FalseTrue31|");
    EXPECT("{% for x in l if x > 1 %}{{ loop.index }}:{{ x }}/{{ loop.length }} {% endfor %}", k_ctx,
           "1:3/2 2:2/2 ");
    EXPECT("{% for x in e %}x{% else %}empty{% endfor %}|{% for x in l if x > 5 %}x{% else %}none{% endfor %}",
           k_ctx, "empty|none");
    EXPECT("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", k_ctx, "a=1;b=[1, 2];items=5;name=Bob;");
    EXPECT("{% for (a, b), c in [((1, 2), 3)] %}{{ a }}{{ b }}{{ c }}{% endfor %}", NULL, "123");
    EXPECT("{% for c in 'h\xC3\xA9' %}[{{ c }}]{% endfor %}{% for k in {'x': 1} %}{{ k }}{% endfor %}", NULL,
           "[h][\xC3\xA9]x");
    EXPECT("{% for x in [1, 2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}"
           "{{ loop.index }}|{% endfor %}",
           NULL, "11a 21b 1|12a 22b 2|");
    EXPECT("{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}", k_ctx, "32");
    EXPECT("{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}", k_ctx, "3");
    EXPECT("{% for x in l %}{{ loop.cycle('a', 'b') }}{% endfor %}", k_ctx, "aba");
    /* A loop body's variables live for one iteration. */
    EXPECT("{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = x + i %}{{ x }},{% endfor %}{{ x }}", NULL,
           "01,02,0");
    EXPECT("{% for i in [1, 2] %}{% if i == 1 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}", NULL,
           "[5][]");
    EXPECT("{% if true %}{% set top = 1 %}{% endif %}{{ top }}", NULL, "1");
    EXPECT("{% set ns = namespace(c=0, s='') %}{% for i in l %}{% set ns.c = ns.c + i %}"
           "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}", k_ctx, "6 312");
    EXPECT("{% set ns = namespace(d, extra=2) %}{{ ns.a }}{{ ns.extra }}{{ ns.zz }}", k_ctx, "12");
    EXPECT("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = 3, %}{{ c }}", NULL, "12(3,)");
    EXPECT("{% set x %}in {{ 1 + 1 }}{% endset %}[{{ x }}]", NULL, "[in 2]");
    EXPECT("{% set messages = msgs[1:] %}{{ messages|length }}{{ messages[0].role }}", k_ctx, "1assistant");
    EXPECT("{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(b=5, a=0) }}|{{ m() }}",
           NULL, "1-2|1-3|0-5|-2");
    EXPECT("{% macro m(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}", NULL,
           "(2, 3){'k': 4}");
    EXPECT("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}", NULL,
           "4321");
    EXPECT("{% set g = 'global' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}", NULL, "global");
    EXPECT("{% generation %}kept{% endgeneration %}", NULL, "kept");
    EXPECT("{% macro m(x) %}<{{ caller() }}|{{ x }}>{% endmacro %}{% call m(1) %}body{% endcall %}", NULL,
           "<body|1>");
    EXPECT("{% macro each(items) %}{% for i in items %}[{{ caller(i) }}]{% endfor %}{% endmacro %}"
           "{% call(v) each(l) %}{{ v * 2 }}{% endcall %}",
           k_ctx, "[6][2][4]");
    EXPECT("{% macro w() %}({{ caller() }}){% endmacro %}{% for x in l %}{% call w() %}{{ x }}"
           "{{ loop.index }}{% endcall %}{% endfor %}",
           k_ctx, "(31)(12)(23)");
    EXPECT_ERR("{% macro m() %}x{% endmacro %}{% call m() %}y{% endcall %}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "no keyword argument 'caller'");
    EXPECT_ERR("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "takes not more than 1 argument");
    EXPECT_ERR("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "no keyword argument 'b'");
    EXPECT_ERR("{% for a, b in [(1, 2, 3)] %}{% endfor %}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "too many values to unpack");
    EXPECT_ERR("{% for a, b in [[1]] %}{% endfor %}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "not enough values to unpack");
    EXPECT_ERR("{% for x in 5 %}{% endfor %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'int' object is not iterable");
    EXPECT_ERR("{% set x = 1 %}{% set x.y = 2 %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "non-namespace");
}

static void test_filters(void) {
    check_section("filters");
    EXPECT("{{ -3|abs }}|{{ -1.5|abs }}|{{ msgs[0]|attr('role') }}|{{ d|attr('a') }}", k_ctx, "3|1.5||");
    EXPECT("{{ l|batch(2)|list }}|{{ l|batch(2, 0)|list }}", k_ctx, "[[3, 1], [2]]|[[3, 1], [2, 0]]");
    EXPECT("{{ 'hELLO wORLD'|capitalize }}|{{ 'hello world-x(y)'|title }}|{{ s|upper }}|{{ s|lower }}",
           k_ctx, "Hello world|Hello World-X(Y)|HELLO WORLD|hello world");
    EXPECT("{{ u|upper }}|{{ '\xC3\x9F'|upper }}|{{ '\xC3\x80\xC3\x89'|lower }}", k_ctx,
           "\xC3\x87\xC3\x89 \xC3\x80\xC3\x89|SS|\xC3\xA0\xC3\xA9");
    /* Unicode case mapping as Python's: final sigma, titlecase digraphs,
     * ligatures, dotted I. */
    EXPECT("{{ '\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\xA3.'|lower }}|{{ '\xC7\x86x'.title() }}"
           "|{{ '\xC7\x86x'|title }}|{{ '\xEF\xAC\x81'|upper }}|{{ '\xC4\xB0'|lower }}",
           NULL,
           "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82 \xCF\x83.|\xC7\x85x|\xC7\x84x|FI|i\xCC\x87");
    EXPECT("{{ l|count }}|{{ l|length }}|{{ s|length }}|{{ u|length }}|{{ d|length }}", k_ctx, "3|3|11|5|4");
    EXPECT("{{ foo|d('x') }}|{{ ''|default('x') }}|{{ ''|default('x', true) }}|{{ none|default('x') }}",
           NULL, "x||x|None");
    EXPECT("{{ {'b': 1, 'a': 2}|dictsort }}|{{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }}",
           NULL, "[('a', 2), ('b', 1)]|[('a', 2), ('b', 1)]");
    EXPECT("{{ '<a href=\"x\">&\\'</a>'|e }}|{{ 'x'|escape }}", NULL,
           "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;|x");
    EXPECT("{{ l|first }}|{{ l|last }}|{{ e|first }}|{{ 'abc'|first }}|{{ d|first }}", k_ctx, "3|2||a|a");
    EXPECT("{{ '2.5'|float }}|{{ 'x'|float }}|{{ 'x'|float(1) }}|{{ 3|float }}|{{ ' 1e3 '|float }}", NULL,
           "2.5|0.0|1|3.0|1000.0");
    EXPECT("{{ '%s-%d'|format('a', 3) }}|{{ '%05.1f'|format(3.14159) }}|{{ '%(x)s'|format(x=1) }}", NULL,
           "a-3|003.1|1");
    EXPECT("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(1, blank=true) }}"
           "|{{ 'a\\nb'|indent('> ') }}",
           NULL, "a\n    b\n\n    c|  a\n  b|a\n \n b|a\n> b");
    EXPECT("{{ 3.7|int }}|{{ '42'|int }}|{{ ' -7 '|int }}|{{ '4.5'|int }}|{{ 'x'|int }}|{{ 'x'|int(9) }}"
           "|{{ 'ff'|int(base=16) }}|{{ '0b101'|int(0, 0) }}|{{ none|int }}|{{ true|int }}",
           NULL, "3|42|-7|4|0|9|255|5|0|1");
    EXPECT("{{ d|items|list }}", "{\"d\": {\"a\": 1}}", "[('a', 1)]");
    EXPECT("{{ l|join }}|{{ l|join(', ') }}|{{ msgs|join('/', attribute='role') }}|{{ [1, none]|join('-') }}",
           k_ctx, "312|3, 1, 2|user/assistant|1-None");
    EXPECT("{{ 'ab'|list }}|{{ d|list }}|{{ (1, 2)|list }}", k_ctx, "['a', 'b']|['a', 'b', 'items', 'name']|[1, 2]");
    EXPECT("{{ msgs|map(attribute='role')|list }}|{{ l|map('string')|join }}|{{ [' a ']|map('trim')|list }}"
           "|{{ msgs|map(attribute='x', default='D')|list }}",
           k_ctx, "['user', 'assistant']|312|['a']|['D', 'D']");
    EXPECT("{{ l|max }}|{{ l|min }}|{{ ['b', 'A']|max }}|{{ msgs|max(attribute='role') }}", k_ctx,
           "3|1|b|{'role': 'user', 'content': ' hi '}");
    EXPECT("{{ l|select('odd')|list }}|{{ l|reject('odd')|list }}|{{ [0, 1, '']|select|list }}"
           "|{{ l|select('greaterthan', 1)|list }}",
           k_ctx, "[3, 1]|[2]|[1]|[3, 2]");
    EXPECT("{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}"
           "|{{ msgs|rejectattr('role', 'eq', 'user')|length }}|{{ msgs|selectattr('role')|list|length }}",
           k_ctx, "[' hi ']|1|2");
    EXPECT("{{ s|replace('l', 'L') }}|{{ s|replace('l', 'L', 1) }}|{{ 'ab'|replace('', '.') }}", k_ctx,
           "HeLLo WorLd|HeLlo World|.a.b.");
    EXPECT("{{ l|reverse|list }}|{{ 'ab\xC3\xA9'|reverse }}", k_ctx, "[2, 1, 3]|\xC3\xA9" "ba");
    EXPECT("{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.675|round(2) }}|{{ 2.1|round(0, 'ceil') }}"
           "|{{ 2.9|round(method='floor') }}|{{ 5|round }}|{{ 1250|round(-2) }}",
           NULL, "2.0|4.0|2.67|3.0|2.0|5|1200");
    EXPECT("{{ 'x'|safe }}|{{ 1|string }}|{{ none|string }}|{{ [1]|string }}", NULL, "x|1|None|[1]");
    EXPECT("{{ l|sort }}|{{ l|sort(reverse=true) }}|{{ ['b', 'A', 'a']|sort }}"
           "|{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}|{{ msgs|sort(attribute='role')|map(attribute='role')|list }}",
           k_ctx, "[1, 2, 3]|[3, 2, 1]|['A', 'a', 'b']|['A', 'a', 'b']|['assistant', 'user']");
    EXPECT("{{ l|sum }}|{{ [1.5, 2]|sum }}|{{ msgs|sum(attribute='x', start=0) if false else 0 }}"
           "|{{ [[1], [2]]|sum(start=[]) }}",
           k_ctx, "6|3.5|0|[1, 2]");
    EXPECT("{{ '  x \\n'|trim }}|{{ 'xyx'|trim('x') }}|{{ [1, 2, 1, 'A', 'a']|unique|list }}"
           "|{{ ['A', 'a']|unique(case_sensitive=true)|list }}",
           NULL, "x|y|[1, 2, 'A']|['A', 'a']");
    EXPECT("{{ 'hello, big world_1'|wordcount }}", NULL, "3");
    EXPECT_ERR("{{ 5|length }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "has no len()");
    EXPECT_ERR("{{ [1, 'a']|sort }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'<' not supported");
    EXPECT_ERR("{{ l|join(d=1, x=2) }}", k_ctx, EMBER_ERR_INVALID_ARGUMENT, "unexpected keyword argument 'x'");
    EXPECT_ERR("{{ 1|items }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "mapping");
    EXPECT_ERR("{{ l|map('nosuch')|list }}", k_ctx, EMBER_ERR_NOT_SUPPORTED, "filter 'nosuch'");
}

static void test_tojson(void) {
    check_section("tojson (transformers' json.dumps, ensure_ascii=False)");
    EXPECT("{{ msgs|tojson }}", k_ctx,
           "[{\"role\": \"user\", \"content\": \" hi \"}, {\"role\": \"assistant\", \"content\": \"yo\"}]");
    EXPECT("{{ {'a': [1, {'b': []}], 'c': {}}|tojson(indent=2) }}", NULL,
           "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}");
    EXPECT("{{ [1, 2]|tojson(indent=0) }}|{{ [1]|tojson(indent='\\t') }}", NULL, "[\n1,\n2\n]|[\n\t1\n]");
    EXPECT("{{ 'caf\xC3\xA9 \"q\" \\\\ \\n\\t\\x01\\x7f'|tojson }}", NULL,
           "\"caf\xC3\xA9 \\\"q\\\" \\\\ \\n\\t\\u0001\x7f\"");
    EXPECT("{{ '\xC3\xA9\xF0\x9F\x98\x80'|tojson(ensure_ascii=true) }}", NULL, "\"\\u00e9\\ud83d\\ude00\"");
    EXPECT("{{ [1.0, 1e20, 1e-7, 0.1, none, true, false, -0.0]|tojson }}", NULL,
           "[1.0, 1e+20, 1e-07, 0.1, null, true, false, -0.0]");
    EXPECT("{{ {'b': 1, 'a': {'d': 2, 'c': 3}}|tojson(sort_keys=true) }}", NULL,
           "{\"a\": {\"c\": 3, \"d\": 2}, \"b\": 1}");
    EXPECT("{{ {'a': 1, 'b': [1, 2]}|tojson(separators=(',', ':')) }}", NULL, "{\"a\":1,\"b\":[1,2]}");
    EXPECT("{{ {1: 'x', none: 'y', true: 'z', 1.5: 'w'}|tojson }}", NULL,
           "{\"1\": \"z\", \"null\": \"y\", \"1.5\": \"w\"}");
    EXPECT("{{ (1, 'a')|tojson }}|{{ 1e400|tojson if false else 'ok' }}", NULL, "[1, \"a\"]|ok");
    EXPECT_ERR("{{ namespace(a=1)|tojson }}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "Object of type Namespace is not JSON serializable");
    EXPECT_ERR("{{ {(1, 2): 1}|tojson }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "keys must be str");
}

static void test_tests(void) {
    check_section("is tests");
    EXPECT("{{ i is odd }}{{ i is even }}{{ i is divisibleby 7 }}{{ i is divisibleby(2) }}"
           "{{ n is none }}{{ t is boolean }}{{ t is true }}{{ z is false }}{{ z is true }}",
           k_ctx, "TrueFalseTrueFalseTrueTrueTrueFalseFalse");
    EXPECT("{{ i is integer }}{{ f is float }}{{ t is number }}{{ t is integer }}{{ f is number }}"
           "{{ s is string }}{{ d is mapping }}{{ l is mapping }}",
           k_ctx, "TrueTrueTrueFalseTrueTrueTrueFalse");
    EXPECT("{{ l is iterable }}{{ s is sequence }}{{ d is sequence }}{{ i is iterable }}{{ foo is iterable }}"
           "{{ range is callable }}{{ s is callable }}",
           k_ctx, "TrueTrueTrueFalseTrueTrueFalse");
    EXPECT("{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ s is lower }}{{ l is sameas l }}{{ n is sameas none }}"
           "{{ 1 is escaped }}",
           k_ctx, "TrueTrueFalseTrueTrueFalse");
    EXPECT("{{ i is eq 7 }}{{ i is equalto 7 }}{{ i is ne 7 }}{{ i is lt 8 }}{{ i is lessthan 7 }}{{ i is gt 8 }}"
           "{{ i is greaterthan 6 }}{{ i is ge 7 }}{{ i is le 6 }}{{ l|select('==', 1)|list }}",
           k_ctx, "TrueTrueFalseTrueFalseFalseTrueTrueFalse[1]");
    EXPECT("{{ 1 is in l }}{{ 'x' is in 'xy' }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ i is not none }}"
           "{{ foo is defined }}{{ foo is not defined }}",
           k_ctx, "TrueTrueTrueTrueTrueFalseTrue");
    EXPECT_ERR("{{ 'a' is odd }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "unsupported operand");
}

static void test_methods(void) {
    check_section("str, dict and list methods");
    EXPECT("{{ s.upper() }}|{{ s.lower() }}|{{ 'hello wORLD'.title() }}|{{ \"they're\".title() }}"
           "|{{ 'hELLO'.capitalize() }}",
           k_ctx, "HELLO WORLD|hello world|Hello World|They'Re|Hello");
    EXPECT("[{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  x  '.lstrip() }}|{{ '  x  '.rstrip() }}"
           "|{{ '\\n\\nx\\n'.lstrip('\\n') }}]",
           NULL, "[x|hi|x  |  x|x\n]");
    EXPECT("{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}"
           "|{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a b c '.rsplit(None, 1) }}|{{ 'a b c'.split(maxsplit=1) }}",
           NULL,
           "['a', 'b', '', 'c']|['a', 'b']|['a', 'b,c']|['a,b', 'c']|[' a b', 'c']|['a', 'b c']");
    EXPECT("{{ 'x</think>y'.split('</think>')[-1] }}|{{ 'a\\nb\\r\\nc\\n'.splitlines() }}"
           "|{{ 'a\\nb'.splitlines(true) }}",
           NULL, "y|['a', 'b', 'c']|['a\\n', 'b']");
    EXPECT("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'abc'.startswith('b') }}", NULL,
           "TrueTrueFalse");
    EXPECT("{{ 'abc'.replace('b', 'X') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'h\xC3\xA9llo'.find('l') }}"
           "|{{ 'abc'.find('z') }}|{{ 'abcb'.rfind('b') }}|{{ 'abab'.count('ab') }}|{{ 'abc'.index('c') }}",
           NULL, "aXc|bba|2|-1|3|2|2");
    EXPECT("{{ ', '.join(['a', 'b']) }}|{{ 'ab1'.isalnum() }}{{ 'ab'.isalpha() }}{{ '12'.isdigit() }}"
           "{{ ' '.isspace() }}{{ 'ab'.islower() }}{{ 'AB'.isupper() }}{{ ''.isalpha() }}",
           NULL, "a, b|TrueTrueTrueTrueTrueTrueFalse");
    EXPECT("{{ 'x{}y{}'.format(1, 'a') }}|{{ '{0}-{0}'.format(5) }}|{{ '{n}!'.format(n='Bo') }}"
           "|{{ '{:>4}|{:<3}|{:^5}'.format('a', 'b', 'c') }}|{{ '{:.2f}'.format(3.14159) }}|{{ '{!r}'.format('a') }}"
           "|{{ '{{x}}'.format() }}|{{ '{0[role]}'.format(msgs[0]) }}",
           k_ctx, "x1ya|5-5|Bo!|   a|b  |  c  |3.14|'a'|{x}|user");
    EXPECT("{{ '%s and %d%%' % ('a', 3) }}|{{ '%5.2f|' % 3.14159 }}|{{ '%(a)s' % d }}|{{ '%-4s|' % 'ab' }}"
           "|{{ '%x' % 255 }}",
           k_ctx, "a and 3%| 3.14||1|ab  ||ff");
    EXPECT("{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 9) }}|{{ d.values()|list|length }}"
           "|{{ d.items()|first }}",
           k_ctx, "1|None|9|4|('a', 1)");
    EXPECT("{{ l.count(1) }}|{{ l.index(2) }}|{{ (1, 2, 1).count(1) }}", k_ctx, "1|2|2");
    EXPECT_ERR("{{ 'abc'.index('z') }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "substring not found");
    EXPECT_ERR("{{ ','.join([1]) }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "expected str instance");
    EXPECT_ERR("{{ '%d' % 'x' }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "number is required");
    EXPECT_ERR("{{ '%s %s' % ('a',) }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "not enough arguments");
    EXPECT_ERR("{{ 'a'.split('') }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "empty separator");
}

static void test_globals(void) {
    check_section("range, namespace, dict, raise_exception, strftime_now");
    EXPECT("{{ range(3)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}|{{ range(0)|list }}"
           "|{{ range(3)[1] }}",
           NULL, "[0, 1, 2]|[1, 4, 7]|[5, 3, 1]|[]|1");
    EXPECT("{{ dict(a=1, b=2) }}|{{ dict([('x', 1)]) }}|{{ namespace(a=1).a }}|{{ namespace() }}", NULL,
           "{'a': 1, 'b': 2}|{'x': 1}|1|<Namespace {}>");
    EXPECT_ERR("{{ raise_exception('Roles must alternate') }}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "template:1:4: raise_exception: Roles must alternate");
    EXPECT_ERR("{{ range(100001)|length }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "MAX_RANGE");
    EXPECT_ERR("{{ range(1, 2, 0) }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "must not be zero");
    EXPECT_ERR("{{ range('a') }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "must be an integer");
    /* 26 Jul 2024 12:00 UTC is 26 Jul in every time zone within 11 hours. */
    g_opt.fixed_time = true;
    g_opt.time = 1721995200;
    EXPECT("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y') }}", NULL, "26 Jul 2024|2024");
    g_opt.fixed_time = false;
    EXPECT_ERR("{{ strftime_now() }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "one argument");
}

static void test_parse_errors(void) {
    check_section("parse errors name the construct and line:col");
    EXPECT_ERR("{% if %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:7: expected an expression");
    EXPECT_ERR("line\n  {% endfor %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:2:6: unknown tag 'endfor'");
    EXPECT_ERR("{% for x in l %}", NULL, EMBER_ERR_INVALID_ARGUMENT,
               "unexpected end of template: expected 'endfor' or 'else'");
    EXPECT_ERR("{% if x %}{% endfor %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "unknown tag 'endfor'");
    EXPECT_ERR("{{ x ", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:1: unexpected end of template: missing '}}'");
    EXPECT_ERR("{{ }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "expected an expression, got end of print statement");
    EXPECT_ERR("{# open", NULL, EMBER_ERR_INVALID_ARGUMENT, "missing end of comment tag");
    EXPECT_ERR("{{ 'open }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:4: unterminated string");
    EXPECT_ERR("{{ (1, 2 }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "unexpected '}', expected ')'");
    EXPECT_ERR("{{ x ] }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "unexpected ']'");
    EXPECT_ERR("{{ 1 + }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "unexpected end of print statement");
    EXPECT_ERR("{% set 1 = 2 %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "can't assign");
    EXPECT_ERR("{% break %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "'break' outside of a for loop");
    EXPECT_ERR("{% for x in l %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", NULL,
               EMBER_ERR_INVALID_ARGUMENT, "'continue' outside of a for loop");
    EXPECT_ERR("{% macro m(a=1, b) %}{% endmacro %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "non-default argument");
    EXPECT_ERR("{{ a is defined is defined }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "cannot chain");
    EXPECT_ERR("{{ 99999999999999999999 }}", NULL, EMBER_ERR_NOT_SUPPORTED, "integer literal too large");
    EXPECT_ERR("{{ x $ y }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:6: unexpected character '$'");
    EXPECT_ERR("{{ '\\N{DASH}' }}", NULL, EMBER_ERR_NOT_SUPPORTED, "\\N{...}");
    EXPECT_ERR("{{ x|nosuch }}", NULL, EMBER_ERR_NOT_SUPPORTED, "template:1:6: filter 'nosuch' is unknown or not supported");
    EXPECT_ERR("{{ x is nosuch }}", NULL, EMBER_ERR_NOT_SUPPORTED, "test 'nosuch' is unknown");
    EXPECT_ERR("{% extends 'base' %}", NULL, EMBER_ERR_NOT_SUPPORTED, "template:1:4: the 'extends' tag is not supported");
    EXPECT_ERR("\n\n  {% include 'x' %}", NULL, EMBER_ERR_NOT_SUPPORTED, "template:3:6: the 'include' tag");
    EXPECT_ERR("{% filter upper %}x{% endfilter %}", NULL, EMBER_ERR_NOT_SUPPORTED, "'filter' tag");
    EXPECT_ERR("{% call x %}{% endcall %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "expected a call after 'call'");
    EXPECT_ERR("{% for x in l recursive %}{% endfor %}", NULL, EMBER_ERR_NOT_SUPPORTED, "recursive loops");
    EXPECT_ERR("{{ f(*a) }}", NULL, EMBER_ERR_NOT_SUPPORTED, "*args");
    EXPECT_ERR("{% set x | upper %}{% endset %}", NULL, EMBER_ERR_NOT_SUPPORTED, "block set");
    EXPECT_ERR("{{ '\xC3\xA9\xC3\xA9' + $ }}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:11:");
    EXPECT_ERR("ok\n\xC3\xA9 \xFF", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:2:3: invalid UTF-8");

    ember_jinja_parse_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.name = "chat_template";
    ember_jinja_template *tpl = NULL;
    CHECK_ERR(ember_jinja_parse("{% if %}", 8, &opt, &tpl), EMBER_ERR_INVALID_ARGUMENT, "chat_template:1:7:");
    CHECK(tpl == NULL);
}

/* ------------------------------------------------------------------------ */
/* Limits and hostile templates                                              */
/* ------------------------------------------------------------------------ */

static char *repeat_str(const char *a, size_t times, const char *mid, const char *b) {
    size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
    char *s = malloc(la * times + lm + lb * times + 1);
    if (s == NULL) abort();
    size_t o = 0;
    for (size_t k = 0; k < times; k++, o += la) memcpy(s + o, a, la);
    memcpy(s + o, mid, lm);
    o += lm;
    for (size_t k = 0; k < times; k++, o += lb) memcpy(s + o, b, lb);
    s[o] = '\0';
    return s;
}

static void test_limits(void) {
    check_section("limits: nesting, steps, recursion, output, memory");
    ember_status st;
    char *src = repeat_str("(", 100, "1", ")");
    char *tsrc = malloc(strlen(src) + 8);
    sprintf(tsrc, "{{ %s }}", src);
    EXPECT_ERR(tsrc, NULL, EMBER_ERR_NOT_SUPPORTED, "nesting deeper than 64");
    free(src);
    free(tsrc);
    src = repeat_str("{% if 1 %}", 200, "x", "{% endif %}");
    EXPECT_ERR(src, NULL, EMBER_ERR_NOT_SUPPORTED, "nesting deeper than 64");
    free(src);
    src = repeat_str("not ", 100000, "1", "");
    tsrc = malloc(strlen(src) + 8);
    sprintf(tsrc, "{{ %s }}", src);
    EXPECT_ERR(tsrc, NULL, EMBER_ERR_NOT_SUPPORTED, "nesting deeper");
    free(src);
    free(tsrc);
    src = repeat_str("[", 10000, "", "]");
    tsrc = malloc(strlen(src) + 8);
    sprintf(tsrc, "{{ %s }}", src);
    EXPECT_ERR(tsrc, NULL, EMBER_ERR_NOT_SUPPORTED, "nested too deeply");
    free(src);
    free(tsrc);
    /* Within the limit, deep nesting renders. */
    src = repeat_str("{% if 1 %}", 30, "deep", "{% endif %}");
    EXPECT(src, NULL, "deep");
    free(src);

    /* A smaller step budget keeps these quick; the default behaves alike. */
    ember_jinja_render_options saved = g_opt;
    g_opt.max_steps = 1000000;
    EXPECT_ERR("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", NULL,
               EMBER_ERR_LOOP_LIMIT, "evaluation steps");
    EXPECT_ERR("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, EMBER_ERR_LOOP_LIMIT,
               "recursion deeper than 256");
    EXPECT_ERR("{{ 'x' * 1000000000 }}", NULL, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    EXPECT_ERR("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
               NULL, EMBER_ERR_OUT_OF_MEMORY, "");
    EXPECT_ERR("{% for i in range(100000) %}{{ 'abcdefghij' * 100 }}{% endfor %}", NULL,
               EMBER_ERR_OUT_OF_MEMORY, "output larger than the limit");
    /* Work on long strings counts as steps too. */
    EXPECT_ERR("{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{{ s|length > 0 }}{% endfor %}",
               NULL, EMBER_ERR_LOOP_LIMIT, "evaluation steps");
    g_opt = saved;

    /* Options lower each limit. */
    g_opt.max_steps = 100;
    EXPECT_ERR("{% for i in range(1000) %}{% endfor %}", NULL, EMBER_ERR_LOOP_LIMIT, "limit of 100 evaluation steps");
    g_opt = saved;
    g_opt.max_output = 10;
    EXPECT("0123456789", NULL, "0123456789");
    EXPECT_ERR("0123456789A", NULL, EMBER_ERR_OUT_OF_MEMORY, "output larger than the limit of 10 bytes");
    g_opt = saved;
    g_opt.max_depth = 10;
    EXPECT("{{ ((((((((((1)))))))))) + 1 }}", NULL, "2"); /* parentheses make no nodes */
    EXPECT_ERR("{{ [[[[[[[[[[1]]]]]]]]]] }}", NULL, EMBER_ERR_LOOP_LIMIT, "recursion deeper than 10");
    g_opt = saved;
    g_opt.max_memory = 4096;
    EXPECT_ERR("{{ range(10000)|list|length }}", NULL, EMBER_ERR_OUT_OF_MEMORY, "limited to 4096 bytes");
    g_opt = saved;
    /* What a loop iteration makes is freed after it, unless it went into a
     * namespace. */
    g_opt.max_memory = 1 << 20;
    EXPECT("{% for i in range(20000) %}{% set x = 'abc' * 100 %}{{ x|length if loop.last }}{% endfor %}",
           NULL, "300");
    EXPECT("{% set ns = namespace(n=0, s='') %}{% for i in range(2000) %}{% set ns.n = ns.n + 1 %}"
           "{% set ns.s = (ns.s ~ i)[-3:] %}{% endfor %}{{ ns.n }} {{ ns.s }}",
           NULL, "2000 999");
    g_opt = saved;
    g_opt.max_depth = EMBER_JINJA_MAX_DEPTH_LIMIT + 1;
    char *out = run("x", NULL, &st);
    CHECK(out == NULL && st == EMBER_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(ember_last_error(), "max_depth");
    g_opt = saved;
    g_opt.struct_size = 4;
    out = run("x", NULL, &st);
    CHECK(out == NULL && st == EMBER_ERR_INVALID_ARGUMENT);
    g_opt = saved;
}

/* ------------------------------------------------------------------------ */
/* API                                                                       */
/* ------------------------------------------------------------------------ */

static void test_api(void) {
    check_section("API: contexts and values, NULL arguments");
    ember_jinja_template *tpl = NULL;
    const char *src = "{% for m in messages %}<{{ m.role }}:{{ m.content }}>{% endfor %}"
                      "{{ n }}|{{ x }}|{{ b }}|{{ f }}|{{ meta.k }}|{{ none_v }}";
    if (!CHECK_OK(ember_jinja_parse(src, strlen(src), NULL, &tpl))) return;
    ember_jinja_context *ctx = NULL;
    CHECK_OK(ember_jinja_context_create(&ctx));
    ember_jinja_value *msgs, *m, *v, *meta, *nv, *iv, *bv, *fv;
    CHECK_OK(ember_jinja_value_list(ctx, &msgs));
    for (int k = 0; k < 2; k++) {
        CHECK_OK(ember_jinja_value_dict(ctx, &m));
        CHECK_OK(ember_jinja_value_string(ctx, k ? "assistant" : "user", k ? 9 : 4, &v));
        CHECK_OK(ember_jinja_dict_set(ctx, m, "role", 4, v));
        CHECK_OK(ember_jinja_value_string(ctx, "hi\xC3\xA9", 4, &v));
        CHECK_OK(ember_jinja_dict_set(ctx, m, "content", 7, v));
        CHECK_OK(ember_jinja_list_append(ctx, msgs, m));
    }
    CHECK_OK(ember_jinja_context_set(ctx, "messages", msgs));
    CHECK_OK(ember_jinja_value_int(ctx, -42, &iv));
    CHECK_OK(ember_jinja_context_set(ctx, "n", iv));
    CHECK_OK(ember_jinja_value_bool(ctx, true, &bv));
    CHECK_OK(ember_jinja_context_set(ctx, "b", bv));
    CHECK_OK(ember_jinja_value_float(ctx, 0.25, &fv));
    CHECK_OK(ember_jinja_context_set(ctx, "f", fv));
    CHECK_OK(ember_jinja_value_none(ctx, &nv));
    CHECK_OK(ember_jinja_context_set(ctx, "none_v", nv));
    CHECK_OK(ember_jinja_context_set(ctx, "x", iv));
    CHECK_OK(ember_jinja_value_string(ctx, "replaced", 8, &v));
    CHECK_OK(ember_jinja_context_set(ctx, "x", v));
    ember_json_doc *doc = NULL;
    const char *mj = "{\"k\": [1, 2.5, \"s\"], \"k\": \"last\"}";
    CHECK_OK(ember_json_parse(mj, strlen(mj), &doc));
    CHECK_OK(ember_jinja_value_from_json(ctx, ember_json_root(doc), &meta));
    CHECK_OK(ember_jinja_context_set(ctx, "meta", meta));
    char *out = NULL;
    size_t len = 0;
    if (CHECK_OK(ember_jinja_render(tpl, ctx, NULL, &out, &len))) {
        CHECK_EQ_STR(out, "<user:hi\xC3\xA9><assistant:hi\xC3\xA9>-42|replaced|True|0.25|last|None");
        CHECK_EQ_INT(len, strlen(out));
    }
    free(out);
    /* A template renders again, and with no context at all. */
    CHECK_OK(ember_jinja_render(tpl, ctx, NULL, &out, NULL));
    free(out);
    /* Without a context every variable is undefined. */
    CHECK_ERR(ember_jinja_render(tpl, NULL, NULL, &out, &len), EMBER_ERR_INVALID_ARGUMENT,
              "'meta' is undefined");
    CHECK(out == NULL);

    CHECK_STATUS(ember_jinja_render(NULL, ctx, NULL, &out, &len), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_render(tpl, ctx, NULL, NULL, &len), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_parse(NULL, 3, NULL, &tpl), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_parse("x", 1, NULL, NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_jinja_parse_options popt;
    memset(&popt, 0, sizeof popt);
    ember_jinja_template *t2 = NULL;
    CHECK_ERR(ember_jinja_parse("x", 1, &popt, &t2), EMBER_ERR_INVALID_ARGUMENT, "struct_size");
    popt.struct_size = sizeof popt;
    popt.max_nesting = EMBER_JINJA_MAX_NESTING_LIMIT + 1;
    CHECK_ERR(ember_jinja_parse("x", 1, &popt, &t2), EMBER_ERR_INVALID_ARGUMENT, "max_nesting");
    CHECK_OK(ember_jinja_parse(NULL, 0, NULL, &t2));
    CHECK_OK(ember_jinja_render(t2, NULL, NULL, &out, &len));
    CHECK(out != NULL && len == 0 && out[0] == '\0');
    free(out);
    ember_jinja_template_destroy(t2);
    CHECK_ERR(ember_jinja_value_string(ctx, "\xFF", 1, &v), EMBER_ERR_INVALID_ARGUMENT, "UTF-8");
    CHECK_STATUS(ember_jinja_list_append(ctx, iv, iv), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_jinja_dict_set(ctx, iv, "k", 1, iv), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_jinja_dict_set(ctx, meta, "\xC3", 1, iv), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_context_set(ctx, NULL, iv), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_context_set_json(ctx, ember_json_array_at(ember_json_root(doc), 0)),
                 EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_context_set_json(ctx, ember_json_find(ember_json_root(doc), "k")),
                 EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_jinja_value_none(NULL, &v), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_jinja_context_create(NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_json_doc_destroy(doc);
    ember_jinja_context_destroy(ctx);
    ember_jinja_context_destroy(NULL);
    ember_jinja_template_destroy(tpl);
    ember_jinja_template_destroy(NULL);
}

/* ------------------------------------------------------------------------ */
/* The chat templates                                                        */
/* ------------------------------------------------------------------------ */

static char *fixture(const char *name, size_t *len) {
    const char *root = getenv("EMBER_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/llm/chat_templates/%s.jinja", root ? root : ".", name);
    char *s = read_file(path, len);
    CHECK_MSG(s != NULL, "cannot read %s", path);
    return s;
}

static const char k_chat[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Hi!\"},"
    " {\"role\": \"assistant\", \"content\": \"Hello.\"},"
    " {\"role\": \"user\", \"content\": \"Bye\"}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<B>\", \"eos_token\": \"<E>\","
    " \"enable_thinking\": false}";

typedef struct chat_case {
    const char *name;
    const char *want;
} chat_case;

static void test_chat_templates(void) {
    check_section("chat templates of Llama 3.x, Qwen 2.5/3, Gemma 3, Phi-4-mini, SmolLM2");
    static const chat_case cases[] = {
        {"llama3_1",
         "<B><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
         "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
         "Hi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
         "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"llama3_2",
         "<B><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
         "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
         "Hi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
         "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"qwen2_5",
         "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
         "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
        {"qwen3",
         "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
         "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
         "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {"gemma3",
         "<B><start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
         "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
        {"phi4_mini", "<|system|>Be brief.<|end|><|user|>Hi!<|end|><|assistant|>Hello.<|end|><|user|>Bye<|end|><|assistant|>"},
        {"smollm2",
         "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
         "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
    };
    g_opt.fixed_time = true;
    g_opt.time = 1721995200;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        size_t len;
        char *src = fixture(cases[k].name, &len);
        if (src == NULL) continue;
        char *text = malloc(len + 1);
        memcpy(text, src, len);
        text[len] = '\0';
        ember_status st;
        char *out = run(text, k_chat, &st);
        CHECK_MSG(out != NULL && strcmp(out, cases[k].want) == 0, "%s: %s", cases[k].name,
                  out ? out : ember_last_error());
        free(out);
        free(text);
        free(src);
    }
    g_opt.fixed_time = false;
    /* The templates' own checks. */
    size_t len;
    char *src = fixture("gemma3", &len);
    if (src != NULL) {
        char *text = malloc(len + 1);
        memcpy(text, src, len);
        text[len] = '\0';
        EXPECT_ERR(text, "{\"messages\": [{\"role\": \"assistant\", \"content\": \"x\"}]}",
                   EMBER_ERR_INVALID_ARGUMENT,
                   "raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
        free(text);
        free(src);
    }
}

/* Every truncation and many byte flips of a real template: parse and
 * render give a status, never a crash. */
static void test_mutations(void) {
    check_section("truncated and flipped templates");
    size_t len;
    char *src = fixture("qwen3", &len);
    if (src == NULL) return;
    ember_json_doc *doc = NULL;
    if (!CHECK_OK(ember_json_parse(k_chat, strlen(k_chat), &doc))) {
        free(src);
        return;
    }
    ember_jinja_context *ctx = NULL;
    CHECK_OK(ember_jinja_context_create(&ctx));
    CHECK_OK(ember_jinja_context_set_json(ctx, ember_json_root(doc)));
    char *buf = malloc(len);
    int bad = 0, parsed = 0, total = 0;
    static const unsigned char flips[] = {0x01, 0x20, 0x40, 0x80, 0xFF};
    for (size_t cut = 0; cut <= len; cut += 7) {
        for (size_t f = 0; f <= sizeof flips; f++) {
            memcpy(buf, src, len);
            size_t n = cut;
            if (f > 0) {
                n = len;
                buf[cut % len] = (char)(buf[cut % len] ^ flips[f - 1]);
            }
            ember_jinja_template *tpl = NULL;
            ember_status st = ember_jinja_parse(buf, n, NULL, &tpl);
            total++;
            if (st != EMBER_OK) {
                if (tpl != NULL || ember_last_error()[0] == '\0') bad++;
                continue;
            }
            parsed++;
            char *out = NULL;
            size_t olen;
            st = ember_jinja_render(tpl, ctx, NULL, &out, &olen);
            if ((st == EMBER_OK) != (out != NULL)) bad++;
            free(out);
            ember_jinja_template_destroy(tpl);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(parsed > 0 && parsed < total);
    free(buf);
    free(src);
    ember_jinja_context_destroy(ctx);
    ember_json_doc_destroy(doc);
}

/* Random fragments of template syntax, parsed and rendered: a status and
 * a message, never a crash (run under ASan and UBSan). */
static void test_random_templates(void) {
    check_section("random templates");
    static const char *const frags[] = {
        "{{ ", " }}", "{% ", " %}", "{# ", " #}", "{%- ", " -%}", "{{- ", " -}}", "x", "l", "d",
        "'s'", "\"q\"", "1", "2.5", "-", "(", ")", "[", "]", "{", "}", ",", ":", "|", "trim",
        "length", "if ", "else ", "elif ", "endif", "for ", " in ", "endfor", "set ", "=", "+",
        "*", "//", "**", "~", "not ", "and ", "or ", "is ", "defined", ".", "loop", "index", "\n",
        " ", "macro m(a)", "endmacro", "m(", "namespace(", "ns.a", "break", "continue", "raw",
        "endraw", "range(", "tojson", "join", "items()", "msgs", "\xC3\xA9", "%", "'\\", "::",
    };
    const size_t nf = sizeof frags / sizeof *frags;
    ember_json_doc *doc = NULL;
    if (!CHECK_OK(ember_json_parse(k_ctx, strlen(k_ctx), &doc))) return;
    ember_jinja_context *ctx = NULL;
    CHECK_OK(ember_jinja_context_create(&ctx));
    CHECK_OK(ember_jinja_context_set_json(ctx, ember_json_root(doc)));
    ember_jinja_render_options opt = g_opt;
    opt.max_steps = 100000;
    uint64_t state = 12345;
    char src[1024];
    int bad = 0, parsed = 0, rendered = 0;
    const int runs = 20000;
    for (int run_i = 0; run_i < runs; run_i++) {
        size_t n = 0;
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int count = 1 + (int)((state >> 33) % 24);
        for (int k = 0; k < count; k++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const char *f = frags[(state >> 33) % nf];
            size_t fl = strlen(f);
            if (n + fl >= sizeof src) break;
            memcpy(src + n, f, fl);
            n += fl;
        }
        ember_jinja_template *tpl = NULL;
        ember_status st = ember_jinja_parse(src, n, NULL, &tpl);
        if (st != EMBER_OK) {
            if (tpl != NULL || strncmp(ember_last_error(), "template:", 9) != 0) bad++;
            continue;
        }
        parsed++;
        char *out = NULL;
        size_t len;
        st = ember_jinja_render(tpl, ctx, &opt, &out, &len);
        if ((st == EMBER_OK) != (out != NULL)) bad++;
        if (st != EMBER_OK && strncmp(ember_last_error(), "template:", 9) != 0) bad++;
        rendered += st == EMBER_OK;
        free(out);
        ember_jinja_template_destroy(tpl);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_MSG(parsed > runs / 20 && rendered > 0, "%d parsed, %d rendered", parsed, rendered);
    ember_jinja_context_destroy(ctx);
    ember_json_doc_destroy(doc);
}

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--render") == 0 || strcmp(argv[1], "--render-many") == 0))
        return harness(argc, argv);
    if (argc != 1) {
        fprintf(stderr, "usage: test_jinja [--render[-many] TEMPLATE CONTEXT_JSON [--now EPOCH]]\n");
        return 2;
    }
    memset(&g_opt, 0, sizeof g_opt);
    g_opt.struct_size = sizeof g_opt;
    check_section("smoke");
    EXPECT("Hello {{ name }}!", "{\"name\": \"world\"}", "Hello world!");
    EXPECT_ERR("{% foo %}", NULL, EMBER_ERR_INVALID_ARGUMENT, "template:1:4: unknown tag 'foo'");
    test_output();
    test_whitespace();
    test_operators();
    test_access();
    test_undefined();
    test_statements();
    test_filters();
    test_tojson();
    test_tests();
    test_methods();
    test_globals();
    test_parse_errors();
    test_limits();
    test_api();
    test_chat_templates();
    test_mutations();
    test_random_templates();
    return check_finish();
}
