#include "8-training/model.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "9-kv-cache/sampling.hpp"
#include "check.hpp"
#include "model_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

// Checks of promises the other files of this chapter do not reach: ties at a vocabulary large
// enough that an unstable sort breaks them, the exact draw of sample() and generate() (one
// uniform double per token from one generator), the bounds of prefill and generate, and a
// rejected call leaving the cache as it was. The expected distributions come from a test-side
// oracle written from the header in double (oracle_distribution), independent of the chapter.

namespace {

using wbtest::as_vec;
using wbtest::opts;
using wbtest::rope_config;
using wbtest::small_config;
using wbtest::small_model;

// The header's three filters in double: softmax(z / τ), top-k, top-p on the renormalised
// top-k distribution; ties by the lower id (a sort on (probability, id)). `near_boundary` is
// set when a cumulative sum of top-p lies within 1e-9 of top_p, where float rounding may
// decide either way.
std::vector<double> oracle_distribution(const std::vector<double>& z, double tau, std::size_t k,
                                        double top_p, bool* near_boundary = nullptr) {
    const std::size_t V = z.size();
    double m = -INFINITY;
    for (double x : z) m = std::max(m, x / tau);
    std::vector<double> p(V);
    double s = 0.0;
    for (std::size_t i = 0; i < V; ++i) s += p[i] = std::exp(z[i] / tau - m);
    for (double& x : p) x /= s;
    const auto ranked = [&]() {
        std::vector<std::size_t> ids(V);
        std::iota(ids.begin(), ids.end(), std::size_t{0});
        std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
            return p[a] > p[b] || (p[a] == p[b] && a < b);
        });
        return ids;
    };
    if (k > 0 && k < V) {
        const std::vector<std::size_t> ids = ranked();
        for (std::size_t r = k; r < V; ++r) p[ids[r]] = 0.0;
        s = std::accumulate(p.begin(), p.end(), 0.0);
        for (double& x : p) x /= s;
    }
    if (top_p < 1.0) {
        const std::vector<std::size_t> ids = ranked();
        double cumulative = 0.0;
        std::size_t keep = 0;
        while (keep < V && cumulative < top_p) {
            cumulative += p[ids[keep]];
            ++keep;
            if (near_boundary && std::fabs(cumulative - top_p) < 1e-9) *near_boundary = true;
        }
        for (std::size_t r = keep; r < V; ++r) p[ids[r]] = 0.0;
        s = std::accumulate(p.begin(), p.end(), 0.0);
        for (double& x : p) x /= s;
    }
    return p;
}

std::vector<double> as_doubles(const wb::Vec<float>& z) { return {z.begin(), z.end()}; }

// The inverse CDF of the header on a distribution: the first id whose cumulative probability
// exceeds u.
std::int64_t inverse_cdf(const std::vector<double>& p, double u) {
    double cumulative = 0.0;
    std::int64_t last = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (p[i] == 0.0) continue;
        cumulative += p[i];
        last = static_cast<std::int64_t>(i);
        if (u < cumulative) return last;
    }
    return last;
}

std::string ids_str(const std::vector<std::int64_t>& ids) { return wb::shape_str(ids); }

bool same_cache(const wb::KvCache& a, const wb::KvCache& b) {
    if (a.length != b.length || a.k.size() != b.k.size() || a.v.size() != b.v.size()) return false;
    for (std::size_t l = 0; l < a.k.size(); ++l) {
        if (a.k[l].shape() != b.k[l].shape() || a.v[l].shape() != b.v[l].shape()) return false;
        if (!std::equal(a.k[l].begin(), a.k[l].end(), b.k[l].begin())) return false;
        if (!std::equal(a.v[l].begin(), a.v[l].end(), b.v[l].begin())) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("top-k and top-p order ties by the lower id at V = 40, where an unstable sort does not",
          "[sampling_distribution][c:sampling_distribution.ties-lower-id]"
          "[c:sampling_distribution.top-k][c:sampling_distribution.top-p]") {
    // 40 equal logits: every token has 1/40. top_k = 5 keeps ids 0..4 at 0.2 each. (std::sort
    // with a comparison of the probabilities alone is not stable past 16 elements: with
    // libstdc++ it keeps ids 21 22 23 24 30.)
    const wb::Vec<float> flat = xt::zeros<float>({40});
    std::vector<float> expected(40, 0.0f);
    for (std::size_t i = 0; i < 5; ++i) expected[i] = 0.2f;
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(flat, opts(1.0f, 5, 1.0f))), as_vec(expected),
                   1e-6,
                   "40 equal logits, top_k = 5: keep ids 0, 1, 2, 3, 4. Order the ids by "
                   "decreasing probability with the lower id first on ties (std::stable_sort, or "
                   "std::sort comparing the ids when the probabilities are equal)");
    // top_p = 0.11: 4 tokens hold 0.1 < 0.11, the 5th crosses it: again ids 0..4.
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(flat, opts(1.0f, 0, 0.11f))), as_vec(expected),
                   1e-6,
                   "40 equal logits, top_p = 0.11: the nucleus is ids 0..4 (the lower ids first on "
                   "ties)");
    // Two tied groups: ids 10..39 at logit 1 and ids 0..9 at 0. top_k = 3 keeps 10, 11, 12.
    wb::Vec<float> groups = xt::zeros<float>({40});
    for (std::size_t i = 10; i < 40; ++i) groups(i) = 1.0f;
    std::vector<float> top3(40, 0.0f);
    top3[10] = top3[11] = top3[12] = 1.0f / 3.0f;
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(groups, opts(0.7f, 3, 1.0f))), as_vec(top3),
                   1e-6, "ids 10..39 tie for the largest probability: top_k = 3 keeps 10, 11, 12");
}

TEST_CASE("sampling_distribution equals the header's filters in double on drawn logits",
          "[sampling_distribution][c:sampling_distribution.temperature]"
          "[c:sampling_distribution.top-k][c:sampling_distribution.top-p]"
          "[c:sampling_distribution.filter-order][c:sampling_distribution.ties-lower-id]"
          "[c:sampling_distribution.returns-distribution]") {
    // Logits drawn in steps of 0.5 (so equal values, ties, occur) at V = 1 .. 41, with every
    // filter combination; the oracle is oracle_distribution above. Seed shown on failure.
    const unsigned seed = GENERATE(range(1u, 13u));
    std::mt19937 rng(seed);
    const std::size_t sizes[] = {1, 2, 3, 7, 17, 37, 41};
    const std::size_t V = sizes[seed % 7];
    std::uniform_int_distribution<int> step(-6, 6);
    wb::Vec<float> z = wb::Vec<float>::from_shape({V});
    for (std::size_t i = 0; i < V; ++i) z(i) = 0.5f * static_cast<float>(step(rng));
    const float taus[] = {0.3f, 1.0f, 2.5f, 0.05f};
    const std::size_t ks[] = {0, 1, 3, V, V + 2};
    const float ps[] = {0.05f, 0.5f, 0.9f, 1.0f, 0.33f};
    for (float tau : taus) {
        for (std::size_t k : ks) {
            for (float top_p : ps) {
                bool near = false;
                const std::vector<double> expected =
                    oracle_distribution(as_doubles(z), tau, k, top_p, &near);
                if (near) continue;
                INFO("seed " << seed << ": V = " << V << ", logits " << wb::shape_str(z)
                             << ", temperature = " << tau << ", top_k = " << k
                             << ", top_p = " << top_p);
                WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(z, opts(tau, k, top_p))),
                               as_vec(expected), 1e-6,
                               "softmax(z / τ) in double, then the top_k largest (lower id first "
                               "on ties) renormalised, then the shortest sorted prefix whose mass "
                               "reaches top_p, renormalised");
            }
        }
    }
}

TEST_CASE("sample draws u = uniform_real_distribution<double>(0, 1)(rng) once and inverts the CDF",
          "[sample][c:sample.inverse-cdf][c:sample.one-draw][c:sample.deterministic]"
          "[c:sample.never-filtered]") {
    const wb::Vec<float> z{0.5f, 2.0f, -1.0f, 1.5f, 1.5f, 0.0f, 3.0f};
    const struct {
        float tau;
        std::size_t k;
        float p;
    } cases[] = {{1.0f, 0, 1.0f}, {0.6f, 4, 1.0f}, {1.7f, 0, 0.8f}, {2.0f, 5, 0.7f}};
    std::mt19937_64 rng(20240607);
    for (const auto& c : cases) {
        const std::vector<double> p = oracle_distribution(as_doubles(z), c.tau, c.k, c.p);
        for (int i = 0; i < 300; ++i) {
            std::mt19937_64 copy = rng;
            const double u = std::uniform_real_distribution<double>(0.0, 1.0)(copy);
            const std::int64_t got = wb::sample(z, opts(c.tau, c.k, c.p), rng);
            const std::int64_t want = inverse_cdf(p, u);
            INFO("draw " << i << " at temperature = " << c.tau << ", top_k = " << c.k
                         << ", top_p = " << c.p << ": u = " << u << " must give id " << want
                         << ", sample gave " << got
                         << ". Hint: one u = std::uniform_real_distribution<double>(0, 1)(rng), "
                            "then the first id (in id order) whose cumulative probability "
                            "exceeds u");
            REQUIRE(got == want);
            INFO("after sample, the generator must have advanced by exactly that one draw");
            REQUIRE(rng == copy);
        }
    }
}

TEST_CASE("sample's u is a double: draws that rounding to float would move onto the next token",
          "[sample][c:sample.inverse-cdf]") {
    // 1024 equal logits: every probability is 1/1024 and every cumulative sum i/1024 is exact in
    // float and in double, so the header's token is floor(u * 1024) whatever the precision of
    // the sums. A u in float keeps 24 bits: when the double u lies just below a boundary i/1024,
    // float(u) rounds up onto it and gives token i, one too many. The first three such draws of
    // the seed (found with a second generator) are each one call of sample.
    constexpr std::size_t V = 1024;
    const wb::Vec<float> flat = xt::zeros<float>({V});
    const std::uint64_t seed = 20240611;
    std::mt19937_64 scan(seed);
    std::vector<std::uint64_t> hits;
    for (std::uint64_t draw = 0; draw < 4000000 && hits.size() < 3; ++draw) {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(scan);
        const double as_float = static_cast<float>(u);
        if (std::floor(as_float * V) != std::floor(u * V)) hits.push_back(draw);
    }
    REQUIRE(hits.size() == 3);
    std::mt19937_64 rng(seed);
    std::uint64_t at = 0;
    for (const std::uint64_t draw : hits) {
        rng.discard(draw - at);
        std::mt19937_64 copy = rng;
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(copy);
        const auto want = static_cast<std::int64_t>(std::floor(u * V));
        const std::int64_t got = wb::sample(flat, opts(1.0f, 0, 1.0f), rng);
        INFO(
            "hint: draw u with std::uniform_real_distribution<double>, not <float>: a float u "
            "is rounded onto the next boundary");
        INFO("draw " << draw << ": u = " << std::setprecision(17) << u << " over 1024 equal "
                     << "logits must give id floor(u * 1024) = " << want << ", sample gave "
                     << got);
        REQUIRE(got == want);
        at = draw + 1;
    }
}

TEST_CASE("generate draws every token from one generator seeded once, in the order of the steps",
          "[generate][c:generate.seeded-draws][c:generate.returns-prompt-then-new]") {
    // Without any cache: the full forward on the sequence so far, its last row through the
    // header's distribution, one u per token from one std::mt19937_64(seed).
    for (const wb::GptConfig& c : {small_config(), rope_config()}) {
        const wb::GptParams<float> p = small_model(c, 31);
        const std::vector<std::int64_t> prompt = {2, 9};
        for (std::uint64_t seed : {3u, 1234567u}) {
            const wb::SamplingOptions o = opts(1.3f, 6, 0.95f);
            std::mt19937_64 rng(seed);
            std::vector<std::int64_t> expected = prompt;
            for (int step = 0; step < 6; ++step) {
                wb::TokenIds ids = wb::TokenIds::from_shape({1, expected.size()});
                std::copy(expected.begin(), expected.end(), ids.begin());
                const wb::Mat<float> full = wb::gpt_logits(p, c, ids);  // [T, V]
                std::vector<double> z(c.V);
                for (std::size_t j = 0; j < c.V; ++j) z[j] = full(expected.size() - 1, j);
                const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
                expected.push_back(
                    inverse_cdf(oracle_distribution(z, o.temperature, o.top_k, o.top_p), u));
            }
            const std::vector<std::int64_t> got = wb::generate(p, c, prompt, 6, o, seed);
            INFO(wb::positions_name(c.positions)
                 << " positions, seed " << seed << ": generate = " << ids_str(got) << ", expected "
                 << ids_str(expected)
                 << ". Hint: one std::mt19937_64(seed), made once before the loop (never "
                    "reseeded per step) and passed to every sample call");
            CHECK(got == expected);
        }
    }
}

TEST_CASE("generate checks the options even with greedy, which ignores them",
          "[generate][errors][c:generate.options-checked-with-greedy][c:generate.bad-options]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 32);
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, 2}, 3, opts(0.0f, 0, 1.0f), 0, true),
                    "the options are checked even when use_greedy ignores them", "wb::generate",
                    "temperature");
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, 2}, 3, opts(1.0f, 0, 0.0f), 0, true),
                    "the options are checked even when use_greedy ignores them", "wb::generate",
                    "top_p");
}

TEST_CASE("generate with 0 new tokens returns the prompt only after the same checks",
          "[generate][errors][c:generate.zero-new-tokens][c:generate.bad-id]"
          "[c:generate.bad-options]") {
    const wb::GptConfig c = small_config();  // V = 11
    const wb::GptParams<float> p = small_model(c, 32);
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, 12}, 0, wb::SamplingOptions{}, 0),
                    "0 new tokens returns the prompt, but only after the same checks",
                    "wb::generate", "12");
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1}, 0, opts(-2.0f, 0, 1.0f), 0),
                    "0 new tokens returns the prompt, but only after the same checks",
                    "wb::generate", "temperature");
}

TEST_CASE("generate refuses a prompt longer than T_max even with 0 new tokens",
          "[generate][errors][c:generate.too-long][c:generate.zero-new-tokens]") {
    const wb::GptConfig c = small_config();  // T_max = 8
    const wb::GptParams<float> p = small_model(c, 32);
    const std::vector<std::int64_t> nine = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, nine, 0, wb::SamplingOptions{}, 0),
                    "a prompt of 9 tokens does not fit in T_max = 8 even with 0 new tokens: "
                    "T_max - prompt.size() wraps around when the prompt is longer",
                    "wb::generate", "9", "8");
    const std::vector<std::int64_t> eight = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<std::int64_t> got = wb::generate(p, c, eight, 0, wb::SamplingOptions{}, 0);
    INFO("a prompt of exactly T_max = 8 tokens with 0 new ones is allowed: got " << ids_str(got));
    CHECK(got == eight);
}

TEST_CASE(
    "prefill takes a prompt of exactly T_max tokens, and the full cache then refuses a decode",
    "[kv_cache][c:prefill.prompt-length][c:prefill.matches-full-forward]"
    "[c:decode_step.full-cache]") {
    for (const wb::GptConfig& c : {small_config(), rope_config()}) {
        const wb::GptParams<float> p = small_model(c, 33);
        const wb::TokenIds ids{{3, 1, 4, 1, 5, 9, 2, 6}};  // T = T_max = 8
        const wb::Mat<float> full = wb::gpt_logits(p, c, ids);
        wb::KvCache cache = wb::make_kv_cache(c, 1);
        const wb::Mat<float> logits = wb::prefill(p, c, ids, cache);
        INFO(wb::positions_name(c.positions) << " positions: a prompt of T = T_max = 8 tokens");
        WB_CHECK_CLOSE(
            logits, wbtest::row_of(full, 7), 1e-5,
            "T = T_max is a valid prompt (1 <= T <= T_max): its logits are position 7's");
        CHECK(cache.length == 8);
        WB_CHECK_THROWS(wb::ValueError, wb::decode_step(p, c, {1}, cache),
                        "the cache holds T_max positions: refuse the step before writing slot "
                        "T_max, which does not exist (with either position kind)",
                        "wb::decode_step", "8");
        CHECK(cache.length == 8);
    }
}

TEST_CASE("a rejected prefill or decode_step leaves every K, V and the length as they were",
          "[kv_cache][errors][c:prefill.unchanged-on-error][c:decode_step.unchanged-on-error]") {
    const wb::GptConfig c = rope_config();
    const wb::GptParams<float> p = small_model(c, 34);
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::TokenIds bad = xt::zeros<std::int64_t>({2, 4});
    bad(1, 3) = 11;
    const wb::KvCache empty = cache;
    CHECK_THROWS_AS(wb::prefill(p, c, bad, cache), wb::ValueError);
    INFO("prefill with id 11 at [1, 3] must throw before it writes anything into the cache");
    CHECK(same_cache(cache, empty));

    const wb::TokenIds prompt{{3, 1, 4}, {10, 0, 7}};
    wb::prefill(p, c, prompt, cache);
    const wb::KvCache after_prefill = cache;
    const wb::TokenIds other{{5, 9, 2, 6}, {8, 8, 1, 0}};
    CHECK_THROWS_AS(wb::prefill(p, c, other, cache), wb::ValueError);
    INFO(
        "prefill of another prompt on a used cache (length 3) must throw before it writes "
        "slots [0, 4)");
    CHECK(same_cache(cache, after_prefill));
    CHECK_THROWS_AS(wb::decode_step(p, c, {1, 11}, cache), wb::ValueError);
    CHECK_THROWS_AS(wb::decode_step(p, c, {1}, cache), wb::ShapeError);
    INFO(
        "decode_step with a bad id or the wrong number of tokens must throw before it writes "
        "slot 3 or advances the length");
    CHECK(same_cache(cache, after_prefill));
}

TEST_CASE("make_kv_cache returns zeros even where the memory held garbage",
          "[kv_cache][c:make_kv_cache.zeroed][c:make_kv_cache.layout]") {
    const wb::GptConfig c{11, 8, 8, 2, 3};
    for (int round = 0; round < 3; ++round) {
        {
            // Fill and free blocks of the cache's sizes, so that the allocator hands them back.
            std::vector<std::vector<float>> junk;
            for (int i = 0; i < 12; ++i)
                junk.emplace_back(2 * 2 * 8 * 4, std::numeric_limits<float>::quiet_NaN());
        }
        const wb::KvCache cache = wb::make_kv_cache(c, 2);
        REQUIRE(cache.k.size() == 3);
        REQUIRE(cache.v.size() == 3);
        for (std::size_t l = 0; l < 3; ++l) {
            WB_CHECK_CLOSE(cache.k[l], xt::zeros<float>({2, 2, 8, 4}), 0.0,
                           "the cache starts as zeros: from_shape leaves whatever the memory "
                           "held; use xt::zeros (or fill with 0)");
            WB_CHECK_CLOSE(cache.v[l], xt::zeros<float>({2, 2, 8, 4}), 0.0,
                           "the cache starts as zeros: from_shape leaves whatever the memory "
                           "held; use xt::zeros (or fill with 0)");
        }
    }
}

TEST_CASE("kv_cache_bytes refuses a byte count past 2^48 that kv_cache_elements still returns",
          "[kv_cache][errors][c:kv_cache_bytes.too-large][c:kv_cache_elements.formula]") {
    // 2·L·B·T_max·D = 2·1·1·2^23·2^23 = 2^47 elements fit; 2^47 · 4 = 2^49 bytes do not.
    const std::size_t big = std::size_t(1) << 23;
    const wb::GptConfig c{11, big, big, 1, 1};
    CHECK(wb::kv_cache_elements(c, 1) == (std::size_t(1) << 47));
    WB_CHECK_THROWS(wb::ShapeError, wb::kv_cache_bytes(c, 1),
                    "the byte count 2^49 is past 2^48: checked_size on elements × 4",
                    "wb::kv_cache_*");
}

TEST_CASE("greedy rejects a +inf logit and all -inf logits",
          "[greedy][errors]"
          "[c:greedy.bad-logit][c:greedy.all-masked]") {
    const float inf = std::numeric_limits<float>::infinity();
    WB_CHECK_THROWS(wb::ValueError, wb::greedy(wb::Vec<float>{1.0f, 2.0f, inf}),
                    "a +inf logit is not a score: reject it", "wb::greedy", "2");
    WB_CHECK_THROWS(wb::ValueError, wb::greedy(wb::Vec<float>{-inf, -inf, -inf}),
                    "every token masked leaves nothing to choose", "wb::greedy");
    INFO("a -inf logit is a masked token and is allowed");
    CHECK(wb::greedy(wb::Vec<float>{-inf, -3.0f, -inf}) == 1);
}

TEST_CASE("prefill refuses an invalid config before reading the model",
          "[prefill][errors][c:prefill.invalid-config]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 35);
    wb::KvCache cache = wb::make_kv_cache(c, 1);
    const wb::TokenIds prompt{{1, 2}};
    const wb::GptConfig uneven{c.V, c.T_max, c.D, 3, c.L};  // H = 3 does not divide D = 8
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, uneven, prompt, cache),
                    "an invalid config is refused before anything is computed", "wb::prefill", "3",
                    "8");
    const wb::GptConfig no_layers{c.V, c.T_max, c.D, c.H, 0};
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, no_layers, prompt, cache),
                    "L = 0 is not a model", "wb::prefill", "0");
    CHECK(cache.length == 0);
}
