#include "8-training/checkpoint.hpp"
#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "forward_double.hpp"
#include "gpt_fixtures.hpp"
#include "gradcheck.hpp"

// Clauses of chapter 8's headers that no other check could fail on: arguments every other
// check holds at one value (eps, the RoPE base, ignore_index, the two step counters), the
// state an error must leave behind, and a cache used twice. Seeds are fixed and shown.

namespace {

using Md = wb::Mat<double>;
using Vd = wb::Vec<double>;
using Cd = wb::Heads<double>;
using wb::AdamWConfig;
using wb::AdamWState;
using wb::GptConfig;
using wb::GptParams;
using wb::TokenIds;
using Bytes = std::vector<unsigned char>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class A, class R>
double dot_all(const A& a, const R& r) {
    double s = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) {
        s += static_cast<double>(a.data()[k]) * static_cast<double>(r.data()[k]);
    }
    return s;
}

std::string temp_path(const std::string& tag) {
    std::random_device rd;
    return (std::filesystem::temp_directory_path() /
            ("wb_contract_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()) + ".bin"))
        .string();
}

Bytes read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::int64_t le_i64(const Bytes& b, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(b.at(at + i)) << (8 * i);
    return static_cast<std::int64_t>(v);
}

bool same_state(const AdamWState<float>& a, const AdamWState<float>& b) {
    if (a.step != b.step || a.m.size() != b.m.size() || a.v.size() != b.v.size()) return false;
    for (std::size_t i = 0; i < a.m.size(); ++i) {
        if (!(a.m[i] == b.m[i]) || !(a.v[i] == b.v[i])) return false;
    }
    return true;
}

}  // namespace

// ---- layer_norm_backward: the eps it is given ---------------------------------------------------

TEST_CASE("layer_norm_backward differentiates the LayerNorm of the eps it is given",
          "[layer_norm_backward][layer_norm][backward][gradcheck]"
          "[c:layer_norm_backward.eps-used][c:layer_norm_backward.gradients]"
          "[c:layer_norm_backward.dx-assigned]") {
    // Rows of small spread (x scaled by 0.3), so that eps = 0.5 weighs as much as the variance:
    // a backward that keeps 1e-5 (or the model's kGptLayerNormEps) is off by ~0.1 here.
    const double eps = GENERATE(0.5, 1e-2, 1e-5);
    const std::size_t N = GENERATE(std::size_t{1}, std::size_t{3});
    const std::size_t D = 5;
    const unsigned seed = 101;
    INFO("eps = " << eps << ", N = " << N << ", D = " << D << ", seed " << seed);
    Md x = wbtest::randn<Md>({N, D}, seed);
    x *= 0.3;
    x += 0.2;
    Vd gamma = wbtest::randn<Vd>({D}, seed + 1), beta = wbtest::randn<Vd>({D}, seed + 2);
    const Md r = wbtest::randn<Md>({N, D}, seed + 3);
    const auto loss = [&] { return dot_all(wbtest::layer_norm_forward(x, gamma, beta, eps), r); };
    Md dx = xt::ones<double>({N, D}) * kNaN;  // assigned: the NaNs must not survive
    Vd dgamma = xt::zeros<double>({D}), dbeta = xt::zeros<double>({D});
    wb::layer_norm_backward(r, x, gamma, eps, dx, dgamma, dbeta);
    const std::string hint =
        "the backward recomputes rstd = 1 / sqrt(var + eps) with the eps it is GIVEN (the "
        "forward's), not 1e-5: a LayerNorm of another eps is another function";
    WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx", hint);
    WB_CHECK_GRAD(wbtest::gradcheck(loss, gamma, dgamma), "dgamma", hint);
}

// ---- rope_backward: the base it is given, and angles in double ----------------------------------

TEST_CASE("rope_backward turns back by the base and offset it is given",
          "[rope_backward][rope][backward][gradcheck][c:rope_backward.base-used]"
          "[c:rope_backward.offset-used][c:rope_backward.gradient]") {
    // Every other check uses base 10000: a backward that hard-codes it passes them all.
    const double base = GENERATE(2.5, 500.0, 10000.0);
    const std::int64_t offset = GENERATE(std::int64_t{0}, std::int64_t{7});
    const unsigned seed = 111;
    INFO("base = " << base << ", offset = " << offset << ", B = 2, H = 1, T = 3, d = 6, seed "
                   << seed);
    Cd x = wbtest::randn<Cd>({2, 1, 3, 6}, seed);
    const Cd r = wbtest::randn<Cd>({2, 1, 3, 6}, seed + 1);
    const auto loss = [&] { return dot_all(wbtest::rope_forward(x, offset, base), r); };
    const Cd dx = wb::rope_backward(r, offset, base);
    WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx",
                  "θ_i = base^(−2i/d) with the base argument (not a constant 10000), the angle "
                  "(offset + t) θ_i, turned back by its transpose");
}

TEST_CASE("rope_backward in float computes its angles in double: right at position 10^6",
          "[rope_backward][rope][backward][c:rope_backward.angles-in-double]") {
    // The forward (chapter 3) turns by (offset + t) θ_i computed in double. In float the angle
    // 10^6 · θ_i is off by ~0.06 rad, so a float backward would not undo the forward. The
    // forward of forward_double.hpp applied to dx must give dy back.
    const std::int64_t offset = 1000000;
    const wb::Heads<float> dy = wbtest::randn<wb::Heads<float>>({1, 2, 2, 8}, 121);
    const wb::Heads<float> dx = wb::rope_backward(dy, offset, 10000.0f);
    const Cd dx_d = dx;
    const Cd back = wbtest::rope_forward(dx_d, offset, 10000.0);
    WB_CHECK_CLOSE(back, dy, 1e-5,
                   "turning dx forward again must give dy: compute p = offset + t, θ_i and "
                   "the angle p θ_i in double (as apply_rope does), then cast cos and sin");
}

// ---- gpt_forward / gpt_backward: ignore_index other than -1, and a cache used twice ---------

TEST_CASE("gpt_forward and gpt_backward leave out the targets equal to the ignore_index given",
          "[gpt_forward][gpt_backward][model][c:gpt_forward.ignore-index]"
          "[c:gpt_backward.gradients]") {
    // ignore_index = 2, a real id: the targets equal to 2 are padding. The loss and every
    // gradient must equal those of the same batch with those targets written as -1 and
    // ignore_index -1 (every other check uses -1 only).
    const GptConfig c{6, 4, 8, 2, 1};
    const GptParams<float> p = wbtest::random_params<float>(c, 131, 0.5);
    const TokenIds inputs = {{1, 4, 2, 5}, {0, 2, 3, 3}};
    const TokenIds padded = {{2, 1, 5, 2}, {4, 2, 0, 1}};
    const TokenIds minus1 = {{-1, 1, 5, -1}, {4, -1, 0, 1}};
    wb::GptCache<float> a, b;
    const float loss2 = wb::gpt_forward(p, c, inputs, padded, 2, a);
    const float loss1 = wb::gpt_forward(p, c, inputs, minus1, -1, b);
    INFO("loss with ignore_index 2: " << loss2 << ", with the same rows as -1: " << loss1);
    CHECK(loss2 == loss1);
    GptParams<float> g2 = wbtest::zero_params(p), g1 = wbtest::zero_params(p);
    wb::gpt_backward(p, c, a, g2);
    wb::gpt_backward(p, c, b, g1);
    wbtest::each_pair(g2, g1, [](const std::string& name, const auto& x, const auto& y) {
        INFO("gradient of " << name);
        WB_CHECK_CLOSE(x, y, 0.0,
                       "the backward must leave out the rows the FORWARD left out: use the "
                       "ignore_index kept in the cache, not -1");
    });
}

TEST_CASE("gpt_forward overwrites a cache that held another batch",
          "[gpt_forward][gpt_backward][model][c:gpt_forward.cache-overwritten]") {
    const GptConfig c{7, 5, 8, 2, 2};
    const GptParams<float> p = wbtest::random_params<float>(c, 141, 0.5);
    const TokenIds inputs = {{1, 4, 2}, {0, 6, 3}};
    const TokenIds targets = {{4, 2, 6}, {6, 3, -1}};
    wb::GptCache<float> fresh;
    const float want = wb::gpt_forward(p, c, inputs, targets, -1, fresh);
    GptParams<float> want_grads = wbtest::zero_params(p);
    wb::gpt_backward(p, c, fresh, want_grads);

    // The same cache first holds a batch of another shape, another ignore_index and more blocks.
    wb::GptCache<float> used;
    (void)wb::gpt_forward(p, c, TokenIds{{1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}, {0, 0, 0, 0, 0}},
                          TokenIds{{2, 3, 4, 5, 0}, {4, 3, 2, 1, 0}, {0, 1, 0, 1, 0}}, 0, used);
    used.blocks.resize(5);
    const float got = wb::gpt_forward(p, c, inputs, targets, -1, used);
    INFO("loss " << got << ", from a fresh cache " << want);
    CHECK(got == want);
    CHECK(used.blocks.size() == c.L);
    GptParams<float> grads = wbtest::zero_params(p);
    wb::gpt_backward(p, c, used, grads);
    INFO("a cache that held another batch must give the gradients of a fresh one");
    CHECK(wbtest::identical(grads, want_grads));
}

TEST_CASE("gpt_forward with every target ignored returns 0, and its backward adds nothing",
          "[gpt_forward][gpt_backward][model][c:gpt_forward.all-ignored]") {
    const GptConfig c{5, 4, 8, 2, 1};
    const GptParams<float> p = wbtest::random_params<float>(c, 151, 0.5);
    const TokenIds inputs = {{1, 3, 2}};
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(p, c, inputs, TokenIds{{-100, -100, -100}}, -100, cache);
    INFO("loss = " << loss << " with no valid target: 0, not NaN");
    CHECK(loss == 0.0f);
    GptParams<float> grads = wbtest::random_params<float>(c, 152);  // accumulated into
    const GptParams<float> before = grads;
    wb::gpt_backward(p, c, cache, grads);
    INFO("nothing is scored, so every gradient added is 0");
    CHECK(wbtest::identical(grads, before));
}

// ---- AdamW: refused steps change nothing; the bounds of the betas; a resumed counter -------

TEST_CASE("adamw_step refuses every bad hyper-parameter before changing params or state",
          "[adamw_step][optim][adamw][errors][c:adamw_step.checked-first]"
          "[c:adamw_step.bad-config][c:adamw_step.bad-step]") {
    const GptConfig c{5, 4, 4, 2, 1};
    const GptParams<float> g = wbtest::random_params<float>(c, 161);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<AdamWConfig> bad(9);
    bad[0].lr = 0;
    bad[1].lr = nan;
    bad[2].lr = -1e-3f;
    bad[3].beta1 = 1;
    bad[4].beta2 = nan;
    bad[5].eps = 0;
    bad[6].eps = inf;
    bad[7].weight_decay = -0.5f;
    bad[8].weight_decay = inf;
    for (const bool used : {false, true}) {
        GptParams<float> p = wbtest::random_params<float>(c, 162);
        AdamWState<float> state;
        if (used) wb::adamw_step(p, g, state, AdamWConfig{});  // step 1, m and v made
        const GptParams<float> p_before = p;
        const AdamWState<float> s_before = state;
        for (std::size_t i = 0; i < bad.size(); ++i) {
            INFO((used ? "after one good step" : "on a fresh state") << ", bad config #" << i);
            CHECK_THROWS_AS(wb::adamw_step(p, g, state, bad[i]), wb::ValueError);
            INFO(
                "a refused step changes nothing: check every field before creating m and v, "
                "counting the step or touching a parameter");
            CHECK(same_state(state, s_before));
            CHECK(wbtest::identical(p, p_before));
        }
        for (const std::int64_t step :
             {std::int64_t{-1}, std::numeric_limits<std::int64_t>::max()}) {
            AdamWState<float> s = state;
            s.step = step;
            const AdamWState<float> s_copy = s;
            INFO("state.step = " << step);
            CHECK_THROWS_AS(wb::adamw_step(p, g, s, AdamWConfig{}), wb::ValueError);
            CHECK(same_state(s, s_copy));
            CHECK(wbtest::identical(p, p_before));
        }
    }
}

TEST_CASE("adamw_step accepts beta = 0 and counts on from a restored step",
          "[adamw_step][optim][adamw][c:adamw_step.update][c:adamw_step.step-counted]"
          "[c:adamw_step.bad-config]") {
    // β1 = β2 = 0: m = g, v = g², no bias to correct: p ← p(1 − lr·wd) − lr·g/(|g| + eps).
    // p = [1, -2], g = [0.5, -0.25], lr 0.1, wd 0.5, eps 0.25 (large, so it is visible):
    //   p·0.95 = [0.95, -1.9]; 0.1·0.5/0.75 = 0.0666667; 0.1·(-0.25)/0.5 = -0.05
    //   → [0.883333333, -1.85] (by hand)
    GptParams<float> p = wbtest::zero_params(wbtest::random_params<float>({2, 1, 1, 1, 1}, 1));
    p.wte = {{1.0f}, {-2.0f}};
    GptParams<float> g = wbtest::zero_params(p);
    g.wte = {{0.5f}, {-0.25f}};
    AdamWState<float> state;
    wb::adamw_step(p, g, state, AdamWConfig{0.1f, 0.0f, 0.0f, 0.25f, 0.5f});
    WB_CHECK_CLOSE(p.wte, (wb::Mat<float>{{0.883333333f}, {-1.85f}}), 1e-6,
                   "betas are in [0, 1): 0 is allowed (m = g, v = g²); eps is added to "
                   "sqrt(v̂), outside the square root");

    // A state restored at step 41 (m = 0.5, v = 0.25 for every element) takes step t = 42.
    // Python: m = 0.9·0.5 + 0.1·1 = 0.55; v = 0.999·0.25 + 0.001·1 = 0.25075;
    // m̂ = 0.55/(1 − 0.9^42) = 0.556664676; v̂ = 0.25075/(1 − 0.999^42) = 6.09350552;
    // p = 1 − 0.01·0.556664676/(sqrt(6.09350552) + 1e-8) = 0.99774493
    GptParams<float> q = wbtest::zero_params(p);
    q.wte = {{1.0f}, {1.0f}};
    GptParams<float> ones = wbtest::zero_params(p);
    ones.wte = {{1.0f}, {1.0f}};
    AdamWState<float> resumed;
    resumed.step = 41;
    for (const auto& r : wb::parameters(q)) {
        resumed.m.push_back(xt::ones<float>({r.size}) * 0.5f);
        resumed.v.push_back(xt::ones<float>({r.size}) * 0.25f);
    }
    wb::adamw_step(q, ones, resumed, AdamWConfig{0.01f, 0.9f, 0.999f, 1e-8f, 0.0f});
    INFO("state.step goes from 41 to 42");
    CHECK(resumed.step == 42);
    WB_CHECK_CLOSE(q.wte, (wb::Mat<float>{{0.99774493f}, {0.99774493f}}), 1e-6,
                   "the bias correction uses t = state.step + 1 of the state it is given "
                   "(42 here), not a count of its own calls");
}

// ---- checkpoints: two step counters, a header that announces too much --------------------------

TEST_CASE("save_checkpoint keeps the training step and AdamW's step apart",
          "[save_checkpoint][load_checkpoint][checkpoint][c:save_checkpoint.optimizer-step]"
          "[c:save_checkpoint.training-step][c:load_checkpoint.roundtrip]") {
    // Every other check saves with the two equal. Here AdamW has taken 2 steps and the
    // training loop reports 1000000007 (e.g. batches seen, gradient accumulation).
    const GptConfig c{2, 1, 2, 1, 1};  // the format check's model: payload 1050 bytes
    GptParams<float> p = wbtest::random_params<float>(c, 171);
    const GptParams<float> g = wbtest::random_params<float>(c, 172);
    AdamWState<float> state;
    wb::adamw_step(p, g, state, AdamWConfig{});
    wb::adamw_step(p, g, state, AdamWConfig{});
    const std::int64_t progress = 1000000007;
    const std::string path = temp_path("steps");
    wb::save_checkpoint(path, c, p, &state, progress);
    const Bytes b = read_bytes(path);
    INFO(
        "the training step is the i64 at byte 60, AdamW's step the i64 right after the "
        "tensors, at byte 20 + 1050 = 1070 (checkpoint.hpp's table)");
    REQUIRE(b.size() == 1790);
    CHECK(le_i64(b, 60) == progress);
    CHECK(le_i64(b, 1070) == 2);
    const wb::Checkpoint ck = wb::load_checkpoint(path);
    std::filesystem::remove(path);
    CHECK(ck.step == progress);
    REQUIRE(ck.optimizer.has_value());
    INFO("AdamW's step comes back as saved: its bias correction continues at t = 3");
    CHECK(ck.optimizer->step == 2);
}

TEST_CASE("load_checkpoint compares the announced size with the file before reading on",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.bounded-reads]"
          "[c:load_checkpoint.truncated]") {
    // A 28-byte file whose header announces a payload of 2^62 bytes: it is truncated, and a
    // loader that allocates or reads what the header announces never gets to say so.
    Bytes b = {'W', 'B', 'G', 'P', 'T', 'C', 'K', 'P', 1, 0, 0, 0};
    const std::uint64_t huge = std::uint64_t(1) << 62;
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(huge >> (8 * i)));
    b.insert(b.end(), 8, 0);
    const std::string path = temp_path("huge");
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(path),
                    "compare 28 + P with the file's size from the filesystem before reading "
                    "the payload",
                    "wb::load_checkpoint", path, "truncated at byte 28");
    std::filesystem::remove(path);
}
