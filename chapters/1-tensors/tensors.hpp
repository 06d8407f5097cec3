/// @file tensors.hpp
/// @brief Chapter 1 — tensors: shapes, indexing, heads, batched matmul, softmax, reductions.
///
/// The PyTorch habits of the notes' §1 and §21, written with xtensor. Every later chapter
/// uses these functions, so their contracts are exact: shapes are given outermost axis first
/// and named as in the notes (B batch, T tokens, D model width, H heads, d = D / H).
#pragma once

#include <cstddef>
#include <vector>

#include "workbook/core.hpp"

namespace wb {
inline namespace WB_IMPL {

/// @defgroup chapter1 Chapter 1: tensors
/// @{

// ---- indexing: an integer removes an axis, a slice keeps it (§21.2) -------------------------

/// `x[:, -1, :]`: the last token of every sequence.
/// @param x `[B, T, D]`
/// @return `[B, D]` (the integer index removes the T axis), `out[b, :] = x[b, T - 1, :]`
///         <!-- clause: last_token.values -->
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
///         <!-- clause: last_token.no-tokens -->
Tensor2 last_token(const Tensor3& x);

/// `x[:, -1:, :]`: the last token of every sequence, keeping the T axis.
/// @param x `[B, T, D]`
/// @return `[B, 1, D]` (a slice keeps the axis, with size 1), `out[b, 0, :] = x[b, T - 1, :]`
///         <!-- clause: last_token_keep.values -->
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
///         <!-- clause: last_token_keep.no-tokens -->
Tensor3 last_token_keep(const Tensor3& x);

/// `x[:, :-1, :]`: every token but the last (a model's inputs when the targets are shifted).
/// @param x `[B, T, D]`
/// @return `[B, T - 1, D]`, `out[b, t, :] = x[b, t, :]` (T == 1 gives `[B, 0, D]`)
///         <!-- clause: drop_last_token.values -->
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
///         <!-- clause: drop_last_token.no-tokens -->
Tensor3 drop_last_token(const Tensor3& x);

// ---- heads: reshape groups, transpose reorders (§21.3, §11, §18) ----------------------------

/// `x.reshape(B, T, H, d).transpose(1, 2)`: split the model width into H heads of width d.
///
/// Head h of token t holds features `x[b, t, h*d : (h+1)*d]`. <!-- clause: split_heads.layout -->
/// A plain reshape to `[B, H, T, d]` without the transpose gives the right shape and the wrong
/// numbers.
/// @param x `[B, T, D]`
/// @param H number of heads; must divide D
/// @return `[B, H, T, d]` with d = D / H
/// @throws ShapeError if H == 0 or D % H != 0 (the message names the function, x's shape,
///         and H and D with their values, e.g. `H = 3` and `D = 8`)
///         <!-- clause: split_heads.indivisible -->
Tensor4 split_heads(const Tensor3& x, std::size_t H);

/// The inverse of split_heads: `x.transpose(1, 2).reshape(B, T, H*d)`.
/// @param x `[B, H, T, d]`
/// @return `[B, T, D]` with D = H·d, `out[b, t, h*d + c] = x[b, h, t, c]`;
///         `merge_heads(split_heads(x, H)) == x` <!-- clause: merge_heads.layout -->
Tensor3 merge_heads(const Tensor4& x);

/// `k.transpose(-2, -1)`: swap only the last two axes (never B or H).
/// @param k `[B, H, T, d]`
/// @return `[B, H, d, T]`, `out[b, h, c, t] = k[b, h, t, c]` <!-- clause: transpose_last2.layout -->
Tensor4 transpose_last2(const Tensor4& k);

// ---- products (§21.4) ----------------------------------------------------------------------

/// `(q * k).sum()`: the dot product of two vectors, element-wise product then sum.
/// @param q `[d]`
/// @param k `[d]`
/// @return `q[0]·k[0] + … + q[d-1]·k[d-1]` (0 for d == 0) <!-- clause: dot.value -->
/// @throws ShapeError if the lengths differ (the message names the function and both shapes)
///         <!-- clause: dot.length-mismatch -->
float dot(const Tensor1& q, const Tensor1& k);

/// `a @ b` on 4-D tensors: B and H are batch axes, the last two axes are multiplied.
/// @param a `[B, H, N, K]`
/// @param b `[B, H, K, M]`
/// @return `[B, H, N, M]` with `out[b,h] = a[b,h] · b[b,h]` <!-- clause: matmul.product -->
/// @throws ShapeError if B, H or K differ (the message names the function and both shapes)
///         <!-- clause: matmul.shape-mismatch -->
Tensor4 matmul(const Tensor4& a, const Tensor4& b);

// ---- softmax and reductions (§21.4) --------------------------------------------------------

/// Numerically stable softmax along the last axis: `torch.softmax(x, dim=-1)`.
///
/// Subtract each row's maximum before exp, so that logits of ±1000 give exact, finite
/// probabilities. <!-- clause: softmax.stable --> Beware the xtensor 0.24 trap: `x - xt::amax(x, {axis}, xt::keep_dims)`
/// computes wrong numbers; evaluate the maximum into a tensor first.
/// @param x any rank ≥ 1, e.g. scores `[B, H, T, T]` (last axis = key positions)
/// @return same shape; slice r along the last axis is `exp(x_r) / Σ exp(x_r)`, so it sums to 1
///         <!-- clause: softmax.last-axis -->
/// @throws ShapeError if x has rank 0 or a last axis of size 0 (the message names the
///         function and x's shape, `[]` for rank 0) <!-- clause: softmax.no-last-axis -->
Array softmax(const Array& x);

/// `x.mean(dim=axis, keepdim=keepdims)`.
/// @param x any rank ≥ 1
/// @param axis counted from 0; negative counts from the end (-1 = last), from -rank to rank - 1
///        <!-- clause: mean.negative-axis -->
/// @param keepdims keep the reduced axis with size 1 (ready to broadcast back against x)
/// @return x's shape without `axis`, or with `axis` of size 1 when keepdims; each entry the
///         mean of the values along `axis` <!-- clause: mean.values -->
/// @throws ShapeError if axis is out of range (the message names the function, the axis, e.g.
///         `axis 2`, and x's shape) <!-- clause: mean.axis-range --> or the axis has size 0
///         (the function and x's shape) <!-- clause: mean.empty-axis -->
Array mean(const Array& x, int axis, bool keepdims);

/// `x.var(dim=axis, correction=correction, keepdim=keepdims)`.
///
/// Divides the sum of squared deviations from the mean by `n - correction`. LayerNorm uses
/// correction 0; PyTorch's `torch.var` defaults to correction 1. Mixing them up is a classic
/// slip. <!-- clause: var.values -->
/// @param x any rank ≥ 1
/// @param axis counted from 0; negative counts from the end (-1 = last), from -rank to rank - 1
///        <!-- clause: var.negative-axis -->
/// @param correction 0 (population variance) or 1 (sample variance)
/// @param keepdims keep the reduced axis with size 1
/// @return x's shape without `axis`, or with `axis` of size 1 when keepdims
///         <!-- clause: var.shape -->
/// @throws ShapeError if axis is out of range (the message names the function, the axis, e.g.
///         `axis 2`, and x's shape) <!-- clause: var.axis-range -->
/// @throws ValueError if correction is neither 0 nor 1 (the message names the function, the
///         correction, e.g. `correction = 2`, and the allowed values 0 and 1; before or after
///         the axis check, either order) <!-- clause: var.bad-correction -->
/// @throws ValueError if `n - correction <= 0` (n = size of the axis), e.g. one value with
///         correction 1 (the function, x's shape, `n = 1` and `correction = 1`)
///         <!-- clause: var.too-few-values -->
Array var(const Array& x, int axis, int correction, bool keepdims);

// ---- joining (§21.5) -----------------------------------------------------------------------

/// `torch.cat(xs, dim=axis)`: join along an existing axis.
/// @param xs at least one tensor; all of the same rank, equal except along `axis`
/// @param axis counted from 0; negative counts from the end, from -rank to rank - 1
/// @return e.g. two `[2, 3]` along axis 0 give `[4, 3]`, along axis 1 `[2, 6]`: the inputs'
///         slices along `axis` one after another, in the order of xs, for every index of the
///         other axes <!-- clause: cat.values -->
/// @throws ShapeError if xs is empty (the message names the function and says xs is empty),
///         the ranks differ or another axis differs (the function and both shapes: the
///         mismatched tensor's and xs[0]'s), or axis is out of range (the function,
///         the axis, e.g. `axis 2`, and xs[0]'s shape); the order of these checks is free
///         <!-- clause: cat.errors -->
Array cat(const std::vector<Array>& xs, int axis);

/// `torch.stack(xs, dim=axis)`: join along a new axis.
/// @param xs at least one tensor, all of the same shape
/// @param axis position of the new axis in the result, 0 … rank (negative counts from the end,
///        -(rank + 1) … -1)
/// @return e.g. two `[2, 3]` along axis 0 give `[2, 2, 3]`, along axis -1 `[2, 3, 2]`: index i
///         of the new axis holds xs[i] <!-- clause: stack.values -->
/// @throws ShapeError if xs is empty (the message names the function and says xs is empty),
///         the shapes differ (the function and both shapes: the mismatched tensor's and
///         xs[0]'s), or axis is out of range (the function, the axis, e.g. `axis 3`, and xs[0]'s
///         shape); the order of these checks is free <!-- clause: stack.errors -->
Array stack(const std::vector<Array>& xs, int axis);

// ---- comparing (§21.8) ---------------------------------------------------------------------

/// `(a - b).abs().max().item()`: the largest absolute difference.
/// @param a any shape
/// @param b the same shape as a
/// @return the largest `|a - b|` <!-- clause: max_abs_diff.value -->; NaN if any difference is
///         NaN (a NaN must never hide, wherever it is) <!-- clause: max_abs_diff.nan -->;
///         0 for empty tensors <!-- clause: max_abs_diff.empty -->
/// @throws ShapeError if the shapes differ (the message names the function and both shapes)
///         <!-- clause: max_abs_diff.shape-mismatch -->
float max_abs_diff(const Array& a, const Array& b);

/// `torch.allclose(a, b, rtol, atol)`: true when `|a - b| <= atol + rtol·|b|` everywhere.
///
/// Not symmetric: the relative tolerance scales with `|b|`, the expected values.
/// <!-- clause: allclose.rule --> NaN is never close to anything (not even NaN); an infinity is
/// close only to the same infinity. <!-- clause: allclose.nan-inf -->
/// @param a the values to judge, any shape
/// @param b the expected values, the same shape as a
/// @param rtol relative tolerance (torch's default 1e-5)
/// @param atol absolute tolerance (torch's default 1e-8)
/// @throws ShapeError if the shapes differ (the message names the function and both shapes)
///         <!-- clause: allclose.shape-mismatch -->
bool allclose(const Array& a, const Array& b, float rtol = 1e-5f, float atol = 1e-8f);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
