#include "workbook/fast_exp.hpp"

#include "check.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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
