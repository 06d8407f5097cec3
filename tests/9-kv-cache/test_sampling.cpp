#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "check.hpp"
#include "model_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

// Expected probabilities come from Python's math module, e.g. for τ = 1:
//   e = [math.exp(z / tau) for z in [1, 2, 3, 4]]; [x / sum(e) for x in e]
// and the filtered ones renormalise those by hand (stated beside each). The distribution is
// returned in float: tolerance 1e-6.

namespace {

using wbtest::as_vec;
using wbtest::opts;

constexpr double kTol = 1e-6;

wb::Vec<float> logits_1234() { return wb::Vec<float>{1.0f, 2.0f, 3.0f, 4.0f}; }

std::string ids_str(const std::vector<std::int64_t>& ids) { return wb::shape_str(ids); }

}  // namespace

TEST_CASE("greedy picks the argmax, the lowest id on ties", "[greedy][c:greedy.first-argmax]") {
    INFO("greedy([0.5, -1, 2.5, 1]) = "
         << wb::greedy(wb::Vec<float>{0.5f, -1.0f, 2.5f, 1.0f})
         << ", expected 2. Hint: the LARGEST logit (not the smallest).");
    CHECK(wb::greedy(wb::Vec<float>{0.5f, -1.0f, 2.5f, 1.0f}) == 2);
    INFO("greedy([1, 3, 3, 0]) = "
         << wb::greedy(wb::Vec<float>{1.0f, 3.0f, 3.0f, 0.0f})
         << ", expected 1: on ties the lowest id wins (a strict > keeps the first maximum)");
    CHECK(wb::greedy(wb::Vec<float>{1.0f, 3.0f, 3.0f, 0.0f}) == 1);
    CHECK(wb::greedy(wb::Vec<float>{-7.0f}) == 0);
    CHECK(wb::greedy(wb::Vec<float>{-3.0f, -2.0f, -5.0f}) == 1);
}

TEST_CASE("greedy compares the logits themselves, also where float probabilities round equal",
          "[greedy][c:greedy.first-argmax]") {
    // softmax([0, 1e-8]) = [0.4999999975, 0.5000000025]: both round to 0.5 in float, so the
    // argmax of a float distribution ties and keeps id 0, while the largest logit is id 1.
    INFO(
        "hint: take the argmax of the logits, not of sampling_distribution's float "
        "probabilities: the softmax keeps the order but rounds close ones to the same value");
    CHECK(wb::greedy(wb::Vec<float>{0.0f, 1e-8f}) == 1);
    CHECK(wb::greedy(wb::Vec<float>{-2.0f, 0.0f, 1e-8f, -1.0f}) == 2);
}

TEST_CASE("temperature 1 gives the plain softmax of the logits",
          "[sampling_distribution][c:sampling_distribution.temperature]") {
    // math: softmax([1, 2, 3, 4]) = [0.0320586033, 0.0871443187, 0.236882818, 0.64391426]
    const std::vector<float> p = wb::sampling_distribution(logits_1234(), opts(1.0f, 0, 1.0f));
    WB_CHECK_CLOSE(as_vec(p),
                   (wb::Vec<float>{0.0320586033f, 0.0871443187f, 0.236882818f, 0.64391426f}), kTol,
                   "τ = 1, no filter: exactly softmax(z). Did you forget the normalisation?");
    // Shifting every logit changes nothing (softmax is shift-invariant; large logits must not overflow).
    const std::vector<float> shifted = wb::sampling_distribution(
        wb::Vec<float>{1001.0f, 1002.0f, 1003.0f, 1004.0f}, opts(1.0f, 0, 1.0f));
    WB_CHECK_CLOSE(
        as_vec(shifted), as_vec(p), kTol,
        "logits 1001..1004 must give the same distribution: subtract the maximum before exp");
}

TEST_CASE("low temperature approaches greedy, high temperature flattens",
          "[sampling_distribution][c:sampling_distribution.temperature]") {
    // math: softmax([1, 2, 3, 4] / 0.5) = [0.00214400878, 0.0158422012, 0.117058913, 0.864954877]
    WB_CHECK_CLOSE(
        as_vec(wb::sampling_distribution(logits_1234(), opts(0.5f, 0, 1.0f))),
        (wb::Vec<float>{0.00214400878f, 0.0158422012f, 0.117058913f, 0.864954877f}), kTol,
        "τ = 0.5 sharpens: p = softmax(z / τ). Did you multiply by τ instead of dividing?");
    // math: softmax([1, 2, 3, 4] / 2) = [0.101536324, 0.167405097, 0.276004345, 0.455054234]
    WB_CHECK_CLOSE(
        as_vec(wb::sampling_distribution(logits_1234(), opts(2.0f, 0, 1.0f))),
        (wb::Vec<float>{0.101536324f, 0.167405097f, 0.276004345f, 0.455054234f}), kTol,
        "τ = 2 flattens: p = softmax(z / τ). Did you multiply by τ instead of dividing?");
    // math: softmax([1, 2, 3, 4] / 0.1)[3] = 0.9999546 -> nearly one-hot on the argmax.
    const std::vector<float> cold = wb::sampling_distribution(logits_1234(), opts(0.1f, 0, 1.0f));
    INFO("τ = 0.1: p[3] = " << cold[3]
                            << ", expected 0.9999546 (the greedy token takes everything)");
    CHECK(std::fabs(cold[3] - 0.9999546) < 1e-6);
    // math: softmax([1, 2, 3, 4] / 100) = [0.246262593, 0.248737573, 0.251237428, 0.253762406]
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(100.0f, 0, 1.0f))),
                   (wb::Vec<float>{0.246262593f, 0.248737573f, 0.251237428f, 0.253762406f}), kTol,
                   "τ = 100 is almost uniform");
}

TEST_CASE("the softmax is shifted by the maximum of z / τ, so large logits stay finite at any τ",
          "[sampling_distribution][c:sampling_distribution.temperature]") {
    // Shifting every logit by c shifts every z / τ by c / τ: the distribution does not change.
    // math: softmax([1001, ..., 1004] / 0.5) = softmax([1, 2, 3, 4] / 0.5)
    //     = [0.00214400878, 0.0158422012, 0.117058913, 0.864954877]
    INFO(
        "hint: subtract the maximum of z / τ, not the maximum of z: at τ = 0.5 the logits "
        "1001..1004 become 2002..2008, and exp(2008 - 1004) overflows to inf");
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(
                       wb::Vec<float>{1001.0f, 1002.0f, 1003.0f, 1004.0f}, opts(0.5f, 0, 1.0f))),
                   (wb::Vec<float>{0.00214400878f, 0.0158422012f, 0.117058913f, 0.864954877f}),
                   kTol, "logits 1001..1004 at τ = 0.5 give the distribution of 1..4 at τ = 0.5");
    // math: softmax([-3004, ..., -3001] / 2) = softmax([1, 2, 3, 4] / 2)
    //     = [0.101536324, 0.167405097, 0.276004345, 0.455054234]
    WB_CHECK_CLOSE(
        as_vec(wb::sampling_distribution(wb::Vec<float>{-3004.0f, -3003.0f, -3002.0f, -3001.0f},
                                         opts(2.0f, 0, 1.0f))),
        (wb::Vec<float>{0.101536324f, 0.167405097f, 0.276004345f, 0.455054234f}), kTol,
        "logits -3004..-3001 at τ = 2 give the distribution of 1..4 at τ = 2 (z / τ is about "
        "-1500: shifted by the maximum of z, -3001, it would be exp(1499) = inf)");
}

TEST_CASE("top_k keeps exactly the k most likely tokens, renormalised",
          "[sampling_distribution][c:sampling_distribution.top-k]"
          "[c:sampling_distribution.ties-lower-id]") {
    // top_k = 2 of softmax([1, 2, 3, 4]): keep ids 3, 2; renormalise by hand:
    //   0.236882818 / (0.236882818 + 0.64391426) = 0.268941421, 0.64391426 / ... = 0.731058579
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 2, 1.0f))),
                   (wb::Vec<float>{0.0f, 0.0f, 0.268941421f, 0.731058579f}), kTol,
                   "top_k = 2 keeps the 2 LARGEST (not the smallest, not k + 1) and renormalises");
    // top_k = 3: [0, 0.0900305732, 0.244728471, 0.665240956]
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 3, 1.0f))),
                   (wb::Vec<float>{0.0f, 0.0900305732f, 0.244728471f, 0.665240956f}), kTol,
                   "top_k = 3 keeps exactly three tokens");
    // top_k >= V keeps everything.
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 9, 1.0f))),
                   (wb::Vec<float>{0.0320586033f, 0.0871443187f, 0.236882818f, 0.64391426f}), kTol,
                   "top_k >= V filters nothing");
    // Ties at the cut: softmax([0.5, 3, -1, 2, 2]) = [0.0447047, 0.544615, 0.00997497, 0.200353, 0.200353];
    // top_k = 2 keeps id 1 and id 3 (the lower of the tied ids 3, 4):
    //   0.544614991 / 0.744967652 = 0.731058579, 0.200352658 / 0.744967652 = 0.268941421
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(wb::Vec<float>{0.5f, 3.0f, -1.0f, 2.0f, 2.0f},
                                                    opts(1.0f, 2, 1.0f))),
                   (wb::Vec<float>{0.0f, 0.731058579f, 0.0f, 0.268941421f, 0.0f}), kTol,
                   "equal probabilities are ordered by the lower id: keep id 3, drop id 4");
}

TEST_CASE("top_p keeps the smallest nucleus whose mass reaches top_p",
          "[sampling_distribution][c:sampling_distribution.top-p]") {
    // softmax([1, 2, 3, 4]) sorted: 0.6439 (id 3), 0.2369 (id 2), ... cumulative 0.6439, 0.8808.
    // top_p = 0.8: 0.6439 < 0.8, so id 2 (the token that crosses 0.8) is kept too:
    //   [0, 0, 0.268941421, 0.731058579]
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 0, 0.8f))),
                   (wb::Vec<float>{0.0f, 0.0f, 0.268941421f, 0.731058579f}), kTol,
                   "top_p = 0.8 keeps ids 3 and 2: the token whose mass CROSSES top_p belongs to "
                   "the nucleus");
    // top_p = 0.5: id 3 alone already reaches it.
    WB_CHECK_CLOSE(
        as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 0, 0.5f))),
        (wb::Vec<float>{0.0f, 0.0f, 0.0f, 1.0f}), kTol,
        "top_p = 0.5: the most likely token (0.644) reaches it alone: keep the SMALLEST set");
    // A tiny top_p still keeps the most likely token.
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 0, 0.01f))),
                   (wb::Vec<float>{0.0f, 0.0f, 0.0f, 1.0f}), kTol,
                   "top_p = 0.01: the nucleus always holds at least the most likely token");
    // Boundary: four equal logits give exactly 0.25 each; top_p = 0.5 is reached exactly after
    // two tokens (cumulative 0.5 >= 0.5), ids 0 and 1 (lower ids first): [0.5, 0.5, 0, 0].
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(wb::Vec<float>{0.0f, 0.0f, 0.0f, 0.0f},
                                                    opts(1.0f, 0, 0.5f))),
                   (wb::Vec<float>{0.5f, 0.5f, 0.0f, 0.0f}), kTol,
                   "mass exactly equal to top_p REACHES it: stop at cumulative >= top_p (not >), "
                   "and keep the crossing token");
    // top_p = 1 is off.
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(1.0f, 0, 1.0f))),
                   (wb::Vec<float>{0.0320586033f, 0.0871443187f, 0.236882818f, 0.64391426f}), kTol,
                   "top_p = 1 keeps every token");
}

TEST_CASE("top_p = 1 is off: a token too unlikely to move the cumulative sum keeps its probability",
          "[sampling_distribution][c:sampling_distribution.top-p]"
          "[c:sampling_distribution.returns-distribution]") {
    // math: softmax([0, -40]) = [1 - 4.2483542552915889e-18, 4.2483542552915889e-18]. In double
    // the first probability is exactly 1.0, so a top-p pass run at top_p = 1 stops after it and
    // sets the second to 0; with top-p off it keeps 4.25e-18 (a normal float).
    const std::vector<float> p =
        wb::sampling_distribution(wb::Vec<float>{0.0f, -40.0f}, opts(1.0f, 0, 1.0f));
    INFO(
        "hint: run top-p only when top_p < 1: at top_p = 1 the cumulative sum reaches 1.0 "
        "before the last tokens and the filter drops them");
    INFO("p = [" << p[0] << ", " << p[1] << "], expected [1, 4.2483543e-18]");
    CHECK(std::fabs(p[1] / 4.2483542552915889e-18 - 1.0) < 1e-5);
}

TEST_CASE("the filters run in the order temperature, top-k, top-p",
          "[sampling_distribution][c:sampling_distribution.filter-order]") {
    // τ = 2: [0.101536324, 0.167405097, 0.276004345, 0.455054234]
    // top_k = 3, renormalised: [0, 0.186323723, 0.307195886, 0.506480391]
    // top_p = 0.8 on THAT: cumulative 0.5065, 0.8137 -> ids 3, 2: [0, 0, 0.377540669, 0.622459331]
    // (top-p on the τ = 2 softmax before top-k would need 3 tokens: 0.455 + 0.276 < 0.8.)
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(logits_1234(), opts(2.0f, 3, 0.8f))),
                   (wb::Vec<float>{0.0f, 0.0f, 0.377540669f, 0.622459331f}), kTol,
                   "divide by τ first, then top-k and renormalise, then top-p on the renormalised "
                   "distribution, then renormalise again");
}

TEST_CASE("sample draws with the frequencies of the distribution over 20000 draws",
          "[sample][c:sample.inverse-cdf][c:sample.never-filtered]") {
    // 20000 seeded draws (deterministic). The standard deviation of a frequency is at most
    // sqrt(0.25 / 20000) = 0.0035; the tolerance 0.015 is over 4 of them.
    std::mt19937_64 rng(2024);
    std::vector<double> counts(4, 0.0);
    for (int i = 0; i < 20000; ++i)
        counts[static_cast<std::size_t>(wb::sample(logits_1234(), opts(1.0f, 0, 1.0f), rng))] +=
            1.0;
    for (double& x : counts) x /= 20000.0;
    const std::vector<double> expected = {0.0320586033, 0.0871443187, 0.236882818, 0.64391426};
    WB_REPORT(wbtest::compare(wbtest::Flat{{4}, counts}, wbtest::Flat{{4}, expected}, 0.015, 0.0,
                              "frequencies of sample() must match softmax(z / τ): draw u once and "
                              "take the first id whose cumulative probability exceeds u"));

    // With top_k = 2, ids 0 and 1 are never drawn: 0.268941421 / 0.731058579.
    std::vector<double> top2(4, 0.0);
    for (int i = 0; i < 20000; ++i)
        top2[static_cast<std::size_t>(wb::sample(logits_1234(), opts(1.0f, 2, 1.0f), rng))] += 1.0;
    for (double& x : top2) x /= 20000.0;
    INFO("top_k = 2 drew id 0 " << top2[0] * 20000 << " times and id 1 " << top2[1] * 20000
                                << " times: a filtered token must never be drawn");
    CHECK(top2[0] == 0.0);
    CHECK(top2[1] == 0.0);
    WB_REPORT(wbtest::compare(wbtest::Flat{{4}, top2},
                              wbtest::Flat{{4}, {0.0, 0.0, 0.268941421, 0.731058579}}, 0.015, 0.0,
                              "sample() must draw from the filtered distribution"));
}

TEST_CASE("sample is deterministic for a seed", "[sample][c:sample.deterministic]") {
    std::mt19937_64 a(7), b(7);
    std::vector<std::int64_t> da, db;
    for (int i = 0; i < 50; ++i) {
        da.push_back(wb::sample(logits_1234(), opts(1.5f, 0, 1.0f), a));
        db.push_back(wb::sample(logits_1234(), opts(1.5f, 0, 1.0f), b));
    }
    INFO("seed 7 gave " << ids_str(da) << " and then " << ids_str(db)
                        << ". Hint: all randomness must come from the rng argument");
    CHECK(da == db);
    std::int64_t distinct = 0;
    for (std::int64_t id = 0; id < 4; ++id) distinct += std::count(da.begin(), da.end(), id) > 0;
    INFO("50 draws at τ = 1.5 used " << distinct << " different ids: sample() must not be greedy");
    CHECK(distinct >= 3);
}

TEST_CASE(
    "generate with greedy equals the argmax of the full forward, appended step by step, with "
    "learned positions and with RoPE",
    "[generate][c:generate.greedy-matches-forward]"
    "[c:generate.returns-prompt-then-new][c:generate.zero-new-tokens]") {
    for (const wb::GptConfig& c : {wbtest::small_config(), wbtest::rope_config()}) {
        const wb::GptParams<float> p = wbtest::small_model(c, 21);
        const std::vector<std::int64_t> prompt = {3, 1, 4};

        // Without any cache: run chapter 8's full forward on the whole sequence each time and
        // take the argmax (first maximum) of the last row.
        std::vector<std::int64_t> expected = prompt;
        for (int step = 0; step < 5; ++step) {
            wb::TokenIds ids = wb::TokenIds::from_shape({1, expected.size()});
            std::copy(expected.begin(), expected.end(), ids.begin());
            const wb::Mat<float> full = wb::gpt_logits(p, c, ids);  // [T, V]
            const std::size_t last = expected.size() - 1;
            std::size_t best = 0;
            for (std::size_t j = 1; j < c.V; ++j)
                if (full(last, j) > full(last, best)) best = j;
            expected.push_back(static_cast<std::int64_t>(best));
        }
        const std::vector<std::int64_t> got =
            wb::generate(p, c, prompt, 5, wb::SamplingOptions{}, 0, true);
        INFO(wb::positions_name(c.positions)
             << " positions: generate (greedy) = " << ids_str(got) << ", expected "
             << ids_str(expected)
             << " (the prompt, then 5 argmax tokens of the full forward). Hint: prefill once, "
                "then decode_step each new token at position cache.length; return prompt + new "
                "tokens.");
        CHECK(got == expected);

        // 0 new tokens: the prompt itself.
        CHECK(wb::generate(p, c, prompt, 0, wb::SamplingOptions{}, 0, true) == prompt);
    }
}

TEST_CASE("generate: the same seed gives the same tokens, other seeds differ",
          "[generate][c:generate.seeded-draws]") {
    const wb::GptConfig c = wbtest::small_config();
    const wb::GptParams<float> p = wbtest::small_model(c, 22);
    const wb::SamplingOptions o = opts(2.0f, 0, 1.0f);
    const std::vector<std::int64_t> a = wb::generate(p, c, {5}, 7, o, 1);
    const std::vector<std::int64_t> b = wb::generate(p, c, {5}, 7, o, 1);
    INFO("seed 1 gave " << ids_str(a) << " then " << ids_str(b)
                        << ": a seed must fix the output "
                           "(one std::mt19937_64(seed), used only by sample)");
    CHECK(a == b);
    REQUIRE(a.size() == 8);
    CHECK(a[0] == 5);
    int differ = 0;
    for (std::uint64_t seed = 2; seed <= 6; ++seed)
        differ += wb::generate(p, c, {5}, 7, o, seed) != a;
    INFO(differ << " of seeds 2..6 gave another sequence than seed 1's " << ids_str(a)
                << ": at τ = 2 most seeds must differ. Hint: did you pick greedily?");
    CHECK(differ >= 3);
}

TEST_CASE("sampling functions reject bad temperatures, top_p and empty logits",
          "[sampling_distribution][errors][c:sampling_distribution.bad-temperature]"
          "[c:sampling_distribution.bad-top-p][c:sampling_distribution.empty]"
          "[c:greedy.empty][c:sample.empty][c:sample.bad-input]") {
    const wb::Vec<float> z = logits_1234();
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(0.0f, 0, 1.0f)),
                    "τ must be > 0 (τ → 0 is greedy)", "wb::sampling_distribution", "temperature",
                    "0");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(-1.0f, 0, 1.0f)),
                    "τ must be > 0", "wb::sampling_distribution", "temperature", "-1");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(1.0f, 0, 0.0f)),
                    "top_p must be in (0, 1]", "wb::sampling_distribution", "top_p", "0");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(1.0f, 0, 1.5f)),
                    "top_p must be in (0, 1]", "wb::sampling_distribution", "top_p", "1.5");
    const wb::Vec<float> empty = wb::Vec<float>::from_shape({0});
    WB_CHECK_THROWS(wb::ShapeError, wb::sampling_distribution(empty, opts(1.0f, 0, 1.0f)),
                    "no tokens to choose from", "wb::sampling_distribution");
    WB_CHECK_THROWS(wb::ShapeError, wb::greedy(empty), "no tokens to choose from", "wb::greedy");
    std::mt19937_64 rng(1);
    WB_CHECK_THROWS(wb::ShapeError, wb::sample(empty, opts(1.0f, 0, 1.0f), rng),
                    "no tokens to choose from", "wb::sample");
    WB_CHECK_THROWS(wb::ValueError, wb::sample(z, opts(0.0f, 0, 1.0f), rng), "τ must be > 0",
                    "wb::sample", "temperature");
}

TEST_CASE("sampling functions reject a NaN or infinite temperature and a NaN top_p",
          "[sampling_distribution][errors][c:sampling_distribution.bad-temperature]"
          "[c:sampling_distribution.bad-top-p][c:sample.bad-input]") {
    // A NaN fails every comparison: `temperature <= 0` is false for NaN, so test
    // !(temperature > 0) and std::isfinite; likewise !(top_p > 0 && top_p <= 1).
    const wb::Vec<float> z = logits_1234();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(nan, 0, 1.0f)),
                    "a NaN temperature makes every probability NaN: test !(τ > 0), true for NaN",
                    "wb::sampling_distribution", "temperature");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(inf, 0, 1.0f)),
                    "τ = inf divides every logit to 0 or NaN: require a finite τ",
                    "wb::sampling_distribution", "temperature");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(z, opts(1.0f, 0, nan)),
                    "a NaN top_p is not in (0, 1]: test !(top_p > 0 && top_p <= 1)",
                    "wb::sampling_distribution", "top_p");
    std::mt19937_64 rng(1);
    WB_CHECK_THROWS(wb::ValueError, wb::sample(z, opts(1.0f, 0, nan), rng),
                    "sample checks the options as sampling_distribution does", "wb::sample",
                    "top_p");
}

TEST_CASE("sampling functions reject a NaN or +inf logit and all -inf logits, allow a masked one",
          "[sampling_distribution][errors][c:sampling_distribution.bad-logit]"
          "[c:sampling_distribution.all-masked][c:greedy.bad-logit][c:sample.bad-input]"
          "[c:sampling_distribution.temperature]") {
    // A NaN logit makes every softmax probability NaN; +inf makes the shift inf - inf = NaN.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const wb::Vec<float> with_nan{1.0f, nan, 2.0f};
    const wb::Vec<float> with_inf{1.0f, inf, 2.0f};
    const wb::Vec<float> all_masked{-inf, -inf};
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(with_nan, opts(1.0f, 0, 1.0f)),
                    "check every logit before the softmax: NaN fails every comparison",
                    "wb::sampling_distribution", "1");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(with_inf, opts(1.0f, 0, 1.0f)),
                    "+inf - max = inf - inf = NaN: reject +inf logits", "wb::sampling_distribution",
                    "1");
    WB_CHECK_THROWS(wb::ValueError, wb::sampling_distribution(all_masked, opts(1.0f, 0, 1.0f)),
                    "every token masked leaves nothing to sample (0 / 0)",
                    "wb::sampling_distribution");
    WB_CHECK_THROWS(wb::ValueError, wb::greedy(with_nan), "greedy must not skip a NaN silently",
                    "wb::greedy", "1");
    std::mt19937_64 rng(1);
    WB_CHECK_THROWS(wb::ValueError, wb::sample(with_inf, opts(1.0f, 0, 1.0f), rng),
                    "sample checks the logits as sampling_distribution does", "wb::sample", "1");
    // A -inf logit is a masked token: probability exactly 0, the others softmaxed
    // (softmax([1, 2]) = [0.26894142, 0.73105858] by hand: 1 / (1 + e)).
    const wb::Vec<float> masked{1.0f, -inf, 2.0f};
    WB_CHECK_CLOSE(as_vec(wb::sampling_distribution(masked, opts(1.0f, 0, 1.0f))),
                   (wb::Vec<float>{0.268941421f, 0.0f, 0.731058579f}), kTol,
                   "a -inf logit is allowed and gets probability 0");
}

TEST_CASE("generate rejects a too long request, an empty prompt and bad ids before generating",
          "[generate][errors][c:generate.too-long][c:generate.empty-prompt]"
          "[c:generate.bad-id][c:generate.bad-options]") {
    const wb::GptConfig c = wbtest::small_config();  // T_max = 8
    const wb::GptParams<float> p = wbtest::small_model(c, 23);
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, 2, 3}, 6, wb::SamplingOptions{}, 0),
                    "3 + 6 = 9 tokens do not fit in T_max = 8: refuse before generating",
                    "wb::generate", "3", "6", "8");
    WB_CHECK_THROWS(wb::ShapeError, wb::generate(p, c, {}, 2, wb::SamplingOptions{}, 0),
                    "prefill needs at least one token", "wb::generate");
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, 11}, 2, wb::SamplingOptions{}, 0),
                    "ids must be in [0, V)", "wb::generate", "11");
    {
        INFO(
            "hint: a negative id is outside [0, V) too: generate tests id < 0 itself, before "
            "prefill reports it under its own name");
        WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1, -1}, 2, wb::SamplingOptions{}, 0),
                        "ids must be in [0, V): -1 is below it", "wb::generate", "-1");
    }
    WB_CHECK_THROWS(wb::ValueError, wb::generate(p, c, {1}, 2, opts(1.0f, 0, 2.0f), 0),
                    "options are checked up front", "wb::generate", "top_p");
    // Exactly T_max tokens is allowed.
    const std::vector<std::int64_t> full =
        wb::generate(p, c, {1, 2, 3}, 5, wb::SamplingOptions{}, 0);
    INFO("3 + 5 = T_max tokens must be allowed; got " << full.size() << " tokens");
    CHECK(full.size() == 8);
}
