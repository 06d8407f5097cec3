/// @file sampling.hpp
/// @brief Chapter 9 — from logits to the next token: temperature, top-k, top-p, greedy, and
/// the generation loop on the KV cache.
///
/// The notes' §14 (the last position's hidden state is projected onto the vocabulary; the
/// output softmax `p = softmax(z / τ)` with τ > 0; top-k and top-p narrow the candidates) and
/// §15 (generation is step by step: choose a token, append it, feed it back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "9-kv-cache/kv_cache.hpp"
#include "workbook/core.hpp"

namespace wb {

/// @addtogroup chapter9
/// @{

/// How to turn logits into a distribution to draw from. Applied in this order:
/// temperature, then top-k, then top-p.
struct SamplingOptions {
    float temperature = 1.0f;  ///< τ > 0: p = softmax(z / τ); below 1 sharper, above 1 flatter
    std::size_t top_k = 0;     ///< keep the k most likely tokens; 0 = off (keep all)
    float top_p = 1.0f;  ///< keep the smallest set whose mass reaches top_p, in (0, 1]; 1 = off
};

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter9
/// @{

/// The probabilities actually sampled from, over the V tokens, in this order:
/// 1. `p = softmax(z / τ)` (stable: subtract the maximum first; logits of 1000 and more give
///    the same distribution as the same logits shifted down; a -inf logit gets probability
///    0); <!-- clause: sampling_distribution.temperature -->
/// 2. top-k (if `top_k > 0`): keep the `top_k` largest probabilities (all of them if
///    `top_k >= V`), set the others to 0, renormalise; <!-- clause: sampling_distribution.top-k -->
/// 3. top-p (if `top_p < 1`): sort what remains from most to least likely and keep the
///    shortest prefix whose mass reaches `top_p` (`cumulative >= top_p`): the token that
///    crosses the threshold is kept, and so is always the most likely token;
///    renormalise. <!-- clause: sampling_distribution.top-p -->
///
/// Top-p measures the mass of the distribution that top-k renormalised, never the one before
/// it. <!-- clause: sampling_distribution.filter-order -->
/// Ties are ordered by the lower id first, at any vocabulary size, in top-k and in top-p (so
/// top-k of `[1, 1, 1]` with k = 2 keeps ids 0, 1).
/// <!-- clause: sampling_distribution.ties-lower-id -->
/// @param logits `[V]` raw scores z of the next token
/// @param options temperature, top_k, top_p
/// @return V probabilities, 0 for the tokens filtered out, summing to 1
///         <!-- clause: sampling_distribution.returns-distribution -->
/// @throws ShapeError if logits is empty (the message names
///         "wb::sampling_distribution") <!-- clause: sampling_distribution.empty -->
/// @throws ValueError if temperature <= 0, NaN or infinite (the message names the option and
///         its value) <!-- clause: sampling_distribution.bad-temperature -->
/// @throws ValueError if top_p is outside (0, 1] or NaN (the message names the option and its
///         value) <!-- clause: sampling_distribution.bad-top-p -->
/// @throws ValueError if a logit is NaN or +inf (the message names the position and the
///         value) <!-- clause: sampling_distribution.bad-logit -->
/// @throws ValueError if every logit is -inf (the message names
///         "wb::sampling_distribution") <!-- clause: sampling_distribution.all-masked -->
std::vector<float> sampling_distribution(const Vec<float>& logits, const SamplingOptions& options);

/// Greedy decoding: the most likely token, the argmax of the logits (the limit τ → 0).
/// @param logits `[V]`
/// @return the id of the largest logit; on ties the lowest such id
///         <!-- clause: greedy.first-argmax -->
/// @throws ShapeError if logits is empty (the message names "wb::greedy")
///         <!-- clause: greedy.empty -->
/// @throws ValueError if a logit is NaN or +inf (the message names "wb::greedy" and the
///         position) <!-- clause: greedy.bad-logit -->
/// @throws ValueError if every logit is -inf (the message names "wb::greedy")
///         <!-- clause: greedy.all-masked -->
std::int64_t greedy(const Vec<float>& logits);

/// Draws one token from sampling_distribution(logits, options) by the inverse CDF: one
/// `u = std::uniform_real_distribution<double>(0, 1)(rng)`, then the first id whose
/// cumulative probability (in id order) exceeds u. <!-- clause: sample.inverse-cdf -->
/// Deterministic for a given state of `rng`. <!-- clause: sample.deterministic -->
/// A token of probability 0 is never drawn. <!-- clause: sample.never-filtered -->
/// @param logits `[V]`
/// @param options temperature, top_k, top_p
/// @param rng the random generator, advanced by exactly that one draw
///        <!-- clause: sample.one-draw -->
/// @return a token id in `[0, V)`
/// @throws ShapeError if logits is empty (the message names "wb::sample")
///         <!-- clause: sample.empty -->
/// @throws ValueError for the options and the logits sampling_distribution rejects (the
///         message names "wb::sample") <!-- clause: sample.bad-input -->
std::int64_t sample(const Vec<float>& logits, const SamplingOptions& options, std::mt19937_64& rng);

/// Autoregressive generation of one sequence (B = 1) on the KV cache (§15, §16):
/// ```
///   cache = make_kv_cache(config, 1)
///   logits = prefill(prompt)                      the whole prompt at once
///   repeat max_new_tokens times:
///       token = greedy(logits) or sample(logits, options, rng)
///       append token;  logits = decode_step(token)   (not after the last token)
/// ```
/// with one `rng = std::mt19937_64(seed)`, made once and handed to every sample() call in
/// turn, so a seed fixes the output. <!-- clause: generate.seeded-draws -->
/// With use_greedy the new tokens are the argmax of chapter 8's full forward on the sequence
/// so far, appended one by one. <!-- clause: generate.greedy-matches-forward -->
/// Either position kind of the model (learned or RoPE): prefill and decode_step take care of
/// the positions.
/// @param params the model
/// @param config its shape and position kind
/// @param prompt the prompt's token ids, at least one, each in `[0, V)`
/// @param max_new_tokens how many tokens to add (0 returns the prompt, after the same
///        checks) <!-- clause: generate.zero-new-tokens -->
/// @param options temperature, top_k, top_p (checked even when use_greedy)
///        <!-- clause: generate.options-checked-with-greedy -->
/// @param seed seeds the generator of sample()
/// @param use_greedy pick greedy() instead of sample()
/// @return the prompt followed by the max_new_tokens new ids
///         <!-- clause: generate.returns-prompt-then-new -->
/// @throws ShapeError if the prompt is empty (the message names "wb::generate")
///         <!-- clause: generate.empty-prompt -->
/// @throws ValueError, before generating anything, if prompt.size() + max_new_tokens > T_max
///         (compared without the sum, so max_new_tokens = SIZE_MAX is refused too, and so
///         is a prompt longer than T_max with 0 new tokens; the message names "wb::generate",
///         both and T_max) <!-- clause: generate.too-long -->
/// @throws ValueError, before generating anything, if an id of the prompt is outside `[0, V)`
///         (the message names "wb::generate" and the id) <!-- clause: generate.bad-id -->
/// @throws ValueError, before generating anything, if the options are invalid, a temperature
///         or top_p that sampling_distribution rejects (the message names "wb::generate" and
///         the option) <!-- clause: generate.bad-options -->
std::vector<std::int64_t> generate(const GptParams<float>& params, const GptConfig& config,
                                   const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options,
                                   std::uint64_t seed, bool use_greedy = false);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
