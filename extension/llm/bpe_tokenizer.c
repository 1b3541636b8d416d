/*
 * extension/llm/bpe_tokenizer.c — GPT-2's byte-level BPE (see bpe_tokenizer.h).
 *
 * Layout of a loaded tokenizer:
 *   strings   every token's vocab.json spelling, back to back
 *   bytes     every token's decoded bytes, back to back
 *   tokens    (n_ids) where each id's spelling and bytes are
 *   str_map   open-addressing hash: spelling -> id
 *   merge_map open-addressing hash: (left id, right id) -> (rank, merged id)
 */
#define _POSIX_C_SOURCE 200809L

#include "bpe_tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_tables.h"

#define NO_ID (-1)
#define MAX_FILE_BYTES ((size_t)1 << 30)
#define NAME_VOCAB "vocab.json"
#define NAME_MERGES "merges.txt"

typedef struct token_entry {
    uint32_t str_off, str_len;     /* spelling in strings */
    uint32_t bytes_off, bytes_len; /* decoded bytes in bytes */
    bool used;                     /* false for ids vocab.json skips */
} token_entry;

typedef struct merge_slot {
    uint64_t key;   /* left << 32 | right; EMPTY_KEY when free */
    int32_t rank;
    int32_t merged; /* id of left+right */
} merge_slot;

#define EMPTY_KEY UINT64_MAX

struct ember_bpe_tokenizer {
    char *strings;       /* (strings_len) */
    size_t strings_len;
    char *bytes;         /* (bytes_len) */
    size_t bytes_len;
    token_entry *tokens; /* (n_ids) */
    size_t n_ids;
    int32_t *str_map;    /* (str_cap) ids, NO_ID when free */
    size_t str_cap;
    merge_slot *merge_map; /* (merge_cap) */
    size_t merge_cap;
    size_t n_merges;
    int32_t byte_id[256];  /* the token of each single byte */
    int32_t *special;      /* (n_special) ids of "<|...|>" tokens */
    size_t n_special;
};

/* ------------------------------------------------------------------------ */
/* Checked sizes                                                             */
/* ------------------------------------------------------------------------ */

static bool mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

static bool add_ok(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

/* malloc of n * size bytes, NULL on overflow or failure (never size 0). */
static void *alloc_array(size_t n, size_t size) {
    size_t bytes;
    if (!mul_ok(n == 0 ? 1 : n, size, &bytes)) return NULL;
    return malloc(bytes);
}

static ember_status oom(const char *what) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the tokenizer's %s", what);
}

/* Smallest power of two >= 2 * n (load factor at most 1/2); 0 on overflow. */
static size_t table_capacity(size_t n) {
    size_t cap = 16;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 2) return 0;
        cap *= 2;
    }
    return cap;
}

/* ------------------------------------------------------------------------ */
/* UTF-8 and GPT-2's byte map                                                */
/* ------------------------------------------------------------------------ */

/* Decodes one code point at s[0..n). Returns its length (1..4), or 0 if the
 * bytes are not valid UTF-8 (overlong forms and surrogates included). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* Writes cp (a valid scalar value) as UTF-8; returns the length. */
static size_t utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* GPT-2 gives every byte a printable code point: the printable Latin-1 bytes
 * ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves, and the other 68
 * bytes, in order, become U+0100, U+0101, ... */
static bool byte_is_self(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

static uint32_t byte_to_cp(unsigned b) {
    if (byte_is_self(b)) return b;
    uint32_t n = 0;
    for (unsigned i = 0; i < b; i++)
        if (!byte_is_self(i)) n++;
    return 256 + n;
}

/* Code points that stand for bytes: U+0000..U+0143. */
#define BYTE_CP_LIMIT (256 + 68)

/* ------------------------------------------------------------------------ */
/* Character classes of the pre-tokenizer                                    */
/* ------------------------------------------------------------------------ */

enum { CLS_SPACE, CLS_LETTER, CLS_NUMBER, CLS_OTHER };

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

static int char_class(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CLS_LETTER;
        if (cp >= '0' && cp <= '9') return CLS_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CLS_SPACE;
        return CLS_OTHER;
    }
    if (in_ranges(ember_unicode_letter_ranges, ember_unicode_letter_ranges_count, cp))
        return CLS_LETTER;
    if (in_ranges(ember_unicode_number_ranges, ember_unicode_number_ranges_count, cp))
        return CLS_NUMBER;
    if (in_ranges(ember_unicode_space_ranges, ember_unicode_space_ranges_count, cp))
        return CLS_SPACE;
    return CLS_OTHER;
}

/* Class and byte length of the character at t[i..n); invalid UTF-8 is one
 * byte of class "other". */
static int class_at(const unsigned char *t, size_t n, size_t i, size_t *len) {
    uint32_t cp;
    size_t l = utf8_decode(t + i, n - i, &cp);
    if (l == 0) {
        *len = 1;
        return CLS_OTHER;
    }
    *len = l;
    return char_class(cp);
}

/* End of the run of characters of class cls that starts at i. */
static size_t run_end(const unsigned char *t, size_t n, size_t i, int cls) {
    while (i < n) {
        size_t l;
        if (class_at(t, n, i, &l) != cls) break;
        i += l;
    }
    return i;
}

/* Length of GPT-2's pattern match at t[i..n) (i < n): the alternatives are
 * tried in the pattern's order, each greedy, as the regex engine would. */
static size_t pretoken_len(const unsigned char *t, size_t n, size_t i) {
    /* 's 't 're 've 'm 'll 'd */
    if (t[i] == '\'' && i + 1 < n) {
        unsigned char a = t[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if (i + 2 < n) {
            unsigned char b = t[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
        }
    }
    /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' */
    size_t start = i;
    if (t[i] == ' ' && i + 1 < n) start = i + 1;
    size_t l;
    int cls = class_at(t, n, start, &l);
    if (cls != CLS_SPACE) return run_end(t, n, start, cls) - i;
    cls = class_at(t, n, i, &l);
    if (cls != CLS_SPACE) return run_end(t, n, i, cls) - i;
    /* '\s+(?!\S)' then '\s+': a run of spaces that ends at the end of the
     * text is taken whole; one followed by other text leaves its last
     * character for the next piece, unless it is that single character. */
    size_t end = i, last = i;
    while (end < n && class_at(t, n, end, &l) == CLS_SPACE) {
        last = end;
        end += l;
    }
    if (end == n || last == i) return end - i;
    return last - i;
}

/* ------------------------------------------------------------------------ */
/* Hash maps                                                                 */
/* ------------------------------------------------------------------------ */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33; /* splitmix64's finalizer */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static const char *token_str(const ember_bpe_tokenizer *tok, int32_t id, size_t *len) {
    const token_entry *e = &tok->tokens[id];
    *len = e->str_len;
    return tok->strings + e->str_off;
}

/* Slot of spelling s in str_map: its id's slot, or the free slot to use. */
static size_t str_slot(const ember_bpe_tokenizer *tok, const char *s, size_t n) {
    size_t mask = tok->str_cap - 1;
    size_t i = (size_t)hash_bytes(s, n) & mask;
    for (;;) {
        int32_t id = tok->str_map[i];
        if (id == NO_ID) return i;
        size_t len;
        const char *t = token_str(tok, id, &len);
        if (len == n && memcmp(t, s, n) == 0) return i;
        i = (i + 1) & mask;
    }
}

static int32_t str_find(const ember_bpe_tokenizer *tok, const char *s, size_t n) {
    return tok->str_map[str_slot(tok, s, n)];
}

static size_t merge_slot_of(const ember_bpe_tokenizer *tok, uint64_t key) {
    size_t mask = tok->merge_cap - 1;
    size_t i = (size_t)hash_u64(key) & mask;
    while (tok->merge_map[i].key != EMPTY_KEY && tok->merge_map[i].key != key) i = (i + 1) & mask;
    return i;
}

static uint64_t pair_key(int32_t a, int32_t b) {
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* The merge of tokens a and b, or NULL. */
static const merge_slot *merge_find(const ember_bpe_tokenizer *tok, int32_t a, int32_t b) {
    const merge_slot *m = &tok->merge_map[merge_slot_of(tok, pair_key(a, b))];
    return m->key == EMPTY_KEY ? NULL : m;
}

/* ------------------------------------------------------------------------ */
/* vocab.json                                                                */
/* ------------------------------------------------------------------------ */

typedef struct json_reader {
    const char *s;
    size_t n, i;
    char *out;      /* decoded strings are appended here (never longer than s) */
    size_t out_len;
} json_reader;

/* Line and column (1-based) of byte offset i, for messages. */
static void line_col(const char *s, size_t i, size_t *line, size_t *col) {
    size_t l = 1, c = 1;
    for (size_t k = 0; k < i; k++) {
        if (s[k] == '\n') l++, c = 1;
        else c++;
    }
    *line = l;
    *col = c;
}

static ember_status json_error(const json_reader *r, const char *what) {
    size_t line, col;
    line_col(r->s, r->i, &line, &col);
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s:%zu:%zu: %s", NAME_VOCAB, line, col,
                           what);
}

static void json_skip_ws(json_reader *r) {
    while (r->i < r->n) {
        char c = r->s[r->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->i++;
    }
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the four hex digits after "\u". */
static bool json_hex4(json_reader *r, uint32_t *v) {
    if (r->n - r->i < 4) return false;
    uint32_t x = 0;
    for (int k = 0; k < 4; k++) {
        int d = hex_digit(r->s[r->i + (size_t)k]);
        if (d < 0) return false;
        x = (x << 4) | (uint32_t)d;
    }
    r->i += 4;
    *v = x;
    return true;
}

/* Reads a JSON string (r->i at its opening quote) into r->out. Escapes are
 * decoded; \uXXXX surrogate pairs become one code point. The decoded form is
 * never longer than the escaped one, so out (as long as the input) has room. */
static ember_status json_string(json_reader *r, uint32_t *off, uint32_t *len) {
    if (r->i >= r->n || r->s[r->i] != '"') return json_error(r, "expected a string");
    r->i++;
    size_t start = r->out_len;
    for (;;) {
        if (r->i >= r->n) return json_error(r, "unterminated string");
        unsigned char c = (unsigned char)r->s[r->i];
        if (c == '"') {
            r->i++;
            break;
        }
        if (c < 0x20) return json_error(r, "control character in a string");
        if (c != '\\') {
            uint32_t cp;
            size_t l = utf8_decode((const unsigned char *)r->s + r->i, r->n - r->i, &cp);
            if (l == 0) return json_error(r, "invalid UTF-8 in a string");
            memcpy(r->out + r->out_len, r->s + r->i, l);
            r->out_len += l;
            r->i += l;
            continue;
        }
        r->i++;
        if (r->i >= r->n) return json_error(r, "unterminated escape");
        char e = r->s[r->i++];
        char ch;
        switch (e) {
        case '"': ch = '"'; break;
        case '\\': ch = '\\'; break;
        case '/': ch = '/'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'n': ch = '\n'; break;
        case 'r': ch = '\r'; break;
        case 't': ch = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!json_hex4(r, &cp)) return json_error(r, "\\u needs four hex digits");
            if (cp >= 0xDC00 && cp <= 0xDFFF) return json_error(r, "lone low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
                    return json_error(r, "high surrogate without a low surrogate");
                r->i += 2;
                if (!json_hex4(r, &lo)) return json_error(r, "\\u needs four hex digits");
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return json_error(r, "high surrogate without a low surrogate");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            r->out_len += utf8_encode(cp, r->out + r->out_len);
            continue;
        }
        default: return json_error(r, "unknown escape");
        }
        r->out[r->out_len++] = ch;
    }
    if (r->out_len - start > UINT32_MAX || start > UINT32_MAX)
        return json_error(r, "string too long");
    *off = (uint32_t)start;
    *len = (uint32_t)(r->out_len - start);
    return EMBER_OK;
}

/* Reads a non-negative integer id. */
static ember_status json_id(json_reader *r, int32_t *id) {
    if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
        return json_error(r, "expected a non-negative integer id");
    long v = 0;
    while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
        v = v * 10 + (r->s[r->i] - '0');
        if (v > EMBER_BPE_MAX_ID) return json_error(r, "id too large");
        r->i++;
    }
    if (r->i < r->n && (r->s[r->i] == '.' || r->s[r->i] == 'e' || r->s[r->i] == 'E'))
        return json_error(r, "id is not an integer");
    *id = (int32_t)v;
    return EMBER_OK;
}

typedef struct vocab_item {
    uint32_t off, len;
    int32_t id;
} vocab_item;

/* Parses vocab.json into tok->strings and tok->tokens, and builds str_map. */
static ember_status parse_vocab(ember_bpe_tokenizer *tok, const char *s, size_t n) {
    json_reader r = {s, n, 0, NULL, 0};
    r.out = malloc(n == 0 ? 1 : n);
    if (r.out == NULL) return oom("vocabulary");
    tok->strings = r.out;

    vocab_item *items = NULL;
    size_t n_items = 0, cap = 0;
    int32_t max_id = -1;
    ember_status st = EMBER_OK;

    json_skip_ws(&r);
    if (r.i >= r.n || r.s[r.i] != '{') {
        st = json_error(&r, "expected '{' (a JSON object of token: id)");
        goto done;
    }
    r.i++;
    json_skip_ws(&r);
    if (r.i < r.n && r.s[r.i] == '}') {
        r.i++;
    } else {
        for (;;) {
            vocab_item it;
            json_skip_ws(&r);
            if ((st = json_string(&r, &it.off, &it.len)) != EMBER_OK) goto done;
            json_skip_ws(&r);
            if (r.i >= r.n || r.s[r.i] != ':') {
                st = json_error(&r, "expected ':'");
                goto done;
            }
            r.i++;
            json_skip_ws(&r);
            if ((st = json_id(&r, &it.id)) != EMBER_OK) goto done;
            if (n_items == cap) {
                size_t ncap = cap == 0 ? 1024 : cap * 2;
                size_t bytes;
                vocab_item *p = NULL;
                if (ncap > cap && mul_ok(ncap, sizeof *items, &bytes)) p = realloc(items, bytes);
                if (p == NULL) {
                    st = oom("vocabulary");
                    goto done;
                }
                items = p;
                cap = ncap;
            }
            items[n_items++] = it;
            if (it.id > max_id) max_id = it.id;
            json_skip_ws(&r);
            if (r.i < r.n && r.s[r.i] == ',') {
                r.i++;
                continue;
            }
            if (r.i < r.n && r.s[r.i] == '}') {
                r.i++;
                break;
            }
            st = json_error(&r, "expected ',' or '}'");
            goto done;
        }
    }
    json_skip_ws(&r);
    if (r.i != r.n) {
        st = json_error(&r, "unexpected text after the object");
        goto done;
    }
    if (n_items == 0) {
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: the vocabulary is empty", NAME_VOCAB);
        goto done;
    }
    tok->strings_len = r.out_len;
    /* Ids may skip numbers, but not so many that a small file asks for a
     * huge id table. */
    if ((size_t)max_id >= 2 * n_items + 1024) {
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                             "%s: id %d is far beyond the %zu tokens (ids must be nearly dense)",
                             NAME_VOCAB, (int)max_id, n_items);
        goto done;
    }

    tok->n_ids = (size_t)max_id + 1;
    tok->tokens = alloc_array(tok->n_ids, sizeof *tok->tokens);
    tok->str_cap = table_capacity(n_items);
    tok->str_map = tok->str_cap ? alloc_array(tok->str_cap, sizeof *tok->str_map) : NULL;
    if (tok->tokens == NULL || tok->str_map == NULL) {
        st = oom("vocabulary");
        goto done;
    }
    memset(tok->tokens, 0, tok->n_ids * sizeof *tok->tokens);
    for (size_t i = 0; i < tok->str_cap; i++) tok->str_map[i] = NO_ID;
    for (size_t k = 0; k < n_items; k++) {
        const vocab_item *it = &items[k];
        token_entry *e = &tok->tokens[it->id];
        if (e->used) {
            size_t l1;
            const char *s1 = token_str(tok, it->id, &l1);
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: id %d is given to two tokens (\"%.*s\" and \"%.*s\")",
                                 NAME_VOCAB, (int)it->id, (int)(l1 > 64 ? 64 : l1), s1,
                                 (int)(it->len > 64 ? 64 : it->len), tok->strings + it->off);
            goto done;
        }
        e->used = true;
        e->str_off = it->off;
        e->str_len = it->len;
        size_t slot = str_slot(tok, tok->strings + it->off, it->len);
        if (tok->str_map[slot] != NO_ID) {
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: token \"%.*s\" appears twice (ids %d and %d)", NAME_VOCAB,
                                 (int)(it->len > 64 ? 64 : it->len), tok->strings + it->off,
                                 (int)tok->str_map[slot], (int)it->id);
            goto done;
        }
        tok->str_map[slot] = it->id;
    }
done:
    free(items);
    return st;
}

/* Every byte's own token, and each token's decoded bytes. */
static ember_status build_bytes(ember_bpe_tokenizer *tok) {
    for (unsigned b = 0; b < 256; b++) {
        char u[4];
        size_t l = utf8_encode(byte_to_cp(b), u);
        int32_t id = str_find(tok, u, l);
        if (id == NO_ID)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: byte 0x%02X has no token \"%.*s\" (not a byte-level BPE "
                                   "vocabulary)",
                                   NAME_VOCAB, b, (int)l, u);
        tok->byte_id[b] = id;
    }
    int16_t cp_byte[BYTE_CP_LIMIT]; /* the byte each code point stands for, or -1 */
    for (size_t c = 0; c < BYTE_CP_LIMIT; c++) cp_byte[c] = -1;
    for (unsigned b = 0; b < 256; b++) cp_byte[byte_to_cp(b)] = (int16_t)b;
    /* Decoded bytes are never longer than the spelling (each code point of
     * 1..4 bytes gives one byte, or itself when it stands for no byte). */
    tok->bytes = malloc(tok->strings_len == 0 ? 1 : tok->strings_len);
    if (tok->bytes == NULL) return oom("vocabulary");
    size_t out = 0;
    for (size_t id = 0; id < tok->n_ids; id++) {
        token_entry *e = &tok->tokens[id];
        if (!e->used) continue;
        const unsigned char *s = (const unsigned char *)tok->strings + e->str_off;
        size_t start = out;
        for (size_t i = 0; i < e->str_len;) {
            uint32_t cp;
            size_t l = utf8_decode(s + i, e->str_len - i, &cp); /* validated by the parser */
            if (l == 0) l = 1, cp = 0xFFFD;
            int b = cp < BYTE_CP_LIMIT ? cp_byte[cp] : -1;
            if (b >= 0) {
                tok->bytes[out++] = (char)b;
            } else {
                memcpy(tok->bytes + out, s + i, l);
                out += l;
            }
            i += l;
        }
        e->bytes_off = (uint32_t)start;
        e->bytes_len = (uint32_t)(out - start);
    }
    tok->bytes_len = out;
    return EMBER_OK;
}

/* Special tokens: spellings "<|...|>" with something between the bars. */
static ember_status find_special(ember_bpe_tokenizer *tok) {
    size_t count = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t id = 0; id < tok->n_ids; id++) {
            const token_entry *e = &tok->tokens[id];
            if (!e->used || e->str_len < 5) continue;
            const char *s = tok->strings + e->str_off;
            if (memcmp(s, "<|", 2) != 0 || memcmp(s + e->str_len - 2, "|>", 2) != 0) continue;
            if (pass == 1) tok->special[count] = (int32_t)id;
            count++;
        }
        if (pass == 0) {
            tok->n_special = count;
            tok->special = alloc_array(count, sizeof *tok->special);
            if (tok->special == NULL) return oom("special tokens");
            count = 0;
        }
    }
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* merges.txt                                                                */
/* ------------------------------------------------------------------------ */

static ember_status merges_error(size_t line, const char *fmt, const char *a, size_t al,
                                 const char *b, size_t bl) {
    char what[256];
    snprintf(what, sizeof what, fmt, (int)(al > 64 ? 64 : al), a, (int)(bl > 64 ? 64 : bl), b);
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s:%zu: %s", NAME_MERGES, line, what);
}

static ember_status parse_merges(ember_bpe_tokenizer *tok, const char *s, size_t n) {
    /* Count the lines to size the table (each merge is one line). */
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n') lines++;
    tok->merge_cap = table_capacity(lines);
    tok->merge_map = tok->merge_cap ? alloc_array(tok->merge_cap, sizeof *tok->merge_map) : NULL;
    if (tok->merge_map == NULL) return oom("merges");
    for (size_t i = 0; i < tok->merge_cap; i++) tok->merge_map[i].key = EMPTY_KEY;

    char *joined = NULL; /* left + right, to look up the merged token */
    size_t joined_cap = 0;
    ember_status st = EMBER_OK;
    size_t line = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && s[end] != '\n') end++;
        size_t next = end < n ? end + 1 : end;
        line++;
        size_t len = end - i;
        if (len > 0 && s[i + len - 1] == '\r') len--;
        const char *l = s + i;
        i = next;
        if (len == 0) continue;
        if (len >= 8 && memcmp(l, "#version", 8) == 0) continue; /* as `tokenizers` does */
        const char *sp = memchr(l, ' ', len);
        if (sp == NULL || sp == l || sp == l + len - 1 ||
            memchr(sp + 1, ' ', (size_t)(l + len - sp - 1)) != NULL) {
            st = merges_error(line, "expected two tokens separated by one space, not \"%.*s%.*s\"",
                              l, len, "", 0);
            goto done;
        }
        size_t al = (size_t)(sp - l), bl = len - al - 1;
        const char *a = l, *b = sp + 1;
        int32_t ia = str_find(tok, a, al), ib = str_find(tok, b, bl);
        if (ia == NO_ID || ib == NO_ID) {
            st = merges_error(line, "\"%.*s %.*s\" names a token that is not in vocab.json", a, al,
                              b, bl);
            goto done;
        }
        size_t jl;
        if (!add_ok(al, bl, &jl)) {
            st = oom("merges");
            goto done;
        }
        if (jl > joined_cap) {
            char *p = realloc(joined, jl);
            if (p == NULL) {
                st = oom("merges");
                goto done;
            }
            joined = p;
            joined_cap = jl;
        }
        memcpy(joined, a, al);
        memcpy(joined + al, b, bl);
        int32_t im = str_find(tok, joined, jl);
        if (im == NO_ID) {
            st = merges_error(line, "\"%.*s %.*s\" makes a token that is not in vocab.json", a, al,
                              b, bl);
            goto done;
        }
        merge_slot *m = &tok->merge_map[merge_slot_of(tok, pair_key(ia, ib))];
        if (m->key != EMPTY_KEY) continue; /* a repeated merge keeps its first rank */
        if (tok->n_merges >= (size_t)INT32_MAX) {
            st = merges_error(line, "too many merges%.*s%.*s", "", 0, "", 0);
            goto done;
        }
        m->key = pair_key(ia, ib);
        m->rank = (int32_t)tok->n_merges++;
        m->merged = im;
    }
done:
    free(joined);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

ember_status ember_bpe_tokenizer_load_memory(const char *vocab, size_t vocab_len,
                                             const char *merges, size_t merges_len,
                                             ember_bpe_tokenizer **out) {
    if (vocab == NULL || out == NULL || (merges == NULL && merges_len != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_load: NULL argument");
    if (vocab_len > UINT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than 4 GiB", NAME_VOCAB);
    ember_bpe_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok == NULL) return oom("state");
    ember_status st;
    if ((st = parse_vocab(tok, vocab, vocab_len)) != EMBER_OK ||
        (st = build_bytes(tok)) != EMBER_OK || (st = find_special(tok)) != EMBER_OK ||
        (st = parse_merges(tok, merges == NULL ? "" : merges, merges_len)) != EMBER_OK) {
        ember_bpe_tokenizer_destroy(tok);
        return st;
    }
    *out = tok;
    return EMBER_OK;
}

/* Reads a whole file into memory (malloc). */
static ember_status read_file(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return ember_error_set(EMBER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    ember_status st = EMBER_OK;
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_FILE_BYTES) {
                st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than %zu bytes",
                                     path, MAX_FILE_BYTES);
                break;
            }
            size_t ncap = cap == 0 ? 65536 : cap * 2;
            char *p = realloc(buf, ncap);
            if (p == NULL) {
                st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
                break;
            }
            buf = p;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) st = ember_error_set(EMBER_ERR_IO, "cannot read %s", path);
            break;
        }
    }
    fclose(f);
    if (st != EMBER_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *len = n;
    return EMBER_OK;
}

ember_status ember_bpe_tokenizer_load(const char *vocab_path, const char *merges_path,
                                      ember_bpe_tokenizer **out) {
    if (vocab_path == NULL || merges_path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_load: NULL argument");
    char *vocab = NULL, *merges = NULL;
    size_t vocab_len = 0, merges_len = 0;
    ember_status st = read_file(vocab_path, &vocab, &vocab_len);
    if (st == EMBER_OK) st = read_file(merges_path, &merges, &merges_len);
    if (st == EMBER_OK) st = ember_bpe_tokenizer_load_memory(vocab, vocab_len, merges, merges_len, out);
    free(vocab);
    free(merges);
    return st;
}

ember_status ember_bpe_tokenizer_load_dir(const char *dir, ember_bpe_tokenizer **out) {
    if (dir == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_load_dir: NULL argument");
    size_t dl = strlen(dir), len;
    if (!add_ok(dl, sizeof "/" NAME_VOCAB + sizeof "/" NAME_MERGES, &len))
        return oom("paths");
    char *vocab = malloc(len), *merges = malloc(len);
    ember_status st;
    if (vocab == NULL || merges == NULL) {
        st = oom("paths");
    } else {
        const char *sep = (dl > 0 && dir[dl - 1] == '/') ? "" : "/";
        snprintf(vocab, len, "%s%s%s", dir, sep, NAME_VOCAB);
        snprintf(merges, len, "%s%s%s", dir, sep, NAME_MERGES);
        st = ember_bpe_tokenizer_load(vocab, merges, out);
    }
    free(vocab);
    free(merges);
    return st;
}

void ember_bpe_tokenizer_destroy(ember_bpe_tokenizer *tok) {
    if (tok == NULL) return;
    free(tok->strings);
    free(tok->bytes);
    free(tok->tokens);
    free(tok->str_map);
    free(tok->merge_map);
    free(tok->special);
    free(tok);
}

size_t ember_bpe_tokenizer_vocab_size(const ember_bpe_tokenizer *tok) {
    return tok == NULL ? 0 : tok->n_ids;
}

size_t ember_bpe_tokenizer_merge_count(const ember_bpe_tokenizer *tok) {
    return tok == NULL ? 0 : tok->n_merges;
}

ember_status ember_bpe_tokenizer_token_id(const ember_bpe_tokenizer *tok, const char *token,
                                          size_t len, int32_t *id) {
    if (tok == NULL || token == NULL || id == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_token_id: NULL argument");
    int32_t found = str_find(tok, token, len);
    if (found == NO_ID)
        return ember_error_set(EMBER_ERR_NOT_FOUND, "token \"%.*s\" is not in the vocabulary",
                               (int)(len > 64 ? 64 : len), token);
    *id = found;
    return EMBER_OK;
}

ember_status ember_bpe_tokenizer_decode(const ember_bpe_tokenizer *tok, int32_t id,
                                        const char **bytes, size_t *len) {
    if (tok == NULL || bytes == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_decode: NULL argument");
    if (id < 0 || (size_t)id >= tok->n_ids || !tok->tokens[id].used)
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE,
                               "token id %d is not in the vocabulary (%zu ids)", (int)id,
                               tok->n_ids);
    *bytes = tok->bytes + tok->tokens[id].bytes_off;
    *len = tok->tokens[id].bytes_len;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct symbol {
    int32_t id;
    int32_t prev, next; /* neighbours in the word, -1 at the ends */
    bool alive;
} symbol;

typedef struct candidate {
    int32_t rank;
    int32_t pos; /* index of the left symbol */
} candidate;

typedef struct encoder {
    const ember_bpe_tokenizer *tok;
    symbol *syms;     /* (longest piece) */
    candidate *heap;  /* (3 * longest piece): each merge adds at most two */
    size_t heap_len;
    int32_t *ids;
    size_t cap, n;
} encoder;

static bool cand_less(candidate a, candidate b) {
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(encoder *e, candidate c) {
    size_t i = e->heap_len++;
    e->heap[i] = c;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(e->heap[i], e->heap[p])) break;
        candidate t = e->heap[p];
        e->heap[p] = e->heap[i];
        e->heap[i] = t;
        i = p;
    }
}

static candidate heap_pop(encoder *e) {
    candidate top = e->heap[0];
    e->heap[0] = e->heap[--e->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->heap_len && cand_less(e->heap[l], e->heap[m])) m = l;
        if (r < e->heap_len && cand_less(e->heap[r], e->heap[m])) m = r;
        if (m == i) break;
        candidate t = e->heap[m];
        e->heap[m] = e->heap[i];
        e->heap[i] = t;
        i = m;
    }
    return top;
}

/* Queues the merge of symbol pos with its right neighbour, if there is one. */
static void push_pair(encoder *e, int32_t pos) {
    if (pos < 0) return;
    int32_t next = e->syms[pos].next;
    if (next < 0) return;
    const merge_slot *m = merge_find(e->tok, e->syms[pos].id, e->syms[next].id);
    if (m != NULL) heap_push(e, (candidate){m->rank, pos});
}

static ember_status emit(encoder *e, int32_t id) {
    if (e->n >= e->cap)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_bpe_tokenizer_encode: %zu ids do not hold this text", e->cap);
    e->ids[e->n++] = id;
    return EMBER_OK;
}

/* Byte-level BPE of one piece: start from its bytes' tokens and apply the
 * best-ranked merge (leftmost among equals) until none applies. */
static ember_status encode_piece(encoder *e, const unsigned char *p, size_t len) {
    const ember_bpe_tokenizer *tok = e->tok;
    for (size_t k = 0; k < len; k++) {
        e->syms[k] = (symbol){tok->byte_id[p[k]], (int32_t)k - 1,
                              k + 1 < len ? (int32_t)(k + 1) : -1, true};
    }
    e->heap_len = 0;
    for (size_t k = 0; k + 1 < len; k++) push_pair(e, (int32_t)k);
    while (e->heap_len > 0) {
        candidate c = heap_pop(e);
        symbol *left = &e->syms[c.pos];
        if (!left->alive || left->next < 0) continue;
        symbol *right = &e->syms[left->next];
        const merge_slot *m = merge_find(tok, left->id, right->id);
        if (m == NULL || m->rank != c.rank) continue; /* stale: the pair changed */
        left->id = m->merged;
        right->alive = false;
        left->next = right->next;
        if (right->next >= 0) e->syms[right->next].prev = c.pos;
        push_pair(e, left->prev);
        push_pair(e, c.pos);
    }
    ember_status st = EMBER_OK;
    for (int32_t k = 0; k >= 0 && st == EMBER_OK; k = e->syms[k].next) st = emit(e, e->syms[k].id);
    return st;
}

/* Ordinary text (no special tokens): cut into pieces, encode each. */
static ember_status encode_text(encoder *e, const unsigned char *t, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t l = pretoken_len(t, n, i);
        ember_status st = encode_piece(e, t + i, l);
        if (st != EMBER_OK) return st;
        i += l;
    }
    return EMBER_OK;
}

/* The special token that starts earliest in t[0..n) (the longest of those
 * starting there); returns its start, or n if there is none. */
static size_t next_special(const ember_bpe_tokenizer *tok, const char *t, size_t n, int32_t *id,
                           size_t *len) {
    size_t best = n;
    for (size_t k = 0; k < tok->n_special; k++) {
        size_t sl;
        const char *s = token_str(tok, tok->special[k], &sl);
        if (sl > n) continue;
        for (size_t i = 0; i + sl <= n && i <= best; i++) {
            if (t[i] == s[0] && memcmp(t + i, s, sl) == 0) {
                if (i < best || sl > *len) {
                    best = i;
                    *id = tok->special[k];
                    *len = sl;
                }
                break;
            }
        }
    }
    return best;
}

ember_status ember_bpe_tokenizer_encode(const ember_bpe_tokenizer *tok, const char *text,
                                        size_t text_len, int32_t *ids, size_t cap,
                                        size_t *n_ids) {
    if (tok == NULL || (text == NULL && text_len != 0) || (ids == NULL && cap != 0) ||
        n_ids == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_bpe_tokenizer_encode: NULL argument");
    *n_ids = 0;
    if (text_len == 0) return EMBER_OK;
    if (text_len > (size_t)INT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_bpe_tokenizer_encode: text longer than 2 GiB");
    encoder e = {tok, NULL, NULL, 0, ids, cap, 0};
    size_t heap_n;
    if (!mul_ok(text_len, 3, &heap_n)) return oom("encoder");
    e.syms = alloc_array(text_len, sizeof *e.syms);
    e.heap = alloc_array(heap_n, sizeof *e.heap);
    ember_status st = EMBER_OK;
    if (e.syms == NULL || e.heap == NULL) st = oom("encoder");
    size_t i = 0;
    while (st == EMBER_OK && i < text_len) {
        int32_t sid = NO_ID;
        size_t slen = 0;
        size_t at = next_special(tok, text + i, text_len - i, &sid, &slen);
        st = encode_text(&e, (const unsigned char *)text + i, at);
        if (st == EMBER_OK && sid != NO_ID) st = emit(&e, sid);
        i += at + slen;
    }
    free(e.syms);
    free(e.heap);
    if (st == EMBER_OK) *n_ids = e.n;
    return st;
}
