// Chapter 8 — your backward of every layer of the model, and the loss. The forwards are yours
// already: chapters 2–7 (each function in layers.hpp names the one it undoes).
// Replace each WB_STUB() with the body; the spec of every function is its comment in
// layers.hpp, the formulas are in README.md. Each function is a template over the scalar type
// Real: write it once with Real, and the instantiations at the end of this file make a float and
// a double version of it (do not remove them).
// Check your work with:  ctest --preset student -L chapter8  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 8  /  tools/workbook watch 8
#include "8-training/layers.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

// ---- Linear: y = x Wᵀ + b -------------------------------------------------------------------

template <class Real>
void linear_backward(const Mat<Real>& dy, const Mat<Real>& x, const Mat<Real>& weight,
                     Mat<Real>& dx, Mat<Real>& dweight, Vec<Real>& dbias) {
    // Spec: layers.hpp, @throws first. Guide §6 (Linear) and §7 (what a backward assigns, what it
    // adds).
    (void)dy, (void)x, (void)weight, (void)dx, (void)dweight, (void)dbias;
    WB_STUB();
}

// ---- LayerNorm over the features of each row ------------------------------------------------

template <class Real>
void layer_norm_backward(const Mat<Real>& dy, const Mat<Real>& x, const Vec<Real>& gamma, Real eps,
                         Mat<Real>& dx, Vec<Real>& dgamma, Vec<Real>& dbeta) {
    // Spec: layers.hpp, @throws first. Guide §6 (LayerNorm) — derive it yourself first (the guide's
    // questions).
    (void)dy, (void)x, (void)gamma, (void)eps, (void)dx, (void)dgamma, (void)dbeta;
    WB_STUB();
}

// ---- GELU, exact: x Φ(x) ---------------------------------------------------------------------

template <class Real>
Mat<Real> gelu_backward(const Mat<Real>& dy, const Mat<Real>& x) {
    // Spec: layers.hpp, @throws first. Guide §6 (GELU).
    (void)dy, (void)x;
    WB_STUB();
}

// ---- Causal attention on split heads ---------------------------------------------------------

template <class Real>
void causal_attention_backward(const Heads<Real>& dout, const Heads<Real>& q, const Heads<Real>& k,
                               const Heads<Real>& v, const Heads<Real>& weights, Heads<Real>& dq,
                               Heads<Real>& dk, Heads<Real>& dv) {
    // Spec: layers.hpp, @throws first. Guide §6 (Softmax: the Jacobian-vector product; Causal
    // attention).
    (void)dout, (void)q, (void)k, (void)v, (void)weights, (void)dq, (void)dk, (void)dv;
    WB_STUB();
}

// ---- RoPE: a rotation per pair of features ---------------------------------------------------

template <class Real>
Heads<Real> rope_backward(const Heads<Real>& dy, std::int64_t offset, Real base) {
    // Spec: layers.hpp, @throws first. Guide §6 (RoPE: the inverse of a rotation).
    (void)dy, (void)offset, (void)base;
    WB_STUB();
}

// ---- Embedding backward ---------------------------------------------------------------------

template <class Real>
void embedding_backward(const TokenIds& ids, const Mat<Real>& dout, Mat<Real>& dtable) {
    // Spec: layers.hpp, @throws first. Guide §6 (Embedding).
    (void)ids, (void)dout, (void)dtable;
    WB_STUB();
}

// ---- Cross entropy from raw logits -----------------------------------------------------------

template <class Real>
Real cross_entropy_forward(const Mat<Real>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                           std::int64_t ignore_index) {
    // Spec: layers.hpp, @throws first. Guide §2 and §4 (from raw logits; ignore_index).
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

template <class Real>
Mat<Real> cross_entropy_backward(const Mat<Real>& logits,
                                 const xt::xtensor<std::int64_t, 1>& targets,
                                 std::int64_t ignore_index) {
    // Spec: layers.hpp, @throws first. Guide §6 (Cross entropy).
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

// ---- The two instantiations: float for training, double for the gradient checks -------------
// Keep these lines: they compile each template above for Real = float and Real = double.

WB_INSTANTIATE_LAYERS(float)
WB_INSTANTIATE_LAYERS(double)

}  // namespace WB_IMPL
}  // namespace wb
