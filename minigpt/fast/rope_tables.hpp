/// @file rope_tables.hpp
/// @brief RoPE for the fast engines (GptTrainer, GptDecoder): the angles as cos / sin tables
/// made once, and the turn of one head's row of queries or keys.
///
/// The same numbers as chapter 3's apply_rope: the pair (x[2i], x[2i+1]) of the token at
/// position p is turned by the angle p·θ_i, θ_i = base^(−2i/d), base = wb::kRopeBase; the angle
/// is computed in double (positions can be large) and its cos and sin rounded to float once.
/// Given code, like the rest of the program.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "8-training/model.hpp"

namespace wb::minigpt {

/// cos and sin of p·θ_i for the positions p = 0 .. T-1 and the pairs i = 0 .. d/2 - 1 of a
/// head of even width d, row p of each `[T, d/2]` table for position p.
struct RopeTables {
    std::size_t pairs = 0;     ///< d / 2
    std::vector<float> cos_t;  ///< `[T, d/2]`
    std::vector<float> sin_t;  ///< `[T, d/2]`

    RopeTables() = default;
    /// Computes the tables for positions [0, T) of heads of width d (d even).
    RopeTables(std::size_t T, std::size_t d) : pairs(d / 2), cos_t(T * pairs), sin_t(T * pairs) {
        for (std::size_t i = 0; i < pairs; ++i) {
            const double theta = std::pow(static_cast<double>(kRopeBase),
                                          -2.0 * static_cast<double>(i) / static_cast<double>(d));
            for (std::size_t t = 0; t < T; ++t) {
                const double angle = static_cast<double>(t) * theta;
                cos_t[t * pairs + i] = static_cast<float>(std::cos(angle));
                sin_t[t * pairs + i] = static_cast<float>(std::sin(angle));
            }
        }
    }
    /// Row p of the cos table (d/2 values).
    const float* cos_at(std::size_t p) const { return cos_t.data() + p * pairs; }
    /// Row p of the sin table (d/2 values).
    const float* sin_at(std::size_t p) const { return sin_t.data() + p * pairs; }
};

/// One head's query or key at one position, bias added, then turned (apply_rope's order):
/// `a = x + bias`, `out[2i] = a[2i] c_i − a[2i+1] s_i`, `out[2i+1] = a[2i] s_i + a[2i+1] c_i`.
/// @param x `[d]` the projection
/// @param bias `[d]`
/// @param c `[d/2]` the position's row of the cos table
/// @param s `[d/2]` the position's row of the sin table
/// @param d the even head width
/// @param out `[d]`; may be x (each pair is read before it is written)
inline void rope_turn(const float* x, const float* bias, const float* c, const float* s,
                      std::size_t d, float* out) {
    for (std::size_t i = 0; i < d / 2; ++i) {
        const float x0 = x[2 * i] + bias[2 * i], x1 = x[2 * i + 1] + bias[2 * i + 1];
        out[2 * i] = x0 * c[i] - x1 * s[i];
        out[2 * i + 1] = x0 * s[i] + x1 * c[i];
    }
}

/// The backward of rope_turn: the gradient of the turned row, turned back by the opposite
/// angle (a rotation's transpose is its inverse; chapter 8's rope_backward):
/// `dx[2i] = dy[2i] c_i + dy[2i+1] s_i`, `dx[2i+1] = −dy[2i] s_i + dy[2i+1] c_i`.
/// @param dy `[d]` the gradient of the turned row
/// @param c `[d/2]` the position's row of the cos table
/// @param s `[d/2]` the position's row of the sin table
/// @param d the even head width
/// @param dx `[d]` the gradient of the row before it was turned
inline void rope_turn_back(const float* dy, const float* c, const float* s, std::size_t d,
                           float* dx) {
    for (std::size_t i = 0; i < d / 2; ++i) {
        const float g0 = dy[2 * i], g1 = dy[2 * i + 1];
        dx[2 * i] = g0 * c[i] + g1 * s[i];
        dx[2 * i + 1] = -g0 * s[i] + g1 * c[i];
    }
}

}  // namespace wb::minigpt
