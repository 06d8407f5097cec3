// Chapter 9 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in sampling.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter9  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 9  /  tools/workbook watch 9
#include "9-kv-cache/sampling.hpp"

namespace wb {
inline namespace WB_IMPL {

std::vector<float> sampling_distribution(const Vec<float>& logits, const SamplingOptions& options) {
    // Hint: work in double. Divide by τ (do not multiply), subtract the maximum, softmax.
    // Then sort ids by probability (std::stable_sort keeps the lower id first on ties) for
    // top-k and for top-p; renormalise after each filter.
    (void)logits, (void)options;
    WB_STUB();
}

std::int64_t greedy(const Vec<float>& logits) {
    // Hint: a strict `>` keeps the first of equal maxima.
    (void)logits;
    WB_STUB();
}

std::int64_t sample(const Vec<float>& logits, const SamplingOptions& options,
                    std::mt19937_64& rng) {
    // Hint: one u from std::uniform_real_distribution<double>(0, 1), then walk the
    // cumulative sum of sampling_distribution until it exceeds u.
    (void)logits, (void)options, (void)rng;
    WB_STUB();
}

std::vector<std::int64_t> generate(const GptParams<float>& params, const GptConfig& config,
                                   const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options,
                                   std::uint64_t seed, bool use_greedy) {
    // Hint: check everything first. Then one make_kv_cache(config, 1), one prefill of the
    // prompt, and a loop: pick a token from the last logits, append it, decode_step it.
    (void)params, (void)config, (void)prompt, (void)max_new_tokens, (void)options, (void)seed,
        (void)use_greedy;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
