#include "check.hpp"
#include "temp_files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "8-training/checkpoint.hpp"
#include "8-training/model.hpp"
#include "minigpt/explain.hpp"
#include "minigpt/fast/gpt_decode.hpp"
#include "minigpt/fast/gpt_train.hpp"
#include "minigpt/model_file.hpp"
#include "minigpt/train.hpp"
#include "minigpt/variant.hpp"
#include "random_model.hpp"

// Checks of the ablation switches (variant.hpp): attention without the 1/√d scale, Post-LN
// blocks, no final LayerNorm, alone and together, with learned positions and RoPE; and no
// positions at all (RoPE's layout with the rotation off), alone and with the other three.
//
// Chapter 8 builds only the default model, so the trainer's backward is checked against finite
// differences of its own forward: for each parameter tensor, the derivative of the loss along
// a direction u of unit norm, (loss(θ + h·u) − loss(θ − h·u)) / 2h with h = 1e-2, against
// Σ grad ⊙ u. Two directions per tensor: the gradient itself (a gradient too large or too
// small by a factor shows) and a random one (a gradient pointing elsewhere shows). The forward
// runs in float (its loss rounds at ~1e-7 relative, 5e-5 on the quotient) and the central
// difference is off by ~h² (1e-4 relative): the check allows 1e-2 of the tensor's gradient
// norm plus 2e-4. The same check passes for the default model, whose gradients equal chapter
// 8's (test_gpt_train.cpp); a sign error in a LayerNorm's backward or a missing √d is off by
// far more.
//
// The decoder is checked against the trainer: the softmax of GptDecoder's logits after each
// position equals the trainer's probabilities on the same tokens within 1e-4.

namespace {

using wbtest::read_all;
using wbtest::write_all;

using wb::GptConfig;
using wb::GptParams;
using wb::minigpt::AttentionScale;
using wb::minigpt::GptDecoder;
using wb::minigpt::GptTrainer;
using wb::minigpt::Norm;
using wb::minigpt::Variant;

using wbtest::random_ids;
using wbtest::random_model;

namespace fs = std::filesystem;

// The variants checked: each switch alone, all three together, and the default; with RoPE's
// layout also no positions, alone and with the three others.
std::vector<Variant> variants(wb::Positions positions = wb::Positions::learned) {
    std::vector<Variant> out{Variant{}, Variant{AttentionScale::none, Norm::pre, true},
                             Variant{AttentionScale::sqrt, Norm::post, true},
                             Variant{AttentionScale::sqrt, Norm::pre, false},
                             Variant{AttentionScale::none, Norm::post, false}};
    if (positions == wb::Positions::rope) {
        out.push_back(Variant{AttentionScale::sqrt, Norm::pre, true, true});
        out.push_back(Variant{AttentionScale::none, Norm::post, false, true});
    }
    return out;
}

// The trainer's gradient of every tensor against finite differences of its forward.
void check_finite_differences(const GptConfig& c, const Variant& v, unsigned seed) {
    const std::size_t B = 2, T = c.T_max - 1;
    GptParams<float> params = random_model(c, seed);
    GptTrainer trainer(c, B, T, v);
    const wb::TokenIds in = random_ids(B, T, c.V, seed + 1, false);
    const wb::TokenIds tg = random_ids(B, T, c.V, seed + 2, true);
    trainer.forward(params, in, tg);
    GptParams<float> grads = wb::zeros_like(params);
    trainer.backward(params, grads);

    const auto g = wb::parameters(grads);
    auto p = wb::parameters(params);
    std::mt19937 gen(seed + 3);
    std::normal_distribution<double> normal(0.0, 1.0);
    const double h = 1e-2;
    for (std::size_t t = 0; t < p.size(); ++t) {
        if (p[t].size == 0) continue;  // wpe with RoPE
        double norm = 0;
        for (std::size_t i = 0; i < g[t].size; ++i) norm += double(g[t].data[i]) * g[t].data[i];
        norm = std::sqrt(norm);
        for (int kind = 0; kind < 2; ++kind) {
            std::vector<double> u(p[t].size);
            for (std::size_t i = 0; i < u.size(); ++i) {
                u[i] = kind == 0 && norm > 0 ? g[t].data[i] / norm : normal(gen);
            }
            double len = 0;
            for (const double x : u) len += x * x;
            len = std::sqrt(len);
            double analytic = 0;
            for (std::size_t i = 0; i < u.size(); ++i) {
                u[i] /= len;
                analytic += double(g[t].data[i]) * u[i];
            }
            const std::vector<float> saved(p[t].data, p[t].data + p[t].size);
            const auto loss_at = [&](double step) {
                for (std::size_t i = 0; i < u.size(); ++i) {
                    p[t].data[i] = static_cast<float>(saved[i] + step * u[i]);
                }
                return double(trainer.forward(params, in, tg));
            };
            const double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
            std::copy(saved.begin(), saved.end(), p[t].data);
            INFO("config " << wb::config_str(c) << ", " << wb::minigpt::variant_str(v) << ", "
                           << p[t].name
                           << (kind == 0 ? " along its gradient" : " along a random direction")
                           << ": finite difference " << numeric << ", backward " << analytic
                           << " (gradient norm " << norm << ")");
            CHECK(std::fabs(numeric - analytic) <= 1e-2 * norm + 2e-4);
        }
    }
}

// exp(z − max) / Σ: the probabilities of a row of logits, in double.
std::vector<double> softmax(const float* z, std::size_t V) {
    const float mx = *std::max_element(z, z + V);
    std::vector<double> p(V);
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += p[v] = std::exp(double(z[v]) - mx);
    for (double& x : p) x /= sum;
    return p;
}

wb::minigpt::Model tiny_model(const Variant& v) {
    wb::minigpt::Model m;
    m.tokenizer = wb::minigpt::Tokenizer::from_text("abcd\n");
    // No positions is stored in RoPE's layout (no wpe).
    m.config = {m.tokenizer.size(),
                8,
                8,
                2,
                1,
                v.no_positions ? wb::Positions::rope : wb::Positions::learned};
    m.params = random_model(m.config, 5);
    m.variant = v;
    return m;
}

}  // namespace

TEST_CASE("GptTrainer's gradients equal finite differences for every ablation switch",
          "[gpt_train]") {
    unsigned seed = 200;
    for (const wb::Positions positions : {wb::Positions::learned, wb::Positions::rope}) {
        for (const Variant& v : variants(positions)) {
            check_finite_differences(GptConfig{7, 6, 8, 2, 2, positions}, v, seed++);
        }
    }
}

TEST_CASE(
    "GptTrainer without the attention scale equals chapter 8's model with w_q and b_q times "
    "sqrt(d)",
    "[gpt_train]") {
    // q·k without 1/√d is (√d q)·k with it: the same loss as chapter 8 on those weights, and the
    // gradients of w_q and b_q √d times chapter 8's (the others equal), up to float rounding.
    for (const wb::Positions positions : {wb::Positions::learned, wb::Positions::rope}) {
        const GptConfig c{11, 8, 12, 3, 2, positions};
        INFO("config " << wb::config_str(c));
        const GptParams<float> params = random_model(c, 31);
        const float root = std::sqrt(4.0f);  // d = 12 / 3
        GptParams<float> scaled = params;
        for (auto& b : scaled.blocks) {
            b.w_q *= root;
            b.b_q *= root;
        }
        const wb::TokenIds in = random_ids(2, 8, c.V, 32, false);
        const wb::TokenIds tg = random_ids(2, 8, c.V, 33, true);
        wb::GptCache<float> cache;
        const float want = wb::gpt_forward(scaled, c, in, tg, -1, cache);
        GptParams<float> want_grads = wb::zeros_like(params);
        wb::gpt_backward(scaled, c, cache, want_grads);
        for (auto& b : want_grads.blocks) {
            b.w_q *= root;
            b.b_q *= root;
        }
        GptTrainer trainer(c, 2, 8, Variant{AttentionScale::none, Norm::pre, true});
        const float got = trainer.forward(params, in, tg);
        GptParams<float> got_grads = wb::zeros_like(params);
        trainer.backward(params, got_grads);
        CHECK(std::fabs(got - want) <= 1e-4f * std::fabs(want));
        const auto a = wb::parameters(got_grads);
        const auto e = wb::parameters(want_grads);
        for (std::size_t t = 0; t < a.size(); ++t) {
            double scale = 0, worst = 0;
            for (std::size_t i = 0; i < a[t].size; ++i) {
                scale = std::max(scale, std::fabs(double(e[t].data[i])));
                worst = std::max(worst, std::fabs(double(a[t].data[i]) - e[t].data[i]));
            }
            INFO(a[t].name << ": largest difference " << worst << " of gradients up to " << scale);
            CHECK(worst <= 1e-4 * scale + 1e-7);
        }
    }
}

TEST_CASE("GptDecoder generates with the trainer's model for every ablation switch", "[minigpt]") {
    // After a prefill of n tokens and after each step, the decoder's next-token probabilities
    // equal the trainer's forward on the same tokens; and each switch changes them (it is not
    // ignored on either side).
    for (const wb::Positions positions : {wb::Positions::learned, wb::Positions::rope}) {
        const GptConfig c{23, 24, 32, 2, 2, positions};
        const GptParams<float> params = random_model(c, 41);
        const wb::TokenIds tokens = random_ids(1, c.T_max, c.V, 42, false);
        wb::TokenIds none = wb::TokenIds::from_shape({1, c.T_max});
        std::fill(none.begin(), none.end(), -1);
        std::vector<float> default_probs;
        for (const Variant& v : variants(positions)) {
            INFO("config " << wb::config_str(c) << ", " << wb::minigpt::variant_str(v));
            GptTrainer trainer(c, 1, c.T_max, v);
            trainer.forward(params, tokens, none);
            const float* probs = trainer.probabilities();  // [T_max, V]
            if (v.is_default()) {
                default_probs.assign(probs, probs + c.T_max * c.V);
            } else {
                double change = 0;
                for (std::size_t e = 0; e < c.T_max * c.V; ++e) {
                    change = std::max(change, std::fabs(double(probs[e]) - default_probs[e]));
                }
                INFO("largest change of a probability from the default model's: " << change);
                CHECK(change > 1e-2);
            }
            GptDecoder decoder(params, c, v);
            CHECK(decoder.variant().norm == v.norm);
            CHECK(decoder.variant().no_positions == v.no_positions);
            const std::vector<std::int64_t> ids(tokens.begin(), tokens.end());
            for (const std::size_t n : {std::size_t{1}, std::size_t{5}, c.T_max - 3}) {
                const float* logits = decoder.prefill({ids.begin(), ids.begin() + long(n)});
                for (std::size_t t = n - 1; t < c.T_max; ++t) {
                    if (t > n - 1) logits = decoder.step(ids[t]);
                    const std::vector<double> p = softmax(logits, c.V);
                    double worst = 0;
                    for (std::size_t k = 0; k < c.V; ++k) {
                        worst = std::max(worst, std::fabs(p[k] - probs[t * c.V + k]));
                    }
                    INFO("prefill of " << n << ", position " << t << ": largest difference "
                                       << worst);
                    CHECK(worst <= 1e-4);
                    if (t >= n + 2) break;  // 3 steps after each prefill
                }
            }
        }
    }
}

TEST_CASE(
    "A model file keeps the ablation switches, the default model stays format version 1, and "
    "an unknown switch value is refused",
    "[minigpt]") {
    wbtest::TempDir dir;
    const std::string plain = (dir.path / "plain.model").string();
    const std::string path = (dir.path / "post.model").string();
    wb::minigpt::save_model(plain, tiny_model(Variant{}));
    const Variant v{AttentionScale::none, Norm::post, false};
    wb::minigpt::save_model(path, tiny_model(v));
    const std::string a = read_all(plain), b = read_all(path);
    CHECK(a[8] == 1);  // version 1: as before the switches, read by earlier programs too
    CHECK(b[8] == 2);
    CHECK(b.size() == a.size() + 4);
    CHECK(b.substr(28, 4) == std::string("\x01\x01\x00\x00", 4));
    CHECK(wb::minigpt::load_model(plain).variant.is_default());
    const wb::minigpt::Model back = wb::minigpt::load_model(path);
    CHECK(back.variant.attention_scale == AttentionScale::none);
    CHECK(back.variant.norm == Norm::post);
    CHECK(!back.variant.final_norm);

    struct Bad {
        std::size_t at;
        char value;
        const char* field;
        const char* expected;
    };
    for (const Bad& bad :
         {Bad{28, 7, "attention scale = 7", "0 (sqrt) or 1 (none)"},
          Bad{29, 2, "norm = 2", "0 (pre) or 1 (post)"},
          Bad{30, 9, "final norm = 9", "0 (off) or 1 (on)"},
          Bad{31, 2, "positions = 2", "0 (the checkpoint's: learned or rope) or 1 (none)"}}) {
        std::string data = b;
        data[bad.at] = bad.value;
        const std::string broken = (dir.path / "broken.model").string();
        write_all(broken, data);
        WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_model(broken),
                        "a switch's unknown value names the field, the value and what is expected",
                        "wb::minigpt::load_model", bad.field, bad.expected);
    }
    // No positions: byte 31 is 1 and the checkpoint has RoPE's layout (no wpe); it comes back.
    const std::string none_path = (dir.path / "none.model").string();
    wb::minigpt::save_model(none_path,
                            tiny_model(Variant{AttentionScale::sqrt, Norm::pre, true, true}));
    const std::string c = read_all(none_path);
    CHECK(c[8] == 2);
    CHECK(c.substr(28, 4) == std::string("\x00\x00\x01\x01", 4));
    const wb::minigpt::Model none_back = wb::minigpt::load_model(none_path);
    CHECK(none_back.variant.no_positions);
    CHECK(none_back.variant.final_norm);
    CHECK(none_back.config.positions == wb::Positions::rope);
    CHECK(none_back.params.wpe.size() == 0);
    // Byte 31 set to 1 on a model with learned positions (checksum made right): the table wpe
    // contradicts "none", and the load says so.
    std::string learned_none = b;
    learned_none[31] = 1;
    wbtest::rehash_model_file(learned_none);
    const std::string contradictory = (dir.path / "learned_none.model").string();
    write_all(contradictory, learned_none);
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_model(contradictory),
                    "positions none with a checkpoint of learned positions",
                    "wb::minigpt::load_model", "positions = 1", "learned",
                    "expected a checkpoint of positions rope");
    // And a save of that contradiction is refused before anything is written.
    wb::minigpt::Model learned = tiny_model(Variant{});
    learned.variant.no_positions = true;
    WB_CHECK_THROWS(wb::ValueError,
                    wb::minigpt::save_model((dir.path / "never.model").string(), learned),
                    "no positions needs RoPE's layout", "wb::minigpt::save_model",
                    "--positions none", "positions = learned", "expected positions = rope");
    CHECK(!fs::exists(dir.path / "never.model"));

    std::string truncated = b.substr(0, 30);
    write_all((dir.path / "short.model").string(), truncated);
    WB_CHECK_THROWS(wb::FileError, wb::minigpt::load_model((dir.path / "short.model").string()),
                    "a version 2 file cut inside its switches", "wb::minigpt::load_model",
                    "truncated");
}

TEST_CASE(
    "The chapters' code refuses a model with an ablation switch, naming it and the fast "
    "engine",
    "[minigpt]") {
    const Variant v{AttentionScale::sqrt, Norm::post, true};
    const GptConfig c{5, 8, 8, 2, 1};
    WB_CHECK_THROWS(wb::ValueError,
                    wb::minigpt::make_step_engine(wb::minigpt::Engine::chapters, c, 1, 4, v),
                    "the chapters engine trains only chapter 8's model",
                    "wb::minigpt::make_step_engine", "--norm post", "--engine fast");
    CHECK(wb::minigpt::make_step_engine(wb::minigpt::Engine::fast, c, 1, 4, v) != nullptr);
    const wb::minigpt::Model m = tiny_model(Variant{AttentionScale::none, Norm::pre, false});
    WB_CHECK_THROWS(wb::ValueError,
                    wb::minigpt::generate_text(m, "ab", 3, wb::SamplingOptions{}, 1, true),
                    "chapter 9 decodes only chapter 8's model", "wb::minigpt::generate_text",
                    "--attention-scale none --final-norm off", "--engine fast");
    CHECK(wb::minigpt::generate_text_fast(m, "ab", 3, wb::SamplingOptions{}, 1, true).size() == 5);
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::explain(m, "ab"),
                    "explain reads chapter 8's forward", "wb::minigpt::explain",
                    "--attention-scale none --final-norm off");

    // No positions, the same way.
    const Variant none{AttentionScale::sqrt, Norm::pre, true, true};
    const GptConfig rope{5, 8, 8, 2, 1, wb::Positions::rope};
    WB_CHECK_THROWS(wb::ValueError,
                    wb::minigpt::make_step_engine(wb::minigpt::Engine::chapters, rope, 1, 4, none),
                    "the chapters engine trains only chapter 8's model",
                    "wb::minigpt::make_step_engine", "--positions none", "--engine fast");
    CHECK(wb::minigpt::make_step_engine(wb::minigpt::Engine::fast, rope, 1, 4, none) != nullptr);
    const wb::minigpt::Model n = tiny_model(none);
    WB_CHECK_THROWS(wb::ValueError,
                    wb::minigpt::generate_text(n, "ab", 3, wb::SamplingOptions{}, 1, true),
                    "chapter 9 decodes only chapter 8's model", "wb::minigpt::generate_text",
                    "--positions none", "--engine fast");
    CHECK(wb::minigpt::generate_text_fast(n, "ab", 3, wb::SamplingOptions{}, 1, true).size() == 5);
    WB_CHECK_THROWS(wb::ValueError, wb::minigpt::explain(n, "ab"),
                    "explain reads chapter 8's forward", "wb::minigpt::explain",
                    "--positions none");
}

TEST_CASE("Without positions, a one-block model cannot tell the order of the earlier tokens",
          "[minigpt]") {
    // With one block and no positions, the last token's output reads the earlier tokens as a
    // set (attention sums over keys, each key sees only its own token): swapping two earlier
    // tokens changes nothing, while RoPE's rotation makes it change. Checked on the trainer and
    // on the decoder.
    const GptConfig c{13, 10, 16, 2, 1, wb::Positions::rope};
    const GptParams<float> params = random_model(c, 61);
    wb::TokenIds a = random_ids(1, c.T_max, c.V, 62, false);
    a(0, 2) = 3;
    a(0, 6) = 9;
    wb::TokenIds b = a;
    std::swap(b(0, 2), b(0, 6));
    wb::TokenIds ignore = wb::TokenIds::from_shape({1, c.T_max});
    std::fill(ignore.begin(), ignore.end(), -1);
    const std::size_t last = c.T_max - 1;
    for (const bool no_positions : {true, false}) {
        const Variant v{AttentionScale::sqrt, Norm::pre, true, no_positions};
        INFO(wb::minigpt::variant_str(v));
        GptTrainer trainer(c, 1, c.T_max, v);
        trainer.forward(params, a, ignore);
        const std::vector<float> pa(trainer.probabilities() + last * c.V,
                                    trainer.probabilities() + (last + 1) * c.V);
        trainer.forward(params, b, ignore);
        const float* pb = trainer.probabilities() + last * c.V;
        GptDecoder decoder(params, c, v);
        const std::vector<double> da = softmax(decoder.prefill({a.begin(), a.end()}), c.V);
        const std::vector<double> db = softmax(decoder.prefill({b.begin(), b.end()}), c.V);
        double trainer_change = 0, decoder_change = 0;
        for (std::size_t k = 0; k < c.V; ++k) {
            trainer_change = std::max(trainer_change, std::fabs(double(pa[k]) - pb[k]));
            decoder_change = std::max(decoder_change, std::fabs(da[k] - db[k]));
        }
        INFO("largest change of a probability: trainer " << trainer_change << ", decoder "
                                                         << decoder_change);
        if (no_positions) {
            CHECK(trainer_change <= 1e-5);
            CHECK(decoder_change <= 1e-5);
        } else {
            CHECK(trainer_change > 1e-3);
            CHECK(decoder_change > 1e-3);
        }
    }
}

TEST_CASE("The fast engine refuses no positions with a table of learned positions", "[minigpt]") {
    const Variant none{AttentionScale::sqrt, Norm::pre, true, true};
    const GptConfig learned{5, 8, 8, 2, 1, wb::Positions::learned};
    WB_CHECK_THROWS(wb::ValueError, GptTrainer(learned, 1, 4, none),
                    "no positions has RoPE's layout", "wb::minigpt::GptTrainer", "--positions none",
                    "positions = learned", "expected positions = rope");
    WB_CHECK_THROWS(wb::ValueError, GptDecoder(random_model(learned, 3), learned, none),
                    "no positions has RoPE's layout", "wb::minigpt::GptDecoder", "--positions none",
                    "positions = learned", "expected positions = rope");
}
