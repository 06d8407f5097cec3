// Chapter 8 — your backward of every layer of the model, and the loss. The forwards are yours
// already: chapters 2–7 (each function in layers.hpp names the one it undoes).
// Replace each WB_STUB() with the body; the spec of every function is its comment in
// layers.hpp, the formulas are in README.md. Each function is a template over the scalar type
// T: write it once with T, and the instantiations at the end of this file make a float and
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

template <class T>
void linear_backward(const Mat<T>& dy, const Mat<T>& x, const Mat<T>& weight, Mat<T>& dx,
                     Mat<T>& dweight, Vec<T>& dbias) {
    // Spec: layers.hpp, @throws first. Guide §6 (Linear) and §7 (what a backward assigns, what it
    // adds).
    (void)dy, (void)x, (void)weight, (void)dx, (void)dweight, (void)dbias;
    WB_STUB();
}

// ---- LayerNorm over the features of each row ------------------------------------------------

template <class T>
void layer_norm_backward(const Mat<T>& dy, const Mat<T>& x, const Vec<T>& gamma, T eps, Mat<T>& dx,
                         Vec<T>& dgamma, Vec<T>& dbeta) {
    // Spec: layers.hpp, @throws first. Guide §6 (LayerNorm) — derive it yourself first (the guide's
    // questions).
    (void)dy, (void)x, (void)gamma, (void)eps, (void)dx, (void)dgamma, (void)dbeta;
    WB_STUB();
}

// ---- GELU, exact: x Φ(x) ---------------------------------------------------------------------

template <class T>
Mat<T> gelu_backward(const Mat<T>& dy, const Mat<T>& x) {
    // Spec: layers.hpp, @throws first. Guide §6 (GELU).
    (void)dy, (void)x;
    WB_STUB();
}

// ---- Causal attention on split heads ---------------------------------------------------------

template <class T>
void causal_attention_backward(const Cube<T>& dout, const Cube<T>& q, const Cube<T>& k,
                               const Cube<T>& v, const Cube<T>& weights, Cube<T>& dq, Cube<T>& dk,
                               Cube<T>& dv) {
    // Spec: layers.hpp, @throws first. Guide §6 (Softmax: the Jacobian-vector product; Causal
    // attention).
    (void)dout, (void)q, (void)k, (void)v, (void)weights, (void)dq, (void)dk, (void)dv;
    WB_STUB();
}

// ---- RoPE: a rotation per pair of features ---------------------------------------------------

template <class T>
Cube<T> rope_backward(const Cube<T>& dy, std::int64_t offset, T base) {
    // Spec: layers.hpp, @throws first. Guide §6 (RoPE: the inverse of a rotation).
    (void)dy, (void)offset, (void)base;
    WB_STUB();
}

// ---- Embedding backward ---------------------------------------------------------------------

template <class T>
void embedding_backward(const TokenIds& ids, const Mat<T>& dout, Mat<T>& dtable) {
    // Spec: layers.hpp, @throws first. Guide §6 (Embedding).
    (void)ids, (void)dout, (void)dtable;
    WB_STUB();
}

// ---- Cross entropy from raw logits -----------------------------------------------------------

template <class T>
T cross_entropy_forward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                        std::int64_t ignore_index) {
    // Spec: layers.hpp, @throws first. Guide §2 and §4 (from raw logits; ignore_index).
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

template <class T>
Mat<T> cross_entropy_backward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                              std::int64_t ignore_index) {
    // Spec: layers.hpp, @throws first. Guide §6 (Cross entropy).
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

// ---- The two instantiations: float for training, double for the gradient checks -------------
// Keep these lines: they compile each template above for T = float and T = double.

#define WB_INSTANTIATE_LAYERS(T)                                                                   \
    template void linear_backward<T>(const Mat<T>&, const Mat<T>&, const Mat<T>&, Mat<T>&,         \
                                     Mat<T>&, Vec<T>&);                                            \
    template void layer_norm_backward<T>(const Mat<T>&, const Mat<T>&, const Vec<T>&, T, Mat<T>&,  \
                                         Vec<T>&, Vec<T>&);                                        \
    template Mat<T> gelu_backward<T>(const Mat<T>&, const Mat<T>&);                                \
    template Cube<T> rope_backward<T>(const Cube<T>&, std::int64_t, T);                            \
    template void causal_attention_backward<T>(const Cube<T>&, const Cube<T>&, const Cube<T>&,     \
                                               const Cube<T>&, const Cube<T>&, Cube<T>&, Cube<T>&, \
                                               Cube<T>&);                                          \
    template void embedding_backward<T>(const TokenIds&, const Mat<T>&, Mat<T>&);                  \
    template T cross_entropy_forward<T>(const Mat<T>&, const xt::xtensor<std::int64_t, 1>&,        \
                                        std::int64_t);                                             \
    template Mat<T> cross_entropy_backward<T>(const Mat<T>&, const xt::xtensor<std::int64_t, 1>&,  \
                                              std::int64_t);

WB_INSTANTIATE_LAYERS(float)
WB_INSTANTIATE_LAYERS(double)

#undef WB_INSTANTIATE_LAYERS

}  // namespace WB_IMPL
}  // namespace wb
