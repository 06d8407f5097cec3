#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "check.hpp"
#include "golden.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <xtensor/xmanipulation.hpp>

#include "gpt_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using wb::AdamWConfig;
using wb::AdamWState;
using wb::GptConfig;
using wb::GptParams;
using wb::Mat;
using wb::TokenIds;
using wbtest::Golden;
using Bytes = std::vector<unsigned char>;

const char* const kAdamWHint =
    "AdamW per element, t = step: p -= lr·wd·p (decoupled: the decay never enters m or v); "
    "m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²; p -= lr · m̂ / (sqrt(v̂) + eps) with "
    "m̂ = m / (1 - β1ᵗ), v̂ = v / (1 - β2ᵗ). Adding wd·p to g is Adam + L2, not AdamW; "
    "skipping the bias correction makes the first steps ~3× too large";

// A model of V=2 T_max=1 D=1 H=1 L=1 that is 0 everywhere but wte = [p0, p1]: AdamW on a
// zero parameter with a zero gradient stays exactly 0, so wte alone carries the hand example.
GptParams<float> two_numbers(float a, float b) {
    GptParams<float> p = wbtest::zero_params(wbtest::random_params<float>({2, 1, 1, 1, 1}, 1));
    p.wte = {{a}, {b}};
    return p;
}

// A temporary file path, removed (with path.tmp) when the test ends.
struct TempPath {
    std::string path;
    explicit TempPath(const std::string& tag) {
        std::random_device rd;
        path = (fs::temp_directory_path() /
                ("wb_ckpt_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()) + ".bin"))
                   .string();
    }
    ~TempPath() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
        fs::remove_all(path + ".tmp", ignored);
    }
};

Bytes read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

std::uint64_t le64(const Bytes& b, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(b.at(at + i)) << (8 * i);
    return v;
}

// One training step of §21.7: zero_grad → forward → loss → backward → step.
float train_step(GptParams<float>& p, GptParams<float>& grads, AdamWState<float>& state,
                 const GptConfig& c, const wb::NextToken& batch, const AdamWConfig& opt) {
    wb::zero_grad(grads);
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(p, c, batch.inputs, batch.targets, -1, cache);
    wb::gpt_backward(p, c, cache, grads);
    wb::adamw_step(p, grads, state, opt);
    return loss;
}

// A small model trained for a few steps, with its optimizer state: what a checkpoint holds.
struct Trained {
    GptConfig config{13, 8, 8, 2, 2};
    GptParams<float> params;
    AdamWState<float> state;
    wb::NextToken batch;
    Trained() {
        params = wb::init_gpt<float>(config, 17);
        batch = wb::shift_for_next_token(TokenIds{{1, 5, 9, 2, 6, 5, 3}, {12, 0, 4, 4, 7, 11, 8}});
        GptParams<float> grads = wbtest::zero_params(params);
        for (int s = 0; s < 3; ++s) train_step(params, grads, state, config, batch, AdamWConfig{});
    }
};

template <class T>
bool bits_equal(const T& a, const T& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), a.size() * sizeof(*a.data())) == 0;
}

}  // namespace

// ---- AdamW -----------------------------------------------------------------------------------

TEST_CASE("AdamW matches three steps computed by hand",
          "[adamw_step][optim][adamw][c:adamw_step.update][c:adamw_step.step-counted]") {
    // lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1; p0 = [1, -2];
    // g1 = [0.5, -0.1], g2 = [-0.3, 0.2], g3 = [0.4, 0.0]. By hand with Python's math module:
    //   step 1: p = p·(1 - 0.01) - 0.1·m̂/(sqrt(v̂) + eps) = [0.89, -1.88]
    //           (m̂ = g, sqrt(v̂) = |g|: the first step moves by lr·sign(g))
    //   step 2: [0.8619501989217752, -1.8978103602884888]
    //   step 3: [0.804969259742621, -1.9071321632413705]
    //   m after 3 = [0.0535, 0.0099], v after 3 = [4.9941025e-4, 4.994001e-5]
    const AdamWConfig cfg{0.1f, 0.9f, 0.999f, 1e-8f, 0.1f};
    GptParams<float> p = two_numbers(1.0f, -2.0f);
    GptParams<float> g = wbtest::zero_params(p);
    AdamWState<float> state;
    const float grads[3][2] = {{0.5f, -0.1f}, {-0.3f, 0.2f}, {0.4f, 0.0f}};
    const Mat<float> expected[3] = {{{0.89f}, {-1.88f}},
                                    {{0.8619501989217752f}, {-1.8978103602884888f}},
                                    {{0.804969259742621f}, {-1.9071321632413705f}}};
    for (int s = 0; s < 3; ++s) {
        g.wte = {{grads[s][0]}, {grads[s][1]}};
        wb::adamw_step(p, g, state, cfg);
        INFO("after step " << s + 1);
        WB_CHECK_CLOSE(p.wte, expected[s], 1e-6, kAdamWHint);
        INFO("state.step counts the steps taken");
        CHECK(state.step == s + 1);
    }
    // The other tensors were 0 with gradient 0: decay of 0 is 0, and m = v = 0 moves nothing.
    WB_CHECK_CLOSE(p.lm_head, xt::zeros<float>({2, 1}), 0.0,
                   "a zero parameter with zero gradient must stay 0 (0 / (0 + eps) = 0)");
    REQUIRE(state.m.size() == 21);  // 2 + 16·1 + 3 tensors
    REQUIRE(state.v.size() == 21);
    WB_CHECK_CLOSE(state.m[0], (xt::xtensor<float, 1>{0.0535f, 0.0099f}), 1e-6,
                   "state.m[0] is wte's first moment, flat: m = β1 m + (1 - β1) g (m itself is "
                   "never bias-corrected in place: m̂ is only used for the update)");
    WB_CHECK_CLOSE(state.v[0], (xt::xtensor<float, 1>{4.9941025e-4f, 4.994001e-5f}), 1e-8,
                   "state.v[0] is wte's second moment, flat: v = β2 v + (1 - β2) g²");
}

TEST_CASE("AdamW matches torch.optim.AdamW over three steps on every tensor of a GPT",
          "[adamw_step][optim][adamw][golden][c:adamw_step.update]"
          "[c:adamw_step.decay-every-tensor]") {
    const Golden g("8-training/adamw_three_steps.txt");
    const GptConfig c = wbtest::golden_config(g);
    const auto hyper = g.tensor<1>("hyper");  // lr 0.05, betas (0.8, 0.95), eps 1e-6, wd 0.1
    const AdamWConfig cfg{hyper(0), hyper(1), hyper(2), hyper(3), hyper(4)};
    GptParams<float> p = wbtest::golden_params<float>(g, "param.", c.L);
    AdamWState<float> state;
    for (int s = 1; s <= 3; ++s) {
        const GptParams<float> grads =
            wbtest::golden_params<float>(g, "grad" + std::to_string(s) + ".", c.L);
        wb::adamw_step(p, grads, state, cfg);
        if (s == 2) continue;
        const GptParams<float> want =
            wbtest::golden_params<float>(g, "after" + std::to_string(s) + ".", c.L);
        wbtest::each_pair(p, want, [&](const std::string& name, const auto& got, const auto& w) {
            INFO("tensor " << name << " after step " << s);
            WB_CHECK_CLOSE(got, w, wbtest::golden_tolerance,
                           std::string(kAdamWHint) +
                               ". Every tensor of parameters() is updated "
                               "(decay included), not only the weights");
        });
    }
    // The moments after step 3, tensor by tensor in parameters() order, flat.
    const GptParams<float> m3 = wbtest::golden_params<float>(g, "m3.", c.L);
    const GptParams<float> v3 = wbtest::golden_params<float>(g, "v3.", c.L);
    std::vector<xt::xtensor<float, 1>> want_m, want_v;
    std::vector<std::string> names;
    wbtest::each_pair(m3, v3, [&](const std::string& name, const auto& m, const auto& v) {
        names.push_back(name);
        want_m.push_back(xt::xtensor<float, 1>(xt::flatten(m)));
        want_v.push_back(xt::xtensor<float, 1>(xt::flatten(v)));
    });
    REQUIRE(state.m.size() == names.size());
    REQUIRE(state.v.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        INFO("AdamW state of tensor " << i << " (" << names[i] << ") after 3 steps");
        WB_CHECK_CLOSE(state.m[i], want_m[i], wbtest::golden_tolerance,
                       "m = β1 m + (1 - β1) g (torch's exp_avg), stored flat per tensor in "
                       "parameters() order");
        WB_CHECK_CLOSE(state.v[i], want_v[i], wbtest::golden_tolerance,
                       "v = β2 v + (1 - β2) g² (torch's exp_avg_sq)");
    }
}

TEST_CASE("weight decay is decoupled: with a zero gradient the parameter shrinks by lr·wd·p",
          "[adamw_step][optim][adamw][decay][c:adamw_step.update]") {
    // p = [2, -0.5], g = 0, lr 0.1, wd 0.1. AdamW: p ← p·(1 - lr·wd) = [1.98, -0.495], and
    // m = v = 0 add nothing. Adam + L2 would add wd·p to g: g' = [0.2, -0.05], and its first
    // step moves by lr·sign(g') to [1.9, -0.4] (Python: 2 - 0.1·0.2/(0.2 + 1e-8)).
    const AdamWConfig cfg{0.1f, 0.9f, 0.999f, 1e-8f, 0.1f};
    GptParams<float> p = two_numbers(2.0f, -0.5f);
    const GptParams<float> zero = wbtest::zero_params(p);
    AdamWState<float> state;
    wb::adamw_step(p, zero, state, cfg);
    WB_CHECK_CLOSE(p.wte, (Mat<float>{{1.98f}, {-0.495f}}), 1e-6,
                   "decoupled decay shrinks p itself: p -= lr·wd·p = [0.02, -0.005]. [1.9, -0.4] "
                   "is Adam + L2 (wd·p added to the gradient); no change means no decay");
    WB_CHECK_CLOSE(state.m[0], (xt::xtensor<float, 1>{0.0f, 0.0f}), 0.0,
                   "the decay must not enter the moments: with g = 0, m stays 0 (Adam + L2 "
                   "puts wd·p into m)");
    wb::adamw_step(p, zero, state, cfg);
    WB_CHECK_CLOSE(p.wte, (Mat<float>{{1.9602f}, {-0.49005f}}), 1e-6,
                   "two decay steps multiply p by (1 - lr·wd)² = 0.9801");
}

TEST_CASE("bias correction: the first AdamW step moves every parameter by lr·sign(g)",
          "[adamw_step][optim][adamw][bias-correction][c:adamw_step.update]") {
    // At t = 1: m̂ = g and v̂ = g², so the update is lr·g/(|g| + eps) ≈ lr·sign(g) whatever |g|.
    // Without the correction it would be lr·0.1g/(sqrt(0.001)|g|) ≈ 3.16·lr·sign(g).
    const GptConfig c{7, 4, 8, 2, 1};
    const GptParams<float> start = wbtest::random_params<float>(c, 51);
    GptParams<float> grads = wbtest::random_params<float>(c, 52);
    wbtest::each_tensor(grads, [](const std::string&, auto& t) {
        for (auto& v : t) v = v >= 0 ? 0.05f + v : v - 0.05f;  // |g| >= 0.05: eps is negligible
    });
    GptParams<float> p = start;
    AdamWState<float> state;
    const float lr = 0.01f;
    wb::adamw_step(p, grads, state, AdamWConfig{lr, 0.9f, 0.999f, 1e-8f, 0.0f});
    std::size_t i = 0;
    std::vector<const float*> gdata;
    wbtest::each_tensor(grads,
                        [&](const std::string&, const auto& t) { gdata.push_back(t.data()); });
    wbtest::each_pair(
        p, start, [&](const std::string& name, const auto& after, const auto& before) {
            const float* g = gdata[i++];
            auto expected = xt::eval(before);
            for (std::size_t k = 0; k < expected.size(); ++k)
                expected.data()[k] -= g[k] > 0 ? lr : -lr;  // p - lr·sign(g)
            INFO("tensor " << name);
            WB_CHECK_CLOSE(after, expected, 2e-6,
                           "the first step must move each element by lr·sign(g): m̂ = m/(1 - β1), "
                           "v̂ = v/(1 - β2) at t = 1. A step of ~3.16·lr means no bias correction; "
                           "a step in the direction of g means the sign of the update is wrong");
        });
}

TEST_CASE("AdamW creates its state on the first step and rejects bad hyper-parameters",
          "[adamw_step][optim][adamw][errors][c:adamw_step.state-created]"
          "[c:adamw_step.bad-config][c:adamw_step.shape-mismatch]") {
    const GptConfig c{5, 4, 4, 2, 2};
    GptParams<float> p = wb::init_gpt<float>(c, 3);
    const GptParams<float> g = wbtest::random_params<float>(c, 4);
    AdamWState<float> state;
    wb::adamw_step(p, g, state, AdamWConfig{});
    INFO(
        "after one step: state.step == 1 and one m and one v per tensor (37), flat, of the "
        "tensor's size");
    CHECK(state.step == 1);
    REQUIRE(state.m.size() == 37);
    REQUIRE(state.v.size() == 37);
    CHECK(state.m[0].size() == 20);   // wte [5, 4]
    CHECK(state.v[36].size() == 20);  // lm_head [5, 4]
    CHECK(state.m[14].size() == 64);  // blocks.0.w_fc [4D, D] = [16, 4]

    AdamWConfig bad_lr, bad_beta1, bad_beta2, bad_eps, bad_decay;
    bad_lr.lr = 0;
    bad_beta1.beta1 = 1;
    bad_beta2.beta2 = -0.5f;
    bad_eps.eps = 0;
    bad_decay.weight_decay = -1;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, bad_lr),
                    "the learning rate must be > 0", "wb::adamw_step", "lr = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, bad_beta1),
                    "beta1 = 1 never forgets, and m̂ divides by 1 - 1ᵗ = 0", "wb::adamw_step",
                    "beta1 = 1");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, bad_beta2), "betas are in [0, 1)",
                    "wb::adamw_step", "beta2 = -0.5");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, bad_eps),
                    "eps keeps the division finite where v = 0", "wb::adamw_step", "eps = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, bad_decay),
                    "a negative decay grows the weights", "wb::adamw_step", "weight_decay = -1");

    GptParams<float> wrong = g;
    wrong.blocks[1].b_q = xt::zeros<float>({5});
    WB_CHECK_THROWS(wb::ShapeError, wb::adamw_step(p, wrong, state, AdamWConfig{}),
                    "each gradient has its parameter's shape", "wb::adamw_step", "blocks.1.b_q");
    const GptConfig small{5, 4, 4, 2, 1};
    GptParams<float> other = wb::init_gpt<float>(small, 3);
    WB_CHECK_THROWS(
        wb::ShapeError, wb::adamw_step(other, wbtest::zero_params(other), state, AdamWConfig{}),
        "a state restored for another model must be refused", "wb::adamw_step", "state");
}

TEST_CASE("AdamW refuses a state that does not match the params, at step 0 and in v alone",
          "[adamw_step][optim][adamw][errors][c:adamw_step.shape-mismatch]"
          "[c:adamw_step.state-created]") {
    const GptConfig c{5, 4, 4, 2, 1};
    GptParams<float> p = wb::init_gpt<float>(c, 3);
    const GptParams<float> g = wbtest::random_params<float>(c, 4);
    // step 0 but m and v given: not a first call (m is not empty), so nothing is created and
    // the state must match the 21 tensors.
    AdamWState<float> other;
    other.m.push_back(xt::zeros<float>({3}));
    other.v.push_back(xt::zeros<float>({3}));
    INFO(
        "hint: create m and v only when state.step == 0 AND state.m is empty; every other "
        "state is checked against the params, tensor by tensor, in m and in v");
    WB_CHECK_THROWS(wb::ShapeError, wb::adamw_step(p, g, other, AdamWConfig{}),
                    "a non-empty state at step 0 is not a first call: it must match the params",
                    "wb::adamw_step", "state");
    AdamWState<float> state;
    wb::adamw_step(p, g, state, AdamWConfig{});
    AdamWState<float> bad_v = state;
    bad_v.v[3] = xt::zeros<float>({1});  // blocks.0.w_q has 16 elements
    WB_CHECK_THROWS(wb::ShapeError, wb::adamw_step(p, g, bad_v, AdamWConfig{}),
                    "v is checked as m is: each of its tensors has its parameter's size",
                    "wb::adamw_step", "state");
}

TEST_CASE("AdamW rejects NaN hyper-parameters before touching the model or its state",
          "[adamw_step][optim][adamw][errors][c:adamw_step.bad-config]"
          "[c:adamw_step.checked-first]") {
    // `lr <= 0` is false for a NaN lr, which would then turn every weight into NaN: test
    // !(lr > 0), !(0 <= beta < 1), !(eps > 0), !(weight_decay >= 0), all true for NaN.
    const GptConfig c{5, 4, 4, 2, 2};
    GptParams<float> p = wb::init_gpt<float>(c, 3);
    const GptParams<float> g = wbtest::random_params<float>(c, 4);
    AdamWState<float> state;
    wb::adamw_step(p, g, state, AdamWConfig{});
    const GptParams<float> p_before = p;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    AdamWConfig nan_lr, nan_beta1, nan_beta2, nan_eps, nan_decay;
    nan_lr.lr = nan;
    nan_beta1.beta1 = nan;
    nan_beta2.beta2 = nan;
    nan_eps.eps = nan;
    nan_decay.weight_decay = nan;
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, nan_lr),
                    "a NaN learning rate is not > 0", "wb::adamw_step", "lr = nan");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, nan_beta1),
                    "a NaN beta1 is not in [0, 1)", "wb::adamw_step", "beta1 = nan");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, nan_beta2),
                    "a NaN beta2 is not in [0, 1)", "wb::adamw_step", "beta2 = nan");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, nan_eps), "a NaN eps is not > 0",
                    "wb::adamw_step", "eps = nan");
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, state, nan_decay),
                    "a NaN weight decay is not >= 0", "wb::adamw_step", "weight_decay = nan");
    INFO("a rejected step changes nothing: check the hyper-parameters before the first update");
    CHECK(state.step == 1);
    CHECK(wbtest::identical(p, p_before));
}

TEST_CASE("a tiny GPT overfits one batch: the loss falls from about log V to below 0.05",
          "[adamw_step][gpt_backward][optim][training][c:adamw_step.update]"
          "[c:gpt_backward.gradients]") {
    // §21.7's loop on one fixed batch of 2 × 8 tokens, V = 8: a model that can learn
    // memorises it. From ≈ log 8 = 2.079 (math.log(8)) to < 0.05 within 60 steps; the
    // reference needs 31 steps (about 20 ms), so 60 leaves room for other rounding.
    const GptConfig c{8, 8, 16, 2, 1};
    GptParams<float> p = wb::init_gpt<float>(c, 3);
    GptParams<float> grads = wb::zeros_like(p);
    AdamWState<float> state;
    const wb::NextToken batch = wb::shift_for_next_token(
        TokenIds{{0, 3, 1, 4, 1, 5, 2, 6, 5}, {7, 2, 7, 1, 0, 6, 3, 3, 2}});
    const AdamWConfig opt{1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f};
    float first = 0, loss = 0;
    int steps = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (steps < 60) {
        loss = train_step(p, grads, state, c, batch, opt);  // the loss before this step's update
        if (++steps == 1) first = loss;
        if (loss < 0.05f) break;
    }
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
    INFO("first loss " << first << " (log 8 = 2.079), last loss " << loss << " after " << steps
                       << " steps, " << ms << " ms");
    CHECK(std::fabs(first - 2.0794f) < 0.05f);
    INFO(
        "hint: the loss must fall below 0.05 within 60 steps. Check the loop order: "
        "zero_grad → forward → backward → adamw_step (§21.7); a gradient that is not zeroed "
        "grows every step, a wrong sign climbs the loss");
    CHECK(loss < 0.05f);
}

// ---- checkpoints -----------------------------------------------------------------------------

TEST_CASE("fnv1a64 gives the published FNV-1a test values",
          "[fnv1a64][checkpoint][checksum][c:fnv1a64.values]") {
    // From the FNV reference test suite (and Python: h ^= b; h = h·1099511628211 mod 2⁶⁴).
    const unsigned char foobar[] = {'f', 'o', 'o', 'b', 'a', 'r'};
    const unsigned char a[] = {'a'};
    INFO(
        "h starts at 14695981039346656037 (0xcbf29ce484222325); per byte: XOR first, then "
        "multiply by 1099511628211 (FNV-1a; multiplying first is FNV-1)");
    CHECK(wb::fnv1a64(foobar, 0) == 0xcbf29ce484222325ull);
    CHECK(wb::fnv1a64(a, 1) == 0xaf63dc4c8601ec8cull);
    CHECK(wb::fnv1a64(foobar, 6) == 0x85944171f73967e8ull);
}

TEST_CASE("a checkpoint follows the documented format byte for byte",
          "[save_checkpoint][checkpoint][format][c:save_checkpoint.format]"
          "[c:save_checkpoint.training-step]") {
    // V=2 T_max=1 D=2 H=1 L=1: 21 tensors, 88 floats. By hand (Python): payload = 5·8 + 8 + 1
    // + 8 + Σ(4 + len(name) + 4 + 8·rank + 4·size) = 1050 bytes, file = 20 + 1050 + 8 = 1078;
    // with AdamW state: payload + 8 + 2·4·88 = 1762, file 1790.
    const GptConfig c{2, 1, 2, 1, 1};
    const GptParams<float> p = wbtest::random_params<float>(c, 61);
    TempPath file("format");
    wb::save_checkpoint(file.path, c, p, nullptr, 42);
    const Bytes b = read_bytes(file.path);
    INFO("file size " << b.size() << ", expected 1078 (checkpoint.hpp's table)");
    REQUIRE(b.size() == 1078);
    const std::string magic(b.begin(), b.begin() + 8);
    CHECK(magic == "WBGPTCKP");
    CHECK(b[8] == 1);  // u32 version 1, little-endian: 01 00 00 00
    CHECK((b[9] | b[10] | b[11]) == 0);
    CHECK(le64(b, 12) == 1050);  // payload size
    INFO("config V, T_max, D, H, L as u64 at bytes 20..59, then step, flag, tensor count");
    CHECK(le64(b, 20) == 2);
    CHECK(le64(b, 28) == 1);
    CHECK(le64(b, 36) == 2);
    CHECK(le64(b, 44) == 1);
    CHECK(le64(b, 52) == 1);
    CHECK(le64(b, 60) == 42);  // step
    CHECK(b[68] == 0);         // no optimizer
    CHECK(le64(b, 69) == 21);  // tensors
    // First tensor: u32 3, "wte", u32 rank 2, u64 2, u64 2, then wte(0, 0) as f32.
    CHECK(b[77] == 3);
    CHECK(std::string(b.begin() + 81, b.begin() + 84) == "wte");
    CHECK(b[84] == 2);
    CHECK(le64(b, 88) == 2);
    CHECK(le64(b, 96) == 2);
    float first;
    std::memcpy(&first, &b[104], 4);
    CHECK(first == p.wte(0, 0));
    // The checksum: FNV-1a of bytes [20, 1070), written out here independently.
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 20; i < 1070; ++i) h = (h ^ b[i]) * 1099511628211ull;
    CHECK(le64(b, 1070) == h);

    AdamWState<float> state;
    GptParams<float> q = p;
    wb::adamw_step(q, p, state, AdamWConfig{});
    wb::save_checkpoint(file.path, c, q, &state, 43);
    const Bytes with = read_bytes(file.path);
    INFO("with the optimizer: expected 1790 bytes, flag 1");
    CHECK(with.size() == 1790);
    CHECK(with.at(68) == 1);
}

TEST_CASE("save then load gives bit-identical weights, logits, optimizer state and step",
          "[load_checkpoint][save_checkpoint][checkpoint][roundtrip]"
          "[c:load_checkpoint.roundtrip][c:save_checkpoint.atomic]") {
    Trained t;
    TempPath file("roundtrip");
    wb::save_checkpoint(file.path, t.config, t.params, &t.state, 3);
    INFO("the save goes through path.tmp, which must be gone (renamed) afterwards");
    CHECK_FALSE(fs::exists(file.path + ".tmp"));
    const wb::Checkpoint ck = wb::load_checkpoint(file.path);
    INFO("config, step and every tensor must come back exactly (float32 bits, no text)");
    CHECK(ck.config.V == 13);
    CHECK(ck.config.T_max == 8);
    CHECK(ck.config.D == 8);
    CHECK(ck.config.H == 2);
    CHECK(ck.config.L == 2);
    CHECK(ck.step == 3);
    CHECK(wbtest::identical(ck.params, t.params));
    const Mat<float> before = wb::gpt_logits(t.params, t.config, t.batch.inputs);
    const Mat<float> after = wb::gpt_logits(ck.params, ck.config, t.batch.inputs);
    CHECK(bits_equal(before, after));
    REQUIRE(ck.optimizer.has_value());
    CHECK(ck.optimizer->step == 3);
    REQUIRE(ck.optimizer->m.size() == t.state.m.size());
    REQUIRE(ck.optimizer->v.size() == t.state.v.size());
    for (std::size_t i = 0; i < t.state.m.size(); ++i) {
        INFO("AdamW moments of tensor " << i << " (resuming needs them, §21.9)");
        CHECK(bits_equal(ck.optimizer->m[i], t.state.m[i]));
        CHECK(bits_equal(ck.optimizer->v[i], t.state.v[i]));
    }

    wb::save_checkpoint(file.path, t.config, t.params);  // weights only, step 0
    const wb::Checkpoint weights_only = wb::load_checkpoint(file.path);
    INFO("saved without an optimizer: no optimizer comes back");
    CHECK_FALSE(weights_only.optimizer.has_value());
    CHECK(weights_only.step == 0);
    CHECK(wbtest::identical(weights_only.params, t.params));
}

TEST_CASE("a RoPE model comes back as a RoPE model: the position kind is wpe's shape [0, D]",
          "[load_checkpoint][checkpoint][roundtrip][rope][c:load_checkpoint.positions-from-wpe]"
          "[c:load_checkpoint.roundtrip]") {
    const GptConfig c{9, 6, 8, 2, 1, wb::Positions::rope};
    const GptParams<float> p = wb::init_gpt<float>(c, 4);
    TempPath file("rope");
    wb::save_checkpoint(file.path, c, p);
    const wb::Checkpoint ck = wb::load_checkpoint(file.path);
    INFO(
        "save writes wpe [0, D] for RoPE; load must read that shape and set positions = rope "
        "before it checks the tensors against the config (else 'tensor wpe [0, 8], expected "
        "[6, 8]')");
    CHECK(ck.config.positions == wb::Positions::rope);
    CHECK(ck.config.T_max == 6);
    CHECK(wbtest::identical(ck.params, p));
    const wb::TokenIds ids = {{1, 2, 3, 4, 5}};
    CHECK(bits_equal(wb::gpt_logits(p, c, ids), wb::gpt_logits(ck.params, ck.config, ids)));

    const GptConfig learned{9, 6, 8, 2, 1};
    wb::save_checkpoint(file.path, learned, wb::init_gpt<float>(learned, 4));
    CHECK(wb::load_checkpoint(file.path).config.positions == wb::Positions::learned);
}

TEST_CASE("resuming from a checkpoint continues training exactly where it stopped",
          "[load_checkpoint][save_checkpoint][checkpoint][resume][c:load_checkpoint.roundtrip]"
          "[c:save_checkpoint.optimizer-step]") {
    // §21.9: to resume, save the optimizer state and the progress, not only the weights.
    // 3 steps + save + load + 2 steps must equal 5 steps in one go, bit for bit.
    Trained straight;
    GptParams<float> grads = wbtest::zero_params(straight.params);
    for (int s = 0; s < 2; ++s)
        train_step(straight.params, grads, straight.state, straight.config, straight.batch, {});

    Trained resumed;
    TempPath file("resume");
    wb::save_checkpoint(file.path, resumed.config, resumed.params, &resumed.state, 3);
    wb::Checkpoint ck = wb::load_checkpoint(file.path);
    REQUIRE(ck.optimizer.has_value());
    for (int s = 0; s < 2; ++s)
        train_step(ck.params, grads, *ck.optimizer, ck.config, resumed.batch, {});
    INFO(
        "5 steps straight vs 3 + checkpoint + 2 must be bit-identical: did the checkpoint "
        "keep AdamW's m, v and step (bias correction uses t)?");
    CHECK(ck.optimizer->step == 5);
    CHECK(wbtest::identical(ck.params, straight.params));

    // Restarting the optimizer instead (weights only) takes different steps.
    wb::Checkpoint w = wb::load_checkpoint(file.path);
    AdamWState<float> fresh;
    for (int s = 0; s < 2; ++s) train_step(w.params, grads, fresh, w.config, resumed.batch, {});
    INFO("with a fresh AdamW state the model must differ: m and v matter");
    CHECK_FALSE(wbtest::identical(w.params, straight.params));
}

TEST_CASE("a truncated checkpoint raises FileError naming the byte, and the model is untouched",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.truncated]"
          "[c:load_checkpoint.cannot-open][c:load_checkpoint.validate-first]") {
    Trained t;
    TempPath good("trunc_good"), bad("trunc_bad");
    wb::save_checkpoint(good.path, t.config, t.params, &t.state, 3);
    const Bytes bytes = read_bytes(good.path);
    wb::Checkpoint model = wb::load_checkpoint(good.path);
    // Cut in the magic, in the header, in the payload, in the checksum.
    for (std::size_t cut : {std::size_t{5}, std::size_t{15}, std::size_t{1000}, bytes.size() - 3}) {
        const Bytes head(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
        write_bytes(bad.path, head);
        INFO("file cut to " << cut << " of " << bytes.size() << " bytes");
        WB_CHECK_THROWS(wb::FileError, model = wb::load_checkpoint(bad.path),
                        "compare the file size with the size the header announces BEFORE "
                        "reading the payload; name the file and where it ends",
                        "wb::load_checkpoint", bad.path,
                        "truncated at byte " + std::to_string(cut));
        INFO("a failed load must leave the model it would have replaced untouched");
        CHECK(wbtest::identical(model.params, t.params));
    }
    TempPath missing("missing");
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(missing.path),
                    "a missing file is a FileError naming it", "wb::load_checkpoint", missing.path,
                    "cannot open");
}

TEST_CASE("a flipped byte fails the checksum",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.checksum]"
          "[c:load_checkpoint.validate-first]") {
    Trained t;
    TempPath good("flip_good"), bad("flip_bad");
    wb::save_checkpoint(good.path, t.config, t.params, &t.state, 3);
    const Bytes bytes = read_bytes(good.path);
    wb::Checkpoint model = wb::load_checkpoint(good.path);
    // One bit in a weight's float, one in the step, one in the stored checksum itself.
    for (std::size_t at : {bytes.size() / 2, std::size_t{61}, bytes.size() - 2}) {
        Bytes flipped = bytes;
        flipped[at] ^= 0x10;
        write_bytes(bad.path, flipped);
        INFO("bit 4 of byte " << at << " flipped");
        WB_CHECK_THROWS(wb::FileError, model = wb::load_checkpoint(bad.path),
                        "hash the payload with fnv1a64 and compare with the last 8 bytes before "
                        "using anything: a flipped bit in a weight is otherwise loaded silently",
                        "wb::load_checkpoint", bad.path, "checksum mismatch");
        CHECK(wbtest::identical(model.params, t.params));
    }
}

TEST_CASE("a file of another kind or of another format version is refused by name",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.not-checkpoint]"
          "[c:load_checkpoint.version]") {
    Trained t;
    TempPath good("kind_good"), bad("kind_bad");
    wb::save_checkpoint(good.path, t.config, t.params, nullptr, 0);
    const Bytes bytes = read_bytes(good.path);

    Bytes other = bytes;
    const char png[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
    std::copy(png, png + 8, other.begin());
    write_bytes(bad.path, other);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "check the 8-byte magic \"WBGPTCKP\" first", "wb::load_checkpoint", bad.path,
                    "not a workbook checkpoint");
    write_bytes(bad.path, Bytes{'h', 'e', 'l', 'l', 'o', '\n'});
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "a short text file is not a checkpoint", "wb::load_checkpoint",
                    "not a workbook checkpoint");

    Bytes newer = bytes;
    newer[8] = 7;  // u32 version 7, little-endian
    write_bytes(bad.path, newer);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "read the u32 version at byte 8 and refuse any version but 1 before "
                    "parsing: a newer layout must not be misread",
                    "wb::load_checkpoint", bad.path, "version 7, expected 1");
}

TEST_CASE("the version is checked before the size: a newer file of another length names it",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.version]"
          "[c:load_checkpoint.validate-first]") {
    // A newer format may be longer or shorter than version 1 says: its size field and its
    // length need not agree under version 1's rules, and the version is what to report.
    Trained t;
    TempPath good("order_good"), bad("order_bad");
    wb::save_checkpoint(good.path, t.config, t.params, nullptr, 0);
    const Bytes bytes = read_bytes(good.path);
    INFO("hint: magic, version, size, checksum, contents: in that order");
    Bytes longer = bytes;
    longer[8] = 2;
    longer.push_back(0);
    write_bytes(bad.path, longer);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "a version 2 file with one more byte: refuse its version, not its size",
                    "wb::load_checkpoint", bad.path, "version 2, expected 1");
    Bytes shorter = bytes;
    shorter[8] = 2;
    shorter.resize(bytes.size() - 8);
    write_bytes(bad.path, shorter);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "a version 2 file shorter than version 1 announces: its version first",
                    "wb::load_checkpoint", bad.path, "version 2, expected 1");
}

TEST_CASE("a file with a correct checksum but contents that are not the model is refused",
          "[load_checkpoint][checkpoint][errors][c:load_checkpoint.tensor-mismatch]"
          "[c:load_checkpoint.invalid-config][c:load_checkpoint.trailing-bytes]") {
    // Files a buggy writer could produce: the checksum is recomputed here (FNV-1a written out
    // independently), so only the contents are wrong.
    Trained t;
    TempPath good("contents_good"), bad("contents_bad");
    wb::save_checkpoint(good.path, t.config, t.params, nullptr, 0);
    const Bytes bytes = read_bytes(good.path);
    auto rehash = [](Bytes b) {
        std::uint64_t h = 14695981039346656037ull;
        for (std::size_t i = 20; i + 8 < b.size(); ++i) h = (h ^ b[i]) * 1099511628211ull;
        for (int i = 0; i < 8; ++i) b[b.size() - 8 + i] = static_cast<unsigned char>(h >> (8 * i));
        return b;
    };
    Bytes renamed = bytes;
    REQUIRE(std::string(renamed.begin() + 81, renamed.begin() + 84) == "wte");
    renamed[83] = 'f';  // the first tensor is now called "wtf"
    write_bytes(bad.path, rehash(renamed));
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "compare every tensor's name and shape with parameters() of the saved config",
                    "wb::load_checkpoint", bad.path, "wtf", "wte");

    Bytes bad_heads = bytes;
    bad_heads[44] = 3;  // H = 3 does not divide D = 8
    write_bytes(bad.path, rehash(bad_heads));
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "validate the saved config as init_gpt would, but report a FileError",
                    "wb::load_checkpoint", bad.path, "invalid config", "H = 3");

    Bytes longer = bytes;
    longer.insert(longer.end(), {0, 0, 0, 0});
    write_bytes(bad.path, longer);
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "the file must end right after the checksum", "wb::load_checkpoint", bad.path,
                    "unexpected bytes after the checksum");
}

TEST_CASE("a correctly hashed RoPE checkpoint whose head width is odd is an invalid config",
          "[load_checkpoint][checkpoint][errors][rope][c:load_checkpoint.invalid-config]") {
    // H = 8 divides D = 8, but RoPE turns pairs and each head is 1 wide. The tensors' shapes do
    // not depend on H, so only the config's check against the position kind (wpe [0, D]) can
    // refuse it.
    const GptConfig c{9, 6, 8, 2, 1, wb::Positions::rope};
    TempPath good("rope_heads_good"), bad("rope_heads_bad");
    wb::save_checkpoint(good.path, c, wb::init_gpt<float>(c, 4));
    Bytes bytes = read_bytes(good.path);
    REQUIRE(le64(bytes, 44) == 2);
    bytes[44] = 8;  // H = 8
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 20; i + 8 < bytes.size(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    for (int i = 0; i < 8; ++i)
        bytes[bytes.size() - 8 + i] = static_cast<unsigned char>(h >> (8 * i));
    write_bytes(bad.path, bytes);
    INFO(
        "hint: validate the config once its position kind is known from wpe's shape: a RoPE "
        "model needs an even head width D / H, as require_valid_config says");
    WB_CHECK_THROWS(wb::FileError, wb::load_checkpoint(bad.path),
                    "a RoPE model with heads of width 1 cannot be built: refuse the config",
                    "wb::load_checkpoint", bad.path, "invalid config", "H = 8");
}

TEST_CASE("a failed save leaves the previous checkpoint intact and loadable",
          "[save_checkpoint][checkpoint][atomic][c:save_checkpoint.atomic]"
          "[c:save_checkpoint.file-error][c:save_checkpoint.shape-mismatch]") {
    Trained t;
    TempPath file("atomic");
    wb::save_checkpoint(file.path, t.config, t.params, &t.state, 3);
    const Bytes before = read_bytes(file.path);

    // Block the temporary file: path.tmp is a directory, so it cannot be opened for writing.
    // A save that writes straight into `path` would succeed here and, had it crashed half-way,
    // would have destroyed the only copy.
    fs::create_directory(file.path + ".tmp");
    const GptParams<float> other = wb::init_gpt<float>(t.config, 99);
    WB_CHECK_THROWS(wb::FileError, wb::save_checkpoint(file.path, t.config, other, nullptr, 9),
                    "write the whole file to path + \".tmp\", then std::filesystem::rename it "
                    "onto path: never write into path itself",
                    "wb::save_checkpoint", file.path);
    INFO("the previous file must be byte-for-byte what it was, and still load");
    CHECK(read_bytes(file.path) == before);
    const wb::Checkpoint ck = wb::load_checkpoint(file.path);
    CHECK(ck.step == 3);
    CHECK(wbtest::identical(ck.params, t.params));
    fs::remove_all(file.path + ".tmp");

    // Saving params that are not the config's model is refused before anything is written.
    const GptConfig wider{13, 8, 16, 2, 2};
    WB_CHECK_THROWS(wb::ShapeError, wb::save_checkpoint(file.path, wider, t.params),
                    "the config saved must describe the params", "wb::save_checkpoint");
    CHECK(read_bytes(file.path) == before);
    // A directory that does not exist cannot be written.
    const std::string nowhere = file.path + "_no_such_dir/model.bin";
    WB_CHECK_THROWS(wb::FileError, wb::save_checkpoint(nowhere, t.config, t.params),
                    "a path that cannot be written is a FileError naming it", "wb::save_checkpoint",
                    nowhere);
    // An optimizer state of another model is refused too, before anything is written.
    AdamWState<float> short_state = t.state;
    short_state.v.pop_back();
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::save_checkpoint(file.path, t.config, t.params, &short_state, 4),
                    "the optimizer state must hold one m and one v per tensor of the params",
                    "wb::save_checkpoint");
    CHECK(read_bytes(file.path) == before);
}

TEST_CASE(
    "a save interrupted mid-write (a partial path.tmp, a full disk) keeps the previous "
    "checkpoint loadable",
    "[save_checkpoint][checkpoint][atomic][c:save_checkpoint.atomic]"
    "[c:save_checkpoint.tmp-removed][c:save_checkpoint.file-error]") {
    Trained t;
    TempPath file("interrupted");
    wb::save_checkpoint(file.path, t.config, t.params, &t.state, 3);
    const Bytes before = read_bytes(file.path);

    // A crash in the middle of a save: the process died after writing half of path.tmp and
    // before the rename. The checkpoint at path is the previous one, whole.
    write_bytes(file.path + ".tmp", Bytes(before.begin(), before.begin() + before.size() / 2));
    {
        INFO("a crash before the rename must leave the previous file loadable and unchanged");
        CHECK(read_bytes(file.path) == before);
        const wb::Checkpoint ck = wb::load_checkpoint(file.path);
        CHECK(ck.step == 3);
        CHECK(wbtest::identical(ck.params, t.params));
    }
    // The next save must not trip over the leftover: it truncates path.tmp and renames it.
    const GptParams<float> other = wb::init_gpt<float>(t.config, 99);
    wb::save_checkpoint(file.path, t.config, other, nullptr, 9);
    {
        INFO(
            "a save after a crash replaces the stale path.tmp (open it with truncation) and "
            "renames it: nothing of the half-written file may survive");
        CHECK_FALSE(fs::exists(file.path + ".tmp"));
        const wb::Checkpoint ck = wb::load_checkpoint(file.path);
        CHECK(ck.step == 9);
        CHECK_FALSE(ck.optimizer.has_value());
        CHECK(wbtest::identical(ck.params, other));
    }

    // A disk that fills up during the write: path.tmp is a link to /dev/full, where every
    // write fails (ENOSPC) once the stream's buffer is flushed, i.e. at close.
    if (!fs::exists("/dev/full")) {
        WARN("no /dev/full on this system: the full-disk case is skipped");
        return;
    }
    const Bytes current = read_bytes(file.path);
    fs::create_symlink("/dev/full", file.path + ".tmp");
    WB_CHECK_THROWS(wb::FileError, wb::save_checkpoint(file.path, t.config, t.params, &t.state, 4),
                    "check the stream after close(): a full disk fails the write there, and "
                    "renaming a half-written path.tmp onto path destroys the checkpoint",
                    "wb::save_checkpoint", file.path);
    INFO(
        "after a failed write the previous checkpoint is intact, path is still a plain file, "
        "and the temporary is removed");
    CHECK(read_bytes(file.path) == current);
    CHECK_FALSE(fs::is_symlink(file.path));
    CHECK_FALSE(fs::exists(fs::symlink_status(file.path + ".tmp")));
    const wb::Checkpoint ck = wb::load_checkpoint(file.path);
    CHECK(ck.step == 9);
    CHECK(wbtest::identical(ck.params, other));
}
