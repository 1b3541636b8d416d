/*
 * extension/llm/sampler.c — greedy, temperature, top-k, top-p and repetition
 * penalty over one step's logits (see sampler.h).
 */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    float p; /* unnormalized probability */
    int32_t id;
} candidate;

struct ember_sampler {
    ember_sampler_config cfg;
    size_t vocab;
    uint64_t state, inc; /* PCG32 */
    candidate *cand;     /* (vocab) */
    uint8_t *seen;       /* (vocab) marks for the repetition penalty */
};

ember_sampler_config ember_sampler_config_default(void) {
    ember_sampler_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.temperature = 0.8f;
    c.top_k = 0;
    c.top_p = 1.0f;
    c.repetition_penalty = 1.0f;
    c.seed = 0;
    return c;
}

/* PCG32 (O'Neill): 64-bit state, 32-bit output, the stream fixed by inc. */
static uint32_t pcg32_next(ember_sampler *s) {
    uint64_t old = s->state;
    s->state = old * 6364136223846793005ull + s->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

static void pcg32_seed(ember_sampler *s, uint64_t seed) {
    s->state = 0;
    s->inc = (0xda3e39cb94b95bdbull << 1) | 1u;
    pcg32_next(s);
    s->state += seed;
    pcg32_next(s);
}

/* Uniform in [0, 1). */
static double uniform(ember_sampler *s) {
    return pcg32_next(s) * (1.0 / 4294967296.0);
}

ember_status ember_sampler_create(size_t vocab_size, const ember_sampler_config *config,
                                  ember_sampler **out) {
    if (out == NULL) return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sampler_create: out is NULL");
    if (vocab_size == 0 || vocab_size > (size_t)INT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "sampler: vocabulary size %zu is out of range", vocab_size);
    ember_sampler_config c = ember_sampler_config_default();
    if (config != NULL) {
        if (config->struct_size < sizeof c)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "sampler: config.struct_size is %zu, expected %zu",
                                   config->struct_size, sizeof c);
        c = *config;
        c.struct_size = sizeof c;
    }
    if (!(c.temperature >= 0.0f) || isinf(c.temperature))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "sampler: temperature must be a finite number >= 0");
    if (c.top_k < 0)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "sampler: top-k must be >= 0");
    if (!(c.top_p > 0.0f && c.top_p <= 1.0f))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "sampler: top-p must be in (0, 1]");
    if (!(c.repetition_penalty > 0.0f) || isinf(c.repetition_penalty))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "sampler: repetition penalty must be a finite number > 0");

    ember_sampler *s = calloc(1, sizeof *s);
    if (s == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the sampler");
    s->cfg = c;
    s->vocab = vocab_size;
    if (vocab_size <= SIZE_MAX / sizeof *s->cand) s->cand = malloc(vocab_size * sizeof *s->cand);
    s->seen = calloc(vocab_size, 1);
    if (s->cand == NULL || s->seen == NULL) {
        ember_sampler_destroy(s);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the sampler");
    }
    pcg32_seed(s, c.seed);
    *out = s;
    return EMBER_OK;
}

void ember_sampler_destroy(ember_sampler *sampler) {
    if (sampler == NULL) return;
    free(sampler->cand);
    free(sampler->seen);
    free(sampler);
}

static void apply_penalty(ember_sampler *s, float *logits, const int32_t *history, size_t n) {
    float pen = s->cfg.repetition_penalty;
    for (size_t i = 0; i < n; i++) {
        int32_t id = history[i];
        if (id < 0 || (size_t)id >= s->vocab || s->seen[id]) continue;
        s->seen[id] = 1;
        logits[id] = logits[id] > 0.0f ? logits[id] / pen : logits[id] * pen;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t id = history[i];
        if (id >= 0 && (size_t)id < s->vocab) s->seen[id] = 0;
    }
}

/* Largest logit, lowest id among equals; NaN never wins. */
static int32_t argmax(const float *logits, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (logits[i] > logits[best] || (isnan(logits[best]) && !isnan(logits[i]))) best = i;
    return (int32_t)best;
}

/* a comes before b: more likely, or as likely with a lower id. */
static bool cand_before(candidate a, candidate b) {
    return a.p > b.p || (a.p == b.p && a.id < b.id);
}

static int cand_cmp(const void *pa, const void *pb) {
    candidate a = *(const candidate *)pa, b = *(const candidate *)pb;
    if (cand_before(a, b)) return -1;
    if (cand_before(b, a)) return 1;
    return 0;
}

/* Keeps the k best of c[0..n) in c[0..k) (a heap whose root is the worst
 * kept one), in O(n log k). */
static void select_top_k(candidate *c, size_t n, size_t k) {
    for (size_t i = 0; i < n; i++) {
        candidate x = c[i];
        size_t j;
        if (i < k) {
            j = i; /* sift up */
            while (j > 0) {
                size_t p = (j - 1) / 2;
                if (!cand_before(c[p], x)) break;
                c[j] = c[p];
                j = p;
            }
            c[j] = x;
            continue;
        }
        if (!cand_before(x, c[0])) continue;
        j = 0; /* replace the worst, sift down */
        for (;;) {
            size_t l = 2 * j + 1, r = l + 1, m = j;
            candidate worst = x;
            if (l < k && cand_before(worst, c[l])) m = l, worst = c[l];
            if (r < k && cand_before(worst, c[r])) m = r;
            if (m == j) break;
            c[j] = c[m];
            j = m;
        }
        c[j] = x;
    }
}

ember_status ember_sampler_sample(ember_sampler *s, float *logits, const int32_t *history,
                                  size_t n_history, int32_t *token) {
    if (s == NULL || logits == NULL || token == NULL || (history == NULL && n_history != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sampler_sample: NULL argument");
    size_t n = s->vocab;
    if (s->cfg.repetition_penalty != 1.0f) apply_penalty(s, logits, history, n_history);
    if (s->cfg.temperature == 0.0f || s->cfg.top_k == 1) {
        *token = argmax(logits, n);
        return EMBER_OK;
    }

    /* Softmax numerators, relative to the largest logit. */
    float max = logits[argmax(logits, n)];
    float inv_t = 1.0f / s->cfg.temperature;
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        float p = isnan(logits[i]) ? 0.0f : expf((logits[i] - max) * inv_t);
        s->cand[i] = (candidate){p, (int32_t)i};
        total += p;
    }

    size_t kept = n;
    size_t k = (size_t)s->cfg.top_k;
    if (k > 0 && k < n) {
        select_top_k(s->cand, n, k);
        kept = k;
        total = 0.0;
        for (size_t i = 0; i < kept; i++) total += s->cand[i].p;
    } else if (s->cfg.top_p < 1.0f && n > 1) {
        /* Tokens below (1 - p) / (n - 1) of the total together hold at most
         * 1 - p of it, so the nucleus lies among the others: sort only those. */
        double cutoff = (1.0 - s->cfg.top_p) / (double)(n - 1) * total;
        kept = 0;
        for (size_t i = 0; i < n; i++)
            if (s->cand[i].p >= cutoff) s->cand[kept++] = s->cand[i];
        if (kept == 0) kept = 1; /* unreachable for finite logits; keeps a token */
    }
    if (kept < n || s->cfg.top_p < 1.0f) qsort(s->cand, kept, sizeof *s->cand, cand_cmp);

    if (s->cfg.top_p < 1.0f) {
        double want = s->cfg.top_p * total, sum = 0.0;
        size_t i = 0;
        while (i < kept) {
            sum += s->cand[i++].p;
            if (sum >= want) break;
        }
        kept = i;
        total = sum;
    }

    double r = uniform(s) * total, sum = 0.0;
    for (size_t i = 0; i < kept; i++) {
        sum += s->cand[i].p;
        if (r < sum) {
            *token = s->cand[i].id;
            return EMBER_OK;
        }
    }
    *token = s->cand[kept - 1].id; /* rounding left r at the very end */
    return EMBER_OK;
}
