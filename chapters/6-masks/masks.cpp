// Chapter 6 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in masks.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter6  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 6  /  tools/workbook watch 6
#include "6-masks/masks.hpp"

namespace wb {
inline namespace WB_IMPL {

Mask causal_mask(std::size_t T) {
    // Hint: Mask m{xt::xtensor<bool, 3>::from_shape({1, T, T})} is uninitialised: set every
    // allowed(0, i, j). Is the diagonal (j == i) allowed? Read §12's table once more.
    (void)T;
    WB_STUB();
}

Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t N, std::size_t M) {
    // Hint: check the arguments first (see @throws). Which axis do the lengths cut:
    // the query axis i or the key axis j?
    (void)lengths, (void)N, (void)M;
    WB_STUB();
}

Mask combine_masks(const Mask& a, const Mask& b) {
    // Hint: the output batch is max(B_a, B_b); a mask of batch 1 is read at index 0 for
    // every sequence.
    (void)a, (void)b;
    WB_STUB();
}

Mask causal_padding_mask(const std::vector<std::size_t>& lengths, std::size_t T) {
    // Hint: build it from the two functions above, but report errors under this function's name.
    (void)lengths, (void)T;
    WB_STUB();
}

Mask from_forbidden(const xt::xtensor<bool, 3>& forbidden) {
    // Hint: one element-wise operation.
    (void)forbidden;
    WB_STUB();
}

std::vector<std::size_t> fully_masked_rows(const Mask& m, std::size_t b) {
    // Hint: a row is fully masked when NO key of it is allowed (not when some key is hidden).
    (void)m, (void)b;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
