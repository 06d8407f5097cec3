// Chapter 8 — your implementation of every layer's forward and backward, and the loss.
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
Mat<T> linear_forward(const Mat<T>& x, const Mat<T>& weight, const Vec<T>& bias) {
    // Hint: check x.shape(1) == weight.shape(1) and bias.size() is 0 or out (ShapeError naming
    // "wb::linear_forward" and the shapes, shape_str(x.shape())). Then
    // y = xt::linalg::dot(x, xt::transpose(weight)) ([N, in] · [in, out]; skip BLAS when a
    // size is 0) and add bias(o) to column o of every row.
    (void)x, (void)weight, (void)bias;
    WB_STUB();
}

template <class T>
void linear_backward(const Mat<T>& dy, const Mat<T>& x, const Mat<T>& weight, Mat<T>& dx,
                     Mat<T>& dweight, Vec<T>& dbias) {
    // Hint: check dy [N, out], dweight [out, in], dbias [out] or empty. Then
    //   dx       =  dy W        ([N, out] · [out, in])        ASSIGN (dx = ...)
    //   dweight +=  dyᵀ x       ([out, N] · [N, in])          ACCUMULATE (+=), never =
    //   dbias   +=  Σ_rows dy   (skip when dbias is empty)    ACCUMULATE
    (void)dy, (void)x, (void)weight, (void)dx, (void)dweight, (void)dbias;
    WB_STUB();
}

// ---- LayerNorm over the features of each row ------------------------------------------------

template <class T>
Mat<T> layer_norm_forward(const Mat<T>& x, const Vec<T>& gamma, const Vec<T>& beta, T eps,
                          Vec<T>& mean, Vec<T>& rstd) {
    // Hint: check D >= 1, gamma [D], beta [D]. Size mean and rstd to [N]. For each row n:
    // mean m = Σx/D; variance v = Σ(x - m)²/D (divide by D: correction 0, not D - 1);
    // s = 1/sqrt(v + eps); y = (x - m)·s·gamma + beta. Save m and s in mean(n), rstd(n).
    (void)x, (void)gamma, (void)beta, (void)eps, (void)mean, (void)rstd;
    WB_STUB();
}

template <class T>
void layer_norm_backward(const Mat<T>& dy, const Mat<T>& x, const Vec<T>& gamma,
                         const Vec<T>& mean, const Vec<T>& rstd, Mat<T>& dx, Vec<T>& dgamma,
                         Vec<T>& dbeta) {
    // Hint: per row, xhat = (x - mean)·rstd and g = dy ⊙ gamma. Then
    //   dx = rstd · (g − mean(g) − xhat · mean(g ⊙ xhat))     (both row means over D)
    //   dgamma += dy ⊙ xhat,  dbeta += dy                       (summed over rows, accumulated)
    // Forgetting either mean term is the classic mistake: the gradient check will tell.
    (void)dy, (void)x, (void)gamma, (void)mean, (void)rstd, (void)dx, (void)dgamma, (void)dbeta;
    WB_STUB();
}

// ---- GELU, exact: x Φ(x) ---------------------------------------------------------------------

template <class T>
Mat<T> gelu_forward(const Mat<T>& x) {
    // Hint: element-wise 0.5·x·(1 + erf(x/√2)) with std::erf (not the tanh approximation).
    (void)x;
    WB_STUB();
}

template <class T>
Mat<T> gelu_backward(const Mat<T>& dy, const Mat<T>& x) {
    // Hint: product rule, element-wise: dx = dy · (Φ(x) + x·φ(x)),
    // Φ(x) = 0.5·(1 + erf(x/√2)), φ(x) = exp(−x²/2)/√(2π). ShapeError if the shapes differ.
    (void)dy, (void)x;
    WB_STUB();
}

// ---- Causal attention on split heads ---------------------------------------------------------

template <class T>
Cube<T> causal_attention_forward(const Cube<T>& q, const Cube<T>& k, const Cube<T>& v,
                                 Cube<T>& weights) {
    // Hint: check q, k, v have one shape and d >= 1. weights = zeros [B, H, T, T]. For each
    // (b, h, i): scores s_ij = q_i·k_j / sqrt(d) for j <= i ONLY; stable softmax over those
    // (subtract the maximum); out_i = Σ_{j<=i} w_ij v_j. Weights above the diagonal stay 0.
    (void)q, (void)k, (void)v, (void)weights;
    WB_STUB();
}

template <class T>
void causal_attention_backward(const Cube<T>& dout, const Cube<T>& q, const Cube<T>& k,
                               const Cube<T>& v, const Cube<T>& weights, Cube<T>& dq,
                               Cube<T>& dk, Cube<T>& dv) {
    // Hint: dq, dk, dv = zeros, then for each (b, h, i), over j <= i:
    //   dw_ij = dout_i · v_j            dv_j += w_ij dout_i
    //   ds_ij = w_ij (dw_ij − Σ_l w_il dw_il)            (the softmax's rowsum term)
    //   dq_i += ds_ij k_j / sqrt(d)     dk_j += ds_ij q_i / sqrt(d)
    (void)dout, (void)q, (void)k, (void)v, (void)weights, (void)dq, (void)dk, (void)dv;
    WB_STUB();
}

// ---- Embedding backward ---------------------------------------------------------------------

template <class T>
void embedding_backward(const TokenIds& ids, const Mat<T>& dout, Mat<T>& dtable) {
    // Hint: check dout is [B*T, D] and every id is in [0, V) BEFORE changing dtable. Then
    // row b*T + t of dout is ADDED to row ids(b, t) of dtable (+=: repeated ids sum up).
    (void)ids, (void)dout, (void)dtable;
    WB_STUB();
}

// ---- Cross entropy from raw logits -----------------------------------------------------------

template <class T>
T cross_entropy_forward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                        std::int64_t ignore_index) {
    // Hint: check targets is [N] and every target is ignore_index or in [0, V). For each
    // valid row: logsumexp(z) − z[target], where logsumexp(z) = m + log Σ exp(z − m),
    // m = max(z) (never softmax first). Divide the sum by the number of VALID rows; 0 if none.
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

template <class T>
Mat<T> cross_entropy_backward(const Mat<T>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                              std::int64_t ignore_index) {
    // Hint: same checks. Valid rows: (softmax(z) − onehot(target)) / n_valid, with the
    // softmax as exp(z − logsumexp(z)). Ignored rows: 0.
    (void)logits, (void)targets, (void)ignore_index;
    WB_STUB();
}

// ---- The two instantiations: float for training, double for the gradient checks -------------
// Keep these lines: they compile each template above for T = float and T = double.

#define WB_INSTANTIATE_LAYERS(T)                                                                  \
    template Mat<T> linear_forward<T>(const Mat<T>&, const Mat<T>&, const Vec<T>&);              \
    template void linear_backward<T>(const Mat<T>&, const Mat<T>&, const Mat<T>&, Mat<T>&,       \
                                     Mat<T>&, Vec<T>&);                                          \
    template Mat<T> layer_norm_forward<T>(const Mat<T>&, const Vec<T>&, const Vec<T>&, T,        \
                                          Vec<T>&, Vec<T>&);                                     \
    template void layer_norm_backward<T>(const Mat<T>&, const Mat<T>&, const Vec<T>&,            \
                                         const Vec<T>&, const Vec<T>&, Mat<T>&, Vec<T>&,         \
                                         Vec<T>&);                                               \
    template Mat<T> gelu_forward<T>(const Mat<T>&);                                              \
    template Mat<T> gelu_backward<T>(const Mat<T>&, const Mat<T>&);                              \
    template Cube<T> causal_attention_forward<T>(const Cube<T>&, const Cube<T>&, const Cube<T>&, \
                                                 Cube<T>&);                                      \
    template void causal_attention_backward<T>(const Cube<T>&, const Cube<T>&, const Cube<T>&,   \
                                               const Cube<T>&, const Cube<T>&, Cube<T>&,         \
                                               Cube<T>&, Cube<T>&);                              \
    template void embedding_backward<T>(const TokenIds&, const Mat<T>&, Mat<T>&);                \
    template T cross_entropy_forward<T>(const Mat<T>&, const xt::xtensor<std::int64_t, 1>&,      \
                                        std::int64_t);                                           \
    template Mat<T> cross_entropy_backward<T>(const Mat<T>&,                                     \
                                              const xt::xtensor<std::int64_t, 1>&, std::int64_t);

WB_INSTANTIATE_LAYERS(float)
WB_INSTANTIATE_LAYERS(double)

#undef WB_INSTANTIATE_LAYERS

}  // namespace WB_IMPL
}  // namespace wb
