// Style answer for chapter 4 (tools/test-styles): one row at a time with plain loops over
// raw buffers instead of xtensor views and linalg::dot; dot products and softmax sums in
// double; the softmax takes its maximum over the readable keys only (no -inf is ever
// written); sdpa is fused (it calls none of the other three) and checks the mask before the
// shapes of v; messages worded unlike the reference but naming each fact sdpa.hpp promises.
// It exists because it is a correct answer: every check of chapter 4 must accept it.
#include "4-sdpa/sdpa.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {
namespace {

// True when query i of sequence b may read key j (no mask: every key).
struct Readable {
    const Mask* mask;
    bool operator()(std::size_t b, std::size_t i, std::size_t j) const {
        if (!mask) return true;
        const std::size_t mb = mask->allowed.shape(0) == 1 ? 0 : b;
        return mask->allowed(mb, i, j);
    }
};

void check_mask(const char* name, const std::optional<Mask>& mask, std::size_t B, std::size_t N,
                std::size_t M, const std::string& scores) {
    if (!mask) return;
    const auto& s = mask->allowed.shape();
    const bool batch = s[0] == 1 || s[0] == B;
    if (batch && s[1] == N && s[2] == M) return;
    throw ShapeError(std::string(name) + ": a mask of shape " + shape_str(s) +
                     " does not fit scores of shape " + scores + "; it must be [" +
                     std::to_string(B) + " or 1, " + std::to_string(N) + ", " + std::to_string(M) +
                     "]");
}

// Softmax of one row of M scores over the readable keys; all zeros when none is readable.
void softmax_row(const float* s, float* w, std::size_t M, const Readable& can, std::size_t b,
                 std::size_t i) {
    bool any = false;
    float top = 0.0f;
    for (std::size_t j = 0; j < M; ++j) {
        if (!can(b, i, j)) continue;
        if (!any || s[j] > top) top = s[j];
        any = true;
    }
    double total = 0.0;
    for (std::size_t j = 0; j < M; ++j) {
        const double e = can(b, i, j) ? std::exp(double(s[j]) - double(top)) : 0.0;
        w[j] = static_cast<float>(e);
        total += e;
    }
    if (!any) return;  // every key hidden: the row stays 0
    for (std::size_t j = 0; j < M; ++j) {
        w[j] =
            can(b, i, j) ? static_cast<float>(std::exp(double(s[j]) - double(top)) / total) : 0.0f;
    }
}

// q_i . k_j / sqrt(d_k) for one (b, h), rows of width dk laid out contiguously.
double scaled_dot(const float* qi, const float* kj, std::size_t dk) {
    double acc = 0.0;
    for (std::size_t c = 0; c < dk; ++c) acc += double(qi[c]) * double(kj[c]);
    return acc / std::sqrt(double(dk));
}

}  // namespace

Tensor4 attention_scores(const Tensor4& q, const Tensor4& k) {
    const std::size_t dk = q.shape(3);
    if (dk == 0) {
        throw ShapeError("wb::attention_scores: queries of shape " + shape_str(q.shape()) +
                         " have width d_k = 0; a score is divided by sqrt(d_k), so d_k >= 1");
    }
    for (std::size_t axis : {0, 1, 3}) {
        if (k.shape(axis) != q.shape(axis)) {
            throw ShapeError("wb::attention_scores: axis " + std::to_string(axis) +
                             " differs between q " + shape_str(q.shape()) + " and k " +
                             shape_str(k.shape()) + " (B, H and d_k must agree)");
        }
    }
    const std::size_t B = q.shape(0), H = q.shape(1), N = q.shape(2), M = k.shape(2);
    Tensor4 s = Tensor4::from_shape({B, H, N, M});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t j = 0; j < M; ++j)
                    s(b, h, i, j) =
                        static_cast<float>(scaled_dot(&q(b, h, i, 0), &k(b, h, j, 0), dk));
    return s;
}

Tensor4 masked_softmax(const Tensor4& scores, const std::optional<Mask>& mask) {
    const std::size_t B = scores.shape(0), H = scores.shape(1), N = scores.shape(2);
    const std::size_t M = scores.shape(3);
    check_mask("wb::masked_softmax", mask, B, N, M, shape_str(scores.shape()));
    const Readable can{mask ? &*mask : nullptr};
    Tensor4 w = Tensor4::from_shape(scores.shape());
    if (M == 0) return w;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i)
                softmax_row(&scores(b, h, i, 0), &w(b, h, i, 0), M, can, b, i);
    return w;
}

Tensor4 weighted_sum(const Tensor4& weights, const Tensor4& v) {
    const std::size_t B = weights.shape(0), H = weights.shape(1), N = weights.shape(2);
    const std::size_t M = weights.shape(3), dv = v.shape(3);
    if (v.shape(2) != M || v.shape(1) != H || v.shape(0) != B) {
        throw ShapeError("wb::weighted_sum: " + shape_str(weights.shape()) + " weights and " +
                         shape_str(v.shape()) + " values do not line up (B, H and M must agree)");
    }
    Tensor4 out = Tensor4::from_shape({B, H, N, dv});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t c = 0; c < dv; ++c) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < M; ++j)
                        acc += double(weights(b, h, i, j)) * v(b, h, j, c);
                    out(b, h, i, c) = static_cast<float>(acc);
                }
    return out;
}

Attention sdpa(const Tensor4& q, const Tensor4& k, const Tensor4& v,
               const std::optional<Mask>& mask) {
    const std::size_t B = q.shape(0), H = q.shape(1), N = q.shape(2), dk = q.shape(3);
    const std::size_t M = k.shape(2), dv = v.shape(3);
    const std::string all =
        "q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " + shape_str(v.shape());
    const bool qk = k.shape(0) == B && k.shape(1) == H && k.shape(3) == dk && dk > 0;
    if (!qk) throw ShapeError("wb::sdpa: q and k do not fit (" + all + ")");
    check_mask("wb::sdpa", mask, B, N, M, shape_str(Shape{B, H, N, M}));
    const bool kv = v.shape(0) == B && v.shape(1) == H && v.shape(2) == M;
    if (!kv) throw ShapeError("wb::sdpa: v does not fit q and k (" + all + ")");

    const Readable can{mask ? &*mask : nullptr};
    Attention a{Tensor4::from_shape({B, H, N, dv}), Tensor4::from_shape({B, H, N, M})};
    std::vector<float> row(M);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i) {
                for (std::size_t j = 0; j < M; ++j)
                    row[j] = static_cast<float>(scaled_dot(&q(b, h, i, 0), &k(b, h, j, 0), dk));
                float* w = M ? &a.weights(b, h, i, 0) : nullptr;
                if (M) softmax_row(row.data(), w, M, can, b, i);
                for (std::size_t c = 0; c < dv; ++c) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < M; ++j) acc += double(w[j]) * v(b, h, j, c);
                    a.output(b, h, i, c) = static_cast<float>(acc);
                }
            }
    return a;
}

}  // namespace WB_IMPL
}  // namespace wb
