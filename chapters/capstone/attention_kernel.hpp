/// @file attention_kernel.hpp
/// @brief Capstone — a fast causal attention kernel on raw buffers, forward and backward,
/// parallel with OpenMP, beside the readable reference attention of chapters 4–8.
///
/// The notes' §17 (FlashAttention does not change the arithmetic of attention, it changes the
/// memory traffic: the `T × T` score matrix is never written to memory) taught as code: an
/// online softmax (running max and running sum) per query row, only the keys `j ≤ i` of a
/// causal row, and a backward that recomputes the weights from the saved per-row
/// log-sum-exp instead of storing them.
///
/// Memory layout: every tensor is a contiguous row-major `float` buffer. For `[B, H, T, d]`
/// the element `(b, h, t, c)` is at `((b·H + h)·T + t)·d + c`; for `[B, H, T]` the element
/// `(b, h, t)` is at `(b·H + h)·T + t`. <!-- clause: attention_forward.layout -->
/// Buffers never alias each other (not a promise: the caller's duty; an aliased call is
/// undefined).
#pragma once

#include <cstddef>

#include "8-training/layers.hpp"
#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup capstone Capstone: the attention kernel
/// @{

/// Shapes of one causal self-attention call: q, k, v, out are `[B, H, T, d]` row-major.
struct AttentionShape {
    std::size_t B;  ///< batch size (independent sequences)
    std::size_t H;  ///< number of heads
    std::size_t T;  ///< sequence length (queries and keys alike: self-attention)
    std::size_t d;  ///< head width
};

/// Forward: `out = softmax(q kᵀ / sqrt(d), causal) v`, computed per (b, h, query row i) with
/// an online softmax (running max m and running sum l, FlashAttention-style) <!-- clause: attention_forward.output -->: no `T × T`
/// buffer is ever made (not a promise a check can see: memory), and the keys and values at
/// `j > i` never change row i of out or lse while they are finite, however large
/// <!-- clause: attention_forward.causal --> (not a promise: that they are never read; a tiled
/// kernel may read the diagonal block whole and give its later keys weight 0, so a NaN or an
/// infinity there can reach row i as 0 · NaN).
///
/// Parallel with OpenMP; every output element is computed by one thread in a fixed order, so
/// the result is bit-identical for any thread count. <!-- clause: attention_forward.deterministic --> Also writes the
/// per-row log-sum-exp `lse[b,h,i] = m + log(l)` of the scaled scores, which the backward uses
/// to recompute the weights `P_ij = exp(s_ij − lse_i)`. <!-- clause: attention_forward.lse -->
/// Non-finite or huge inputs are defined behaviour: a NaN in a query gives NaN in that row of
/// out and lse (it is not hidden), an infinite or overflowing score affects only the rows that
/// read it, and the exp of the online softmax handles NaN, ±inf and any finite value. <!-- clause: attention_forward.non-finite -->
/// @param s the shapes; all four must be at least 1
/// @param q `[B, H, T, d]` queries
/// @param k `[B, H, T, d]` keys
/// @param v `[B, H, T, d]` values
/// @param out `[B, H, T, d]` output, assigned: what the buffer held does not matter <!-- clause: attention_forward.out-assigned -->
/// @param lse `[B, H, T]` output, assigned <!-- clause: attention_forward.lse-assigned -->
/// @throws ValueError if any of B, H, T, d is 0 (the message names the function and the four
///         sizes), before any buffer is read <!-- clause: attention_forward.zero-axis -->
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse);

/// Backward of attention_forward: given `dout`, recompute the weights from q, k and lse (no
/// stored `T × T` matrix) and write the gradients. With `P_ij = exp(q_i·k_j / sqrt(d) − lse_i)`
/// for `j ≤ i`: `dv_j = Σ_{i≥j} P_ij dout_i`, `dP_ij = dout_i·v_j`,
/// `D_i = dout_i·out_i`, `dS_ij = P_ij (dP_ij − D_i)`, `dq_i = Σ_{j≤i} dS_ij k_j / sqrt(d)`,
/// `dk_j = Σ_{i≥j} dS_ij q_i / sqrt(d)`. <!-- clause: attention_backward.gradients -->
///
/// Parallel with OpenMP: dk and dv accumulate across query rows, dq across key rows; each
/// element is summed by one thread in a fixed order (no atomics, no shared accumulators), so
/// the result is bit-identical for any thread count. <!-- clause: attention_backward.deterministic -->
/// @param s the shapes; all four must be at least 1
/// @param q, k, v `[B, H, T, d]` the forward's inputs
/// @param out `[B, H, T, d]` the forward's output
/// @param lse `[B, H, T]` the forward's log-sum-exp
/// @param dout `[B, H, T, d]` gradient of the output
/// @param dq, dk, dv `[B, H, T, d]` assigned (not accumulated): what the buffers held does not
///        matter <!-- clause: attention_backward.assigned -->
/// @throws ValueError if any of B, H, T, d is 0 (the message names the function and the four
///         sizes) <!-- clause: attention_backward.zero-axis -->
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                        float* dv);

/// Convenience wrapper: checks the shapes, then calls the raw attention_forward.
/// @param q `[B, H, T, d]`, @param k `[B, H, T, d]`, @param v `[B, H, T, d]`
/// @param lse output, resized to `[B, H, T]` and assigned, whatever its shape before <!-- clause: attention_forward.wrapper-lse-resized -->
/// @return out `[B, H, T, d]`, the raw attention_forward's <!-- clause: attention_forward.wrapper-output -->
/// @throws ShapeError naming "wb::attention_forward" and the shapes if k or v differs from q's
///         shape, or q has an axis of size 0 <!-- clause: attention_forward.wrapper-shape-mismatch -->
Heads<float> attention_forward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                               xt::xtensor<float, 3>& lse);

/// Convenience wrapper: checks the shapes, then calls the raw attention_backward.
/// @param q, k, v, out, dout `[B, H, T, d]`
/// @param lse `[B, H, T]` as written by attention_forward
/// @param dq, dk, dv outputs, resized to `[B, H, T, d]` and assigned, whatever their shapes
///        before <!-- clause: attention_backward.wrapper-outputs-resized -->
/// @throws ShapeError naming "wb::attention_backward" and the shapes if k, v, out or dout
///         differs from q's shape, lse is not `[B, H, T]`, or q has an axis of size 0 <!-- clause: attention_backward.wrapper-shape-mismatch -->
void attention_backward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                        const Heads<float>& out, const xt::xtensor<float, 3>& lse,
                        const Heads<float>& dout, Heads<float>& dq, Heads<float>& dk,
                        Heads<float>& dv);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
