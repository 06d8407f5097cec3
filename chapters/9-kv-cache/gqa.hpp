/// @file gqa.hpp
/// @brief Chapter 9, extra exercise — grouped-query attention (GQA): fewer K/V heads than
/// query heads, so the KV cache shrinks.
///
/// The notes' §16–§17 remark that the real size of the cache depends on the architecture:
/// in GQA several query heads share one K/V head, so each layer caches `H_kv < H` heads
/// instead of H. Multi-query attention (MQA) is the extreme `H_kv = 1`; ordinary multi-head
/// attention (MHA, the rest of this chapter) is `H_kv = H`.
///
/// Shapes: B sequences, H query heads, H_kv K/V heads (H_kv divides H), T queries, M keys,
/// d the width of one head.
#pragma once

#include <cstddef>

#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @addtogroup chapter9
/// @{

/// Grouped-query attention: scaled dot-product attention where each K/V head serves a group
/// of `G = H / H_kv` consecutive query heads. Query head h reads K/V head `h / G`:
/// ```
///   q [B, H, T, d]      query heads  0 .. G-1 | G .. 2G-1 | ... | H-G .. H-1
///   k, v [B, H_kv, M, d]  K/V head        0     |     1      | ... |   H_kv-1
///
///   out[b, h] = softmax(q[b, h] · k[b, h / G]ᵀ / sqrt(d)) · v[b, h / G]      [T, d]
/// ```
/// Query head h reads K/V head `h / G` (consecutive groups, not `h % H_kv`), the scores are
/// scaled by 1 / sqrt(d) and the softmax is shifted by its maximum (large scores stay
/// finite). <!-- clause: gqa_attention.grouped-heads -->
/// With `causal`, the T queries are the **last** T of the M positions (what decode with a
/// cache needs: M - T positions of history, then the T new tokens), so query t may see the
/// keys `j <= t + (M - T)`; later keys get weight exactly 0.
/// <!-- clause: gqa_attention.causal-with-history -->
/// With T == M this is the usual causal mask `j <= t`. Without `causal`, every query sees every
/// key, also when
/// T > M. <!-- clause: gqa_attention.no-mask -->
/// @param q `[B, H, T, d]` queries, H query heads
/// @param k `[B, H_kv, M, d]` keys, H_kv heads, H_kv divides H
/// @param v `[B, H_kv, M, d]` values, the same shape as k
/// @param causal hide the keys after each query's own position (requires T <= M)
/// @return `[B, H, T, d]`: for each query head, the weighted average of its group's
///         values <!-- clause: gqa_attention.output-shape -->
/// @throws ShapeError if any axis of q, k or v is 0 (the message names "wb::gqa_attention"
///         and the shapes) <!-- clause: gqa_attention.empty-axis -->
/// @throws ShapeError if k and v differ in shape, or q and k differ in B or in d (the message
///         names "wb::gqa_attention" and the shapes) <!-- clause: gqa_attention.shape-mismatch -->
/// @throws ShapeError if H_kv does not divide H (the message names "wb::gqa_attention" and
///         the shapes) <!-- clause: gqa_attention.heads-not-grouped -->
/// @throws ShapeError if causal with T > M (the message names "wb::gqa_attention" and the
///         shapes) <!-- clause: gqa_attention.causal-too-few-keys -->
Heads<float> gqa_attention(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                           bool causal);

/// The number of floats in a full GQA cache: K and V, in each of L layers, for B sequences
/// of T_max positions, but only H_kv heads of width d = D / H per position:
/// ```
///   elements = 2 · L · B · T_max · H_kv · d
/// ```
/// It is kv_cache_elements() divided by `H / H_kv` (H_kv == H gives exactly the MHA cache).
/// @param config the model's shape (L, T_max, D, H are used)
/// @param H_kv number of K/V heads, a divisor of config.H
/// @param B number of sequences
/// @return `2·L·B·T_max·H_kv·(D / H)` <!-- clause: gqa_cache_elements.formula -->
/// @throws ValueError if config.H is 0 or does not divide config.D (the message names
///         "wb::gqa_cache_elements", D and H) <!-- clause: gqa_cache_elements.bad-h -->
/// @throws ValueError if H_kv is 0 or does not divide H (the message names
///         "wb::gqa_cache_elements", H_kv and H) <!-- clause: gqa_cache_elements.bad-h-kv -->
std::size_t gqa_cache_elements(const GptConfig& config, std::size_t H_kv, std::size_t B);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
