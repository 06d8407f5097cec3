#include "8-training/model.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "9-kv-cache/sampling.hpp"
#include "check.hpp"
#include "model_fixture.hpp"

#include <cstdint>
#include <vector>

// Sizes whose product overflows, a generation too long for the model (checked before any
// work), and weights of the wrong shapes given to the cache's forward.

TEST_CASE("kv_cache_elements and make_kv_cache refuse sizes whose product overflows",
          "[kv_cache][errors][c:kv_cache_elements.too-large][c:kv_cache_bytes.too-large]"
          "[c:make_kv_cache.too-large]") {
    const std::size_t big = std::size_t(1) << 32;
    const wb::GptConfig c{11, big, big, 1, 1};
    WB_CHECK_THROWS(wb::ShapeError, wb::kv_cache_elements(c, 1),
                    "2 L B T_max D wraps around to 0: check the product", "wb::kv_cache_elements");
    WB_CHECK_THROWS(wb::ShapeError, wb::kv_cache_bytes(c, 1), "the bytes wrap around too",
                    "wb::kv_cache_*");
    WB_CHECK_THROWS(wb::ShapeError, wb::make_kv_cache(wb::GptConfig{11, 8, 8, 2, 2}, SIZE_MAX),
                    "B = SIZE_MAX", "wb::make_kv_cache");
    CHECK(wb::kv_cache_elements(wb::GptConfig{11, 8, 8, 2, 2}, 3) == 2 * 2 * 3 * 8 * 8);
}

TEST_CASE("generate refuses max_new_tokens = SIZE_MAX before generating anything",
          "[generate][errors][c:generate.too-long]") {
    const wb::GptConfig c = wbtest::small_config();
    const wb::GptParams<float> p = wbtest::small_model(c, 1);
    WB_CHECK_THROWS(wb::ValueError,
                    wb::generate(p, c, {1, 2}, SIZE_MAX, wb::SamplingOptions{}, 1, false),
                    "prompt.size() + SIZE_MAX wraps around: compare without the sum",
                    "wb::generate", "2", "18446744073709551615", "8");
    WB_CHECK_THROWS(
        wb::ValueError, wb::generate(p, c, {1, 2}, SIZE_MAX - 1, wb::SamplingOptions{}, 1, true),
        "SIZE_MAX - 1 + 2 wraps to 0", "wb::generate", "2", "18446744073709551614", "8");
}

TEST_CASE("prefill and decode_step check wte, wpe and every block's shapes",
          "[kv_cache][errors][c:prefill.param-shapes][c:decode_step.param-shapes]") {
    const wb::GptConfig c = wbtest::small_config();
    const wb::GptParams<float> good = wbtest::small_model(c, 1);
    wb::TokenIds prompt = wb::TokenIds::from_shape({1, 3});
    prompt(0, 0) = 1, prompt(0, 1) = 2, prompt(0, 2) = 3;
    wb::GptParams<float> short_wte = good;
    short_wte.wte = xt::zeros<float>({3, 8});  // V = 11 ids cannot index 3 rows
    wb::KvCache cache = wb::make_kv_cache(c, 1);
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(short_wte, c, prompt, cache),
                    "wte must be [V, D] before an id indexes it", "wb::prefill", "[3, 8]",
                    "[11, 8]");
    wb::GptParams<float> short_wpe = good;
    short_wpe.wpe = xt::zeros<float>({2, 8});  // T_max = 8 positions
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(short_wpe, c, prompt, cache),
                    "wpe must be [T_max, D]", "wb::prefill", "[2, 8]", "[8, 8]");
    (void)wb::prefill(good, c, prompt, cache);
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(short_wpe, c, {4}, cache),
                    "decode_step reads wpe at the cache's length", "wb::decode_step", "[2, 8]",
                    "[8, 8]");
    wb::GptParams<float> narrow_fc = good;
    narrow_fc.blocks[1].w_fc = xt::zeros<float>({8, 8});
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(narrow_fc, c, {4}, cache),
                    "every block's tensors are checked", "wb::decode_step", "[8, 8]", "[32, 8]");
}
