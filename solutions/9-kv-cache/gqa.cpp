// Chapter 9, extra exercise — reference implementation of grouped-query attention.
// H query heads share H_kv K/V heads in groups of G = H / H_kv consecutive heads: query head h
// reads K/V head h / G. Plain loops, one (b, h, t) query at a time: chapter 4's attention
// written out, with the group's K/V head read in place (nothing is repeated in memory).
#include "9-kv-cache/gqa.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

std::string shapes_str(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v) {
    return "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " +
           shape_str(v.shape());
}

}  // namespace

Heads<float> gqa_attention(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                           bool causal) {
    const std::string fn = "wb::gqa_attention";
    require_nonempty(fn.c_str(), "q [B, H, T, d]", q);
    require_nonempty(fn.c_str(), "k [B, H_kv, M, d]", k);
    require_nonempty(fn.c_str(), "v [B, H_kv, M, d]", v);
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), d = q.shape(3);
    const std::size_t H_kv = k.shape(1), M = k.shape(2);
    if (v.shape() != k.shape()) {
        throw ShapeError(fn + ": " + shapes_str(q, k, v) +
                         ": expected v to have the shape of k, [B, H_kv, M, d]");
    }
    if (k.shape(0) != B || k.shape(3) != d) {
        throw ShapeError(fn + ": " + shapes_str(q, k, v) +
                         ": expected k [B, H_kv, M, d] with B = " + num(B) + " and d = " + num(d) +
                         " as in q");
    }
    if (H % H_kv != 0) {
        throw ShapeError(fn + ": " + shapes_str(q, k, v) + ": H_kv = " + num(H_kv) +
                         " K/V heads do not divide H = " + num(H) +
                         " query heads (expected H % H_kv == 0)");
    }
    if (causal && T > M) {
        throw ShapeError(fn + ": " + shapes_str(q, k, v) + ": causal needs T = " + num(T) +
                         " <= M = " + num(M) + " (the queries are the last T of the M positions)");
    }

    const std::size_t G = H / H_kv;  // query heads per K/V head
    const std::size_t past = M - T;  // with causal: positions before the first query
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));

    Heads<float> out = xt::zeros<float>({B, H, T, d});  // [B, H, T, d]
    std::vector<float> w(M);                            // [M] one query's scores, then weights
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t g = h / G;  // the K/V head of h's group
            for (std::size_t t = 0; t < T; ++t) {
                // Query t sits at position past + t: it sees keys [0, past + t] when causal.
                const std::size_t end = causal ? past + t + 1 : M;
                float m = -INFINITY;
                for (std::size_t j = 0; j < end; ++j) {
                    float dot = 0.0f;
                    for (std::size_t e = 0; e < d; ++e) dot += q(b, h, t, e) * k(b, g, j, e);
                    w[j] = dot * scale;
                    m = std::max(m, w[j]);
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j < end; ++j) {
                    w[j] = std::exp(w[j] - m);  // shifted by the maximum: no overflow
                    sum += w[j];
                }
                for (std::size_t j = 0; j < end; ++j) {
                    const float a = w[j] / sum;
                    for (std::size_t e = 0; e < d; ++e) out(b, h, t, e) += a * v(b, g, j, e);
                }
            }
        }
    }
    return out;
}

std::size_t gqa_cache_elements(const GptConfig& config, std::size_t H_kv, std::size_t B) {
    const std::string fn = "wb::gqa_cache_elements";
    const std::size_t H = config.H, D = config.D;
    if (H == 0 || D % H != 0) {
        throw ValueError(fn + ": config H = " + num(H) + ", D = " + num(D) +
                         ": expected H >= 1 dividing D (each head has width d = D / H)");
    }
    if (H_kv == 0 || H % H_kv != 0) {
        throw ValueError(fn + ": H_kv = " + num(H_kv) + " does not divide H = " + num(H) +
                         " (expected 1 <= H_kv <= H with H % H_kv == 0)");
    }
    const std::size_t d = D / H;
    checked_size(fn, "2 x L x B x T_max x H_kv x d",
                 {2, config.L, B, config.T_max, H_kv, d});  // refuses a product that wraps
    // K and V (2), per layer (L), per sequence (B), per position (T_max), H_kv heads of d floats.
    return 2 * config.L * B * config.T_max * H_kv * d;
}

}  // namespace WB_IMPL
}  // namespace wb
