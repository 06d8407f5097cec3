#include "2-embedding/embedding.hpp"
#include "check.hpp"

#include <cstddef>
#include <cstdint>

// Tables too large to exist: refused with a ShapeError before anything is allocated.

TEST_CASE("init_embedding and init_linear refuse sizes whose product overflows",
          "[embedding][errors][c:init_embedding.too-large][c:init_linear.too-large]") {
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

TEST_CASE("init_embedding and init_linear refuse more than 2^48 elements that do not overflow",
          "[embedding][errors][c:init_embedding.too-large][c:init_linear.too-large]") {
    // 2^25 x 2^24 = 2^49 elements fits in size_t: only the 2^48 limit refuses it (an allocation
    // of 2 PiB would throw std::bad_alloc, not a ShapeError).
    const std::size_t rows = std::size_t(1) << 25, cols = std::size_t(1) << 24;
    WB_CHECK_THROWS(wb::ShapeError, wb::init_embedding(rows, cols, 1),
                    "V x D above 2^48 elements is refused before allocating (wb::checked_size)",
                    "wb::init_embedding", "33554432", "16777216");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_linear(cols, rows, true, 1),
                    "out x in above 2^48 elements is refused before allocating (wb::checked_size)",
                    "wb::init_linear", "33554432", "16777216");
}
