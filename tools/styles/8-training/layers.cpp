// Chapter 8, a second answer: every backward written as plain index loops, sums kept in double,
// errors raised through one small helper.
#include "8-training/layers.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

namespace {

template <class E>
Shape shape_of(const E& x) {
    return Shape(x.shape().begin(), x.shape().end());
}

template <class E>
void want(const char* fn, const char* what, const E& x, const Shape& expected) {
    if (shape_of(x) != expected) {
        throw ShapeError(std::string(fn) + " got " + what + " of shape " + shape_str(shape_of(x)) +
                         " where " + shape_str(expected) + " was needed");
    }
}

// The number of valid rows; throws for a target outside [0, V) that is not ignore_index.
template <class Real>
std::size_t count_valid(const char* fn, const Mat<Real>& logits,
                        const xt::xtensor<std::int64_t, 1>& targets, std::int64_t ignore_index) {
    const std::size_t N = logits.shape()[0], V = logits.shape()[1];
    want(fn, "targets", targets, {N});
    std::size_t valid = 0;
    for (std::size_t n = 0; n < N; ++n) {
        const std::int64_t t = targets(n);
        if (t == ignore_index) continue;
        if (t < 0 || static_cast<std::uint64_t>(t) >= V) {
            throw ValueError(std::string(fn) + ": row " + std::to_string(n) + " has target " +
                             std::to_string(t) + "; a target must lie in [0, " + std::to_string(V) +
                             ") or be ignore_index " + std::to_string(ignore_index));
        }
        ++valid;
    }
    return valid;
}

template <class Real>
double row_lse(const Real* z, std::size_t V) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < V; ++j) top = std::max(top, double(z[j]));
    double s = 0.0;
    for (std::size_t j = 0; j < V; ++j) s += std::exp(double(z[j]) - top);
    return top + std::log(s);
}

}  // namespace

template <class Real>
void linear_backward(const Mat<Real>& dy, const Mat<Real>& x, const Mat<Real>& weight,
                     Mat<Real>& dx, Mat<Real>& dweight, Vec<Real>& dbias) {
    const char* fn = "wb::linear_backward";
    const std::size_t N = x.shape()[0], in = x.shape()[1], out = weight.shape()[0];
    want(fn, "weight", weight, {out, in});
    want(fn, "dy", dy, {N, out});
    want(fn, "dweight", dweight, {out, in});
    if (dbias.size() != 0) want(fn, "dbias", dbias, {out});
    Mat<Real> result = xt::zeros<Real>({N, in});
    for (std::size_t n = 0; n < N; ++n) {
        for (std::size_t o = 0; o < out; ++o) {
            const Real g = dy(n, o);
            for (std::size_t i = 0; i < in; ++i) result(n, i) += g * weight(o, i);
        }
    }
    for (std::size_t o = 0; o < out; ++o) {
        for (std::size_t i = 0; i < in; ++i) {
            double s = 0.0;
            for (std::size_t n = 0; n < N; ++n) s += double(dy(n, o)) * double(x(n, i));
            dweight(o, i) += static_cast<Real>(s);
        }
        if (dbias.size() != 0) {
            double s = 0.0;
            for (std::size_t n = 0; n < N; ++n) s += double(dy(n, o));
            dbias(o) += static_cast<Real>(s);
        }
    }
    dx = std::move(result);
}

template <class Real>
void layer_norm_backward(const Mat<Real>& dy, const Mat<Real>& x, const Vec<Real>& gamma, Real eps,
                         Mat<Real>& dx, Vec<Real>& dgamma, Vec<Real>& dbeta) {
    const char* fn = "wb::layer_norm_backward";
    if (!(eps > Real(0)) || !std::isfinite(double(eps))) {
        std::ostringstream text;
        text << fn << ": eps is " << eps << ", it must be a finite number above 0";
        throw ValueError(text.str());
    }
    const std::size_t N = x.shape()[0], D = x.shape()[1];
    if (D == 0)
        throw ShapeError(std::string(fn) + ": x has shape " + shape_str(x.shape()) +
                         ", D must be at least 1");
    want(fn, "dy", dy, {N, D});
    want(fn, "gamma", gamma, {D});
    want(fn, "dgamma", dgamma, {D});
    want(fn, "dbeta", dbeta, {D});
    Mat<Real> result = Mat<Real>::from_shape({N, D});
    std::vector<double> xhat(D);
    for (std::size_t n = 0; n < N; ++n) {
        double mu = 0.0;
        for (std::size_t i = 0; i < D; ++i) mu += double(x(n, i));
        mu /= double(D);
        double var = 0.0;
        for (std::size_t i = 0; i < D; ++i) var += (double(x(n, i)) - mu) * (double(x(n, i)) - mu);
        var /= double(D);
        const double r = 1.0 / std::sqrt(var + double(eps));
        double sg = 0.0, sgx = 0.0;
        for (std::size_t i = 0; i < D; ++i) {
            xhat[i] = (double(x(n, i)) - mu) * r;
            const double g = double(dy(n, i)) * double(gamma(i));
            sg += g;
            sgx += g * xhat[i];
        }
        for (std::size_t i = 0; i < D; ++i) {
            const double g = double(dy(n, i)) * double(gamma(i));
            result(n, i) = static_cast<Real>(r * (g - sg / double(D) - xhat[i] * sgx / double(D)));
            dgamma(i) += static_cast<Real>(double(dy(n, i)) * xhat[i]);
            dbeta(i) += dy(n, i);
        }
    }
    dx = std::move(result);
}

template <class Real>
Mat<Real> gelu_backward(const Mat<Real>& dy, const Mat<Real>& x) {
    want("wb::gelu_backward", "dy", dy, shape_of(x));
    Mat<Real> dx = Mat<Real>::from_shape(x.shape());
    const double inv_sqrt2 = 1.0 / std::sqrt(2.0);
    const double inv_sqrt2pi = 1.0 / std::sqrt(2.0 * std::acos(-1.0));
    auto px = x.begin();
    auto pg = dy.begin();
    for (auto out = dx.begin(); out != dx.end(); ++out, ++px, ++pg) {
        const double v = double(*px);
        const double slope =
            0.5 * (1.0 + std::erf(v * inv_sqrt2)) + v * inv_sqrt2pi * std::exp(-0.5 * v * v);
        *out = static_cast<Real>(double(*pg) * slope);
    }
    return dx;
}

template <class Real>
void causal_attention_backward(const Heads<Real>& dout, const Heads<Real>& q, const Heads<Real>& k,
                               const Heads<Real>& v, const Heads<Real>& weights, Heads<Real>& dq,
                               Heads<Real>& dk, Heads<Real>& dv) {
    const char* fn = "wb::causal_attention_backward";
    const Shape s = shape_of(q);
    const std::size_t B = s[0], H = s[1], T = s[2], d = s[3];
    want(fn, "k", k, s);
    want(fn, "v", v, s);
    want(fn, "dout", dout, s);
    want(fn, "weights", weights, {B, H, T, T});
    if (d == 0) {
        throw ShapeError(std::string(fn) + ": q has shape " + shape_str(s) +
                         ", expected heads of width d >= 1");
    }
    Heads<Real> gq = xt::zeros<Real>(s), gk = xt::zeros<Real>(s), gv = xt::zeros<Real>(s);
    const double scale = 1.0 / std::sqrt(double(d));
    std::vector<double> ds(T);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t i = 0; i < T; ++i) {
                double dot = 0.0;
                for (std::size_t j = 0; j <= i; ++j) {
                    double da = 0.0;
                    for (std::size_t c = 0; c < d; ++c) {
                        da += double(dout(b, h, i, c)) * double(v(b, h, j, c));
                        gv(b, h, j, c) += static_cast<Real>(double(weights(b, h, i, j)) *
                                                            double(dout(b, h, i, c)));
                    }
                    ds[j] = da;
                    dot += da * double(weights(b, h, i, j));
                }
                for (std::size_t j = 0; j <= i; ++j) {
                    const double g = double(weights(b, h, i, j)) * (ds[j] - dot) * scale;
                    for (std::size_t c = 0; c < d; ++c) {
                        gq(b, h, i, c) += static_cast<Real>(g * double(k(b, h, j, c)));
                        gk(b, h, j, c) += static_cast<Real>(g * double(q(b, h, i, c)));
                    }
                }
            }
        }
    }
    dq = std::move(gq);
    dk = std::move(gk);
    dv = std::move(gv);
}

template <class Real>
Heads<Real> rope_backward(const Heads<Real>& dy, std::int64_t offset, Real base) {
    const char* fn = "wb::rope_backward";
    const std::size_t d = dy.shape()[3];
    if (d % 2 != 0) {
        throw ShapeError(std::string(fn) + ": dy has shape " + shape_str(dy.shape()) +
                         ", its last axis d must be even");
    }
    if (offset < 0) {
        throw ValueError(std::string(fn) + ": offset " + std::to_string(offset) +
                         " is negative, need >= 0");
    }
    if (!(base > Real(1))) {
        std::ostringstream text;
        text << fn << ": base " << base << " is not > 1";
        throw ValueError(text.str());
    }
    Heads<Real> dx = Heads<Real>::from_shape(dy.shape());
    const std::size_t B = dy.shape()[0], H = dy.shape()[1], T = dy.shape()[2];
    for (std::size_t t = 0; t < T; ++t) {
        const double p = double(offset) + double(t);
        for (std::size_t i = 0; i < d / 2; ++i) {
            const double angle = p * std::pow(double(base), -2.0 * double(i) / double(d));
            const Real c = static_cast<Real>(std::cos(angle)),
                       sn = static_cast<Real>(std::sin(angle));
            for (std::size_t b = 0; b < B; ++b) {
                for (std::size_t h = 0; h < H; ++h) {
                    const Real g0 = dy(b, h, t, 2 * i), g1 = dy(b, h, t, 2 * i + 1);
                    dx(b, h, t, 2 * i) = g0 * c + g1 * sn;
                    dx(b, h, t, 2 * i + 1) = g1 * c - g0 * sn;
                }
            }
        }
    }
    return dx;
}

template <class Real>
void embedding_backward(const TokenIds& ids, const Mat<Real>& dout, Mat<Real>& dtable) {
    const char* fn = "wb::embedding_backward";
    const std::size_t B = ids.shape()[0], T = ids.shape()[1], V = dtable.shape()[0],
                      D = dtable.shape()[1];
    want(fn, "dout", dout, {B * T, D});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || static_cast<std::uint64_t>(id) >= V) {
                throw ValueError(std::string(fn) + ": ids[" + std::to_string(b) + ", " +
                                 std::to_string(t) + "] = " + std::to_string(id) +
                                 " is not a row of a table of V = " + std::to_string(V));
            }
        }
    }
    for (std::size_t r = 0; r < B * T; ++r) {
        const auto id = static_cast<std::size_t>(ids.data()[r]);
        for (std::size_t c = 0; c < D; ++c) dtable(id, c) += dout(r, c);
    }
}

template <class Real>
Real cross_entropy_forward(const Mat<Real>& logits, const xt::xtensor<std::int64_t, 1>& targets,
                           std::int64_t ignore_index) {
    const std::size_t valid =
        count_valid("wb::cross_entropy_forward", logits, targets, ignore_index);
    if (valid == 0) return Real(0);
    const std::size_t N = logits.shape()[0], V = logits.shape()[1];
    double total = 0.0;
    for (std::size_t n = 0; n < N; ++n) {
        if (targets(n) == ignore_index) continue;
        const Real* z = logits.data() + n * V;
        total += row_lse(z, V) - double(z[targets(n)]);
    }
    return static_cast<Real>(total / double(valid));
}

template <class Real>
Mat<Real> cross_entropy_backward(const Mat<Real>& logits,
                                 const xt::xtensor<std::int64_t, 1>& targets,
                                 std::int64_t ignore_index) {
    const std::size_t valid =
        count_valid("wb::cross_entropy_backward", logits, targets, ignore_index);
    const std::size_t N = logits.shape()[0], V = logits.shape()[1];
    Mat<Real> g = xt::zeros<Real>({N, V});
    for (std::size_t n = 0; n < N; ++n) {
        if (targets(n) == ignore_index) continue;
        const Real* z = logits.data() + n * V;
        const double lse = row_lse(z, V);
        for (std::size_t j = 0; j < V; ++j) {
            const double p =
                std::exp(double(z[j]) - lse) - (std::int64_t(j) == targets(n) ? 1.0 : 0.0);
            g(n, j) = static_cast<Real>(p / double(valid));
        }
    }
    return g;
}

WB_INSTANTIATE_LAYERS(float)
WB_INSTANTIATE_LAYERS(double)

}  // namespace WB_IMPL
}  // namespace wb
