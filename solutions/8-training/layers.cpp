// Chapter 8 — reference implementation of every layer's backward, and the loss.
//
// The llm.c way: no autograd, so each layer gets a hand-written backward, in plain loops over
// the data. The forwards are chapters 2–7's; each backward names the one it undoes. Shapes are written beside every buffer: N rows (the
// B·T tokens, flattened), D features, F hidden features, V vocabulary, B batch, H heads,
// T positions, d the width of one head. Big matrix products go through BLAS
// (xt::linalg::dot calls sgemm for float and dgemm for double).
//
// Gradient conventions (PyTorch's): a backward ASSIGNS the gradient of its inputs (dx) and
// ADDS into the gradients of its parameters (dweight += ...). Parameter gradients therefore
// accumulate over calls until the training loop zeroes them (zero_grad, §21.7).
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
namespace {

// log(sum_j exp(z_j)) of one row z [V], stable: the row maximum m is taken out first, so
// every exp argument is <= 0 (logits of +1000 would overflow exp to inf, and -1000 would
// underflow every term to 0 and give log 0 = -inf).
template <class Real>
Real logsumexp(const Real* z, std::size_t V) {
    Real m = z[0];
    for (std::size_t j = 1; j < V; ++j) m = std::max(m, z[j]);
    Real sum = 0;
    for (std::size_t j = 0; j < V; ++j) sum += std::exp(z[j] - m);
    return m + std::log(sum);
}

// p = softmax(z) of one row [V], through the same stable log-sum-exp.
template <class Real>
void softmax_row(const Real* z, Real* p, std::size_t V) {
    const Real lse = logsumexp(z, V);
    for (std::size_t j = 0; j < V; ++j) p[j] = std::exp(z[j] - lse);
}

// The checks shared by cross_entropy_forward and _backward. Returns the number of valid
// (not ignored) rows. Every target is checked before anything is computed.
template <class Real>
std::size_t check_targets(const char* function, const Mat<Real>& logits,
                          const xt::xtensor<std::int64_t, 1>& targets, std::int64_t ignore_index) {
    const std::size_t N = logits.shape(0), V = logits.shape(1);
    require_shape(function, "targets [N]", targets, {N},
                  "one target per row of logits [N, V] = " + shape_str(logits.shape()));
    std::size_t valid = 0;
    for (std::size_t n = 0; n < N; ++n) {
        const std::int64_t t = targets(n);
        if (t == ignore_index) continue;  // padding: left out of the loss
        if (t < 0 || t >= static_cast<std::int64_t>(V)) {
            throw ValueError(std::string(function) + ": targets[" + std::to_string(n) + "] = " +
                             std::to_string(t) + " is outside [0, V) = [0, " + std::to_string(V) +
                             ") and is not ignore_index = " + std::to_string(ignore_index));
        }
        ++valid;
    }
    return valid;
}

// q, k, v alike, d >= 1 (what the forward, chapter 4's sdpa, accepted for causal attention).
template <class Real>
void check_qkv(const char* function, const Heads<Real>& q, const Heads<Real>& k,
               const Heads<Real>& v) {
    if (k.shape() != q.shape() || v.shape() != q.shape() || q.shape(3) == 0) {
        throw ShapeError(std::string(function) + ": q [B, H, T, d] has shape " +
                         shape_str(q.shape()) + ", k has shape " + shape_str(k.shape()) +
                         " and v has shape " + shape_str(v.shape()) +
                         ", expected three equal shapes with d >= 1");
    }
}

}  // namespace

// ---- Linear: y = x Wᵀ + b -------------------------------------------------------------------

template <class Real>
void linear_backward(const Mat<Real>& dy, const Mat<Real>& x, const Mat<Real>& weight,
                     Mat<Real>& dx, Mat<Real>& dweight, Vec<Real>& dbias) {
    const char* f = "wb::linear_backward";
    const std::size_t N = x.shape(0), in = x.shape(1), out = weight.shape(0);
    require_shape(f, "weight [out, in]", weight, {out, in},
                  "in from x [N, in] = " + shape_str(x.shape()));
    require_shape(f, "dy [N, out]", dy, {N, out}, "N from x, out from weight");
    require_shape(f, "dweight [out, in]", dweight, {out, in},
                  "the weight's shape; it is accumulated");
    if (dbias.size() != 0)
        require_shape(f, "dbias [out]", dbias, {out}, "[out], or empty for no bias");

    // dx = dy W: each input feature collects the gradient of every output it fed. Assigned.
    dx = xt::zeros<Real>({N, in});  // [N, in]
    if (N > 0 && in > 0 && out > 0) {
        dx = xt::linalg::dot(dy, weight);  // [N, out] · [out, in]
        // dweight += dyᵀ x: weight (o, i) met input i of every row, scaled by that row's dy_o.
        Mat<Real> dw = xt::linalg::dot(xt::transpose(dy), x);  // [out, N] · [N, in]
        dweight += dw;                                         // ACCUMULATE, never assign
    }
    // dbias += sum over rows of dy: the bias is added to every row.
    if (dbias.size() != 0) {
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t o = 0; o < out; ++o) dbias(o) += dy(n, o);
    }
}

// ---- LayerNorm over the features of each row ------------------------------------------------

template <class Real>
void layer_norm_backward(const Mat<Real>& dy, const Mat<Real>& x, const Vec<Real>& gamma, Real eps,
                         Mat<Real>& dx, Vec<Real>& dgamma, Vec<Real>& dbeta) {
    const char* f = "wb::layer_norm_backward";
    const std::size_t N = x.shape(0), D = x.shape(1);
    if (D == 0) {
        throw ShapeError(std::string(f) + ": x [N, D] has shape " + shape_str(x.shape()) +
                         ", expected D >= 1 features");
    }
    const std::string from_x = "from x [N, D] = " + shape_str(x.shape());
    require_shape(f, "dy [N, D]", dy, {N, D}, "the shape of x");
    require_shape(f, "gamma [D]", gamma, {D}, from_x);
    require_shape(f, "dgamma [D]", dgamma, {D}, from_x + "; it is accumulated");
    require_shape(f, "dbeta [D]", dbeta, {D}, from_x + "; it is accumulated");
    if (!(eps > Real(0)) || !std::isfinite(eps)) {  // the rule of chapter 7's layer_norm
        throw ValueError(std::string(f) + ": eps = " + std::to_string(eps) +
                         ", expected eps > 0 and finite (the forward's eps)");
    }

    dx = Mat<Real>::from_shape({N, D});  // [N, D] assigned
    for (std::size_t n = 0; n < N; ++n) {
        // The row's statistics, recomputed exactly as the forward computed them: the mean,
        // the biased variance (divide by D) and s = 1 / sqrt(var + eps).
        Real m = 0;
        for (std::size_t i = 0; i < D; ++i) m += x(n, i);
        m /= static_cast<Real>(D);
        Real var = 0;
        for (std::size_t i = 0; i < D; ++i) var += (x(n, i) - m) * (x(n, i) - m);
        var /= static_cast<Real>(D);
        const Real s = Real(1) / std::sqrt(var + eps);
        // g = dy ⊙ gamma is the gradient of xhat. Its two row means are the two terms that
        // the mean and the variance contribute: every xhat_i depends on the whole row.
        Real g_mean = 0, gx_mean = 0;
        for (std::size_t i = 0; i < D; ++i) {
            const Real xhat = (x(n, i) - m) * s;
            const Real g = dy(n, i) * gamma(i);
            g_mean += g;
            gx_mean += g * xhat;
        }
        g_mean /= static_cast<Real>(D);
        gx_mean /= static_cast<Real>(D);
        for (std::size_t i = 0; i < D; ++i) {
            const Real xhat = (x(n, i) - m) * s;
            const Real g = dy(n, i) * gamma(i);
            // dx = rstd (g − mean(g) − xhat · mean(g ⊙ xhat))
            dx(n, i) = s * (g - g_mean - xhat * gx_mean);
            dgamma(i) += dy(n, i) * xhat;  // accumulated over rows and over calls
            dbeta(i) += dy(n, i);
        }
    }
}

// ---- GELU, exact: x Φ(x) ---------------------------------------------------------------------

template <class Real>
Mat<Real> gelu_backward(const Mat<Real>& dy, const Mat<Real>& x) {
    if (dy.shape() != x.shape()) {
        throw ShapeError("wb::gelu_backward: dy has shape " + shape_str(dy.shape()) +
                         " and x has shape " + shape_str(x.shape()) + ", expected the same shape");
    }
    const Real inv_sqrt2 = Real(1) / std::sqrt(Real(2));
    const Real inv_sqrt2pi = Real(1) / std::sqrt(Real(2) * std::acos(Real(-1)));  // 1/sqrt(2 pi)
    Mat<Real> dx = Mat<Real>::from_shape(x.shape());                              // [N, F]
    for (std::size_t k = 0; k < x.size(); ++k) {
        const Real v = x.data()[k];
        const Real cdf = Real(0.5) * (Real(1) + std::erf(v * inv_sqrt2));  // Φ(x)
        const Real pdf = std::exp(Real(-0.5) * v * v) * inv_sqrt2pi;       // φ(x) = Φ'(x)
        // d/dx [x Φ(x)] = Φ(x) + x φ(x)   (product rule)
        dx.data()[k] = dy.data()[k] * (cdf + v * pdf);
    }
    return dx;
}

// ---- Causal attention on split heads ---------------------------------------------------------

template <class Real>
void causal_attention_backward(const Heads<Real>& dout, const Heads<Real>& q, const Heads<Real>& k,
                               const Heads<Real>& v, const Heads<Real>& weights, Heads<Real>& dq,
                               Heads<Real>& dk, Heads<Real>& dv) {
    const char* f = "wb::causal_attention_backward";
    check_qkv(f, q, k, v);
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), d = q.shape(3);
    require_shape(f, "dout [B, H, T, d]", dout, {B, H, T, d}, "the shape of q");
    require_shape(
        f, "weights [B, H, T, T]", weights, {B, H, T, T},
        "B, H, T from q [B, H, T, d] = " + shape_str(q.shape()) + ", as saved by the forward");
    const Real scale = Real(1) / std::sqrt(static_cast<Real>(d));

    dq = xt::zeros<Real>({B, H, T, d});  // [B, H, T, d] assigned
    dk = xt::zeros<Real>({B, H, T, d});
    dv = xt::zeros<Real>({B, H, T, d});
    std::vector<Real> dw(T);  // [T] gradient of one query's weights, then of its scores
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t i = 0; i < T; ++i) {
                // out_i = sum_j w_ij v_j  ->  dw_ij = dout_i · v_j,  dv_j += w_ij dout_i
                for (std::size_t j = 0; j <= i; ++j) {
                    Real g = 0;
                    for (std::size_t c = 0; c < d; ++c) {
                        g += dout(b, h, i, c) * v(b, h, j, c);
                        dv(b, h, j, c) += weights(b, h, i, j) * dout(b, h, i, c);
                    }
                    dw[j] = g;
                }
                // Softmax Jacobian-vector product: ds_ij = w_ij (dw_ij − sum_l w_il dw_il).
                Real dot = 0;
                for (std::size_t j = 0; j <= i; ++j) dot += weights(b, h, i, j) * dw[j];
                for (std::size_t j = 0; j <= i; ++j) dw[j] = weights(b, h, i, j) * (dw[j] - dot);
                // s_ij = scale · q_i · k_j  ->  dq_i += scale ds_ij k_j,  dk_j += scale ds_ij q_i
                for (std::size_t j = 0; j <= i; ++j) {
                    const Real ds = dw[j] * scale;
                    for (std::size_t c = 0; c < d; ++c) {
                        dq(b, h, i, c) += ds * k(b, h, j, c);
                        dk(b, h, j, c) += ds * q(b, h, i, c);
                    }
                }
                // Keys j > i were hidden: weight 0, no gradient flows to them from query i.
            }
        }
    }
}

// ---- RoPE: a rotation per pair of features, undone by the opposite rotation ------------------

template <class Real>
Heads<Real> rope_backward(const Heads<Real>& dy, std::int64_t offset, Real base) {
    const char* f = "wb::rope_backward";
    const std::size_t B = dy.shape(0), H = dy.shape(1), T = dy.shape(2), d = dy.shape(3);
    if (d % 2 != 0) {
        throw ShapeError(std::string(f) + ": dy [B, H, T, d] has shape " + shape_str(dy.shape()) +
                         ", expected an even head width d (RoPE turns pairs of features)");
    }
    if (offset < 0) {
        throw ValueError(std::string(f) + ": offset = " + std::to_string(offset) +
                         ", expected offset >= 0 (the position of the first token)");
    }
    if (!(base > Real(1)) || !std::isfinite(base)) {
        throw ValueError(std::string(f) + ": base = " + std::to_string(base) +
                         ", expected a finite base > 1");
    }
    Heads<Real> dx = Heads<Real>::from_shape(dy.shape());  // [B, H, T, d] assigned
    for (std::size_t t = 0; t < T; ++t) {
        const double p = static_cast<double>(offset) + static_cast<double>(t);  // position
        for (std::size_t i = 0; i < d / 2; ++i) {
            // The forward's angle p θ_i in double, θ_i = base^(−2i/d).
            const double theta = std::pow(static_cast<double>(base),
                                          -2.0 * static_cast<double>(i) / static_cast<double>(d));
            const Real c = static_cast<Real>(std::cos(p * theta)),
                       sn = static_cast<Real>(std::sin(p * theta));
            for (std::size_t b = 0; b < B; ++b) {
                for (std::size_t h = 0; h < H; ++h) {
                    const Real g0 = dy(b, h, t, 2 * i), g1 = dy(b, h, t, 2 * i + 1);
                    // The transposed rotation [[c, s], [−s, c]]: the angle −p θ_i.
                    dx(b, h, t, 2 * i) = g0 * c + g1 * sn;
                    dx(b, h, t, 2 * i + 1) = -g0 * sn + g1 * c;
                }
            }
        }
    }
    return dx;
}

// ---- Embedding backward ---------------------------------------------------------------------

template <class Real>
void embedding_backward(const TokenIds& ids, const Mat<Real>& dout, Mat<Real>& dtable) {
    const char* f = "wb::embedding_backward";
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    const std::size_t V = dtable.shape(0), D = dtable.shape(1);
    require_shape(f, "dout [B*T, D]", dout, {B * T, D},
                  "B*T rows from ids [B, T] = " + shape_str(ids.shape()) +
                      ", D from dtable [V, D] = " + shape_str(dtable.shape()));
    // Check every id before touching dtable, so that an error leaves it unchanged.
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || id >= static_cast<std::int64_t>(V)) {
                throw ValueError(std::string(f) + ": ids[" + std::to_string(b) + ", " +
                                 std::to_string(t) + "] = " + std::to_string(id) +
                                 " is outside [0, V) = [0, " + std::to_string(V) + ")");
            }
        }
    }
    // The forward copied row ids[b, t] of the table; its gradient flows back there. A token
    // that occurs several times gets the SUM of its rows' gradients (+=, never =).
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::size_t row = b * T + t;                    // row of dout
            const auto id = static_cast<std::size_t>(ids(b, t));  // row of dtable
            for (std::size_t c = 0; c < D; ++c) dtable(id, c) += dout(row, c);
        }
    }
}

// ---- Cross entropy from raw logits -----------------------------------------------------------

template <class Real>
Real cross_entropy_forward(const Mat<Real>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                           std::int64_t ignore_index) {
    const std::size_t valid =
        check_targets("wb::cross_entropy_forward", logits, targets, ignore_index);
    const std::size_t N = logits.shape(0), V = logits.shape(1);
    if (valid == 0) return Real(0);  // nothing to learn from: 0, not 0/0
    Real total = 0;
    for (std::size_t n = 0; n < N; ++n) {
        if (targets(n) == ignore_index) continue;  // padding: not part of the loss
        const Real* z = &logits(n, 0);             // [V] raw logits of row n
        const auto t = static_cast<std::size_t>(targets(n));
        // −log softmax(z)[t] = logsumexp(z) − z[t], without ever forming the probabilities
        total += logsumexp(z, V) - z[t];
    }
    return total / static_cast<Real>(valid);  // mean over the VALID rows
}

template <class Real>
Mat<Real> cross_entropy_backward(const Mat<Real>& logits,
                                 const xt::xtensor<std::int64_t, 1>& targets,
                                 std::int64_t ignore_index) {
    const std::size_t valid =
        check_targets("wb::cross_entropy_backward", logits, targets, ignore_index);
    const std::size_t N = logits.shape(0), V = logits.shape(1);
    Mat<Real> dlogits = xt::zeros<Real>({N, V});  // [N, V]; ignored rows stay 0
    for (std::size_t n = 0; n < N; ++n) {
        if (targets(n) == ignore_index) continue;
        Real* g = &dlogits(n, 0);
        softmax_row(&logits(n, 0), g, V);                                      // g = softmax(z)
        g[static_cast<std::size_t>(targets(n))] -= Real(1);                    // − onehot(target)
        for (std::size_t j = 0; j < V; ++j) g[j] /= static_cast<Real>(valid);  // of the mean
    }
    return dlogits;
}

// ---- The two instantiations: float for training, double for the gradient checks -------------

WB_INSTANTIATE_LAYERS(float)
WB_INSTANTIATE_LAYERS(double)

}  // namespace WB_IMPL
}  // namespace wb
