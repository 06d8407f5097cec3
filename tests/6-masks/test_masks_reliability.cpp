#include "6-masks/masks.hpp"
#include "check.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

// Masks that are empty or too large to exist: each is refused with a ShapeError before any
// element is read or allocated.

namespace {
using Bool3 = xt::xtensor<bool, 3>;
}  // namespace

TEST_CASE("combine_masks and from_forbidden refuse an empty mask",
          "[masks][errors][c:combine_masks.empty]"
          "[c:from_forbidden.empty]") {
    const wb::Mask empty{Bool3::from_shape({0, 3, 3})};
    const wb::Mask causal = wb::causal_mask(3);
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(empty, causal),
                    "an empty mask has no batch 0 to share: check it before reading it",
                    "wb::combine_masks", "[0, 3, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(causal, empty),
                    "either mask may be the empty one", "wb::combine_masks", "[0, 3, 3]");
    const wb::Mask no_keys{Bool3::from_shape({1, 3, 0})};
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(no_keys, no_keys),
                    "a mask with no keys is empty too", "wb::combine_masks", "[1, 3, 0]");
    WB_CHECK_THROWS(wb::ShapeError, wb::from_forbidden(Bool3::from_shape({0, 3, 3})),
                    "from_forbidden must not make an empty mask", "wb::from_forbidden",
                    "[0, 3, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::from_forbidden(Bool3::from_shape({2, 0, 3})),
                    "no queries is empty too", "wb::from_forbidden", "[2, 0, 3]");
}

TEST_CASE("causal_mask and padding_mask refuse sizes whose product overflows",
          "[masks][errors][c:causal_mask.too-large]"
          "[c:padding_mask.too-large][c:causal_padding_mask.too-large]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_mask(SIZE_MAX),
                    "T x T wraps around size_t: check the product before allocating",
                    "wb::causal_mask", std::to_string(SIZE_MAX), "2^48");
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_mask(std::size_t(1) << 32),
                    "2^32 x 2^32 = 2^64 is 0 in size_t", "wb::causal_mask", "4294967296");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::padding_mask({1}, std::size_t(1) << 32, std::size_t(1) << 32),
                    "B x N x M wraps around", "wb::padding_mask", "4294967296");
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({1, 2}, SIZE_MAX, 3), "N = SIZE_MAX",
                    "wb::padding_mask");
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask({1}, std::size_t(1) << 32),
                    "causal_padding_mask builds a causal mask of T x T", "4294967296");
}

TEST_CASE("padding_mask counts the batch in the size it refuses",
          "[masks][errors][c:padding_mask.too-large]") {
    // Each [N, M] plane is small; only B x N x M = 2^22 x 12000 x 12000 ~ 6e14 is more than 2^48.
    const std::vector<std::size_t> many(std::size_t(1) << 22, 0);
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask(many, 12000, 12000),
                    "4194304 sequences of 12000 x 12000: check the product of all three sizes, "
                    "B x N x M, not N x M alone, before allocating",
                    "wb::padding_mask", "4194304", "12000");
}

TEST_CASE("causal_padding_mask counts the batch in the size it refuses",
          "[masks][errors][c:causal_padding_mask.too-large]") {
    // Each [T, T] plane is small; only B x T x T = 2^22 x 12000 x 12000 is more than 2^48.
    const std::vector<std::size_t> many(std::size_t(1) << 22, 0);
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask(many, 12000),
                    "B x T x T counts the batch too, not only one T x T plane", "12000");
}

TEST_CASE("padding_mask refuses a mask too large before a length beyond M",
          "[masks][errors][c:padding_mask.shape-before-value]") {
    // The call breaks two rules: a mask of more than 2^48 elements (a ShapeError) and a length
    // beyond M (a ValueError). The header puts every ShapeError first, the size included.
    const std::size_t M = std::size_t(1) << 20;
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({M + 1}, std::size_t(1) << 30, M),
                    "1 x 2^30 x 2^20 = 2^50 elements is a ShapeError, and it comes before the "
                    "length 2^20 + 1 > M: call checked_size before comparing the lengths with M",
                    "wb::padding_mask", "1073741824");
}

TEST_CASE("causal_padding_mask refuses a mask too large before a length beyond T",
          "[masks][errors][c:causal_padding_mask.shape-before-value]") {
    // The same two rules with T for N and M: the size of B x T x T is checked first.
    const std::size_t T = std::size_t(1) << 25;
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask({T + 1}, T),
                    "1 x 2^25 x 2^25 = 2^50 elements is a ShapeError, and it comes before the "
                    "length 2^25 + 1 > T: check the size before comparing the lengths with T",
                    "33554432");
}
