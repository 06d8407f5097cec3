#include "8-training/model.hpp"
#include "check.hpp"
#include "gpt_fixtures.hpp"

#include <cstdint>

// A cache that holds a loss but not one block cache per block: the backward cannot walk the
// blocks, and the message says so instead of claiming that no forward ran.

TEST_CASE("gpt_backward names the block count of a cache with blocks removed",
          "[gpt_backward][errors][c:gpt_backward.block-count]") {
    const wb::GptConfig c{7, 4, 8, 2, 2};
    auto [p, cache, grads] = wbtest::backward_inputs(c);

    wb::GptCache<float> fewer = cache;
    fewer.blocks.pop_back();
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, fewer, grads),
                    "a cache of 1 block cache for L = 2: name both counts, not a missing loss",
                    "wb::gpt_backward", "1 block", "L = 2");
    wb::GptCache<float> none = cache;
    none.blocks.clear();
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, none, grads), "no block cache at all",
                    "wb::gpt_backward", "0 block", "L = 2");
    wb::GptCache<float> more = cache;
    more.blocks.push_back(cache.blocks[0]);
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, more, grads), "one block cache too many",
                    "wb::gpt_backward", "3 block", "L = 2");
    REQUIRE(wbtest::all_zero(grads));  // nothing written
}
