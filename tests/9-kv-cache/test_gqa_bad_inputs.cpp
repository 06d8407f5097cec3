#include "9-kv-cache/gqa.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "check.hpp"

#include <cstddef>

// A GQA cache whose size does not fit in size_t: 2·L·B·T_max·H_kv·d wrapped around to 0 (a
// cache of no memory at all), where kv_cache_elements refuses the same sizes.

TEST_CASE("gqa_cache_elements refuses sizes whose product overflows, as kv_cache_elements does",
          "[gqa_cache_elements][errors][c:gqa_cache_elements.overflow]") {
    const std::size_t big = std::size_t(1) << 32;
    const wb::GptConfig c{5, big, big, 1, 1};  // T_max = D = 2^32, H = 1: d = 2^32
    WB_CHECK_THROWS(wb::ShapeError, wb::kv_cache_elements(c, 1), "the MHA cache refuses it",
                    "wb::kv_cache_elements", "2^48");
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_cache_elements(c, 1, 1),
                    "2 x 1 x 1 x 2^32 x 1 x 2^32 = 2^65 wraps around to 0: use wb::checked_size",
                    "wb::gqa_cache_elements", "2^48");
    const wb::GptConfig wide{5, 8, 64, 8, 2};
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_cache_elements(wide, 4, SIZE_MAX),
                    "B = SIZE_MAX sequences", "wb::gqa_cache_elements", "2^48");
    CHECK(wb::gqa_cache_elements(wide, 4, 3) == 2 * 2 * 3 * 8 * 4 * 8);  // fits: counted
}
