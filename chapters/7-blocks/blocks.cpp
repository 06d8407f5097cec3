// Chapter 7 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in blocks.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter7  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 7  /  tools/workbook watch 7
#include "7-blocks/blocks.hpp"

#include <cmath>
#include <string>

#include <xtensor/xmath.hpp>

#include "1-tensors/tensors.hpp"

namespace wb {
inline namespace WB_IMPL {

LayerNormParams init_layer_norm(std::size_t D) {
    // Hint: D == 0 is a ShapeError naming "wb::init_layer_norm". Then gamma = xt::ones<float>({D}),
    // beta = xt::zeros<float>({D}), eps = 1e-5f.
    (void)D;
    WB_STUB();
}

Tensor3 layer_norm(const Tensor3& x, const LayerNormParams& p) {
    // Hint: check D >= 1, gamma and beta [D], eps > 0 (see @throws). Then, per token, over the
    // LAST axis only: mean and variance with correction 0 (chapter 1's mean(xa, -1, true) and
    // var(xa, -1, 0, true) give [B, T, 1]), (x - mean) / sqrt(var + eps), then * gamma + beta.
    // xtensor trap: never broadcast a lazy xt::mean(..., xt::keep_dims) inside an expression.
    (void)x, (void)p;
    WB_STUB();
}

Tensor3 rms_norm(const Tensor3& x, const Tensor1& gamma, float eps) {
    // Hint: like layer_norm without the mean and without beta: x / sqrt(mean(x * x) + eps) * gamma.
    (void)x, (void)gamma, (void)eps;
    WB_STUB();
}

Tensor3 gelu(const Tensor3& x) {
    // Hint: element-wise 0.5 * v * (1 + std::erf(v / sqrt(2))). Copy x, then loop over it.
    (void)x;
    WB_STUB();
}

Tensor3 gelu_tanh(const Tensor3& x) {
    // Hint: element-wise 0.5 * v * (1 + std::tanh(sqrt(2 / pi) * (v + 0.044715 * v^3))).
    (void)x;
    WB_STUB();
}

FfnParams init_ffn(std::size_t D, std::size_t hidden, std::uint32_t seed) {
    // Hint: check D and hidden; up = init_linear(D, hidden, true, seed),
    // down = init_linear(hidden, D, true, seed + 1).
    (void)D, (void)hidden, (void)seed;
    WB_STUB();
}

Tensor3 ffn(const Tensor3& x, const FfnParams& p) {
    // Hint: check that up is [hidden, D] and down is [D, hidden] (and the biases) yourself, so
    // the message names wb::ffn. Then linear(x, p.up) -> gelu -> linear(..., p.down).
    (void)x, (void)p;
    WB_STUB();
}

Tensor3 swiglu_ffn(const Tensor3& x, const SwiGluParams& p) {
    // Hint: g = linear(x, gate), u = linear(x, up), both [B, T, hidden]; then element-wise
    // silu(g) * u with silu(a) = a / (1 + exp(-a)); then linear(..., down).
    (void)x, (void)p;
    WB_STUB();
}

BlockParams init_block(std::size_t D, std::size_t H, std::uint32_t seed) {
    // Hint: check D and H (name "wb::init_block"), then init_layer_norm(D) twice,
    // init_mha(D, H, true, seed) and init_ffn(D, 4 * D, seed + 4).
    (void)D, (void)H, (void)seed;
    WB_STUB();
}

BlockResult block_forward(const Tensor3& x, const BlockParams& p, const std::optional<Mask>& mask) {
    // Hint: check x and the parameters first (names like "ln2.gamma", see @throws). Then
    //   y = x + self_attention(layer_norm(x, ln1), attn, mask).output
    //   z = y + ffn(layer_norm(y, ln2), ffn)
    // and return z with the attention's weights. The LayerNorm goes INSIDE each branch.
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

BlockResult post_ln_block_forward(const Tensor3& x, const BlockParams& p,
                                  const std::optional<Mask>& mask) {
    // Hint: the same pieces, normalising AFTER the residual addition:
    //   y = layer_norm(x + MHA(x), ln1),  z = layer_norm(y + ffn(y), ln2).
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

StackResult stack_forward(const Tensor3& x, const std::vector<BlockParams>& blocks,
                          const LayerNormParams& final_norm, const std::optional<Mask>& mask) {
    // Hint: check x, every block (name them "blocks[l]. ...") and final_norm first. Then
    //   h = x; for each block in order: h = block_forward(h, block, mask).output (keep the weights)
    //   output = layer_norm(h, final_norm).
    (void)x, (void)blocks, (void)final_norm, (void)mask;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
