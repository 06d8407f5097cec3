#include "8-training/checkpoint.hpp"
#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "check.hpp"
#include "gpt_fixtures.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

// Values that would make every parameter NaN, sizes whose product overflows, and a cache
// that does not match its batch: each refused before any work, with the function named.

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("layer_norm_backward takes chapter 7's rule for eps: > 0 and finite",
          "[layer_norm_backward][layer_norm][errors][c:layer_norm_backward.bad-eps]") {
    const wb::Mat<float> x = wbtest::randn<wb::Mat<float>>({2, 4}, 3);
    const wb::Vec<float> g = xt::ones<float>({4});
    wb::Mat<float> dx;
    wb::Vec<float> dg = xt::zeros<float>({4}), db = xt::zeros<float>({4});
    for (float eps : {0.0f, -1e-5f, kNaN, kInf}) {
        INFO("eps = " << eps);
        WB_CHECK_THROWS(wb::ValueError, wb::layer_norm_backward(x, x, g, eps, dx, dg, db),
                        "chapter 7's layer_norm refuses this eps; so must its backward",
                        "wb::layer_norm_backward", "eps");
    }
}

TEST_CASE("adamw_step refuses infinite hyper-parameters and a step count that would overflow",
          "[adamw_step][adamw][errors][c:adamw_step.bad-config][c:adamw_step.bad-step]"
          "[c:adamw_step.checked-first]") {
    const wb::GptConfig c{5, 4, 8, 2, 1};
    wb::GptParams<float> p = wb::init_gpt<float>(c, 1);
    const wb::GptParams<float> before = p;
    const wb::GptParams<float> g = wb::init_gpt<float>(c, 2);
    wb::AdamWState<float> s;
    wb::AdamWConfig lr_inf;
    lr_inf.lr = kInf;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, lr_inf),
                    "lr = inf turns every parameter into NaN", "wb::adamw_step", "lr = inf");
    wb::AdamWConfig wd_inf;
    wd_inf.weight_decay = kInf;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, wd_inf),
                    "weight_decay = inf turns every parameter into NaN", "wb::adamw_step",
                    "weight_decay = inf");
    wb::AdamWConfig eps_inf;
    eps_inf.eps = kInf;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, eps_inf), "eps = inf", "wb::adamw_step",
                    "eps = inf");
    s.step = std::numeric_limits<std::int64_t>::max();
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, wb::AdamWConfig{}),
                    "step + 1 overflows an int64: refuse it before the update", "wb::adamw_step",
                    "state.step = 9223372036854775807");
    s.step = -3;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, wb::AdamWConfig{}),
                    "a negative step count", "wb::adamw_step", "state.step = -3");
    CHECK(s.m.empty());  // refused before any work
    const bool unchanged = p.wte == before.wte;
    CHECK(unchanged);
}

TEST_CASE("init_gpt refuses a config whose tensors overflow",
          "[init_gpt][errors][c:init_gpt.too-large]") {
    const std::size_t big = std::size_t(1) << 32;
    WB_CHECK_THROWS(wb::ShapeError, wb::init_gpt<float>(wb::GptConfig{big, 4, big, 1, 1}, 1),
                    "V x D = 2^64 wraps around size_t", "wb::init_gpt", "2^48");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::init_gpt<float>(wb::GptConfig{5, 4, std::size_t(1) << 31, 1, 1}, 1),
                    "4 D x D wraps around", "wb::init_gpt", "2^48");
}

TEST_CASE("gpt_backward checks the cache's shapes before reading it",
          "[gpt_backward][errors][c:gpt_backward.cache-shapes]") {
    const wb::GptConfig c{7, 4, 8, 2, 1};
    auto [p, cache, grads] = wbtest::backward_inputs(c);
    wb::GptCache<float> wrong_batch = cache;
    wrong_batch.batch = 3;  // the tensors hold B = 2
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, wrong_batch, grads),
                    "a cache of B = 2 with batch = 3 would be read out of bounds",
                    "wb::gpt_backward", "cache");
    wb::GptCache<float> wrong_len = cache;
    wrong_len.seq_len = 4;
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, wrong_len, grads),
                    "a cache of T = 3 with seq_len = 4", "wb::gpt_backward", "cache");
    wb::GptCache<float> cut = cache;
    cut.blocks[0].att = xt::zeros<float>({2, 2, 3, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, cut, grads),
                    "a block's attention weights of the wrong size", "wb::gpt_backward",
                    "att [B, H, T, T]");
    wb::GptCache<float> huge = cache;
    huge.batch = std::size_t(1) << 40;
    huge.seq_len = std::size_t(1) << 40;
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, huge, grads), "B x T overflows",
                    "wb::gpt_backward");
    REQUIRE(wbtest::all_zero(grads));      // nothing written
    wb::gpt_backward(p, c, cache, grads);  // the cache as written still works
}

TEST_CASE("load_checkpoint refuses devices, FIFOs and directories before reading them",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.regular-file-only]"
          "[c:load_checkpoint.cannot-open]") {
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint("/dev/zero"),
                    "/dev/zero never ends: refuse a file that is not a regular one",
                    "wb::load_checkpoint", "/dev/zero", "cannot open");
    const std::string dir = std::filesystem::temp_directory_path().string() + "/wb_ckpt_reliab_" +
                            std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string fifo = dir + "/fifo.ckpt";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(fifo),
                    "a FIFO without a writer would block forever", "wb::load_checkpoint", fifo,
                    "cannot open");
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(dir), "a directory is not a checkpoint",
                    "wb::load_checkpoint", dir, "cannot open");
    std::filesystem::remove_all(dir);
}
