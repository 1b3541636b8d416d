/*
 * Tests of ember_tokenizer (extension/llm/tokenizer.h) on small tokenizers
 * built here: tiktoken rank files (the whole-piece rule, merges by rank,
 * Llama 3's special tokens with and without EMBER_ENCODE_SPECIAL), Hugging
 * Face tokenizer.json files (byte-level BPE with a Split pre-tokenizer and
 * added tokens; Llama 2-style Prepend/Replace normalizers with byte
 * fallback and the Replace/ByteFallback/Fuse/Strip decoders; Metaspace;
 * Unigram; WordPiece; added tokens with lstrip, rstrip and single_word),
 * streaming decoding (characters split across tokens held, ill-formed
 * bytes replaced, the same text as a whole decode for every prefix), and
 * clean errors for malformed and unsupported files.
 *
 * With arguments it is the harness of tests/python/test_llm_tokenizers.py:
 *   test_tokenizers --encode TOKENIZER INPUT_JSONL [--special]
 *       one line of ids per input line
 *   test_tokenizers --decode TOKENIZER IDS_FILE
 *       for each line of ids two lines: the decoded text as a JSON string,
 *       then the streamed text as a JSON string
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "text/json.h"
#include "tokenizer.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (t->s == NULL) abort();
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void b64(text *t, const unsigned char *s, size_t n) {
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        char o[4] = {al[v >> 18 & 63], al[v >> 12 & 63], i + 1 < n ? al[v >> 6 & 63] : '=',
                     i + 2 < n ? al[v & 63] : '='};
        put(t, o, 4);
    }
}

/* Encodes and compares with the expected ids. */
static bool expect_ids(const ember_tokenizer *tok, const char *s, unsigned flags,
                       const int32_t *want, size_t n_want) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (!CHECK_OK(ember_tokenizer_encode(tok, s, strlen(s), flags, &ids, &n))) return false;
    bool ok = n == n_want && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!ok) {
        fprintf(stderr, "  \"%s\": got", s);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n_want; i++) fprintf(stderr, " %d", (int)want[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return CHECK_MSG(ok, "ids of \"%s\"", s);
}

/* Decodes whole and streamed; both must equal want. */
static void expect_text(const ember_tokenizer *tok, const int32_t *ids, size_t n,
                        const char *want) {
    char *s = NULL;
    size_t len = 0;
    if (CHECK_OK(ember_tokenizer_decode(tok, ids, n, &s, &len)))
        CHECK_MSG(len == strlen(want) && memcmp(s, want, len) == 0, "decode: \"%s\", want \"%s\"",
                  s, want);
    free(s);
    ember_token_decoder *d;
    if (!CHECK_OK(ember_token_decoder_create(tok, &d))) return;
    text out = {0};
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t pl;
        if (CHECK_OK(ember_token_decoder_push(d, ids[i], &p, &pl))) put(&out, p, pl);
    }
    const char *p;
    size_t pl;
    if (CHECK_OK(ember_token_decoder_finish(d, &p, &pl))) put(&out, p, pl);
    CHECK_MSG(out.n == strlen(want) && (out.n == 0 || memcmp(out.s, want, out.n) == 0),
              "streamed: \"%s\", want \"%s\"", out.s ? out.s : "", want);
    free(out.s);
    ember_token_decoder_destroy(d);
}

/* ------------------------------------------------------------------------ */
/* tiktoken                                                                  */
/* ------------------------------------------------------------------------ */

/* Ranks: the 256 bytes, then these (ranks 256 on). */
static const char *const k_tt_extra[] = {"he", "ll", "hell", "hello", " w", "or", " wor", "ld"};

static text tt_file(void) {
    text t = {0};
    char num[32];
    for (unsigned b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        b64(&t, &c, 1);
        snprintf(num, sizeof num, " %u\n", b);
        puts_(&t, num);
    }
    for (size_t k = 0; k < sizeof k_tt_extra / sizeof k_tt_extra[0]; k++) {
        b64(&t, (const unsigned char *)k_tt_extra[k], strlen(k_tt_extra[k]));
        snprintf(num, sizeof num, " %zu\n", 256 + k);
        puts_(&t, num);
    }
    return t;
}

static void test_tiktoken(void) {
    check_section("tiktoken: ranks, the whole-piece rule, Llama 3's special tokens");
    text f = tt_file();
    ember_tokenizer *tok = NULL;
    if (!CHECK_OK(ember_tokenizer_load_memory(f.s, f.n, "tokenizer.model", NULL, &tok))) {
        free(f.s);
        return;
    }
    CHECK(ember_tokenizer_get_format(tok) == EMBER_TOKENIZER_TIKTOKEN);
    CHECK_EQ_INT(ember_tokenizer_vocab_size(tok), 264 + 256);
    int32_t bos = 264, eot;
    CHECK_EQ_INT(ember_tokenizer_bos_id(tok), bos);
    CHECK_OK(ember_tokenizer_token_id(tok, "<|eot_id|>", 10, &eot));
    CHECK_EQ_INT(eot, 264 + 9);
    CHECK(ember_tokenizer_is_special(tok, eot) && !ember_tokenizer_is_special(tok, 'a'));
    int32_t eos[8];
    size_t n_eos = ember_tokenizer_eos_ids(tok, eos, 8);
    CHECK(n_eos >= 2);
    /* "hello" is a token as a whole; "hellx" merges h+e, l+l, then he+ll */
    expect_ids(tok, "hello", 0, (const int32_t[]){259}, 1);
    expect_ids(tok, "hellx", 0, (const int32_t[]){258, 'x'}, 2);
    /* Llama 3's pattern: " world" is one piece: " w" + "or" -> " wor" + "ld" */
    expect_ids(tok, "hello world", 0, (const int32_t[]){259, 262, 263}, 3);
    /* special tokens only with the flag */
    expect_ids(tok, "<|eot_id|>hi", EMBER_ENCODE_SPECIAL, (const int32_t[]){eot, 'h', 'i'}, 3);
    int32_t *ids;
    size_t n;
    if (CHECK_OK(ember_tokenizer_encode(tok, "<|eot_id|>", 10, 0, &ids, &n)))
        CHECK_MSG(n > 1 && ids[0] == '<', "without the flag it is text (%zu ids)", n);
    free(ids);
    /* decoding: a special token gives its spelling */
    expect_text(tok, (const int32_t[]){259, 262, 263, eot}, 4, "hello world<|eot_id|>");
    /* é (C3 A9) split over two byte tokens; a lone C3 before 'a'; a held
     * lead byte at the end */
    expect_text(tok, (const int32_t[]){0xC3, 0xA9}, 2, "\xC3\xA9");
    expect_text(tok, (const int32_t[]){0xC3, 'a'}, 2, "\xEF\xBF\xBD" "a");
    expect_text(tok, (const int32_t[]){'a', 0xF0, 0x9F}, 3, "a\xEF\xBF\xBD");
    expect_text(tok, (const int32_t[]){0xFF, 0x80}, 2, "\xEF\xBF\xBD\xEF\xBF\xBD");
    /* the streaming decoder holds the lead byte */
    ember_token_decoder *d;
    if (CHECK_OK(ember_token_decoder_create(tok, &d))) {
        const char *p;
        size_t pl;
        CHECK(ember_token_decoder_push(d, 0xC3, &p, &pl) == EMBER_OK && pl == 0);
        CHECK(ember_token_decoder_push(d, 0xA9, &p, &pl) == EMBER_OK && pl == 2);
        CHECK_ERR(ember_token_decoder_push(d, 100000, &p, &pl), EMBER_ERR_INDEX_OUT_OF_RANGE,
                  "100000");
        ember_token_decoder_destroy(d);
    }
    int32_t bad = -1;
    char *s;
    size_t sl;
    CHECK_ERR(ember_tokenizer_decode(tok, &bad, 1, &s, &sl), EMBER_ERR_INDEX_OUT_OF_RANGE, "-1");
    ember_tokenizer_destroy(tok);

    /* the caller's pattern and special tokens */
    ember_tokenizer_options o = ember_tokenizer_options_default();
    const char *const sp[] = {"<s>", "</s>"};
    o.special_tokens = sp;
    o.num_special_tokens = 2;
    o.pattern = "\\S+|\\s+";
    if (CHECK_OK(ember_tokenizer_load_memory(f.s, f.n, "ranks", &o, &tok))) {
        CHECK_EQ_INT(ember_tokenizer_vocab_size(tok), 266);
        CHECK_EQ_INT(ember_tokenizer_bos_id(tok), -1);
        expect_ids(tok, "<s>hello", EMBER_ENCODE_SPECIAL, (const int32_t[]){264, 259}, 2);
        ember_tokenizer_destroy(tok);
    }
    free(f.s);
}

static void test_tiktoken_errors(void) {
    check_section("tiktoken: malformed rank files fail cleanly");
    static const char *const bad[] = {
        "aGk= 0\n@@@ 1\n",  /* not base64 */
        "aGk= 0\naGk= 1\n", /* a token twice */
        "aGk= 5\n",         /* a rank outside 0..n-1 */
        "aGk= 0\naA== x\n", /* not a number */
        "aGk= 0\naA==\n",   /* no rank */
        "aGk= 0\n",         /* bytes without a token */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ember_tokenizer *tok = NULL;
        ember_status st = ember_tokenizer_load_memory(bad[k], strlen(bad[k]), "t.model", NULL, &tok);
        CHECK_MSG(st == EMBER_ERR_INVALID_ARGUMENT && strstr(ember_last_error(), "t.model") != NULL,
                  "case %zu: %s (%s)", k, ember_status_str(st), ember_last_error());
        ember_tokenizer_destroy(tok);
    }
    /* a special token that is also a ranked token */
    text f = tt_file();
    ember_tokenizer_options o = ember_tokenizer_options_default();
    const char *const sp[] = {"he"};
    o.special_tokens = sp;
    o.num_special_tokens = 1;
    ember_tokenizer *tok = NULL;
    CHECK_ERR(ember_tokenizer_load_memory(f.s, f.n, "t.model", &o, &tok),
              EMBER_ERR_INVALID_ARGUMENT, "also token");
    /* a pattern the engine refuses */
    o.special_tokens = NULL;
    o.pattern = "(unclosed";
    CHECK_ERR(ember_tokenizer_load_memory(f.s, f.n, "t.model", &o, &tok),
              EMBER_ERR_INVALID_ARGUMENT, "pattern");
    /* truncations of a good file at every 97th byte: a clean result */
    for (size_t cut = 0; cut < f.n; cut += 97) {
        ember_status st = ember_tokenizer_load_memory(f.s, cut, "t.model", NULL, &tok);
        if (st == EMBER_OK) ember_tokenizer_destroy(tok);
        else CHECK(ember_last_error()[0] != '\0');
        tok = NULL;
    }
    CHECK_ERR(ember_tokenizer_load_memory("", 0, "empty", NULL, &tok), EMBER_ERR_NOT_SUPPORTED,
              "empty");
    free(f.s);
}

/* ------------------------------------------------------------------------ */
/* Hugging Face tokenizer.json                                              */
/* ------------------------------------------------------------------------ */

/* GPT-2's byte -> character map, written out here. */
static unsigned byte_cp(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0) return 0x121 + (b - 0x7F);
    return 0x143;
}

static void put_cp(text *t, unsigned cp) {
    char o[4];
    size_t n;
    if (cp < 0x80) o[0] = (char)cp, n = 1;
    else if (cp < 0x800) o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), n = 2;
    else o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 63)),
         o[2] = (char)(0x80 | (cp & 63)), n = 3;
    if (cp == '"' || cp == '\\') put(t, "\\", 1);
    put(t, o, n);
}

/* A byte-level BPE tokenizer.json: the 256 byte characters (ids 0..255),
 * "Ġw" 256, "or" 257, "Ġwor" 258, "ld" 259, "Ġworld" 260; added tokens
 * <|im_start|> 261 and <|im_end|> 262 (special), "xyz" 263 (not special).
 * pre: a Split pattern, then ByteLevel without its own regex. */
static text bytelevel_json(const char *split) {
    text t = {0};
    puts_(&t, "{\"version\":\"1.0\",\"added_tokens\":["
              "{\"id\":261,\"content\":\"<|im_start|>\",\"special\":true,\"normalized\":false},"
              "{\"id\":262,\"content\":\"<|im_end|>\",\"special\":true,\"normalized\":false},"
              "{\"id\":263,\"content\":\"xyz\",\"special\":false,\"normalized\":true}],"
              "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Sequence\","
              "\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"");
    puts_(&t, split);
    puts_(&t, "\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
              "\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]},"
              "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{");
    char num[32];
    for (unsigned b = 0; b < 256; b++) {
        puts_(&t, "\"");
        put_cp(&t, byte_cp(b));
        snprintf(num, sizeof num, "\":%u,", b);
        puts_(&t, num);
    }
    puts_(&t, "\"\xC4\xA0w\":256,\"or\":257,\"\xC4\xA0wor\":258,\"ld\":259,\"\xC4\xA0world\":260,"
              "\"<|im_start|>\":261,\"<|im_end|>\":262},\"merges\":[\"\xC4\xA0 w\",[\"o\",\"r\"],"
              "\"\xC4\xA0w or\",\"l d\",\"\xC4\xA0wor ld\"]}}");
    return t;
}

static void test_hf_bytelevel(void) {
    check_section("tokenizer.json: byte-level BPE, Split, added tokens");
    text j = bytelevel_json("\\\\s?\\\\p{L}+|\\\\s+|[^\\\\s\\\\p{L}]+");
    ember_tokenizer *tok = NULL;
    if (!CHECK_OK(ember_tokenizer_load_memory(j.s, j.n, "tokenizer.json", NULL, &tok))) {
        free(j.s);
        return;
    }
    CHECK(ember_tokenizer_get_format(tok) == EMBER_TOKENIZER_HUGGINGFACE);
    CHECK_EQ_INT(ember_tokenizer_vocab_size(tok), 264);
    CHECK(ember_tokenizer_is_special(tok, 262) && !ember_tokenizer_is_special(tok, 263));
    /* " world" merges to one token; "hi" stays bytes */
    expect_ids(tok, "hi world", 0, (const int32_t[]){'h', 'i', 260}, 3);
    /* special added tokens only with the flag; "xyz" (not special) always */
    expect_ids(tok, "<|im_start|>hi", EMBER_ENCODE_SPECIAL, (const int32_t[]){261, 'h', 'i'}, 3);
    expect_ids(tok, "axyz", 0, (const int32_t[]){'a', 263}, 2);
    int32_t *ids;
    size_t n;
    if (CHECK_OK(ember_tokenizer_encode(tok, "<|im_end|>", 10, 0, &ids, &n)))
        CHECK_MSG(n > 1 && ids[0] == '<', "without the flag it is text (%zu ids)", n);
    free(ids);
    /* a space is Ġ (id 32 is the byte 0x20's character) */
    expect_text(tok, (const int32_t[]){'h', 'i', 260, 262}, 4, "hi world<|im_end|>");
    /* é split over byte tokens C3 (Ã) and A9 (©) */
    expect_text(tok, (const int32_t[]){0xC3, 0xA9, 'x'}, 3, "\xC3\xA9x");
    expect_text(tok, (const int32_t[]){0xC3}, 1, "\xEF\xBF\xBD");
    ember_tokenizer_destroy(tok);
    free(j.s);
}

/* Llama 2 as Hugging Face converts it: Prepend("▁") and Replace(" ", "▁"),
 * no pre-tokenizer, BPE with byte fallback, decoders Replace, ByteFallback,
 * Fuse, Strip. Vocabulary: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258,
 * ▁ 259, h 260, i 261, ▁h 262, ▁hi 263. */
static text llama2_json(void) {
    text t = {0};
    puts_(&t, "{\"added_tokens\":["
              "{\"id\":0,\"content\":\"<unk>\",\"special\":true,\"normalized\":false},"
              "{\"id\":1,\"content\":\"<s>\",\"special\":true,\"normalized\":false},"
              "{\"id\":2,\"content\":\"</s>\",\"special\":true,\"normalized\":false}],"
              "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
              "{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"},"
              "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"}]},"
              "\"pre_tokenizer\":null,"
              "\"decoder\":{\"type\":\"Sequence\",\"decoders\":["
              "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xE2\x96\x81\"},\"content\":\" \"},"
              "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
              "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]},"
              "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,"
              "\"fuse_unk\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,");
    char num[48];
    for (unsigned b = 0; b < 256; b++) {
        snprintf(num, sizeof num, "\"<0x%02X>\":%u,", b, b + 3);
        puts_(&t, num);
    }
    puts_(&t, "\"\xE2\x96\x81\":259,\"h\":260,\"i\":261,\"\xE2\x96\x81h\":262,"
              "\"\xE2\x96\x81hi\":263},\"merges\":[\"\xE2\x96\x81 h\",\"\xE2\x96\x81h i\"]}}");
    return t;
}

static void test_hf_llama2(void) {
    check_section("tokenizer.json: Llama 2 style (Prepend, byte fallback, Strip)");
    text j = llama2_json();
    ember_tokenizer *tok = NULL;
    if (!CHECK_OK(ember_tokenizer_load_memory(j.s, j.n, "tokenizer.json", NULL, &tok))) {
        free(j.s);
        return;
    }
    /* "hi hi": ▁hi ▁hi; "é": ▁ then its bytes by fallback */
    expect_ids(tok, "hi hi", 0, (const int32_t[]){263, 263}, 2);
    expect_ids(tok, "\xC3\xA9", 0, (const int32_t[]){259, 0xC3 + 3, 0xA9 + 3}, 3);
    /* <s> splits the text: each stretch gets its own ▁ */
    expect_ids(tok, "hi<s>hi", EMBER_ENCODE_SPECIAL, (const int32_t[]){263, 1, 263}, 3);
    /* decoding: the leading space stripped once, bytes joined */
    expect_text(tok, (const int32_t[]){263, 263}, 2, "hi hi");
    expect_text(tok, (const int32_t[]){259, 0xC3 + 3, 0xA9 + 3, 260}, 4, "\xC3\xA9h");
    /* an ill-formed run of byte tokens: one U+FFFD per byte */
    expect_text(tok, (const int32_t[]){260, 0xC3 + 3, 0x41 + 3 + 0x80, 261}, 4,
                "h\xEF\xBF\xBD\xEF\xBF\xBDi");
    expect_text(tok, (const int32_t[]){1, 263}, 2, "<s> hi");
    ember_tokenizer_destroy(tok);
    free(j.s);
}

/* Every corrupted variant of a good document loads or fails cleanly. */
static void corrupt_all(const text *j) {
    ember_tokenizer *tok;
    for (size_t k = 0; k < j->n; k += 13) {
        char *c = malloc(j->n);
        if (c == NULL) abort();
        memcpy(c, j->s, j->n);
        c[k] ^= (char)(1 + k % 251);
        tok = NULL;
        ember_status st = ember_tokenizer_load_memory(c, j->n, "tokenizer.json", NULL, &tok);
        if (st == EMBER_OK) {
            int32_t *ids;
            size_t n;
            if (ember_tokenizer_encode(tok, "hi world <s>", 12, EMBER_ENCODE_SPECIAL, &ids, &n) ==
                EMBER_OK)
                free(ids);
            ember_tokenizer_destroy(tok);
        } else {
            CHECK(ember_last_error()[0] != '\0');
        }
        free(c);
        tok = NULL;
        st = ember_tokenizer_load_memory(j->s, k, "tokenizer.json", NULL, &tok);
        if (st == EMBER_OK) ember_tokenizer_destroy(tok);
        else CHECK(ember_last_error()[0] != '\0');
    }
}

static void test_hf_errors(void) {
    check_section("tokenizer.json: unsupported and malformed files fail cleanly");
    static const struct { const char *json, *msg; ember_status st; } cases[] = {
        {"{\"model\":{\"type\":\"Fancy\"}}", "Fancy", EMBER_ERR_NOT_SUPPORTED},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}},\"normalizer\":{\"type\":\"Magic\"}}",
         "Magic", EMBER_ERR_NOT_SUPPORTED},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}},\"pre_tokenizer\":{\"type\":\"Odd\"}}",
         "Odd", EMBER_ERR_NOT_SUPPORTED},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}},\"decoder\":{\"type\":\"CTC\"}}", "CTC",
         EMBER_ERR_NOT_SUPPORTED},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}", "merge 0",
         EMBER_ERR_INVALID_ARGUMENT},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", "vocab",
         EMBER_ERR_INVALID_ARGUMENT},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}", "repeats",
         EMBER_ERR_INVALID_ARGUMENT},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\"]]}}", "[piece, score]",
         EMBER_ERR_INVALID_ARGUMENT},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}},\"pre_tokenizer\":{\"type\":\"Split\","
         "\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}}",
         "pattern", EMBER_ERR_INVALID_ARGUMENT},
        {"{\"vocab\":{}}", "not a tokenizer.json", EMBER_ERR_NOT_SUPPORTED},
        {"{\"model\":", "tokenizer.json:1", EMBER_ERR_INVALID_ARGUMENT},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ember_tokenizer *tok = NULL;
        ember_status st =
            ember_tokenizer_load_memory(cases[k].json, strlen(cases[k].json), "tokenizer.json",
                                        NULL, &tok);
        CHECK_MSG(st == cases[k].st && strstr(ember_last_error(), cases[k].msg) != NULL,
                  "case %zu: %s, \"%s\"", k, ember_status_str(st), ember_last_error());
        ember_tokenizer_destroy(tok);
    }
    text a = bytelevel_json("\\\\s?\\\\p{L}+|\\\\s+|[^\\\\s\\\\p{L}]+");
    text b = llama2_json();
    corrupt_all(&a);
    corrupt_all(&b);
    free(a.s);
    free(b.s);
}

/* ------------------------------------------------------------------------ */
/* Harness for the Python parity tests                                       */
/* ------------------------------------------------------------------------ */

static void print_json_string(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static int harness(int argc, char **argv) {
    if (argc < 4) return 2;
    ember_tokenizer *tok;
    if (ember_tokenizer_load(argv[2], NULL, &tok) != EMBER_OK) {
        fprintf(stderr, "load: %s\n", ember_last_error());
        return 1;
    }
    FILE *f = fopen(argv[3], "rb");
    if (f == NULL) return 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    bool encode = strcmp(argv[1], "--encode") == 0;
    unsigned flags = argc > 4 && strcmp(argv[4], "--special") == 0 ? EMBER_ENCODE_SPECIAL : 0;
    ember_token_decoder *dec = NULL;
    if (!encode && ember_token_decoder_create(tok, &dec) != EMBER_OK) return 1;
    int rc = 0;
    while ((got = getline(&line, &cap, f)) > 0 && rc == 0) {
        if (line[got - 1] == '\n') line[--got] = '\0';
        if (encode) {
            ember_json_doc *doc;
            const char *s;
            size_t n;
            int32_t *ids;
            size_t nid;
            if (ember_json_parse(line, (size_t)got, &doc) != EMBER_OK ||
                ember_json_string(ember_json_root(doc), &s, &n) != EMBER_OK) {
                fprintf(stderr, "bad input line\n");
                return 1;
            }
            if (ember_tokenizer_encode(tok, s, n, flags, &ids, &nid) != EMBER_OK) {
                printf("error %s\n", ember_last_error());
            } else {
                for (size_t i = 0; i < nid; i++) printf(i ? " %d" : "%d", (int)ids[i]);
                printf("\n");
                free(ids);
            }
            ember_json_doc_destroy(doc);
        } else {
            int32_t ids[4096];
            size_t n = 0;
            for (char *p = line; *p && n < 4096;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p) break;
                ids[n++] = (int32_t)v;
                p = end;
            }
            char *s;
            size_t sl;
            if (ember_tokenizer_decode(tok, ids, n, &s, &sl) != EMBER_OK) {
                printf("error %s\n", ember_last_error());
                continue;
            }
            print_json_string(s, sl);
            free(s);
            text streamed = {0};
            for (size_t i = 0; i < n; i++) {
                const char *p;
                size_t pl;
                if (ember_token_decoder_push(dec, ids[i], &p, &pl) == EMBER_OK) put(&streamed, p, pl);
            }
            const char *p;
            size_t pl;
            if (ember_token_decoder_finish(dec, &p, &pl) == EMBER_OK) put(&streamed, p, pl);
            putchar('\n');
            print_json_string(streamed.s ? streamed.s : "", streamed.n);
            putchar('\n');
            free(streamed.s);
        }
    }
    free(line);
    fclose(f);
    ember_token_decoder_destroy(dec);
    ember_tokenizer_destroy(tok);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1) return harness(argc, argv);
    test_tiktoken();
    test_tiktoken_errors();
    test_hf_bytelevel();
    test_hf_llama2();
    test_hf_errors();
    return check_finish();
}
