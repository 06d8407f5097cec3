// Chapter 9 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in sampling.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter9  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 9  /  tools/workbook watch 9
#include "9-kv-cache/sampling.hpp"

namespace wb {
inline namespace WB_IMPL {

std::vector<float> sampling_distribution(const Vec<float>& logits, const SamplingOptions& options) {
    // Spec: sampling.hpp, @throws first. Guide §7.
    (void)logits, (void)options;
    WB_STUB();
}

std::int64_t greedy(const Vec<float>& logits) {
    // Spec: sampling.hpp, @throws first. Guide §7.
    (void)logits;
    WB_STUB();
}

std::int64_t sample(const Vec<float>& logits, const SamplingOptions& options,
                    std::mt19937_64& rng) {
    // Spec: sampling.hpp, @throws first. Guide §7.
    (void)logits, (void)options, (void)rng;
    WB_STUB();
}

std::vector<std::int64_t> generate(const GptParams<float>& params, const GptConfig& config,
                                   const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options,
                                   std::uint64_t seed, bool use_greedy) {
    // Spec: sampling.hpp, @throws first. Guide §2, §3 and §7.
    (void)params, (void)config, (void)prompt, (void)max_new_tokens, (void)options, (void)seed,
        (void)use_greedy;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
