/*
 * Tests of the byte-level BPE tokenizer (extension/llm/bpe_tokenizer.h):
 * GPT-2's byte map, the pre-tokenizer's pieces (contractions, letters,
 * numbers, punctuation, whitespace runs), merges by rank, special tokens,
 * JSON escapes, round trips of arbitrary bytes, and clean errors for every
 * kind of corrupt or missing vocab.json / merges.txt (truncations and byte
 * flips included). The comparison with the `tokenizers` library on real
 * text is in tests/python/test_llm_runner.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_tokenizer.h"
#include "check.h"

/* ------------------------------------------------------------------------ */
/* A small vocabulary built here                                             */
/* ------------------------------------------------------------------------ */

/* GPT-2's byte -> code point map, written out independently of the library. */
static unsigned gpt2_cp(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100 + b;                 /* 33 bytes: U+0100..U+0120 */
    if (b >= 0x7F && b <= 0xA0) return 0x121 + (b - 0x7F); /* 34 bytes: U+0121..U+0142 */
    return 0x143;                                     /* 0xAD */
}

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

/* UTF-8 of code point cp. */
static size_t utf8(unsigned cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 63)), 2;
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 63));
    o[2] = (char)(0x80 | (cp & 63));
    return 3;
}

/* Ids of the extra tokens after the 256 byte tokens (id = byte value). */
enum {
    ID_HE = 256, /* "he" */
    ID_SP_T,     /* "Ġt" */
    ID_SP_THE,   /* "Ġthe" */
    ID_SP_SP,    /* "ĠĠ" */
    ID_A_SP,     /* "aĠ": crosses a piece boundary, so never used */
    ID_APOS_S,   /* "'s" */
    ID_12,       /* "12" */
    ID_EOT,      /* "<|endoftext|>" */
    ID_SMILE,    /* 😀 in byte-level spelling: its bytes' code points "ðŁĺĢ" */
    ID_HEL,      /* "hel" */
    ID_RAW,      /* U+1F600 itself, written as a surrogate pair escape */
    N_IDS
};

/* vocab.json with bytes as ids 0..255 (code points >= 0x100 written as
 * \u escapes when escape_high, as OpenAI's encoder.json does), then extras. */
static text make_vocab(bool escape_high) {
    text t = {0};
    puts_(&t, "{\n");
    char buf[64];
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = gpt2_cp(b);
        puts_(&t, "  \"");
        if (cp == '"' || cp == '\\') {
            buf[0] = '\\', buf[1] = (char)cp;
            put(&t, buf, 2);
        } else if (cp >= 0x100 && escape_high) {
            snprintf(buf, sizeof buf, "\\u%04X", cp);
            puts_(&t, buf);
        } else {
            put(&t, buf, utf8(cp, buf));
        }
        snprintf(buf, sizeof buf, "\": %u,\n", b);
        puts_(&t, buf);
    }
    /* 😀 is F0 9F 98 80: F0 stands for itself, 9F for U+0141, 98 for U+013A
     * and 80 for U+0122. */
    puts_(&t, "  \"he\": 256, \"\\u0120t\": 257, \"Ġthe\": 258, \"ĠĠ\": 259, \"aĠ\": 260,\n"
              "  \"'s\": 261, \"12\": 262, \"<|endoftext|>\": 263,\n"
              "  \"\\u00f0\\u0141\\u013a\\u0122\": 264, \"hel\": 265, \"\\ud83d\\ude00\": 266\n}\n");
    return t;
}

static const char k_merges[] =
    "#version: 0.2\n"
    "h e\n"
    "Ġ t\n"
    "Ġt he\n"
    "Ġ Ġ\n"
    "a Ġ\n"
    "' s\n"
    "1 2\n"
    "he l\n";

static ember_bpe_tokenizer *load_small(void) {
    text v = make_vocab(true);
    ember_bpe_tokenizer *tok = NULL;
    CHECK_OK(ember_bpe_tokenizer_load_memory(v.s, v.n, k_merges, sizeof k_merges - 1, &tok));
    free(v.s);
    return tok;
}

/* Encodes s and compares with want[0..n). */
static void check_encode(const ember_bpe_tokenizer *tok, const char *s, const int32_t *want,
                         size_t n) {
    int32_t ids[256];
    size_t got = 0;
    if (!CHECK_OK(ember_bpe_tokenizer_encode(tok, s, strlen(s), ids, 256, &got))) return;
    bool same = got == n;
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    if (!CHECK_MSG(same, "encoding \"%s\"", s)) {
        printf("   got:");
        for (size_t i = 0; i < got; i++) printf(" %d", (int)ids[i]);
        printf("\n  want:");
        for (size_t i = 0; i < n; i++) printf(" %d", (int)want[i]);
        printf("\n");
    }
}

#define ENCODES(tok, s, ...)                                                                      \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        check_encode(tok, s, want_, sizeof want_ / sizeof want_[0]);                              \
    } while (0)

/* decode(encode(s)) == s for s[0..n). */
static bool round_trips(const ember_bpe_tokenizer *tok, const char *s, size_t n) {
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    char *back = malloc(n + 1);
    size_t got = 0, m = 0;
    bool ok = ids != NULL && back != NULL &&
              ember_bpe_tokenizer_encode(tok, s, n, ids, n, &got) == EMBER_OK;
    for (size_t i = 0; ok && i < got; i++) {
        const char *p;
        size_t l;
        ok = ember_bpe_tokenizer_decode(tok, ids[i], &p, &l) == EMBER_OK && m + l <= n;
        if (ok) memcpy(back + m, p, l), m += l;
    }
    ok = ok && m == n && memcmp(back, s, n) == 0;
    free(ids);
    free(back);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

static void test_byte_map_and_merges(void) {
    check_section("byte map and merges");
    ember_bpe_tokenizer *tok = load_small();
    if (tok == NULL) return;
    CHECK_EQ_INT(ember_bpe_tokenizer_vocab_size(tok), N_IDS);
    CHECK_EQ_INT(ember_bpe_tokenizer_merge_count(tok), 8);

    int32_t id = -1;
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xC4\xA0", 2, &id)); /* "Ġ" is the space */
    CHECK_EQ_INT(id, ' ');
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xC4\x8A", 2, &id)); /* "Ċ" is the newline */
    CHECK_EQ_INT(id, '\n');
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xC4\x80", 2, &id)); /* "Ā" is byte 0 */
    CHECK_EQ_INT(id, 0);
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xC5\x83", 2, &id)); /* "Ń" is byte 0xAD */
    CHECK_EQ_INT(id, 0xAD);
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xF0\x9F\x98\x80", 4, &id)); /* surrogate pair */
    CHECK_EQ_INT(id, ID_RAW);
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "\xC3\xB0\xC5\x81\xC4\xBA\xC4\xA2", 8, &id));
    CHECK_EQ_INT(id, ID_SMILE);
    CHECK_OK(ember_bpe_tokenizer_token_id(tok, "<|endoftext|>", 13, &id));
    CHECK_EQ_INT(id, ID_EOT);
    CHECK_ERR(ember_bpe_tokenizer_token_id(tok, "nope", 4, &id), EMBER_ERR_NOT_FOUND, "nope");

    ENCODES(tok, "the", 't', ID_HE);
    ENCODES(tok, " the", ID_SP_THE);
    ENCODES(tok, "hello", ID_HEL, 'l', 'o');
    /* Ġ t h e n: "h e" (rank 0), then "Ġ t" (1), then "Ġt he" (2). */
    ENCODES(tok, " then", ID_SP_THE, 'n');
    ENCODES(tok, "1234", ID_12, '3', '4');
    /* One byte each: no merge leads to 😀's token. */
    ENCODES(tok, "\xF0\x9F\x98\x80", 0xF0, 0x9F, 0x98, 0x80);
    ember_bpe_tokenizer_destroy(tok);
}

static void test_pieces(void) {
    check_section("pre-tokenizer pieces");
    ember_bpe_tokenizer *tok = load_small();
    if (tok == NULL) return;
    /* "a " never merges to "aĠ": the space starts the next piece. */
    ENCODES(tok, "a b", 'a', ' ', 'b');
    /* A run of spaces before a word leaves its last space to the word. */
    ENCODES(tok, "a   b", 'a', ID_SP_SP, ' ', 'b');
    /* ... but at the end of the text the run stays whole. */
    ENCODES(tok, "a   ", 'a', ID_SP_SP, ' ');
    ENCODES(tok, "a  ", 'a', ID_SP_SP);
    /* "\n " before a word: the newline alone, then " b". */
    ENCODES(tok, "a\n b", 'a', '\n', ' ', 'b');
    /* Contractions are pieces of their own; "'S" is not one. */
    ENCODES(tok, "it's", 'i', 't', ID_APOS_S);
    ENCODES(tok, "it'S", 'i', 't', '\'', 'S');
    /* " 's": the space joins the punctuation piece, so no "'s" merge. */
    ENCODES(tok, "a 's", 'a', ' ', '\'', 's');
    /* Numbers and letters are separate pieces: "a12" is "a" + "12". */
    ENCODES(tok, "a12", 'a', ID_12);
    /* Special tokens split first, even inside words. */
    ENCODES(tok, "he<|endoftext|>he", ID_HE, ID_EOT, ID_HE);
    ENCODES(tok, "<|endoftext|><|endoftext|>", ID_EOT, ID_EOT);
    ENCODES(tok, "<|endoftext|", '<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|');
    ember_bpe_tokenizer_destroy(tok);
}

static void test_round_trips(void) {
    check_section("round trips");
    ember_bpe_tokenizer *tok = load_small();
    if (tok == NULL) return;
    const char *samples[] = {
        "", " ", "the then there", "  leading and trailing  ", "tabs\t\tand\r\nlines\n\n",
        "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\xF0\x9F\x91\x8D",
        "don't we'll I'm you're they've he'd 'tis",
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        CHECK_MSG(round_trips(tok, samples[i], strlen(samples[i])), "\"%s\"", samples[i]);

    /* Arbitrary bytes, invalid UTF-8 and NULs included. */
    uint64_t x = 88172645463325252ull;
    char buf[300];
    int bad = 0;
    for (int k = 0; k < 2000; k++) {
        size_t n = (size_t)(k % 300);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* Mostly text-like bytes, sometimes anything. */
            unsigned r = (unsigned)(x >> 32);
            buf[i] = (r & 7) == 0 ? (char)(r >> 8) : " ahe'12\n\t"[(r >> 8) % 9];
        }
        if (!round_trips(tok, buf, n)) bad++;
    }
    CHECK_EQ_INT(bad, 0);

    /* Too small an output array is an error, not an overflow. */
    int32_t ids[2];
    size_t n = 0;
    CHECK_ERR(ember_bpe_tokenizer_encode(tok, "a b c", 5, ids, 2, &n), EMBER_ERR_INVALID_ARGUMENT,
              "do not hold");
    const char *p;
    size_t l;
    CHECK_STATUS(ember_bpe_tokenizer_decode(tok, N_IDS, &p, &l), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_bpe_tokenizer_decode(tok, -1, &p, &l), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_OK(ember_bpe_tokenizer_decode(tok, ID_SMILE, &p, &l));
    CHECK(l == 4 && memcmp(p, "\xF0\x9F\x98\x80", 4) == 0);
    CHECK_OK(ember_bpe_tokenizer_decode(tok, ID_RAW, &p, &l)); /* no byte code points: as is */
    CHECK(l == 4 && memcmp(p, "\xF0\x9F\x98\x80", 4) == 0);
    CHECK_OK(ember_bpe_tokenizer_decode(tok, ID_EOT, &p, &l));
    CHECK(l == 13 && memcmp(p, "<|endoftext|>", 13) == 0);
    ember_bpe_tokenizer_destroy(tok);
}

static void test_raw_utf8_vocab(void) {
    check_section("vocab.json with raw UTF-8");
    text v = make_vocab(false);
    ember_bpe_tokenizer *tok = NULL;
    if (CHECK_OK(ember_bpe_tokenizer_load_memory(v.s, v.n, k_merges, sizeof k_merges - 1, &tok))) {
        ENCODES(tok, " the a   b", ID_SP_THE, ' ', 'a', ID_SP_SP, ' ', 'b');
        ember_bpe_tokenizer_destroy(tok);
    }
    free(v.s);
}

/* ------------------------------------------------------------------------ */
/* Corrupt and missing files                                                 */
/* ------------------------------------------------------------------------ */

/* vocab_json must fail to load with a message containing want. */
static void vocab_fails(const char *vocab_json, const char *want) {
    ember_bpe_tokenizer *tok = NULL;
    CHECK_ERR(ember_bpe_tokenizer_load_memory(vocab_json, strlen(vocab_json), "", 0, &tok),
              EMBER_ERR_INVALID_ARGUMENT, want);
    CHECK(tok == NULL);
    ember_bpe_tokenizer_destroy(tok);
}

/* The small vocabulary with merges text must fail with want. */
static void merges_fail(const char *merges, const char *want) {
    text v = make_vocab(true);
    ember_bpe_tokenizer *tok = NULL;
    CHECK_ERR(ember_bpe_tokenizer_load_memory(v.s, v.n, merges, strlen(merges), &tok),
              EMBER_ERR_INVALID_ARGUMENT, want);
    CHECK(tok == NULL);
    ember_bpe_tokenizer_destroy(tok);
    free(v.s);
}

static void test_corrupt_vocab(void) {
    check_section("corrupt vocab.json");
    vocab_fails("", "expected '{'");
    vocab_fails("hello", "vocab.json:1:1");
    vocab_fails("[1, 2]", "expected '{'");
    vocab_fails("{}", "empty");
    vocab_fails("{\"a\": 1", "expected ',' or '}'");
    vocab_fails("{\"a\" 1}", "expected ':'");
    vocab_fails("{\"a\": 1,}", "expected a string");
    vocab_fails("{\"a\": -1}", "non-negative integer");
    vocab_fails("{\"a\": 1.5}", "not an integer");
    vocab_fails("{\"a\": 99999999999}", "too large");
    vocab_fails("{\"a\": \"1\"}", "non-negative integer");
    vocab_fails("{\"a\": 0, \"b\": 0}", "id 0 is given to two tokens");
    vocab_fails("{\"a\": 0, \"a\": 1}", "appears twice");
    vocab_fails("{\"a\": 0}\n{", "after the object");
    vocab_fails("{\"a\\q\": 0}", "unknown escape");
    vocab_fails("{\"\\u12\": 0}", "four hex digits");
    vocab_fails("{\"\\ud800\": 0}", "surrogate");
    vocab_fails("{\"\\ud800\\u0041\": 0}", "surrogate");
    vocab_fails("{\"\\udc00\": 0}", "lone low surrogate");
    vocab_fails("{\"a\nb\": 0}", "control character");
    vocab_fails("{\"\xC3\": 0}", "invalid UTF-8");
    vocab_fails("{\"\xC0\x80\": 0}", "invalid UTF-8"); /* overlong NUL */
    vocab_fails("{\"unterminated", "unterminated");
    vocab_fails("{\"a\": 5000}", "nearly dense");
    /* Well-formed JSON, but not a byte-level vocabulary. */
    vocab_fails("{\"a\": 0, \"b\": 1}", "byte 0x00 has no token");
}

static void test_corrupt_merges(void) {
    check_section("corrupt merges.txt");
    merges_fail("h e\nhe\n", "merges.txt:2: expected two tokens");
    merges_fail("h e x\n", "merges.txt:1: expected two tokens");
    merges_fail("h  e\n", "expected two tokens");
    merges_fail("h \n", "expected two tokens");
    merges_fail("#version: 0.2\nh e\nq zz\n", "merges.txt:3: \"q zz\" names a token that is not");
    merges_fail("x y\n", "makes a token that is not in vocab.json");
    merges_fail("h e\n#comment\n", "merges.txt:2");

    /* Empty merges, CRLF line ends, version lines anywhere and a repeated
     * merge are fine. */
    text v = make_vocab(true);
    ember_bpe_tokenizer *tok = NULL;
    const char crlf[] = "#version: 0.2\r\nh e\r\n\r\n#version: 0.2\r\nh e\r\n";
    if (CHECK_OK(ember_bpe_tokenizer_load_memory(v.s, v.n, crlf, sizeof crlf - 1, &tok))) {
        CHECK_EQ_INT(ember_bpe_tokenizer_merge_count(tok), 1);
        ENCODES(tok, "the", 't', ID_HE);
    }
    ember_bpe_tokenizer_destroy(tok);
    tok = NULL;
    if (CHECK_OK(ember_bpe_tokenizer_load_memory(v.s, v.n, NULL, 0, &tok)))
        CHECK_EQ_INT(ember_bpe_tokenizer_merge_count(tok), 0);
    ember_bpe_tokenizer_destroy(tok);
    free(v.s);
}

/* Every truncation and many byte flips of valid files: a tokenizer or a
 * clean error, never a crash (run under ASan+UBSan). */
static void test_mutations(void) {
    check_section("truncations and byte flips");
    text v = make_vocab(true);
    size_t ok = 0, failed = 0, bad_status = 0;
    for (size_t n = 0; n <= v.n; n++) {
        ember_bpe_tokenizer *tok = NULL;
        ember_status st = ember_bpe_tokenizer_load_memory(v.s, n, k_merges, sizeof k_merges - 1, &tok);
        if (st == EMBER_OK) ok++, ember_bpe_tokenizer_destroy(tok);
        else if (st == EMBER_ERR_INVALID_ARGUMENT && ember_last_error()[0] != '\0') failed++;
        else bad_status++;
    }
    /* Only the whole file, or it without its final newline, loads. */
    CHECK_EQ_INT(ok, 2);
    CHECK_EQ_INT(bad_status, 0);
    CHECK(failed > 0);

    static const unsigned char flips[] = {0x01, 0x20, 0x80, 0xFF};
    bad_status = 0;
    for (size_t i = 0; i < v.n; i += 3) {
        for (size_t f = 0; f < sizeof flips; f++) {
            char saved = v.s[i];
            v.s[i] = (char)(v.s[i] ^ flips[f]);
            ember_bpe_tokenizer *tok = NULL;
            ember_status st = ember_bpe_tokenizer_load_memory(v.s, v.n, k_merges, sizeof k_merges - 1, &tok);
            if (st == EMBER_OK) {
                /* Still loads (say a changed id): it must still encode safely. */
                int32_t ids[64];
                size_t n;
                (void)ember_bpe_tokenizer_encode(tok, "the 12 it's", 11, ids, 64, &n);
                ember_bpe_tokenizer_destroy(tok);
            } else if (st != EMBER_ERR_INVALID_ARGUMENT) {
                bad_status++;
            }
            v.s[i] = saved;
        }
    }
    CHECK_EQ_INT(bad_status, 0);

    size_t ml = sizeof k_merges - 1;
    char merges[sizeof k_merges];
    bad_status = 0;
    for (size_t n = 0; n <= ml; n++) {
        ember_bpe_tokenizer *tok = NULL;
        ember_status st = ember_bpe_tokenizer_load_memory(v.s, v.n, k_merges, n, &tok);
        if (st != EMBER_OK && st != EMBER_ERR_INVALID_ARGUMENT) bad_status++;
        ember_bpe_tokenizer_destroy(tok);
    }
    for (size_t i = 0; i < ml; i++) {
        memcpy(merges, k_merges, ml);
        merges[i] = (char)(merges[i] ^ 0x41);
        ember_bpe_tokenizer *tok = NULL;
        ember_status st = ember_bpe_tokenizer_load_memory(v.s, v.n, merges, ml, &tok);
        if (st != EMBER_OK && st != EMBER_ERR_INVALID_ARGUMENT) bad_status++;
        ember_bpe_tokenizer_destroy(tok);
    }
    CHECK_EQ_INT(bad_status, 0);
    free(v.s);
}

static void test_files(void) {
    check_section("files");
    ember_bpe_tokenizer *tok = NULL;
    CHECK_ERR(ember_bpe_tokenizer_load("no-such-dir/vocab.json", "no-such-dir/merges.txt", &tok),
              EMBER_ERR_IO, "cannot open no-such-dir/vocab.json");
    CHECK_ERR(ember_bpe_tokenizer_load_dir("no-such-dir", &tok), EMBER_ERR_IO,
              "no-such-dir/vocab.json");
    CHECK_STATUS(ember_bpe_tokenizer_load(NULL, "x", &tok), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_bpe_tokenizer_load_dir(NULL, &tok), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(tok == NULL);

    /* Write the small tokenizer to files and read it back; then a
     * directory whose merges.txt is missing. */
    const char *dir = getenv("EMBER_BINARY_DIR");
    char vpath[1024], mpath[1024];
    snprintf(vpath, sizeof vpath, "%s/llm-tokenizer-vocab.json", dir ? dir : ".");
    snprintf(mpath, sizeof mpath, "%s/llm-tokenizer-merges.txt", dir ? dir : ".");
    text v = make_vocab(true);
    FILE *f = fopen(vpath, "wb");
    FILE *g = fopen(mpath, "wb");
    if (CHECK(f != NULL && g != NULL)) {
        fwrite(v.s, 1, v.n, f);
        fwrite(k_merges, 1, sizeof k_merges - 1, g);
    }
    if (f) fclose(f);
    if (g) fclose(g);
    if (CHECK_OK(ember_bpe_tokenizer_load(vpath, mpath, &tok))) {
        ENCODES(tok, " the", ID_SP_THE);
        ember_bpe_tokenizer_destroy(tok);
    }
    tok = NULL;
    remove(mpath);
    CHECK_ERR(ember_bpe_tokenizer_load(vpath, mpath, &tok), EMBER_ERR_IO, "merges.txt");
    CHECK(tok == NULL);
    remove(vpath);
    free(v.s);
}

int main(void) {
    test_byte_map_and_merges();
    test_pieces();
    test_round_trips();
    test_raw_utf8_vocab();
    test_corrupt_vocab();
    test_corrupt_merges();
    test_mutations();
    test_files();
    return check_finish();
}
