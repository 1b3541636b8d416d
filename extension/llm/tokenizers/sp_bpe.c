/*
 * extension/llm/tokenizers/sp_bpe.c — BPE segmentation as the library's
 * (0.2.3) bpe_model does it.
 *
 * The normalized text is cut into symbols: a user-defined symbol where one
 * matches (frozen: it never merges), else one UTF-8 character. Every pair of
 * adjacent symbols whose concatenation is a piece (normal, user-defined or
 * unused) is a candidate scored by that piece's score; the best candidate
 * merges (highest score in the library's order, which compares the float
 * bit patterns, so -0.0 ranks below +0.0; then leftmost; ranks computed at
 * load make this one integer comparison), and the merged symbol's new pairs
 * become candidates. A candidate is stale when either symbol has merged
 * since (the lengths no longer add up). Finally a symbol that is an unused
 * piece is split back into the two symbols that last formed that spelling,
 * at most 100 levels deep (an unused single character is unknown). Control
 * and byte pieces never take part.
 */
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

typedef struct symbol {
    uint32_t start, len; /* len 0: merged into its left neighbour */
    int32_t prev, next;  /* -1 at the ends */
    bool freeze;
    uint64_t poly, pow;  /* sp_poly of its bytes, SP_POLY^len */
} symbol;

typedef struct candidate {
    uint64_t key;  /* rank of the merged piece << 32 | left: smallest first */
    int32_t right;
    uint32_t size; /* left.len + right.len when queued */
} candidate;

/* For unused pieces: spelling -> the two symbols it was last made from. */
typedef struct rev_entry {
    uint32_t start, left_len, right_len; /* left_len 0: free slot */
} rev_entry;

/* A piece of a symbol being split back (resegment). */
typedef struct seg_part {
    uint32_t start, len, depth;
} seg_part;

/* The library's limit on resegmentation depth. */
#define MAX_RESEGMENT_DEPTH 100

typedef struct bpe {
    const ember_sp_model *m;
    const uint8_t *t;
    symbol *syms;
    candidate *heap; /* (3 * symbols): each merge queues at most two */
    size_t heap_len;
    rev_entry *rev;
    size_t rev_cap, rev_len;
} bpe;

/* a pops before b: the higher score (lower rank), then the leftmost. */
static bool better(const candidate *a, const candidate *b) { return a->key < b->key; }

static void heap_push(bpe *e, candidate c) {
    size_t i = e->heap_len++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!better(&c, &e->heap[p])) break;
        e->heap[i] = e->heap[p];
        i = p;
    }
    e->heap[i] = c;
}

static candidate heap_pop(bpe *e) {
    candidate top = e->heap[0];
    candidate last = e->heap[--e->heap_len];
    size_t i = 0, n = e->heap_len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, b = i;
        const candidate *best = &last;
        if (l < n && better(&e->heap[l], best)) b = l, best = &e->heap[l];
        if (r < n && better(&e->heap[r], best)) b = r;
        if (b == i) break;
        e->heap[i] = e->heap[b];
        i = b;
    }
    if (n > 0) e->heap[i] = last;
    return top;
}

static bool rev_same(const bpe *e, const rev_entry *r, uint32_t start, uint32_t len) {
    return r->left_len + r->right_len == len && memcmp(e->t + r->start, e->t + start, len) == 0;
}

/* Records that t[start .. start + left_len + right_len) was made from its
 * first left_len bytes and the rest (the latest record of a spelling wins). */
static bool rev_put(bpe *e, uint32_t start, uint32_t left_len, uint32_t right_len) {
    if (2 * (e->rev_len + 1) > e->rev_cap) {
        size_t ncap = e->rev_cap == 0 ? 64 : e->rev_cap * 2;
        rev_entry *slots = calloc(ncap, sizeof *slots);
        if (slots == NULL) return false;
        for (size_t i = 0; i < e->rev_cap; i++) {
            const rev_entry *r = &e->rev[i];
            if (r->left_len == 0) continue;
            size_t j = (size_t)sp_hash(e->t + r->start, r->left_len + r->right_len) & (ncap - 1);
            while (slots[j].left_len != 0) j = (j + 1) & (ncap - 1);
            slots[j] = *r;
        }
        free(e->rev);
        e->rev = slots;
        e->rev_cap = ncap;
    }
    uint32_t len = left_len + right_len;
    size_t j = (size_t)sp_hash(e->t + start, len) & (e->rev_cap - 1);
    while (e->rev[j].left_len != 0 && !rev_same(e, &e->rev[j], start, len))
        j = (j + 1) & (e->rev_cap - 1);
    if (e->rev[j].left_len == 0) e->rev_len++;
    e->rev[j] = (rev_entry){start, left_len, right_len};
    return true;
}

static const rev_entry *rev_get(const bpe *e, uint32_t start, uint32_t len) {
    if (e->rev_cap == 0) return NULL;
    size_t j = (size_t)sp_hash(e->t + start, len) & (e->rev_cap - 1);
    for (; e->rev[j].left_len != 0; j = (j + 1) & (e->rev_cap - 1))
        if (rev_same(e, &e->rev[j], start, len)) return &e->rev[j];
    return NULL;
}

/* Queues the merge of symbols left and right if it makes a piece. */
static bool maybe_add(bpe *e, int32_t left, int32_t right) {
    if (left == -1 || right == -1 || e->syms[left].freeze || e->syms[right].freeze) return true;
    const symbol *l = &e->syms[left], *r = &e->syms[right];
    uint32_t size = l->len + r->len;
    uint64_t h = sp_mix(l->poly * r->pow + r->poly);
    int32_t id = sp_map_find_h(e->m, &e->m->normal, e->t + l->start, size, h);
    if (id == SP_NO_ID) return true;
    heap_push(e, (candidate){(uint64_t)e->m->rank[id] << 32 | (uint32_t)left, right, size});
    if (e->m->type[id] == EMBER_SP_PIECE_UNUSED) return rev_put(e, l->start, l->len, r->len);
    return true;
}

/* Emits a final symbol, splitting unused pieces back as they were made;
 * like the library, it stops splitting below MAX_RESEGMENT_DEPTH levels and
 * keeps the piece there as it is. */
static ember_status resegment(bpe *e, uint32_t start, uint32_t len, sp_segs *out, seg_part *stack,
                              size_t stack_cap) {
    size_t top = 0;
    stack[top++] = (seg_part){start, len, 0};
    while (top > 0) {
        seg_part s = stack[--top];
        int32_t id = sp_text_piece_h(e->m, e->t + s.start, s.len, sp_hash(e->t + s.start, s.len),
                                     true);
        const rev_entry *r = NULL;
        if (s.depth <= MAX_RESEGMENT_DEPTH && e->m->type[id] == EMBER_SP_PIECE_UNUSED) {
            r = rev_get(e, s.start, s.len);
            /* An unused piece that no merge made (a single character) is unknown. */
            if (r == NULL) id = e->m->unk;
        }
        if (r == NULL) {
            if (!sp_segs_push(out, s.start, s.len, id)) return sp_oom("encoder");
            continue;
        }
        /* Both halves are shorter than the piece, so the stack never holds
         * more entries than the symbol has bytes (plus one). */
        if (top + 2 > stack_cap) return sp_oom("encoder");
        stack[top++] = (seg_part){s.start + r->left_len, r->right_len, s.depth + 1};
        stack[top++] = (seg_part){s.start, r->left_len, s.depth + 1};
    }
    return EMBER_OK;
}

ember_status sp_bpe_segment(const ember_sp_model *m, const uint8_t *t, size_t n, sp_segs *out) {
    if (n == 0) return EMBER_OK;
    bpe e = {m, t, NULL, NULL, 0, NULL, 0, 0};
    size_t heap_cap;
    if (!sp_mul_ok(n, 3, &heap_cap)) return sp_oom("encoder");
    e.syms = sp_alloc_array(n, sizeof *e.syms);     /* (n) at most one symbol per byte */
    e.heap = sp_alloc_array(heap_cap, sizeof *e.heap);
    seg_part *stack = NULL;
    ember_status st = EMBER_OK;
    if (e.syms == NULL || e.heap == NULL) {
        st = sp_oom("encoder");
        goto done;
    }

    size_t n_syms = 0;
    for (size_t i = 0; i < n;) {
        size_t len = sp_user_match(m, t + i, n - i);
        bool freeze = len > 0;
        if (!freeze) {
            len = sp_one_char_len(t[i]);
            if (len > n - i) len = n - i;
        }
        symbol *s = &e.syms[n_syms];
        s->start = (uint32_t)i;
        s->len = (uint32_t)len;
        s->freeze = freeze;
        s->poly = sp_poly(t + i, len);
        s->pow = 1;
        for (size_t k = 0; k < len; k++) s->pow *= SP_POLY;
        s->prev = (int32_t)n_syms - 1;
        i += len;
        s->next = i < n ? (int32_t)n_syms + 1 : -1;
        n_syms++;
    }
    bool ok = true;
    for (size_t i = 1; i < n_syms && ok; i++) ok = maybe_add(&e, (int32_t)i - 1, (int32_t)i);

    while (ok && e.heap_len > 0) {
        candidate c = heap_pop(&e);
        int32_t left = (int32_t)(uint32_t)c.key;
        symbol *l = &e.syms[left], *r = &e.syms[c.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != c.size) continue;
        l->len += r->len;
        l->poly = l->poly * r->pow + r->poly;
        l->pow *= r->pow;
        l->next = r->next;
        if (r->next >= 0) e.syms[r->next].prev = left;
        r->len = 0;
        ok = maybe_add(&e, l->prev, left) && maybe_add(&e, left, l->next);
    }
    if (!ok) {
        st = sp_oom("encoder");
        goto done;
    }

    if (m->has_unused) {
        stack = sp_alloc_array(n + 2, sizeof *stack);
        if (stack == NULL) {
            st = sp_oom("encoder");
            goto done;
        }
    }
    for (int32_t i = 0; i != -1 && st == EMBER_OK; i = e.syms[i].next) {
        const symbol *s = &e.syms[i];
        if (stack != NULL) {
            st = resegment(&e, s->start, s->len, out, stack, n + 2);
        } else if (!sp_segs_push(out, s->start, s->len,
                                 sp_text_piece_h(m, t + s->start, s->len, sp_mix(s->poly), false))) {
            st = sp_oom("encoder");
        }
    }
done:
    free(e.syms);
    free(e.heap);
    free(e.rev);
    free(stack);
    return st;
}
