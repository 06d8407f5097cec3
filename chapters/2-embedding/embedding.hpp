/// @file embedding.hpp
/// @brief Chapter 2 — embedding and Linear: from token ids to vectors, from vectors to logits.
///
/// The notes' §3 (a token id picks one row of a trainable table), §21.6 (`nn.Embedding` and
/// `nn.Linear`: the weight is stored `[out, in]` and `y = x Wᵀ + b` transforms only the last
/// axis) and §14 (the LM head projects the hidden state of the last position onto the
/// vocabulary). Axes are named as in the notes: B batch, T tokens, D model width, V vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>

#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter2 Chapter 2: embedding and Linear
/// @{

/// A fully connected layer in PyTorch's layout: y = x Wᵀ + b.
///
/// `nn.Linear(in, out)` stores its weight as `[out, in]`: row o holds the in weights that
/// produce output feature o. Later chapters build every projection (W_Q, W_K, W_V, W_O, the
/// FFN and the LM head) from this struct.
struct Linear {
    Tensor2 weight;  ///< `[out, in]` — PyTorch's layout (`nn.Linear(in, out).weight`)
    Tensor1 bias;    ///< `[out]`, or empty (size 0) for a layer without bias
};

// ---- creating the parameters (§21.1, §21.6) -------------------------------------------------

/// A fresh embedding table, like `nn.Embedding(V, D).weight`: every entry drawn from N(0, 1).
///
/// The entries come from `std::normal_distribution<float>(0, 1)` driven by
/// `std::mt19937(seed)`, filled in row-major order (row 0 first).
/// <!-- clause: init_embedding.draw-order --> The same seed gives the same table on the same
/// standard library, another seed another table. <!-- clause: init_embedding.seeded --> (Not a
/// promise: the numbers are not PyTorch's, only their distribution.)
/// @param V vocabulary size (rows)
/// @param D model width (columns)
/// @param seed seed of the `std::mt19937` generator
/// @return `[V, D]`; row i is the vector of token id i
/// @throws ShapeError if V == 0 or D == 0 (the message names V and D)
///         <!-- clause: init_embedding.zero-size -->
/// @throws ShapeError if V·D is more than 2^48 elements (wb::checked_size; the product is
///         checked before anything is allocated) <!-- clause: init_embedding.too-large -->
Tensor2 init_embedding(std::size_t V, std::size_t D, std::uint32_t seed);

/// A fresh fully connected layer, like `nn.Linear(in, out, bias)`.
///
/// Weight and bias entries are drawn from U(-1/√in, 1/√in) — the bound uses the number of
/// *inputs* (the fan-in), as PyTorch does. <!-- clause: init_linear.fan-in-bound --> They come
/// from `std::uniform_real_distribution<float>(-k, k)`, k = 1/√in in float, driven by one
/// `std::mt19937(seed)`: first the weight in row-major order, then the bias.
/// <!-- clause: init_linear.draw-order --> The same seed gives the same layer, another seed
/// another layer. <!-- clause: init_linear.seeded -->
/// @param in number of input features (the last axis of x)
/// @param out number of output features
/// @param bias whether the layer has a bias; without one, `Linear::bias` is empty
///        <!-- clause: init_linear.no-bias -->
/// @param seed seed of the `std::mt19937` generator
/// @return weight `[out, in]`, bias `[out]` (or `[0]` when `bias` is false)
/// @throws ShapeError if in == 0 or out == 0 (the message names in and out)
///         <!-- clause: init_linear.zero-size -->
/// @throws ShapeError if out·in is more than 2^48 elements (wb::checked_size; checked before
///         anything is allocated) <!-- clause: init_linear.too-large -->
Linear init_linear(std::size_t in, std::size_t out, bool bias, std::uint32_t seed);

// ---- lookup (§3) ---------------------------------------------------------------------------

/// `nn.Embedding` forward: `table[ids]`, the row of every token id.
///
/// Equal ids give equal rows; the distance between two ids means nothing.
/// @param table `[V, D]` — row i is the vector of token id i
/// @param ids `[B, T]` — token ids, each in `[0, V)`
/// @return `[B, T, D]` with `out[b, t, :] = table[ids[b, t], :]`. <!-- clause: embed.lookup -->
///         If B or T is 0 the result is the empty tensor `[B, T, D]` (nothing to look up is not
///         an error). <!-- clause: embed.empty-ids -->
/// @throws ShapeError naming wb::embed if the table is empty (V == 0 or D == 0; the message
///         names the table's shape) <!-- clause: embed.empty-table -->
/// @throws ValueError naming wb::embed if an id is negative or ≥ V; the message names the id,
///         its position `[b, t]` and V <!-- clause: embed.id-out-of-range -->
Tensor3 embed(const Tensor2& table, const TokenIds& ids);

// ---- Linear (§21.6) ------------------------------------------------------------------------

/// `nn.Linear` forward on a matrix of rows: `y = x Wᵀ + b`.
/// @param x `[N, in]` — N rows (tokens) of in features each
/// @param layer weight `[out, in]`, bias `[out]` or empty
/// @return `[N, out]` with `y[n, o] = Σ_i x[n, i] · W[o, i] + b[o]` (no `+ b[o]` when the bias
///         is empty) <!-- clause: linear.rows --> N == 0 gives `[0, out]`
///         <!-- clause: linear.no-rows -->
/// @throws ShapeError naming wb::linear if the weight is empty (in == 0 or out == 0; the
///         message names its shape) <!-- clause: linear.empty-weight -->
/// @throws ShapeError naming wb::linear if x's last axis is not in (the message names both
///         shapes) <!-- clause: linear.in-mismatch -->
/// @throws ShapeError naming wb::linear if the bias has a size other than 0 and out (the message
///         names the bias's size and out) <!-- clause: linear.bias-size -->
Tensor2 linear(const Tensor2& x, const Linear& layer);

/// `nn.Linear` forward on a batch of sequences: only the last axis is transformed.
///
/// Every token of every sequence goes through the same layer on its own: `y[b, t, :]` is
/// `linear` of the row `x[b, t, :]`. `nn.Linear(8, 32)` maps `[B, T, 8]` to `[B, T, 32]`.
/// <!-- clause: linear.per-token -->
/// @param x `[B, T, in]`
/// @param layer weight `[out, in]`, bias `[out]` or empty
/// @return `[B, T, out]`
/// @throws ShapeError naming wb::linear if the weight is empty, if x's last axis is not in (the
///         message names both shapes, x's as the caller passed it), or if the bias has a size
///         other than 0 and out (the message names the bias's size and out)
///         <!-- clause: linear.per-token-errors -->
Tensor3 linear(const Tensor3& x, const Linear& layer);

// ---- the LM head (§14) ---------------------------------------------------------------------

/// The LM head: project every position's hidden state onto the vocabulary.
///
/// It is a Linear layer from D to V: `logits = h Wᵀ (+ b)`. The notes write it `z = h W_U`
/// with `W_U [D, V]`; here the weight is stored `[V, D]`, so `W_U = Wᵀ`. With a tied head the
/// weight is the embedding table itself.
/// @param h `[B, T, D]` — hidden states after the last block
/// @param head weight `[V, D]`, bias `[V]` or empty
/// @return logits `[B, T, V]` — one score per vocabulary entry at every position, bias included
///         <!-- clause: lm_head.logits -->
/// @throws ShapeError naming wb::lm_head if the weight is empty (the message names its shape)
///         <!-- clause: lm_head.empty-weight -->
/// @throws ShapeError naming wb::lm_head if h's last axis is not D (the message names both
///         shapes) <!-- clause: lm_head.d-mismatch -->
/// @throws ShapeError naming wb::lm_head if the bias has a size other than 0 and V (the message
///         names the bias's size and V) <!-- clause: lm_head.bias-size -->
Tensor3 lm_head(const Tensor3& h, const Linear& head);

/// The logits that generation reads: those of the LAST position of each sequence (§14).
///
/// Equal to `lm_head(h, head)[:, -1, :]`, bias included, but only the last position is
/// projected. <!-- clause: next_token_logits.last-position -->
/// @param h `[B, T, D]` — hidden states; position T - 1 predicts the next token
/// @param head weight `[V, D]`, bias `[V]` or empty
/// @return logits `[B, V]`
/// @throws ShapeError naming wb::next_token_logits if T == 0 (there is no last position; the
///         message names h's shape) <!-- clause: next_token_logits.no-position -->
/// @throws ShapeError naming wb::next_token_logits if the weight is empty (the message names its
///         shape), if h's last axis is not D (the message names both shapes), or if the bias has
///         a size other than 0 and V (the message names the bias's size and V)
///         <!-- clause: next_token_logits.layer-errors -->
Tensor2 next_token_logits(const Tensor3& h, const Linear& head);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
