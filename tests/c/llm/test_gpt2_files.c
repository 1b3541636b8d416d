/*
 * GPT-2's tokenizer files (vocab.json + merges.txt) through the tokenizer
 * interface (extension/llm/tokenizer.h): GPT-2's byte map, the
 * pre-tokenizer's pieces (contractions, letters, numbers, punctuation,
 * whitespace runs), merges by rank, <|...|> special tokens, JSON escapes,
 * round trips of text, and clean errors that name the file (and the line of
 * merges.txt) for every kind of corrupt or missing file, truncations and
 * byte flips included. The comparison with the `tokenizers` library on real
 * text is in tests/python/test_llm_runner.py and test_llm_tokenizers.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "tokenizer.h"

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

/* The directory the files are written to, and the paths in it. */
static char g_dir[900], g_vocab[1024], g_merges[1024];

static void write_file(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!CHECK_MSG(f != NULL, "cannot write %s", path)) return;
    if (n) fwrite(s, 1, n, f);
    fclose(f);
}

/* Writes vocab.json and merges.txt (merges NULL: no merges.txt) and loads them. */
static ember_status load_files(const char *vocab, size_t vn, const char *merges, size_t mn,
                               ember_tokenizer **tok) {
    write_file(g_vocab, vocab, vn);
    remove(g_merges);
    if (merges != NULL) write_file(g_merges, merges, mn);
    *tok = NULL;
    return ember_tokenizer_load(g_vocab, NULL, tok);
}

static ember_tokenizer *load_small(void) {
    text v = make_vocab(true);
    ember_tokenizer *tok = NULL;
    CHECK_OK(load_files(v.s, v.n, k_merges, sizeof k_merges - 1, &tok));
    free(v.s);
    return tok;
}

static int32_t token_id(const ember_tokenizer *tok, const char *s, size_t n) {
    int32_t id = -1;
    return ember_tokenizer_token_id(tok, s, n, &id) == EMBER_OK ? id : -1;
}

/* Encodes s (special tokens parsed) and compares with want[0..n). */
static void check_encode(const ember_tokenizer *tok, const char *s, const int32_t *want, size_t n) {
    int32_t *ids = NULL;
    size_t got = 0;
    if (!CHECK_OK(ember_tokenizer_encode(tok, s, strlen(s), EMBER_ENCODE_SPECIAL, &ids, &got))) return;
    bool same = got == n;
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    if (!CHECK_MSG(same, "encoding \"%s\"", s)) {
        printf("   got:");
        for (size_t i = 0; i < got; i++) printf(" %d", (int)ids[i]);
        printf("\n  want:");
        for (size_t i = 0; i < n; i++) printf(" %d", (int)want[i]);
        printf("\n");
    }
    free(ids);
}

#define ENCODES(tok, s, ...)                                                                      \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        check_encode(tok, s, want_, sizeof want_ / sizeof want_[0]);                              \
    } while (0)

/* decode(encode(s)) == s for s[0..n), whole and streamed token by token. */
static bool round_trips(const ember_tokenizer *tok, const char *s, size_t n) {
    int32_t *ids = NULL;
    size_t got = 0, wl = 0, sl = 0;
    char *whole = NULL, *streamed = malloc(n + 1);
    ember_token_decoder *d = NULL;
    bool ok = streamed != NULL && ember_tokenizer_encode(tok, s, n, 0, &ids, &got) == EMBER_OK &&
              ember_tokenizer_decode(tok, ids, got, &whole, &wl) == EMBER_OK && wl == n &&
              memcmp(whole, s, n) == 0 && ember_token_decoder_create(tok, &d) == EMBER_OK;
    const char *p;
    size_t l;
    for (size_t i = 0; ok && i < got; i++) {
        ok = ember_token_decoder_push(d, ids[i], &p, &l) == EMBER_OK && sl + l <= n;
        if (ok) memcpy(streamed + sl, p, l), sl += l;
    }
    ok = ok && ember_token_decoder_finish(d, &p, &l) == EMBER_OK && l == 0 && sl == n &&
         memcmp(streamed, s, n) == 0;
    ember_token_decoder_destroy(d);
    free(ids);
    free(whole);
    free(streamed);
    return ok;
}

/* The text ids decode to, compared with want. */
static void check_decode(const ember_tokenizer *tok, const int32_t *ids, size_t n, const char *want) {
    char *text = NULL;
    size_t len = 0;
    if (CHECK_OK(ember_tokenizer_decode(tok, ids, n, &text, &len)))
        CHECK_MSG(len == strlen(want) && memcmp(text, want, len) == 0, "decoded \"%s\", want \"%s\"",
                  text, want);
    free(text);
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

static void test_byte_map_and_merges(void) {
    check_section("byte map and merges");
    ember_tokenizer *tok = load_small();
    if (tok == NULL) return;
    CHECK_EQ_INT(ember_tokenizer_vocab_size(tok), N_IDS);
    CHECK_EQ_INT(ember_tokenizer_get_format(tok), EMBER_TOKENIZER_GPT2);

    CHECK_EQ_INT(token_id(tok, "\xC4\xA0", 2), ' ');  /* "Ġ" is the space */
    CHECK_EQ_INT(token_id(tok, "\xC4\x8A", 2), '\n'); /* "Ċ" is the newline */
    CHECK_EQ_INT(token_id(tok, "\xC4\x80", 2), 0);    /* "Ā" is byte 0 */
    CHECK_EQ_INT(token_id(tok, "\xC5\x83", 2), 0xAD); /* "Ń" is byte 0xAD */
    CHECK_EQ_INT(token_id(tok, "\xF0\x9F\x98\x80", 4), ID_RAW); /* a surrogate pair escape */
    CHECK_EQ_INT(token_id(tok, "\xC3\xB0\xC5\x81\xC4\xBA\xC4\xA2", 8), ID_SMILE);
    CHECK_EQ_INT(token_id(tok, "<|endoftext|>", 13), ID_EOT);
    int32_t id;
    CHECK_STATUS(ember_tokenizer_token_id(tok, "nope", 4, &id), EMBER_ERR_NOT_FOUND);
    /* <|endoftext|> is special: an end of text */
    int32_t eos[8];
    size_t n_eos = ember_tokenizer_eos_ids(tok, eos, 8);
    CHECK(n_eos == 1 && eos[0] == ID_EOT);

    ENCODES(tok, "the", 't', ID_HE);
    ENCODES(tok, " the", ID_SP_THE);
    ENCODES(tok, "hello", ID_HEL, 'l', 'o');
    /* Ġ t h e n: "h e" (rank 0), then "Ġ t" (1), then "Ġt he" (2). */
    ENCODES(tok, " then", ID_SP_THE, 'n');
    ENCODES(tok, "1234", ID_12, '3', '4');
    /* One byte each: no merge leads to 😀's token. */
    ENCODES(tok, "\xF0\x9F\x98\x80", 0xF0, 0x9F, 0x98, 0x80);
    ember_tokenizer_destroy(tok);
}

static void test_pieces(void) {
    check_section("pre-tokenizer pieces");
    ember_tokenizer *tok = load_small();
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
    /* Without EMBER_ENCODE_SPECIAL the special token is text. */
    int32_t *ids = NULL;
    size_t n = 0;
    if (CHECK_OK(ember_tokenizer_encode(tok, "<|endoftext|>", 13, 0, &ids, &n)))
        CHECK(n > 1 && ids[0] == '<');
    free(ids);
    ember_tokenizer_destroy(tok);
}

static void test_round_trips(void) {
    check_section("round trips");
    ember_tokenizer *tok = load_small();
    if (tok == NULL) return;
    const char *samples[] = {
        "", " ", "the then there", "  leading and trailing  ", "tabs\t\tand\r\nlines\n\n",
        "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\xF0\x9F\x91\x8D",
        "don't we'll I'm you're they've he'd 'tis", "a\0b",
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        CHECK_MSG(round_trips(tok, samples[i], strlen(samples[i])), "\"%s\"", samples[i]);
    CHECK(round_trips(tok, "a\0b", 3)); /* NUL bytes are text too */

    /* Random text of ASCII pieces and characters of 2, 3 and 4 bytes. */
    static const char *const parts[] = {" ", "a", "he", "'", "1", "2", "\n", "\t", "\xC3\xA9",
                                        "\xE6\x97\xA5", "\xF0\x9F\x98\x80", "<|endoftext|>"};
    uint64_t x = 88172645463325252ull;
    char buf[1200];
    int bad = 0;
    for (int k = 0; k < 2000; k++) {
        size_t n = 0, parts_n = (size_t)(k % 200);
        for (size_t i = 0; i < parts_n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const char *p = parts[(x >> 32) % (sizeof parts / sizeof parts[0])];
            memcpy(buf + n, p, strlen(p));
            n += strlen(p);
        }
        if (!round_trips(tok, buf, n)) bad++;
    }
    CHECK_EQ_INT(bad, 0);

    /* Ids the tokenizer does not have are errors; a byte token alone is
     * an incomplete character, U+FFFD as the reference decodes it. */
    int32_t ids[2] = {N_IDS, -1};
    char *text = NULL;
    size_t len = 0;
    CHECK_STATUS(ember_tokenizer_decode(tok, ids, 1, &text, &len), EMBER_ERR_INDEX_OUT_OF_RANGE);
    CHECK_STATUS(ember_tokenizer_decode(tok, ids + 1, 1, &text, &len), EMBER_ERR_INDEX_OUT_OF_RANGE);
    const int32_t smile[] = {ID_SMILE}, raw[] = {ID_RAW}, eot[] = {ID_EOT}, f0[] = {0xF0},
                  f0_9f[] = {0xF0, 0x9F, 0x98, 0x80};
    check_decode(tok, smile, 1, "\xF0\x9F\x98\x80");
    check_decode(tok, raw, 1, "\xF0\x9F\x98\x80"); /* no byte code points: as it is */
    check_decode(tok, eot, 1, "<|endoftext|>");
    check_decode(tok, f0, 1, "\xEF\xBF\xBD");
    check_decode(tok, f0_9f, 4, "\xF0\x9F\x98\x80");
    ember_tokenizer_destroy(tok);
}

static void test_raw_utf8_vocab(void) {
    check_section("vocab.json with raw UTF-8");
    text v = make_vocab(false);
    ember_tokenizer *tok = NULL;
    if (CHECK_OK(load_files(v.s, v.n, k_merges, sizeof k_merges - 1, &tok))) {
        ENCODES(tok, " the a   b", ID_SP_THE, ' ', 'a', ID_SP_SP, ' ', 'b');
        ember_tokenizer_destroy(tok);
    }
    free(v.s);
}

/* ------------------------------------------------------------------------ */
/* Corrupt and missing files                                                 */
/* ------------------------------------------------------------------------ */

/* vocab_json (with the small merges) must fail to load with a message that
 * names vocab.json and contains want. */
static void vocab_fails(const char *vocab_json, const char *want) {
    ember_tokenizer *tok = NULL;
    CHECK_ERR(load_files(vocab_json, strlen(vocab_json), "", 0, &tok), EMBER_ERR_INVALID_ARGUMENT,
              want);
    CHECK_CONTAINS(ember_last_error(), "vocab.json");
    CHECK(tok == NULL);
    ember_tokenizer_destroy(tok);
}

/* The small vocabulary with merges text must fail with want. */
static void merges_fail(const char *merges, const char *want) {
    text v = make_vocab(true);
    ember_tokenizer *tok = NULL;
    CHECK_ERR(load_files(v.s, v.n, merges, strlen(merges), &tok), EMBER_ERR_INVALID_ARGUMENT, want);
    CHECK(tok == NULL);
    ember_tokenizer_destroy(tok);
    free(v.s);
}

static void test_corrupt_vocab(void) {
    check_section("corrupt vocab.json");
    vocab_fails("", "vocab.json:1:1: unexpected end of input");
    vocab_fails("hello", "vocab.json:1:1");
    vocab_fails("[1, 2]", "expected an object of token: id");
    vocab_fails("{\"a\": 1", "vocab.json:1:8");
    vocab_fails("{\"a\" 1}", "expected ':'");
    vocab_fails("{\"a\": 1,}", "expected a string key");
    vocab_fails("{\"a\": -1}", "\"a\": the id is not a whole number");
    vocab_fails("{\"a\": 1.5}", "not a whole number");
    vocab_fails("{\"a\": 99999999999}", "not a whole number");
    vocab_fails("{\"a\": \"1\"}", "not a whole number");
    vocab_fails("{\"a\": 0, \"b\": 0}", "\"b\": id 0 is given to two tokens");
    vocab_fails("{\"a\": 0, \"a\": 1}", "\"a\" appears twice");
    vocab_fails("{\"a\": 0}\n{", "vocab.json:2:1: unexpected text after the document");
    vocab_fails("{\"a\\q\": 0}", "invalid escape");
    vocab_fails("{\"\\u12\": 0}", "four hex digits");
    vocab_fails("{\"\\ud800\": 0}", "surrogate");
    vocab_fails("{\"\\ud800\\u0041\": 0}", "surrogate");
    vocab_fails("{\"\\udc00\": 0}", "surrogate");
    vocab_fails("{\"a\nb\": 0}", "control character");
    vocab_fails("{\"\xC3\": 0}", "invalid UTF-8");
    vocab_fails("{\"\xC0\x80\": 0}", "invalid UTF-8"); /* overlong NUL */
    vocab_fails("{\"unterminated", "unexpected end of input");

    /* Well-formed, if odd: an empty vocabulary, sparse ids, a vocabulary
     * without every byte (the bytes it lacks are dropped, as the
     * `tokenizers` library does). */
    const char *odd[] = {"{}", "{\"a\": 5000}", "{\"a\": 0, \"b\": 1}"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        ember_tokenizer *tok = NULL;
        if (CHECK_OK(load_files(odd[i], strlen(odd[i]), "", 0, &tok))) {
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK_OK(ember_tokenizer_encode(tok, "a b", 3, 0, &ids, &n));
            free(ids);
        }
        ember_tokenizer_destroy(tok);
    }
}

static void test_corrupt_merges(void) {
    check_section("corrupt merges.txt");
    merges_fail("h e\nhe\n", "merges.txt:2: expected two tokens");
    merges_fail("h e x\n", "merges.txt:1: expected two tokens");
    merges_fail("h  e\n", "merges.txt:1: expected two tokens");
    merges_fail("h \n", "merges.txt:1: expected two tokens");
    merges_fail("#version: 0.2\nh e\nq zz\n", "merges.txt:3: \"q zz\" names or makes a token that is not");
    merges_fail("x y\n", "merges.txt:1: \"x y\" names or makes a token that is not in vocab.json");
    merges_fail("h e\n#comment\n", "merges.txt:2");

    /* Empty merges, CRLF line ends, version lines anywhere and a repeated
     * merge are fine. */
    text v = make_vocab(true);
    ember_tokenizer *tok = NULL;
    const char crlf[] = "#version: 0.2\r\nh e\r\n\r\n#version: 0.2\r\nh e\r\n";
    if (CHECK_OK(load_files(v.s, v.n, crlf, sizeof crlf - 1, &tok))) {
        ENCODES(tok, "the", 't', ID_HE);
        ENCODES(tok, " the", ' ', 't', ID_HE);
    }
    ember_tokenizer_destroy(tok);
    if (CHECK_OK(load_files(v.s, v.n, "", 0, &tok))) ENCODES(tok, "the", 't', 'h', 'e');
    ember_tokenizer_destroy(tok);
    free(v.s);
}

/* Every truncation and many byte flips of valid files: a tokenizer or a
 * clean error, never a crash (run under ASan+UBSan). */
static void test_mutations(void) {
    check_section("truncations and byte flips");
    text v = make_vocab(true);
    size_t ok = 0, failed = 0, bad_status = 0;
    for (size_t n = 0; n <= v.n; n++) {
        ember_tokenizer *tok = NULL;
        ember_status st = load_files(v.s, n, k_merges, sizeof k_merges - 1, &tok);
        if (st == EMBER_OK) ok++, ember_tokenizer_destroy(tok);
        else if (st == EMBER_ERR_INVALID_ARGUMENT && ember_last_error()[0] != '\0') failed++;
        else bad_status++;
    }
    /* Only the whole file, or it without its final newline, loads. */
    CHECK_EQ_INT(ok, 2);
    CHECK_EQ_INT(bad_status, 0);
    CHECK(failed > 0);

    static const unsigned char flips[] = {0x01, 0x20, 0x80, 0xFF};
    bad_status = 0;
    for (size_t i = 0; i < v.n; i += 7) {
        for (size_t f = 0; f < sizeof flips; f++) {
            char saved = v.s[i];
            v.s[i] = (char)(v.s[i] ^ flips[f]);
            ember_tokenizer *tok = NULL;
            ember_status st = load_files(v.s, v.n, k_merges, sizeof k_merges - 1, &tok);
            if (st == EMBER_OK) {
                /* Still loads (say a changed id): it must still encode and decode safely. */
                int32_t *ids = NULL;
                size_t n = 0;
                char *text = NULL;
                size_t len;
                if (ember_tokenizer_encode(tok, "the 12 it's<|endoftext|>", 24, EMBER_ENCODE_SPECIAL,
                                           &ids, &n) == EMBER_OK)
                    (void)ember_tokenizer_decode(tok, ids, n, &text, &len);
                free(text);
                free(ids);
                ember_tokenizer_destroy(tok);
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
        ember_tokenizer *tok = NULL;
        ember_status st = load_files(v.s, v.n, k_merges, n, &tok);
        if (st != EMBER_OK && st != EMBER_ERR_INVALID_ARGUMENT) bad_status++;
        ember_tokenizer_destroy(tok);
    }
    for (size_t i = 0; i < ml; i++) {
        memcpy(merges, k_merges, ml);
        merges[i] = (char)(merges[i] ^ 0x41);
        ember_tokenizer *tok = NULL;
        ember_status st = load_files(v.s, v.n, merges, ml, &tok);
        if (st != EMBER_OK && st != EMBER_ERR_INVALID_ARGUMENT) bad_status++;
        ember_tokenizer_destroy(tok);
    }
    CHECK_EQ_INT(bad_status, 0);
    free(v.s);
}

static void test_files(void) {
    check_section("files");
    ember_tokenizer *tok = NULL;
    CHECK_ERR(ember_tokenizer_load("no-such-dir/vocab.json", NULL, &tok), EMBER_ERR_NOT_FOUND,
              "no-such-dir/vocab.json has no merges.txt beside it");
    CHECK_ERR(ember_tokenizer_load("no-such-dir", NULL, &tok), EMBER_ERR_IO, "no-such-dir");
    CHECK_STATUS(ember_tokenizer_load(NULL, NULL, &tok), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(tok == NULL);

    /* The directory loads as its vocab.json does; without merges.txt it is
     * a clean error naming the file. */
    text v = make_vocab(true);
    if (CHECK_OK(load_files(v.s, v.n, k_merges, sizeof k_merges - 1, &tok))) ember_tokenizer_destroy(tok);
    tok = NULL;
    if (CHECK_OK(ember_tokenizer_load(g_dir, NULL, &tok))) {
        ENCODES(tok, " the", ID_SP_THE);
        ember_tokenizer_destroy(tok);
    }
    tok = NULL;
    CHECK_ERR(load_files(v.s, v.n, NULL, 0, &tok), EMBER_ERR_NOT_FOUND, "merges.txt");
    CHECK(tok == NULL);
    remove(g_vocab);
    remove(g_merges);
    free(v.s);
}

int main(void) {
    const char *bin = getenv("EMBER_BINARY_DIR");
    snprintf(g_dir, sizeof g_dir, "%s/llm-gpt2-files", bin ? bin : ".");
    snprintf(g_vocab, sizeof g_vocab, "%s/vocab.json", g_dir);
    snprintf(g_merges, sizeof g_merges, "%s/merges.txt", g_dir);
    mkdir(g_dir, 0755);
    test_byte_map_and_merges();
    test_pieces();
    test_round_trips();
    test_raw_utf8_vocab();
    test_corrupt_vocab();
    test_corrupt_merges();
    test_mutations();
    test_files();
    remove(g_dir);
    return check_finish();
}
