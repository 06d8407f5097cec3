/// @file positions.hpp
/// @brief Chapter 3 — positions: sinusoidal encoding, learned position tables, RoPE.
///
/// Self-attention without positions is permutation-equivariant: shuffle the tokens and the
/// outputs are shuffled the same way, so "小明追小红" and "小红追小明" look alike (notes §4).
/// This chapter gives the model a sense of order in the two ways the notes name:
/// - add a position vector to each token's embedding: the fixed sinusoidal table of the
///   original Transformer, or a learned table `[T_max, D]` as in GPT-2;
/// - rotate the queries and keys inside attention (RoPE), so that the score of a query at
///   position m and a key at position n depends on the gap m − n.
///
/// Names as in the notes: B batch, T tokens, D model width, H heads, d = D / H head width,
/// T_max the number of rows of a position table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter3 Chapter 3: positions and RoPE
/// @{

/// The sinusoidal position table of "Attention Is All You Need".
///
/// Column pair i (i = 0 … D/2 − 1) holds one frequency ω_i = 1 / 10000^(2i/D):
///
///     PE[p, 2i]     = sin(p · ω_i)
///     PE[p, 2i + 1] = cos(p · ω_i)
///
/// so position 0 is `[0, 1, 0, 1, …]` and the first pair turns fastest (ω_0 = 1 radian per
/// token). <!-- clause: sinusoidal_positions.values --> Compute the angle p · ω_i in double and
/// cast the sine and cosine to float: in float, p · ω_i at p = 100000 is off by up to a few
/// thousandths of a radian. <!-- clause: sinusoidal_positions.double-angles -->
/// @param T number of positions (rows), 0 … T − 1
/// @param D model width (columns); must be even and positive
/// @return `[T, D]`, row p is the encoding of position p
/// @throws ShapeError if D is odd or 0 (the message names D)
///         <!-- clause: sinusoidal_positions.odd-d -->
/// @throws ShapeError if T·D is more than 2^48 elements (wb::checked_size; checked before
///         anything is allocated) <!-- clause: sinusoidal_positions.too-large -->
Tensor2 sinusoidal_positions(std::size_t T, std::size_t D);

/// Adds position vectors to token embeddings: `x + table[offset : offset + T]`, broadcast over B.
///
/// Token t of every sequence gets row `offset + t` of the table. The table can be the fixed
/// sinusoidal one (sinusoidal_positions) or a learned position embedding `[T_max, D]` (GPT-2's
/// `wpe`): to this function both are just a matrix of rows. The offset is the position of the
/// first token of x, e.g. when one new token is decoded after `offset` earlier ones.
/// @param x token embeddings `[B, T, D]`
/// @param table position table `[T_max, D]`, row p = the vector of position p
/// @param offset position of x's first token; 0 for a whole sequence
/// @return `[B, T, D]` with `out[b, t, :] = x[b, t, :] + table[offset + t, :]`
///         <!-- clause: add_positions.rows -->
/// @throws ShapeError if the table's D differs from x's D (the message names both shapes)
///         <!-- clause: add_positions.d-mismatch -->
/// @throws ValueError if offset < 0 (the message names offset)
///         <!-- clause: add_positions.negative-offset -->
/// @throws ValueError if offset + T > T_max, computed without overflow for any offset (the
///         message names offset, T and T_max) <!-- clause: add_positions.past-table -->
Tensor3 add_positions(const Tensor3& x, const Tensor2& table, std::int64_t offset = 0);

/// Rotary position embedding (RoPE, RoFormer), applied to queries or keys of every head.
///
/// The head width d is cut into d/2 pairs of neighbouring features (x[2i], x[2i+1]). The token
/// at position p = offset + t turns pair i by the angle p · θ_i, with θ_i = base^(−2i/d):
///
///     out[2i]     = x[2i] · cos(p θ_i) − x[2i+1] · sin(p θ_i)
///     out[2i + 1] = x[2i] · sin(p θ_i) + x[2i+1] · cos(p θ_i)
///
/// (a counter-clockwise rotation of the point (x[2i], x[2i+1])). A rotation keeps every
/// vector's length, leaves position 0 unchanged, and makes the score of a rotated query at
/// position m and a rotated key at position n depend only on m − n. This is the interleaved
/// convention of RoFormer and Meta's LLaMA code; some libraries (GPT-NeoX, Hugging Face) pair
/// feature i with i + d/2 instead, which is a different function. <!-- clause: apply_rope.rotation -->
/// Compute angles in double. <!-- clause: apply_rope.double-angles -->
/// @param x queries or keys `[B, H, T, d]` (B batch, H heads, T positions, d head width)
/// @param offset position of x's first token (the number of tokens already in a KV cache):
///        token t turns by (offset + t) · θ_i <!-- clause: apply_rope.offset -->
/// @param base the frequency base; 10000 in RoFormer and LLaMA; θ_i = base^(−2i/d) for the
///        base given <!-- clause: apply_rope.base -->
/// @return `[B, H, T, d]`, the rotated vectors; every batch and head uses the same angles
///         <!-- clause: apply_rope.same-angles -->
/// @throws ShapeError if d is odd (the message names the shape of x) <!-- clause: apply_rope.odd-d -->
/// @throws ValueError if offset < 0 or base <= 1 or base is NaN (the message names the value)
///         <!-- clause: apply_rope.bad-value -->
Tensor4 apply_rope(const Tensor4& x, std::int64_t offset = 0, float base = 10000.0f);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
