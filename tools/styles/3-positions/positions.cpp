// Style answer for chapter 3 (tools/test-styles): each function one pass of plain index loops;
// the frequencies of a row computed once per call into a small table of doubles (exp/log form
// for the sinusoid, pow for RoPE); add_positions checks the offset before the widths;
// apply_rope checks the values before the shape; messages worded unlike the reference but
// naming each fact positions.hpp promises. It exists because it is a correct answer: every
// check of chapter 3 must accept it.
#include "3-positions/positions.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace wb {
inline namespace WB_IMPL {

Tensor2 sinusoidal_positions(std::size_t T, std::size_t D) {
    if (D == 0 || D % 2 != 0) {
        throw ShapeError("wb::sinusoidal_positions: D = " + num(D) +
                         " cannot be cut into (sin, cos) pairs; expected an even D >= 2");
    }
    checked_size("wb::sinusoidal_positions", "T x D", {T, D});
    std::vector<double> omega(D / 2);
    for (std::size_t i = 0; i < D / 2; ++i)
        omega[i] = std::exp(-std::log(10000.0) * (2.0 * double(i)) / double(D));
    Tensor2 pe = Tensor2::from_shape({T, D});
    for (std::size_t p = 0; p < T; ++p)
        for (std::size_t i = 0; i < D / 2; ++i) {
            const double angle = double(p) * omega[i];
            pe(p, 2 * i) = static_cast<float>(std::sin(angle));
            pe(p, 2 * i + 1) = static_cast<float>(std::cos(angle));
        }
    return pe;
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& table, std::int64_t offset) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    const std::size_t T_max = table.shape(0);
    if (offset < 0 || static_cast<std::uint64_t>(offset) > T_max ||
        T > T_max - static_cast<std::size_t>(offset)) {
        throw ValueError("wb::add_positions: positions offset = " + std::to_string(offset) +
                         " .. offset + T - 1 with T = " + num(T) +
                         " do not fit a table of T_max = " + num(T_max) +
                         " rows; expected 0 <= offset and offset + T <= T_max");
    }
    if (table.shape(1) != D) {
        throw ShapeError("wb::add_positions: x " + shape_str(x.shape()) + " and table " +
                         shape_str(table.shape()) + " disagree on D");
    }
    const auto first = static_cast<std::size_t>(offset);
    Tensor3 out = Tensor3::from_shape({B, T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < D; ++c) out(b, t, c) = x(b, t, c) + table(first + t, c);
    return out;
}

Tensor4 apply_rope(const Tensor4& x, std::int64_t offset, float base) {
    if (offset < 0) {
        throw ValueError("wb::apply_rope: offset = " + std::to_string(offset) +
                         " is negative; positions start at 0");
    }
    if (!(base > 1.0f)) {
        throw ValueError("wb::apply_rope: base = " + std::to_string(base) +
                         " gives no decreasing frequencies; expected base > 1");
    }
    if (std::isinf(base)) {
        throw ValueError(
            "wb::apply_rope: base = inf turns only the first pair; expected a finite "
            "base");
    }
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d = x.shape(3);
    if (d % 2 != 0) {
        throw ShapeError("wb::apply_rope: x " + shape_str(x.shape()) +
                         " has an odd head width d, which cannot be cut into pairs");
    }
    std::vector<double> theta(d / 2);
    for (std::size_t i = 0; i < d / 2; ++i)
        theta[i] = std::pow(double(base), -2.0 * double(i) / double(d));
    Tensor4 out = Tensor4::from_shape({B, H, T, d});
    for (std::size_t t = 0; t < T; ++t) {
        const double p = double(offset) + double(t);
        for (std::size_t i = 0; i < d / 2; ++i) {
            const double c = std::cos(p * theta[i]), s = std::sin(p * theta[i]);
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t h = 0; h < H; ++h) {
                    const double x0 = x(b, h, t, 2 * i), x1 = x(b, h, t, 2 * i + 1);
                    out(b, h, t, 2 * i) = static_cast<float>(x0 * c - x1 * s);
                    out(b, h, t, 2 * i + 1) = static_cast<float>(x0 * s + x1 * c);
                }
        }
    }
    return out;
}

}  // namespace WB_IMPL
}  // namespace wb
