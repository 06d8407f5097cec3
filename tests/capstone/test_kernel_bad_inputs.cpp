#include "capstone/attention_kernel.hpp"
#include "check.hpp"

#include <cstddef>
#include <vector>

// Sizes whose product does not fit: B = H = 2^32 made B·H·(T / 64) = 0 tasks in size_t, and the
// raw kernel returned at once, writing nothing. The pointers are never read: the sizes are
// refused first.

TEST_CASE("raw attention_forward and attention_backward refuse sizes beyond 2^48 elements",
          "[attention_forward][attention_backward][errors][c:attention_forward.overflow]"
          "[c:attention_backward.overflow]") {
    const std::size_t big = std::size_t(1) << 32;
    std::vector<float> buffer(16, 0.0f);  // never read: the sizes are refused first
    float* b = buffer.data();
    for (const wb::AttentionShape s :
         {wb::AttentionShape{big, big, 1, 1}, wb::AttentionShape{1, 1, big, big},
          wb::AttentionShape{SIZE_MAX, 2, 1, 1}}) {
        INFO("[B, H, T, d] = [" << s.B << ", " << s.H << ", " << s.T << ", " << s.d << "]");
        WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(s, b, b, b, b, b),
                        "B x H x T x d wraps around size_t: check it with wb::checked_size",
                        "wb::attention_forward", "2^48");
        WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(s, b, b, b, b, b, b, b, b, b),
                        "the backward has the same sizes", "wb::attention_backward", "2^48");
    }
}
