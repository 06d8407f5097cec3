/// @file layers.hpp
/// @brief Chapter 8 — the backward of every layer of the model (the llm.c way).
///
/// Without autograd, each layer used by the model gets a hand-written backward. The forwards
/// are the ones you wrote in chapters 2–7 (`linear`, `layer_norm`, `gelu`, `apply_rope`,
/// `sdpa` with `causal_mask`, `embed`): each backward below names the forward it undoes and
/// takes what that forward read (its input, or what it returned). The backwards are templates
/// over the scalar type: the model trains in `float`, and the gradient checks run the same
/// code in `double`, where central differences are exact enough to prove a backward right.
/// Only `float` and `double` are instantiated.
///
/// Rows: the backwards of row-wise layers take `[N, ·]` matrices, N = B·T tokens flattened
/// (row `b·T + t` is token t of sequence b); attention and RoPE keep `[B, H, T, d]`.
///
/// Gradient conventions (PyTorch's): a backward **assigns** the gradient of its inputs
/// (`dx`) and **adds** into the gradients of its parameters (`dweight += ...`), so gradients
/// of parameters accumulate across calls until they are zeroed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "workbook/core.hpp"

namespace wb {

template <class Real>
using Vec = xt::xtensor<Real, 1>;  ///< `[n]` in scalar type Real
template <class Real>
using Mat = xt::xtensor<Real, 2>;  ///< `[rows, cols]` in scalar type Real
template <class Real>
using Heads = xt::xtensor<Real, 4>;  ///< split heads `[B, H, T, d]`, or weights `[B, H, T, T]`

inline namespace WB_IMPL {

/// @defgroup chapter8 Chapter 8: training
/// @{

/// Linear backward (chapter 2's `linear`, `y = x Wᵀ + b`): `dx = dy W`, `dweight += dyᵀ x`, `dbias += Σ_rows dy` (skipped when dbias is empty). <!-- clause: linear_backward.gradients -->
/// @param dy `[N, out]` gradient of the output
/// @param x `[N, in]` the forward's input
/// @param weight `[out, in]`
/// @param dx `[N, in]` assigned: its previous contents and shape do not matter <!-- clause: linear_backward.dx-assigned -->
/// @param dweight `[out, in]` accumulated <!-- clause: linear_backward.dweight-accumulated -->
/// @param dbias `[out]` accumulated, or empty: then it is left empty <!-- clause: linear_backward.dbias-accumulated-or-empty -->
/// @throws ShapeError if any shape disagrees with x, weight and dy <!-- clause: linear_backward.shape-mismatch -->
template <class Real>
void linear_backward(const Mat<Real>& dy, const Mat<Real>& x, const Mat<Real>& weight,
                     Mat<Real>& dx, Mat<Real>& dweight, Vec<Real>& dbias);

/// LayerNorm backward (chapter 7's `layer_norm`, `y = (x − mean) · rstd · gamma + beta` over
/// each row, `rstd = 1 / sqrt(var + eps)`, var with correction 0). The forward returned only
/// y, so the backward recomputes each row's mean and rstd from x (cheap: one pass per row),
/// then, with `x̂ = (x − mean) · rstd` and `g = dy ⊙ gamma`:
/// ```
///   dx     = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂))      means over the row's D features
///   dgamma += Σ_rows dy ⊙ x̂
///   dbeta  += Σ_rows dy
/// ```
/// <!-- clause: layer_norm_backward.gradients -->
/// @param dy `[N, D]`
/// @param x `[N, D]` the forward's input
/// @param gamma `[D]`
/// @param eps the forward's eps (inside the square root), whatever its value <!-- clause: layer_norm_backward.eps-used -->
/// @param dx `[N, D]` assigned: its previous contents and shape do not matter <!-- clause: layer_norm_backward.dx-assigned -->
/// @param dgamma `[D]` accumulated <!-- clause: layer_norm_backward.dgamma-accumulated -->
/// @param dbeta `[D]` accumulated <!-- clause: layer_norm_backward.dbeta-accumulated -->
/// @throws ShapeError on any shape mismatch or D == 0 <!-- clause: layer_norm_backward.shape-mismatch -->
/// @throws ValueError if eps <= 0, NaN or infinite (chapter 7's rule for layer_norm) <!-- clause: layer_norm_backward.bad-eps -->
template <class Real>
void layer_norm_backward(const Mat<Real>& dy, const Mat<Real>& x, const Vec<Real>& gamma, Real eps,
                         Mat<Real>& dx, Vec<Real>& dgamma, Vec<Real>& dbeta);

/// GELU backward (chapter 7's `gelu`, the exact form `x · Φ(x)`):
/// `dx = dy · (Φ(x) + x φ(x))`, φ the standard normal density. <!-- clause: gelu_backward.gradient -->
/// @param dy `[N, F]`
/// @param x `[N, F]` the forward's input
/// @return dx `[N, F]`
/// @throws ShapeError if the shapes differ <!-- clause: gelu_backward.shape-mismatch -->
template <class Real>
Mat<Real> gelu_backward(const Mat<Real>& dy, const Mat<Real>& x);

/// Causal attention backward (chapter 4's `sdpa` with chapter 6's `causal_mask`:
/// `A = softmax(q kᵀ / sqrt(d), keys j > i hidden)`, `out = A v`): through `out = A v`, the
/// row softmax (`dS = A ⊙ (dA − rowsum(dA ⊙ A))`), the scale and `S = q kᵀ`. <!-- clause: causal_attention_backward.gradients -->
/// @param dout `[B, H, T, d]`
/// @param q, k, v the forward's inputs, @param weights the forward's weights A `[B, H, T, T]`
///        (what sdpa returned beside the output; exact zeros above the diagonal)
/// @param dq, dk, dv `[B, H, T, d]` assigned: their previous contents and shapes do not matter <!-- clause: causal_attention_backward.assigned -->
/// @throws ShapeError on any shape mismatch, or heads of width d == 0 (the message names q's
///         shape) <!-- clause: causal_attention_backward.shape-mismatch -->
template <class Real>
void causal_attention_backward(const Heads<Real>& dout, const Heads<Real>& q, const Heads<Real>& k,
                               const Heads<Real>& v, const Heads<Real>& weights, Heads<Real>& dq,
                               Heads<Real>& dk, Heads<Real>& dv);

/// RoPE backward (chapter 3's `apply_rope`). The forward turns each pair of features
/// (x[2i], x[2i+1]) of the token at position p = offset + t by the angle p θ_i,
/// θ_i = base^(−2i/d): a rotation, so its gradient is the rotation by −p θ_i (the transposed
/// matrix), applied to the gradient of the output:
/// ```
///   dx[2i]     =  dy[2i] · cos(p θ_i) + dy[2i+1] · sin(p θ_i)
///   dx[2i + 1] = −dy[2i] · sin(p θ_i) + dy[2i+1] · cos(p θ_i)
/// ```
/// <!-- clause: rope_backward.gradient -->
/// It needs no saved tensor: the angles depend on the positions only. Angles in double, as
/// the forward (a float backward turns by the forward's angles at any position). <!-- clause: rope_backward.angles-in-double -->
/// @param dy `[B, H, T, d]` gradient of the rotated queries or keys
/// @param offset the forward's offset (position of the first token), >= 0 <!-- clause: rope_backward.offset-used -->
/// @param base the forward's base, > 1 <!-- clause: rope_backward.base-used -->
/// @return dx `[B, H, T, d]`
/// @throws ShapeError if d is odd (the message names the shape) <!-- clause: rope_backward.odd-width -->
/// @throws ValueError if offset < 0 or base <= 1 <!-- clause: rope_backward.bad-offset-or-base -->
template <class Real>
Heads<Real> rope_backward(const Heads<Real>& dy, std::int64_t offset, Real base);

/// Embedding backward (chapter 2's `embed`): `dtable[ids[b,t]] += dout[b,t]`. A token id that appears several
/// times receives the **sum** of its rows' gradients (never the last one only). <!-- clause: embedding_backward.sum-repeated -->
/// @param ids `[B, T]`
/// @param dout `[B·T, D]` gradient of the looked-up rows, in the order of ids
/// @param dtable `[V, D]` accumulated <!-- clause: embedding_backward.accumulated -->
/// @throws ShapeError on shape mismatch <!-- clause: embedding_backward.shape-mismatch -->
/// @throws ValueError for an id outside [0, V) (the message names the id and its position);
///         every id is checked before dtable is changed <!-- clause: embedding_backward.bad-id -->
template <class Real>
void embedding_backward(const TokenIds& ids, const Mat<Real>& dout, Mat<Real>& dtable);

/// Mean cross entropy from raw logits (never softmax them first), stable through
/// log-sum-exp: `loss = mean over valid rows of (logsumexp(z) − z[target])`. <!-- clause: cross_entropy_forward.mean-loss -->
/// Rows whose target equals `ignore_index` (padding) are left out of the mean, whatever the
/// value of ignore_index (−1, −100, or an id inside [0, V)) <!-- clause: cross_entropy_forward.ignore-index -->;
/// if no row is valid the loss is 0. <!-- clause: cross_entropy_forward.no-valid-row -->
/// @param logits `[N, V]`
/// @param targets `[N]`, each in [0, V) or equal to ignore_index
/// @param ignore_index the padding target, e.g. -1
/// @return the mean loss over valid rows
/// @throws ShapeError if targets is not `[N]` <!-- clause: cross_entropy_forward.targets-shape -->
/// @throws ValueError for a target outside [0, V) that is not ignore_index (the message names
///         the row, the target and ignore_index) <!-- clause: cross_entropy_forward.bad-target -->
template <class Real>
Real cross_entropy_forward(const Mat<Real>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                           std::int64_t ignore_index);

/// Gradient of the mean cross entropy with respect to the logits:
/// `(softmax(z) − onehot(target)) / n_valid` on valid rows, 0 on ignored rows. <!-- clause: cross_entropy_backward.gradient -->
/// @return dlogits `[N, V]`
/// @throws as cross_entropy_forward (ShapeError, ValueError) <!-- clause: cross_entropy_backward.errors -->
template <class Real>
Mat<Real> cross_entropy_backward(const Mat<Real>& logits,
                                 const xt::xtensor<std::int64_t, 1>& targets,
                                 std::int64_t ignore_index);

/// @}

}  // namespace WB_IMPL
}  // namespace wb

/// The explicit instantiations of this header's templates for one scalar type, written once
/// for the stub and the reference: each `.cpp` ends with `WB_INSTANTIATE_LAYERS(float)` (training)
/// and `WB_INSTANTIATE_LAYERS(double)` (the gradient checks), inside the chapter's namespaces.
/// @param Real the scalar type: float or double
#define WB_INSTANTIATE_LAYERS(Real)                                                               \
    template void linear_backward<Real>(const Mat<Real>&, const Mat<Real>&, const Mat<Real>&,     \
                                        Mat<Real>&, Mat<Real>&, Vec<Real>&);                      \
    template void layer_norm_backward<Real>(const Mat<Real>&, const Mat<Real>&, const Vec<Real>&, \
                                            Real, Mat<Real>&, Vec<Real>&, Vec<Real>&);            \
    template Mat<Real> gelu_backward<Real>(const Mat<Real>&, const Mat<Real>&);                   \
    template Heads<Real> rope_backward<Real>(const Heads<Real>&, std::int64_t, Real);             \
    template void causal_attention_backward<Real>(                                                \
        const Heads<Real>&, const Heads<Real>&, const Heads<Real>&, const Heads<Real>&,           \
        const Heads<Real>&, Heads<Real>&, Heads<Real>&, Heads<Real>&);                            \
    template void embedding_backward<Real>(const TokenIds&, const Mat<Real>&, Mat<Real>&);        \
    template Real cross_entropy_forward<Real>(const Mat<Real>&,                                   \
                                              const xt::xtensor<std::int64_t, 1>&, std::int64_t); \
    template Mat<Real> cross_entropy_backward<Real>(                                              \
        const Mat<Real>&, const xt::xtensor<std::int64_t, 1>&, std::int64_t);
