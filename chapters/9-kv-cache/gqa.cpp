// Chapter 9, extra exercise — your implementation of grouped-query attention. Replace each
// WB_STUB() with the body; the spec of every function is its comment in gqa.hpp, the ideas are
// in README.md ("Extra: grouped-query attention").
// Check your work with:  ctest --preset student -L chapter9  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 9  /  tools/workbook watch 9
#include "9-kv-cache/gqa.hpp"

namespace wb {
inline namespace WB_IMPL {

Heads<float> gqa_attention(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                           bool causal) {
    // Spec: gqa.hpp, @throws first. Guide: Extra, grouped-query attention (which K/V head a Query
    // head reads; the mask with history).
    (void)q, (void)k, (void)v, (void)causal;
    WB_STUB();
}

std::size_t gqa_cache_elements(const GptConfig& config, std::size_t H_kv, std::size_t B) {
    // Spec: gqa.hpp, @throws first. Guide: Extra, grouped-query attention.
    (void)config, (void)H_kv, (void)B;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
