// Chapter 1 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in tensors.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter1  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 1  /  tools/workbook watch 1
#include "1-tensors/tensors.hpp"

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor2 last_token(const Tensor3& x) {
    // Hint: xt::view(x, xt::all(), T - 1, xt::all()) — an integer index drops the axis.
    // Refuse T == 0 first: T - 1 on a std::size_t would wrap around.
    (void)x;
    WB_STUB();
}

Tensor3 last_token_keep(const Tensor3& x) {
    // Hint: xt::range(T - 1, T) keeps the axis, with size 1.
    (void)x;
    WB_STUB();
}

Tensor3 drop_last_token(const Tensor3& x) {
    // Hint: x[:, :-1, :] is the range 0 .. T - 2 of axis 1, i.e. xt::range(0, T - 1).
    (void)x;
    WB_STUB();
}

Tensor4 split_heads(const Tensor3& x, std::size_t H) {
    // Hint: reshape to [B, T, H, d], then xt::transpose(..., {0, 2, 1, 3}).
    // xt::reshape_view(x, Shape{...}) reshapes; include <xtensor/xmanipulation.hpp>.
    (void)x, (void)H;
    WB_STUB();
}

Tensor3 merge_heads(const Tensor4& x) {
    // Hint: the steps of split_heads in reverse. Store the transposed tensor in a Tensor4
    // (a fresh row-major copy) before you reshape it.
    (void)x;
    WB_STUB();
}

Tensor4 transpose_last2(const Tensor4& k) {
    // Hint: xt::transpose takes the new order of the axes; without one it reverses them all.
    (void)k;
    WB_STUB();
}

float dot(const Tensor1& q, const Tensor1& k) {
    // Hint: multiply element by element, add up. Check the lengths first.
    (void)q, (void)k;
    WB_STUB();
}

Tensor4 matmul(const Tensor4& a, const Tensor4& b) {
    // Hint: loop over (b, h) and multiply the 2-D slices, e.g. with xt::linalg::dot
    // (include <xtensor-blas/xlinalg.hpp>; it returns an xarray: assign it to a Tensor2).
    (void)a, (void)b;
    WB_STUB();
}

Array softmax(const Array& x) {
    // Hint: evaluate the row maximum into a tensor before subtracting it (see README.md).
    (void)x;
    WB_STUB();
}

Array mean(const Array& x, int axis, bool keepdims) {
    // Hint: turn a negative axis into axis + rank first; xt::mean(x, {axis}) reduces one axis.
    (void)x, (void)axis, (void)keepdims;
    WB_STUB();
}

Array var(const Array& x, int axis, int correction, bool keepdims) {
    // Hint: sum of (x - mean)^2 along the axis, divided by n - correction.
    (void)x, (void)axis, (void)correction, (void)keepdims;
    WB_STUB();
}

Array cat(const std::vector<Array>& xs, int axis) {
    // Hint: row-major memory seen as [outer, n_i, inner]: for each outer index, copy one block
    // of every input in turn.
    (void)xs, (void)axis;
    WB_STUB();
}

Array stack(const std::vector<Array>& xs, int axis) {
    // Hint: give every input a new axis of size 1 (xt::expand_dims), then cat along it.
    (void)xs, (void)axis;
    WB_STUB();
}

float max_abs_diff(const Array& a, const Array& b) {
    // Hint: std::max(m, NaN) returns m: test for NaN yourself.
    (void)a, (void)b;
    WB_STUB();
}

bool allclose(const Array& a, const Array& b, float rtol, float atol) {
    // Hint: element by element; decide what NaN and infinities give before the tolerance test.
    (void)a, (void)b, (void)rtol, (void)atol;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
