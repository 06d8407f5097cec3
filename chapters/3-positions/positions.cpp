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
    // Hint: check D first. Then two loops: over the pairs i (ω_i = pow(10000.0, -2.0 * i / D))
    // and over the positions p; column 2i gets sin(p·ω_i), column 2i+1 gets cos(p·ω_i).
    // Compute p·ω_i in double and cast only the sine and cosine to float.
    (void)T, (void)D;
    WB_STUB();
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& table, std::int64_t offset) {
    // Hint: check D, offset >= 0 and offset + T <= T_max, in that order. Then
    // xt::view(table, xt::range(offset, offset + T), xt::all()) is [T, D], and x + rows
    // broadcasts it over the batch axis.
    (void)x, (void)table, (void)offset;
    WB_STUB();
}

Tensor4 apply_rope(const Tensor4& x, std::int64_t offset, float base) {
    // Hint: check d, offset and base. The angle (offset + t)·θ_i with θ_i = base^(-2i/d)
    // depends on (t, i) only: compute cos and sin of it once (in double), then loop over
    // b, h, t, i and rotate the pair (x[2i], x[2i+1]). Read both old values before writing.
    (void)x, (void)offset, (void)base;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
