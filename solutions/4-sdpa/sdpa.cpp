// Chapter 4 — reference implementation of scaled dot-product attention.
//
// Plain code, one idea per line. Shapes are written beside every buffer as the notes write
// them: B batch, H heads, N queries, M keys/values, d_k the width of a query and a key, d_v
// the width of a value. Each (batch, head) pair is an ordinary 2-D attention, so the products
// loop over (b, h) and multiply 2-D slices with xt::linalg::dot.
#include "4-sdpa/sdpa.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {
namespace {

// The score a hidden key gets before the softmax: exp(-inf) is exactly 0, whatever the other
// scores are. (A large negative number such as -1e4 is not the same: it loses to readable
// scores below -1e4, and a fully masked row would then share its weight evenly.)
constexpr float kHidden = -std::numeric_limits<float>::infinity();

// The softmax runs along the key axis (the last one): row i of [N, M] is query i's
// distribution over the M keys.
constexpr std::size_t kKeyAxis = 3;

// Throws unless `allowed` has shape [B, N, M] or [1, N, M] for scores of shape [B, H, N, M].
void require_mask(const char* function, const Mask& mask, std::size_t B, std::size_t N,
                  std::size_t M, const std::string& scores_shape) {
    const auto& s = mask.allowed.shape();  // [B or 1, N, M]
    if ((s[0] != B && s[0] != 1) || s[1] != N || s[2] != M) {
        throw ShapeError(std::string(function) + ": mask.allowed has shape " + shape_str(s) +
                         ", expected [B, N, M] = " + shape_str(Shape{B, N, M}) +
                         " or [1, N, M] = " + shape_str(Shape{1, N, M}) +
                         " to match scores [B, H, N, M] = " + scores_shape);
    }
}

// Sets x[b, h, i, j] = value wherever the mask hides key j from query i of sequence b.
// A mask with batch axis 1 is shared by every sequence; every head uses the same pattern.
void hide_keys(Tensor4& x, const Mask& mask, float value) {
    const std::size_t B = x.shape(0), H = x.shape(1), N = x.shape(2), M = x.shape(3);
    const bool shared = mask.allowed.shape(0) == 1;
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t mb = shared ? 0 : b;  // the mask's batch index
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t i = 0; i < N; ++i) {
                for (std::size_t j = 0; j < M; ++j) {
                    if (!mask.allowed(mb, i, j)) x(b, h, i, j) = value;
                }
            }
        }
    }
}

// Numerically stable softmax along the key axis of s [B, H, N, M]. A row whose scores are
// all -inf (every key hidden) becomes all zeros instead of 0/0 = NaN.
Tensor4 softmax_keys(const Tensor4& s) {
    if (s.size() == 0) return s;
    // Reductions are evaluated now and stored (the keep_dims trap: a lazy keep_dims reducer
    // broadcast inside an expression gives wrong numbers in xtensor 0.24).
    const auto now = xt::keep_dims | xt::evaluation_strategy::immediate;
    Tensor4 m = xt::amax(s, {kKeyAxis}, now);  // [B, H, N, 1] row maxima
    // The maximum of a fully masked row is -inf (xtensor 0.24 even reports the lowest float,
    // -3.4e38): subtract 0 there, never -inf, since -inf - (-inf) is NaN.
    m = xt::where(xt::isfinite(m), m, 0.0f);
    Tensor4 e = xt::exp(s - m);               // [B, H, N, M], each in [0, 1]
    Tensor4 z = xt::sum(e, {kKeyAxis}, now);  // [B, H, N, 1], >= 1 unless fully masked
    // A fully masked row has only zeros and z = 0: divide by 1 instead, its weights stay 0.
    z = xt::where(xt::equal(z, 0.0f), 1.0f, z);
    return e / z;  // [B, H, N, M]
}

}  // namespace

Tensor4 attention_scores(const Tensor4& q, const Tensor4& k) {
    const std::size_t B = q.shape(0), H = q.shape(1), N = q.shape(2), dk = q.shape(3);
    const std::size_t M = k.shape(2);
    if (k.shape(0) != B || k.shape(1) != H || k.shape(3) != dk || dk == 0) {
        throw ShapeError("wb::attention_scores: q [B, H, N, d_k] has shape " +
                         shape_str(q.shape()) + " and k [B, H, M, d_k] has shape " +
                         shape_str(k.shape()) + ", expected equal B, H and d_k (d_k >= 1)");
    }
    // d_k is the width of ONE head: the dot product of two d_k-vectors of unit-variance
    // entries has variance d_k, so dividing by sqrt(d_k) brings the scores back to scale 1.
    const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
    Tensor4 scores = xt::zeros<float>({B, H, N, M});  // [B, H, N, M]
    if (scores.size() == 0) return scores;
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            auto qh = xt::view(q, b, h, xt::all(), xt::all());  // [N, d_k]
            auto kh = xt::view(k, b, h, xt::all(), xt::all());  // [M, d_k]
            // S = Q K^T: S[i, j] = q_i . k_j. Only the last two axes of K are swapped.
            Tensor2 s = xt::linalg::dot(qh, xt::transpose(kh));  // [N, M]
            xt::view(scores, b, h, xt::all(), xt::all()) = s * scale;
        }
    }
    return scores;
}

Tensor4 masked_softmax(const Tensor4& scores, const std::optional<Mask>& mask) {
    const std::size_t B = scores.shape(0), N = scores.shape(2), M = scores.shape(3);
    if (mask) require_mask("wb::masked_softmax", *mask, B, N, M, shape_str(scores.shape()));
    Tensor4 s = scores;                      // [B, H, N, M]
    if (mask) hide_keys(s, *mask, kHidden);  // BEFORE the softmax: hidden keys get -inf
    Tensor4 w = softmax_keys(s);             // [B, H, N, M], rows sum to 1 (or are all 0)
    return w;
}

Tensor4 weighted_sum(const Tensor4& weights, const Tensor4& v) {
    const std::size_t B = weights.shape(0), H = weights.shape(1), N = weights.shape(2);
    const std::size_t M = weights.shape(3), dv = v.shape(3);
    if (v.shape(0) != B || v.shape(1) != H || v.shape(2) != M) {
        throw ShapeError("wb::weighted_sum: weights [B, H, N, M] has shape " +
                         shape_str(weights.shape()) + " and v [B, H, M, d_v] has shape " +
                         shape_str(v.shape()) + ", expected equal B, H and M");
    }
    Tensor4 out = xt::zeros<float>({B, H, N, dv});  // [B, H, N, d_v]
    if (out.size() == 0 || M == 0) return out;      // no keys: an empty sum is 0
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            auto a = xt::view(weights, b, h, xt::all(), xt::all());  // [N, M]
            auto vh = xt::view(v, b, h, xt::all(), xt::all());       // [M, d_v]
            // O = A V: row i is sum_j A[i, j] v_j, one output row per query.
            Tensor2 o = xt::linalg::dot(a, vh);  // [N, d_v]
            xt::view(out, b, h, xt::all(), xt::all()) = o;
        }
    }
    return out;
}

Attention sdpa(const Tensor4& q, const Tensor4& k, const Tensor4& v,
               const std::optional<Mask>& mask) {
    // Check everything first, so that the message names all three shapes at once.
    const std::size_t B = q.shape(0), H = q.shape(1), N = q.shape(2), dk = q.shape(3);
    const std::size_t M = k.shape(2);
    const bool fits = k.shape(0) == B && k.shape(1) == H && k.shape(3) == dk && dk > 0 &&
                      v.shape(0) == B && v.shape(1) == H && v.shape(2) == M;
    if (!fits) {
        throw ShapeError("wb::sdpa: q [B, H, N, d_k] has shape " + shape_str(q.shape()) +
                         ", k [B, H, M, d_k] has shape " + shape_str(k.shape()) +
                         " and v [B, H, M, d_v] has shape " + shape_str(v.shape()) +
                         ", expected one B and one H for all three, the same d_k >= 1 for q "
                         "and k, and the same M for k and v");
    }
    if (mask) require_mask("wb::sdpa", *mask, B, N, M, shape_str(Shape{B, H, N, M}));

    Attention result;
    Tensor4 scores = attention_scores(q, k);          // [B, H, N, M], scaled by 1/sqrt(d_k)
    result.weights = masked_softmax(scores, mask);    // [B, H, N, M]
    result.output = weighted_sum(result.weights, v);  // [B, H, N, d_v]
    return result;
}

}  // namespace WB_IMPL
}  // namespace wb
