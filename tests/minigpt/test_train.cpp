#include "check.hpp"
#include "minigpt/progress.hpp"
#include "minigpt/train.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "8-training/model.hpp"

// Checks of the training loop's pieces that need no model: the learning-rate schedule, the
// gradient clipping, the option checks, the loss log and the progress display.
//
// Learning rates were computed by Python 3's math module from the formula in train.hpp
// (warm-up lr·(s+1)/warmup, then min + (lr − min)·(1 + cos(π·p))/2). Norms are Pythagorean
// triples (3, 4, 5), so the clipped values are 3/(5 + 1e-6) and 4/(5 + 1e-6).

namespace {

using wb::ValueError;
using wb::minigpt::StepLog;
using wb::minigpt::TrainOptions;

TrainOptions schedule(std::size_t steps, std::size_t warmup, float lr, float min_lr) {
    TrainOptions o;
    o.steps = steps;
    o.warmup = warmup;
    o.lr = lr;
    o.min_lr = min_lr;
    return o;
}

// A tiny GPT-shaped set of zeros: V = 2, T_max = 1, D = 1, H = 1, L = 1.
wb::GptParams<float> tiny_zeros() {
    wb::GptParams<float> g;
    g.wte = wb::Mat<float>({2, 1}, 0.0f);
    g.wpe = wb::Mat<float>({1, 1}, 0.0f);
    wb::GptBlock<float> b;
    for (auto* v :
         {&b.ln1_g, &b.ln1_b, &b.b_q, &b.b_k, &b.b_v, &b.b_o, &b.ln2_g, &b.ln2_b, &b.b_proj}) {
        *v = wb::Vec<float>({1}, 0.0f);
    }
    b.b_fc = wb::Vec<float>({4}, 0.0f);
    for (auto* m : {&b.w_q, &b.w_k, &b.w_v, &b.w_o}) *m = wb::Mat<float>({1, 1}, 0.0f);
    b.w_fc = wb::Mat<float>({4, 1}, 0.0f);
    b.w_proj = wb::Mat<float>({1, 4}, 0.0f);
    g.blocks.push_back(b);
    g.ln_f_g = wb::Vec<float>({1}, 0.0f);
    g.ln_f_b = wb::Vec<float>({1}, 0.0f);
    g.lm_head = wb::Mat<float>({2, 1}, 0.0f);
    return g;
}

}  // namespace

TEST_CASE("learning_rate warms up linearly, then follows a cosine down to min_lr", "[minigpt]") {
    const TrainOptions o = schedule(110, 10, 1e-3f, 1e-4f);
    // Python 3: warm-up steps 0, 4, 9 → 1e-4, 5e-4, 1e-3; then p = (s − 10) / 100:
    // s = 10 → 1e-3, s = 35 → 0.0008681980515339464, s = 60 → 0.00055,
    // s = 109 → 0.00010022204783542078.
    CHECK(wb::minigpt::learning_rate(0, o) == Approx(1e-4).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(4, o) == Approx(5e-4).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(9, o) == Approx(1e-3).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(10, o) == Approx(1e-3).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(35, o) == Approx(0.0008681980515339464).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(60, o) == Approx(0.00055).epsilon(1e-6));
    CHECK(wb::minigpt::learning_rate(109, o) == Approx(0.00010022204783542078).epsilon(1e-6));
    // Without warm-up the first step already uses the peak rate.
    const TrainOptions flat = schedule(5, 0, 2e-3f, 0.0f);
    CHECK(wb::minigpt::learning_rate(0, flat) == Approx(2e-3).epsilon(1e-6));
    // p = 2/5: 1e-3 · (1 + cos(0.4π)) = 0.0013090169943749475 (Python 3).
    CHECK(wb::minigpt::learning_rate(2, flat) == Approx(0.0013090169943749475).epsilon(1e-6));
}

TEST_CASE("validate names the option that is out of range", "[minigpt]") {
    TrainOptions o;
    CHECK_NOTHROW(wb::minigpt::validate(o));
    auto bad = [](auto change) {
        TrainOptions x;
        change(x);
        return x;
    };
    const char* hint = "each option is checked before training starts";
    WB_CHECK_THROWS(ValueError, wb::minigpt::validate(bad([](TrainOptions& x) { x.steps = 0; })),
                    hint, "steps = 0", ">= 1");
    WB_CHECK_THROWS(ValueError, wb::minigpt::validate(bad([](TrainOptions& x) { x.lr = 0; })), hint,
                    "lr = 0");
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::validate(bad([](TrainOptions& x) { x.lr = std::nanf(""); })), hint,
                    "lr = nan");
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::validate(bad([](TrainOptions& x) { x.min_lr = 1.0f; })), hint,
                    "min_lr = 1");
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::validate(bad([](TrainOptions& x) { x.warmup = x.steps + 1; })),
                    hint, "warmup", "<= steps");
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::validate(bad([](TrainOptions& x) { x.grad_clip = -1; })), hint,
                    "grad_clip = -1");
    WB_CHECK_THROWS(ValueError,
                    wb::minigpt::validate(bad([](TrainOptions& x) { x.eval_batches = 0; })), hint,
                    "eval_batches = 0");
}

TEST_CASE("clip_grad_norm scales the whole gradient to the global norm", "[minigpt]") {
    wb::GptParams<float> g = tiny_zeros();
    g.wte(0, 0) = 3.0f;  // two tensors apart: the norm is global, sqrt(3² + 4²) = 5
    g.lm_head(1, 0) = 4.0f;
    CHECK(wb::minigpt::clip_grad_norm(g, 10.0f) == Approx(5.0));
    CHECK(g.wte(0, 0) == 3.0f);  // below the limit: untouched
    CHECK(g.lm_head(1, 0) == 4.0f);

    CHECK(wb::minigpt::clip_grad_norm(g, 1.0f) == Approx(5.0));
    // 3/(5 + 1e-6) and 4/(5 + 1e-6), as torch.nn.utils.clip_grad_norm_.
    CHECK(g.wte(0, 0) == Approx(0.599999880000024).epsilon(1e-6));
    CHECK(g.lm_head(1, 0) == Approx(0.799999840000032).epsilon(1e-6));
    CHECK(g.wte(1, 0) == 0.0f);

    g.blocks[0].b_fc(2) = std::numeric_limits<float>::quiet_NaN();
    WB_CHECK_THROWS(ValueError, wb::minigpt::clip_grad_norm(g, 1.0f),
                    "a NaN gradient must stop training", "wb::minigpt::clip_grad_norm", "nan",
                    "finite");
    WB_CHECK_THROWS(ValueError, wb::minigpt::clip_grad_norm(g, 0.0f), "max_norm > 0",
                    "max_norm = 0");
}

TEST_CASE("write_loss_csv writes one row per step, the held-out loss where evaluated",
          "[minigpt]") {
    StepLog a, b;
    a.step = 1;
    a.train_loss = 4.25f;
    a.eval_loss = 4.0f;
    a.lr = 0.0005f;
    a.tokens_per_s = 1000.0;
    b.step = 2;
    b.train_loss = 3.5f;
    b.lr = 0.001f;
    b.tokens_per_s = 1500.25;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("wb_minigpt_loss_" + std::to_string(::getpid()) + ".csv"))
                                 .string();
    wb::minigpt::write_loss_csv(path, {a, b});
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() ==
          "step,train_loss,held_out_loss,lr,tokens_per_s\n"
          "1,4.250000,4.000000,0.0005,1000.0\n"
          "2,3.500000,,0.001,1500.2\n");
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    std::filesystem::remove(path);
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::write_loss_csv("/nonexistent/dir/x.csv", {a}),
                    "an unwritable path is a FileError", "/nonexistent/dir/x.csv.tmp");
}

TEST_CASE("the progress line shows step, loss, tokens per second and time left", "[minigpt]") {
    CHECK(wb::minigpt::format_duration(0) == "0:00");
    CHECK(wb::minigpt::format_duration(65.4) == "1:05");
    CHECK(wb::minigpt::format_duration(3725) == "1:02:05");
    StepLog e;
    e.step = 6;
    e.total_steps = 24;
    e.train_loss = 2.5f;
    e.tokens_per_s = 1234.4;
    e.elapsed_s = 3.0;  // 0.5 s per step, 18 steps to go: 9 s left
    CHECK(wb::minigpt::progress_line(e, 0) ==
          "[######..................] step 6/24  loss 2.500  1234 tok/s  left 0:09");
    // A time limit 5 s into the run leaves 2 s, less than the steps would take.
    CHECK(wb::minigpt::progress_line(e, 5.0) ==
          "[######..................] step 6/24  loss 2.500  1234 tok/s  left 0:02");

    // Without a terminal: the held-out lines and every plain_every-th step, nothing else.
    std::ostringstream out;
    wb::minigpt::ProgressPrinter p(out, false, 0, 2);
    StepLog s1 = e;
    s1.step = 1;
    s1.eval_loss = 4.0f;
    s1.lr = 0.001f;
    StepLog s3 = e;
    s3.step = 3;
    p(s1);
    p(s3);
    p(e);
    p.finish();
    CHECK(out.str() ==
          "step 1/24: held-out loss 4.0000 (train 2.5000, lr 0.001)\n"
          "[######..................] step 6/24  loss 2.500  1234 tok/s  left 0:09\n");
}
