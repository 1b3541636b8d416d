/*
 * libFuzzer harness for the LLM extension's text input: tokenizer files,
 * text to encode, chat templates, JSON and regex patterns.
 *
 * The first input byte picks what the rest is:
 *   0  a tokenizer file, any format (ember_tokenizer_load_memory()): when it
 *      loads, a fixed multilingual text is encoded (with and without special
 *      tokens) and decoded whole and streamed, and ids from the input too
 *   1  text, encoded and decoded by a byte-level tokenizer.json and a
 *      tiktoken file built here: decode(encode(x)) must give x back where x
 *      is UTF-8, and the streamed text must equal the whole decode
 *   2  a Jinja template, parsed and rendered over a fixed conversation
 *   3  a JSON document, parsed
 *   4  a regex pattern (up to the first NUL) and text after it: every match
 * Nothing may crash, hang or leak; every failure is a status.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "text/json.h"
#include "text/regex.h"
#include "tokenizer.h"

static ember_tokenizer *g_hf, *g_tt;

/* GPT-2's byte -> code point map. */
static unsigned byte_cp(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x121 + (b - 0x7F);
    return 0x143;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 63));
    return 2;
}

/* A byte-level BPE tokenizer.json with a few merges and added tokens, and a
 * tiktoken rank file of the 256 bytes and a few merges. */
static void build(void) {
    static char json[32768], ranks[16384];
    size_t n = 0;
    n += (size_t)snprintf(json + n, sizeof json - n,
                          "{\"added_tokens\":[{\"id\":262,\"content\":\"<|im_end|>\","
                          "\"special\":true,\"normalized\":false}],\"normalizer\":{\"type\":\"NFC\"},"
                          "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
                          "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (unsigned b = 0; b < 256; b++) {
        char c[4];
        size_t k = put_utf8(c, byte_cp(b));
        json[n++] = '"';
        if (byte_cp(b) == '"' || byte_cp(b) == '\\') json[n++] = '\\';
        memcpy(json + n, c, k);
        n += k;
        n += (size_t)snprintf(json + n, sizeof json - n, "\":%u,", b);
    }
    n += (size_t)snprintf(json + n, sizeof json - n,
                          "\"\\u0120t\":256,\"he\":257,\"\\u0120the\":258,\"in\":259,\"\\u0120a\":260,"
                          "\"ing\":261,\"<|im_end|>\":262},\"merges\":[\"\\u0120 t\",\"h e\","
                          "\"\\u0120t he\",\"i n\",\"\\u0120 a\",\"in g\"]}}");
    if (ember_tokenizer_load_memory(json, n, "tokenizer.json", NULL, &g_hf) != EMBER_OK) abort();
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t r = 0;
    for (unsigned b = 0; b < 256; b++)
        r += (size_t)snprintf(ranks + r, sizeof ranks - r, "%c%c== %u\n", b64[b >> 2],
                              b64[(b & 3) << 4], b);
    r += (size_t)snprintf(ranks + r, sizeof ranks - r, "aGU= 256\naW4= 257\naW5n 258\n");
    if (ember_tokenizer_load_memory(ranks, r, "tokenizer.model", NULL, &g_tt) != EMBER_OK) abort();
}

static bool utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (k == 0 || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80) return false;
        if ((c == 0xE0 && (unsigned char)s[i + 1] < 0xA0) || (c == 0xED && (unsigned char)s[i + 1] > 0x9F) ||
            (c == 0xF0 && (unsigned char)s[i + 1] < 0x90) || (c == 0xF4 && (unsigned char)s[i + 1] > 0x8F))
            return false;
        i += k;
    }
    return true;
}

/* Decodes ids whole and streamed; where the whole decode succeeds and every
 * push does, the two must agree. */
static void decode_both(const ember_tokenizer *tok, const int32_t *ids, size_t n) {
    char *whole = NULL;
    size_t wl = 0;
    bool ok = ember_tokenizer_decode(tok, ids, n, &whole, &wl) == EMBER_OK;
    ember_token_decoder *d;
    if (ember_token_decoder_create(tok, &d) != EMBER_OK) abort();
    char *streamed = ok ? malloc(wl + 1) : NULL;
    size_t sl = 0;
    const char *p;
    size_t pl;
    for (size_t i = 0; i < n; i++) {
        if (ember_token_decoder_push(d, ids[i], &p, &pl) != EMBER_OK) {
            ok = false;
            continue;
        }
        if (!ok || streamed == NULL) continue;
        if (sl + pl > wl) abort(); /* streamed more than the whole decode */
        memcpy(streamed + sl, p, pl);
        sl += pl;
    }
    if (ember_token_decoder_finish(d, &p, &pl) == EMBER_OK && ok && streamed != NULL) {
        if (sl + pl > wl) abort();
        memcpy(streamed + sl, p, pl);
        sl += pl;
        if (sl != wl || memcmp(streamed, whole, wl) != 0) abort(); /* the stream must equal the whole */
    }
    free(streamed);
    free(whole);
    ember_token_decoder_destroy(d);
}

static void tokenizer_file(const uint8_t *data, size_t size) {
    ember_tokenizer *tok = NULL;
    if (ember_tokenizer_load_memory(data, size, "fuzz", NULL, &tok) != EMBER_OK) return;
    static const char text[] = "Hello, world! It's 2024: café, 日本語, 😀 <|im_end|><s>\n\t  x";
    for (unsigned flags = 0; flags < 2; flags++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (ember_tokenizer_encode(tok, text, sizeof text - 1, flags, &ids, &n) == EMBER_OK)
            decode_both(tok, ids, n);
        free(ids);
    }
    /* ids from the input itself */
    size_t vocab = ember_tokenizer_vocab_size(tok);
    int32_t ids[64];
    size_t n = 0;
    for (size_t i = 0; i + 1 < size && n < 64; i += 2)
        ids[n++] = vocab ? (int32_t)((data[i] | data[i + 1] << 8) % (vocab + 2)) - 1 : 0;
    decode_both(tok, ids, n);
    ember_tokenizer_destroy(tok);
}

static void text_round_trip(const ember_tokenizer *tok, const char *s, size_t n, unsigned flags) {
    int32_t *ids = NULL;
    size_t m = 0;
    if (ember_tokenizer_encode(tok, s, n, flags, &ids, &m) != EMBER_OK) return;
    char *back = NULL;
    size_t bl = 0;
    if (ember_tokenizer_decode(tok, ids, m, &back, &bl) == EMBER_OK && utf8_valid(s, n) &&
        (bl != n || memcmp(back, s, n) != 0))
        abort(); /* byte-level tokenizers give UTF-8 text back */
    decode_both(tok, ids, m);
    free(back);
    free(ids);
}

static void template(const uint8_t *data, size_t size) {
    ember_jinja_template *t;
    if (ember_jinja_parse((const char *)data, size, NULL, &t) != EMBER_OK) return;
    static const char ctx_json[] =
        "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","
        "\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello!\"}],"
        "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}";
    ember_json_doc *doc;
    ember_jinja_context *ctx;
    if (ember_json_parse(ctx_json, sizeof ctx_json - 1, &doc) != EMBER_OK) abort();
    if (ember_jinja_context_create(&ctx) != EMBER_OK) abort();
    if (ember_jinja_context_set_json(ctx, ember_json_root(doc)) != EMBER_OK) abort();
    ember_jinja_render_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_steps = 200000;
    o.max_output = 1 << 16;
    o.fixed_time = true;
    char *out = NULL;
    size_t len;
    (void)ember_jinja_render(t, ctx, &o, &out, &len);
    free(out);
    ember_jinja_context_destroy(ctx);
    ember_json_doc_destroy(doc);
    ember_jinja_template_destroy(t);
}

static void regex(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tlen = nul ? size - plen - 1 : 0;
    ember_regex_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.step_limit = 100000;
    ember_regex *re;
    if (ember_regex_compile_ex((const char *)data, plen, &o, &re) != EMBER_OK) return;
    size_t pos = 0;
    while (pos <= tlen) {
        size_t a, b;
        bool found;
        if (ember_regex_search(re, text, tlen, pos, &a, &b, &found) != EMBER_OK || !found) break;
        if (a < pos || b < a || b > tlen) abort();
        pos = b > a ? b : a + 1;
        while (pos < tlen && ((unsigned char)text[pos] & 0xC0) == 0x80) pos++;
    }
    ember_regex_destroy(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_hf == NULL) build();
    if (size < 1) return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0: tokenizer_file(rest, n); break;
    case 1:
        text_round_trip(g_hf, (const char *)rest, n, EMBER_ENCODE_SPECIAL);
        text_round_trip(g_tt, (const char *)rest, n, 0);
        break;
    case 2: template(rest, n); break;
    case 3: {
        ember_json_doc *doc;
        if (ember_json_parse((const char *)rest, n, &doc) == EMBER_OK) ember_json_doc_destroy(doc);
        break;
    }
    default: regex(rest, n); break;
    }
    return 0;
}
