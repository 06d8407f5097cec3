// Chapter 3 — reference implementation: sinusoidal table, adding position rows, RoPE.
#include "3-positions/positions.hpp"

#include <cmath>
#include <sstream>
#include <string>

#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

Tensor2 sinusoidal_positions(std::size_t T, std::size_t D) {
    if (D == 0 || D % 2 != 0) {
        throw ShapeError("wb::sinusoidal_positions: D = " + std::to_string(D) +
                         ", expected an even, positive model width (each frequency fills a "
                         "(sin, cos) pair of columns)");
    }
    checked_size("wb::sinusoidal_positions", "the table [T, D]", {T, D});
    Tensor2 pe({T, D});  // [T, D]
    for (std::size_t i = 0; i < D / 2; ++i) {
        // ω_i = 1 / 10000^(2i/D): pair 0 turns 1 radian per token, the last pair barely moves.
        const double omega =
            std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(D));
        for (std::size_t p = 0; p < T; ++p) {
            const double angle = static_cast<double>(p) * omega;  // in double: p can be large
            pe(p, 2 * i) = static_cast<float>(std::sin(angle));
            pe(p, 2 * i + 1) = static_cast<float>(std::cos(angle));
        }
    }
    return pe;
}

Tensor3 add_positions(const Tensor3& x, const Tensor2& table, std::int64_t offset) {
    const std::size_t T = x.shape(1), D = x.shape(2);
    const std::size_t T_max = table.shape(0);
    if (table.shape(1) != D) {
        throw ShapeError("wb::add_positions: x [B, T, D] has shape " + shape_str(x.shape()) +
                         " but table [T_max, D] has shape " + shape_str(table.shape()) +
                         ", expected the table to have D = " + std::to_string(D) + " columns");
    }
    if (offset < 0) {
        throw ValueError("wb::add_positions: offset = " + std::to_string(offset) +
                         ", expected offset >= 0 (positions count from 0)");
    }
    const std::size_t start = static_cast<std::size_t>(offset);
    if (start > T_max || T > T_max - start) {
        throw ValueError("wb::add_positions: offset = " + std::to_string(offset) +
                         ", T = " + std::to_string(T) +
                         ": offset + T exceeds T_max = " + std::to_string(T_max) +
                         ", the rows of table [T_max, D] " + shape_str(table.shape()) +
                         " (every position 0 .. offset + T - 1 needs a row)");
    }
    // Rows start .. start + T - 1 of the table: the positions of x's tokens.
    auto rows = xt::view(table, xt::range(start, start + T), xt::all());  // [T, D]
    Tensor3 out = x + rows;  // [B, T, D] + [T, D]: the same rows for every sequence of the batch
    return out;
}

Tensor4 apply_rope(const Tensor4& x, std::int64_t offset, float base) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d = x.shape(3);
    if (d % 2 != 0) {
        throw ShapeError("wb::apply_rope: x [B, H, T, d] has shape " + shape_str(x.shape()) +
                         ", expected an even head width (d = " + std::to_string(d) +
                         "): RoPE rotates pairs of features");
    }
    if (offset < 0) {
        throw ValueError("wb::apply_rope: offset = " + std::to_string(offset) +
                         ", expected offset >= 0 (positions count from 0)");
    }
    if (!(base > 1.0f)) {
        std::ostringstream msg;
        msg << "wb::apply_rope: base = " << base
            << ", expected base > 1 (so that θ_i = base^(-2i/d) shrinks with i)";
        throw ValueError(msg.str());
    }
    if (!std::isfinite(base)) {  // inf^(-2i/d) is 0 for every pair but the first
        std::ostringstream msg;
        msg << "wb::apply_rope: base = " << base << ", expected a finite base > 1";
        throw ValueError(msg.str());
    }

    // The angles depend only on the position and the pair, not on the batch or the head.
    const std::size_t pairs = d / 2;
    Tensor2 cos_table({T, pairs});  // [T, d/2]
    Tensor2 sin_table({T, pairs});  // [T, d/2]
    for (std::size_t i = 0; i < pairs; ++i) {
        // θ_i = base^(-2i/d)
        const double theta = std::pow(static_cast<double>(base),
                                      -2.0 * static_cast<double>(i) / static_cast<double>(d));
        for (std::size_t t = 0; t < T; ++t) {
            const double position = static_cast<double>(offset) + static_cast<double>(t);
            const double angle = position * theta;  // in double: positions can be large
            cos_table(t, i) = static_cast<float>(std::cos(angle));
            sin_table(t, i) = static_cast<float>(std::sin(angle));
        }
    }

    Tensor4 out(x.shape());  // [B, H, T, d]
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t i = 0; i < pairs; ++i) {
                    // Turn the point (x0, x1) counter-clockwise by the angle of (t, i).
                    const float c = cos_table(t, i), s = sin_table(t, i);
                    const float x0 = x(b, h, t, 2 * i);
                    const float x1 = x(b, h, t, 2 * i + 1);
                    out(b, h, t, 2 * i) = x0 * c - x1 * s;
                    out(b, h, t, 2 * i + 1) = x0 * s + x1 * c;
                }
            }
        }
    }
    return out;
}

}  // namespace WB_IMPL
}  // namespace wb
