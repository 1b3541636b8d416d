/*
 * tiktoken.c — tiktoken rank files (Llama 3's tokenizer.model).
 *
 * The file: one "<token bytes in base64> <rank>" per line. A token's id is
 * its rank; the special tokens take the ids after the ranks, in the order
 * the caller gives (Llama 3's 256 by default, as ExecuTorch's runner has
 * them). Encoding follows tiktoken: the text is cut by the split pattern
 * (the parts no match covers are dropped, as tiktoken drops them), a piece
 * that is a token as a whole is that token, and any other piece's bytes
 * merge pair by pair, lowest rank first. Decoding concatenates the tokens'
 * bytes (a special token gives its spelling) and replaces ill-formed UTF-8
 * as Python's errors="replace" does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/regex.h"
#include "tok_internal.h"

/* cl100k's split pattern, which Llama 3 uses. */
static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Llama 3's special tokens: these, then <|reserved_special_token_N|> from
 * N = 2 up to 256 tokens in all. */
static const char *const LLAMA3_BASIC_SPECIALS[] = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
    "<|image|>",
};
#define LLAMA3_NUM_SPECIALS 256

/* Spellings that end a turn or the text, wherever a tokenizer has them. */
static const char *const END_TOKENS[] = {"<|end_of_text|>", "<|eot_id|>", "<|eom_id|>"};

typedef struct tiktoken {
    tok_vocab vocab;        /* every id: the ranks' bytes, then the specials' spellings */
    size_t n_ranks;         /* ids below are ranks */
    size_t longest;         /* bytes of the longest ranked token */
    int32_t byte_rank[256]; /* the rank of each single byte */
    ember_regex *re;
} tiktoken;

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

static int b64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes standard base64 (padding required to a multiple of 4). */
static bool b64_decode(const char *s, size_t n, char *out, size_t *out_len) {
    if (n == 0 || n % 4 != 0) return false;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        size_t pad = 0;
        for (size_t k = 0; k < 4; k++) {
            uint8_t c = (uint8_t)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad > 0) return false; /* data after padding */
                v[k] = b64_value(c);
                if (v[k] < 0) return false;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (char)(w >> 16);
        if (pad < 2) out[o++] = (char)(w >> 8 & 0xFF);
        if (pad < 1) out[o++] = (char)(w & 0xFF);
    }
    *out_len = o;
    return true;
}

static ember_status line_error(const char *name, size_t line, const char *what) {
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s:%zu: %s", name, line, what);
}

/* Counts the lines that hold a token (non-empty after trimming \r). */
static size_t count_lines(const char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n;
        size_t e = end;
        if (e > i && s[e - 1] == '\r') e--;
        if (e > i) count++;
        i = end + 1;
    }
    return count;
}

/* Reads the rank lines into tt->vocab (ids < n_ranks). */
static ember_status read_ranks(tiktoken *tt, const char *s, size_t n, const char *name) {
    char tokbuf[4096];
    size_t line = 0;
    for (size_t i = 0; i < n;) {
        line++;
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n, e = end;
        if (e > i && s[e - 1] == '\r') e--;
        size_t b = i;
        i = end + 1;
        if (e == b) continue;
        const char *sp = memchr(s + b, ' ', e - b);
        if (sp == NULL) return line_error(name, line, "expected \"<base64 token> <rank>\"");
        size_t tlen = (size_t)(sp - (s + b)), dlen;
        if (tlen > sizeof tokbuf / 3 * 4)
            return line_error(name, line, "the token is longer than 3072 bytes");
        if (!b64_decode(s + b, tlen, tokbuf, &dlen))
            return line_error(name, line, "the token is not valid base64");
        uint64_t rank = 0;
        size_t d = (size_t)(sp - s) + 1;
        if (d == e) return line_error(name, line, "no rank after the token");
        for (; d < e; d++) {
            if (s[d] < '0' || s[d] > '9') return line_error(name, line, "the rank is not a number");
            rank = rank * 10 + (uint64_t)(s[d] - '0');
            if (rank >= tt->n_ranks)
                return line_error(name, line,
                                  "the rank is not below the number of tokens (ranks are ids "
                                  "0 .. n-1)");
        }
        int32_t dup;
        if (tok_vocab_set(&tt->vocab, (int32_t)rank, tokbuf, dlen, &dup) != EMBER_OK)
            return line_error(name, line, (size_t)dup == rank ? "this rank is given twice"
                                                              : "this token is given twice");
    }
    return EMBER_OK;
}

static void tt_destroy(void *impl) {
    tiktoken *tt = impl;
    if (tt == NULL) return;
    tok_vocab_free(&tt->vocab);
    ember_regex_destroy(tt->re);
    free(tt);
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct rank_ctx {
    const tiktoken *tt;
    char *scratch; /* room for any two tokens */
} rank_ctx;

static bool tt_rank(const void *ctx, int32_t left, int32_t right, uint32_t *rank, int32_t *merged) {
    const rank_ctx *rc = ctx;
    const char *a, *b;
    size_t an, bn;
    tok_vocab_get(&rc->tt->vocab, left, &a, &an);
    tok_vocab_get(&rc->tt->vocab, right, &b, &bn);
    memcpy(rc->scratch, a, an);
    memcpy(rc->scratch + an, b, bn);
    int32_t id = tok_vocab_find(&rc->tt->vocab, rc->scratch, an + bn);
    if (id == TOK_NO_ID || (size_t)id >= rc->tt->n_ranks) return false;
    *rank = (uint32_t)id;
    *merged = id;
    return true;
}

/* One piece the pattern matched. */
static ember_status encode_piece(const tiktoken *tt, const char *p, size_t n, tok_ids *out,
                                 tok_ids *syms, rank_ctx *rc) {
    int32_t whole = tok_vocab_find(&tt->vocab, p, n);
    if (whole != TOK_NO_ID && (size_t)whole < tt->n_ranks) return tok_ids_push(out, whole);
    syms->len = 0;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) st = tok_ids_push(syms, tt->byte_rank[(uint8_t)p[i]]);
    size_t m = syms->len;
    if (st == EMBER_OK) st = tok_bpe_merge(syms->data, &m, tt_rank, rc);
    for (size_t i = 0; i < m && st == EMBER_OK; i++) st = tok_ids_push(out, syms->data[i]);
    return st;
}

/* Bytes of the character at text[i] (1 for an invalid byte). */
static size_t char_len(const char *t, size_t n, size_t i) {
    uint8_t c = (uint8_t)t[i];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return k <= n - i ? k : 1;
}

static ember_status tt_encode(const void *impl, const char *text, size_t len, unsigned flags,
                              tok_ids *out) {
    (void)flags; /* special tokens are split off by the caller */
    const tiktoken *tt = impl;
    tok_ids syms = {0};
    rank_ctx rc = {tt, malloc(2 * tt->longest + 1)};
    if (rc.scratch == NULL) return tok_oom("encoder scratch");
    ember_status st = EMBER_OK;
    size_t pos = 0;
    while (pos < len && st == EMBER_OK) {
        size_t ms, me;
        bool found;
        st = ember_regex_search(tt->re, text, len, pos, &ms, &me, &found);
        if (st != EMBER_OK || !found) break;
        if (me == ms) { /* an empty match covers nothing; move past one character */
            pos = ms + char_len(text, len, ms);
            continue;
        }
        st = encode_piece(tt, text + ms, me - ms, out, &syms, &rc);
        pos = me;
    }
    free(rc.scratch);
    tok_ids_free(&syms);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */
/* ------------------------------------------------------------------------ */

static ember_status tt_decode(const void *impl, tok_decode_state *st, int32_t id, tok_buf *out) {
    const tiktoken *tt = impl;
    const char *b;
    size_t n;
    if (!tok_vocab_get(&tt->vocab, id, &b, &n))
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE, "token id %d is not in the vocabulary",
                               (int)id);
    st->n_tokens++;
    return tok_utf8_push(&st->utf8, b, n, out);
}

static ember_status tt_decode_finish(const void *impl, tok_decode_state *st, tok_buf *out) {
    (void)impl;
    return tok_utf8_finish(&st->utf8, out);
}

static const tok_ops TIKTOKEN_OPS = {tt_encode, tt_decode, tt_decode_finish, tt_destroy, NULL, NULL};

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

ember_status tok_tiktoken_load(const char *data, size_t len, const char *name,
                               const ember_tokenizer_options *opt, tok_common *c) {
    tiktoken *tt = calloc(1, sizeof *tt);
    if (tt == NULL) return tok_oom("tiktoken");
    char reserved[64];
    const char *const *specials = opt->special_tokens;
    size_t n_special = opt->num_special_tokens;
    bool llama3 = specials == NULL;
    if (llama3) n_special = LLAMA3_NUM_SPECIALS;
    tt->n_ranks = count_lines(data, len);
    size_t n_ids;
    ember_status st = EMBER_OK;
    if (tt->n_ranks == 0) st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s has no tokens", name);
    else if (!tok_add_ok(tt->n_ranks, n_special, &n_ids))
        st = tok_oom("vocabulary");
    if (st == EMBER_OK) st = tok_vocab_init(&tt->vocab, n_ids, len);
    if (st == EMBER_OK) st = read_ranks(tt, data, len, name);
    for (size_t r = 0; r < tt->n_ranks && st == EMBER_OK; r++) {
        if (tt->vocab.len[r] == UINT32_MAX)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: no token has rank %zu (ranks are ids 0 .. %zu)", name, r,
                                 tt->n_ranks - 1);
        else if (tt->vocab.len[r] > tt->longest)
            tt->longest = tt->vocab.len[r];
    }
    for (int b = 0; b < 256 && st == EMBER_OK; b++) {
        char byte = (char)b;
        tt->byte_rank[b] = tok_vocab_find(&tt->vocab, &byte, 1);
        if (tt->byte_rank[b] == TOK_NO_ID)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: byte 0x%02X has no token (tiktoken needs all 256)", name, b);
    }
    for (size_t k = 0; k < n_special && st == EMBER_OK; k++) {
        const char *sp;
        if (!llama3) sp = specials[k];
        else if (k < sizeof LLAMA3_BASIC_SPECIALS / sizeof LLAMA3_BASIC_SPECIALS[0])
            sp = LLAMA3_BASIC_SPECIALS[k];
        else {
            snprintf(reserved, sizeof reserved, "<|reserved_special_token_%zu|>",
                     k - sizeof LLAMA3_BASIC_SPECIALS / sizeof LLAMA3_BASIC_SPECIALS[0] + 2);
            sp = reserved;
        }
        int32_t dup;
        if (sp == NULL || sp[0] == '\0')
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "special token %zu is empty", k);
        else if (tok_vocab_set(&tt->vocab, (int32_t)(tt->n_ranks + k), sp, strlen(sp), &dup) !=
                 EMBER_OK)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: special token \"%s\" is also token %d", name, sp, (int)dup);
    }
    const char *pattern = opt->pattern ? opt->pattern : LLAMA3_PATTERN;
    if (st == EMBER_OK) {
        /* tiktoken runs its pattern with Rust's regex, where $ is the end */
        ember_regex_options ro;
        memset(&ro, 0, sizeof ro);
        ro.struct_size = sizeof ro;
        ro.flags = EMBER_REGEX_DOLLAR_ENDONLY;
        st = ember_regex_compile_ex(pattern, strlen(pattern), &ro, &tt->re);
        if (st != EMBER_OK)
            st = ember_error_set(st, "%s: the split pattern: %s", name, ember_last_error());
    }
    /* the specials, split off before the pattern runs */
    if (st == EMBER_OK && n_special > 0) {
        c->specials.items = tok_alloc_array(n_special, sizeof *c->specials.items);
        c->is_special = calloc(n_ids, sizeof *c->is_special);
        if (c->specials.items == NULL || c->is_special == NULL) st = tok_oom("special tokens");
    }
    for (size_t k = 0; k < n_special && st == EMBER_OK; k++) {
        int32_t id = (int32_t)(tt->n_ranks + k);
        tok_special *s = &c->specials.items[k];
        tok_vocab_get(&tt->vocab, id, &s->text, &s->len);
        s->id = id;
        c->is_special[id] = true;
    }
    if (st != EMBER_OK) {
        tt_destroy(tt);
        free(c->specials.items);
        free(c->is_special);
        c->specials.items = NULL;
        c->is_special = NULL;
        return st;
    }
    c->specials.n = n_special;
    tok_specials_index(&c->specials);
    c->format = EMBER_TOKENIZER_TIKTOKEN;
    c->ops = &TIKTOKEN_OPS;
    c->impl = tt;
    c->vocab_size = n_ids;
    c->spellings = &tt->vocab;
    c->bos_id = tok_vocab_find(&tt->vocab, "<|begin_of_text|>", 17);
    for (size_t k = 0; k < sizeof END_TOKENS / sizeof END_TOKENS[0] && st == EMBER_OK; k++) {
        int32_t id = tok_vocab_find(&tt->vocab, END_TOKENS[k], strlen(END_TOKENS[k]));
        if (id != TOK_NO_ID && (size_t)id >= tt->n_ranks) st = tok_ids_push(&c->eos_ids, id);
    }
    return st;
}
