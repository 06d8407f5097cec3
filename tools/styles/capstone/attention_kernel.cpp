// Capstone, a second answer: the forward one head per iteration (the rows of a head in order),
// the backward one key row per pass for dk and dv and one query row per pass for dq, so no
// head's gradient is shared; checks written out without the core helpers.
#include "capstone/attention_kernel.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

void require_axes(const char* fn, const AttentionShape& s) {
    if (s.B == 0 || s.H == 0 || s.T == 0 || s.d == 0) {
        throw ValueError(std::string(fn) + ": B = " + std::to_string(s.B) +
                         ", H = " + std::to_string(s.H) + ", T = " + std::to_string(s.T) +
                         ", d = " + std::to_string(s.d) + "; every axis must be at least 1");
    }
    checked_size(fn, "B x H x T x d", {s.B, s.H, s.T, s.d});
}

float dot(const float* a, const float* b, std::size_t n) {
    float acc = 0.0f;
    for (std::size_t c = 0; c < n; ++c) acc += a[c] * b[c];
    return acc;
}

template <class E>
Shape dims(const E& x) {
    return Shape(x.shape().begin(), x.shape().end());
}

void same_as_q(const char* fn, const char* what, const Heads<float>& x, const Heads<float>& q) {
    if (dims(x) != dims(q)) {
        throw ShapeError(std::string(fn) + ": " + what + " " + shape_str(dims(x)) +
                         " does not match q " + shape_str(dims(q)));
    }
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
    require_axes("wb::attention_forward", s);
    const std::size_t T = s.T, d = s.d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const long long heads = static_cast<long long>(s.B * s.H);
#pragma omp parallel for schedule(static)
    for (long long bh = 0; bh < heads; ++bh) {
        const std::size_t base = static_cast<std::size_t>(bh) * T;
        for (std::size_t i = 0; i < T; ++i) {
            const float* qi = q + (base + i) * d;
            float* oi = out + (base + i) * d;
            for (std::size_t c = 0; c < d; ++c) oi[c] = 0.0f;
            float running_max = -std::numeric_limits<float>::infinity();
            float total = 0.0f;
            for (std::size_t j = 0; j <= i; ++j) {
                const float score = dot(qi, k + (base + j) * d, d) * scale;
                const float top = std::fmax(running_max, score);
                const float shrink = std::exp(running_max - top);
                const float weight = std::exp(score - top);
                total = total * shrink + weight;
                const float* vj = v + (base + j) * d;
                for (std::size_t c = 0; c < d; ++c) oi[c] = oi[c] * shrink + weight * vj[c];
                running_max = top;
            }
            for (std::size_t c = 0; c < d; ++c) oi[c] /= total;
            lse[base + i] = running_max + std::log(total);
        }
    }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                        float* dv) {
    require_axes("wb::attention_backward", s);
    const std::size_t T = s.T, d = s.d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const long long heads = static_cast<long long>(s.B * s.H);
#pragma omp parallel for schedule(static)
    for (long long bh = 0; bh < heads; ++bh) {
        const std::size_t base = static_cast<std::size_t>(bh) * T;
        std::vector<float> Drow(T);
        for (std::size_t i = 0; i < T; ++i) {
            Drow[i] = dot(dout + (base + i) * d, out + (base + i) * d, d);
        }
        // dq, one query row at a time: its keys j <= i.
        for (std::size_t i = 0; i < T; ++i) {
            float* g = dq + (base + i) * d;
            for (std::size_t c = 0; c < d; ++c) g[c] = 0.0f;
            const float* qi = q + (base + i) * d;
            const float* gi = dout + (base + i) * d;
            for (std::size_t j = 0; j <= i; ++j) {
                const float p = std::exp(dot(qi, k + (base + j) * d, d) * scale - lse[base + i]);
                const float ds = p * (dot(gi, v + (base + j) * d, d) - Drow[i]) * scale;
                const float* kj = k + (base + j) * d;
                for (std::size_t c = 0; c < d; ++c) g[c] += ds * kj[c];
            }
        }
        // dk and dv, one key row at a time: its queries i >= j.
        for (std::size_t j = 0; j < T; ++j) {
            float* gk = dk + (base + j) * d;
            float* gv = dv + (base + j) * d;
            for (std::size_t c = 0; c < d; ++c) gk[c] = gv[c] = 0.0f;
            const float* kj = k + (base + j) * d;
            const float* vj = v + (base + j) * d;
            for (std::size_t i = j; i < T; ++i) {
                const float* qi = q + (base + i) * d;
                const float* gi = dout + (base + i) * d;
                const float p = std::exp(dot(qi, kj, d) * scale - lse[base + i]);
                const float ds = p * (dot(gi, vj, d) - Drow[i]) * scale;
                for (std::size_t c = 0; c < d; ++c) {
                    gv[c] += p * gi[c];
                    gk[c] += ds * qi[c];
                }
            }
        }
    }
}

Heads<float> attention_forward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                               xt::xtensor<float, 3>& lse) {
    const char* fn = "wb::attention_forward";
    same_as_q(fn, "k", k, q);
    same_as_q(fn, "v", v, q);
    const Shape sq = dims(q);
    if (q.size() == 0) {
        throw ShapeError(std::string(fn) + ": q " + shape_str(sq) + " has an axis of size 0");
    }
    const AttentionShape s{sq[0], sq[1], sq[2], sq[3]};
    Heads<float> out = Heads<float>::from_shape(sq);
    lse = xt::xtensor<float, 3>::from_shape({s.B, s.H, s.T});
    attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    return out;
}

void attention_backward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                        const Heads<float>& out, const xt::xtensor<float, 3>& lse,
                        const Heads<float>& dout, Heads<float>& dq, Heads<float>& dk,
                        Heads<float>& dv) {
    const char* fn = "wb::attention_backward";
    const Shape sq = dims(q);
    if (q.size() == 0) {
        throw ShapeError(std::string(fn) + ": q " + shape_str(sq) + " has an axis of size 0");
    }
    same_as_q(fn, "k", k, q);
    same_as_q(fn, "v", v, q);
    same_as_q(fn, "out", out, q);
    same_as_q(fn, "dout", dout, q);
    const Shape want{sq[0], sq[1], sq[2]};
    if (dims(lse) != want) {
        throw ShapeError(std::string(fn) + ": lse " + shape_str(dims(lse)) + " should be " +
                         shape_str(want) + " for q " + shape_str(sq));
    }
    const AttentionShape s{sq[0], sq[1], sq[2], sq[3]};
    dq = Heads<float>::from_shape(sq);
    dk = Heads<float>::from_shape(sq);
    dv = Heads<float>::from_shape(sq);
    attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                       dq.data(), dk.data(), dv.data());
}

}  // namespace WB_IMPL
}  // namespace wb
