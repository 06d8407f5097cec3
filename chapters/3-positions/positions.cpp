// Chapter 3 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in positions.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter3  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 3  /  tools/workbook watch 3
#include "3-positions/positions.hpp"

#include <cmath>

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor2 sinusoidal_positions(std::size_t T, std::size_t D) {
    // Spec: positions.hpp, @throws first. Guide §2.
    (void)T, (void)D;
    WB_STUB();
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& table, std::int64_t offset) {
    // Spec: positions.hpp, @throws first. Guide §3 (offset, broadcasting over B).
    (void)x, (void)table, (void)offset;
    WB_STUB();
}

Tensor4 apply_rope(const Tensor4& x, std::int64_t offset, float base) {
    // Spec: positions.hpp, @throws first. Guide §4 (which pairs, which angle, which sign).
    (void)x, (void)offset, (void)base;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
