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

// An empty x can have any T: with T above 2^63 and an offset near 2^63, offset + T wraps around
// size_t to a small number, so only a comparison with T_max - offset refuses it.

TEST_CASE("add_positions refuses offset + T past T_max when the sum wraps around size_t",
          "[add_positions][errors][c:add_positions.past-table]") {
    INFO("hint: offset + T in size_t wraps around to 0 here: compare T with T_max - offset");
    const std::size_t T = (std::size_t(1) << 63) + 1;
    const auto x = wb::Tensor3::from_shape({0, T, 3});  // B = 0: no element, any T
    const auto table = wbtest::randn<wb::Tensor2>({6, 3}, 64);
    const std::int64_t offset = std::numeric_limits<std::int64_t>::max();
    WB_CHECK_THROWS(wb::ValueError, wb::add_positions(x, table, offset),
                    "offset + T = 2^64 wraps around to 0 <= T_max in size_t", "wb::add_positions",
                    std::to_string(offset), std::to_string(T), "6");
}
