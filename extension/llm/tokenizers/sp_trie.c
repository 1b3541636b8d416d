/*
 * extension/llm/tokenizers/sp_trie.c — byte tries and piece hash maps.
 *
 * The tries stand in for the library's double-array tries over pieces (its
 * Unigram vocabulary and its user-defined-symbol matcher): the same keys and
 * the same walks, one array lookup per byte. They are built in two passes,
 * neither recursive (so a key as long as the file is no danger to the
 * stack): the sorted keys become a breadth-first tree, then each node's
 * children are placed in the double array at the first base where all
 * their slots are free, scanning a list of free slots (a slot that fails
 * many times leaves the list, which keeps the scan short).
 */
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

/* check[] of the root: no slot's index, and not "free". */
#define ROOT_CHECK (UINT32_MAX - 1)
/* A free slot that fails this often is no longer tried as a base. */
#define MAX_FAILS 16

static int key_cmp(const void *a, const void *b) {
    const sp_key *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n == 0 ? 0 : memcmp(x->p, y->p, n);
    if (c != 0) return c;
    return (x->n > y->n) - (x->n < y->n);
}

void sp_trie_free(sp_trie *t) {
    free(t->slots);
    t->slots = NULL;
    t->n_slots = 0;
}

/* ------------------------------------------------------------------------ */
/* Pass 1: the keys as a breadth-first tree                                  */
/* ------------------------------------------------------------------------ */

typedef struct tnode {
    uint32_t first; /* first child; children are consecutive, sorted by label */
    int32_t value;
    float score;
    uint16_t count;
    uint8_t label;
} tnode;

static ember_status build_tree(sp_key *keys, size_t n_keys, tnode **out, size_t *n_out) {
    if (n_keys > 1) qsort(keys, n_keys, sizeof *keys, key_cmp);
    /* Every node but the root ends one byte of some key. */
    size_t max_nodes = 1;
    for (size_t k = 0; k < n_keys; k++)
        if (!sp_add_ok(max_nodes, keys[k].n, &max_nodes)) return sp_oom("trie");
    if (max_nodes >= UINT32_MAX / 2) return sp_oom("trie");
    tnode *nodes = sp_alloc_array(max_nodes, sizeof *nodes);
    uint32_t *lo = sp_alloc_array(max_nodes, sizeof *lo); /* (max_nodes) range of keys */
    uint32_t *hi = sp_alloc_array(max_nodes, sizeof *hi);
    uint32_t *depth = sp_alloc_array(max_nodes, sizeof *depth);
    if (nodes == NULL || lo == NULL || hi == NULL || depth == NULL) {
        free(nodes), free(lo), free(hi), free(depth);
        return sp_oom("trie");
    }
    nodes[0] = (tnode){0, SP_NO_ID, 0.0f, 0, 0};
    lo[0] = 0, hi[0] = (uint32_t)n_keys, depth[0] = 0;
    size_t n_nodes = 1;
    /* Children are appended after every existing node, so visiting nodes in
     * index order visits each after its parent. */
    for (size_t i = 0; i < n_nodes; i++) {
        uint32_t k = lo[i], end = hi[i], d = depth[i];
        /* The key equal to this prefix sorts first (duplicates: the first). */
        if (k < end && keys[k].n == d) {
            nodes[i].value = keys[k].value;
            nodes[i].score = keys[k].score;
        }
        while (k < end && keys[k].n == d) k++;
        nodes[i].first = (uint32_t)n_nodes;
        uint32_t count = 0;
        while (k < end) {
            uint8_t b = keys[k].p[d];
            uint32_t e = k + 1;
            while (e < end && keys[e].p[d] == b) e++;
            size_t c = n_nodes++;
            nodes[c] = (tnode){0, SP_NO_ID, 0.0f, 0, b};
            lo[c] = k, hi[c] = e, depth[c] = d + 1;
            count++;
            k = e;
        }
        nodes[i].count = (uint16_t)count;
    }
    free(lo), free(hi), free(depth);
    *out = nodes;
    *n_out = n_nodes;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Pass 2: the double array                                                  */
/* ------------------------------------------------------------------------ */

typedef struct placer {
    sp_trie *t;
    uint32_t *next, *prev; /* free list over the slots */
    uint8_t *fails;        /* MAX_FAILS: not in the list */
    uint32_t head, tail;
    size_t used_end;       /* one past the last used slot */
} placer;

static void unlink_slot(placer *p, uint32_t s) {
    if (p->fails[s] >= MAX_FAILS) return;
    p->fails[s] = MAX_FAILS;
    if (p->prev[s] != SP_NO_NODE) p->next[p->prev[s]] = p->next[s];
    else p->head = p->next[s];
    if (p->next[s] != SP_NO_NODE) p->prev[p->next[s]] = p->prev[s];
    else p->tail = p->prev[s];
}

/* Makes the array at least need slots long; new slots join the free list. */
static bool grow(placer *p, size_t need) {
    sp_trie *t = p->t;
    if (need <= t->n_slots) return true;
    size_t cap = t->n_slots < 1024 ? 1024 : t->n_slots;
    while (cap < need) cap *= 2;
    if (cap >= ROOT_CHECK) return false;
    sp_trie_slot *slots = realloc(t->slots, cap * sizeof *slots);
    if (slots != NULL) t->slots = slots;
    uint32_t *next = realloc(p->next, cap * sizeof *next);
    if (next != NULL) p->next = next;
    uint32_t *prev = realloc(p->prev, cap * sizeof *prev);
    if (prev != NULL) p->prev = prev;
    uint8_t *fails = realloc(p->fails, cap);
    if (fails != NULL) p->fails = fails;
    if (!slots || !next || !prev || !fails) return false;
    for (size_t s = t->n_slots; s < cap; s++) {
        t->slots[s] = (sp_trie_slot){0, SP_NO_NODE, SP_NO_ID, 0.0f};
        p->fails[s] = 0;
        p->next[s] = SP_NO_NODE;
        p->prev[s] = p->tail;
        if (p->tail != SP_NO_NODE) p->next[p->tail] = (uint32_t)s;
        else p->head = (uint32_t)s;
        p->tail = (uint32_t)s;
    }
    t->n_slots = cap;
    return true;
}

/* Places the children (labels, count k >= 1) of the node in slot parent;
 * returns their slots in slots[]. */
static bool place(placer *p, uint32_t parent, const uint8_t *labels, size_t k, uint32_t *slots) {
    sp_trie *t = p->t;
    uint32_t f = p->head;
    size_t base;
    for (;;) {
        if (f == SP_NO_NODE) {
            size_t old = t->n_slots;
            if (!grow(p, old + 256)) return false;
            f = (uint32_t)old;
        }
        if (f > labels[0]) {
            base = f - labels[0];
            if (!grow(p, base + 256)) return false;
            size_t i = 1;
            while (i < k && t->slots[base + labels[i]].check == SP_NO_NODE) i++;
            if (i == k) break;
        }
        uint32_t nf = p->next[f];
        if (++p->fails[f] >= MAX_FAILS) {
            p->fails[f] = MAX_FAILS - 1;
            unlink_slot(p, f);
        }
        f = nf;
    }
    t->slots[parent].base = (uint32_t)base;
    for (size_t i = 0; i < k; i++) {
        uint32_t s = (uint32_t)(base + labels[i]);
        unlink_slot(p, s);
        t->slots[s].check = parent;
        slots[i] = s;
        if (s + 1 > p->used_end) p->used_end = s + 1;
    }
    return true;
}

ember_status sp_trie_build(sp_trie *t, sp_key *keys, size_t n_keys) {
    memset(t, 0, sizeof *t);
    tnode *nodes = NULL;
    size_t n_nodes = 0;
    ember_status st = build_tree(keys, n_keys, &nodes, &n_nodes);
    if (st != EMBER_OK) return st;

    placer p = {t, NULL, NULL, NULL, SP_NO_NODE, SP_NO_NODE, 1};
    uint32_t *slot_of = sp_alloc_array(n_nodes, sizeof *slot_of); /* (n_nodes) */
    uint8_t labels[256];
    uint32_t slots[256];
    bool ok = slot_of != NULL && grow(&p, 1024);
    if (ok) {
        unlink_slot(&p, 0);
        t->slots[0].check = ROOT_CHECK;
        t->slots[0].value = nodes[0].value;
        t->slots[0].score = nodes[0].score;
        slot_of[0] = 0;
    }
    /* Depth first, so that a walk's slots lie close together. */
    uint32_t *stack = ok ? sp_alloc_array(n_nodes, sizeof *stack) : NULL; /* (n_nodes) */
    size_t top = 0;
    ok = stack != NULL;
    if (ok) stack[top++] = 0;
    while (ok && top > 0) {
        uint32_t i = stack[--top];
        const tnode *nd = &nodes[i];
        if (nd->count == 0) continue;
        for (uint32_t c = 0; c < nd->count; c++) labels[c] = nodes[nd->first + c].label;
        ok = place(&p, slot_of[i], labels, nd->count, slots);
        for (uint32_t c = 0; ok && c < nd->count; c++) {
            slot_of[nd->first + c] = slots[c];
            t->slots[slots[c]].value = nodes[nd->first + c].value;
            t->slots[slots[c]].score = nodes[nd->first + c].score;
        }
        for (uint32_t c = nd->count; ok && c > 0; c--) stack[top++] = nd->first + c - 1;
    }
    free(stack);
    free(nodes);
    free(slot_of);
    free(p.next);
    free(p.prev);
    free(p.fails);
    if (!ok) {
        sp_trie_free(t);
        return sp_oom("trie");
    }
    /* Slots past the last used one are never looked at: drop them. */
    t->n_slots = p.used_end;
    sp_trie_slot *shrunk = realloc(t->slots, p.used_end * sizeof *shrunk);
    if (shrunk != NULL) t->slots = shrunk;
    return EMBER_OK;
}

size_t sp_trie_longest(const sp_trie *t, const uint8_t *s, size_t n) {
    size_t best = 0;
    uint32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        node = sp_trie_child(t, node, s[i]);
        if (node == SP_NO_NODE) break;
        if (t->slots[node].value != SP_NO_ID) best = i + 1;
    }
    return best;
}

int32_t sp_map_find_h(const ember_sp_model *m, const sp_map *map, const uint8_t *s, size_t n,
                      uint64_t h) {
    if (map->cap == 0) return SP_NO_ID;
    uint32_t tag = (uint32_t)(h >> 32);
    size_t mask = map->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const sp_map_slot *slot = &map->slots[i];
        if (slot->id == SP_NO_ID) return SP_NO_ID;
        if (slot->tag != tag) continue;
        size_t len;
        const uint8_t *p = sp_piece(m, slot->id, &len);
        if (len == n && memcmp(p, s, n) == 0) return slot->id;
    }
}
