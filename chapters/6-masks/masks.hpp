/// @file masks.hpp
/// @brief Chapter 6 — masks: who may read whom (causal, padding, both), and the NaN trap.
///
/// The notes' §12 (a causal mask keeps position i from reading the future; it is applied
/// *before* the softmax; a padding mask hides the filler keys of short sequences; loss
/// masking is a separate job), §13 (causal, self/cross and single/multi-head are independent
/// choices), §18 (a boolean mask's `true` means "allowed" in one API and "hidden" in another;
/// a query that may read nothing gives NaN), §21.5 (`torch.triu(ones, diagonal=1)` marks the
/// future) and §21.8 (the causality check).
///
/// Every mask here is a wb::Mask from chapter 4: `allowed(b, i, j) == true` means query i of
/// sequence b **may read** key j. Shapes: B batch, T tokens (queries = keys), N queries,
/// M keys. A mask of batch 1 (`[1, N, M]`) is shared by every sequence of the batch.
#pragma once

#include <cstddef>
#include <vector>

#include "4-sdpa/sdpa.hpp"
#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter6 Chapter 6: masks
/// @{

/// The causal mask of §12: query i may read key j exactly when j <= i.
/// <!-- clause: causal_mask.no-future -->
///
/// For T = 4 it is the notes' table (✓ = true, × = false):
/// ```
///            key 0  1  2  3
///   query 0      ✓  ×  ×  ×
///   query 1      ✓  ✓  ×  ×
///   query 2      ✓  ✓  ✓  ×
///   query 3      ✓  ✓  ✓  ✓
/// ```
///
/// The diagonal is allowed: reading yourself is not a leak, because position i predicts
/// token i + 1. <!-- clause: causal_mask.diagonal-allowed -->
/// It is the logical NOT of PyTorch's `torch.triu(ones(T, T), diagonal=1)`.
/// <!-- clause: causal_mask.not-triu -->
/// @param T number of tokens (queries and keys are the same positions)
/// @return `[1, T, T]` with `allowed(0, i, j) == (j <= i)`; batch 1 broadcasts over every
///         sequence (and sdpa shares it across every head) <!-- clause: causal_mask.shared-batch -->
/// @throws ShapeError if T == 0 (the message names the function and `T = 0`)
///         <!-- clause: causal_mask.no-tokens -->
/// @throws ShapeError if T·T is more than 2^48 elements (the message names the function, T's
///         value and 2^48; wb::checked_size: `causal_mask(SIZE_MAX)` is an error, not a
///         wrapped-around size) <!-- clause: causal_mask.too-large -->
Mask causal_mask(std::size_t T);

/// The padding mask: the filler keys at the end of each shorter sequence are hidden.
///
/// Sequence b holds `lengths[b]` real tokens followed by padding. Every query — real or
/// padded — may read exactly the real keys `j < lengths[b]`. Only the **key** axis is masked:
/// a padded query still reads the real keys and gets a finite output that means nothing.
/// <!-- clause: padding_mask.keys-only -->
/// Not a promise of this function: the loss must skip padded targets separately (masking keys
/// does not exclude targets from the loss, §12).
/// A sequence of length 0 has no key to read: all its rows are fully masked (see
/// fully_masked_rows). <!-- clause: padding_mask.length-zero -->
/// @param lengths `[B]`: the number of real tokens of each sequence, each <= M (a length equal
///        to M is a sequence without padding) <!-- clause: padding_mask.length-at-most-m -->
/// @param N number of queries
/// @param M number of keys (the padded length of the key sequences)
/// @return `[B, N, M]` with `allowed(b, i, j) == (j < lengths[b])`, the same for every i
///         <!-- clause: padding_mask.shape -->
/// @throws ShapeError if lengths is empty (the message names the function, lengths and
///         `B = 0`), N == 0 or M == 0 (the function and `N = 0` or `M = 0`)
///         <!-- clause: padding_mask.empty-axis -->
/// @throws ShapeError if B·N·M is more than 2^48 elements (wb::checked_size: the message names
///         the function and the sizes) <!-- clause: padding_mask.too-large -->
/// @throws ValueError if some `lengths[b] > M` (the message names the function, the first such
///         b, its length and M, e.g. `lengths[1] = 5` and `M = 4`, in any notation)
///         <!-- clause: padding_mask.length-beyond-m -->
///
/// The ShapeErrors come before the ValueError, in any order among themselves.
/// <!-- clause: padding_mask.shape-before-value -->
Mask padding_mask(const std::vector<std::size_t>& lengths, std::size_t N, std::size_t M);

/// Combines two masks: a key is readable only if **both** masks allow it (logical AND).
/// <!-- clause: combine_masks.and -->
///
/// A batch of 1 broadcasts against a batch of B, as `[T, T]` broadcasts against
/// `[B, H, T, T]` in §21.5: combining `[1, N, M]` with `[B, N, M]` (in either order) gives
/// `[B, N, M]`; two masks of batch 1 give batch 1. <!-- clause: combine_masks.broadcast -->
/// @param a `[B_a, N, M]`
/// @param b `[B_b, N, M]`, with B_b == B_a, or one of them 1
/// @return `[max(B_a, B_b), N, M]` with `allowed = a.allowed && b.allowed`
/// @throws ShapeError if either mask is empty (an axis of size 0: it has no batch to share;
///         the message names the function and the empty mask's shape)
///         <!-- clause: combine_masks.empty -->
/// @throws ShapeError if N or M differ, or if the batches differ and neither is 1 (the message
///         names the function and both shapes) <!-- clause: combine_masks.mismatch -->
Mask combine_masks(const Mask& a, const Mask& b);

/// The mask of a batch of padded sequences in a GPT: causal AND padding.
///
/// Equal to `combine_masks(causal_mask(T), padding_mask(lengths, T, T))`: query i of
/// sequence b may read key j when `j <= i` and `j < lengths[b]`.
/// <!-- clause: causal_padding_mask.causal-and-padding -->
/// A padded query (`i >= lengths[b]`) reads all the real keys; a sequence of length 0 has only
/// fully masked rows. <!-- clause: causal_padding_mask.padded-rows -->
/// @param lengths `[B]`: real tokens per sequence, each <= T (a length equal to T is a sequence
///        without padding) <!-- clause: causal_padding_mask.length-at-most-t -->
/// @param T padded length (queries = keys)
/// @return `[B, T, T]` <!-- clause: causal_padding_mask.shape -->
/// @throws ShapeError if lengths is empty (the message names the function and `B = 0`) or
///         T == 0 (the function and `T = 0`) <!-- clause: causal_padding_mask.empty-axis -->
/// @throws ShapeError if B·T·T is more than 2^48 elements (the message names T's value)
///         <!-- clause: causal_padding_mask.too-large -->
/// @throws ValueError if some `lengths[b] > T` (the message names the function, the first such
///         b, its length and T, e.g. `lengths[1] = 4` and `T = 3`)
///         <!-- clause: causal_padding_mask.length-beyond-t -->
///
/// The ShapeErrors come before the ValueError, in any order among themselves.
/// <!-- clause: causal_padding_mask.shape-before-value -->
Mask causal_padding_mask(const std::vector<std::size_t>& lengths, std::size_t T);

/// Converts a mask written in PyTorch's `masked_fill` convention into ours.
///
/// `scores.masked_fill(mask, -inf)` hides the entries where its mask is **true**
/// (`true = hidden`, e.g. `torch.triu(ones, diagonal=1)`); wb::Mask uses `true = may read`.
/// This is the one door through which the opposite convention may enter, and it says so by
/// its name: `allowed = NOT forbidden`. Passing a `true = hidden` tensor straight into
/// `Mask{...}` lets every query read exactly what it must not.
/// @param forbidden `[B, N, M]` (or `[1, N, M]`), true where the key is hidden
/// @return the same shape, `allowed(b, i, j) == !forbidden(b, i, j)`
///         <!-- clause: from_forbidden.negation -->
/// @throws ShapeError if forbidden is empty (an axis of size 0; the message names the
///         function and its shape) <!-- clause: from_forbidden.empty -->
Mask from_forbidden(const xt::xtensor<bool, 3>& forbidden);

/// The queries of sequence b that may read no key at all.
///
/// Their softmax would be \f$0/0\f$ = NaN without chapter 4's guard (which gives them
/// all-zero weights and a zero output instead): attention with any mask of this chapter gives
/// finite weights and outputs. <!-- clause: fully_masked_rows.no-nan -->
/// A causal mask never has one (every query may read itself); a sequence of length 0 has only
/// such rows; combining masks can create them. <!-- clause: fully_masked_rows.which-masks -->
/// @param m the mask, `[B, N, M]`; for a shared mask of batch 1 pass b = 0
/// @param b which sequence, `0 <= b < B`
/// @return the indices i (ascending) with `allowed(b, i, j) == false` for every j; empty if
///         every query may read something <!-- clause: fully_masked_rows.ascending -->
/// @throws ValueError if `b >= B` (the message names the function, b, e.g. `b = 2`, and the
///         mask's shape) <!-- clause: fully_masked_rows.b-out-of-range -->
std::vector<std::size_t> fully_masked_rows(const Mask& m, std::size_t b);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
