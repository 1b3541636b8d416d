/*
 * Tests of the JSON reader (extension/llm/text/json.h): every kind of
 * value, escapes and surrogate pairs, numbers at the int64 and double
 * edges, member lookup in small and hashed objects (repeated keys
 * included), errors with their line:column, the depth limit, and every
 * truncation and many byte flips of a document (a clean status, never a
 * crash).
 *
 * Harness modes, used by tests/python/test_llm_json.py:
 *   test_json --dump FILE   prints the document in a canonical form (see
 *                           dump()) or "error: MESSAGE" and exits 1
 *   test_json --time FILE   parses FILE a few times and prints the best
 *                           time and the value count
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "text/json.h"

static ember_json_doc *parse(const char *s) {
    ember_json_doc *doc = NULL;
    if (!CHECK_OK(ember_json_parse(s, strlen(s), &doc))) return NULL;
    return doc;
}

/* The status and message of parsing s, which must fail. */
static void parse_fails(const char *s, ember_status want, const char *msg) {
    ember_json_doc *doc = NULL;
    CHECK_ERR(ember_json_parse(s, strlen(s), &doc), want, msg);
    CHECK(doc == NULL);
}

static bool str_is(const ember_json *v, const char *want, size_t want_len) {
    const char *s;
    size_t n;
    if (ember_json_string(v, &s, &n) != EMBER_OK) return false;
    return n == want_len && memcmp(s, want, n) == 0 && s[n] == '\0';
}

static void test_kinds(void) {
    check_section("value kinds");
    ember_json_doc *doc = parse(" {\"a\": [1, -2.5, \"x\", true, false, null, [], {}],\n"
                                "  \"b\": {\"c\": {\"d\": \"deep\"}}, \"\": 0 } ");
    if (doc == NULL) return;
    const ember_json *root = ember_json_root(doc);
    CHECK_EQ_INT(ember_json_type_of(root), EMBER_JSON_OBJECT);
    CHECK_EQ_INT(ember_json_object_size(root), 3);
    const ember_json *a = ember_json_find(root, "a");
    CHECK_EQ_INT(ember_json_type_of(a), EMBER_JSON_ARRAY);
    CHECK_EQ_INT(ember_json_array_size(a), 8);
    int64_t i = 0;
    bool exact = false;
    CHECK_OK(ember_json_int64(ember_json_array_at(a, 0), &i, &exact));
    CHECK(i == 1 && exact);
    double d = 0;
    CHECK_OK(ember_json_number(ember_json_array_at(a, 1), &d));
    CHECK(d == -2.5);
    CHECK_OK(ember_json_int64(ember_json_array_at(a, 1), &i, &exact));
    CHECK(i == -2 && !exact);
    CHECK(str_is(ember_json_array_at(a, 2), "x", 1));
    bool b = false;
    CHECK_OK(ember_json_bool(ember_json_array_at(a, 3), &b));
    CHECK(b);
    CHECK_OK(ember_json_bool(ember_json_array_at(a, 4), &b));
    CHECK(!b);
    CHECK_EQ_INT(ember_json_type_of(ember_json_array_at(a, 5)), EMBER_JSON_NULL);
    CHECK(ember_json_array_at(a, 5) != NULL);
    CHECK_EQ_INT(ember_json_type_of(ember_json_array_at(a, 6)), EMBER_JSON_ARRAY);
    CHECK_EQ_INT(ember_json_array_size(ember_json_array_at(a, 6)), 0);
    CHECK_EQ_INT(ember_json_type_of(ember_json_array_at(a, 7)), EMBER_JSON_OBJECT);
    CHECK_EQ_INT(ember_json_object_size(ember_json_array_at(a, 7)), 0);
    CHECK(ember_json_array_at(a, 8) == NULL);
    CHECK(str_is(ember_json_find(ember_json_find(ember_json_find(root, "b"), "c"), "d"), "deep", 4));
    CHECK(ember_json_find(root, "") != NULL);
    CHECK(ember_json_find(root, "zz") == NULL);
    /* Chained lookups through missing members and wrong kinds give NULL. */
    CHECK(ember_json_find(ember_json_find(root, "zz"), "c") == NULL);
    CHECK(ember_json_array_at(root, 0) == NULL);
    CHECK_EQ_INT(ember_json_array_size(root), 0);
    CHECK_EQ_INT(ember_json_object_size(a), 0);
    CHECK(ember_json_object_at(a, 0, NULL, NULL) == NULL);
    const char *key = NULL;
    size_t key_len = 99;
    const ember_json *v = ember_json_object_at(root, 1, &key, &key_len);
    CHECK(v != NULL && key_len == 1 && strcmp(key, "b") == 0);
    CHECK(ember_json_object_at(root, 3, &key, &key_len) == NULL);
    /* Wrong kinds for scalars. */
    const char *s;
    CHECK_ERR(ember_json_string(a, &s, NULL), EMBER_ERR_TYPE_MISMATCH, "expected a string, found an array");
    CHECK_ERR(ember_json_number(NULL, &d), EMBER_ERR_TYPE_MISMATCH, "found no value");
    CHECK_ERR(ember_json_bool(root, &b), EMBER_ERR_TYPE_MISMATCH, "found an object");
    CHECK_ERR(ember_json_int64(ember_json_array_at(a, 2), &i, NULL), EMBER_ERR_TYPE_MISMATCH,
              "found a string");
    CHECK_STATUS(ember_json_bool(ember_json_array_at(a, 3), NULL), EMBER_ERR_INVALID_ARGUMENT);
    ember_json_doc_destroy(doc);

    /* Scalars at the top. */
    const char *tops[] = {"0", "\"s\"", "true", "false", "null", " [ ] ", "{ }"};
    const ember_json_type kinds[] = {EMBER_JSON_NUMBER, EMBER_JSON_STRING, EMBER_JSON_BOOL,
                                     EMBER_JSON_BOOL,   EMBER_JSON_NULL,   EMBER_JSON_ARRAY,
                                     EMBER_JSON_OBJECT};
    for (size_t k = 0; k < sizeof tops / sizeof *tops; k++) {
        doc = parse(tops[k]);
        CHECK_EQ_INT(ember_json_type_of(ember_json_root(doc)), kinds[k]);
        ember_json_doc_destroy(doc);
    }
    /* A byte order mark is skipped. */
    doc = parse("\xEF\xBB\xBF[1]");
    CHECK_EQ_INT(ember_json_array_size(ember_json_root(doc)), 1);
    ember_json_doc_destroy(doc);
    ember_json_doc_destroy(NULL);
    CHECK(ember_json_root(NULL) == NULL);
    CHECK_EQ_INT(ember_json_type_of(NULL), EMBER_JSON_NULL);
}

static void test_strings(void) {
    check_section("strings and escapes");
    ember_json_doc *doc = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u0041\\u00e9\\u20AC\","
                                "\"\\ud83d\\ude00\", \"caf\xC3\xA9 \xF0\x9F\x98\x80\", \"x\\u0000y\","
                                "\"\", \"\\uDBFF\\uDFFF\", \"0123456789abcdef0123456789\\n\"]");
    if (doc == NULL) return;
    const ember_json *r = ember_json_root(doc);
    CHECK(str_is(ember_json_array_at(r, 0), "a\"b\\c/d\b\f\n\r\t", 12));
    CHECK(str_is(ember_json_array_at(r, 1), "A\xC3\xA9\xE2\x82\xAC", 6));
    CHECK(str_is(ember_json_array_at(r, 2), "\xF0\x9F\x98\x80", 4));
    CHECK(str_is(ember_json_array_at(r, 3), "caf\xC3\xA9 \xF0\x9F\x98\x80", 10));
    CHECK(str_is(ember_json_array_at(r, 4), "x\0y", 3));
    CHECK(str_is(ember_json_array_at(r, 5), "", 0));
    CHECK(str_is(ember_json_array_at(r, 6), "\xF4\x8F\xBF\xBF", 4));
    CHECK(str_is(ember_json_array_at(r, 7), "0123456789abcdef0123456789\n", 27));
    ember_json_doc_destroy(doc);

    parse_fails("\"\\ud800\"", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: lone surrogate");
    parse_fails("\"\\udc00\"", EMBER_ERR_INVALID_ARGUMENT, "lone surrogate");
    parse_fails("\"\\ud800\\u0041\"", EMBER_ERR_INVALID_ARGUMENT, "lone surrogate");
    parse_fails("\"\\ud800x\"", EMBER_ERR_INVALID_ARGUMENT, "lone surrogate");
    parse_fails("\"\\u12G4\"", EMBER_ERR_INVALID_ARGUMENT, "four hex digits");
    parse_fails("\"\\x\"", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: invalid escape");
    parse_fails("\"a\tb\"", EMBER_ERR_INVALID_ARGUMENT, "json:1:3: control character");
    parse_fails("\"abc", EMBER_ERR_INVALID_ARGUMENT, "json:1:5: unexpected end of input");
    parse_fails("\"abc\\", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("\"\xC3\"", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8");
    parse_fails("\"\xC0\x80\"", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8");       /* overlong */
    parse_fails("\"\xED\xA0\x80\"", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8");   /* surrogate */
    parse_fails("\"\xF4\x90\x80\x80\"", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8"); /* > U+10FFFF */
    parse_fails("\"\xFF\"", EMBER_ERR_INVALID_ARGUMENT, "invalid UTF-8");
    parse_fails("'single'", EMBER_ERR_INVALID_ARGUMENT, "expected a value");
}

static void number_is(const char *text, double want_d, int64_t want_i, bool want_exact) {
    ember_json_doc *doc = parse(text);
    if (doc == NULL) return;
    const ember_json *v = ember_json_root(doc);
    double d = 0;
    int64_t i = 0;
    bool exact = !want_exact;
    CHECK_OK(ember_json_number(v, &d));
    CHECK_OK(ember_json_int64(v, &i, &exact));
    CHECK_MSG(d == want_d && (d != 0 || signbit(d) == signbit(want_d)), "%s: %.17g vs %.17g", text,
              d, want_d);
    CHECK_MSG(i == want_i, "%s: %lld vs %lld", text, (long long)i, (long long)want_i);
    CHECK_MSG(exact == want_exact, "%s: exact %d", text, exact);
    const char *t;
    size_t n;
    CHECK_OK(ember_json_number_text(v, &t, &n));
    CHECK(n == strlen(text) && strcmp(t, text) == 0);
    ember_json_doc_destroy(doc);
}

static void test_numbers(void) {
    check_section("numbers");
    number_is("0", 0.0, 0, true);
    number_is("-0", 0.0, 0, true);
    number_is("-0.0", -0.0, 0, false);
    number_is("42", 42.0, 42, true);
    number_is("9223372036854775807", 9223372036854775807.0, INT64_MAX, true);
    number_is("-9223372036854775808", -9223372036854775808.0, INT64_MIN, true);
    number_is("9223372036854775808", 9223372036854775808.0, INT64_MAX, false);
    number_is("-9223372036854775809", -9223372036854775808.0, INT64_MIN, false);
    number_is("123456789012345678901234567890", 1.2345678901234568e29, INT64_MAX, false);
    number_is("1.0", 1.0, 1, false);
    number_is("1e2", 100.0, 100, false);
    number_is("1E+2", 100.0, 100, false);
    number_is("25e-1", 2.5, 2, false);
    number_is("0.1", 0.1, 0, false);
    number_is("3.141592653589793", 3.141592653589793, 3, false);
    number_is("0.000001", 1e-6, 0, false);
    number_is("1e-7", 1e-7, 0, false);
    number_is("2.2250738585072014e-308", 2.2250738585072014e-308, 0, false);
    number_is("1.7976931348623157e308", 1.7976931348623157e308, INT64_MAX, false);
    number_is("4.9e-324", 4.9e-324, 0, false);
    number_is("1e400", HUGE_VAL, INT64_MAX, false);
    number_is("-1e400", -HUGE_VAL, INT64_MIN, false);
    number_is("1e-400", 0.0, 0, false);
    number_is("0.30000000000000004441", 0.30000000000000004, 0, false);
    number_is("9007199254740993", 9007199254740992.0, 9007199254740993, true);
    number_is("9007199254740993.0", 9007199254740992.0, 9007199254740992, false);
    number_is("1e99999999999999999999", HUGE_VAL, INT64_MAX, false);

    parse_fails("01", EMBER_ERR_INVALID_ARGUMENT, "json:1:1: invalid number (no leading zeros)");
    parse_fails("-", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("-a", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: invalid number");
    parse_fails("1.", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("1.e5", EMBER_ERR_INVALID_ARGUMENT, "json:1:3: invalid number");
    parse_fails("1e", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("1e+", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("+1", EMBER_ERR_INVALID_ARGUMENT, "expected a value");
    parse_fails(".5", EMBER_ERR_INVALID_ARGUMENT, "expected a value");
    parse_fails("NaN", EMBER_ERR_INVALID_ARGUMENT, "expected a value");
    parse_fails("Infinity", EMBER_ERR_INVALID_ARGUMENT, "expected a value");
    parse_fails("-Infinity", EMBER_ERR_INVALID_ARGUMENT, "invalid number");
    parse_fails("0x10", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: unexpected text after the document");
}

static void test_objects(void) {
    check_section("objects: order, lookup, repeated keys");
    ember_json_doc *doc = parse("{\"k\": 1, \"j\": 2, \"k\": 3, \"a\\u0000b\": 4}");
    if (doc == NULL) return;
    const ember_json *r = ember_json_root(doc);
    CHECK_EQ_INT(ember_json_object_size(r), 4);
    int64_t i = 0;
    CHECK_OK(ember_json_int64(ember_json_find(r, "k"), &i, NULL));
    CHECK_EQ_INT(i, 3);
    CHECK_OK(ember_json_int64(ember_json_get(r, "a\0b", 3), &i, NULL));
    CHECK_EQ_INT(i, 4);
    CHECK(ember_json_find(r, "a") == NULL);
    CHECK(ember_json_get(r, NULL, 1) == NULL);
    const char *key;
    size_t kl;
    CHECK_OK(ember_json_int64(ember_json_object_at(r, 0, &key, &kl), &i, NULL));
    CHECK(i == 1 && kl == 1 && key[0] == 'k');
    ember_json_doc_destroy(doc);

    /* A large object (hashed): every key found, repeats resolve to the last. */
    enum { N = 5000 };
    size_t cap = (size_t)N * 40 + 64, n = 0;
    char *s = malloc(cap);
    if (s == NULL) return;
    n += (size_t)snprintf(s + n, cap - n, "{");
    for (int k = 0; k < N; k++)
        n += (size_t)snprintf(s + n, cap - n, "%s\"key%d\":%d", k ? "," : "", k % (N - 100), k);
    n += (size_t)snprintf(s + n, cap - n, "}");
    doc = NULL;
    if (CHECK_OK(ember_json_parse(s, n, &doc))) {
        r = ember_json_root(doc);
        CHECK_EQ_INT(ember_json_object_size(r), N);
        int bad = 0;
        for (int k = 0; k < N - 100; k++) {
            char name[32];
            snprintf(name, sizeof name, "key%d", k);
            int want = k < 100 ? k + N - 100 : k;
            if (ember_json_int64(ember_json_find(r, name), &i, NULL) != EMBER_OK || i != want) bad++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(ember_json_find(r, "key") == NULL);
        CHECK(ember_json_find(r, "key4900") == NULL);
        ember_json_doc_destroy(doc);
    }
    free(s);
}

static void test_syntax_errors(void) {
    check_section("syntax errors and positions");
    parse_fails("", EMBER_ERR_INVALID_ARGUMENT, "json:1:1: unexpected end of input");
    parse_fails("   \n ", EMBER_ERR_INVALID_ARGUMENT, "json:2:2: unexpected end of input");
    parse_fails("[1,]", EMBER_ERR_INVALID_ARGUMENT, "json:1:4: expected a value");
    parse_fails("[1 2]", EMBER_ERR_INVALID_ARGUMENT, "json:1:4: expected ',' or ']'");
    parse_fails("{\"a\":1,}", EMBER_ERR_INVALID_ARGUMENT, "json:1:8: expected a string key");
    parse_fails("{\"a\" 1}", EMBER_ERR_INVALID_ARGUMENT, "json:1:6: expected ':'");
    parse_fails("{\"a\":1 \"b\":2}", EMBER_ERR_INVALID_ARGUMENT, "json:1:8: expected ',' or '}'");
    parse_fails("{a:1}", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: expected a string key");
    parse_fails("[1]]", EMBER_ERR_INVALID_ARGUMENT, "json:1:4: unexpected text after the document");
    parse_fails("[1] x", EMBER_ERR_INVALID_ARGUMENT, "json:1:5: unexpected text");
    parse_fails("[tru]", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: expected a value");
    parse_fails("nul", EMBER_ERR_INVALID_ARGUMENT, "json:1:1: expected a value");
    parse_fails("[1,\n \"\xC3\xA9\xC3\xA9\", x]", EMBER_ERR_INVALID_ARGUMENT, "json:2:8: expected a value");
    parse_fails("[1 // comment\n]", EMBER_ERR_INVALID_ARGUMENT, "json:1:4: expected ','");
    parse_fails("[\f1]", EMBER_ERR_INVALID_ARGUMENT, "json:1:2: expected a value");
    parse_fails("[", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("{", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("{\"a\"", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("{\"a\":", EMBER_ERR_INVALID_ARGUMENT, "unexpected end of input");
    parse_fails("\xEF\xBB", EMBER_ERR_INVALID_ARGUMENT, "expected a value");

    /* A name in the options replaces "json". */
    ember_json_options opt = {0};
    opt.struct_size = sizeof opt;
    opt.name = "tokenizer.json";
    ember_json_doc *doc = NULL;
    CHECK_ERR(ember_json_parse_ex("[,]", 3, &opt, &doc), EMBER_ERR_INVALID_ARGUMENT,
              "tokenizer.json:1:2: expected a value");
    opt.struct_size = 4;
    CHECK_ERR(ember_json_parse_ex("1", 1, &opt, &doc), EMBER_ERR_INVALID_ARGUMENT, "struct_size");
    CHECK_STATUS(ember_json_parse(NULL, 1, &doc), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_json_parse("1", 1, NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_ERR(ember_json_parse(NULL, 0, &doc), EMBER_ERR_INVALID_ARGUMENT, "unexpected end");
    CHECK(doc == NULL);
    /* Not NUL-terminated: the length is the end. */
    CHECK_OK(ember_json_parse("[12]345", 4, &doc));
    CHECK_EQ_INT(ember_json_array_size(ember_json_root(doc)), 1);
    ember_json_doc_destroy(doc);
}

/* "[[[ ... ]]]" of the given depth, plus a trailing member when obj. */
static char *nested(size_t depth, bool obj) {
    char *s = malloc(depth * 6 + 16);
    if (s == NULL) abort();
    size_t n = 0;
    for (size_t k = 0; k < depth; k++) {
        if (obj) {
            memcpy(s + n, "{\"a\":", 5);
            n += 5;
        } else {
            s[n++] = '[';
        }
    }
    s[n++] = '1';
    for (size_t k = 0; k < depth; k++) s[n++] = obj ? '}' : ']';
    s[n] = '\0';
    return s;
}

static void test_depth(void) {
    check_section("nesting depth");
    ember_json_doc *doc = NULL;
    char *s = nested(EMBER_JSON_DEFAULT_MAX_DEPTH, false);
    CHECK_OK(ember_json_parse(s, strlen(s), &doc));
    ember_json_doc_destroy(doc);
    free(s);
    s = nested(EMBER_JSON_DEFAULT_MAX_DEPTH + 1, true);
    CHECK_ERR(ember_json_parse(s, strlen(s), &doc), EMBER_ERR_NOT_SUPPORTED,
              "nesting deeper than 512");
    free(s);
    /* The parser keeps no C stack per level: the largest limit works. */
    ember_json_options opt = {sizeof opt, NULL, EMBER_JSON_MAX_DEPTH_LIMIT};
    s = nested(EMBER_JSON_MAX_DEPTH_LIMIT, false);
    doc = NULL;
    if (CHECK_OK(ember_json_parse_ex(s, strlen(s), &opt, &doc))) {
        const ember_json *v = ember_json_root(doc);
        size_t d = 0;
        while (ember_json_type_of(v) == EMBER_JSON_ARRAY) {
            v = ember_json_array_at(v, 0);
            d++;
        }
        CHECK_EQ_INT(d, EMBER_JSON_MAX_DEPTH_LIMIT);
        ember_json_doc_destroy(doc);
    }
    free(s);
    s = nested(EMBER_JSON_MAX_DEPTH_LIMIT + 1, false);
    CHECK_ERR(ember_json_parse_ex(s, strlen(s), &opt, &doc), EMBER_ERR_NOT_SUPPORTED,
              "nesting deeper");
    free(s);
    opt.max_depth = 3;
    CHECK_ERR(ember_json_parse_ex("[[[[]]]]", 8, &opt, &doc), EMBER_ERR_NOT_SUPPORTED,
              "json:1:4: nesting deeper than 3");
    CHECK_OK(ember_json_parse_ex("[[[1]],[[2]]]", 13, &opt, &doc));
    ember_json_doc_destroy(doc);
    opt.max_depth = EMBER_JSON_MAX_DEPTH_LIMIT + 1;
    CHECK_ERR(ember_json_parse_ex("1", 1, &opt, &doc), EMBER_ERR_INVALID_ARGUMENT, "max_depth");
}

/* Walks every value (touching every byte the accessors give). */
static size_t walk(const ember_json *v) {
    size_t count = 1;
    const char *s;
    size_t n;
    switch (ember_json_type_of(v)) {
    case EMBER_JSON_ARRAY:
        for (size_t i = 0; i < ember_json_array_size(v); i++) count += walk(ember_json_array_at(v, i));
        break;
    case EMBER_JSON_OBJECT:
        for (size_t i = 0; i < ember_json_object_size(v); i++) {
            const ember_json *m = ember_json_object_at(v, i, &s, &n);
            if (ember_json_get(v, s, n) == NULL) return 0;
            count += walk(m);
        }
        break;
    case EMBER_JSON_STRING:
        if (ember_json_string(v, &s, &n) != EMBER_OK || s[n] != '\0') return 0;
        break;
    default: break;
    }
    return count;
}

static const char k_doc[] =
    "{\n  \"version\": \"1.0\",\n  \"added_tokens\": [{\"id\": 0, \"content\": \"<|endoftext|>\","
    " \"special\": true}],\n  \"model\": {\"type\": \"BPE\", \"dropout\": null,\n"
    "    \"vocab\": {\"a\": 0, \"b\": 1, \"\\u0120the\": 2, \"caf\xC3\xA9\": 3, \"x\\\"y\": 4,"
    " \"\\ud83d\\ude00\": 5, \"n\": 6, \"m\": 7, \"o\": 8, \"p\": 9},\n"
    "    \"merges\": [\"a b\", [\"\\u0120\", \"the\"], -1.5e-3, 12345678901234567890]}\n}\n";

static void test_mutations(void) {
    check_section("truncations and byte flips");
    size_t n = sizeof k_doc - 1;
    ember_json_doc *doc = NULL;
    if (!CHECK_OK(ember_json_parse(k_doc, n, &doc))) return;
    CHECK_EQ_INT(walk(ember_json_root(doc)), 28);
    ember_json_doc_destroy(doc);
    char *buf = malloc(n);
    if (buf == NULL) return;
    int bad = 0, ok = 0;
    /* Every proper prefix is incomplete except where it ends a value at
     * the top, which this document never does. */
    for (size_t k = 0; k < n - 1; k++) {
        memcpy(buf, k_doc, k);
        doc = NULL;
        ember_status st = ember_json_parse(buf, k, &doc);
        if (st == EMBER_OK) {
            walk(ember_json_root(doc));
            ember_json_doc_destroy(doc);
            bad++;
        } else if (st != EMBER_ERR_INVALID_ARGUMENT || doc != NULL ||
                   strncmp(ember_last_error(), "json:", 5) != 0) {
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    static const unsigned char flips[] = {0x01, 0x02, 0x08, 0x20, 0x40, 0x80, 0xFF};
    bad = 0;
    for (size_t k = 0; k < n; k++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(buf, k_doc, n);
            buf[k] = (char)(buf[k] ^ flips[f]);
            doc = NULL;
            ember_status st = ember_json_parse(buf, n, &doc);
            if (st == EMBER_OK) {
                if (walk(ember_json_root(doc)) == 0) bad++;
                ember_json_doc_destroy(doc);
                ok++;
            } else if (st != EMBER_ERR_INVALID_ARGUMENT || doc != NULL) {
                bad++;
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(ok > 0); /* some flips leave valid JSON (a digit or a letter in a string) */
    free(buf);
}

/* ------------------------------------------------------------------------ */
/* Harness modes                                                             */
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

/* A string as Python's json.dumps(s) writes it (ensure_ascii=True). */
static void dump_string(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default: break;
        }
        if (esc != NULL) {
            fputs(esc, stdout);
            i++;
            continue;
        }
        if (c >= 0x20 && c < 0x7F) {
            putchar(c);
            i++;
            continue;
        }
        uint32_t cp = c;
        size_t l = 1;
        if (c >= 0xF0) cp = c & 0x07, l = 4;
        else if (c >= 0xE0) cp = c & 0x0F, l = 3;
        else if (c >= 0xC0) cp = c & 0x1F, l = 2;
        for (size_t k = 1; k < l && i + k < n; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
        i += l;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            printf("\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            printf("\\u%04x", cp);
        }
    }
    putchar('"');
}

/* Canonical form: null true false; ints exact in int64 as digits; other
 * numbers as "f" and %.17g; strings as json.dumps; arrays and objects with
 * "," and ":" and every member, in order. */
static void dump(const ember_json *v) {
    const char *s;
    size_t n;
    switch (ember_json_type_of(v)) {
    case EMBER_JSON_NULL: fputs("null", stdout); break;
    case EMBER_JSON_BOOL: {
        bool b = false;
        ember_json_bool(v, &b);
        fputs(b ? "true" : "false", stdout);
        break;
    }
    case EMBER_JSON_NUMBER: {
        int64_t i;
        bool exact;
        double d;
        ember_json_int64(v, &i, &exact);
        ember_json_number(v, &d);
        if (exact) printf("%lld", (long long)i);
        else printf("f%.17g", d);
        break;
    }
    case EMBER_JSON_STRING:
        ember_json_string(v, &s, &n);
        dump_string(s, n);
        break;
    case EMBER_JSON_ARRAY:
        putchar('[');
        for (size_t i = 0; i < ember_json_array_size(v); i++) {
            if (i) putchar(',');
            dump(ember_json_array_at(v, i));
        }
        putchar(']');
        break;
    case EMBER_JSON_OBJECT:
        putchar('{');
        for (size_t i = 0; i < ember_json_object_size(v); i++) {
            const ember_json *m = ember_json_object_at(v, i, &s, &n);
            if (i) putchar(',');
            dump_string(s, n);
            putchar(':');
            dump(m);
        }
        putchar('}');
        break;
    }
}

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int harness(const char *mode, const char *path) {
    size_t len = 0;
    char *text = read_file(path, &len);
    if (text == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    ember_json_doc *doc = NULL;
    int rc = 0;
    if (strcmp(mode, "--dump") == 0) {
        if (ember_json_parse(text, len, &doc) != EMBER_OK) {
            printf("error: %s\n", ember_last_error());
            rc = 1;
        } else {
            dump(ember_json_root(doc));
            putchar('\n');
        }
    } else {
        double best = 1e30;
        for (int k = 0; k < 5; k++) {
            double t0 = now_s();
            ember_status st = ember_json_parse(text, len, &doc);
            double t = now_s() - t0;
            if (st != EMBER_OK) {
                printf("error: %s\n", ember_last_error());
                rc = 1;
                break;
            }
            if (t < best) best = t;
            if (k < 4) ember_json_doc_destroy(doc);
        }
        if (rc == 0)
            printf("%zu bytes, %zu values, best of 5: %.1f ms (%.0f MB/s)\n", len,
                   walk(ember_json_root(doc)), best * 1e3, (double)len / best / 1e6);
    }
    ember_json_doc_destroy(doc);
    free(text);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 3 && (strcmp(argv[1], "--dump") == 0 || strcmp(argv[1], "--time") == 0))
        return harness(argv[1], argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: test_json [--dump FILE | --time FILE]\n");
        return 2;
    }
    test_kinds();
    test_strings();
    test_numbers();
    test_objects();
    test_syntax_errors();
    test_depth();
    test_mutations();
    return check_finish();
}
