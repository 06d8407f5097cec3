/// @file mha.hpp
/// @brief Chapter 5 — multi-head attention: H ways of matching, run in parallel, then mixed.
///
/// Notes §10, §11, §13 and §18: the input is projected to Q, K and V (`[B, T, D]` each), the
/// model width D is split into H heads of width d = D / H (`[B, H, T, d]`), every head runs
/// scaled dot-product attention on its own, the heads are merged back to `[B, T, D]` and the
/// output projection W_O mixes them. Self attention reads one sequence; cross attention takes
/// the queries from one sequence (N tokens) and the keys and values from another (M tokens).
/// Axes: B batch, N query positions, M key/value positions, D model width, H heads, d = D / H.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "2-embedding/embedding.hpp"
#include "4-sdpa/sdpa.hpp"
#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter5 Chapter 5: multi-head attention
/// @{

/// The parameters of multi-head attention, in PyTorch's layout (every weight is `[out, in]`).
///
/// All four projections map D features to D features. Head h owns rows `h*d : (h+1)*d` of
/// `w_q`, `w_k` and `w_v` (the features of its Q, K and V) and columns `h*d : (h+1)*d` of
/// `w_o` (the part of the output projection that reads its result). Each of those rows has
/// all D input columns: every head reads the whole input (§10).
/// <!-- clause: multi_head_attention.head-slices -->
///
/// `torch.nn.MultiheadAttention` packs the first three into one `in_proj_weight [3D, D]` =
/// `[W_Q; W_K; W_V]` (and `in_proj_bias [3D]`); its `out_proj` is `w_o`.
struct MhaParams {
    std::size_t H = 0;  ///< number of heads; must divide D, each head has width d = D / H
    Linear w_q;         ///< query projection: weight `[D, D]`, bias `[D]` or empty
    Linear w_k;         ///< key projection: weight `[D, D]`, bias `[D]` or empty
    Linear w_v;         ///< value projection: weight `[D, D]`, bias `[D]` or empty
    Linear w_o;         ///< output projection: weight `[D, D]`, bias `[D]` or empty
};

/// What multi-head attention returns: the output and every head's weights.
struct MhaResult {
    Tensor3 output;   ///< `[B, N, D]`: one row per query, after the output projection
    Tensor4 weights;  ///< `[B, H, N, M]`: head h's distribution of query i over the keys
                      ///< (per head, **not** averaged over the heads as torch does by default)
};

/// Fresh parameters for multi-head attention, like `nn.MultiheadAttention(D, H, bias=bias)`.
///
/// Each projection is `init_linear(D, D, bias, s)` of chapter 2 with its own seed:
/// `w_q` uses `seed`, `w_k` `seed + 1`, `w_v` `seed + 2` and `w_o` `seed + 3` (in uint32
/// arithmetic: seed + 1 of 2^32 - 1 is 0). <!-- clause: init_mha.seeds -->
/// @param D model width (in and out of every projection)
/// @param H number of heads; must divide D
/// @param bias whether the four projections have a bias
/// @param seed seed of the first projection (see above)
/// @return `H` and four `[D, D]` projections (biases `[D]`, or empty when `bias` is false)
///         <!-- clause: init_mha.shapes -->
/// @throws ShapeError naming wb::init_mha if D == 0, H == 0 or D % H != 0 (the message names D
///         and H) <!-- clause: init_mha.bad-heads -->
MhaParams init_mha(std::size_t D, std::size_t H, bool bias, std::uint32_t seed);

/// Multi-head attention (§10–§11):
/// \f[
///   \mathrm{MHA}(X_q, X_{kv}) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)\,W_O^\top,
///   \qquad
///   \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d}} + \text{mask}\right) V_h
/// \f]
/// with \f$Q = X_q W_Q^\top\f$, \f$K = X_{kv} W_K^\top\f$, \f$V = X_{kv} W_V^\top\f$ (plus the
/// biases), each split into H heads of width d = D / H.
///
/// Steps: project (chapter 2's `linear`), split heads (chapter 1's `split_heads`), attend in
/// every head at once (chapter 4's `sdpa`, scaled by √d, the width of ONE head), merge heads
/// (`merge_heads`), output projection `w_o`. <!-- clause: multi_head_attention.formula -->
/// @param x_q the queries' sequence `[B, N, D]`
/// @param x_kv the keys' and values' sequence `[B, M, D]`; pass x_q again for self attention,
///        another sequence for cross attention (§13) <!-- clause: multi_head_attention.cross -->
/// @param p the parameters; `p.H` heads
/// @param mask optional; `allowed` of shape `[B, N, M]` or `[1, N, M]`, true = query i may
///        read key j (chapter 4's convention, the opposite of nn.MultiheadAttention's boolean
///        `attn_mask`); every head uses the same pattern <!-- clause: multi_head_attention.mask -->
/// @return output `[B, N, D]` and the weights of every head `[B, H, N, M]`, per head, not
///         averaged <!-- clause: multi_head_attention.weights-per-head -->
/// @throws ShapeError (the message names wb::multi_head_attention and the shapes) if
///   - the parameters are inconsistent: H == 0, a weight that is not `[D, D]` (D taken from
///     `w_q`'s input width), D == 0, D % H != 0, or a bias whose size is neither 0 nor D (a
///     bad weight or bias: the message names its projection, `w_q`, `w_k`, `w_v` or `w_o`);
///     <!-- clause: multi_head_attention.bad-params -->
///   - x_q's or x_kv's last axis is not D; <!-- clause: multi_head_attention.bad-width -->
///   - x_q and x_kv have different batch sizes B; <!-- clause: multi_head_attention.batch-mismatch -->
///   - B, N or M is 0 (there is nothing to attend to); <!-- clause: multi_head_attention.empty -->
///   - the mask's shape is not `[B, N, M]` or `[1, N, M]` (the message names `mask`).
///     <!-- clause: multi_head_attention.mask-shape -->
MhaResult multi_head_attention(const Tensor3& x_q, const Tensor3& x_kv, const MhaParams& p,
                               const std::optional<Mask>& mask = std::nullopt);

/// Multi-head self attention: Q, K and V all come from x (§13).
///
/// Exactly `multi_head_attention(x, x, p, mask)`; its weights are `[B, H, T, T]`.
/// <!-- clause: self_attention.same-as-mha -->
/// @param x `[B, T, D]`
/// @param p the parameters; `p.H` heads
/// @param mask optional; `allowed` of shape `[B, T, T]` or `[1, T, T]` (e.g. a causal mask)
/// @return output `[B, T, D]` and weights `[B, H, T, T]`
/// @throws ShapeError as multi_head_attention (its messages name wb::multi_head_attention)
///         <!-- clause: self_attention.errors -->
MhaResult self_attention(const Tensor3& x, const MhaParams& p,
                         const std::optional<Mask>& mask = std::nullopt);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
