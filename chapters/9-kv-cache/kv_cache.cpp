// Chapter 9 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in kv_cache.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter9  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 9  /  tools/workbook watch 9
#include "9-kv-cache/kv_cache.hpp"

// The functions the model is made of (kv_cache.hpp lists which step uses which).
#include "1-tensors/tensors.hpp"      // split_heads, merge_heads, last_token_keep
#include "2-embedding/embedding.hpp"  // embed, linear, next_token_logits
#include "3-positions/positions.hpp"  // add_positions, apply_rope (both with an offset)
#include "4-sdpa/sdpa.hpp"            // sdpa
#include "6-masks/masks.hpp"          // causal_mask
#include "7-blocks/blocks.hpp"        // layer_norm, gelu

namespace wb {
inline namespace WB_IMPL {

KvCache make_kv_cache(const GptConfig& config, std::size_t B) {
    // Spec: kv_cache.hpp, @throws first. Guide §3 and §4.
    (void)config, (void)B;
    WB_STUB();
}

std::size_t kv_cache_elements(const GptConfig& config, std::size_t B) {
    // Spec: kv_cache.hpp, @throws first. Guide §4.
    (void)config, (void)B;
    WB_STUB();
}

std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B) {
    // Spec: kv_cache.hpp, @throws first. Guide §4.
    (void)config, (void)B;
    WB_STUB();
}

Mat<float> prefill(const GptParams<float>& params, const GptConfig& config, const TokenIds& prompt,
                   KvCache& cache) {
    // Spec: kv_cache.hpp, @throws first. Guide §3 (prefill and decode, both position kinds) and
    // Hints (one helper for both).
    (void)params, (void)config, (void)prompt, (void)cache;
    WB_STUB();
}

Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache) {
    // Spec: kv_cache.hpp, @throws first. Guide §3 and §6 (it must agree with the full forward).
    (void)params, (void)config, (void)tokens, (void)cache;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
