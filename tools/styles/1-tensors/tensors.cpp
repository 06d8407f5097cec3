// Style answer for chapter 1 (tools/test-styles): plain index loops over raw row-major
// buffers instead of xtensor views, transposes and linalg::dot; every sum and mean
// accumulated in double; the error checks in another valid order; messages worded unlike the
// reference but naming each fact tensors.hpp promises. It exists because it is a correct
// answer: every check of chapter 1 must accept it.
#include "1-tensors/tensors.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace wb {
inline namespace WB_IMPL {
namespace {

using std::to_string;

// "wb::name: " + text, thrown as E.
template <class E>
[[noreturn]] void fail(const char* name, const std::string& text) {
    throw E(std::string("wb::") + name + ": " + text);
}

// Number of elements of a shape between two axes (outer/inner blocks of a row-major tensor).
template <class S>
std::size_t span(const S& shape, std::size_t from, std::size_t to) {
    std::size_t n = 1;
    while (from < to) n *= shape[from++];
    return n;
}

// Python's axis rule, or a ShapeError that says which axes exist.
template <class S>
std::size_t resolve_axis(const char* name, const S& shape, long places, int axis) {
    long a = axis;
    if (a < 0) a += places;
    if (a >= 0 && a < places) return static_cast<std::size_t>(a);
    std::ostringstream text;
    text << "axis " << axis << " does not exist for a tensor of shape " << shape_str(shape);
    if (places > 0) text << " (valid: " << -places << " .. " << places - 1 << ")";
    fail<ShapeError>(name, text.str());
}

Shape shape_of(const Array& x) { return Shape(x.shape().begin(), x.shape().end()); }

// Copies token t of every sequence of x [B, T, D] into out at token slot `slot`.
void copy_token(const Tensor3& x, std::size_t t, float* out, std::size_t slots, std::size_t slot) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    for (std::size_t b = 0; b < B; ++b) {
        const float* src = x.data() + (b * T + t) * D;
        float* dst = out + (b * slots + slot) * D;
        for (std::size_t c = 0; c < D; ++c) dst[c] = src[c];
    }
}

void need_a_token(const char* name, const Tensor3& x) {
    if (x.shape(1) > 0) return;
    fail<ShapeError>(name, "got x of shape " + shape_str(x.shape()) +
                               " with T = 0 tokens; T must be at least 1 to take the last one");
}

void same_shapes(const char* name, const Array& a, const Array& b) {
    if (shape_of(a) == shape_of(b)) return;
    fail<ShapeError>(name, "shapes " + shape_str(a.shape()) + " (a) and " + shape_str(b.shape()) +
                               " (b) are not equal");
}

}  // namespace

// ---- indexing -----------------------------------------------------------------------------

Tensor2 last_token(const Tensor3& x) {
    need_a_token("last_token", x);
    Tensor2 out = Tensor2::from_shape({x.shape(0), x.shape(2)});
    copy_token(x, x.shape(1) - 1, out.data(), 1, 0);
    return out;
}

Tensor3 last_token_keep(const Tensor3& x) {
    need_a_token("last_token_keep", x);
    Tensor3 out = Tensor3::from_shape({x.shape(0), 1, x.shape(2)});
    copy_token(x, x.shape(1) - 1, out.data(), 1, 0);
    return out;
}

Tensor3 drop_last_token(const Tensor3& x) {
    need_a_token("drop_last_token", x);
    const std::size_t kept = x.shape(1) - 1;
    Tensor3 out = Tensor3::from_shape({x.shape(0), kept, x.shape(2)});
    for (std::size_t t = 0; t < kept; ++t) copy_token(x, t, out.data(), kept, t);
    return out;
}

// ---- heads --------------------------------------------------------------------------------

Tensor4 split_heads(const Tensor3& x, std::size_t H) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    if (H == 0)
        fail<ShapeError>("split_heads", "H = 0 heads for x " + shape_str(x.shape()) +
                                            " (D = " + to_string(D) + "); need H >= 1");
    if (D % H) {
        fail<ShapeError>("split_heads", "D = " + to_string(D) + " of x " + shape_str(x.shape()) +
                                            " is not a multiple of H = " + to_string(H));
    }
    const std::size_t d = D / H;
    Tensor4 out = Tensor4::from_shape({B, H, T, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < D; ++c) out(b, c / d, t, c % d) = x(b, t, c);
    return out;
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d = x.shape(3);
    Tensor3 out = Tensor3::from_shape({B, T, H * d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t i = 0; i < d; ++i) out(b, t, h * d + i) = x(b, h, t, i);
    return out;
}

Tensor4 transpose_last2(const Tensor4& k) {
    const std::size_t B = k.shape(0), H = k.shape(1), R = k.shape(2), C = k.shape(3);
    Tensor4 out = Tensor4::from_shape({B, H, C, R});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t c = 0; c < C; ++c) out(b, h, c, r) = k(b, h, r, c);
    return out;
}

// ---- products -----------------------------------------------------------------------------

float dot(const Tensor1& q, const Tensor1& k) {
    if (q.size() != k.size()) {
        fail<ShapeError>("dot", "length mismatch, q is " + shape_str(q.shape()) + " but k is " +
                                    shape_str(k.shape()));
    }
    double acc = 0.0;
    for (std::size_t i = q.size(); i-- > 0;) acc += double(q(i)) * double(k(i));
    return static_cast<float>(acc);
}

Tensor4 matmul(const Tensor4& a, const Tensor4& b) {
    const bool inner_ok = b.shape(2) == a.shape(3);
    const bool batch_ok = b.shape(0) == a.shape(0) && b.shape(1) == a.shape(1);
    if (!inner_ok || !batch_ok) {
        fail<ShapeError>("matmul", "cannot multiply a " + shape_str(a.shape()) + " by b " +
                                       shape_str(b.shape()) +
                                       ": B and H must match and b's rows must equal a's columns");
    }
    const std::size_t B = a.shape(0), H = a.shape(1), N = a.shape(2), K = a.shape(3);
    const std::size_t M = b.shape(3);
    Tensor4 out = Tensor4::from_shape({B, H, N, M});
    for (std::size_t p = 0; p < B; ++p)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t j = 0; j < M; ++j) {
                    double acc = 0.0;
                    for (std::size_t c = 0; c < K; ++c)
                        acc += double(a(p, h, i, c)) * b(p, h, c, j);
                    out(p, h, i, j) = static_cast<float>(acc);
                }
    return out;
}

// ---- softmax and reductions ---------------------------------------------------------------

Array softmax(const Array& x) {
    const std::size_t rank = x.dimension();
    const std::size_t n = rank ? x.shape(rank - 1) : 0;
    if (n == 0) {
        fail<ShapeError>("softmax", "needs a last axis with at least one entry, got shape " +
                                        shape_str(x.shape()));
    }
    Array y = Array::from_shape(shape_of(x));
    const std::size_t rows = x.size() / n;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * n;
        float* out = y.data() + r * n;
        float top = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < n; ++j) top = in[j] > top ? in[j] : top;
        double total = 0.0;
        for (std::size_t j = 0; j < n; ++j) total += std::exp(double(in[j]) - double(top));
        for (std::size_t j = 0; j < n; ++j)
            out[j] = static_cast<float>(std::exp(double(in[j]) - double(top)) / total);
    }
    return y;
}

namespace {

// The reduced shape of x along ax: without the axis, or with size 1 there.
Shape reduced(const Array& x, std::size_t ax, bool keepdims) {
    Shape s = shape_of(x);
    if (keepdims) {
        s[ax] = 1;
    } else {
        s.erase(s.begin() + static_cast<std::ptrdiff_t>(ax));
    }
    return s;
}

// Per (outer, inner) slot: the double mean of the n values along axis ax.
std::vector<double> means_along(const Array& x, std::size_t ax) {
    const std::size_t outer = span(x.shape(), 0, ax), n = x.shape(ax);
    const std::size_t inner = span(x.shape(), ax + 1, x.dimension());
    std::vector<double> mu(outer * inner, 0.0);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t k = 0; k < n; ++k)
            for (std::size_t i = 0; i < inner; ++i)
                mu[o * inner + i] += x.data()[(o * n + k) * inner + i];
    for (double& m : mu) m /= static_cast<double>(n);
    return mu;
}

}  // namespace

Array mean(const Array& x, int axis, bool keepdims) {
    const std::size_t ax = resolve_axis("mean", x.shape(), long(x.dimension()), axis);
    if (x.shape(ax) == 0) {
        fail<ShapeError>("mean", "axis " + to_string(axis) + " of shape " + shape_str(x.shape()) +
                                     " is empty; a mean needs one value or more");
    }
    const std::vector<double> mu = means_along(x, ax);
    Array out = Array::from_shape(reduced(x, ax, keepdims));
    for (std::size_t i = 0; i < mu.size(); ++i) out.data()[i] = static_cast<float>(mu[i]);
    return out;
}

Array var(const Array& x, int axis, int correction, bool keepdims) {
    // The correction first: it does not depend on x.
    if (correction < 0 || correction > 1) {
        fail<ValueError>(
            "var", "correction = " + to_string(correction) + " is not allowed; it must be 0 or 1");
    }
    const std::size_t ax = resolve_axis("var", x.shape(), long(x.dimension()), axis);
    const long n = long(x.shape(ax));
    if (n <= correction) {
        fail<ValueError>("var", "x of shape " + shape_str(x.shape()) + " has only n = " +
                                    to_string(n) + " values on axis " + to_string(axis) +
                                    ", too few for correction = " + to_string(correction) +
                                    " (need n - correction >= 1)");
    }
    const std::vector<double> mu = means_along(x, ax);
    const std::size_t outer = span(x.shape(), 0, ax),
                      inner = span(x.shape(), ax + 1, x.dimension());
    Array out = Array::from_shape(reduced(x, ax, keepdims));
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner; ++i) {
            double ss = 0.0;
            for (long k = 0; k < n; ++k) {
                const double dev =
                    x.data()[(o * std::size_t(n) + std::size_t(k)) * inner + i] - mu[o * inner + i];
                ss += dev * dev;
            }
            out.data()[o * inner + i] = static_cast<float>(ss / double(n - correction));
        }
    return out;
}

// ---- joining ------------------------------------------------------------------------------

Array cat(const std::vector<Array>& xs, int axis) {
    if (xs.empty()) fail<ShapeError>("cat", "the list xs is empty; give it one tensor or more");
    const Shape base = shape_of(xs[0]);
    // The shapes first, the axis afterwards (both must hold; the order is free).
    for (std::size_t i = 1; i < xs.size(); ++i) {
        const Shape s = shape_of(xs[i]);
        bool fits = s.size() == base.size();
        long a = axis < 0 ? axis + long(base.size()) : axis;
        for (std::size_t j = 0; fits && j < s.size(); ++j) fits = long(j) == a || s[j] == base[j];
        if (!fits) {
            fail<ShapeError>("cat", "cannot join xs[" + to_string(i) + "] " + shape_str(s) +
                                        " to xs[0] " + shape_str(base) + " along axis " +
                                        to_string(axis) + ": the other axes must agree");
        }
    }
    const std::size_t ax = resolve_axis("cat", base, long(base.size()), axis);
    Shape out_shape = base;
    out_shape[ax] = 0;
    for (const Array& x : xs) out_shape[ax] += x.shape(ax);
    Array out = Array::from_shape(out_shape);
    const std::size_t outer = span(base, 0, ax), inner = span(base, ax + 1, base.size());
    std::size_t offset = 0;  // where along ax the current input starts
    for (const Array& x : xs) {
        const std::size_t n = x.shape(ax);
        for (std::size_t o = 0; o < outer; ++o)
            for (std::size_t k = 0; k < n; ++k)
                for (std::size_t i = 0; i < inner; ++i)
                    out.data()[(o * out_shape[ax] + offset + k) * inner + i] =
                        x.data()[(o * n + k) * inner + i];
        offset += n;
    }
    return out;
}

Array stack(const std::vector<Array>& xs, int axis) {
    if (xs.empty()) fail<ShapeError>("stack", "xs is empty; there is nothing to stack");
    const Shape base = shape_of(xs[0]);
    const std::size_t ax = resolve_axis("stack", base, long(base.size()) + 1, axis);
    for (std::size_t i = 1; i < xs.size(); ++i) {
        if (shape_of(xs[i]) != base) {
            fail<ShapeError>("stack", "xs[" + to_string(i) + "] is " + shape_str(xs[i].shape()) +
                                          ", unlike xs[0] " + shape_str(base) +
                                          "; all shapes must be identical");
        }
    }
    Shape out_shape = base;
    out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(ax), xs.size());
    Array out = Array::from_shape(out_shape);
    const std::size_t outer = span(base, 0, ax), inner = span(base, ax, base.size());
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t s = 0; s < xs.size(); ++s)
            for (std::size_t i = 0; i < inner; ++i)
                out.data()[(o * xs.size() + s) * inner + i] = xs[s].data()[o * inner + i];
    return out;
}

// ---- comparing ----------------------------------------------------------------------------

float max_abs_diff(const Array& a, const Array& b) {
    same_shapes("max_abs_diff", a, b);
    double worst = 0.0;
    bool nan = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a.data()[i]) - double(b.data()[i]));
        nan = nan || d != d;
        if (d > worst) worst = d;
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(worst);
}

bool allclose(const Array& a, const Array& b, float rtol, float atol) {
    same_shapes("allclose", a, b);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) return false;
            continue;
        }
        if (!(std::abs(x - y) <= double(atol) + double(rtol) * std::abs(y)))
            return false;  // NaN too
    }
    return true;
}

}  // namespace WB_IMPL
}  // namespace wb
