/*
 * Tests of the sampler (extension/llm/sampler.h): greedy and its ties,
 * temperature 0 and top-k 1 as greedy, the distributions that temperature,
 * top-k and top-p leave (measured over many draws), the repetition penalty,
 * seeded reproducibility, and clean errors for bad settings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler.h"

static ember_sampler *make(size_t vocab, float temperature, int32_t top_k, float top_p,
                           float penalty, uint64_t seed) {
    ember_sampler_config c = ember_sampler_config_default();
    c.temperature = temperature;
    c.top_k = top_k;
    c.top_p = top_p;
    c.repetition_penalty = penalty;
    c.seed = seed;
    ember_sampler *s = NULL;
    CHECK_OK(ember_sampler_create(vocab, &c, &s));
    return s;
}

/* Draws n tokens from the same logits; counts[id]++ for each. */
static void draw(ember_sampler *s, const float *logits, size_t vocab, int n, int *counts) {
    float *work = malloc(vocab * sizeof *work);
    for (int k = 0; k < n; k++) {
        memcpy(work, logits, vocab * sizeof *work);
        int32_t t = -1;
        if (ember_sampler_sample(s, work, NULL, 0, &t) != EMBER_OK || t < 0 || (size_t)t >= vocab) {
            CHECK_MSG(false, "draw %d gave %d", k, (int)t);
            break;
        }
        counts[t]++;
    }
    free(work);
}

static void test_greedy(void) {
    check_section("greedy");
    float logits[5] = {0.1f, 2.0f, -3.0f, 2.0f, 1.0f};
    int32_t t = -1;
    ember_sampler *s = make(5, 0.0f, 0, 1.0f, 1.0f, 1);
    CHECK_OK(ember_sampler_sample(s, logits, NULL, 0, &t));
    CHECK_EQ_INT(t, 1); /* ties: the lowest id, like torch.argmax */
    ember_sampler_destroy(s);

    /* top-k 1 is greedy at any temperature. */
    s = make(5, 5.0f, 1, 1.0f, 1.0f, 1);
    for (int k = 0; k < 100; k++) {
        float l[5] = {0.1f, 1.9f, -3.0f, 2.0f, 1.0f};
        CHECK_OK(ember_sampler_sample(s, l, NULL, 0, &t));
        if (t != 3) {
            CHECK_EQ_INT(t, 3);
            break;
        }
    }
    ember_sampler_destroy(s);

    /* NaN never wins. */
    float nan_logits[3] = {NAN, -1.0f, NAN};
    s = make(3, 0.0f, 0, 1.0f, 1.0f, 1);
    CHECK_OK(ember_sampler_sample(s, nan_logits, NULL, 0, &t));
    CHECK_EQ_INT(t, 1);
    ember_sampler_destroy(s);
}

/* Probabilities 0.5, 0.3, 0.15, 0.05 as logits. */
static const float k_logits[4] = {-0.693147f, -1.203973f, -1.897120f, -2.995732f};
#define DRAWS 40000

static void test_distributions(void) {
    check_section("temperature, top-k, top-p");
    int c[4] = {0};
    ember_sampler *s = make(4, 1.0f, 0, 1.0f, 1.0f, 42);
    draw(s, k_logits, 4, DRAWS, c);
    ember_sampler_destroy(s);
    CHECK_NEAR(c[0] / (double)DRAWS, 0.50, 0.015);
    CHECK_NEAR(c[1] / (double)DRAWS, 0.30, 0.015);
    CHECK_NEAR(c[2] / (double)DRAWS, 0.15, 0.015);
    CHECK_NEAR(c[3] / (double)DRAWS, 0.05, 0.010);

    /* top-k 2 renormalizes the two best: 0.5/0.8 and 0.3/0.8. */
    memset(c, 0, sizeof c);
    s = make(4, 1.0f, 2, 1.0f, 1.0f, 43);
    draw(s, k_logits, 4, DRAWS, c);
    ember_sampler_destroy(s);
    CHECK_NEAR(c[0] / (double)DRAWS, 0.625, 0.015);
    CHECK_NEAR(c[1] / (double)DRAWS, 0.375, 0.015);
    CHECK_EQ_INT(c[2] + c[3], 0);

    /* top-p 0.9: 0.5 + 0.3 + 0.15 reaches it, so the 0.05 token goes. */
    memset(c, 0, sizeof c);
    s = make(4, 1.0f, 0, 0.9f, 1.0f, 44);
    draw(s, k_logits, 4, DRAWS, c);
    ember_sampler_destroy(s);
    CHECK_EQ_INT(c[3], 0);
    CHECK_NEAR(c[0] / (double)DRAWS, 0.50 / 0.95, 0.015);
    CHECK_NEAR(c[2] / (double)DRAWS, 0.15 / 0.95, 0.015);

    /* top-p 0.45: the first token alone reaches it. */
    memset(c, 0, sizeof c);
    s = make(4, 1.0f, 0, 0.45f, 1.0f, 45);
    draw(s, k_logits, 4, 1000, c);
    ember_sampler_destroy(s);
    CHECK_EQ_INT(c[0], 1000);

    /* top-k then top-p: of 0.625 / 0.375, p 0.6 keeps the first only. */
    memset(c, 0, sizeof c);
    s = make(4, 1.0f, 2, 0.6f, 1.0f, 46);
    draw(s, k_logits, 4, 1000, c);
    ember_sampler_destroy(s);
    CHECK_EQ_INT(c[0], 1000);

    /* Temperature 2 flattens: probabilities go as sqrt(p). */
    memset(c, 0, sizeof c);
    s = make(4, 2.0f, 0, 1.0f, 1.0f, 47);
    draw(s, k_logits, 4, DRAWS, c);
    ember_sampler_destroy(s);
    double z = sqrt(0.5) + sqrt(0.3) + sqrt(0.15) + sqrt(0.05);
    CHECK_NEAR(c[0] / (double)DRAWS, sqrt(0.5) / z, 0.015);
    CHECK_NEAR(c[3] / (double)DRAWS, sqrt(0.05) / z, 0.015);

    /* A low temperature is nearly greedy. */
    memset(c, 0, sizeof c);
    s = make(4, 0.05f, 0, 1.0f, 1.0f, 48);
    draw(s, k_logits, 4, 1000, c);
    ember_sampler_destroy(s);
    CHECK(c[0] >= 999);
}

static void test_large_vocab(void) {
    check_section("GPT-2-sized vocabulary");
    enum { V = 50257 };
    float *logits = malloc(V * sizeof *logits);
    float *work = malloc(V * sizeof *work);
    uint64_t x = 12345;
    for (int i = 0; i < V; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        logits[i] = (float)((x >> 40) % 1000) / 100.0f; /* 0 .. 9.99 */
    }
    logits[777] = 30.0f; /* holds nearly all the probability */
    ember_sampler *s = make(V, 1.0f, 0, 0.9f, 1.0f, 7);
    int32_t t = -1;
    memcpy(work, logits, V * sizeof *work);
    CHECK_OK(ember_sampler_sample(s, work, NULL, 0, &t));
    CHECK_EQ_INT(t, 777);
    ember_sampler_destroy(s);

    s = make(V, 1.0f, 40, 1.0f, 1.0f, 7);
    logits[777] = 5.0f;
    int bad = 0;
    for (int k = 0; k < 50; k++) {
        memcpy(work, logits, V * sizeof *work);
        CHECK_OK(ember_sampler_sample(s, work, NULL, 0, &t));
        /* t must be among the 40 largest logits. */
        int above = 0;
        for (int i = 0; i < V; i++)
            if (logits[i] > logits[t] || (logits[i] == logits[t] && i < t)) above++;
        if (above >= 40) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    ember_sampler_destroy(s);
    free(logits);
    free(work);
}

static void test_repetition_penalty(void) {
    check_section("repetition penalty");
    ember_sampler *s = make(4, 0.0f, 0, 1.0f, 2.0f, 1);
    float l[4] = {2.0f, 1.5f, -1.0f, -3.0f};
    int32_t hist[] = {0, 2, 0, 2, 0, 99, -5}; /* repeats count once; odd ids are ignored */
    int32_t t = -1;
    CHECK_OK(ember_sampler_sample(s, l, hist, 7, &t));
    CHECK_NEAR(l[0], 1.0, 1e-6);  /* positive: divided */
    CHECK_NEAR(l[1], 1.5, 1e-6);  /* not in the history */
    CHECK_NEAR(l[2], -2.0, 1e-6); /* negative: multiplied */
    CHECK_NEAR(l[3], -3.0, 1e-6);
    CHECK_EQ_INT(t, 1);
    /* The next call starts from fresh marks. */
    float l2[4] = {2.0f, 1.5f, -1.0f, -3.0f};
    CHECK_OK(ember_sampler_sample(s, l2, hist + 1, 1, &t));
    CHECK_EQ_INT(t, 0);
    CHECK_NEAR(l2[2], -2.0, 1e-6);
    ember_sampler_destroy(s);
}

static void test_seed(void) {
    check_section("seeds");
    int32_t a[200], b[200], c[200];
    uint64_t seeds[3] = {1234, 1234, 1235};
    int32_t *outs[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        ember_sampler *s = make(4, 1.0f, 0, 1.0f, 1.0f, seeds[k]);
        for (int i = 0; i < 200; i++) {
            float l[4];
            memcpy(l, k_logits, sizeof l);
            CHECK_OK(ember_sampler_sample(s, l, NULL, 0, &outs[k][i]));
        }
        ember_sampler_destroy(s);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
}

static void test_errors(void) {
    check_section("bad settings");
    ember_sampler *s = NULL;
    ember_sampler_config c = ember_sampler_config_default();
    CHECK_ERR(ember_sampler_create(0, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "vocabulary size");
    CHECK_STATUS(ember_sampler_create(4, &c, NULL), EMBER_ERR_INVALID_ARGUMENT);
    c.temperature = -1.0f;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "temperature");
    c.temperature = NAN;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "temperature");
    c.temperature = INFINITY;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "temperature");
    c = ember_sampler_config_default();
    c.top_k = -1;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "top-k");
    c = ember_sampler_config_default();
    c.top_p = 0.0f;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "top-p");
    c.top_p = 1.5f;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "top-p");
    c = ember_sampler_config_default();
    c.repetition_penalty = 0.0f;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "repetition penalty");
    c = ember_sampler_config_default();
    c.struct_size = 4;
    CHECK_ERR(ember_sampler_create(4, &c, &s), EMBER_ERR_INVALID_ARGUMENT, "struct_size");
    CHECK(s == NULL);

    CHECK_OK(ember_sampler_create(4, NULL, &s));
    int32_t t;
    float l[4] = {0};
    CHECK_STATUS(ember_sampler_sample(s, NULL, NULL, 0, &t), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sampler_sample(s, l, NULL, 3, &t), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_sampler_sample(NULL, l, NULL, 0, &t), EMBER_ERR_INVALID_ARGUMENT);
    ember_sampler_destroy(s);
    ember_sampler_destroy(NULL);
}

int main(void) {
    test_greedy();
    test_distributions();
    test_large_vocab();
    test_repetition_penalty();
    test_seed();
    test_errors();
    return check_finish();
}
