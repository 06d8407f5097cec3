#include "3-positions/positions.hpp"
#include "check.hpp"

#include <limits>

// A base that is not a number RoPE can use: an infinite base gives θ_i = inf^(-2i/d) = 0 for
// every pair but the first, a rotation of one pair only, which rope_backward already refuses.

TEST_CASE("apply_rope refuses an infinite base, as rope_backward does",
          "[rope][apply_rope][errors][c:apply_rope.finite-base]") {
    const auto x = wbtest::randn<wb::Tensor4>({1, 2, 3, 4}, 61);
    const float inf = std::numeric_limits<float>::infinity();
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(x, 0, inf),
                    "an infinite base is not a frequency base: test std::isfinite(base) too",
                    "wb::apply_rope", "base = inf", "finite");
    WB_CHECK_THROWS(wb::ValueError, wb::apply_rope(x, 2, inf), "at any offset", "wb::apply_rope",
                    "base = inf");
    // The largest finite float still works: every angle is finite.
    CHECK(wbtest::all_finite(wb::apply_rope(x, 2, std::numeric_limits<float>::max())));
}
