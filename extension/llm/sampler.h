/*
 * extension/llm/sampler.h — picks the next token from a model's logits.
 *
 * One step, in this order:
 *   1. repetition penalty (CTRL's, as Hugging Face applies it): every token
 *      id that occurs in the history has its logit divided by the penalty if
 *      positive, multiplied by it if negative;
 *   2. temperature 0 or top-k 1: greedy, the largest logit (the lowest id
 *      among equal ones, like torch.argmax);
 *   3. otherwise logits / temperature, softmax, keep the top-k most likely
 *      (k 0 = all), then the smallest set of the most likely whose
 *      probabilities sum to at least top-p (1 = all), renormalize and draw
 *      from the rest with a seeded PCG32 generator.
 *
 * The same seed, settings and logits give the same tokens on every run.
 * This is an extension: it allocates with malloc (once, at create).
 */
#ifndef EMBER_LLM_SAMPLER_H
#define EMBER_LLM_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Sampling settings; fill in with ember_sampler_config_default(). */
typedef struct ember_sampler_config {
    size_t struct_size;        /**< sizeof(ember_sampler_config) */
    float temperature;         /**< >= 0; 0 means greedy (default 0.8) */
    int32_t top_k;             /**< >= 0; 0 keeps every token (default 0) */
    float top_p;               /**< in (0, 1]; 1 keeps every token (default 1) */
    float repetition_penalty;  /**< > 0; 1 is off, above 1 discourages repeats (default 1) */
    uint64_t seed;             /**< random seed (default 0) */
} ember_sampler_config;

/** The default settings: temperature 0.8, top-k off, top-p 1, no penalty, seed 0. */
ember_sampler_config ember_sampler_config_default(void);

/** A sampler and its random state (opaque). */
typedef struct ember_sampler ember_sampler;

/**
 * Creates a sampler for logits of vocab_size entries.
 *
 * @param[in]  vocab_size  number of logits per step, 1 .. INT32_MAX
 * @param[in]  config      settings (copied), or NULL for the defaults
 * @param[out] out         the sampler (release with ember_sampler_destroy())
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (out NULL, vocab_size out of
 *         range, a setting out of range or not a number: the message names
 *         it); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates scratch for vocab_size entries.
 */
ember_status ember_sampler_create(size_t vocab_size, const ember_sampler_config *config,
                                  ember_sampler **out);

/** Releases a sampler. NULL is a no-op. */
void ember_sampler_destroy(ember_sampler *sampler);

/**
 * Picks the next token.
 *
 * @param[in,out] sampler    the sampler (its random state advances)
 * @param[in,out] logits     vocab_size logits; overwritten (penalized, scaled)
 * @param[in]     history    token ids so far (prompt and generated), for the
 *                           repetition penalty; ids outside 0..vocab_size-1
 *                           are ignored. May be NULL when n_history is 0.
 * @param[in]     n_history  their count
 * @param[out]    token      the chosen id, in 0..vocab_size-1
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument).
 * Never allocates. One sampler is used by one thread at a time.
 */
ember_status ember_sampler_sample(ember_sampler *sampler, float *logits, const int32_t *history,
                                  size_t n_history, int32_t *token);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_SAMPLER_H */
