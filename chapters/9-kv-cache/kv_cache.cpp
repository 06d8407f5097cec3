// Chapter 9 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in kv_cache.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter9  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 9  /  tools/workbook watch 9
#include "9-kv-cache/kv_cache.hpp"

namespace wb {
inline namespace WB_IMPL {

KvCache make_kv_cache(const GptConfig& config, std::size_t B) {
    // Hint: one K and one V per layer, each xt::zeros<float>({B, H, T_max, D / H}). Check the
    // config and B first (see @throws).
    (void)config, (void)B;
    WB_STUB();
}

std::size_t kv_cache_elements(const GptConfig& config, std::size_t B) {
    // Hint: K and V, L layers, B sequences, T_max positions, D = H·d numbers each.
    (void)config, (void)B;
    WB_STUB();
}

std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B) {
    // Hint: the elements are floats.
    (void)config, (void)B;
    WB_STUB();
}

Mat<float> prefill(const GptParams<float>& params, const GptConfig& config,
                   const TokenIds& prompt, KvCache& cache) {
    // Hint: write one helper that runs n new tokens per sequence at positions
    // [start, start + n): embed with wpe[start + i], and in every layer compute q, k, v with
    // chapter 8's linear_forward, store k and v into cache.k[l] / cache.v[l], let each query
    // at position pos attend over the cached positions [0, pos], then w_o, residual, FFN.
    // Prefill is that helper with start = 0 and n = T; return only the last position's logits.
    (void)params, (void)config, (void)prompt, (void)cache;
    WB_STUB();
}

Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache) {
    // Hint: the same helper with n = 1 and start = cache.length. Which wpe row does the new
    // token get? Which layer's cache does layer l read? Do not forget to advance length.
    (void)params, (void)config, (void)tokens, (void)cache;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
