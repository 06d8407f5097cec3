#include "3-positions/positions.hpp"
#include "check.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

// A table too large to exist: refused with a ShapeError before anything is allocated.

TEST_CASE("sinusoidal_positions refuses sizes whose product overflows",
          "[positions][errors][c:sinusoidal_positions.too-large]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(std::size_t(1) << 62, 4),
                    "T x D = 2^64 wraps around size_t: check the product before allocating",
                    "wb::sinusoidal_positions", "4611686018427387904", "2^48");
    WB_CHECK_THROWS(wb::ShapeError, wb::sinusoidal_positions(SIZE_MAX, 2), "T = SIZE_MAX",
                    "wb::sinusoidal_positions", std::to_string(SIZE_MAX));
}
