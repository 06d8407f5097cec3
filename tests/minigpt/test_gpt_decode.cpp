#include "check.hpp"
#include "minigpt/fast/gpt_decode.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "8-training/model.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "9-kv-cache/sampling.hpp"
#include "random_model.hpp"

// Checks of the fast decode, wb::minigpt::GptDecoder, against chapter 9's KV cache
// (wb::generate, wb::prefill, wb::decode_step): the same network written with xtensor, sharing
// no code with the decoder (packed weights, polynomial GELU and exp, OpenMP over panels and
// heads). Both run in float and differ by rounding only (the logits by ~1e-6 of their scale;
// the check allows 1e-4), so greedy decoding must pick the same token at every step.

namespace {

using wb::GptConfig;
using wb::GptParams;
using wb::minigpt::GptDecoder;

using wbtest::random_model;

std::vector<std::int64_t> random_prompt(std::size_t n, std::size_t V, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::int64_t> id(0, static_cast<std::int64_t>(V) - 1);
    std::vector<std::int64_t> out(n);
    for (auto& x : out) x = id(gen);
    return out;
}

// Restores the OpenMP thread count at the end of a check.
struct ThreadCount {
    int saved = omp_get_max_threads();
    ~ThreadCount() { omp_set_num_threads(saved); }
};

}  // namespace

TEST_CASE("GptDecoder's greedy tokens equal chapter 9's generate for several prompts",
          "[minigpt]") {
    // Widths that are and are not multiples of the 16-float panels, heads of 12 and 16.
    for (const GptConfig c : {GptConfig{37, 80, 36, 3, 2}, GptConfig{64, 96, 64, 4, 3}}) {
        INFO("config " << wb::config_str(c));
        const GptParams<float> params = random_model(c, 7);
        GptDecoder decoder(params, c);
        for (std::size_t prompt_len : {1u, 5u, 23u}) {
            const auto prompt = random_prompt(prompt_len, c.V, 40 + unsigned(prompt_len));
            const std::size_t n = c.T_max - prompt_len;  // fill the context to its end
            INFO("prompt of " << prompt_len << " tokens, " << n << " new");
            const auto expected =
                wb::generate(params, c, prompt, n, wb::SamplingOptions{}, 1, true);
            const auto fast =
                wb::minigpt::generate_fast(decoder, prompt, n, wb::SamplingOptions{}, 1, true);
            REQUIRE(fast.size() == expected.size());
            std::size_t first_difference = fast.size();
            for (std::size_t t = 0; t < fast.size(); ++t) {
                if (fast[t] != expected[t]) {
                    first_difference = t;
                    break;
                }
            }
            INFO("first different token at position " << first_difference);
            CHECK(fast == expected);
        }
    }
}

TEST_CASE("GptDecoder's logits match chapter 9's decode_step at every position", "[minigpt]") {
    const GptConfig c{29, 40, 48, 4, 2};
    const GptParams<float> params = random_model(c, 3);
    const auto tokens = random_prompt(c.T_max, c.V, 5);
    GptDecoder decoder(params, c);

    wb::KvCache cache = wb::make_kv_cache(c, 1);
    wb::TokenIds first = wb::TokenIds::from_shape({1, 3});
    std::copy(tokens.begin(), tokens.begin() + 3, first.begin());
    wb::Mat<float> expected = wb::prefill(params, c, first, cache);
    const float* logits = decoder.prefill({tokens.begin(), tokens.begin() + 3});
    for (std::size_t t = 3;; ++t) {
        INFO("position " << t - 1);
        double scale = 0, worst = 0;
        for (std::size_t v = 0; v < c.V; ++v)
            scale = std::max(scale, double(std::fabs(expected(0, v))));
        for (std::size_t v = 0; v < c.V; ++v)
            worst = std::max(worst, double(std::fabs(logits[v] - expected(0, v))));
        INFO("largest difference " << worst << " of logits up to " << scale);
        CHECK(worst <= 1e-4 * (1.0 + scale));
        if (t == c.T_max) break;
        expected = wb::decode_step(params, c, {tokens[t]}, cache);
        logits = decoder.step(tokens[t]);
    }
    CHECK(decoder.length() == c.T_max);
}

TEST_CASE(
    "GptDecoder equals chapter 8's gpt_logits at several prompt lengths, learned and "
    "RoPE",
    "[minigpt]") {
    // The decoder's logits after a prefill of n tokens, then after each decode step, against
    // row t of chapter 8's full forward wb::gpt_logits on the same tokens: with RoPE, position
    // t's q and k must be turned by t's angles whether they come from the prefill or a step
    // (a decoder that restarted its positions at 0, or forgot to turn the cached keys, is off
    // by far more than rounding). Head widths 12 and 16, a T_max of 64 for large angles.
    for (const wb::Positions positions : {wb::Positions::learned, wb::Positions::rope}) {
        for (const GptConfig c0 : {GptConfig{29, 40, 48, 4, 2}, GptConfig{23, 64, 32, 2, 2}}) {
            GptConfig c = c0;
            c.positions = positions;
            INFO("config " << wb::config_str(c));
            const GptParams<float> params = random_model(c, 13);
            const auto tokens = random_prompt(c.T_max, c.V, 17);
            wb::TokenIds all = wb::TokenIds::from_shape({1, c.T_max});
            std::copy(tokens.begin(), tokens.end(), all.begin());
            const wb::Mat<float> expected = wb::gpt_logits(params, c, all);  // [T_max, V]
            GptDecoder decoder(params, c);
            for (std::size_t n :
                 {std::size_t{1}, std::size_t{2}, std::size_t{7}, c.T_max - 5, c.T_max}) {
                INFO("prefill of " << n << " tokens");
                const float* logits = decoder.prefill({tokens.begin(), tokens.begin() + n});
                for (std::size_t t = n - 1;; ++t) {
                    INFO("position " << t);
                    double scale = 0, worst = 0;
                    for (std::size_t v = 0; v < c.V; ++v) {
                        scale = std::max(scale, double(std::fabs(expected(t, v))));
                        worst = std::max(worst, double(std::fabs(logits[v] - expected(t, v))));
                    }
                    INFO("largest difference " << worst << " of logits up to " << scale);
                    CHECK(worst <= 1e-4 * (1.0 + scale));
                    if (t + 1 == c.T_max || t + 1 >= n + 4) break;  // 4 steps after the prefill
                    logits = decoder.step(tokens[t + 1]);
                }
            }
        }
    }
}

TEST_CASE("GptDecoder gives the same bits for 1, 2 and 3 threads", "[minigpt]") {
    ThreadCount restore;
    const GptConfig c{50, 64, 96, 6, 2};
    const GptParams<float> params = random_model(c, 11);
    const auto tokens = random_prompt(40, c.V, 12);
    std::vector<std::vector<float>> runs;
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        GptDecoder decoder(params, c);
        std::vector<float> all;
        const float* logits = decoder.prefill({tokens.begin(), tokens.begin() + 10});
        all.insert(all.end(), logits, logits + c.V);
        for (std::size_t t = 10; t < tokens.size(); ++t) {
            logits = decoder.step(tokens[t]);
            all.insert(all.end(), logits, logits + c.V);
        }
        runs.push_back(all);
    }
    for (std::size_t r = 1; r < runs.size(); ++r) {
        INFO("threads " << r + 1 << " against 1");
        REQUIRE(runs[r].size() == runs[0].size());
        CHECK(std::memcmp(runs[r].data(), runs[0].data(), runs[0].size() * sizeof(float)) == 0);
    }
}

TEST_CASE("GptDecoder resets, samples like chapter 9 for a seed, and rejects bad input",
          "[minigpt]") {
    const GptConfig c{20, 16, 32, 2, 1};
    const GptParams<float> params = random_model(c, 2);
    GptDecoder decoder(params, c);
    const wb::SamplingOptions opts{0.9f, 5, 0.95f};
    const auto a = wb::minigpt::generate_fast(decoder, {1, 2, 3}, 10, opts, 9, false);
    const auto b = wb::minigpt::generate_fast(decoder, {1, 2, 3}, 10, opts, 9, false);
    CHECK(a == b);
    CHECK(a == wb::generate(params, c, {1, 2, 3}, 10, opts, 9, false));
    CHECK(wb::minigpt::generate_fast(decoder, {4}, 0, opts, 9, false) ==
          std::vector<std::int64_t>{4});

    WB_CHECK_THROWS(wb::ShapeError, wb::minigpt::generate_fast(decoder, {}, 3, opts, 1, false),
                    "an empty prompt has no last token", "empty");
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::generate_fast(decoder, {1}, 16, opts, 1, false),
                    "1 + 16 tokens do not fit T_max = 16", "T_max = 16");
    WB_CHECK_THROWS(wb::ValueError, decoder.prefill({1, 20}), "id 20 is outside V = 20",
                    "prompt[1] = 20");
    decoder.prefill({1});
    WB_CHECK_THROWS(wb::ValueError, decoder.step(-1), "-1 is no token", "token = -1");
    for (int t = 1; t < 16; ++t) decoder.step(0);
    WB_CHECK_THROWS(wb::ValueError, decoder.step(0), "16 positions fill T_max = 16", "full");
    decoder.reset();
    CHECK(decoder.length() == 0);
    const GptConfig wrong{20, 16, 32, 2, 2};
    WB_CHECK_THROWS(wb::ShapeError, GptDecoder(params, wrong), "2 blocks expected, 1 given",
                    "blocks");
}

TEST_CASE("generate_text_fast writes generate_text's greedy text, in pieces past T_max",
          "[minigpt]") {
    wb::minigpt::Model m;
    m.tokenizer = wb::minigpt::Tokenizer::from_text("abcdefgh \n");
    m.config = GptConfig{m.tokenizer.size(), 12, 32, 4, 2};
    m.params = random_model(m.config, 21);
    const wb::SamplingOptions opts{0.8f, 0, 1.0f};
    for (const std::string prompt : {"", "ab", "hgfe dcba\nab"}) {
        INFO("prompt '" << prompt << "'");
        // 30 characters from a 12-token context: three pieces.
        wb::minigpt::GenerationSpeed speed;
        const std::string fast =
            wb::minigpt::generate_text_fast(m, prompt, 30, opts, 3, true, &speed);
        CHECK(fast == wb::minigpt::generate_text(m, prompt, 30, opts, 3, true));
        CHECK(speed.tokens == 30);
        CHECK(speed.seconds > 0);
    }
}
