/// @file layers.hpp
/// @brief Chapter 8 — every layer of the model as a forward/backward pair (the llm.c way).
///
/// Without autograd, each layer used by the model gets a forward and a hand-written backward,
/// side by side. They are templates over the scalar type: the model trains in `float`, and
/// the gradient checks run the same code in `double`, where central differences are exact
/// enough to prove a backward right. Only `float` and `double` are instantiated.
///
/// Gradient conventions (PyTorch's): a backward **assigns** the gradient of its inputs
/// (`dx`) and **adds** into the gradients of its parameters (`dweight += ...`), so gradients
/// of parameters accumulate across calls until they are zeroed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "workbook/core.hpp"

namespace wb {

template <class T> using Vec = xt::xtensor<T, 1>;   ///< `[n]` in scalar type T
template <class T> using Mat = xt::xtensor<T, 2>;   ///< `[rows, cols]` in scalar type T
template <class T> using Cube = xt::xtensor<T, 4>;  ///< `[B, H, T, d]` in scalar type T

inline namespace WB_IMPL {

/// @defgroup chapter8 Chapter 8: training
/// @{

/// Linear forward `y = x Wᵀ + b`.
/// @param x `[N, in]` (N = B·T tokens, flattened)
/// @param weight `[out, in]` (PyTorch's layout)
/// @param bias `[out]`, or empty for no bias
/// @return `[N, out]`
/// @throws ShapeError if x's `in` differs from the weight's, or the bias is neither empty nor `[out]`
template <class T>
Mat<T> linear_forward(const Mat<T>& x, const Mat<T>& weight, const Vec<T>& bias);

/// Linear backward: `dx = dy W`, `dweight += dyᵀ x`, `dbias += Σ_rows dy` (skipped when dbias is empty).
/// @param dy `[N, out]` gradient of the output
/// @param x `[N, in]` the forward's input
/// @param weight `[out, in]`
/// @param dx `[N, in]` assigned
/// @param dweight `[out, in]` accumulated
/// @param dbias `[out]` accumulated, or empty
/// @throws ShapeError if any shape disagrees with x, weight and dy
template <class T>
void linear_backward(const Mat<T>& dy, const Mat<T>& x, const Mat<T>& weight, Mat<T>& dx,
                     Mat<T>& dweight, Vec<T>& dbias);

/// LayerNorm forward over the feature axis of each row:
/// `y = (x - mean) · rstd · gamma + beta`, `rstd = 1 / sqrt(var + eps)`, var with correction 0.
/// @param x `[N, D]`
/// @param gamma `[D]` scale
/// @param beta `[D]` shift
/// @param eps added to the variance inside the square root
/// @param mean `[N]` output: each row's mean, saved for the backward
/// @param rstd `[N]` output: each row's 1/sqrt(var + eps), saved for the backward
/// @return `[N, D]`
/// @throws ShapeError if gamma or beta is not `[D]`, or D == 0
/// @throws ValueError if eps <= 0, NaN or infinite (chapter 7's rule for layer_norm)
template <class T>
Mat<T> layer_norm_forward(const Mat<T>& x, const Vec<T>& gamma, const Vec<T>& beta, T eps,
                          Vec<T>& mean, Vec<T>& rstd);

/// LayerNorm backward.
/// @param dy `[N, D]`
/// @param x `[N, D]` the forward's input
/// @param gamma `[D]`
/// @param mean `[N]` and @param rstd `[N]` as saved by the forward
/// @param dx `[N, D]` assigned
/// @param dgamma `[D]` accumulated
/// @param dbeta `[D]` accumulated
/// @throws ShapeError on any shape mismatch
template <class T>
void layer_norm_backward(const Mat<T>& dy, const Mat<T>& x, const Vec<T>& gamma,
                         const Vec<T>& mean, const Vec<T>& rstd, Mat<T>& dx, Vec<T>& dgamma,
                         Vec<T>& dbeta);

/// GELU, exact form `x · Φ(x) = 0.5 x (1 + erf(x / √2))` (PyTorch's `nn.GELU()` default).
/// @param x any `[N, F]`
/// @return same shape
template <class T>
Mat<T> gelu_forward(const Mat<T>& x);

/// GELU backward: `dx = dy · (Φ(x) + x φ(x))`.
/// @param dy `[N, F]`
/// @param x `[N, F]` the forward's input
/// @return dx `[N, F]`
/// @throws ShapeError if the shapes differ
template <class T>
Mat<T> gelu_backward(const Mat<T>& dy, const Mat<T>& x);

/// Causal scaled dot-product attention forward on split heads:
/// `weights = softmax(q kᵀ / sqrt(d) with keys j > i hidden)`, `out = weights v`.
/// @param q `[B, H, T, d]`, @param k `[B, H, T, d]`, @param v `[B, H, T, d]`
/// @param weights `[B, H, T, T]` output, saved for the backward (exact zeros above the diagonal)
/// @return out `[B, H, T, d]`
/// @throws ShapeError if the shapes differ or d == 0
template <class T>
Cube<T> causal_attention_forward(const Cube<T>& q, const Cube<T>& k, const Cube<T>& v,
                                 Cube<T>& weights);

/// Causal attention backward: through `out = A v`, the row softmax
/// (`dS = A ⊙ (dA − rowsum(dA ⊙ A))`), the scale and `S = q kᵀ`.
/// @param dout `[B, H, T, d]`
/// @param q, k, v the forward's inputs, @param weights the forward's saved weights
/// @param dq, dk, dv `[B, H, T, d]` assigned
/// @throws ShapeError on any shape mismatch
template <class T>
void causal_attention_backward(const Cube<T>& dout, const Cube<T>& q, const Cube<T>& k,
                               const Cube<T>& v, const Cube<T>& weights, Cube<T>& dq,
                               Cube<T>& dk, Cube<T>& dv);

/// Embedding backward: `dtable[ids[b,t]] += dout[b,t]`. A token id that appears several
/// times receives the **sum** of its rows' gradients (never the last one only).
/// @param ids `[B, T]`
/// @param dout `[B·T, D]` gradient of the looked-up rows, in the order of ids
/// @param dtable `[V, D]` accumulated
/// @throws ShapeError on shape mismatch; ValueError for an id outside [0, V)
template <class T>
void embedding_backward(const TokenIds& ids, const Mat<T>& dout, Mat<T>& dtable);

/// Mean cross entropy from raw logits (never softmax them first), stable through
/// log-sum-exp: `loss = mean over valid rows of (logsumexp(z) − z[target])`.
/// Rows whose target equals `ignore_index` (padding) are left out of the mean; if no row is
/// valid the loss is 0.
/// @param logits `[N, V]`
/// @param targets `[N]`, each in [0, V) or equal to ignore_index
/// @param ignore_index the padding target, e.g. -1
/// @return the mean loss over valid rows
/// @throws ShapeError if targets is not `[N]`; ValueError for a target outside [0, V) that is not ignore_index
template <class T>
T cross_entropy_forward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                        std::int64_t ignore_index);

/// Gradient of the mean cross entropy with respect to the logits:
/// `(softmax(z) − onehot(target)) / n_valid` on valid rows, 0 on ignored rows.
/// @return dlogits `[N, V]`
/// @throws as cross_entropy_forward
template <class T>
Mat<T> cross_entropy_backward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                              std::int64_t ignore_index);

/// @}

}  // namespace WB_IMPL
}  // namespace wb
