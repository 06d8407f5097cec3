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
    // Hint: std::mt19937 gen(seed); std::normal_distribution<float> normal(0, 1);
    // fill a [V, D] tensor element by element (for (auto& v : table) v = normal(gen);).
    (void)V, (void)D, (void)seed;
    WB_STUB();
}

Linear init_linear(std::size_t in, std::size_t out, bool bias, std::uint32_t seed) {
    // Hint: the bound is 1/sqrt(in) — the fan-in, not out. Weight [out, in] first, then bias.
    (void)in, (void)out, (void)bias, (void)seed;
    WB_STUB();
}

Tensor3 embed(const Tensor2& table, const TokenIds& ids) {
    // Hint: check every id BEFORE you read with it, then copy a ROW:
    // xt::view(out, b, t, xt::all()) = xt::view(table, id, xt::all());
    (void)table, (void)ids;
    WB_STUB();
}

Tensor2 linear(const Tensor2& x, const Linear& layer) {
    // Hint: xt::linalg::dot(x, xt::transpose(layer.weight)) gives [N, out]; then add the bias
    // to every row (xt::view(layer.bias, xt::newaxis(), xt::all()) has shape [1, out]).
    (void)x, (void)layer;
    WB_STUB();
}

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    // Hint: xt::reshape_view(x, {B * T, in}) is [B*T, in]: one row per token. Multiply it like
    // the 2-D case, then reshape the result to [B, T, out].
    (void)x, (void)layer;
    WB_STUB();
}

Tensor3 lm_head(const Tensor3& h, const Linear& head) {
    // Hint: this is a Linear from D to V; the error messages must say wb::lm_head.
    (void)h, (void)head;
    WB_STUB();
}

Tensor2 next_token_logits(const Tensor3& h, const Linear& head) {
    // Hint: take h[:, -1, :] (xt::view(h, xt::all(), T - 1, xt::all()) is [B, D]) and project
    // only that.
    (void)h, (void)head;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
