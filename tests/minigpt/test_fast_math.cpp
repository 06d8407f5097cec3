#include "workbook/fast_math.hpp"

#include "check.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

// wb::fast_exp_nonpositive, the exp of the capstone's kernel and the fast decoder, against
// std::exp in double, which is exact to far below a float's rounding.

namespace {

float float_from_bits(std::uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

}  // namespace

TEST_CASE("fast_exp_nonpositive is within 1.5e-7 of exp on floats spread over [-88, 0]",
          "[fast_exp]") {
    // Every 61st float from -0 down to -88 (bit patterns 0x80000000 upwards: the negative
    // floats in order of magnitude), about 18 million of them, every exponent covered.
    const std::uint32_t last = [] {
        const float lo = -88.0f;
        std::uint32_t b;
        std::memcpy(&b, &lo, sizeof b);
        return b;
    }();
    double worst = 0.0;
    float worst_x = 0.0f;
    for (std::uint32_t b = 0x80000000u; b <= last; b += 61) {
        const float x = float_from_bits(b);
        const double e = std::exp(static_cast<double>(x));
        const float y = wb::fast_exp_nonpositive(x);
        if (e < std::numeric_limits<float>::min()) {  // below the normal floats
            if (!(y >= 0.0f && y <= 2 * std::numeric_limits<float>::min()))
                worst = 1.0, worst_x = x;
            continue;
        }
        const double rel = std::fabs(y - e) / e;
        if (!(rel <= worst)) worst = rel, worst_x = x;  // a NaN answer counts as the worst
    }
    INFO("worst relative error " << worst << " at x = " << worst_x);
    CHECK(worst <= 1.5e-7);
}

TEST_CASE("fast_exp_nonpositive: exp(0) = 1, exactly 0 below -88 and for -inf, NaN stays NaN",
          "[fast_exp]") {
    CHECK(wb::fast_exp_nonpositive(0.0f) == 1.0f);
    CHECK(wb::fast_exp_nonpositive(-0.0f) == 1.0f);
    CHECK(wb::fast_exp_nonpositive(-88.5f) == 0.0f);
    CHECK(wb::fast_exp_nonpositive(-1000.0f) == 0.0f);
    CHECK(wb::fast_exp_nonpositive(-std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(std::isnan(wb::fast_exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
    CHECK(std::fabs(wb::fast_exp_nonpositive(-1.0f) - 0.36787944117144233) <= 1.5e-7 * 0.368);
}

// wb::gelu_bias_row: the fast trainer calls it with a derivative buffer (its forward), the fast
// decoder without one (generation). Both forms must give the same GELU bits, or a model would
// decode with other numbers than it was trained with; and both must be the exact GELU.
TEST_CASE(
    "gelu_bias_row gives the trainer's and the decoder's GELU the same bits, within 1e-6 "
    "of x Φ(x), and its derivative within 1e-6",
    "[gelu]") {
    for (std::size_t n : {1u, 7u, 8u, 9u, 64u, 67u}) {
        std::vector<float> x(n), b(n);
        for (std::size_t j = 0; j < n; ++j) {
            x[j] = -9.0f + 18.0f * static_cast<float>(j) / static_cast<float>(n);  // [-9, 9)
            b[j] = 0.25f * static_cast<float>(j % 3) - 0.25f;
        }
        std::vector<float> trained = x, grad(n, std::numeric_limits<float>::quiet_NaN());
        std::vector<float> decoded = x;
        wb::gelu_bias_row(trained.data(), grad.data(), b.data(), n);
        wb::gelu_bias_row(decoded.data(), nullptr, b.data(), n);
        for (std::size_t j = 0; j < n; ++j) {
            INFO("n = " << n << ", u = " << x[j] + b[j]);
            CHECK(std::memcmp(&trained[j], &decoded[j], sizeof(float)) == 0);
            const double u = static_cast<double>(x[j]) + b[j];
            const double cdf = 0.5 * (1.0 + std::erf(u / std::sqrt(2.0)));
            const double pdf = std::exp(-0.5 * u * u) / std::sqrt(2.0 * 3.14159265358979323846);
            CHECK(std::fabs(trained[j] - u * cdf) <= 1e-6 * (1.0 + std::fabs(u * cdf)));
            CHECK(std::fabs(grad[j] - (cdf + u * pdf)) <= 1e-6 * (1.0 + std::fabs(cdf + u * pdf)));
        }
    }
}
