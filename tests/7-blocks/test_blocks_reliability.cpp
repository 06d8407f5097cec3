#include "7-blocks/blocks.hpp"
#include "check.hpp"

#include <cmath>
#include <limits>

// The eps rule, shared with chapter 8's layer_norm_backward: eps > 0 and finite. An infinite
// eps would make every rstd 0 and hide the input entirely.

TEST_CASE("layer_norm and rms_norm refuse an infinite eps, as chapter 8 does",
          "[layer_norm][errors][c:layer_norm.bad-eps]"
          "[c:rms_norm.bad-eps]") {
    const wb::Tensor3 x = wbtest::randn<wb::Tensor3>({1, 2, 4}, 7);
    wb::LayerNormParams p = wb::init_layer_norm(4);
    p.eps = std::numeric_limits<float>::infinity();
    WB_CHECK_THROWS(wb::ValueError, wb::layer_norm(x, p),
                    "eps = inf is not a usable epsilon: test std::isfinite too", "wb::layer_norm",
                    "eps = inf", "finite");
    WB_CHECK_THROWS(
        wb::ValueError,
        wb::rms_norm(x, wb::Tensor1(xt::ones<float>({4})), std::numeric_limits<float>::infinity()),
        "the same rule for rms_norm", "wb::rms_norm", "eps = inf", "finite");
}
