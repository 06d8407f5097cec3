// Chapter 1 — reference implementation.
//
// Plain code, one idea per line. Shapes are written beside every buffer as the notes write
// them: B batch, T tokens, D model width, H heads, d = D / H.
#include "1-tensors/tensors.hpp"

#include <algorithm>
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

// Turns a possibly negative `axis` into 0 … rank-1 (Python's rule: -1 is the last axis),
// or throws a ShapeError naming the function, the tensor's shape and the valid range.
template <class S>
std::size_t normalize_axis(const char* function, const char* what, const S& shape, int axis,
                           std::size_t rank) {
    const long r = static_cast<long>(rank);
    const long a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r) {
        throw ShapeError(std::string(function) + ": axis " + std::to_string(axis) +
                         " is out of range for " + what + " of shape " + shape_str(shape) +
                         (r == 0 ? std::string(", which has no axes")
                                 : ", expected an axis in [" + std::to_string(-r) + ", " +
                                       std::to_string(r - 1) + "]"));
    }
    return static_cast<std::size_t>(a);
}

// `shape` with axis `axis` set to 1: where a keepdim reduction puts its result.
template <class S>
Shape kept_shape(const S& shape, std::size_t axis) {
    Shape kept(shape.begin(), shape.end());
    kept[axis] = 1;
    return kept;
}

// The indexing functions need at least one token to point at.
void require_tokens(const char* function, const Tensor3& x) {
    if (x.shape(1) == 0) {
        throw ShapeError(std::string(function) + ": x [B, T, D] has shape " + shape_str(x.shape()) +
                         ", expected T >= 1 (there is no last token)");
    }
}

template <class S>
std::size_t product(const S& shape, std::size_t begin, std::size_t end) {
    std::size_t n = 1;
    for (std::size_t i = begin; i < end; ++i) n *= shape[i];
    return n;
}

void require_same_shape(const char* function, const Array& a, const Array& b) {
    if (a.shape() != b.shape()) {
        throw ShapeError(std::string(function) + ": a has shape " + shape_str(a.shape()) +
                         " and b has shape " + shape_str(b.shape()) + ", expected the same shape");
    }
}

}  // namespace

// ---- indexing -----------------------------------------------------------------------------

Tensor2 last_token(const Tensor3& x) {
    require_tokens("wb::last_token", x);
    const std::size_t T = x.shape(1);
    return xt::view(x, xt::all(), T - 1, xt::all());  // [B, D]: the integer drops T
}

Tensor3 last_token_keep(const Tensor3& x) {
    require_tokens("wb::last_token_keep", x);
    const std::size_t T = x.shape(1);
    return xt::view(x, xt::all(), xt::range(T - 1, T), xt::all());  // [B, 1, D]: a slice keeps T
}

Tensor3 drop_last_token(const Tensor3& x) {
    require_tokens("wb::drop_last_token", x);
    const std::size_t T = x.shape(1);
    return xt::view(x, xt::all(), xt::range(0, T - 1), xt::all());  // [B, T-1, D]
}

// ---- heads --------------------------------------------------------------------------------

Tensor4 split_heads(const Tensor3& x, std::size_t H) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    if (H == 0 || D % H != 0) {
        throw ShapeError("wb::split_heads: x [B, T, D] has shape " + shape_str(x.shape()) +
                         " and H = " + std::to_string(H) +
                         ", expected H >= 1 dividing D = " + std::to_string(D));
    }
    const std::size_t d = D / H;
    // Group the D features of each token into H blocks of d: feature h*d + i -> (h, i).
    Tensor4 grouped = xt::reshape_view(x, Shape{B, T, H, d});  // [B, T, H, d]
    // Then bring the head axis in front of the tokens, so each head sees a [T, d] matrix.
    return xt::transpose(grouped, {0, 2, 1, 3});  // [B, H, T, d]
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d = x.shape(3);
    // Undo the transpose first: tokens go back in front of the heads. Assigning to a Tensor4
    // makes a fresh row-major copy, which is what the reshape below needs.
    Tensor4 tokens_first = xt::transpose(x, {0, 2, 1, 3});      // [B, T, H, d]
    return xt::reshape_view(tokens_first, Shape{B, T, H * d});  // [B, T, D]
}

Tensor4 transpose_last2(const Tensor4& k) {
    // Only T and d change places; B and H stay where they are. (xt::transpose(k) with no
    // permutation would reverse all four axes.)
    return xt::transpose(k, {0, 1, 3, 2});  // [B, H, d, T]
}

// ---- products -----------------------------------------------------------------------------

float dot(const Tensor1& q, const Tensor1& k) {
    if (q.size() != k.size()) {
        throw ShapeError("wb::dot: q [d] has shape " + shape_str(q.shape()) +
                         " and k [d] has shape " + shape_str(k.shape()) +
                         ", expected the same length");
    }
    float sum = 0.0f;
    for (std::size_t i = 0; i < q.size(); ++i) sum += q(i) * k(i);  // (q * k).sum()
    return sum;
}

Tensor4 matmul(const Tensor4& a, const Tensor4& b) {
    const std::size_t B = a.shape(0), H = a.shape(1), N = a.shape(2), K = a.shape(3);
    const std::size_t M = b.shape(3);
    if (b.shape(0) != B || b.shape(1) != H || b.shape(2) != K) {
        throw ShapeError(
            "wb::matmul: a [B, H, N, K] has shape " + shape_str(a.shape()) +
            " and b [B, H, K, M] has shape " + shape_str(b.shape()) +
            ", expected equal B and H, and b's axis 2 equal to a's K = " + std::to_string(K));
    }
    Tensor4 out = xt::zeros<float>({B, H, N, M});  // [B, H, N, M]
    if (out.size() == 0 || K == 0) return out;     // nothing to multiply: an empty sum is 0
    // B and H are batch axes: one ordinary matrix product per (batch, head) pair.
    for (std::size_t bi = 0; bi < B; ++bi) {
        for (std::size_t h = 0; h < H; ++h) {
            auto a2 = xt::view(a, bi, h, xt::all(), xt::all());  // [N, K]
            auto b2 = xt::view(b, bi, h, xt::all(), xt::all());  // [K, M]
            Tensor2 prod = xt::linalg::dot(a2, b2);              // [N, M] (dot returns xarray)
            xt::view(out, bi, h, xt::all(), xt::all()) = prod;
        }
    }
    return out;
}

// ---- softmax and reductions ---------------------------------------------------------------

Array softmax(const Array& x) {
    if (x.dimension() == 0 || x.shape(x.dimension() - 1) == 0) {
        throw ShapeError("wb::softmax: x has shape " + shape_str(x.shape()) +
                         ", expected rank >= 1 and a last axis of size >= 1");
    }
    const std::size_t axis = x.dimension() - 1;
    // The row maximum, stored in an Array (evaluated now, not a lazy expression: see README.md,
    // "the keep_dims trap"). Subtracting it leaves the result unchanged and makes every
    // exponent <= 0, so exp never overflows.
    Array m = xt::amax(x, {axis}, xt::keep_dims);  // [..., 1]
    Array e = xt::exp(x - m);                      // [..., n], each in (0, 1]
    Array s = xt::sum(e, {axis}, xt::keep_dims);   // [..., 1], each >= 1
    return e / s;
}

Array mean(const Array& x, int axis, bool keepdims) {
    const std::size_t ax = normalize_axis("wb::mean", "x", x.shape(), axis, x.dimension());
    if (x.shape(ax) == 0) {
        throw ShapeError("wb::mean: x has shape " + shape_str(x.shape()) + " and axis " +
                         std::to_string(axis) + " has size 0, expected at least one element");
    }
    Array m = xt::mean(x, {ax});                         // x's shape without `ax`
    if (keepdims) m.reshape(kept_shape(x.shape(), ax));  // put the axis back, with size 1
    return m;
}

Array var(const Array& x, int axis, int correction, bool keepdims) {
    const std::size_t ax = normalize_axis("wb::var", "x", x.shape(), axis, x.dimension());
    if (correction != 0 && correction != 1) {
        throw ValueError("wb::var: correction = " + std::to_string(correction) +
                         ", expected 0 (population variance) or 1 (sample variance)");
    }
    const long n = static_cast<long>(x.shape(ax));
    const long divisor = n - correction;
    if (divisor <= 0) {
        throw ValueError("wb::var: x has shape " + shape_str(x.shape()) + ", so axis " +
                         std::to_string(axis) + " holds n = " + std::to_string(n) +
                         " values; with correction = " + std::to_string(correction) +
                         " that leaves n - correction = " + std::to_string(divisor) +
                         ", expected n - correction > 0");
    }
    Array mu = xt::mean(x, {ax}, xt::keep_dims);  // [..., 1, ...] evaluated, ready to broadcast
    Array dev = x - mu;                           // deviations, x's shape
    Array v = xt::sum(dev * dev, {ax});           // sum of squares, x's shape without `ax`
    v /= static_cast<float>(divisor);             // n (correction 0) or n - 1 (correction 1)
    if (keepdims) v.reshape(kept_shape(x.shape(), ax));
    return v;
}

// ---- joining ------------------------------------------------------------------------------

Array cat(const std::vector<Array>& xs, int axis) {
    if (xs.empty()) throw ShapeError("wb::cat: xs is empty, expected at least one tensor");
    const Array& first = xs[0];
    const std::size_t rank = first.dimension();
    const std::size_t ax = normalize_axis("wb::cat", "xs[0]", first.shape(), axis, rank);

    Shape out_shape(first.shape().begin(), first.shape().end());
    out_shape[ax] = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        bool ok = xs[i].dimension() == rank;
        for (std::size_t j = 0; ok && j < rank; ++j) {
            ok = j == ax || xs[i].shape(j) == first.shape(j);
        }
        if (!ok) {
            throw ShapeError("wb::cat: xs[" + std::to_string(i) + "] has shape " +
                             shape_str(xs[i].shape()) + " but xs[0] has shape " +
                             shape_str(first.shape()) + ", expected the same rank and equal " +
                             "sizes on every axis except axis " + std::to_string(axis));
        }
        out_shape[ax] += xs[i].shape(ax);
    }

    // Row-major memory seen as [outer, n_i, inner]: for each index of the axes before `ax`,
    // the blocks of the inputs follow one another.
    const std::size_t outer = product(out_shape, 0, ax);
    const std::size_t inner = product(out_shape, ax + 1, rank);
    Array out = Array::from_shape(out_shape);
    float* dst = out.data();
    for (std::size_t o = 0; o < outer; ++o) {
        for (const Array& x : xs) {
            const std::size_t block = x.shape(ax) * inner;  // one [n_i, inner] block of x
            std::copy_n(x.data() + o * block, block, dst);
            dst += block;
        }
    }
    return out;
}

Array stack(const std::vector<Array>& xs, int axis) {
    if (xs.empty()) throw ShapeError("wb::stack: xs is empty, expected at least one tensor");
    const std::size_t rank = xs[0].dimension();
    // The new axis may go anywhere from before the first axis to after the last: rank + 1 places.
    const std::size_t ax =
        normalize_axis("wb::stack", "stacking tensors", xs[0].shape(), axis, rank + 1);
    std::vector<Array> parts;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (xs[i].shape() != xs[0].shape()) {
            throw ShapeError("wb::stack: xs[" + std::to_string(i) + "] has shape " +
                             shape_str(xs[i].shape()) + " but xs[0] has shape " +
                             shape_str(xs[0].shape()) +
                             ", expected every tensor to have the same shape");
        }
        parts.push_back(xt::expand_dims(xs[i], ax));  // a new axis of size 1 at `ax`
    }
    return cat(parts, static_cast<int>(ax));  // join the size-1 axes
}

// ---- comparing ----------------------------------------------------------------------------

float max_abs_diff(const Array& a, const Array& b) {
    require_same_shape("wb::max_abs_diff", a, b);
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float diff = std::fabs(a.data()[i] - b.data()[i]);
        if (std::isnan(diff)) return std::numeric_limits<float>::quiet_NaN();  // NaN wins
        worst = std::max(worst, diff);
    }
    return worst;
}

bool allclose(const Array& a, const Array& b, float rtol, float atol) {
    require_same_shape("wb::allclose", a, b);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (x == y) continue;  // exact match, including equal infinities
        // NaN, or an infinity against anything else: |x - y| would be NaN or inf, and
        // inf <= atol + rtol * inf would wrongly say "close".
        if (!std::isfinite(x) || !std::isfinite(y)) return false;
        const bool close = std::fabs(x - y) <= atol + rtol * std::fabs(y);
        if (!close) return false;
    }
    return true;
}

}  // namespace WB_IMPL
}  // namespace wb
