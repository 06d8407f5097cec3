#include "check.hpp"
#include "1-tensors/tensors.hpp"

TEST_CASE("softmax of [1, 2, 3] matches hand-computed values", "[softmax]") {
    wb::Array x = {{1.0f, 2.0f, 3.0f}};
    wb::Array expected = {{0.0900306f, 0.2447285f, 0.6652410f}};
    WB_CHECK_CLOSE(wb::softmax(x), expected, 1e-6, "softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max)");
}

TEST_CASE("last_token drops the T axis", "[indexing]") {
    auto x = wbtest::randn<wb::Tensor3>({2, 4, 8}, 42);
    WB_CHECK_SHAPE(wb::last_token(x), (wb::Shape{2, 8}), "x[:, -1, :] has shape [B, D]");
}
