#include "check.hpp"
#include "minigpt/fast/gpt_train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "8-training/model.hpp"
#include "random_model.hpp"

// Checks of the fast training step, wb::minigpt::GptTrainer, with learned positions and RoPE.
//
// Expected values come from chapter 8's readable model, wb::gpt_forward / wb::gpt_backward:
// the same network written with xtensor and the full T × T attention weights, sharing no code
// with the trainer (which uses raw buffers, cblas_sgemm and the capstone's attention kernel).
// Both run in float, so they agree up to rounding: every gradient comparison allows
//   |trainer − reference| <= 2e-5 · max|reference over the tensor| + 2e-5 · |reference|,
// i.e. a relative error of 2e-5 measured against each tensor's scale, and the loss a relative
// 1e-4. The largest error seen is 2e-6 of the scale (a 10-fold margin); the tanh form of GELU
// instead of the exact erf form is already off by more than 1e-4.

namespace {

using wb::GptConfig;
using wb::GptParams;
using wb::minigpt::GptTrainer;

using wbtest::random_ids;
using wbtest::random_model;

// Gradients that do not start at zero: both sides must ADD into them.
GptParams<float> start_grads(const GptParams<float>& params, unsigned seed) {
    GptParams<float> g = wb::zeros_like(params);
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    for (auto& r : wb::parameters(g)) {
        for (std::size_t i = 0; i < r.size; ++i) r.data[i] = normal(gen);
    }
    return g;
}

// Every gradient tensor of `got` against `want`, at 2e-5 of the tensor's scale.
void check_grads(const GptParams<float>& got, const GptParams<float>& want,
                 const std::string& where) {
    const auto a = wb::parameters(got);
    const auto e = wb::parameters(want);
    REQUIRE(a.size() == e.size());
    for (std::size_t t = 0; t < a.size(); ++t) {
        wbtest::Flat fa{a[t].shape, {}}, fe{e[t].shape, {}};
        double scale = 0.0;
        for (std::size_t i = 0; i < a[t].size; ++i) {
            fa.values.push_back(a[t].data[i]);
            fe.values.push_back(e[t].data[i]);
            scale = std::max(scale, std::fabs(static_cast<double>(e[t].data[i])));
        }
        WB_REPORT(wbtest::compare(
            fa, fe, 2e-5 * scale, 2e-5,
            where + ": gradient of " + a[t].name + " differs from wb::gpt_backward's"));
    }
}

// One forward + backward of the trainer and of chapter 8 on the same batch, compared.
void compare_step(GptTrainer& trainer, const GptParams<float>& params, const wb::TokenIds& in,
                  const wb::TokenIds& tg, unsigned seed, const std::string& where) {
    const GptConfig& c = trainer.config();
    wb::GptCache<float> cache;
    const float want = wb::gpt_forward(params, c, in, tg, -1, cache);
    GptParams<float> want_grads = start_grads(params, seed);
    wb::gpt_backward(params, c, cache, want_grads);

    const float got = trainer.forward(params, in, tg);
    GptParams<float> got_grads = start_grads(params, seed);
    trainer.backward(params, got_grads);

    INFO(where << ": loss " << got << ", chapter 8's gpt_forward gives " << want);
    CHECK(std::fabs(got - want) <= 1e-4f * std::fabs(want) + 1e-6f);
    check_grads(got_grads, want_grads, where);
}

}  // namespace

TEST_CASE("GptTrainer's loss and gradients equal chapter 8's gpt_forward and gpt_backward",
          "[gpt_train]") {
    struct Case {
        GptConfig config;
        std::size_t B, T;
        bool ignored;
    };
    // T = T_max and T < T_max; B = 1; T = 1; d = 1 (H = D); H = 1; ignored targets; one
    // block; 4D = 20, not a multiple of the 8 lanes of the vector GELU (its scalar tail).
    const std::vector<Case> cases = {
        {{11, 8, 12, 3, 2}, 2, 8, false}, {{11, 8, 12, 3, 2}, 3, 5, true},
        {{7, 6, 8, 2, 1}, 1, 6, true},    {{9, 4, 8, 4, 3}, 4, 1, false},
        {{13, 16, 6, 6, 2}, 2, 16, true}, {{5, 32, 16, 2, 2}, 3, 32, true},
        {{7, 6, 5, 1, 2}, 2, 6, true}};
    unsigned seed = 1;
    for (const Case& k : cases) {
        const std::string where = "config " + wb::config_str(k.config) +
                                  ", batch [B, T] = " + wb::shape_str(wb::Shape{k.B, k.T});
        const GptParams<float> params = random_model(k.config, seed);
        GptTrainer trainer(k.config, k.B, k.T);
        // Two different batches through one trainer: the buffers are reused, not stale.
        for (int step = 0; step < 2; ++step, ++seed) {
            const wb::TokenIds in = random_ids(k.B, k.T, k.config.V, 10 * seed, false);
            const wb::TokenIds tg = random_ids(k.B, k.T, k.config.V, 10 * seed + 1, k.ignored);
            compare_step(trainer, params, in, tg, seed, where + ", step " + std::to_string(step));
        }
    }
}

TEST_CASE("GptTrainer with RoPE: its loss and gradients equal chapter 8's", "[gpt_train]") {
    // RoPE turns q and k inside every layer; the trainer turns them from its tables and turns
    // dq, dk back. Head widths 2 (one pair), 4, 6 and 8; T = T_max and T < T_max; T = 1 (the
    // angle 0: no turn at all); ignored targets. Longer sequences reach larger angles, where a
    // sign error in the backward's turn gives a clearly wrong gradient of w_q and w_k.
    struct Case {
        GptConfig config;
        std::size_t B, T;
        bool ignored;
    };
    const wb::Positions rope = wb::Positions::rope;
    const std::vector<Case> cases = {
        {{11, 8, 12, 3, 2, rope}, 2, 8, false},  {{11, 8, 12, 3, 2, rope}, 3, 5, true},
        {{7, 6, 8, 4, 1, rope}, 1, 6, true},     {{9, 4, 8, 1, 2, rope}, 4, 1, false},
        {{13, 40, 24, 4, 2, rope}, 2, 40, true}, {{5, 32, 16, 2, 2, rope}, 3, 32, true}};
    unsigned seed = 50;
    for (const Case& k : cases) {
        const std::string where = "config " + wb::config_str(k.config) +
                                  ", batch [B, T] = " + wb::shape_str(wb::Shape{k.B, k.T});
        const GptParams<float> params = random_model(k.config, seed);
        REQUIRE(params.wpe.shape(0) == 0);  // RoPE: no position table
        GptTrainer trainer(k.config, k.B, k.T);
        for (int step = 0; step < 2; ++step, ++seed) {
            const wb::TokenIds in = random_ids(k.B, k.T, k.config.V, 10 * seed, false);
            const wb::TokenIds tg = random_ids(k.B, k.T, k.config.V, 10 * seed + 1, k.ignored);
            compare_step(trainer, params, in, tg, seed, where + ", step " + std::to_string(step));
        }
    }
}

TEST_CASE(
    "GptTrainer with RoPE sees the order of the tokens, and learned positions are not "
    "used",
    "[gpt_train]") {
    // Without positions, attention is blind to order: the last token's loss would not change
    // when the earlier tokens are permuted. With RoPE it does. And a RoPE model refuses a
    // position table: its wpe must be [0, D].
    const GptConfig c{11, 6, 8, 2, 1, wb::Positions::rope};
    const GptParams<float> params = random_model(c, 4);
    GptTrainer trainer(c, 1, 6);
    wb::TokenIds in = wb::TokenIds::from_shape({1, 6});
    wb::TokenIds tg = wb::TokenIds::from_shape({1, 6});
    for (std::size_t t = 0; t < 6; ++t) {
        in(0, t) = static_cast<std::int64_t>(t + 1);
        tg(0, t) = t == 5 ? 3 : -1;  // only the last position is scored
    }
    const float before = trainer.forward(params, in, tg);
    std::swap(in(0, 0), in(0, 3));
    const float after = trainer.forward(params, in, tg);
    INFO("the last position's loss " << before << " with the tokens in order, " << after
                                     << " with two earlier tokens swapped");
    CHECK(std::fabs(before - after) > 1e-4f);

    GptParams<float> with_table = params;
    with_table.wpe = wb::Mat<float>::from_shape({6, 8});
    WB_CHECK_THROWS(wb::ShapeError, trainer.forward(with_table, in, tg),
                    "a RoPE model has no position table", "wb::minigpt::GptTrainer", "wpe",
                    "[6, 8]", "[0, 8]");
}

TEST_CASE("GptTrainer gives loss 0 and adds no gradient when every target is -1", "[gpt_train]") {
    const GptConfig c{11, 8, 12, 3, 2};
    const GptParams<float> params = random_model(c, 3);
    const wb::TokenIds in = random_ids(2, 8, c.V, 5, false);
    wb::TokenIds tg = wb::TokenIds::from_shape({2, 8});
    std::fill(tg.begin(), tg.end(), -1);
    GptTrainer trainer(c, 2, 8);
    const float loss = trainer.forward(params, in, tg);
    INFO("loss with every target ignored: " << loss << ", expected 0 (not 0/0)");
    CHECK(loss == 0.0f);
    const GptParams<float> before = start_grads(params, 4);
    GptParams<float> grads = before;
    trainer.backward(params, grads);
    check_grads(grads, before, "every target ignored");
}

TEST_CASE("GptTrainer gives the same bits on every run and for 1, 2 and 3 threads",
          "[gpt_train][determinism]") {
    // B·T = 192 rows: the matrix products are cut into several bands of rows across threads.
    const GptConfig c{13, 64, 16, 4, 2};
    const GptParams<float> params = random_model(c, 8);
    const wb::TokenIds in = random_ids(3, 64, c.V, 21, false);
    const wb::TokenIds tg = random_ids(3, 64, c.V, 22, true);
    const int before = omp_get_max_threads();
    std::vector<float> losses;
    std::vector<GptParams<float>> grads;
    std::vector<std::string> runs;
    for (int threads : {1, 1, 2, 2, 3}) {
        omp_set_num_threads(threads);
        GptTrainer trainer(c, 3, 64);  // a fresh trainer each run
        losses.push_back(trainer.forward(params, in, tg));
        grads.push_back(wb::zeros_like(params));
        trainer.backward(params, grads.back());
        runs.push_back(std::to_string(threads) + " thread(s), run " + std::to_string(runs.size()));
    }
    omp_set_num_threads(before);
    const auto first = wb::parameters(grads[0]);
    for (std::size_t r = 1; r < runs.size(); ++r) {
        INFO(runs[r] << " against " << runs[0] << ": a sum whose order depends on the threads");
        CHECK(losses[r] == losses[0]);
        const auto other = wb::parameters(grads[r]);
        for (std::size_t t = 0; t < first.size(); ++t) {
            INFO("gradient of " << first[t].name << " differs");
            CHECK(std::equal(first[t].data, first[t].data + first[t].size, other[t].data));
        }
    }
}

TEST_CASE("GptTrainer rejects bad shapes, bad ids and a backward without forward",
          "[gpt_train][errors]") {
    const GptConfig c{11, 8, 12, 3, 2};
    const GptParams<float> params = random_model(c, 2);
    GptTrainer trainer(c, 2, 8);
    GptParams<float> grads = wb::zeros_like(params);
    WB_CHECK_THROWS(wb::ValueError, trainer.backward(params, grads),
                    "backward needs the activations of a forward", "wb::minigpt::GptTrainer",
                    "forward");

    const wb::TokenIds in = random_ids(2, 8, c.V, 1, false);
    const wb::TokenIds tg = random_ids(2, 8, c.V, 2, false);
    const wb::TokenIds short_in = random_ids(2, 5, c.V, 3, false);
    WB_CHECK_THROWS(wb::ShapeError, trainer.forward(params, short_in, tg),
                    "the trainer's buffers are sized for [B, T] = [2, 8]",
                    "wb::minigpt::GptTrainer", "inputs", "[2, 5]", "[2, 8]");
    WB_CHECK_THROWS(wb::ShapeError, trainer.forward(params, in, short_in),
                    "targets must have the inputs' shape", "wb::minigpt::GptTrainer", "targets",
                    "[2, 5]", "[2, 8]");
    wb::TokenIds bad = in;
    bad(1, 3) = 11;
    WB_CHECK_THROWS(wb::ValueError, trainer.forward(params, bad, tg), "ids are in [0, V)",
                    "wb::minigpt::GptTrainer", "inputs[1, 3]", "11");
    bad = tg;
    bad(0, 2) = -2;
    WB_CHECK_THROWS(wb::ValueError, trainer.forward(params, in, bad), "targets are in [0, V) or -1",
                    "wb::minigpt::GptTrainer", "targets[0, 2]", "-2");
    WB_CHECK_THROWS(wb::ValueError, trainer.backward(params, grads),
                    "a forward that threw leaves nothing to differentiate",
                    "wb::minigpt::GptTrainer");
    GptParams<float> wrong = params;
    wrong.blocks[1].w_fc = wb::Mat<float>::from_shape({12, 12});
    WB_CHECK_THROWS(wb::ShapeError, trainer.forward(wrong, in, tg), "params must match the config",
                    "wb::minigpt::GptTrainer", "blocks.1.w_fc", "[12, 12]", "[48, 12]");
    trainer.forward(params, in, tg);
    GptParams<float> wrong_grads = wb::zeros_like(params);
    wrong_grads.lm_head = wb::Mat<float>::from_shape({12, 11});
    WB_CHECK_THROWS(wb::ShapeError, trainer.backward(params, wrong_grads),
                    "grads must be shaped like params", "wb::minigpt::GptTrainer", "lm_head",
                    "[12, 11]", "[11, 12]");

    WB_CHECK_THROWS(wb::ValueError, GptTrainer(c, 2, 9), "T must not exceed T_max",
                    "wb::minigpt::GptTrainer", "9", "T_max = 8");
    WB_CHECK_THROWS(wb::ShapeError, GptTrainer(c, 0, 8), "B and T are at least 1",
                    "wb::minigpt::GptTrainer", "[0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, GptTrainer(GptConfig{11, 8, 12, 5, 2}, 2, 8), "H must divide D",
                    "wb::minigpt::GptTrainer", "H = 5");
    WB_CHECK_THROWS(wb::ShapeError,
                    GptTrainer(GptConfig{11, 8, 12, 4, 2, wb::Positions::rope}, 2, 8),
                    "RoPE turns pairs: the head width must be even", "wb::minigpt::GptTrainer",
                    "d = D / H = 3");
}
