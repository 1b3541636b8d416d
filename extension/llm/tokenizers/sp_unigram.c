/*
 * extension/llm/tokenizers/sp_unigram.c — Unigram segmentation: the best
 * path through the lattice of vocabulary pieces, as the library's (0.2.3)
 * optimized encoder finds it.
 *
 * best[e] is the best path over t[0..e): its score, where its last piece
 * starts and that piece's id. From each character start s (stepping by the
 * library's UTF-8 lengths), every piece in the trie that starts at s offers
 * best[s] + score to best[s + length]. The trie holds each piece's score
 * (user-defined pieces: (length - 1) * 0.1, so they always win; unused pieces
 * are left out, as the library skips them). When no piece covers exactly
 * the character at s, the unknown piece does, with min_score - 10. A later
 * offer replaces an earlier one only when strictly better. All sums are
 * single-precision floats, as in the library, and like the library the
 * scores are rebased when the running score leaves [-1e5, 1e5]: the score
 * at s is subtracted from every pending best[] up to the furthest offer so
 * far. Ties between paths (common with digit pieces) then break the same
 * way.
 */
#include <stdlib.h>

#include "sp_internal.h"

#define UNK_PENALTY 10.0f
#define RENORM_LIMIT 100000.0f

typedef struct best_node {
    float score;
    int32_t start; /* -1 until some path ends here */
    int32_t id;
} best_node;

ember_status sp_unigram_segment(const ember_sp_model *m, const uint8_t *t, size_t n,
                                sp_segs *out) {
    if (n == 0) return EMBER_OK;
    best_node *best = sp_alloc_array(n + 1, sizeof *best); /* (n + 1) */
    if (best == NULL) return sp_oom("encoder");
    for (size_t i = 0; i <= n; i++) best[i] = (best_node){0.0f, -1, SP_NO_ID};
    const float unk_score = m->min_score - UNK_PENALTY;
    const sp_trie *trie = &m->vocab;

    size_t furthest = 0; /* the furthest end of any offer so far */
    for (size_t s = 0; s < n;) {
        size_t mblen = sp_one_char_len(t[s]);
        if (mblen > n - s) mblen = n - s;
        float here = best[s].score;
        if (here < -RENORM_LIMIT || here > RENORM_LIMIT) {
            for (size_t c = s; c <= furthest; c++)
                if (c == s || best[c].start != -1) best[c].score -= here;
            here = 0.0f;
        }
        bool single = false;
        uint32_t node = 0;
        for (size_t k = s; k < n;) {
            node = sp_trie_child(trie, node, t[k]);
            if (node == SP_NO_NODE) break;
            k++;
            const sp_trie_slot *slot = &trie->slots[node];
            if (slot->value == SP_NO_ID) continue;
            if (k > furthest) furthest = k;
            float cand = slot->score + here;
            best_node *target = &best[k];
            if (target->start == -1 || cand > target->score) {
                target->score = cand;
                target->start = (int32_t)s;
                target->id = slot->value;
            }
            if (k - s == mblen) single = true;
        }
        if (!single) {
            if (s + mblen > furthest) furthest = s + mblen;
            best_node *target = &best[s + mblen];
            float cand = unk_score + here;
            if (target->start == -1 || cand > target->score) {
                target->score = cand;
                target->start = (int32_t)s;
                target->id = m->unk;
            }
        }
        s += mblen;
    }

    /* Back from the end; the pieces come out last first. */
    size_t first = out->n, count = 0;
    ember_status st = EMBER_OK;
    for (size_t e = n; e > 0;) {
        const best_node *b = &best[e];
        if (!sp_segs_push(out, (uint32_t)b->start, (uint32_t)(e - (size_t)b->start), b->id)) {
            st = sp_oom("encoder");
            break;
        }
        count++;
        e = (size_t)b->start;
    }
    for (size_t i = 0; st == EMBER_OK && i < count / 2; i++) {
        sp_seg tmp = out->p[first + i];
        out->p[first + i] = out->p[first + count - 1 - i];
        out->p[first + count - 1 - i] = tmp;
    }
    free(best);
    return st;
}
