// Chapter 4 — your implementation. Replace each WB_STUB() with the body; the spec of every
// function is its comment in sdpa.hpp, the ideas are in README.md.
// Check your work with:  ctest --preset student -L chapter4  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 4  /  tools/workbook watch 4
#include "4-sdpa/sdpa.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor4 attention_scores(const Tensor4& q, const Tensor4& k) {
    // Hint: check B, H and d_k of q and k first (and d_k >= 1); the message names
    // "wb::attention_scores" and both shapes (shape_str(q.shape())).
    // Then for every (b, h): xt::view(q, b, h, xt::all(), xt::all()) is [N, d_k];
    // xt::linalg::dot(qh, xt::transpose(kh)) is [N, M]. Divide by sqrt(d_k) = sqrt(q.shape(3)),
    // the width of ONE head.
    (void)q, (void)k;
    WB_STUB();
}

Tensor4 masked_softmax(const Tensor4& scores, const std::optional<Mask>& mask) {
    // Hint: copy the scores; where mask->allowed(b or 0, i, j) is false, write -infinity
    // (std::numeric_limits<float>::infinity()) — BEFORE the softmax. Then a stable softmax
    // over the last axis: subtract the row maximum, exp, divide by the row sum. A row whose
    // maximum is -inf has every key hidden: give it all-zero weights, not NaN.
    // Beware the keep_dims trap (README.md): store each reduction in a tensor before using it.
    (void)scores, (void)mask;
    WB_STUB();
}

Tensor4 weighted_sum(const Tensor4& weights, const Tensor4& v) {
    // Hint: check B, H and M; then for every (b, h): out[b, h] = weights[b, h] · v[b, h],
    // an [N, M] by [M, d_v] product (xt::linalg::dot returns an xarray: assign it to a Tensor2).
    (void)weights, (void)v;
    WB_STUB();
}

Attention sdpa(const Tensor4& q, const Tensor4& k, const Tensor4& v,
               const std::optional<Mask>& mask) {
    // Hint: check all the shapes first (message names "wb::sdpa" and q's, k's and v's
    // shapes, and the mask's if it is wrong), then chain the three functions above.
    (void)q, (void)k, (void)v, (void)mask;
    WB_STUB();
}

}  // namespace WB_IMPL
}  // namespace wb
