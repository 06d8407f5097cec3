/// @file gpt_decode.hpp
/// @brief The mini-GPT's generation on preallocated buffers: chapter 9's KV-cache decode,
/// organised for speed like a single-file C inference program.
///
/// Given code (not an exercise): the same model and the same numbers as chapter 9's prefill /
/// decode_step (equal up to float rounding, so greedy decoding gives the same tokens), organised
/// for one new token at a time:
///  - the weights are repacked once, when the decoder is made, into panels of 16 outputs
///    (`[out/16][in][16]`), so that each matrix-vector product streams its weights once, front
///    to back, with 16 outputs per SIMD register and no horizontal sums; each head's q, k and v
///    are one `[3d, D]` product;
///  - the KV cache, the activations and the scores are allocated once, for T_max positions;
///    a step allocates nothing; keys are kept transposed per head (`[d][T_max]`), so the
///    scores of 16 positions are one vector multiply-add per feature;
///  - each step is one OpenMP parallel region with two barriers per block: the threads share
///    the heads (q, k, v, attention and the head's columns of w_o) and then the FFN's chunks of
///    64 hidden units (rows of w_fc, columns of w_proj); every thread adds the heads' and the
///    chunks' partial sums, in order, into its own copy of the residual stream;
///  - with RoPE (GptConfig::positions), each head's q and k are turned by their position's
///    angles from cos / sin tables made once for T_max positions; the cache keeps turned keys;
///    without positions (Variant::no_positions, RoPE's layout) nothing is turned;
///  - the ablation switches of variant.hpp as the trainer has them: scores without the 1/√d
///    scale, Post-LN blocks (each sublayer reads the stream, LN1 and LN2 normalise the sums),
///    no final LayerNorm;
///  - GELU (the exact erf form) and the softmax's exp are polynomials that vectorise;
///  - the hot loops are compiled for AVX-512, AVX2 + FMA and the default target, the widest
///    the processor has chosen when the program loads (no build flag needed).
///
/// Determinism: every output is computed by one thread, in an order that depends on the shapes
/// only (a panel's sum over its inputs runs front to back; a head's scores and weighted sum run
/// over positions in order; partial sums are added in head and chunk order), so a step gives
/// the same bits for any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/variant.hpp"

namespace wb::minigpt {

/// @addtogroup minigpt
/// @{

/// One sequence's fast decode:
/// ```
///   GptDecoder decoder(params, config);      // packs the weights, allocates everything
///   const float* logits = decoder.prefill(prompt);   // [V]
///   logits = decoder.step(next_token);                // [V], one token at a time
/// ```
class GptDecoder {
  public:
    /// Packs the weights of `params` and allocates the cache for `config.T_max` positions. The
    /// decoder keeps no reference to params: later changes to them are not seen.
    /// @param params the model's weights, shaped as `config` says
    /// @param config the model's shape
    /// @param variant the ablation switches the model was trained with; `{}` is chapter 8's
    /// @throws ShapeError if the config is invalid or params does not match it
    /// @throws ValueError if config.gelu is not Gelu::exact (the fast engine computes the
    ///         exact GELU only; GPT-2's tanh form runs on the chapters)
    /// @throws ValueError if variant.no_positions and config.positions is not rope
    GptDecoder(const GptParams<float>& params, const GptConfig& config,
               const Variant& variant = {});
    /// Frees the buffers.
    ~GptDecoder();
    /// Takes over another decoder's buffers (the moved-from decoder must not be used).
    GptDecoder(GptDecoder&&) noexcept;
    /// Takes over another decoder's buffers (the moved-from decoder must not be used).
    /// @return this decoder
    GptDecoder& operator=(GptDecoder&&) noexcept;

    /// Empties the cache (the next token is at position 0).
    void reset();
    /// Runs the prompt from position 0 (the cache is emptied first), as chapter 9's prefill.
    /// @param prompt ids in `[0, V)`, 1 <= size <= T_max
    /// @return the logits `[V]` of the token after the prompt (valid until the next call)
    /// @throws ShapeError if the prompt is empty
    /// @throws ValueError if it is longer than T_max or an id is out of range
    const float* prefill(const std::vector<std::int64_t>& prompt);
    /// One token at position length(), as chapter 9's decode_step.
    /// @param token an id in `[0, V)`
    /// @return the logits `[V]` of the token after it (valid until the next call)
    /// @throws ValueError if the cache is full (length() == T_max) or the id is out of range
    const float* step(std::int64_t token);
    /// Positions in the cache (the next token's position).
    std::size_t length() const;
    /// The model shape this decoder was made for.
    const GptConfig& config() const;
    /// The ablation switches this decoder was made for.
    const Variant& variant() const;

  private:
    struct Impl;  // the packed weights, the cache and every buffer (gpt_decode.cpp)
    std::unique_ptr<Impl> impl_;
};

/// wb::generate on the fast decoder: prefill the prompt, then `max_new_tokens` times pick a
/// token (wb::greedy, or wb::sample with `std::mt19937_64(seed)`) and decode it. With
/// use_greedy the tokens equal chapter 9's generate token for token.
/// @param decoder made for the model (its cache is reset)
/// @param prompt ids in `[0, V)`, at least one
/// @param max_new_tokens tokens to add; prompt.size() + max_new_tokens <= T_max
/// @param options temperature, top_k, top_p (checked even when use_greedy)
/// @param seed seeds the sampling
/// @param use_greedy take the most likely token instead of sampling
/// @return the prompt followed by the new ids
/// @throws ShapeError if the prompt is empty
/// @throws ValueError as wb::generate, before anything is decoded: prompt.size() +
///         max_new_tokens > T_max (compared without the sum, so max_new_tokens = SIZE_MAX is
///         refused too; the message names both counts and T_max), invalid options, a bad id
std::vector<std::int64_t> generate_fast(GptDecoder& decoder,
                                        const std::vector<std::int64_t>& prompt,
                                        std::size_t max_new_tokens, const SamplingOptions& options,
                                        std::uint64_t seed, bool use_greedy);

/// How fast generate_text_fast ran.
struct GenerationSpeed {
    std::size_t tokens = 0;  ///< tokens generated
    double seconds = 0;      ///< wall time of the generation (prefills included)
    int threads = 1;         ///< OpenMP threads of the decoder
    /// @return tokens per second (0 when nothing was generated)
    double tokens_per_s() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

/// generate_text (model_file.hpp) on the fast decoder: the same pieces (the prompt, then the
/// last T_max / 2 tokens as each next piece's context), piece i drawn with seed `seed + i`;
/// with use_greedy the same text as generate_text.
/// @param model the model and its vocabulary
/// @param prompt UTF-8 text of known characters; empty starts from a newline
/// @param max_new_tokens characters to add
/// @param options temperature, top-k, top-p
/// @param seed fixes the draws
/// @param use_greedy take the most likely character instead of sampling
/// @param speed if not null, receives the tokens generated and the time taken
/// @return the prompt followed by the generated characters
/// @throws ValueError as generate_text
std::string generate_text_fast(const Model& model, const std::string& prompt,
                               std::size_t max_new_tokens, const SamplingOptions& options,
                               std::uint64_t seed, bool use_greedy,
                               GenerationSpeed* speed = nullptr);

/// @}

}  // namespace wb::minigpt
