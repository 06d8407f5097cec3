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
/// @return `[B, D]` (the integer index removes the T axis)
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
Tensor2 last_token(const Tensor3& x);

/// `x[:, -1:, :]`: the last token of every sequence, keeping the T axis.
/// @param x `[B, T, D]`
/// @return `[B, 1, D]` (a slice keeps the axis, with size 1)
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
Tensor3 last_token_keep(const Tensor3& x);

/// `x[:, :-1, :]`: every token but the last (a model's inputs when the targets are shifted).
/// @param x `[B, T, D]`
/// @return `[B, T - 1, D]`
/// @throws ShapeError if T == 0 (the message names the function and x's shape)
Tensor3 drop_last_token(const Tensor3& x);

// ---- heads: reshape groups, transpose reorders (§21.3, §11, §18) ----------------------------

/// `x.reshape(B, T, H, d).transpose(1, 2)`: split the model width into H heads of width d.
///
/// Head h of token t holds features `x[b, t, h*d : (h+1)*d]`. A plain reshape to
/// `[B, H, T, d]` without the transpose gives the right shape and the wrong numbers.
/// @param x `[B, T, D]`
/// @param H number of heads; must divide D
/// @return `[B, H, T, d]` with d = D / H
/// @throws ShapeError if H == 0 or D % H != 0 (the message names the function, x's shape,
///         and H and D with their values, e.g. `H = 3` and `D = 8`)
Tensor4 split_heads(const Tensor3& x, std::size_t H);

/// The inverse of split_heads: `x.transpose(1, 2).reshape(B, T, H*d)`.
/// @param x `[B, H, T, d]`
/// @return `[B, T, D]` with D = H·d; `merge_heads(split_heads(x, H)) == x`
Tensor3 merge_heads(const Tensor4& x);

/// `k.transpose(-2, -1)`: swap only the last two axes (never B or H).
/// @param k `[B, H, T, d]`
/// @return `[B, H, d, T]`
Tensor4 transpose_last2(const Tensor4& k);

// ---- products (§21.4) ----------------------------------------------------------------------

/// `(q * k).sum()`: the dot product of two vectors, element-wise product then sum.
/// @param q `[d]`
/// @param k `[d]`
/// @return `q[0]·k[0] + … + q[d-1]·k[d-1]`
/// @throws ShapeError if the lengths differ (the message names the function and both shapes)
float dot(const Tensor1& q, const Tensor1& k);

/// `a @ b` on 4-D tensors: B and H are batch axes, the last two axes are multiplied.
/// @param a `[B, H, N, K]`
/// @param b `[B, H, K, M]`
/// @return `[B, H, N, M]` with `out[b,h] = a[b,h] · b[b,h]`
/// @throws ShapeError if B, H or K differ (the message names the function and both shapes)
Tensor4 matmul(const Tensor4& a, const Tensor4& b);

// ---- softmax and reductions (§21.4) --------------------------------------------------------

/// Numerically stable softmax along the last axis: `torch.softmax(x, dim=-1)`.
///
/// Subtract each row's maximum before exp, so that logits of ±1000 give exact, finite
/// probabilities. Beware the xtensor 0.24 trap: `x - xt::amax(x, {axis}, xt::keep_dims)`
/// computes wrong numbers; evaluate the maximum into a tensor first.
/// @param x any rank ≥ 1, e.g. scores `[B, H, T, T]` (last axis = key positions)
/// @return same shape; every slice along the last axis sums to 1
/// @throws ShapeError if x has rank 0 or a last axis of size 0 (the message names the
///         function and x's shape, `[]` for rank 0)
Array softmax(const Array& x);

/// `x.mean(dim=axis, keepdim=keepdims)`.
/// @param x any rank ≥ 1
/// @param axis counted from 0; negative counts from the end (-1 = last)
/// @param keepdims keep the reduced axis with size 1 (ready to broadcast back against x)
/// @return x's shape without `axis`, or with `axis` of size 1 when keepdims
/// @throws ShapeError if axis is out of range (the message names the function, the axis, e.g.
///         `axis 2`, and x's shape) or the axis has size 0 (the function and x's shape)
Array mean(const Array& x, int axis, bool keepdims);

/// `x.var(dim=axis, correction=correction, keepdim=keepdims)`.
///
/// Divides the sum of squared deviations by `n - correction`. LayerNorm uses correction 0;
/// PyTorch's `torch.var` defaults to correction 1. Mixing them up is a classic slip.
/// @param x any rank ≥ 1
/// @param axis counted from 0; negative counts from the end (-1 = last)
/// @param correction 0 (population variance) or 1 (sample variance)
/// @param keepdims keep the reduced axis with size 1
/// @return x's shape without `axis`, or with `axis` of size 1 when keepdims
/// @throws ShapeError if axis is out of range (the message names the function, the axis, e.g.
///         `axis 2`, and x's shape)
/// @throws ValueError if correction is neither 0 nor 1 (the message names the function, the
///         correction, e.g. `correction = 2`, and the allowed values 0 and 1; before or after
///         the axis check, either order), or if `n - correction <= 0` (n = size of the axis),
///         e.g. one value with correction 1 (the function, x's shape, `n = 1` and
///         `correction = 1`)
Array var(const Array& x, int axis, int correction, bool keepdims);

// ---- joining (§21.5) -----------------------------------------------------------------------

/// `torch.cat(xs, dim=axis)`: join along an existing axis.
/// @param xs at least one tensor; all of the same rank, equal except along `axis`
/// @param axis counted from 0; negative counts from the end
/// @return e.g. two `[2, 3]` along axis 0 give `[4, 3]`, along axis 1 `[2, 6]`
/// @throws ShapeError if xs is empty (the message names the function and says xs is empty),
///         the ranks differ or another axis differs (the function and both shapes: the
///         mismatched tensor's and xs[0]'s), or axis is out of range (the function,
///         the axis, e.g. `axis 2`, and xs[0]'s shape); the order of these checks is free
Array cat(const std::vector<Array>& xs, int axis);

/// `torch.stack(xs, dim=axis)`: join along a new axis.
/// @param xs at least one tensor, all of the same shape
/// @param axis position of the new axis in the result, 0 … rank (negative counts from the end)
/// @return e.g. two `[2, 3]` along axis 0 give `[2, 2, 3]`, along axis -1 `[2, 3, 2]`
/// @throws ShapeError if xs is empty (the message names the function and says xs is empty),
///         the shapes differ (the function and both shapes: the mismatched tensor's and
///         xs[0]'s), or axis is out of range (the function, the axis, e.g. `axis 3`, and xs[0]'s
///         shape); the order of these checks is free
Array stack(const std::vector<Array>& xs, int axis);

// ---- comparing (§21.8) ---------------------------------------------------------------------

/// `(a - b).abs().max().item()`: the largest absolute difference.
/// @param a any shape
/// @param b the same shape as a
/// @return the largest `|a - b|`; NaN if any difference is NaN (a NaN must never hide);
///         0 for empty tensors
/// @throws ShapeError if the shapes differ (the message names the function and both shapes)
float max_abs_diff(const Array& a, const Array& b);

/// `torch.allclose(a, b, rtol, atol)`: true when `|a - b| <= atol + rtol·|b|` everywhere.
///
/// Not symmetric: the relative tolerance scales with `|b|`, the expected values. NaN is never
/// close to anything (not even NaN); an infinity is close only to the same infinity.
/// @param a the values to judge, any shape
/// @param b the expected values, the same shape as a
/// @param rtol relative tolerance (torch's default 1e-5)
/// @param atol absolute tolerance (torch's default 1e-8)
/// @throws ShapeError if the shapes differ (the message names the function and both shapes)
bool allclose(const Array& a, const Array& b, float rtol = 1e-5f, float atol = 1e-8f);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
