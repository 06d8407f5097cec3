/// @file fast_exp.hpp
/// @brief exp in plain multiply-adds, for the loops that must vectorise (given code).
///
/// Shared by the capstone's reference kernel and the mini-GPT's fast decoder, so that both
/// softmaxes use one exp with one answer for every input.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace wb {

/// exp(x) by Cephes' expf: x = n·ln2 + r with |r| <= ln2/2, exp(r) by a degree-6 polynomial,
/// 2^n built in the exponent bits (relative error about 1e-7). Below -87 (where exp underflows
/// to below 1.7e-38) it returns exactly 0, so a masked score of -inf gets weight exactly 0, as
/// with std::exp; above 88.7 it returns +inf, and NaN for NaN.
///
/// Any input is defined behaviour: the clamps keep n in [-126, 128], so the exponent bits
/// never overflow, and a NaN is clamped too before it reaches the integer conversion.
inline __attribute__((always_inline)) float fast_exp(float x_in) {
    float x = x_in < -87.0f ? -87.0f : x_in;
    x = x > 88.7f ? 88.7f : x;
    x = x == x ? x : 0.0f;
    const float t = x * 1.44269504088896341f;         // x / ln 2
    const float n = (t + 12582912.0f) - 12582912.0f;  // round to nearest (1.5·2^23 trick)
    float r = x - n * 0.693359375f;                   // ln 2 in two parts, so that
    r = r - n * -2.12194440e-4f;                      //   r keeps its low bits
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127)
                               << 23;  // 2^n (n + 127 is in [1, 255])
    float two_n;
    std::memcpy(&two_n, &bits, sizeof two_n);
    const float y = x_in < -87.0f ? 0.0f : p * two_n;
    return x_in > 88.7f ? INFINITY : (x_in == x_in ? y : x_in);
}

}  // namespace wb
