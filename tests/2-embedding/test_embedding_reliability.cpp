#include "2-embedding/embedding.hpp"
#include "check.hpp"

#include <cstddef>
#include <cstdint>

// Tables too large to exist: refused with a ShapeError before anything is allocated.

TEST_CASE("init_embedding and init_linear refuse sizes whose product overflows",
          "[embedding][errors]") {
    const std::size_t big = std::size_t(1) << 32;
    WB_CHECK_THROWS(wb::ShapeError, wb::init_embedding(big, big, 1),
                    "V x D = 2^64 wraps around size_t: check the product before allocating",
                    "wb::init_embedding", "4294967296", "2^48");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_embedding(SIZE_MAX, 2, 1), "V = SIZE_MAX",
                    "wb::init_embedding", std::to_string(SIZE_MAX));
    WB_CHECK_THROWS(wb::ShapeError, wb::init_linear(big, big, true, 1),
                    "out x in = 2^64 wraps around", "wb::init_linear", "4294967296");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_linear(3, SIZE_MAX, false, 1), "out = SIZE_MAX",
                    "wb::init_linear");
}
