// Style answer for chapter 9's extra exercise (tools/test-styles): each (b, h) computed as a
// whole [T, M] score matrix, softmaxed row by row in double and multiplied into the output,
// instead of one query row at a time; the shape checks in another valid order with
// messages worded unlike the reference but naming each fact gqa.hpp promises. It exists
// because it is a correct answer: every check of chapter 9 must accept it.
#include "9-kv-cache/gqa.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

Heads<float> gqa_attention(const Heads<float>& q, const Heads<float>& k, const Heads<float>& v,
                           bool causal) {
    const std::string fn = "wb::gqa_attention";
    const std::string shapes =
        "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape());
    if (k.shape() != v.shape()) {
        throw ShapeError(fn + ": " + shapes + ": k and v must have the same shape");
    }
    if (q.size() == 0 || k.size() == 0) {
        throw ShapeError(fn + ": " + shapes + ": every axis must be at least 1");
    }
    const std::size_t B = q.shape()[0], H = q.shape()[1], T = q.shape()[2], d = q.shape()[3];
    const std::size_t Hkv = k.shape()[1], M = k.shape()[2];
    if (k.shape()[0] != B || k.shape()[3] != d) {
        throw ShapeError(fn + ": " + shapes + ": expected k and v of shape [B = " +
                         std::to_string(B) + ", H_kv, M, d = " + std::to_string(d) + "]");
    }
    if (H % Hkv != 0) {
        throw ShapeError(fn + ": " + shapes + ": H_kv = " + std::to_string(Hkv) +
                         " K/V heads cannot be shared by H = " + std::to_string(H) +
                         " query heads; expected H_kv to divide H");
    }
    if (causal && T > M) {
        throw ShapeError(fn + ": " + shapes + ": causal with T = " + std::to_string(T) +
                         " queries but only M = " + std::to_string(M) + " keys; expected T <= M");
    }
    const std::size_t G = H / Hkv, past = M - T;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    Heads<float> out = Heads<float>::from_shape({B, H, T, d});
    std::vector<double> w(T * M);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t g = h / G;
            for (std::size_t t = 0; t < T; ++t) {
                const std::size_t visible = causal ? past + t + 1 : M;
                double top = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < M; ++j) {
                    double s = -std::numeric_limits<double>::infinity();
                    if (j < visible) {
                        s = 0.0;
                        for (std::size_t e = 0; e < d; ++e) {
                            s += static_cast<double>(q(b, h, t, e)) * k(b, g, j, e);
                        }
                        s *= scale;
                    }
                    w[t * M + j] = s;
                    if (s > top) top = s;
                }
                double total = 0.0;
                for (std::size_t j = 0; j < M; ++j) {
                    w[t * M + j] = j < visible ? std::exp(w[t * M + j] - top) : 0.0;
                    total += w[t * M + j];
                }
                for (std::size_t j = 0; j < M; ++j) w[t * M + j] /= total;
            }
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t e = 0; e < d; ++e) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < M; ++j) acc += w[t * M + j] * v(b, g, j, e);
                    out(b, h, t, e) = static_cast<float>(acc);
                }
            }
        }
    }
    return out;
}

std::size_t gqa_cache_elements(const GptConfig& config, std::size_t H_kv, std::size_t B) {
    const std::string fn = "wb::gqa_cache_elements";
    if (config.H == 0 || config.D % config.H != 0) {
        throw ValueError(fn + ": H = " + std::to_string(config.H) +
                         " heads do not split D = " + std::to_string(config.D) + " evenly");
    }
    if (H_kv == 0 || config.H % H_kv != 0) {
        throw ValueError(fn + ": H_kv = " + std::to_string(H_kv) +
                         " is not a divisor of H = " + std::to_string(config.H));
    }
    const std::size_t d = config.D / config.H;
    checked_size(fn, "the GQA cache 2 x L x B x T_max x H_kv x d",
                 {2, config.L, B, config.T_max, H_kv, d});
    return 2 * config.L * B * config.T_max * H_kv * d;
}

}  // namespace WB_IMPL
}  // namespace wb
