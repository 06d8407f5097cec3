// Reference for the capstone: causal attention on raw float buffers, forward and backward.
//
// Layout (row-major, contiguous): a [B, H, T, d] tensor is B·H independent [T, d] matrices,
// one per (batch, head); row t of head bh starts at (bh·T + t)·d. The inner loops all run
// over c in [0, d), contiguous in memory, so the compiler vectorises them. No BLAS inside the
// parallel regions: every thread does plain loops on its own rows.
#include "capstone/attention_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

namespace wb {
inline namespace WB_IMPL {

namespace {

// Raises a ValueError from `function` if an axis of the shape is 0.
void require_positive(const char* function, const AttentionShape& s) {
    if (s.B == 0 || s.H == 0 || s.T == 0 || s.d == 0) {
        throw ValueError(std::string(function) + ": got shape [B, H, T, d] = " +
                         shape_str(Shape{s.B, s.H, s.T, s.d}) +
                         ", expected every axis to be at least 1");
    }
}

// The AttentionShape of a [B, H, T, d] cube.
AttentionShape shape_of(const Cube<float>& x) {
    return AttentionShape{x.shape(0), x.shape(1), x.shape(2), x.shape(3)};
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
    require_positive("wb::attention_forward", s);
    const std::size_t T = s.T, d = s.d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const long long rows = static_cast<long long>(s.B * s.H * T);  // one task per query row

    // Each row is computed start to finish by one thread, always in the same order, so the
    // result does not depend on the thread count. Row i has i + 1 keys: dynamic scheduling
    // keeps the threads evenly loaded despite the triangle.
#pragma omp parallel for schedule(dynamic, 16)
    for (long long r = 0; r < rows; ++r) {
        const std::size_t row = static_cast<std::size_t>(r);
        const std::size_t bh = row / T;  // which (b, h)
        const std::size_t i = row % T;   // which query position
        const float* qi = q + row * d;   // [d]
        const float* kh = k + bh * T * d;  // [T, d] keys of this head
        const float* vh = v + bh * T * d;  // [T, d] values of this head
        float* oi = out + row * d;         // [d] the running (unnormalised) output o

        for (std::size_t c = 0; c < d; ++c) oi[c] = 0.0f;
        float m = -std::numeric_limits<float>::infinity();  // running max of the scores
        float l = 0.0f;                                      // running sum of exp(s - m)

        for (std::size_t j = 0; j <= i; ++j) {  // causal: keys j > i are never read
            const float* kj = kh + j * d;
            float dot = 0.0f;
            #pragma omp simd reduction(+ : dot)
            for (std::size_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
            const float sj = dot * scale;

            // Online softmax: when the max grows, everything summed so far was measured
            // against the old max and must shrink by exp(m - m_new) (0 on the first key).
            const float m_new = std::max(m, sj);
            const float alpha = std::exp(m - m_new);
            const float p = std::exp(sj - m_new);
            l = l * alpha + p;
            const float* vj = vh + j * d;
            for (std::size_t c = 0; c < d; ++c) oi[c] = oi[c] * alpha + p * vj[c];
            m = m_new;
        }

        const float inv_l = 1.0f / l;  // l >= 1: the max's own term is exp(0)
        for (std::size_t c = 0; c < d; ++c) oi[c] *= inv_l;
        lse[row] = m + std::log(l);  // log Σ_j exp(s_ij), the softmax's normaliser
    }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* dout, float* dq,
                        float* dk, float* dv) {
    require_positive("wb::attention_backward", s);
    const std::size_t T = s.T, d = s.d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const long long heads = static_cast<long long>(s.B * s.H);

    // dk_j and dv_j receive a term from every query row i >= j, so rows of one head cannot be
    // split across threads without a race. One (b, h) per thread: its [T, d] slices of dq, dk
    // and dv belong to that thread alone, and the sums run in a fixed order.
#pragma omp parallel for schedule(static)
    for (long long h = 0; h < heads; ++h) {
        const std::size_t off = static_cast<std::size_t>(h) * T * d;  // start of this head
        const float* qh = q + off;     // [T, d]
        const float* kh = k + off;     // [T, d]
        const float* vh = v + off;     // [T, d]
        const float* oh = out + off;   // [T, d]
        const float* gh = dout + off;  // [T, d]
        const float* lh = lse + static_cast<std::size_t>(h) * T;  // [T]
        float* dqh = dq + off;  // [T, d]
        float* dkh = dk + off;  // [T, d]
        float* dvh = dv + off;  // [T, d]

        // Gradients are assigned: start from zero, whatever the caller's buffers hold.
        for (std::size_t e = 0; e < T * d; ++e) dqh[e] = dkh[e] = dvh[e] = 0.0f;

        for (std::size_t i = 0; i < T; ++i) {
            const float* qi = qh + i * d;
            const float* gi = gh + i * d;
            const float* oi = oh + i * d;
            float* dqi = dqh + i * d;

            // D_i = Σ_j P_ij dP_ij = dout_i · out_i: the softmax backward's row term.
            float Di = 0.0f;
            #pragma omp simd reduction(+ : Di)
            for (std::size_t c = 0; c < d; ++c) Di += gi[c] * oi[c];

            for (std::size_t j = 0; j <= i; ++j) {
                const float* kj = kh + j * d;
                const float* vj = vh + j * d;
                // Recompute the weight from the saved log-sum-exp: no T × T matrix stored.
                float dot = 0.0f;
                #pragma omp simd reduction(+ : dot)
                for (std::size_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
                const float p = std::exp(dot * scale - lh[i]);

                float dp = 0.0f;  // dP_ij = dout_i · v_j
                #pragma omp simd reduction(+ : dp)
                for (std::size_t c = 0; c < d; ++c) dp += gi[c] * vj[c];
                const float ds = p * (dp - Di) * scale;  // dS_ij, times the scale of S

                float* dkj = dkh + j * d;
                float* dvj = dvh + j * d;
                for (std::size_t c = 0; c < d; ++c) {
                    dvj[c] += p * gi[c];   // out_i = Σ_j P_ij v_j
                    dqi[c] += ds * kj[c];  // S_ij = q_i · k_j / sqrt(d)
                    dkj[c] += ds * qi[c];
                }
            }
        }
    }
}

Cube<float> attention_forward(const Cube<float>& q, const Cube<float>& k, const Cube<float>& v,
                              xt::xtensor<float, 3>& lse) {
    const char* fn = "wb::attention_forward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    const AttentionShape s = shape_of(q);
    Cube<float> out(q.shape());                              // [B, H, T, d]
    lse = xt::xtensor<float, 3>::from_shape({s.B, s.H, s.T});  // [B, H, T]
    attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    return out;
}

void attention_backward(const Cube<float>& q, const Cube<float>& k, const Cube<float>& v,
                        const Cube<float>& out, const xt::xtensor<float, 3>& lse,
                        const Cube<float>& dout, Cube<float>& dq, Cube<float>& dk,
                        Cube<float>& dv) {
    const char* fn = "wb::attention_backward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    require_shape(fn, "out", out, qs);
    require_shape(fn, "dout", dout, qs);
    require_shape(fn, "lse", lse, Shape{qs[0], qs[1], qs[2]});
    const AttentionShape s = shape_of(q);
    dq = Cube<float>::from_shape(q.shape());  // [B, H, T, d] each
    dk = Cube<float>::from_shape(q.shape());
    dv = Cube<float>::from_shape(q.shape());
    attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                       dq.data(), dk.data(), dv.data());
}

}  // namespace WB_IMPL
}  // namespace wb
