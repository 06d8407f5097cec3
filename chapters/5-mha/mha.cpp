// Chapter 5 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in mha.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter5  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 5  /  tools/workbook watch 5
#include "5-mha/mha.hpp"

#include <xtensor/xview.hpp>

#include "1-tensors/tensors.hpp"

namespace wb {
inline namespace WB_IMPL {

MhaParams init_mha(std::size_t D, std::size_t H, bool bias, std::uint32_t seed) {
    // Spec: mha.hpp, @throws first. Guide §1 (the four projections).
    (void)D, (void)H, (void)bias, (void)seed;
    WB_STUB();
}

MhaResult multi_head_attention(const Tensor3& x_q, const Tensor3& x_kv, const MhaParams& p,
                               const std::optional<Mask>& mask) {
    // Spec: mha.hpp, @throws first. Guide §2 (the full tensor flow) and §3 (where Q and K/V come
    // from).
    (void)x_q, (void)x_kv, (void)p, (void)mask;
    WB_STUB();
}

MhaResult self_attention(const Tensor3& x, const MhaParams& p, const std::optional<Mask>& mask) {
    // Spec: mha.hpp, @throws first. Guide §3.
    (void)x, (void)p, (void)mask;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
