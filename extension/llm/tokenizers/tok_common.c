/*
 * tok_common.c — the pieces every tokenizer format shares (tok_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* ------------------------------------------------------------------------ */
/* Checked sizes, buffers                                                    */
/* ------------------------------------------------------------------------ */

bool tok_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

bool tok_add_ok(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

void *tok_alloc_array(size_t n, size_t size) {
    size_t bytes;
    if (!tok_mul_ok(n == 0 ? 1 : n, size, &bytes)) return NULL;
    return malloc(bytes);
}

ember_status tok_oom(const char *what) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the tokenizer's %s", what);
}

ember_status tok_buf_reserve(tok_buf *b, size_t extra) {
    size_t need;
    if (!tok_add_ok(b->len, extra, &need)) return tok_oom("text");
    if (need <= b->cap) return EMBER_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return tok_oom("text");
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL) return tok_oom("text");
    b->data = p;
    b->cap = cap;
    return EMBER_OK;
}

ember_status tok_buf_append(tok_buf *b, const void *bytes, size_t n) {
    if (n == 0) return EMBER_OK;
    ember_status st = tok_buf_reserve(b, n);
    if (st != EMBER_OK) return st;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    return EMBER_OK;
}

void tok_buf_free(tok_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

ember_status tok_ids_push(tok_ids *v, int32_t id) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = cap > v->cap ? tok_alloc_array(cap, sizeof *p) : NULL;
        if (p == NULL) return tok_oom("ids");
        if (v->len) memcpy(p, v->data, v->len * sizeof *p);
        free(v->data);
        v->data = p;
        v->cap = cap;
    }
    v->data[v->len++] = id;
    return EMBER_OK;
}

void tok_ids_free(tok_ids *v) {
    free(v->data);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------------------ */
/* Hashing                                                                   */
/* ------------------------------------------------------------------------ */

/* FNV-1a, then a final mix so that the low bits spread. */
static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3u;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9u;
    return h ^ (h >> 32);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* A power of two at least twice n (load factor at most 1/2). */
static bool table_capacity(size_t n, size_t *cap) {
    size_t c = 16;
    while (c < n * 2) {
        if (c > SIZE_MAX / 4) return false;
        c *= 2;
    }
    *cap = c;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */
/* ------------------------------------------------------------------------ */

ember_status tok_vocab_init(tok_vocab *v, size_t n_ids, size_t arena_hint) {
    memset(v, 0, sizeof *v);
    if (n_ids > TOK_MAX_IDS)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "the vocabulary has %zu ids, more than ember takes (%zu)", n_ids,
                               TOK_MAX_IDS);
    size_t cap;
    if (!table_capacity(n_ids, &cap)) return tok_oom("vocabulary");
    v->off = tok_alloc_array(n_ids, sizeof *v->off);
    v->len = tok_alloc_array(n_ids, sizeof *v->len);
    v->slots = tok_alloc_array(cap, sizeof *v->slots);
    v->arena_cap = arena_hint ? arena_hint : 1024;
    v->arena = malloc(v->arena_cap);
    if (v->off == NULL || v->len == NULL || v->slots == NULL || v->arena == NULL) {
        tok_vocab_free(v);
        return tok_oom("vocabulary");
    }
    for (size_t i = 0; i < n_ids; i++) v->len[i] = UINT32_MAX;
    for (size_t i = 0; i < cap; i++) v->slots[i] = TOK_NO_ID;
    v->n_ids = n_ids;
    v->cap = cap;
    return EMBER_OK;
}

void tok_vocab_free(tok_vocab *v) {
    free(v->arena);
    free(v->off);
    free(v->len);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

bool tok_vocab_get(const tok_vocab *v, int32_t id, const char **bytes, size_t *n) {
    if (id < 0 || (size_t)id >= v->n_ids || v->len[id] == UINT32_MAX) return false;
    *bytes = v->arena + v->off[id];
    *n = v->len[id];
    return true;
}

/* The slot of these bytes: where their id is, or the free slot they go in. */
static size_t vocab_slot(const tok_vocab *v, const char *s, size_t n) {
    size_t mask = v->cap - 1, i = (size_t)hash_bytes(s, n) & mask;
    for (;;) {
        int32_t id = v->slots[i];
        if (id == TOK_NO_ID) return i;
        if (v->len[id] == n && memcmp(v->arena + v->off[id], s, n) == 0) return i;
        i = (i + 1) & mask;
    }
}

int32_t tok_vocab_find(const tok_vocab *v, const char *bytes, size_t n) {
    if (v->cap == 0) return TOK_NO_ID;
    return v->slots[vocab_slot(v, bytes, n)];
}

/* Copies bytes into the arena as id's. */
static ember_status vocab_store(tok_vocab *v, int32_t id, const char *bytes, size_t n) {
    size_t need;
    if (!tok_add_ok(v->arena_len, n, &need) || need >= UINT32_MAX) return tok_oom("vocabulary");
    if (need > v->arena_cap) {
        size_t cap = v->arena_cap;
        while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *p = realloc(v->arena, cap);
        if (p == NULL) return tok_oom("vocabulary");
        v->arena = p;
        v->arena_cap = cap;
    }
    if (n) memcpy(v->arena + v->arena_len, bytes, n);
    v->off[id] = (uint32_t)v->arena_len;
    v->len[id] = (uint32_t)n;
    v->arena_len = need;
    return EMBER_OK;
}

ember_status tok_vocab_set_alias(tok_vocab *v, int32_t id, const char *bytes, size_t n) {
    if (id < 0 || (size_t)id >= v->n_ids || v->len[id] != UINT32_MAX || n >= UINT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "token %d cannot be set", (int)id);
    return vocab_store(v, id, bytes, n);
}

ember_status tok_vocab_set(tok_vocab *v, int32_t id, const char *bytes, size_t n, int32_t *dup) {
    *dup = TOK_NO_ID;
    if (id < 0 || (size_t)id >= v->n_ids)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "id %d is outside the vocabulary (%zu)",
                               (int)id, v->n_ids);
    if (v->len[id] != UINT32_MAX) {
        *dup = id;
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "id %d is given twice", (int)id);
    }
    if (n >= UINT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "token %d is too long", (int)id);
    size_t slot = vocab_slot(v, bytes, n);
    if (v->slots[slot] != TOK_NO_ID) {
        *dup = v->slots[slot];
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ids %d and %d are the same token",
                               (int)v->slots[slot], (int)id);
    }
    ember_status st = vocab_store(v, id, bytes, n);
    if (st == EMBER_OK) v->slots[slot] = id;
    return st;
}

/* ------------------------------------------------------------------------ */
/* Merge pairs                                                               */
/* ------------------------------------------------------------------------ */

static uint64_t pair_key(int32_t a, int32_t b) {
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

ember_status tok_pairs_init(tok_pairs *p, size_t n_hint) {
    memset(p, 0, sizeof *p);
    size_t cap;
    if (!table_capacity(n_hint, &cap)) return tok_oom("merges");
    p->slots = tok_alloc_array(cap, sizeof *p->slots);
    if (p->slots == NULL) return tok_oom("merges");
    for (size_t i = 0; i < cap; i++) p->slots[i].key = UINT64_MAX;
    p->cap = cap;
    return EMBER_OK;
}

void tok_pairs_free(tok_pairs *p) {
    free(p->slots);
    memset(p, 0, sizeof *p);
}

static size_t pair_slot(const tok_pairs *p, uint64_t key) {
    size_t mask = p->cap - 1, i = (size_t)hash_u64(key) & mask;
    while (p->slots[i].key != UINT64_MAX && p->slots[i].key != key) i = (i + 1) & mask;
    return i;
}

bool tok_pairs_add(tok_pairs *p, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    uint64_t key = pair_key(left, right);
    size_t i = pair_slot(p, key);
    if (p->slots[i].key == key || p->n * 2 >= p->cap) return false;
    p->slots[i].key = key;
    p->slots[i].rank = rank;
    p->slots[i].merged = merged;
    p->n++;
    return true;
}

const tok_pair_slot *tok_pairs_find(const tok_pairs *p, int32_t left, int32_t right) {
    if (p->cap == 0) return NULL;
    uint64_t key = pair_key(left, right);
    const tok_pair_slot *s = &p->slots[pair_slot(p, key)];
    return s->key == key ? s : NULL;
}

/* ------------------------------------------------------------------------ */
/* The BPE merge loop                                                        */
/* ------------------------------------------------------------------------ */

/* Pieces up to this many symbols merge by rescanning (the common case:
 * words); longer ones through a heap, so a run of thousands of spaces or
 * digits stays O(n log n). */
#define SCAN_MAX 32

static ember_status merge_scan(int32_t *syms, size_t *n, tok_rank_fn fn, const void *ctx) {
    size_t len = *n;
    for (;;) {
        uint32_t best = UINT32_MAX;
        size_t at = 0;
        int32_t into = TOK_NO_ID;
        for (size_t i = 0; i + 1 < len; i++) {
            uint32_t r;
            int32_t m;
            if (fn(ctx, syms[i], syms[i + 1], &r, &m) && r < best) {
                best = r;
                at = i;
                into = m;
            }
        }
        if (into == TOK_NO_ID) break;
        syms[at] = into;
        memmove(syms + at + 1, syms + at + 2, (len - at - 2) * sizeof *syms);
        len--;
    }
    *n = len;
    return EMBER_OK;
}

typedef struct heap_item {
    uint32_t rank;
    uint32_t pos;   /* left symbol */
    int32_t left, right; /* the pair as it was when pushed (stale if changed) */
} heap_item;

static bool item_less(const heap_item *a, const heap_item *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_up(heap_item *h, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!item_less(&h[i], &h[p])) break;
        heap_item t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void heap_down(heap_item *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && item_less(&h[l], &h[m])) m = l;
        if (r < n && item_less(&h[r], &h[m])) m = r;
        if (m == i) return;
        heap_item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static ember_status merge_heap(int32_t *syms, size_t *n, tok_rank_fn fn, const void *ctx) {
    size_t len = *n;
    if (len > UINT32_MAX - 1) return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "piece too long");
    /* prev/next links over positions; a merged-away position is dead */
    uint32_t *prev = tok_alloc_array(len, sizeof *prev);
    uint32_t *next = tok_alloc_array(len, sizeof *next);
    /* pushes: one per first pair, at most two per merge (stale items stay) */
    size_t cap = 0, hn = 0;
    heap_item *heap = tok_mul_ok(len, 3, &cap) ? tok_alloc_array(cap, sizeof *heap) : NULL;
    ember_status st = EMBER_OK;
    if (prev == NULL || next == NULL || heap == NULL) {
        st = tok_oom("merge scratch");
        goto done;
    }
    const uint32_t END = UINT32_MAX;
    for (size_t i = 0; i < len; i++) {
        prev[i] = i ? (uint32_t)(i - 1) : END;
        next[i] = i + 1 < len ? (uint32_t)(i + 1) : END;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        uint32_t r;
        int32_t m;
        if (fn(ctx, syms[i], syms[i + 1], &r, &m)) {
            heap[hn] = (heap_item){r, (uint32_t)i, syms[i], syms[i + 1]};
            heap_up(heap, hn++);
        }
    }
    while (hn > 0) {
        heap_item top = heap[0];
        heap[0] = heap[--hn];
        heap_down(heap, hn, 0);
        uint32_t i = top.pos, j = next[i];
        /* stale: the left symbol was merged away or changed, or its right
         * neighbour is no longer the one pushed */
        if (syms[i] != top.left || j == END || syms[j] != top.right || prev[i] == i) continue;
        uint32_t r;
        int32_t m;
        if (!fn(ctx, top.left, top.right, &r, &m)) continue;
        syms[i] = m;
        next[i] = next[j];
        if (next[j] != END) prev[next[j]] = i;
        prev[j] = j; /* dead */
        syms[j] = TOK_NO_ID;
        /* the new pairs with the neighbours */
        uint32_t nb[2] = {prev[i], i};
        for (int k = 0; k < 2; k++) {
            uint32_t a = nb[k];
            if (a == END || next[a] == END) continue;
            if (fn(ctx, syms[a], syms[next[a]], &r, &m)) {
                if (hn == cap) { /* cannot happen: see cap */
                    st = ember_error_set(EMBER_ERR_INVALID_STATE, "merge heap overflow");
                    goto done;
                }
                heap[hn] = (heap_item){r, a, syms[a], syms[next[a]]};
                heap_up(heap, hn++);
            }
        }
    }
    {
        size_t out = 0;
        for (uint32_t i = 0; i != END && len > 0; i = next[i]) syms[out++] = syms[i];
        *n = out;
    }
done:
    free(prev);
    free(next);
    free(heap);
    return st;
}

ember_status tok_bpe_merge(int32_t *syms, size_t *n, tok_rank_fn rank, const void *ctx) {
    if (*n < 2) return EMBER_OK;
    return *n <= SCAN_MAX ? merge_scan(syms, n, rank, ctx) : merge_heap(syms, n, rank, ctx);
}

/* ------------------------------------------------------------------------ */
/* Special tokens in text                                                    */
/* ------------------------------------------------------------------------ */

static int special_cmp(const void *a, const void *b) {
    const tok_special *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);
    if (c != 0) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

void tok_specials_index(tok_specials *s) {
    memset(s->first, 0, sizeof s->first);
    if (s->n == 0) return;
    qsort(s->items, s->n, sizeof *s->items, special_cmp);
    for (size_t i = 0; i < s->n; i++) {
        if (s->items[i].len == 0) continue;
        uint8_t b = (uint8_t)s->items[i].text[0];
        s->first[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
}

bool tok_specials_next(const tok_specials *s, const char *text, size_t len, size_t from,
                       size_t *at, const tok_special **which) {
    for (size_t i = from; i < len && s->n > 0; i++) {
        uint8_t b = (uint8_t)text[i];
        if (!(s->first[b >> 3] & (1u << (b & 7)))) continue;
        /* the items starting with b: binary search for the first, then the
         * longest that matches here */
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->items[mid].len > 0 && (uint8_t)s->items[mid].text[0] < b) lo = mid + 1;
            else if (s->items[mid].len == 0) lo = mid + 1;
            else hi = mid;
        }
        const tok_special *best = NULL;
        for (size_t k = lo; k < s->n && s->items[k].len > 0 && (uint8_t)s->items[k].text[0] == b;
             k++) {
            const tok_special *t = &s->items[k];
            if (t->len <= len - i && memcmp(text + i, t->text, t->len) == 0 &&
                (best == NULL || t->len > best->len))
                best = t;
        }
        if (best != NULL) {
            *at = i;
            *which = best;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* UTF-8 assembly                                                            */
/* ------------------------------------------------------------------------ */

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

ember_status tok_append_replacement(tok_buf *out) { return tok_buf_append(out, REPLACEMENT, 3); }

/* Bytes a sequence led by b takes (0: b cannot lead one). */
static size_t seq_len(uint8_t b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

/* Whether c may be the k-th byte (k >= 1) of a sequence led by lead. */
static bool cont_ok(uint8_t lead, size_t k, uint8_t c) {
    if (k == 1) {
        if (lead == 0xE0) return c >= 0xA0 && c <= 0xBF;
        if (lead == 0xED) return c >= 0x80 && c <= 0x9F;
        if (lead == 0xF0) return c >= 0x90 && c <= 0xBF;
        if (lead == 0xF4) return c >= 0x80 && c <= 0x8F;
    }
    return c >= 0x80 && c <= 0xBF;
}

ember_status tok_utf8_push(tok_utf8 *u, const char *bytes, size_t n, tok_buf *out) {
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        uint8_t c = (uint8_t)bytes[i];
        if (u->n_held > 0) {
            size_t need = seq_len(u->held[0]);
            if (cont_ok(u->held[0], u->n_held, c)) {
                u->held[u->n_held++] = c;
                if (u->n_held == need) {
                    st = tok_buf_append(out, u->held, need);
                    u->n_held = 0;
                }
                continue;
            }
            /* the held bytes are a maximal ill-formed subpart: one U+FFFD,
             * and c starts afresh */
            u->n_held = 0;
            st = tok_append_replacement(out);
            if (st != EMBER_OK) break;
        }
        size_t need = seq_len(c);
        if (need == 1) st = tok_buf_append(out, &c, 1);
        else if (need == 0) st = tok_append_replacement(out);
        else u->held[u->n_held++] = c;
    }
    return st;
}

ember_status tok_utf8_finish(tok_utf8 *u, tok_buf *out) {
    if (u->n_held == 0) return EMBER_OK;
    u->n_held = 0;
    return tok_append_replacement(out);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

ember_status tok_read_file(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return ember_error_set(EMBER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    ember_status st = EMBER_OK;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 1 << 16;
            if (ncap > TOK_MAX_FILE_BYTES + 1) ncap = TOK_MAX_FILE_BYTES + 1;
            if (ncap <= cap) {
                st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than %zu bytes",
                                     path, TOK_MAX_FILE_BYTES);
                break;
            }
            char *p = realloc(buf, ncap);
            if (p == NULL) {
                st = tok_oom("file");
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
    if (st == EMBER_OK && n > TOK_MAX_FILE_BYTES)
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than %zu bytes", path,
                             TOK_MAX_FILE_BYTES);
    if (st == EMBER_OK && n == cap) {
        char *p = realloc(buf, n + 1);
        if (p == NULL) st = tok_oom("file");
        else buf = p;
    }
    if (st != EMBER_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Decode state                                                              */
/* ------------------------------------------------------------------------ */

void tok_decode_state_reset(tok_decode_state *st) {
    if (st->fmt != NULL && st->fmt_ops != NULL && st->fmt_ops->state_reset != NULL)
        st->fmt_ops->state_reset(st->fmt);
    st->n_tokens = 0;
    st->utf8.n_held = 0;
    for (size_t k = 0; k < TOK_MAX_STAGES; k++) {
        st->count[k] = 0;
        st->aux[k] = 0;
        st->held[k].len = 0;
    }
}

void tok_decode_state_free(tok_decode_state *st) {
    if (st->fmt != NULL && st->fmt_ops != NULL && st->fmt_ops->state_free != NULL)
        st->fmt_ops->state_free(st->fmt);
    for (size_t k = 0; k < TOK_MAX_STAGES; k++) tok_buf_free(&st->held[k]);
    memset(st, 0, sizeof *st);
}
