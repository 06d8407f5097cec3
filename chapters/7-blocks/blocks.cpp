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
    // Spec: blocks.hpp, @throws first. Guide §4.
    (void)D;
    WB_STUB();
}

Tensor3 layer_norm(const Tensor3& x, const LayerNormParams& p) {
    // Spec: blocks.hpp, @throws first. Guide §4 (per token, over the features). Mind the keep_dims
    // trap (chapter 1's guide: Toolchain traps).
    (void)x, (void)p;
    WB_STUB();
}

Tensor3 rms_norm(const Tensor3& x, const Tensor1& gamma, float eps) {
    // Spec: blocks.hpp, @throws first. Guide §4.
    (void)x, (void)gamma, (void)eps;
    WB_STUB();
}

Tensor3 gelu(const Tensor3& x) {
    // Spec: blocks.hpp, @throws first. Guide §5.
    (void)x;
    WB_STUB();
}

Tensor3 gelu_tanh(const Tensor3& x) {
    // Spec: blocks.hpp, @throws first. Guide §5.
    (void)x;
    WB_STUB();
}

FfnParams init_ffn(std::size_t D, std::size_t hidden, std::uint32_t seed) {
    // Spec: blocks.hpp, @throws first. Guide §6.
    (void)D, (void)hidden, (void)seed;
    WB_STUB();
}

Tensor3 ffn(const Tensor3& x, const FfnParams& p) {
    // Spec: blocks.hpp, @throws first. Guide §6.
    (void)x, (void)p;
    WB_STUB();
}

Tensor3 swiglu_ffn(const Tensor3& x, const SwiGluParams& p) {
    // Spec: blocks.hpp, @throws first. Guide §6.
    (void)x, (void)p;
    WB_STUB();
}

BlockParams init_block(std::size_t D, std::size_t H, std::uint32_t seed) {
    // Spec: blocks.hpp, @throws first. Guide §2.
    (void)D, (void)H, (void)seed;
    WB_STUB();
}

BlockResult block_forward(const Tensor3& x, const BlockParams& p, const std::optional<Mask>& mask) {
    // Spec: blocks.hpp, @throws first. Guide §2 and §3 (where the LayerNorm and the residual go).
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

BlockResult post_ln_block_forward(const Tensor3& x, const BlockParams& p,
                                  const std::optional<Mask>& mask) {
    // Spec: blocks.hpp, @throws first. Guide §7.
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

StackResult stack_forward(const Tensor3& x, const std::vector<BlockParams>& blocks,
                          const LayerNormParams& final_norm, const std::optional<Mask>& mask) {
    // Spec: blocks.hpp, @throws first. Guide §8.
    (void)x, (void)blocks, (void)final_norm, (void)mask;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
