/// @file fast_math.hpp
/// @brief The fast paths' one exp and one GELU (given code).
///
/// - `fast_exp_nonpositive`: exp in plain multiply-adds, for the loops that must vectorise.
///   The capstone's reference kernel and the mini-GPT's fast decoder take every softmax exp with
///   it, and the GELU below its φ. Every exp they take is of a number at most 0 (a score minus
///   its max, or -u²/2), and that is all this one handles.
/// - `gelu_bias_row`: GELU of a row plus a bias, and optionally its derivative: the fast
///   trainer's forward and the fast decoder both call this one compiled function, so training
///   and decoding compute bit-identical GELU values (tests/minigpt/test_fast_math.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "workbook/simd.hpp"

namespace wb {

/// exp(x) for x <= 0, in 14 operations (count them below), all of them plain float and integer
/// arithmetic, so the compiler can put it in a SIMD loop (std::exp is a library call).
///
/// x = n·ln2 + r with |r| <= ln2/2; exp(r) by a degree-6 minimax polynomial; 2^n written into
/// the exponent bits straight from the rounding's own sum. Relative error about two roundings:
/// tests/minigpt/test_fast_math.cpp holds it below 1.5e-7 against std::exp on every 61st float
/// in [-88, 0].
///
/// Below -88, and for -inf (a masked score), n is -127: the exponent bits are 0, 2^n is +0
/// and the answer is exactly 0, as with std::exp. NaN stays NaN. An input at most 0 needs no
/// clamp at the top and no special answer for -inf, which is why this costs about half of a
/// general expf: inputs above 0 are right up to 88 (n <= 127) and undefined above.
///
/// One body for every width: V is float (U std::uint32_t), or a vector of workbook/simd.hpp
/// (F32x8 with U32x8, F32x16 with U32x16), each lane then getting the bits the float form
/// gives in a function compiled for the same level. x in place.
template <class V, class U>
WB_SIMD_BODY void fast_exp_nonpositive_lanes(V& x) {
    x = x < -88.0f ? V{} - 88.0f : x;  // a NaN fails the test and stays NaN
    // 1.5·2^23 + x/ln2 rounds x/ln2 to the nearest integer n, which sits in the low bits.
    const V big = x * 1.44269504088896341f + 12582912.0f;
    const V n = big - 12582912.0f;
    V r = x - n * 0.693359375f;  // ln 2 in two parts, so that r keeps its low bits
    r = r - n * -2.12194440e-4f;
    V p = V{} + 1.3836846919730306e-3f;
    p = p * r + 8.374815806746483e-3f;
    p = p * r + 4.166822507977486e-2f;
    p = p * r + 1.6666419804096222e-1f;
    p = p * r + 4.9999991059303284e-1f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    // The last 9 bits of `big` hold n in two's complement: shifted into the exponent field
    // and biased, they are 2^n for n in [-126, 127] and +0 for n = -127.
    U bits;
    std::memcpy(&bits, &big, sizeof bits);
    bits = (bits << 23) + (127u << 23);
    V two_n;
    std::memcpy(&two_n, &bits, sizeof two_n);
    x = p * two_n;
}

/// fast_exp_nonpositive_lanes of one float.
inline __attribute__((always_inline)) float fast_exp_nonpositive(float x) {
    fast_exp_nonpositive_lanes<float, std::uint32_t>(x);
    return x;
}

/// The exact GELU, u Φ(u) with Φ(u) = (1 + erf(u / √2)) / 2, of each u = y[j] + b[j], written
/// over y[j], for j in [0, n); when `grad` is not null, also grad[j] = GELU'(u) = Φ(u) + u φ(u)
/// (the trainer keeps it for the backward). erf by the rational approximation XLA and Eigen use
/// (within 4e-7 of the true value; ±1 beyond |x| = 4, where erf is ±1 in float), φ's exp by
/// `fast_exp_nonpositive`. One compiled function, eight lanes at a time at the level
/// `wb::simd_level()` picks (WB_SIMD_DISPATCH) and the last n mod 8 values on the default
/// target, so every caller on one machine gets the same bits.
void gelu_bias_row(float* y, float* grad, const float* b, std::size_t n);

}  // namespace wb
