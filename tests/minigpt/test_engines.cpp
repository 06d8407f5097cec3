#include "check.hpp"
#include "minigpt/train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "8-training/model.hpp"
#include "random_model.hpp"

// Two engines, one model: the same run of wb::minigpt::train with Engine::chapters (chapter
// 8's gpt_forward / gpt_backward, the model made of chapters 1–7) and with Engine::fast
// (GptTrainer: cblas, the capstone's attention kernel, polynomial GELU) from the same initial
// weights, the same batches and the same AdamW, for learned positions and for RoPE.
//
// Tolerance: the loss of each step agrees within a relative 1e-4, the held-out losses too.
// Why: both engines compute the same function in float, in different orders (sgemm's blocked
// sums against xtensor's loops, the kernel's online softmax against the full T × T weights,
// erf and exp by polynomials within 4e-7 against std::erf), so one forward's loss differs by
// a few 1e-7 relative and each gradient by ~1e-6 of its scale (test_gpt_train.cpp). AdamW
// moves each weight by about lr · m / sqrt(v), which a relative change of 1e-6 in the
// gradient hardly alters. Measured here: at most 1.6e-7 (2 float ulps of the loss) over the 5
// steps, learned and RoPE; the tolerance leaves a factor of 600 for other compilers and BLAS
// kernels. It still catches the engines drifting apart: with RoPE's backward turning by the
// forward's angle instead of the opposite one in the fast engine only, the losses differ by
// 3e-3 relative by step 2. The random model (random_model.hpp, not init_gpt's small weights)
// makes attention matter from the first step; with init_gpt's, that mistake moved the loss by
// only 1e-5 in 5 steps.

namespace {

using wb::GptConfig;
using wb::GptParams;
using wb::minigpt::Engine;
using wb::minigpt::TrainResult;

// A token stream with structure to learn (each id mostly follows from the two before), so the
// loss falls from step to step and the updates are not noise.
std::vector<std::int64_t> token_stream(std::size_t n, std::size_t V, unsigned seed) {
    std::vector<std::int64_t> ids(n);
    std::uint64_t state = seed;
    for (std::size_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const bool noise = (state >> 60) == 0;  // 1 in 16
        ids[i] = i < 2 || noise ? static_cast<std::int64_t>((state >> 33) % V)
                                : (ids[i - 1] * 3 + ids[i - 2] + 1) % static_cast<std::int64_t>(V);
    }
    return ids;
}

TrainResult run(Engine engine, const GptConfig& c, const std::vector<std::int64_t>& train,
                const std::vector<std::int64_t>& held_out, GptParams<float>& params) {
    wb::minigpt::TrainOptions o;
    o.steps = 5;
    o.batch = 3;
    o.context = c.T_max;
    o.lr = 1e-2f;
    o.warmup = 1;
    o.eval_interval = 0;  // held-out losses after the first and the last step
    o.eval_batches = 2;
    o.seed = 7;
    o.engine = engine;
    return wb::minigpt::train(params, c, train, held_out, o);
}

}  // namespace

TEST_CASE("the two engines' losses agree for the first steps of the same run", "[engines]") {
    for (const wb::Positions positions : {wb::Positions::learned, wb::Positions::rope}) {
        const GptConfig c{19, 16, 16, 2, 2, positions};  // V, T_max, D, H (d = 8), L
        INFO("config " << wb::config_str(c));
        const auto train = token_stream(2000, c.V, 1);
        const auto held_out = token_stream(400, c.V, 2);
        const GptParams<float> init = wbtest::random_model(c, 3);
        GptParams<float> p_chapters = init, p_fast = init;
        const TrainResult chapters = run(Engine::chapters, c, train, held_out, p_chapters);
        const TrainResult fast = run(Engine::fast, c, train, held_out, p_fast);
        REQUIRE(chapters.log.size() == 5);
        REQUIRE(fast.log.size() == 5);
        for (std::size_t s = 0; s < 5; ++s) {
            const double a = chapters.log[s].train_loss, b = fast.log[s].train_loss;
            INFO("step " << s + 1 << ": loss " << a << " with the chapters, " << b
                         << " with the fast engine");
            CHECK(std::fabs(a - b) <= 1e-4 * std::fabs(a));
        }
        INFO("held-out loss after step 1: "
             << chapters.first_eval_loss << " and " << fast.first_eval_loss
             << "; after step 5: " << chapters.final_eval_loss << " and " << fast.final_eval_loss);
        CHECK(std::fabs(chapters.first_eval_loss - fast.first_eval_loss) <=
              1e-4 * chapters.first_eval_loss);
        CHECK(std::fabs(chapters.final_eval_loss - fast.final_eval_loss) <=
              1e-4 * chapters.final_eval_loss);
        // The run learns: the check compares updates, not five copies of the initial loss.
        CHECK(chapters.log[4].train_loss < chapters.log[0].train_loss - 0.02f);
    }
}

TEST_CASE("make_step_engine refuses the same bad shapes for both engines", "[engines]") {
    const GptConfig c{11, 8, 12, 3, 2};
    for (const Engine e : {Engine::chapters, Engine::fast}) {
        INFO("engine " << wb::minigpt::engine_name(e));
        WB_CHECK_THROWS(wb::ValueError, wb::minigpt::make_step_engine(e, c, 2, 9),
                        "T must not exceed T_max", "T = 9", "T_max = 8");
        WB_CHECK_THROWS(wb::ShapeError, wb::minigpt::make_step_engine(e, c, 0, 8),
                        "B and T are at least 1", "[0, 8]");
        WB_CHECK_THROWS(wb::ShapeError,
                        wb::minigpt::make_step_engine(e, GptConfig{11, 8, 12, 5, 2}, 2, 8),
                        "H must divide D", "H = 5");
    }
    CHECK(std::string(wb::minigpt::engine_name(Engine::chapters)) == "chapters");
    CHECK(std::string(wb::minigpt::engine_name(Engine::fast)) == "fast");
}
