/// @file sdpa.hpp
/// @brief Chapter 4 — scaled dot-product attention: match, scale, mask, softmax, weighted sum.
///
/// Notes §6–9 and §13: each query is matched with every key, the scores are scaled by
/// \f$\sqrt{d_k}\f$, masked, turned into weights by a softmax over the keys, and the weights
/// sum the values. Shapes: B batch, H heads, N queries, M keys/values, d_k the width of a query
/// and a key, d_v the width of a value.
#pragma once

#include <cstddef>
#include <optional>

#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter4 Chapter 4: scaled dot-product attention
/// @{

/// Which keys each query may read. The convention is in the name: `allowed(b, i, j) == true`
/// means query i of sequence b **may read** key j; `false` means the key is hidden from it.
/// <!-- clause: masked_softmax.allowed-means-readable -->
///
/// (PyTorch's `masked_fill(mask, -inf)` uses the opposite convention — true = hidden — and
/// `scaled_dot_product_attention`'s boolean `attn_mask` uses this one. A type with a named
/// field removes the guesswork.)
struct Mask {
    /// `[B, N, M]`, or `[1, N, M]` to share one pattern across the batch
    /// <!-- clause: masked_softmax.shared-mask -->; every head of a sequence uses the same
    /// pattern. <!-- clause: masked_softmax.heads-share-pattern -->
    xt::xtensor<bool, 3> allowed;
};

/// What attention returns: the output and the weights that produced it.
struct Attention {
    Tensor4 output;   ///< `[B, H, N, d_v]`: one row per query
    Tensor4 weights;  ///< `[B, H, N, M]`: row i is query i's distribution over the keys
};

/// Scaled scores \f$S = QK^\top / \sqrt{d_k}\f$.
/// @param q queries `[B, H, N, d_k]`
/// @param k keys `[B, H, M, d_k]`
/// @return `[B, H, N, M]`, `S[b,h,i,j] = q_i · k_j / sqrt(d_k)` with d_k the width of one head
///         (any d_k ≥ 1, not only a perfect square) <!-- clause: attention_scores.scaled -->
/// @throws ShapeError if B, H or d_k of q and k differ (the message names the function and
///         both shapes) <!-- clause: attention_scores.shape-mismatch -->
/// @throws ShapeError if d_k == 0 (the message names the function and q's shape)
///         <!-- clause: attention_scores.zero-dk -->
Tensor4 attention_scores(const Tensor4& q, const Tensor4& k);

/// Softmax over the key axis <!-- clause: masked_softmax.over-keys --> with a mask applied
/// **before** it: hidden keys get score \f$-\infty\f$, so they get weight exactly 0 and the
/// readable keys' weights sum to 1, whatever the readable and the hidden scores are (finite
/// scores of any size). <!-- clause: masked_softmax.hidden-zero -->
///
/// A query that may read no key at all (a fully masked row) would give 0/0 = NaN; here it
/// gets all-zero weights instead (and so, in sdpa, a zero output row).
/// <!-- clause: masked_softmax.fully-masked-zero -->
/// @param scores `[B, H, N, M]`
/// @param mask optional; `allowed` of shape `[B, N, M]` or `[1, N, M]`
/// @return `[B, H, N, M]` weights: each row sums to 1 over its readable keys, or is all 0
/// @throws ShapeError if the mask's shape does not match the scores (the message names the
///         function, the mask's shape and the scores' shape) <!-- clause: masked_softmax.mask-shape -->
Tensor4 masked_softmax(const Tensor4& scores, const std::optional<Mask>& mask = std::nullopt);

/// The weighted sum \f$O = AV\f$.
/// @param weights `[B, H, N, M]`
/// @param v values `[B, H, M, d_v]`
/// @return `[B, H, N, d_v]`, `O[b,h,i,:] = Σ_j weights[b,h,i,j] · v[b,h,j,:]`
///         <!-- clause: weighted_sum.product -->
/// @throws ShapeError if B, H or M differ (the message names the function and both shapes)
///         <!-- clause: weighted_sum.shape-mismatch -->
Tensor4 weighted_sum(const Tensor4& weights, const Tensor4& v);

/// Scaled dot-product attention
/// \f$\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(QK^\top/\sqrt{d_k} + \text{mask}\right)V\f$.
/// @param q `[B, H, N, d_k]`
/// @param k `[B, H, M, d_k]`
/// @param v `[B, H, M, d_v]` (d_v may differ from d_k)
/// @param mask optional, see masked_softmax; a fully masked query gets zero weights and output
///        <!-- clause: sdpa.fully-masked-zero -->
/// @return output `[B, H, N, d_v]` and weights `[B, H, N, M]`: the weights are
///         masked_softmax(attention_scores(q, k), mask) and the output weighted_sum(weights, v)
///         <!-- clause: sdpa.composition -->
/// @throws ShapeError naming wb::sdpa if the shapes do not fit together: B or H not the same
///         in q, k and v, d_k not the same in q and k, M not the same in k and v (the message
///         names the function and the shapes of q, k and v) <!-- clause: sdpa.shape-mismatch -->
/// @throws ShapeError naming wb::sdpa if the mask does not fit them, `[B, N, M]` or `[1, N, M]`
///         (the message names the function and the mask's shape) <!-- clause: sdpa.mask-shape -->
Attention sdpa(const Tensor4& q, const Tensor4& k, const Tensor4& v,
               const std::optional<Mask>& mask = std::nullopt);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
