// Chapter 2 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in embedding.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter2  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 2  /  tools/workbook watch 2
#include "2-embedding/embedding.hpp"

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor2 init_embedding(std::size_t V, std::size_t D, std::uint32_t seed) {
    // Spec: embedding.hpp, @throws first. Guide §1.
    (void)V, (void)D, (void)seed;
    WB_STUB();
}

Linear init_linear(std::size_t in, std::size_t out, bool bias, std::uint32_t seed) {
    // Spec: embedding.hpp, @throws first. Guide §2 (the initialisation and its scale).
    (void)in, (void)out, (void)bias, (void)seed;
    WB_STUB();
}

Tensor3 embed(const Tensor2& table, const TokenIds& ids) {
    // Spec: embedding.hpp, @throws first. Guide §1 (a row lookup).
    (void)table, (void)ids;
    WB_STUB();
}

Tensor2 linear(const Tensor2& x, const Linear& layer) {
    // Spec: embedding.hpp, @throws first. Guide §2 (`y = x Wᵀ + b`, on the last axis only).
    (void)x, (void)layer;
    WB_STUB();
}

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    // Spec: embedding.hpp, @throws first. Guide §2 (`y = x Wᵀ + b`, on the last axis only).
    (void)x, (void)layer;
    WB_STUB();
}

Tensor3 lm_head(const Tensor3& h, const Linear& head) {
    // Spec: embedding.hpp, @throws first. Guide §3.
    (void)h, (void)head;
    WB_STUB();
}

Tensor2 next_token_logits(const Tensor3& h, const Linear& head) {
    // Spec: embedding.hpp, @throws first. Guide §3 (generation needs only the last position).
    (void)h, (void)head;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
