/*
 * libFuzzer harness for the BPE tokenizer (extension/llm/bpe_tokenizer.h).
 *
 * The first input byte picks what the rest is:
 *   0  vocab.json (with a fixed merges.txt)
 *   1  merges.txt (with a fixed byte-level vocab.json)
 *   2  text to encode and decode with the fixed tokenizer; decode(encode(x))
 *      must give x back
 * Loading must succeed or fail with a status; nothing may crash or leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_tokenizer.h"

static char *g_vocab;      /* a byte-level vocab.json: the 256 bytes and a few merges */
static size_t g_vocab_len;
static const char k_merges[] = "#version: 0.2\nĠ t\nh e\nĠt he\nĠ Ġ\ni n\nĠ a\n";
static ember_bpe_tokenizer *g_tok;

/* GPT-2's byte -> code point map. */
static unsigned byte_cp(unsigned b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x121 + (b - 0x7F);
    return 0x143;
}

static void build_vocab(void) {
    size_t cap = 16384, n = 0;
    g_vocab = malloc(cap);
    if (g_vocab == NULL) abort();
    n += (size_t)snprintf(g_vocab + n, cap - n, "{");
    for (unsigned b = 0; b < 256; b++)
        n += (size_t)snprintf(g_vocab + n, cap - n, "\"\\u%04X\": %u, ", byte_cp(b), b);
    n += (size_t)snprintf(g_vocab + n, cap - n,
                          "\"\\u0120t\": 256, \"he\": 257, \"\\u0120the\": 258, \"\\u0120\\u0120\": "
                          "259, \"in\": 260, \"\\u0120a\": 261, \"<|endoftext|>\": 262}");
    g_vocab_len = n;
    if (ember_bpe_tokenizer_load_memory(g_vocab, g_vocab_len, k_merges, sizeof k_merges - 1,
                                        &g_tok) != EMBER_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_tok == NULL) build_vocab();
    if (size < 1) return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    ember_bpe_tokenizer *tok = NULL;
    switch (data[0] % 3) {
    case 0:
        if (ember_bpe_tokenizer_load_memory(rest, n, k_merges, sizeof k_merges - 1, &tok) == EMBER_OK)
            ember_bpe_tokenizer_destroy(tok);
        break;
    case 1:
        if (ember_bpe_tokenizer_load_memory(g_vocab, g_vocab_len, rest, n, &tok) == EMBER_OK)
            ember_bpe_tokenizer_destroy(tok);
        break;
    default: {
        int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
        char *back = malloc(n ? n : 1);
        size_t got = 0, m = 0;
        if (ids == NULL || back == NULL) abort();
        if (ember_bpe_tokenizer_encode(g_tok, rest, n, ids, n, &got) != EMBER_OK) abort();
        for (size_t i = 0; i < got; i++) {
            const char *p;
            size_t l;
            if (ember_bpe_tokenizer_decode(g_tok, ids[i], &p, &l) != EMBER_OK || m + l > n) abort();
            memcpy(back + m, p, l);
            m += l;
        }
        if (m != n || (n > 0 && memcmp(back, rest, n) != 0)) abort();
        free(ids);
        free(back);
        break;
    }
    }
    return 0;
}
