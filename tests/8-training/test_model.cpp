#include "8-training/model.hpp"
#include "check.hpp"
#include "golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "2-embedding/embedding.hpp"
#include "3-positions/positions.hpp"
#include "6-masks/masks.hpp"
#include "7-blocks/blocks.hpp"
#include "forward_double.hpp"
#include "gpt2_golden.hpp"
#include "gpt_fixtures.hpp"
#include "gradcheck.hpp"

namespace {

using wb::GptConfig;
using wb::GptParams;
using wb::Mat;
using wb::TokenIds;
using wbtest::Golden;

using Ids1 = xt::xtensor<std::int64_t, 1>;

// Float32 model against float32 torch, with the goldens' tolerance (tests/goldens/README.md):
// |actual - expected| <= 1e-5 + 1e-5·|expected|. The whole GPT sums in another order than torch
// (BLAS blocking, the attention's loops); the reference's largest difference is 1.4e-6 on a
// logit of 1.9 and below 1e-6 on every gradient, a margin of 10-20. A real mistake (a missing
// residual, position or LayerNorm, a transposed weight) moves the loss by > 1e-1.
constexpr double kModelTol = wbtest::golden_tolerance;

const char* const kForwardHint =
    "the GPT differs from PyTorch's. Walk model.hpp's recipe: x = wte[id] + wpe[t] (did you add "
    "the positions?); each block x = x + attn(LN1(x)) then x = x + FFN(LN2(x)) (both residuals: "
    "the block ADDS to x); LN_f before lm_head (the final LayerNorm); logits = LN_f(x) · "
    "lm_headᵀ; loss = mean over the non-ignored targets only";

// The golden's model, inputs and targets.
struct GoldenCase {
    Golden g;
    GptConfig config;
    GptParams<float> params;
    TokenIds inputs, targets;
    explicit GoldenCase(const std::string& file)
        : g(file),
          config(wbtest::golden_config(g)),
          params(wbtest::golden_params<float>(g, "", config.L)),
          inputs(wbtest::golden_ids(g, "inputs")),
          targets(wbtest::golden_ids(g, "targets")) {}
};

// Compares every gradient of `grads` with the golden's grad.NAME, naming the tensor.
void check_all_gradients(const Golden& g, const GptParams<float>& grads, std::size_t L) {
    const GptParams<float> expected = wbtest::golden_params<float>(g, "grad.", L);
    REQUIRE(grads.blocks.size() == L);
    wbtest::each_pair(
        grads, expected, [&](const std::string& name, const auto& got, const auto& want) {
            INFO("gradient of " << name);
            WB_CHECK_CLOSE(
                got, want, kModelTol,
                "d loss / d " + name + " differs from torch's autograd. " +
                    (name == "wpe"   ? "wpe row t sums the rows b·T + t of dx over b. "
                     : name == "wte" ? "wte collects dx with += (a repeated id sums). "
                     : name.find("ln") != std::string::npos
                         ? "a LayerNorm's gamma/beta gradient is accumulated over rows. "
                         : "") +
                    "Is the residual gradient added on both sides of each block "
                    "(dx_mid = dx + d_ffn_branch, dx_in = dx_mid + d_attn_branch) and do "
                    "the q, k and v branches SUM into dLN1?");
        });
}

// All tokens t of row b equal to `id`.
TokenIds constant_ids(std::size_t B, std::size_t T, std::int64_t id) {
    TokenIds ids = TokenIds::from_shape({B, T});
    ids.fill(id);
    return ids;
}

template <class E>
double max_abs_diff_rows(const E& a, const E& b, std::size_t row_begin, std::size_t row_end) {
    double m = 0.0;
    for (std::size_t r = row_begin; r < row_end; ++r)
        for (std::size_t j = 0; j < a.shape(1); ++j)
            m = std::max(m, std::fabs(static_cast<double>(a(r, j)) - static_cast<double>(b(r, j))));
    return m;
}

}  // namespace

// ---- parameters: init, order, zeros ------------------------------------------------------------

TEST_CASE("init_gpt gives each tensor its shape, N(0, 0.02) weights, zero biases, unit gains",
          "[init_gpt][model][init][c:init_gpt.shapes][c:init_gpt.values][c:init_gpt.seeded]") {
    const GptConfig c{64, 16, 32, 4, 2};
    const GptParams<float> p = wb::init_gpt<float>(c, 1234);
    REQUIRE(p.blocks.size() == 2);
    WB_CHECK_SHAPE(p.wte, (wb::Shape{64, 32}), "wte is [V, D]");
    WB_CHECK_SHAPE(p.wpe, (wb::Shape{16, 32}), "wpe is [T_max, D]");
    WB_CHECK_SHAPE(p.blocks[1].w_q, (wb::Shape{32, 32}), "w_q is [D, D] ([out, in])");
    WB_CHECK_SHAPE(p.blocks[1].w_fc, (wb::Shape{128, 32}), "w_fc is [4D, D] ([out, in])");
    WB_CHECK_SHAPE(p.blocks[1].b_fc, (wb::Shape{128}), "b_fc is [4D]");
    WB_CHECK_SHAPE(p.blocks[1].w_proj, (wb::Shape{32, 128}), "w_proj is [D, 4D] ([out, in])");
    WB_CHECK_SHAPE(p.blocks[0].ln2_g, (wb::Shape{32}), "ln2_g is [D]");
    WB_CHECK_SHAPE(p.ln_f_b, (wb::Shape{32}), "ln_f_b is [D]");
    WB_CHECK_SHAPE(p.lm_head, (wb::Shape{64, 32}), "lm_head is [V, D] (no bias, not tied)");

    // Sample statistics of the 2048 entries of wte and of lm_head: mean 0, std 0.02. With 2048
    // draws the sample std is within 0.02 · (1 ± 0.05) with probability > 0.99.
    for (const Mat<float>* w : {&p.wte, &p.lm_head, &p.blocks[0].w_v}) {
        double sum = 0, sq = 0;
        for (float v : *w) sum += v, sq += double(v) * v;
        const double n = static_cast<double>(w->size());
        const double mean = sum / n, std = std::sqrt(sq / n - mean * mean);
        INFO("sample mean " << mean << ", std " << std
                            << "; expected N(0, 0.02²): normal_distribution(0.0, 0.02), the "
                               "second argument is the standard deviation, not the variance");
        CHECK(std::fabs(mean) < 0.003);
        CHECK(std::fabs(std - 0.02) < 0.002);
    }
    const xt::xtensor<float, 1> zeros = xt::zeros<float>({32});
    const xt::xtensor<float, 1> ones = xt::ones<float>({32});
    WB_CHECK_CLOSE(p.blocks[0].b_q, zeros, 0.0, "biases start at 0");
    WB_CHECK_CLOSE(p.blocks[1].b_proj, zeros, 0.0, "biases start at 0");
    WB_CHECK_CLOSE(p.blocks[0].ln1_b, zeros, 0.0, "LayerNorm shifts (beta) start at 0");
    WB_CHECK_CLOSE(p.blocks[0].ln1_g, ones, 0.0, "LayerNorm gains (gamma) start at 1, not 0");
    WB_CHECK_CLOSE(p.ln_f_g, ones, 0.0, "LayerNorm gains (gamma) start at 1, not 0");

    const GptParams<float> again = wb::init_gpt<float>(c, 1234);
    const GptParams<float> other = wb::init_gpt<float>(c, 1235);
    INFO("the same seed must give the same model; another seed another model");
    CHECK(wbtest::identical(p, again));
    CHECK_FALSE(wbtest::identical(p, other));
}

TEST_CASE(
    "parameters lists every tensor in the documented order, with names, shapes and "
    "pointers into the model",
    "[model][parameters][c:parameters.order][c:parameters.point-into-model]"
    "[c:parameters.names-shapes][c:parameters.const-same]") {
    const GptConfig c{5, 4, 8, 2, 2};
    GptParams<float> p = wb::init_gpt<float>(c, 7);
    const std::vector<wb::ParamRef<float>> refs = wb::parameters(p);
    // model.hpp's list, written out for L = 2.
    std::vector<std::string> names = {"wte", "wpe"};
    for (std::string l : {"0", "1"})
        for (const char* n : {"ln1_g", "ln1_b", "w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o",
                              "b_o", "ln2_g", "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj"})
            names.push_back("blocks." + l + "." + n);
    names.insert(names.end(), {"ln_f_g", "ln_f_b", "lm_head"});
    INFO("expected 2 + 16·L + 3 = 37 tensors, got " << refs.size());
    REQUIRE(refs.size() == names.size());

    std::size_t i = 0;
    wbtest::each_tensor(p, [&](const std::string& name, auto& t) {
        const wb::ParamRef<float>& r = refs[i++];
        INFO("entry " << i - 1 << ": expected '" << name << "' " << wb::shape_str(t.shape())
                      << ", got '" << r.name << "' " << wb::shape_str(r.shape)
                      << "\nhint: names and order are those of model.hpp; data must point at "
                         "the model's own tensor (t.data()), not at a copy");
        CHECK(r.name == names[i - 1]);
        CHECK(r.name == name);
        CHECK(r.shape == wbtest::shape_of(t));
        CHECK(r.size == t.size());
        CHECK(r.data == t.data());
    });

    const GptParams<float>& cp = p;
    const std::vector<wb::ParamRef<const float>> crefs = wb::parameters(cp);
    REQUIRE(crefs.size() == refs.size());
    for (std::size_t k = 0; k < refs.size(); ++k) {
        INFO("the read-only overload must list the same tensors: entry " << k);
        CHECK(crefs[k].name == refs[k].name);
        CHECK(crefs[k].data == refs[k].data);
    }
}

TEST_CASE("zeros_like and zero_grad set every tensor to 0, not only the first",
          "[zeros_like][zero_grad][model][grads][c:zeros_like.zeros][c:zero_grad.every-tensor]") {
    const GptConfig c{5, 4, 8, 2, 2};
    const GptParams<float> p = wbtest::random_params<float>(c, 3);
    GptParams<float> z = wb::zeros_like(p);
    wbtest::each_pair(z, p, [](const std::string& name, const auto& zt, const auto& pt) {
        INFO("zeros_like: tensor " << name);
        WB_CHECK_SHAPE(zt, wbtest::shape_of(pt), "zeros_like keeps every shape");
        WB_CHECK_CLOSE(zt, xt::zeros_like(pt), 0.0, "zeros_like fills every tensor with 0");
    });

    GptParams<float> grads = p;  // nonzero everywhere
    wb::zero_grad(grads);
    wbtest::each_pair(grads, p, [](const std::string& name, const auto& g, const auto& pt) {
        INFO("zero_grad: tensor " << name);
        WB_CHECK_SHAPE(g, wbtest::shape_of(pt), "zero_grad keeps every shape");
        WB_CHECK_CLOSE(g, xt::zeros_like(pt), 0.0,
                       "zero_grad must zero EVERY tensor of parameters(grads): a loop that "
                       "stops early leaves old gradients to be added to the next step's");
    });
}

// ---- next-token targets (§15) ------------------------------------------------------------------

TEST_CASE("shift_for_next_token: inputs are tokens[:, :-1], targets are tokens[:, 1:]",
          "[shift_for_next_token][model][shift][c:shift_for_next_token.shift]"
          "[c:shift_for_next_token.bad-shape]") {
    // §15: inputs "我 喜欢 小猫", targets "喜欢 小猫 <next>": the same tokens, one step later.
    const TokenIds tokens = {{10, 11, 12, 13, 14}, {20, 21, 22, 23, 24}};
    const wb::NextToken s = wb::shift_for_next_token(tokens);
    const TokenIds inputs = {{10, 11, 12, 13}, {20, 21, 22, 23}};
    const TokenIds targets = {{11, 12, 13, 14}, {21, 22, 23, 24}};
    WB_CHECK_SHAPE(s.inputs, (wb::Shape{2, 4}), "inputs are [B, T] with T = tokens' length - 1");
    WB_CHECK_SHAPE(s.targets, (wb::Shape{2, 4}), "targets are [B, T]");
    WB_CHECK_CLOSE(s.inputs, inputs, 0.0, "inputs = tokens[:, :-1]: every token but the last");
    WB_CHECK_CLOSE(s.targets, targets, 0.0,
                   "targets = tokens[:, 1:]: target t is the token AFTER input t. Targets equal "
                   "to the inputs teach the model to copy its input, not to predict");

    const wb::NextToken one = wb::shift_for_next_token(TokenIds{{7, 8}});
    WB_CHECK_CLOSE(one.inputs, (TokenIds{{7}}), 0.0, "tokens [1, 2] give inputs [[7]]");
    WB_CHECK_CLOSE(one.targets, (TokenIds{{8}}), 0.0, "tokens [1, 2] give targets [[8]]");

    WB_CHECK_THROWS(wb::ShapeError, wb::shift_for_next_token(TokenIds{{7}, {8}}),
                    "one token per sequence leaves nothing to predict", "wb::shift_for_next_token",
                    "[2, 1]");
    WB_CHECK_THROWS(wb::ShapeError, wb::shift_for_next_token(TokenIds::from_shape({0, 5})),
                    "an empty batch is an error", "wb::shift_for_next_token", "[0, 5]");
}

// ---- forward and backward against PyTorch --------------------------------------------------

TEST_CASE("the loss and logits of a tiny GPT match PyTorch, with ignored targets",
          "[gpt_forward][gpt_logits][model][forward][golden][c:gpt_forward.recipe]"
          "[c:gpt_forward.ignore-index][c:gpt_logits.logits]") {
    GoldenCase k("8-training/model_tiny.txt");  // V=11 T_max=8 D=12 H=3 L=2, B=2 T=5
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(k.params, k.config, k.inputs, k.targets, -1, cache);
    WB_CHECK_CLOSE(cache.logits, k.g.tensor<2>("logits"), kModelTol, kForwardHint);
    const xt::xtensor<float, 0> got = loss, want = k.g.scalar("loss");
    WB_CHECK_CLOSE(got, want, kModelTol,
                   std::string(kForwardHint) +
                       ". If only the loss differs: the mean is over the 8 valid targets, not "
                       "all 10 (two are ignore_index = -1)");
    const Mat<float> logits = wb::gpt_logits(k.params, k.config, k.inputs);
    WB_CHECK_SHAPE(logits, (wb::Shape{10, 11}), "gpt_logits returns [B·T, V]");
    WB_CHECK_CLOSE(logits, k.g.tensor<2>("logits"), kModelTol,
                   "gpt_logits must compute the same logits as gpt_forward");
}

TEST_CASE("GPT-2's own weights give GPT-2's logits: the tanh GELU, tied output weights",
          "[gpt_forward][gpt_logits][model][forward][golden][gpt2][c:gpt_forward.gelu-kind]"
          "[c:gpt_logits.gpt2]") {
    // A tiny GPT-2 (V=13 T_max=16 D=8 H=2 L=2) in GPT-2's names and layout; its logits come
    // from GPT-2's own forward in PyTorch (tools/goldens/gpt2_model.py).
    const Golden g("8-training/gpt2_tiny.txt");
    const GptConfig config = wbtest::gpt2_golden_config(g);  // gelu = Gelu::tanh
    const GptParams<float> params = wbtest::gpt2_golden_params(g, config);
    const TokenIds inputs = wbtest::golden_ids(g, "inputs");  // [2, 6]
    const char* hint =
        "GPT-2's FFN is GELU's tanh form: with config.gelu == Gelu::tanh the block runs chapter "
        "7's gelu_tanh, not gelu (the exact form misses these logits by up to 7e-4)";
    WB_CHECK_CLOSE(wb::gpt_logits(params, config, inputs), g.tensor<2>("logits"), kModelTol, hint);
    wb::GptCache<float> cache;
    wb::gpt_forward(params, config, inputs, inputs, -1, cache);
    WB_CHECK_CLOSE(cache.logits, g.tensor<2>("logits"), kModelTol,
                   std::string(hint) + " (gpt_forward as well as gpt_logits)");
}

TEST_CASE("gpt_backward refuses a tanh-GELU model before it writes a gradient",
          "[gpt_backward][model][backward][gpt2][c:gpt_backward.exact-gelu-only]") {
    GoldenCase k("8-training/model_tiny.txt");
    wb::GptCache<float> cache;
    wb::gpt_forward(k.params, k.config, k.inputs, k.targets, -1, cache);
    GptConfig tanh = k.config;
    tanh.gelu = wb::Gelu::tanh;
    GptParams<float> grads = wbtest::zero_params(k.params);
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_backward(k.params, tanh, cache, grads),
                    "layers.hpp's gelu_backward is the exact form's derivative: a model with "
                    "config.gelu == Gelu::tanh is refused, not trained with the wrong gradient",
                    "wb::gpt_backward", "gelu = tanh");
    wbtest::each_tensor(grads, [](const std::string& name, const auto& t) {
        INFO("hint: the refusal comes before anything is written; " << name << " changed");
        CHECK(xt::all(xt::equal(t, 0.0f)));
    });
}

TEST_CASE("every parameter's gradient of a tiny GPT matches PyTorch's autograd",
          "[gpt_backward][model][backward][golden][c:gpt_backward.gradients]") {
    GoldenCase k("8-training/model_tiny.txt");
    wb::GptCache<float> cache;
    wb::gpt_forward(k.params, k.config, k.inputs, k.targets, -1, cache);
    GptParams<float> grads = wbtest::zero_params(k.params);
    wb::gpt_backward(k.params, k.config, cache, grads);
    check_all_gradients(k.g, grads, k.config.L);
}

TEST_CASE("a full-length batch (T = T_max) matches PyTorch: loss, logits and gradients",
          "[gpt_forward][gpt_backward][model][backward][golden][c:gpt_forward.recipe]"
          "[c:gpt_backward.gradients]") {
    GoldenCase k("8-training/model_full_length.txt");  // V=7 T_max=4 D=8 H=2 L=1, B=3 T=4
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(k.params, k.config, k.inputs, k.targets, -1, cache);
    const xt::xtensor<float, 0> got = loss, want = k.g.scalar("loss");
    WB_CHECK_CLOSE(got, want, kModelTol, kForwardHint);
    WB_CHECK_CLOSE(cache.logits, k.g.tensor<2>("logits"), kModelTol,
                   std::string(kForwardHint) + " (T = T_max: every row of wpe is used)");
    GptParams<float> grads = wbtest::zero_params(k.params);
    wb::gpt_backward(k.params, k.config, cache, grads);
    check_all_gradients(k.g, grads, k.config.L);
}

TEST_CASE("whole-model gradient check: every parameter, learned positions and RoPE",
          "[gpt_backward][model][backward][gradcheck][c:gpt_backward.gradients]") {
    // V=5 T_max=4 D=8 H=2 L=2, B=2 T=3, one target ignored. gpt_backward runs in float (the
    // model is made of chapters 2–7's float functions); the slope it must match is measured
    // on the same weights in double, by central differences of forward_double.hpp's GPT (the
    // recipe of model.hpp written out). The float backward's own rounding is about 1e-6 of
    // each gradient's scale, so the bound here is 1e-4 instead of 1e-6; a wrong formula shows
    // at 1e-2 or more.
    constexpr double kFloatBackwardBound = 1e-4;
    for (const wb::Positions kind : {wb::Positions::learned, wb::Positions::rope}) {
        const GptConfig c{5, 4, 8, 2, 2, kind};
        INFO("positions = " << wb::positions_name(kind));
        const GptParams<float> p = wbtest::random_params<float>(c, 11, 0.5);
        const TokenIds inputs = {{1, 4, 1}, {0, 2, 3}};
        const TokenIds targets = {{4, 1, -1}, {2, 3, 3}};
        wb::GptCache<float> cache;
        wb::gpt_forward(p, c, inputs, targets, -1, cache);
        GptParams<float> grads = wbtest::zero_params(p);
        wb::gpt_backward(p, c, cache, grads);

        GptParams<double> pd = wbtest::random_params<double>(c, 11, 0.5);  // shapes; values below
        wbtest::each_pair(pd, p, [](const std::string&, auto& to, const auto& from) {
            std::copy(from.begin(), from.end(), to.begin());
        });
        const std::function<double()> loss = [&] {
            return wbtest::gpt_loss(pd, c, inputs, targets, -1);
        };
        const xt::xtensor<double, 0> got = wb::gpt_forward(p, c, inputs, targets, -1, cache);
        const xt::xtensor<double, 0> spec = loss();
        WB_CHECK_CLOSE(got, spec, 1e-5,
                       std::string("the float model's loss differs from the recipe of model.hpp "
                                   "computed in double on the same weights") +
                           (kind == wb::Positions::rope
                                ? ": with RoPE, turn q and k (not v) after the head split, "
                                  "offset 0, base kRopeBase, and add no position table"
                                : ""));
        wbtest::each_pair(pd, grads, [&](const std::string& name, auto& x, const auto& dx) {
            const wbtest::GradCheck r = wbtest::gradcheck(loss, x, dx);
            WB_REPORT(r.failure(
                "d loss / d " + name, kFloatBackwardBound,
                "the backward of the whole model disagrees with the slope of the loss at " + name +
                    ". The first wrong tensor in backward order (lm_head, ln_f, the last "
                    "block ... wte) is usually where the mistake is" +
                    (kind == wb::Positions::rope
                         ? "; with RoPE, dq and dk must be turned back (rope_backward) before "
                           "the q and k projections' backward"
                         : "")));
        });
    }
}

TEST_CASE(
    "the model is chapters 2–7 composed: gpt_logits equals embed, add_positions, "
    "block_forward, layer_norm and lm_head on the same weights",
    "[gpt_logits][gpt_forward][model][forward][chapters][c:gpt_logits.logits]"
    "[c:gpt_forward.recipe]") {
    // Built here from the chapters' own functions (chapter 7's block_forward calls chapter 5's
    // self_attention), so a mistake in any earlier chapter shows up in the model too.
    const GptConfig c{7, 6, 8, 2, 2};
    const GptParams<float> p = wbtest::random_params<float>(c, 5, 0.3);
    const TokenIds inputs = {{1, 4, 1, 6}, {0, 2, 3, 5}};
    const std::size_t B = 2, T = 4;
    const float eps = static_cast<float>(wb::kGptLayerNormEps);
    wb::Tensor3 x = wb::add_positions(wb::embed(p.wte, inputs), p.wpe, 0);
    for (const wb::GptBlock<float>& w : p.blocks) {
        wb::BlockParams bp;
        bp.ln1 = wb::LayerNormParams{w.ln1_g, w.ln1_b, eps};
        bp.attn = wb::MhaParams{c.H, wb::Linear{w.w_q, w.b_q}, wb::Linear{w.w_k, w.b_k},
                                wb::Linear{w.w_v, w.b_v}, wb::Linear{w.w_o, w.b_o}};
        bp.ln2 = wb::LayerNormParams{w.ln2_g, w.ln2_b, eps};
        bp.ffn = wb::FfnParams{wb::Linear{w.w_fc, w.b_fc}, wb::Linear{w.w_proj, w.b_proj}};
        x = wb::block_forward(x, bp, wb::causal_mask(T)).output;
    }
    const wb::Tensor3 composed =
        wb::lm_head(wb::layer_norm(x, wb::LayerNormParams{p.ln_f_g, p.ln_f_b, eps}),
                    wb::Linear{p.lm_head, wb::Tensor1::from_shape({0})});  // [B, T, V]
    const Mat<float> logits = wb::gpt_logits(p, c, inputs);                // [B·T, V]
    REQUIRE(logits.shape(0) == B * T);
    Mat<float> expected = Mat<float>::from_shape({B * T, c.V});  // the same rows, flattened
    std::copy(composed.begin(), composed.end(), expected.begin());
    WB_CHECK_CLOSE(logits, expected, 1e-5,
                   "gpt_logits must be chapters 2–7 put together: embed, add_positions (learned), "
                   "L Pre-LN blocks (layer_norm, the q/k/v/o Linears split into H heads, sdpa "
                   "with causal_mask, the FFN with gelu, both residuals), the final layer_norm "
                   "and lm_head. Call those functions rather than writing the layers again");
}
TEST_CASE("gradients accumulate across backward calls until zero_grad",
          "[gpt_backward][zero_grad][model][grads][c:gpt_backward.accumulates]"
          "[c:zero_grad.every-tensor]") {
    GoldenCase k("8-training/model_full_length.txt");
    wb::GptCache<float> cache;
    wb::gpt_forward(k.params, k.config, k.inputs, k.targets, -1, cache);
    GptParams<float> once = wbtest::zero_params(k.params);
    wb::gpt_backward(k.params, k.config, cache, once);
    GptParams<float> twice = wbtest::zero_params(k.params);
    wb::gpt_backward(k.params, k.config, cache, twice);
    wb::gpt_backward(k.params, k.config, cache, twice);
    // §21.7: PyTorch adds every backward into .grad; two calls without zero_grad give 2×.
    wbtest::each_pair(twice, once, [](const std::string& name, const auto& g2, const auto& g1) {
        INFO("tensor " << name);
        WB_CHECK_CLOSE(g2, xt::eval(2.0f * g1), 1e-6,
                       "gpt_backward must ADD into grads (+=), not overwrite them: two "
                       "backward calls give twice the gradient (§21.7)");
    });
    wb::zero_grad(twice);
    wb::gpt_backward(k.params, k.config, cache, twice);
    wbtest::each_pair(twice, once, [](const std::string& name, const auto& g, const auto& g1) {
        INFO("tensor " << name);
        WB_CHECK_CLOSE(g, g1, 1e-6,
                       "after zero_grad one backward gives the gradient of one step: did "
                       "zero_grad miss this tensor?");
    });
}

// ---- properties of the model ---------------------------------------------------------------

TEST_CASE(
    "logits are causal: changing input token j leaves every earlier position's logits "
    "unchanged",
    "[gpt_logits][model][causal][c:gpt_logits.logits]") {
    const GptConfig c{9, 6, 8, 2, 2};
    const GptParams<float> p = wbtest::random_params<float>(c, 21);
    const TokenIds inputs = {{1, 5, 2, 8, 0, 3}, {4, 4, 7, 1, 6, 2}};
    const Mat<float> original = wb::gpt_logits(p, c, inputs);
    REQUIRE(wbtest::shape_of(original) == (wb::Shape{12, 9}));
    for (std::size_t j = 0; j < 6; ++j) {
        TokenIds changed = inputs;
        changed(0, j) = (changed(0, j) + 3) % 9;
        changed(1, j) = (changed(1, j) + 5) % 9;
        const Mat<float> after = wb::gpt_logits(p, c, changed);
        for (std::size_t b = 0; b < 2; ++b) {
            const double before_j = max_abs_diff_rows(original, after, b * 6, b * 6 + j);
            const double at_j = max_abs_diff_rows(original, after, b * 6 + j, b * 6 + j + 1);
            INFO("sequence " << b << ", token " << j << " changed: positions < " << j
                             << " moved by " << before_j
                             << " (must be 0: the causal mask hides the future, §15, §18)");
            CHECK(before_j <= 1e-6);
            INFO("position " << j << " itself moved by " << at_j
                             << " (must change: position j reads its own token)");
            CHECK(at_j > 1e-3);
        }
    }
}

TEST_CASE("positions matter: one token repeated gives different logits at each position",
          "[gpt_logits][model][positions][c:gpt_logits.logits]") {
    // Without wpe, attention over identical tokens is identical at every position (each reads
    // an average of copies of itself), so every row of logits would be the same.
    const GptConfig c{6, 5, 8, 2, 1};
    const GptParams<float> p = wbtest::random_params<float>(c, 31);
    const Mat<float> logits = wb::gpt_logits(p, c, constant_ids(1, 5, 3));
    REQUIRE(wbtest::shape_of(logits) == (wb::Shape{5, 6}));
    for (std::size_t t = 1; t < 5; ++t) {
        double diff = 0.0;
        for (std::size_t v = 0; v < 6; ++v)
            diff = std::max(diff, std::fabs(double(logits(t, v)) - double(logits(0, v))));
        INFO("logits at position " << t << " differ from position 0 by " << diff
                                   << "\nhint: the input is x = wte[id] + wpe[t]: did you add "
                                      "the position embedding row t?");
        CHECK(diff > 1e-3);
    }
}

TEST_CASE(
    "with zero attention and FFN outputs every block is the identity (the residual) and "
    "logits = LN_f(wte[id] + wpe[t]) · lm_headᵀ (hand-computed)",
    "[gpt_logits][gpt_forward][model][residual][c:gpt_logits.logits]"
    "[c:gpt_forward.recipe]") {
    // V=3 T_max=2 D=2 H=1 L=1; w_o, b_o, w_proj, b_proj = 0, so each half-block adds 0 and
    // the stream passes through unchanged. By hand (LayerNorm eps 1e-5, gamma [1, 2],
    // beta [0.5, -0.5], lm_head rows [1, 0], [0, 1], [1, 1]):
    //   position 0, token 0: x = [1, 0] + [0, 0] = [1, 0]
    //     xhat = [0.5, -0.5] / sqrt(0.25 + 1e-5); y = xhat·gamma + beta; logits = lm_head·y
    //   position 1, token 2: x = [2, -1] + [0, 4] = [2, 3]  (wpe flips the sign of xhat)
    // computed with Python's math module.
    const GptConfig c{3, 2, 2, 1, 1};
    GptParams<float> p = wbtest::random_params<float>(c, 41);
    p.wte = {{1, 0}, {0, 1}, {2, -1}};
    p.wpe = {{0, 0}, {0, 4}};
    p.blocks[0].w_o.fill(0);
    p.blocks[0].b_o.fill(0);
    p.blocks[0].w_proj.fill(0);
    p.blocks[0].b_proj.fill(0);
    p.ln_f_g = {1, 2};
    p.ln_f_b = {0.5f, -0.5f};
    p.lm_head = {{1, 0}, {0, 1}, {1, 1}};
    const Mat<float> logits = wb::gpt_logits(p, c, TokenIds{{0, 2}});
    const Mat<float> expected = {{1.49998000059998f, -2.49996000119996f, -0.99998000059998f},
                                 {-0.49998000059998f, 1.49996000119996f, 0.99998000059998f}};
    WB_CHECK_CLOSE(logits, expected, 1e-5,
                   "each block must ADD its output to the stream (x = x + attn(...), x = x + "
                   "FFN(...)): all-zero logits rows [0.5, -0.5, 0] mean the residual was "
                   "dropped. Row 1 with the signs flipped means wpe was not added; values "
                   "far from ±1.5 mean the final LayerNorm ln_f was skipped");
}

TEST_CASE("a fresh model predicts about uniformly: its loss is about log V",
          "[init_gpt][gpt_forward][model][init][c:init_gpt.values][c:gpt_forward.recipe]") {
    // init_gpt's weights are N(0, 0.02²): the logits are nearly 0, so every token has
    // probability ≈ 1/V and the cross entropy ≈ log V = log 50 = 3.912 (math.log(50)).
    const GptConfig c{50, 8, 16, 2, 2};
    const GptParams<float> p = wb::init_gpt<float>(c, 5);
    const wb::NextToken s = wb::shift_for_next_token(
        TokenIds{{3, 14, 15, 9, 26, 5, 35, 8, 9}, {2, 7, 18, 28, 18, 28, 45, 9, 0}});
    wb::GptCache<float> cache;
    const float loss = wb::gpt_forward(p, c, s.inputs, s.targets, -1, cache);
    INFO("loss " << loss
                 << ", expected ≈ log 50 = 3.912 within 0.05. Much larger: are the "
                    "weights N(0, 0.02²) and the logits used raw (no softmax before the cross "
                    "entropy)?");
    CHECK(std::fabs(loss - 3.912023f) < 0.05f);
}

// ---- errors ----------------------------------------------------------------------------------

TEST_CASE("bad configs, T > T_max, out-of-range ids and mismatched shapes raise clear errors",
          "[init_gpt][gpt_forward][gpt_logits][model][errors][c:init_gpt.bad-config]"
          "[c:gpt_forward.too-long][c:gpt_logits.value-errors][c:gpt_forward.bad-id]"
          "[c:gpt_forward.shape-errors][c:gpt_logits.shape-errors]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::init_gpt<float>(GptConfig{11, 8, 10, 3, 2}, 0),
                    "H must divide D", "wb::init_gpt", "D = 10", "H = 3");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_gpt<float>(GptConfig{0, 8, 12, 3, 2}, 0),
                    "a vocabulary of 0 tokens is not a model", "wb::init_gpt", "V = 0");

    const GptConfig c{11, 8, 12, 3, 2};
    const GptParams<float> p = wb::init_gpt<float>(c, 1);
    wb::GptCache<float> cache;
    const TokenIds nine = constant_ids(1, 9, 2);
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_forward(p, c, nine, nine, -1, cache),
                    "wpe has T_max rows: a longer sequence has no position embedding",
                    "wb::gpt_forward", "T = 9", "T_max = 8");
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_logits(p, c, nine),
                    "wpe has T_max rows: a longer sequence has no position embedding",
                    "wb::gpt_logits", "T = 9", "T_max = 8");

    TokenIds bad = constant_ids(2, 4, 1);
    bad(1, 2) = 11;  // == V
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_forward(p, c, bad, constant_ids(2, 4, 1), -1, cache),
                    "ids are in [0, V)", "wb::gpt_forward", "11", "[1, 2]");
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_logits(p, c, bad), "ids are in [0, V)",
                    "wb::gpt_logits", "11");
    bad(1, 2) = -3;
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_logits(p, c, bad), "ids are in [0, V)",
                    "wb::gpt_logits", "-3");

    TokenIds bad_target = constant_ids(2, 4, 1);
    bad_target(0, 3) = 12;
    WB_CHECK_THROWS(wb::ValueError,
                    wb::gpt_forward(p, c, constant_ids(2, 4, 1), bad_target, -1, cache),
                    "a target is in [0, V) or ignore_index", "wb::gpt_forward", "12");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::gpt_forward(p, c, constant_ids(2, 4, 1), constant_ids(2, 3, 1), -1, cache),
                    "one target per input", "wb::gpt_forward", "[2, 3]", "[2, 4]");
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_logits(p, c, TokenIds::from_shape({2, 0})),
                    "an empty batch is an error", "wb::gpt_logits", "[2, 0]");

    const GptConfig other{11, 8, 16, 4, 2};  // params are D = 12
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_logits(p, other, constant_ids(1, 3, 1)),
                    "the params must be the model the config describes", "wb::gpt_logits", "wte",
                    "[11, 12]", "[11, 16]");
}

TEST_CASE("init_gpt draws its weights from a normal law, not a uniform one of the same std",
          "[init_gpt][model][init][c:init_gpt.values]") {
    // blocks.0.w_fc [256, 64]: 16 384 draws. Under N(0, 0.02²) 4.55 % of them lie beyond
    // 2σ = 0.04 and about 44 beyond 3σ = 0.06; a uniform law of the same std (on ±0.0346) has
    // none there, yet its mean and std pass the statistics of the first init_gpt test.
    const GptConfig c{8, 4, 64, 4, 1};
    const GptParams<float> p = wb::init_gpt<float>(c, 99);
    std::size_t beyond_2sigma = 0, beyond_3sigma = 0;
    for (float v : p.blocks[0].w_fc) {
        beyond_2sigma += std::fabs(v) > 0.04f;
        beyond_3sigma += std::fabs(v) > 0.06f;
    }
    const double fraction = double(beyond_2sigma) / double(p.blocks[0].w_fc.size());
    INFO(
        "hint: std::normal_distribution(0.0, 0.02), not a uniform_real_distribution scaled to "
        "the same standard deviation");
    INFO("fraction beyond 2σ = 0.04: " << fraction << " (N(0, 0.02²): 0.0455)");
    INFO("values beyond 3σ = 0.06: " << beyond_3sigma << " (about 44 expected)");
    CHECK(fraction > 0.035);
    CHECK(fraction < 0.056);
    CHECK(beyond_3sigma > 10);
}

TEST_CASE("gpt_forward refuses targets of the inputs' size but not of their shape",
          "[gpt_forward][model][errors][c:gpt_forward.shape-errors]") {
    const GptConfig c{11, 8, 12, 3, 2};
    const GptParams<float> p = wb::init_gpt<float>(c, 1);
    wb::GptCache<float> cache;
    INFO(
        "hint: compare targets' whole shape with the inputs', not only their number of ids: "
        "[3, 2] targets for [2, 3] inputs would pair each position with another's next token");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::gpt_forward(p, c, constant_ids(2, 3, 1), constant_ids(3, 2, 1), -1, cache),
                    "targets must have the inputs' shape [B, T]", "wb::gpt_forward", "[3, 2]",
                    "[2, 3]");
    CHECK_FALSE(cache.has_loss);
}

TEST_CASE("gpt_forward rejects an empty batch and a config whose H does not divide D",
          "[gpt_forward][model][errors][c:gpt_forward.shape-errors]") {
    const GptConfig c{11, 8, 12, 3, 2};
    const GptParams<float> p = wb::init_gpt<float>(c, 1);
    wb::GptCache<float> cache;
    const TokenIds none = TokenIds::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_forward(p, c, none, none, -1, cache),
                    "T = 0 leaves nothing to predict: refuse it, do not return a loss of 0/0",
                    "wb::gpt_forward", "[2, 0]");
    const TokenIds no_batch = TokenIds::from_shape({0, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_forward(p, c, no_batch, no_batch, -1, cache),
                    "B = 0 leaves nothing to predict", "wb::gpt_forward", "[0, 3]");
    const GptConfig uneven{11, 8, 12, 5, 2};
    WB_CHECK_THROWS(
        wb::ShapeError,
        wb::gpt_forward(p, uneven, constant_ids(1, 3, 1), constant_ids(1, 3, 1), -1, cache),
        "check the config first: H = 5 does not divide D = 12", "wb::gpt_forward", "H = 5",
        "D = 12");
    INFO("a rejected forward must not leave a loss that gpt_backward could use");
    CHECK_FALSE(cache.has_loss);
}

TEST_CASE("gpt_backward needs the loss of a gpt_forward and grads shaped like the model",
          "[gpt_backward][model][errors][c:gpt_backward.no-loss][c:gpt_backward.param-shapes]") {
    const GptConfig c{7, 4, 8, 2, 1};
    const GptParams<float> p = wb::init_gpt<float>(c, 2);
    GptParams<float> grads = wbtest::zero_params(p);
    const wb::GptCache<float> empty;
    WB_CHECK_THROWS(wb::ValueError, wb::gpt_backward(p, c, empty, grads),
                    "there is nothing to differentiate before a forward", "wb::gpt_backward",
                    "loss");
    wb::GptCache<float> cache;
    wb::gpt_forward(p, c, constant_ids(1, 3, 2), constant_ids(1, 3, 4), -1, cache);
    GptParams<float> wrong = grads;
    wrong.lm_head = Mat<float>::from_shape({7, 9});
    WB_CHECK_THROWS(wb::ShapeError, wb::gpt_backward(p, c, cache, wrong),
                    "grads must have the model's shapes (use zeros_like)", "wb::gpt_backward",
                    "lm_head", "[7, 9]");
}
