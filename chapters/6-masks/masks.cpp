// Chapter 6 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in masks.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter6  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 6  /  tools/workbook watch 6
#include "6-masks/masks.hpp"

namespace wb {
inline namespace WB_IMPL {

Mask causal_mask(std::size_t T) {
    // Spec: masks.hpp, @throws first. Guide §2 (§12's table).
    (void)T;
    WB_STUB();
}

Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t N, std::size_t M) {
    // Spec: masks.hpp, @throws first. Guide §3 (which axis the lengths cut).
    (void)lengths, (void)N, (void)M;
    WB_STUB();
}

Mask combine_masks(const Mask& a, const Mask& b) {
    // Spec: masks.hpp, @throws first. Guide §4.
    (void)a, (void)b;
    WB_STUB();
}

Mask causal_padding_mask(const std::vector<std::size_t>& lengths, std::size_t T) {
    // Spec: masks.hpp, @throws first. Guide §4.
    (void)lengths, (void)T;
    WB_STUB();
}

Mask from_forbidden(const xt::xtensor<bool, 3>& forbidden) {
    // Spec: masks.hpp, @throws first. Guide §5 (which way round).
    (void)forbidden;
    WB_STUB();
}

std::vector<std::size_t> fully_masked_rows(const Mask& m, std::size_t b) {
    // Spec: masks.hpp, @throws first. Guide §6.
    (void)m, (void)b;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
