// The readable kernel: the answer to the capstone's tasks as the guide teaches them first
// (sections 3–6), with plain loops and `omp simd`. It passes every capstone check. The
// tuned kernel of section 7 (../attention_kernel.cpp) adds a register-blocked micro-kernel,
// a vectorised exp, paired query blocks and a backward in two passes.
//
// Run the checks or the benchmark on it (the build compiles this folder in place of yours):
//   cmake --workflow --preset readable
//   build/readable/bench/bench_workbook --benchmark_filter=capstone
//
// Three changes from the one-key-at-a-time loops of the tasks make it 2–3 times as fast:
//  - keys in blocks of BC: a block of keys is transposed once, kt = [d, BC], so the scores
//    of a query row against the whole block are one loop along the keys (`s[j] += q[c]·kt[c][j]`)
//    that vectorises with no horizontal sum;
//  - the online softmax per block, not per key: one max, one rescale of the running output
//    and one exp(m − m_new) per 64 keys instead of per key;
//  - four rows per pass in both products (add_rows), so the running sums are not one long
//    chain of dependent updates through memory.
// And the task functions are compiled for AVX-512, AVX2 + FMA and the default target, the
// widest the processor has running (WB_SIMD_DISPATCH below).
#include "capstone/attention_kernel.hpp"
#include "workbook/simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

// Nothing here reads the floating-point exception flags; without this g++ will not turn the
// max loops into SIMD selects (guide, section 7).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

// The two task functions are compiled three times, for AVX-512, for AVX2 + FMA and for the
// build's default target, and each call runs the widest the processor has
// (WB_SIMD_DISPATCH from workbook/simd.hpp, the fast paths' one dispatch; section 7 of the
// guide does the same by hand). To time one instruction set alone, cap it: WB_SIMD=1 (AVX2 +
// FMA) or WB_SIMD=0 (the default target) in the environment.
// The small helpers are inlined into the task functions, so each copy uses its own vectors.
#define WB_INLINE inline __attribute__((always_inline))

namespace wb {
inline namespace WB_IMPL {

namespace {

constexpr std::size_t BR = 64;  // query rows per task
constexpr std::size_t BC = 64;  // keys per block

void require_positive(const char* function, const AttentionShape& s) {
    if (s.B == 0 || s.H == 0 || s.T == 0 || s.d == 0) {
        throw ValueError(std::string(function) +
                         ": got shape [B, H, T, d] = " + shape_str(Shape{s.B, s.H, s.T, s.d}) +
                         ", expected every axis to be at least 1");
    }
}

// kt[c·BC + j] = x[(j0 + j)·d + c] for the n ≤ BC rows j0 .. j0+n−1 of a [T, d] head.
WB_INLINE void transpose_block(const float* x, std::size_t j0, std::size_t n, std::size_t d,
                               float* kt) {
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t c = 0; c < d; ++c) kt[c * BC + j] = x[(j0 + j) * d + c];
}

// y[e] += Σ_{u < rows} a[u]·x[u·stride + e] for e < n: `rows` rows of x, weighted, added to y.
// Four rows per pass: y[e] is loaded and stored once per four multiply-adds. One row per pass
// would make every y[e] a chain of `rows` dependent updates through memory, and the chain, not
// the arithmetic, would set the speed.
WB_INLINE void add_rows(float* y, std::size_t n, const float* a, const float* x, std::size_t stride,
                        std::size_t rows) {
    std::size_t u = 0;
    for (; u + 4 <= rows; u += 4) {
        const float a0 = a[u], a1 = a[u + 1], a2 = a[u + 2], a3 = a[u + 3];
        const float* x0 = x + u * stride;
        const float* x1 = x0 + stride;
        const float* x2 = x1 + stride;
        const float* x3 = x2 + stride;
#pragma omp simd
        for (std::size_t e = 0; e < n; ++e)
            y[e] += a0 * x0[e] + a1 * x1[e] + a2 * x2[e] + a3 * x3[e];
    }
    for (; u < rows; ++u) {
        const float au = a[u];
        const float* xu = x + u * stride;
#pragma omp simd
        for (std::size_t e = 0; e < n; ++e) y[e] += au * xu[e];
    }
}

// s[j] = Σ_c a[c]·kt[c·BC + j] for j < BC: one row against a transposed block.
WB_INLINE void row_times_block(const float* a, const float* kt, std::size_t d, float* s) {
    for (std::size_t j = 0; j < BC; ++j) s[j] = 0.0f;
    add_rows(s, BC, a, kt, BC, d);
}

// One forward task: query rows i0 .. i0+rows−1 of one head against every key block up to
// the diagonal, with the online softmax per block. Scratch: kt [d, BC], sc [BC], m and l [BR].
WB_SIMD_BODY void forward_task_body(const float* qh, const float* kh, const float* vh, float* oh,
                                    float* lh, std::size_t T, std::size_t d, std::size_t i0,
                                    float* kt, float* sc, float* m, float* l) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const std::size_t rows = std::min(BR, T - i0);
    for (std::size_t r = 0; r < rows; ++r) {
        m[r] = -std::numeric_limits<float>::infinity();  // running max of row i0 + r
        l[r] = 0.0f;                                     // running sum of exp(s − m)
        for (std::size_t c = 0; c < d; ++c) oh[(i0 + r) * d + c] = 0.0f;
    }

    for (std::size_t j0 = 0; j0 < i0 + rows; j0 += BC) {  // causal: up to the diagonal
        const std::size_t n = std::min(BC, T - j0);
        transpose_block(kh, j0, n, d, kt);
        for (std::size_t i = std::max(i0, j0); i < i0 + rows; ++i) {
            const std::size_t r = i - i0;
            float* oi = oh + i * d;  // [d] running, unnormalised output
            row_times_block(qh + i * d, kt, d, sc);

            const std::size_t last = std::min(n, i - j0 + 1);  // keys j0 .. i only
            float m_new = m[r];
#pragma omp simd reduction(max : m_new)
            for (std::size_t j = 0; j < last; ++j) {
                sc[j] *= scale;
                m_new = sc[j] > m_new ? sc[j] : m_new;  // (std::max is not inlined here)
            }
            // When the max grows, everything summed so far shrinks by exp(m − m_new): once
            // per block, not once per key. It is 0 on the first block (m = −∞).
            const float alpha = std::exp(m[r] - m_new);
            float sum = 0.0f;
            for (std::size_t j = 0; j < last; ++j) {
                sc[j] = std::exp(sc[j] - m_new);
                sum += sc[j];
            }
            l[r] = l[r] * alpha + sum;
            m[r] = m_new;
#pragma omp simd
            for (std::size_t c = 0; c < d; ++c) oi[c] *= alpha;
            add_rows(oi, d, sc, vh + j0 * d, d, last);  // o += Σ_j p_j v_j
        }
    }

    for (std::size_t r = 0; r < rows; ++r) {
        float* oi = oh + (i0 + r) * d;
        const float inv_l = 1.0f / l[r];  // l ≥ 1: the max's own term is exp(0)
        for (std::size_t c = 0; c < d; ++c) oi[c] *= inv_l;
        lh[i0 + r] = m[r] + std::log(l[r]);
    }
}
WB_SIMD_DISPATCH(void, forward_task,
                 (const float* qh, const float* kh, const float* vh, float* oh, float* lh,
                  std::size_t T, std::size_t d, std::size_t i0, float* kt, float* sc, float* m,
                  float* l),
                 (qh, kh, vh, oh, lh, T, d, i0, kt, sc, m, l))

// The backward of one whole head (dk_j and dv_j sum over the rows i ≥ j, so a head is not
// split). Scratch: kt and vt [d, BC], p and ds [BC].
WB_SIMD_BODY void backward_head_body(const float* qh, const float* kh, const float* vh,
                                     const float* oh, const float* lh, const float* gh, float* dqh,
                                     float* dkh, float* dvh, std::size_t T, std::size_t d,
                                     float* kt, float* vt, float* p, float* ds) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (std::size_t e = 0; e < T * d; ++e) dqh[e] = dkh[e] = dvh[e] = 0.0f;  // assigned

    for (std::size_t j0 = 0; j0 < T; j0 += BC) {  // key blocks, left to right
        const std::size_t n = std::min(BC, T - j0);
        transpose_block(kh, j0, n, d, kt);
        transpose_block(vh, j0, n, d, vt);
        for (std::size_t i = j0; i < T; ++i) {  // causal: rows i ≥ j0 only
            const float* qi = qh + i * d;       // [d]
            const float* gi = gh + i * d;       // [d] dout_i
            const float* oi = oh + i * d;       // [d]
            float* dqi = dqh + i * d;           // [d]
            float Di = 0.0f;                    // D_i = dout_i · out_i
#pragma omp simd reduction(+ : Di)
            for (std::size_t c = 0; c < d; ++c) Di += gi[c] * oi[c];

            const std::size_t last = std::min(n, i - j0 + 1);  // keys j0 .. i only
            row_times_block(qi, kt, d, p);                     // scores, unscaled
            row_times_block(gi, vt, d, ds);                    // dP_ij = dout_i · v_j
            for (std::size_t j = 0; j < last; ++j) {
                p[j] = std::exp(p[j] * scale - lh[i]);  // recomputed from lse
                ds[j] = p[j] * (ds[j] - Di) * scale;    // dS_ij, times S's scale
            }
            add_rows(dqi, d, ds, kh + j0 * d, d, last);  // dq_i += Σ_j dS_ij k_j
            for (std::size_t j = 0; j < last; ++j) {
                float* dkj = dkh + (j0 + j) * d;
                float* dvj = dvh + (j0 + j) * d;
#pragma omp simd
                for (std::size_t c = 0; c < d; ++c) {
                    dvj[c] += p[j] * gi[c];   // out_i = Σ_j P_ij v_j
                    dkj[c] += ds[j] * qi[c];  // S_ij = q_i · k_j / sqrt(d)
                }
            }
        }
    }
}
WB_SIMD_DISPATCH(void, backward_head,
                 (const float* qh, const float* kh, const float* vh, const float* oh,
                  const float* lh, const float* gh, float* dqh, float* dkh, float* dvh,
                  std::size_t T, std::size_t d, float* kt, float* vt, float* p, float* ds),
                 (qh, kh, vh, oh, lh, gh, dqh, dkh, dvh, T, d, kt, vt, p, ds))

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
    require_positive("wb::attention_forward", s);
    const std::size_t T = s.T, d = s.d, nb = (T + BR - 1) / BR;
    const long long tasks = static_cast<long long>(s.B * s.H * nb);
#pragma omp parallel
    {
        std::vector<float> kt(d * BC), sc(BC), m(BR), l(BR);  // this thread's scratch
        // A task is (head bh, query block); its work grows with the block, so threads take
        // tasks dynamically. Each row is computed by one task in a fixed order: the same
        // bits for any thread count.
#pragma omp for schedule(dynamic, 1)
        for (long long t = 0; t < tasks; ++t) {
            const std::size_t bh = static_cast<std::size_t>(t) / nb;
            const std::size_t i0 = (static_cast<std::size_t>(t) % nb) * BR;
            const std::size_t off = bh * T * d;
            forward_task(q + off, k + off, v + off, out + off, lse + bh * T, T, d, i0, kt.data(),
                         sc.data(), m.data(), l.data());
        }
    }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                        float* dv) {
    require_positive("wb::attention_backward", s);
    const std::size_t T = s.T, d = s.d;
    const long long heads = static_cast<long long>(s.B * s.H);
#pragma omp parallel
    {
        std::vector<float> kt(d * BC), vt(d * BC), p(BC), ds(BC);  // this thread's scratch
#pragma omp for schedule(dynamic, 1)
        for (long long h = 0; h < heads; ++h) {
            const std::size_t off = static_cast<std::size_t>(h) * T * d;
            backward_head(q + off, k + off, v + off, out + off, lse + h * T, dout + off, dq + off,
                          dk + off, dv + off, T, d, kt.data(), vt.data(), p.data(), ds.data());
        }
    }
}

Heads<float> attention_forward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                               xt::xtensor<float, 3>& lse) {
    const char* fn = "wb::attention_forward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    require_shape(fn, "k", k, qs);
    require_shape(fn, "v", v, qs);
    const AttentionShape s{qs[0], qs[1], qs[2], qs[3]};
    Heads<float> out(q.shape());                               // [B, H, T, d]
    lse = xt::xtensor<float, 3>::from_shape({s.B, s.H, s.T});  // [B, H, T]
    attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    return out;
}

void attention_backward(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                        const Heads<float>& out, const xt::xtensor<float, 3>& lse,
                        const Heads<float>& dout, Heads<float>& dq, Heads<float>& dk,
                        Heads<float>& dv) {
    const char* fn = "wb::attention_backward";
    require_nonempty(fn, "q", q);
    const Shape qs(q.shape().begin(), q.shape().end());
    for (auto [name, x] : {std::pair{"k", &k}, {"v", &v}, {"out", &out}, {"dout", &dout}})
        require_shape(fn, name, *x, qs);
    require_shape(fn, "lse", lse, Shape{qs[0], qs[1], qs[2]});
    dq = Heads<float>::from_shape(q.shape());  // [B, H, T, d] each
    dk = Heads<float>::from_shape(q.shape());
    dv = Heads<float>::from_shape(q.shape());
    attention_backward(AttentionShape{qs[0], qs[1], qs[2], qs[3]}, q.data(), k.data(), v.data(),
                       out.data(), lse.data(), dout.data(), dq.data(), dk.data(), dv.data());
}

}  // namespace WB_IMPL
}  // namespace wb
