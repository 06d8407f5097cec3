#include "1-tensors/tensors.hpp"
#include "check.hpp"

#include <climits>

// var's documented corrections are 0 and 1; any other is refused, not divided by. The message
// names the value received and the two allowed (tensors.hpp), in any wording.

TEST_CASE("var refuses corrections other than 0 and 1", "[var][errors][c:var.bad-correction]") {
    const wb::Array x = xt::xarray<float>{{1, 2, 3, 4}, {5, 6, 7, 8}};
    for (int correction : {2, -1, 3, INT_MAX, INT_MIN}) {
        INFO("correction = " << correction);
        WB_CHECK_THROWS(wb::ValueError, wb::var(x, 1, correction, false),
                        "only 0 (population) and 1 (sample) are corrections", "wb::var",
                        "correction = " + std::to_string(correction), "0", "1");
    }
}
