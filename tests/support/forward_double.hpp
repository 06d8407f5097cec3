// The forwards of the model's layers in double, written out plainly for the gradient checks.
//
// The model runs chapters 2–7's float functions (linear, layer_norm, gelu, apply_rope, sdpa
// with causal_mask). A central difference in float is too coarse to prove a backward right
// (gradcheck.hpp says why), so each backward of chapter 8 is checked against the slope of
// the same formula in double, computed here. These are test code, not the learner's: their
// numbers are the specification of each layer, the same as the chapters' headers state.
// Shapes: N rows, D (or in/out) features, B batch, H heads, T positions, d one head's width.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "8-training/layers.hpp"
#include "8-training/model.hpp"

namespace wbtest {

/// y = x Wᵀ + b: x [N, in], weight [out, in], bias [out] or empty → [N, out].
template <class Real>
wb::Mat<Real> linear_forward(const wb::Mat<Real>& x, const wb::Mat<Real>& weight,
                             const wb::Vec<Real>& bias) {
    const std::size_t N = x.shape(0), in = x.shape(1), out = weight.shape(0);
    wb::Mat<Real> y = wb::Mat<Real>::from_shape({N, out});
    for (std::size_t n = 0; n < N; ++n) {
        for (std::size_t o = 0; o < out; ++o) {
            Real s = bias.size() != 0 ? bias(o) : Real(0);
            for (std::size_t i = 0; i < in; ++i) s += x(n, i) * weight(o, i);
            y(n, o) = s;
        }
    }
    return y;
}

/// LayerNorm of each row of x [N, D]: (x − mean) / sqrt(var + eps) · gamma + beta, the
/// variance divided by D.
template <class Real>
wb::Mat<Real> layer_norm_forward(const wb::Mat<Real>& x, const wb::Vec<Real>& gamma,
                                 const wb::Vec<Real>& beta, Real eps) {
    const std::size_t N = x.shape(0), D = x.shape(1);
    wb::Mat<Real> y = wb::Mat<Real>::from_shape({N, D});
    for (std::size_t n = 0; n < N; ++n) {
        Real m = 0, v = 0;
        for (std::size_t i = 0; i < D; ++i) m += x(n, i);
        m /= static_cast<Real>(D);
        for (std::size_t i = 0; i < D; ++i) v += (x(n, i) - m) * (x(n, i) - m);
        v /= static_cast<Real>(D);
        const Real s = Real(1) / std::sqrt(v + eps);
        for (std::size_t i = 0; i < D; ++i) y(n, i) = (x(n, i) - m) * s * gamma(i) + beta(i);
    }
    return y;
}

/// GELU, the exact form x Φ(x), element-wise.
template <class Real>
wb::Mat<Real> gelu_forward(const wb::Mat<Real>& x) {
    wb::Mat<Real> y = wb::Mat<Real>::from_shape(x.shape());
    for (std::size_t k = 0; k < x.size(); ++k) {
        const Real v = x.data()[k];
        y.data()[k] = Real(0.5) * v * (Real(1) + std::erf(v / std::sqrt(Real(2))));
    }
    return y;
}

/// Causal attention on split heads q, k, v [B, H, T, d]: weights [B, H, T, T] (zeros above
/// the diagonal) = softmax(q kᵀ / sqrt(d)) over keys j <= i; returns weights · v.
template <class Real>
wb::Heads<Real> causal_attention_forward(const wb::Heads<Real>& q, const wb::Heads<Real>& k,
                                         const wb::Heads<Real>& v, wb::Heads<Real>& weights) {
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), d = q.shape(3);
    const Real scale = Real(1) / std::sqrt(static_cast<Real>(d));
    weights = wb::Heads<Real>::from_shape({B, H, T, T});
    weights.fill(Real(0));
    wb::Heads<Real> out = wb::Heads<Real>::from_shape({B, H, T, d});
    out.fill(Real(0));
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t i = 0; i < T; ++i) {
                Real m = -std::numeric_limits<Real>::infinity();
                for (std::size_t j = 0; j <= i; ++j) {
                    Real s = 0;
                    for (std::size_t c = 0; c < d; ++c) s += q(b, h, i, c) * k(b, h, j, c);
                    weights(b, h, i, j) = s * scale;
                    m = std::max(m, s * scale);
                }
                Real sum = 0;
                for (std::size_t j = 0; j <= i; ++j) {
                    weights(b, h, i, j) = std::exp(weights(b, h, i, j) - m);
                    sum += weights(b, h, i, j);
                }
                for (std::size_t j = 0; j <= i; ++j) {
                    weights(b, h, i, j) /= sum;
                    for (std::size_t c = 0; c < d; ++c) {
                        out(b, h, i, c) += weights(b, h, i, j) * v(b, h, j, c);
                    }
                }
            }
        }
    }
    return out;
}

/// RoPE on x [B, H, T, d]: pair (x[2i], x[2i+1]) of the token at position p = offset + t is
/// turned counter-clockwise by p · base^(−2i/d).
template <class Real>
wb::Heads<Real> rope_forward(const wb::Heads<Real>& x, std::int64_t offset, Real base) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d = x.shape(3);
    wb::Heads<Real> y = wb::Heads<Real>::from_shape(x.shape());
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t i = 0; i < d / 2; ++i) {
                    const double angle =
                        static_cast<double>(offset + static_cast<std::int64_t>(t)) *
                        std::pow(static_cast<double>(base), -2.0 * double(i) / double(d));
                    const Real c = static_cast<Real>(std::cos(angle)),
                               s = static_cast<Real>(std::sin(angle));
                    const Real x0 = x(b, h, t, 2 * i), x1 = x(b, h, t, 2 * i + 1);
                    y(b, h, t, 2 * i) = x0 * c - x1 * s;
                    y(b, h, t, 2 * i + 1) = x0 * s + x1 * c;
                }
    return y;
}

/// The mean cross entropy of logits [N, V] against targets [N] (ignore_index left out).
template <class Real>
Real cross_entropy(const wb::Mat<Real>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                   std::int64_t ignore_index) {
    Real total = 0;
    std::size_t valid = 0;
    for (std::size_t n = 0; n < logits.shape(0); ++n) {
        if (targets(n) == ignore_index) continue;
        Real m = logits(n, 0), sum = 0;
        for (std::size_t j = 0; j < logits.shape(1); ++j) m = std::max(m, logits(n, j));
        for (std::size_t j = 0; j < logits.shape(1); ++j) sum += std::exp(logits(n, j) - m);
        total += m + std::log(sum) - logits(n, static_cast<std::size_t>(targets(n)));
        ++valid;
    }
    return valid == 0 ? Real(0) : total / static_cast<Real>(valid);
}

/// The whole GPT of model.hpp in T (double for the model's gradient check), on rows
/// [N, ·], N = B·T: the recipe of wb::gpt_forward written out with the forwards above.
template <class Real>
Real gpt_loss(const wb::GptParams<Real>& p, const wb::GptConfig& c, const wb::TokenIds& inputs,
              const wb::TokenIds& targets, std::int64_t ignore_index) {
    const std::size_t B = inputs.shape(0), T = inputs.shape(1), D = c.D, H = c.H, d = D / H;
    const bool rope = c.positions == wb::Positions::rope;
    const Real eps = static_cast<Real>(wb::kGptLayerNormEps);
    const wb::Vec<Real> none = wb::Vec<Real>::from_shape({0});
    wb::Mat<Real> x = wb::Mat<Real>::from_shape({B * T, D});  // [N, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < D; ++j)
                x(b * T + t, j) = p.wte(static_cast<std::size_t>(inputs(b, t)), j) +
                                  (rope ? Real(0) : p.wpe(t, j));
    // [N, D] <-> [B, H, T, d]: column h·d + i of row b·T + t is head h's feature i.
    const auto split = [&](const wb::Mat<Real>& m) {
        wb::Heads<Real> out = wb::Heads<Real>::from_shape({B, H, T, d});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < d; ++i) out(b, h, t, i) = m(b * T + t, h * d + i);
        return out;
    };
    const auto merge = [&](const wb::Heads<Real>& q) {
        wb::Mat<Real> out = wb::Mat<Real>::from_shape({B * T, D});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t t = 0; t < T; ++t)
                    for (std::size_t i = 0; i < d; ++i) out(b * T + t, h * d + i) = q(b, h, t, i);
        return out;
    };
    for (const wb::GptBlock<Real>& w : p.blocks) {
        const wb::Mat<Real> h = layer_norm_forward(x, w.ln1_g, w.ln1_b, eps);
        wb::Heads<Real> q = split(linear_forward(h, w.w_q, w.b_q));
        wb::Heads<Real> k = split(linear_forward(h, w.w_k, w.b_k));
        const wb::Heads<Real> v = split(linear_forward(h, w.w_v, w.b_v));
        if (rope) {
            q = rope_forward(q, 0, static_cast<Real>(wb::kRopeBase));
            k = rope_forward(k, 0, static_cast<Real>(wb::kRopeBase));
        }
        wb::Heads<Real> weights;
        x = x + linear_forward(merge(causal_attention_forward(q, k, v, weights)), w.w_o, w.b_o);
        const wb::Mat<Real> h2 = layer_norm_forward(x, w.ln2_g, w.ln2_b, eps);
        x = x +
            linear_forward(gelu_forward(linear_forward(h2, w.w_fc, w.b_fc)), w.w_proj, w.b_proj);
    }
    const wb::Mat<Real> logits =
        linear_forward(layer_norm_forward(x, p.ln_f_g, p.ln_f_b, eps), p.lm_head, none);
    xt::xtensor<std::int64_t, 1> flat = xt::xtensor<std::int64_t, 1>::from_shape({B * T});
    std::copy(targets.begin(), targets.end(), flat.begin());
    return cross_entropy(logits, flat, ignore_index);
}

}  // namespace wbtest
