#include "7-blocks/blocks.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "2-embedding/embedding.hpp"
#include "5-mha/mha.hpp"
#include "golden.hpp"

namespace {

using wb::BlockParams;
using wb::LayerNormParams;
using wb::Tensor1;
using wb::Tensor2;
using wb::Tensor3;
using wb::Tensor4;

// ---- independent references ------------------------------------------------------------------
// The expected values of the composed checks come from these: plain loops in double (LayerNorm,
// GELU) and the functions of chapters 2 and 5 (linear, self_attention), never from this
// chapter's code.

// LayerNorm of every token over its D features, correction 0, eps inside the sqrt.
Tensor3 ref_layer_norm(const Tensor3& x, const Tensor1& gamma, const Tensor1& beta, double eps) {
    const std::size_t B = x.shape(0), T = x.shape(1), D = x.shape(2);
    Tensor3 y = Tensor3::from_shape({B, T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            double mu = 0.0, var = 0.0;
            for (std::size_t i = 0; i < D; ++i) mu += x(b, t, i);
            mu /= double(D);
            for (std::size_t i = 0; i < D; ++i) var += (x(b, t, i) - mu) * (x(b, t, i) - mu);
            var /= double(D);
            for (std::size_t i = 0; i < D; ++i)
                y(b, t, i) = static_cast<float>(
                    (x(b, t, i) - mu) / std::sqrt(var + eps) * gamma(i) + beta(i));
        }
    return y;
}

Tensor3 ref_layer_norm(const Tensor3& x, const LayerNormParams& p) {
    return ref_layer_norm(x, p.gamma, p.beta, p.eps);
}

// The exact GELU, x Φ(x), with std::erf in double.
Tensor3 ref_gelu(const Tensor3& x) {
    Tensor3 y = x;
    for (auto& v : y)
        v = static_cast<float>(0.5 * v * (1.0 + std::erf(double(v) / std::sqrt(2.0))));
    return y;
}

// down(gelu(up(x))) with chapter 2's linear.
Tensor3 ref_ffn(const Tensor3& x, const wb::FfnParams& p) {
    return wb::linear(ref_gelu(wb::linear(x, p.up)), p.down);
}

struct Ref {
    Tensor3 output;
    Tensor4 weights;
};

// Pre-LN: y = x + MHA(LN1(x)), z = y + FFN(LN2(y)).
Ref ref_pre_ln(const Tensor3& x, const BlockParams& p, const std::optional<wb::Mask>& mask) {
    const wb::MhaResult a = wb::self_attention(ref_layer_norm(x, p.ln1), p.attn, mask);
    const Tensor3 y = x + a.output;
    return {Tensor3(y + ref_ffn(ref_layer_norm(y, p.ln2), p.ffn)), a.weights};
}

// Post-LN: y = LN1(x + MHA(x)), z = LN2(y + FFN(y)).
Ref ref_post_ln(const Tensor3& x, const BlockParams& p, const std::optional<wb::Mask>& mask) {
    const wb::MhaResult a = wb::self_attention(x, p.attn, mask);
    const Tensor3 y = ref_layer_norm(Tensor3(x + a.output), p.ln1);
    return {ref_layer_norm(Tensor3(y + ref_ffn(y, p.ffn)), p.ln2), a.weights};
}

// ---- parameters built here, independent of init_block ----------------------------------------

wb::Linear random_linear(std::size_t out, std::size_t in, unsigned seed) {
    wb::Linear l;
    l.weight = wbtest::randn<Tensor2>({out, in}, seed) / std::sqrt(static_cast<float>(in));
    l.bias = wbtest::randn<Tensor1>({out}, seed + 1000) * 0.1f;
    return l;
}

// gamma around 1, beta around 0, both non-trivial so that a swapped or missing one shows.
LayerNormParams random_ln(std::size_t D, unsigned seed) {
    LayerNormParams p;
    p.gamma = 1.0f + 0.3f * wbtest::randn<Tensor1>({D}, seed);
    p.beta = 0.2f * wbtest::randn<Tensor1>({D}, seed + 1);
    return p;
}

BlockParams random_block(std::size_t D, std::size_t H, unsigned seed) {
    BlockParams p;
    p.ln1 = random_ln(D, seed);
    p.attn.H = H;
    p.attn.w_q = random_linear(D, D, seed + 2);
    p.attn.w_k = random_linear(D, D, seed + 3);
    p.attn.w_v = random_linear(D, D, seed + 4);
    p.attn.w_o = random_linear(D, D, seed + 5);
    p.ln2 = random_ln(D, seed + 6);
    p.ffn.up = random_linear(4 * D, D, seed + 8);
    p.ffn.down = random_linear(D, 4 * D, seed + 9);
    return p;
}

// allowed(0, i, j) = j <= i, built by hand (chapter 6 is not needed here).
wb::Mask causal(std::size_t T) {
    wb::Mask m{xt::xtensor<bool, 3>::from_shape({1, T, T})};
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m.allowed(0, i, j) = j <= i;
    return m;
}

Tensor3 rows(std::initializer_list<float> values) {  // one token [1, 1, D]
    Tensor3 x = Tensor3::from_shape({1, 1, values.size()});
    std::copy(values.begin(), values.end(), x.begin());
    return x;
}

Tensor1 vec(std::initializer_list<float> values) {
    Tensor1 v = Tensor1::from_shape({values.size()});
    std::copy(values.begin(), values.end(), v.begin());
    return v;
}

LayerNormParams ln_params(std::size_t D, float eps = 1e-5f) {
    LayerNormParams p;
    p.gamma = xt::ones<float>({D});
    p.beta = xt::zeros<float>({D});
    p.eps = eps;
    return p;
}

template <class A, class B>
double max_diff(const A& a, const B& b) {
    REQUIRE(wbtest::shape_of(a) == wbtest::shape_of(b));
    double m = 0.0;
    auto ib = b.begin();
    for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib)
        m = std::max(m, std::fabs(double(*ia) - double(*ib)));
    return m;
}

// Positions [0, j) and [j, T) of a [B, T, D] tensor.
Tensor3 before(const Tensor3& x, std::size_t j) {
    return xt::view(x, xt::all(), xt::range(0, j), xt::all());
}
Tensor3 from(const Tensor3& x, std::size_t j) {
    return xt::view(x, xt::all(), xt::range(j, x.shape(1)), xt::all());
}

// Parameters of a block stored in a golden file (tools/goldens/chapter7.py), names prefixed.
BlockParams golden_block(const wbtest::Golden& g, const std::string& pre, std::size_t H) {
    auto lin = [&](const char* w, const char* b) {
        return wb::Linear{g.tensor<2>(pre + w), g.tensor<1>(pre + b)};
    };
    BlockParams p;
    p.ln1 = {g.tensor<1>(pre + "ln1_gamma"), g.tensor<1>(pre + "ln1_beta"), 1e-5f};
    p.attn.H = H;
    p.attn.w_q = lin("w_q", "b_q");
    p.attn.w_k = lin("w_k", "b_k");
    p.attn.w_v = lin("w_v", "b_v");
    p.attn.w_o = lin("w_o", "b_o");
    p.ln2 = {g.tensor<1>(pre + "ln2_gamma"), g.tensor<1>(pre + "ln2_beta"), 1e-5f};
    p.ffn.up = lin("up_w", "up_b");
    p.ffn.down = lin("down_w", "down_b");
    return p;
}

wb::Mask golden_mask(const wbtest::Golden& g) {
    const Tensor3 a = g.tensor<3>("allowed");  // ours: 1 = may read
    wb::Mask m{xt::xtensor<bool, 3>::from_shape(a.shape())};
    std::transform(a.begin(), a.end(), m.allowed.begin(), [](float v) { return v != 0.0f; });
    return m;
}

const char* kLnHint =
    "LayerNorm: per token, over the LAST axis (D) only: mean, variance dividing by D "
    "(correction 0, not D - 1), (x - mean) / sqrt(var + eps), then * gamma + beta";
const char* kPreHint =
    "Pre-LN: y = x + MHA(LN1(x)), z = y + FFN(LN2(y)): normalise the input of each sub-layer, "
    "add the sub-layer's result to the UN-normalised stream (did you apply LN after the "
    "addition, drop a residual, or use ln1 where ln2 belongs?)";

}  // namespace

// ---- LayerNorm (§5, §21.4, §21.6) -------------------------------------------------------------

TEST_CASE(
    "layer_norm of [1, 2, 3, 4] is [-1.3416355, -0.4472118, 0.4472118, 1.3416355] "
    "(variance divides by D, eps 1e-5)",
    "[layer_norm][c:layer_norm.biased-variance]") {
    // torch.nn.LayerNorm(4)(torch.tensor([[[1., 2., 3., 4.]]])): mean 2.5, variance 1.25 (/ D).
    // With the variance of torch.var's default (correction 1, / (D - 1) = 1.6667) the values
    // would be [-1.1618915, -0.3872972, 0.3872972, 1.1618915].
    const Tensor3 y = wb::layer_norm(rows({1, 2, 3, 4}), ln_params(4));
    WB_CHECK_CLOSE(y, rows({-1.34163547f, -0.44721186f, 0.44721180f, 1.34163547f}), 1e-5,
                   "LayerNorm divides the sum of squared deviations by D (correction 0); "
                   "[-1.16, -0.39, 0.39, 1.16] means you divided by D - 1 (torch.var's default)");
}

TEST_CASE("layer_norm puts eps inside the square root, with the variance",
          "[layer_norm][c:layer_norm.eps-inside]") {
    // torch.nn.LayerNorm(4, eps=0.5)([1, 2, 3, 4]) = (x - 2.5) / sqrt(1.25 + 0.5).
    // eps on the standard deviation, (x - 2.5) / (sqrt(1.25) + 0.5), would give
    // [-0.9270510, -0.3090170, 0.3090170, 0.9270510].
    const Tensor3 y = wb::layer_norm(rows({1, 2, 3, 4}), ln_params(4, 0.5f));
    WB_CHECK_CLOSE(y, rows({-1.13389349f, -0.37796450f, 0.37796450f, 1.13389349f}), 1e-5,
                   "eps belongs inside the square root: (x - mean) / sqrt(var + eps), not "
                   "(x - mean) / (sqrt(var) + eps), and it must be the eps of the parameters");
    // A nearly constant token, where eps dominates: x = [0, 0, 0, 2^-8] has variance 2.86e-6.
    // torch.nn.LayerNorm(4)(...) = [-0.27230918 ×3, 0.81692755]; eps on the std gives
    // [-0.5739570 ×3, 1.7218710], no eps at all [-0.5773503 ×3, 1.7320509].
    const Tensor3 t = wb::layer_norm(rows({0, 0, 0, 0.00390625f}), ln_params(4));
    WB_CHECK_CLOSE(t, rows({-0.27230918f, -0.27230918f, -0.27230918f, 0.81692755f}), 1e-5,
                   "for a nearly constant token eps matters: add it to the variance inside "
                   "the square root (sqrt(var + eps)), not to the standard deviation");
}

TEST_CASE(
    "layer_norm gives every token mean 0 and variance 1 over its features before gamma "
    "and beta",
    "[layer_norm][c:layer_norm.normalised]"
    "[c:layer_norm.empty-batch]") {
    // x = 3 N(0, 1) + 5 per element: variance ~9 per token, so var / (var + eps) = 1 - 1e-6.
    // Tolerance 1e-4: float32 sums of 16 values of size ~5 round at ~1e-6 relative.
    const Tensor3 x = wbtest::randn<Tensor3>({3, 5, 16}, 71) * 3.0f + 5.0f;
    const Tensor3 y = wb::layer_norm(x, ln_params(16));
    WB_CHECK_SHAPE(y, (wb::Shape{3, 5, 16}), "layer_norm keeps the shape [B, T, D]");
    WB_CHECK_SHAPE(wb::layer_norm(Tensor3::from_shape({0, 5, 16}), ln_params(16)),
                   (wb::Shape{0, 5, 16}), "an empty batch gives an empty result, not an error");
    INFO("x [3, 0, 16] (T = 0): expected an empty [3, 0, 16] result, not an exception");
    WB_CHECK_SHAPE(wb::layer_norm(Tensor3::from_shape({3, 0, 16}), ln_params(16)),
                   (wb::Shape{3, 0, 16}),
                   "no tokens (T = 0) gives an empty result too: only D == 0 is an error");
    // The token whose mean or variance is furthest off.
    double worst = -1.0, worst_mu = 0.0, worst_var = 1.0;
    std::size_t worst_b = 0, worst_t = 0;
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t t = 0; t < 5; ++t) {
            double mu = 0.0, var = 0.0;
            for (std::size_t i = 0; i < 16; ++i) mu += y(b, t, i);
            mu /= 16.0;
            for (std::size_t i = 0; i < 16; ++i) var += (y(b, t, i) - mu) * (y(b, t, i) - mu);
            var /= 16.0;
            const double off = std::max(std::fabs(mu), std::fabs(var - 1.0));
            if (!(off <= worst)) {
                worst = off, worst_mu = mu, worst_var = var, worst_b = b, worst_t = t;
            }
        }
    INFO("token [" << worst_b << ", " << worst_t << "]: mean over D = " << worst_mu
                   << " (expected 0), variance over D (correction 0) = " << worst_var
                   << " (expected 1)");
    INFO(
        "hint: variance 0.9375 = 15/16 means you divided by D - 1; a mean or variance far off "
        "means the statistics were taken over the wrong axis (T or B instead of D), or "
        "xtensor's lazy keep_dims reducer was broadcast unevaluated");
    CHECK(worst < 1e-4);
}

TEST_CASE(
    "layer_norm normalises each token on its own: changing another token changes "
    "nothing here",
    "[layer_norm][c:layer_norm.per-token]") {
    // Tokens of very different scales: statistics over T or B (a batch norm) would mix them.
    Tensor3 x = wbtest::randn<Tensor3>({2, 4, 6}, 72);
    for (std::size_t t = 0; t < 4; ++t)
        xt::view(x, xt::all(), t, xt::all()) *= static_cast<float>(t + 1) * 2.0f;
    const LayerNormParams p = random_ln(6, 73);
    const Tensor3 y = wb::layer_norm(x, p);
    WB_CHECK_CLOSE(y, ref_layer_norm(x, p), 1e-5, kLnHint);

    // Change token 2 of sequence 0 only: every other token's output must stay bit-for-bit.
    Tensor3 changed = x;
    xt::view(changed, 0, 2, xt::all()) = wbtest::randn<Tensor1>({6}, 74) * 10.0f;
    const Tensor3 yc = wb::layer_norm(changed, p);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 4; ++t) {
            if (b == 0 && t == 2) continue;
            const Tensor1 before_change = xt::view(y, b, t, xt::all());
            const Tensor1 after_change = xt::view(yc, b, t, xt::all());
            INFO("token [" << b << ", " << t << "] changed when only token [0, 2] did");
            WB_CHECK_CLOSE(after_change, before_change, 0.0,
                           "LayerNorm must use only the D features of each token: a mean or "
                           "variance over T (the other tokens) or B (the batch, a batch norm) "
                           "lets one token change another");
        }
    const Tensor1 own_before = xt::view(y, 0, 2, xt::all());
    const Tensor1 own_after = xt::view(yc, 0, 2, xt::all());
    INFO("hint: the changed token's own output must change");
    CHECK(max_diff(own_before, own_after) > 1e-2);
}

TEST_CASE(
    "layer_norm stays normalised for tokens with a large common offset (variance from the "
    "deviations)",
    "[layer_norm][c:layer_norm.normalised]") {
    // Residual streams carry features of size ~1000. x = 1000 + N(0, 1): in float, x^2 ~ 1e6 has
    // a spacing of 0.06, so mean(x^2) - mean^2 loses the variance (~1) to rounding, while the
    // mean of the squared deviations (x - mean)^2 keeps it (torch's LayerNorm is exact here).
    const Tensor3 x = wbtest::randn<Tensor3>({2, 4, 16}, 75) + 1000.0f;
    const LayerNormParams p = ln_params(16);
    INFO(
        "hint: take the variance as the mean of (x - mean)^2, not as mean(x^2) - mean^2: the "
        "second form cancels catastrophically in float when the features share a large offset");
    WB_CHECK_CLOSE(wb::layer_norm(x, p), ref_layer_norm(x, p), 1e-3, kLnHint);
}

TEST_CASE("layer_norm scales by gamma and shifts by beta per feature (hand-computed)",
          "[layer_norm][c:layer_norm.affine]") {
    // nn.LayerNorm(4) with weight [2, -1, 0.5, 1], bias [0, 1, -2, 0.5] on [1, 2, 3, 4]:
    // torch gives [-2.68327093, 1.44721186, -1.77639413, 1.84163547].
    LayerNormParams p = ln_params(4);
    p.gamma = vec({2, -1, 0.5f, 1});
    p.beta = vec({0, 1, -2, 0.5f});
    WB_CHECK_CLOSE(wb::layer_norm(rows({1, 2, 3, 4}), p),
                   rows({-2.68327093f, 1.44721186f, -1.77639413f, 1.84163547f}), 1e-5,
                   "multiply the normalised value by gamma[i] THEN add beta[i], feature by "
                   "feature (did you swap gamma and beta, or forget one?)");
}

TEST_CASE(
    "layer_norm matches torch.nn.LayerNorm with non-trivial gamma and beta, eps 1e-5 "
    "and 0.1",
    "[layer_norm][golden][c:layer_norm.affine]"
    "[c:layer_norm.eps-inside]") {
    const wbtest::Golden g("7-blocks/layer_norm.txt");
    LayerNormParams p{g.tensor<1>("gamma"), g.tensor<1>("beta"), 1e-5f};
    WB_CHECK_CLOSE(wb::layer_norm(g.tensor<3>("x"), p), g.tensor<3>("output"),
                   wbtest::golden_tolerance, kLnHint);
    p.eps = 0.1f;
    WB_CHECK_CLOSE(wb::layer_norm(g.tensor<3>("x"), p), g.tensor<3>("output_eps01"),
                   wbtest::golden_tolerance,
                   "with eps = 0.1 the place of eps shows: sqrt(var + eps), using p.eps");
}

TEST_CASE("init_layer_norm starts like nn.LayerNorm(D): gamma 1, beta 0, eps 1e-5",
          "[layer_norm][init][c:init_layer_norm.defaults]") {
    const LayerNormParams p = wb::init_layer_norm(5);
    WB_CHECK_SHAPE(p.gamma, (wb::Shape{5}), "gamma is [D]");
    WB_CHECK_SHAPE(p.beta, (wb::Shape{5}), "beta is [D]");
    WB_CHECK_CLOSE(p.gamma, Tensor1(xt::ones<float>({5})), 0.0,
                   "nn.LayerNorm's weight starts at 1 (a plain normalisation)");
    WB_CHECK_CLOSE(p.beta, Tensor1(xt::zeros<float>({5})), 0.0, "nn.LayerNorm's bias starts at 0");
    INFO("eps = " << p.eps << ", expected 1e-5 (nn.LayerNorm's default)");
    CHECK(p.eps == 1e-5f);
}

// ---- RMSNorm (§5's variant) -------------------------------------------------------------------

TEST_CASE("rms_norm divides by the root mean square and subtracts no mean (hand-computed)",
          "[rms_norm][c:rms_norm.formula]") {
    // x / sqrt(mean(x^2) + eps) * gamma in torch (float32):
    //   [1, 2, 3, 4], gamma [2, -1, 0.5, 1], eps 1e-5 -> [0.73029625, -0.73029625, 0.54772222, 1.46059251]
    //   (subtracting the mean first, as LayerNorm does, would give [-2.683, 0.447, 0.224, 1.342])
    //   [0.5, -1, 2, 0], gamma 1, eps 0.5 -> [0.37139067, -0.74278134, 1.48556268, 0]
    //   (eps on the rms instead: [0.30383244, -0.60766488, 1.21532977, 0])
    WB_CHECK_CLOSE(wb::rms_norm(rows({1, 2, 3, 4}), vec({2, -1, 0.5f, 1})),
                   rows({0.73029625f, -0.73029625f, 0.54772222f, 1.46059251f}), 1e-5,
                   "RMSNorm does not subtract the mean and has no beta: x / sqrt(mean(x^2) + eps) "
                   "* gamma");
    WB_CHECK_CLOSE(wb::rms_norm(rows({0.5f, -1, 2, 0}), vec({1, 1, 1, 1}), 0.5f),
                   rows({0.37139067f, -0.74278134f, 1.48556268f, 0.0f}), 1e-5,
                   "eps goes inside the square root, with the mean of squares, and must be the "
                   "eps argument");
    // Per token: two tokens of different sizes are normalised separately.
    Tensor3 two = Tensor3::from_shape({1, 2, 2});
    two(0, 0, 0) = 3;
    two(0, 0, 1) = 4;  // rms = sqrt(12.5)
    two(0, 1, 0) = 0.3f;
    two(0, 1, 1) = -0.4f;  // rms = sqrt(0.125)
    Tensor3 expected = Tensor3::from_shape({1, 2, 2});
    // python: 3/sqrt(12.5+1e-5), 4/sqrt(12.5+1e-5), 0.3/sqrt(0.125+1e-5), -0.4/sqrt(0.125+1e-5)
    expected(0, 0, 0) = 0.84852780f;
    expected(0, 0, 1) = 1.13137040f;
    expected(0, 1, 0) = 0.84849420f;
    expected(0, 1, 1) = -1.13132560f;
    WB_CHECK_CLOSE(wb::rms_norm(two, vec({1, 1})), expected, 1e-5,
                   "the mean of squares is taken per token over the last axis, not over T");
}

TEST_CASE("rms_norm of an empty batch or no tokens is an empty result, not an error",
          "[rms_norm][c:rms_norm.empty-batch]") {
    // Nothing to normalise is not an error: only D == 0 (a token without features) is.
    const Tensor1 gamma = vec({1, 1, 1, 1});
    INFO("x [0, 3, 4] (B = 0): expected an empty [0, 3, 4] result, not an exception");
    WB_CHECK_SHAPE(wb::rms_norm(Tensor3::from_shape({0, 3, 4}), gamma), (wb::Shape{0, 3, 4}),
                   "B = 0 gives an empty [B, T, D] result");
    INFO("x [2, 0, 4] (T = 0): expected an empty [2, 0, 4] result, not an exception");
    WB_CHECK_SHAPE(wb::rms_norm(Tensor3::from_shape({2, 0, 4}), gamma), (wb::Shape{2, 0, 4}),
                   "T = 0 gives an empty [B, T, D] result");
}

// ---- GELU (§5, §21.6) -------------------------------------------------------------------------

TEST_CASE(
    "gelu is the exact erf form of nn.GELU(), gelu_tanh the tanh approximation "
    "(hand-computed)",
    "[gelu][c:gelu.exact-erf][c:gelu_tanh.tanh-form]") {
    const Tensor3 x = rows({-3, -1, -0.5f, 0, 0.5f, 1, 2, 3});
    // torch.nn.GELU()(x)
    const Tensor3 exact = rows({-0.00404987f, -0.15865529f, -0.15426879f, 0.0f, 0.34573120f,
                                0.84134471f, 1.95449996f, 2.99595022f});
    // torch.nn.GELU(approximate='tanh')(x)
    const Tensor3 approx = rows({-0.00363743f, -0.15880799f, -0.15428600f, 0.0f, 0.34571400f,
                                 0.84119201f, 1.95459771f, 2.99636269f});
    WB_CHECK_CLOSE(
        wb::gelu(x), exact, 1e-6,
        "gelu is x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), the EXACT form "
        "(nn.GELU()'s default); the tanh formula is gelu_tanh (they differ by up to 4e-4)");
    WB_CHECK_CLOSE(wb::gelu_tanh(x), approx, 1e-6,
                   "gelu_tanh is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); check the "
                   "constants and the cube");
    // The two really differ here, so the checks above tell them apart: at x = -3 by 4.1e-4.
    INFO("the exact and tanh GELU differ by 4.1e-4 at x = -3 (torch); tolerance 1e-6 sees it");
    CHECK(std::fabs(exact(0, 0, 0) - approx(0, 0, 0)) > 4e-4f);
}

TEST_CASE("gelu and gelu_tanh match torch on 40 values from -5 to 5",
          "[gelu][golden][c:gelu.exact-erf][c:gelu_tanh.tanh-form]") {
    const wbtest::Golden g("7-blocks/gelu.txt");
    const Tensor3 x = g.tensor<3>("x");
    WB_CHECK_CLOSE(wb::gelu(x), g.tensor<3>("gelu"), wbtest::golden_tolerance,
                   "nn.GELU() is the exact erf form: 0.5 x (1 + erf(x / sqrt(2)))");
    WB_CHECK_CLOSE(wb::gelu_tanh(x), g.tensor<3>("gelu_tanh"), wbtest::golden_tolerance,
                   "nn.GELU(approximate='tanh')");
}

// ---- the FFN (§5, §21.6) ----------------------------------------------------------------------

TEST_CASE("ffn matches nn.Sequential(nn.Linear(D, 4D), nn.GELU(), nn.Linear(4D, D))",
          "[ffn][golden][c:ffn.formula]") {
    const wbtest::Golden g("7-blocks/ffn.txt");
    const wb::FfnParams p{{g.tensor<2>("up_w"), g.tensor<1>("up_b")},
                          {g.tensor<2>("down_w"), g.tensor<1>("down_b")}};
    const Tensor3 x = g.tensor<3>("x");
    const Tensor3 y = wb::ffn(x, p);
    WB_CHECK_SHAPE(y, (wb::Shape{2, 3, 8}), "the FFN maps [B, T, D] back to [B, T, D]");
    WB_CHECK_CLOSE(y, g.tensor<3>("output"), wbtest::golden_tolerance,
                   "FFN(x) = down(GELU(up(x))): the exact GELU between the two Linear layers "
                   "(no activation makes the FFN one linear map; the tanh GELU is off by ~1e-4)");
    // The same with chapter 2's linear and a hand-written erf GELU.
    WB_CHECK_CLOSE(y, ref_ffn(x, p), 1e-5, "FFN(x) = linear(gelu(linear(x, up)), down)");
}

TEST_CASE("ffn works on every position on its own: permuting the tokens permutes the outputs",
          "[ffn][c:ffn.position-wise]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 5, 6}, 81);
    const wb::FfnParams p{random_linear(24, 6, 82), random_linear(6, 24, 83)};
    const Tensor3 y = wb::ffn(x, p);
    // Reverse the tokens of every sequence.
    Tensor3 xr = x;
    for (std::size_t t = 0; t < 5; ++t)
        xt::view(xr, xt::all(), t, xt::all()) = xt::view(x, xt::all(), 4 - t, xt::all());
    const Tensor3 yr = wb::ffn(xr, p);
    for (std::size_t t = 0; t < 5; ++t) {
        const Tensor2 got = xt::view(yr, xt::all(), t, xt::all());
        const Tensor2 expected = xt::view(y, xt::all(), 4 - t, xt::all());
        INFO("output row " << t << " of the reversed input must be row " << 4 - t);
        WB_CHECK_CLOSE(got, expected, 1e-6,
                       "the FFN is position-wise: the same two layers on every token, no "
                       "mixing along T (Linear transforms only the last axis)");
    }
    // One token alone gives the same row as inside the sequence.
    const Tensor3 one = xt::view(x, xt::range(1, 2), xt::range(3, 4), xt::all());
    const Tensor3 row = xt::view(y, xt::range(1, 2), xt::range(3, 4), xt::all());
    WB_CHECK_CLOSE(wb::ffn(one, p), row, 1e-6, "a token's FFN output depends on that token only");
    WB_CHECK_CLOSE(y, ref_ffn(x, p), 1e-5, "FFN(x) = down(GELU(up(x)))");
}

TEST_CASE("init_ffn and init_block give the FFN a hidden width of 4D, with the header's seeds",
          "[ffn][init][c:init_ffn.seeds][c:init_ffn.shapes]"
          "[c:init_block.seeds][c:init_block.hidden-4d]") {
    const wb::FfnParams f = wb::init_ffn(6, 10, 90);
    const wb::Linear up = wb::init_linear(6, 10, true, 90), down = wb::init_linear(10, 6, true, 91);
    WB_CHECK_SHAPE(f.up.weight, (wb::Shape{10, 6}), "up is D -> hidden: weight [hidden, D]");
    WB_CHECK_SHAPE(f.down.weight, (wb::Shape{6, 10}), "down is hidden -> D: weight [D, hidden]");
    WB_CHECK_CLOSE(f.up.weight, up.weight, 0.0, "up = init_linear(D, hidden, true, seed)");
    WB_CHECK_CLOSE(f.up.bias, up.bias, 0.0, "up has a bias [hidden]");
    WB_CHECK_CLOSE(f.down.weight, down.weight, 0.0,
                   "down = init_linear(hidden, D, true, seed + 1)");
    WB_CHECK_CLOSE(f.down.bias, down.bias, 0.0, "down has a bias [D]");

    const BlockParams b = wb::init_block(8, 2, 40);
    WB_CHECK_SHAPE(b.ffn.up.weight, (wb::Shape{32, 8}),
                   "a GPT block's FFN widens to 4D: up.weight is [4D, D] = [32, 8]");
    WB_CHECK_SHAPE(b.ffn.down.weight, (wb::Shape{8, 32}), "down.weight is [D, 4D] = [8, 32]");
    const wb::Linear bup = wb::init_linear(8, 32, true, 44);
    WB_CHECK_CLOSE(b.ffn.up.weight, bup.weight, 0.0, "init_block: ffn = init_ffn(D, 4D, seed + 4)");
    const wb::MhaParams attn = wb::init_mha(8, 2, true, 40);
    INFO("init_block(8, 2, 40).attn.H = " << b.attn.H);
    CHECK(b.attn.H == 2);
    WB_CHECK_CLOSE(b.attn.w_q.weight, attn.w_q.weight, 0.0,
                   "init_block: attn = init_mha(D, H, true, seed)");
    WB_CHECK_CLOSE(b.attn.w_o.bias, attn.w_o.bias, 0.0, "init_block: attention with biases");
    for (const LayerNormParams* ln : {&b.ln1, &b.ln2}) {
        WB_CHECK_CLOSE(ln->gamma, Tensor1(xt::ones<float>({8})), 0.0,
                       "ln1, ln2 = init_layer_norm(D)");
        WB_CHECK_CLOSE(ln->beta, Tensor1(xt::zeros<float>({8})), 0.0,
                       "ln1, ln2 = init_layer_norm(D)");
    }
}

TEST_CASE("swiglu_ffn is down(silu(gate(x)) * up(x)) (hand-computed)",
          "[swiglu][c:swiglu_ffn.formula]") {
    // torch: g = x @ Wg.T + bg, u = x @ Wu.T, (F.silu(g) * u) @ Wd.T + bd with the numbers
    // below gives [[0.30443987, 0.76271343], [-22.003582, 42.951988]].
    // Swapping gate and up gives [[-5.7487, 8.5146], ...]; no SiLU [[-10, 16.6], ...].
    Tensor3 x = Tensor3::from_shape({1, 2, 2});
    x(0, 0, 0) = 1;
    x(0, 0, 1) = -2;
    x(0, 1, 0) = 0.5f;
    x(0, 1, 1) = 3;
    wb::SwiGluParams p;
    p.gate.weight = {{1, 0.5f}, {-1, 1}, {0, 2}};
    p.gate.bias = vec({0.5f, 0, -1});
    p.up.weight = {{2, 0}, {0, -1}, {1, 1}};
    p.up.bias = Tensor1::from_shape({0});
    p.down.weight = {{1, 1, -1}, {0.5f, -1, 2}};
    p.down.bias = vec({0, 0.1f});
    Tensor3 expected = Tensor3::from_shape({1, 2, 2});
    expected(0, 0, 0) = 0.30443987f;
    expected(0, 0, 1) = 0.76271343f;
    expected(0, 1, 0) = -22.003582f;
    expected(0, 1, 1) = 42.951988f;
    WB_CHECK_CLOSE(wb::swiglu_ffn(x, p), expected, 1e-5,
                   "SwiGLU: silu(gate(x)) element-wise times up(x), then down; silu(a) = a / "
                   "(1 + exp(-a)) goes on the GATE branch, not on up");
}

TEST_CASE("swiglu_ffn works on every position on its own: a token alone gives its own row",
          "[swiglu][c:swiglu_ffn.position-wise]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 4, 6}, 91);
    const wb::SwiGluParams p{random_linear(8, 6, 92), random_linear(8, 6, 93),
                             random_linear(6, 8, 94)};
    const Tensor3 y = wb::swiglu_ffn(x, p);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 4; ++t) {
            const Tensor3 one = xt::view(x, xt::range(b, b + 1), xt::range(t, t + 1), xt::all());
            const Tensor3 row = xt::view(y, xt::range(b, b + 1), xt::range(t, t + 1), xt::all());
            INFO("token [" << b << ", " << t << "] run alone must give row [" << b << ", " << t
                           << "] of the whole batch's output");
            WB_CHECK_CLOSE(wb::swiglu_ffn(one, p), row, 1e-6,
                           "SwiGLU is position-wise: gate, up and down transform only the last "
                           "axis, so no token reads another");
        }
}

// ---- the block (§5) ---------------------------------------------------------------------------

TEST_CASE(
    "a block whose attention and FFN outputs are zero is the identity: the residuals "
    "carry x through",
    "[block][residual][c:block_forward.residual]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 4, 8}, 101);
    BlockParams p = random_block(8, 2, 110);
    const wb::Mask mask = causal(4);
    BlockParams zero = p;
    zero.attn.w_o.weight.fill(0.0f);
    zero.attn.w_o.bias.fill(0.0f);
    zero.ffn.down.weight.fill(0.0f);
    zero.ffn.down.bias.fill(0.0f);
    WB_CHECK_CLOSE(wb::block_forward(x, zero, mask).output, x, 0.0,
                   "with both sub-layers giving 0, z = x + 0 + 0 = x: the input must be added "
                   "back (residual) and must NOT itself be normalised in a Pre-LN block");

    // Only attention silenced: z = x + FFN(LN2(x)) (chapter 2's linear, erf GELU, loops LN).
    BlockParams no_attn = p;
    no_attn.attn.w_o.weight.fill(0.0f);
    no_attn.attn.w_o.bias.fill(0.0f);
    WB_CHECK_CLOSE(wb::block_forward(x, no_attn, mask).output,
                   Tensor3(x + ref_ffn(ref_layer_norm(x, p.ln2), p.ffn)), 1e-5,
                   "with attention giving 0, y = x and z = x + FFN(LN2(x)): the FFN branch adds "
                   "its result to the stream (did you drop the second residual?)");

    // Only the FFN silenced: z = x + MHA(LN1(x)) (chapter 5's self_attention).
    BlockParams no_ffn = p;
    no_ffn.ffn.down.weight.fill(0.0f);
    no_ffn.ffn.down.bias.fill(0.0f);
    const Tensor3 expected = x + wb::self_attention(ref_layer_norm(x, p.ln1), p.attn, mask).output;
    WB_CHECK_CLOSE(wb::block_forward(x, no_ffn, mask).output, expected, 1e-5,
                   "with the FFN giving 0, z = x + MHA(LN1(x)): attention reads LN1(x) and its "
                   "output is ADDED to x (did you drop the first residual?)");
}

TEST_CASE("block_forward is the Pre-LN formula y = x + MHA(LN1(x)), z = y + FFN(LN2(y))",
          "[block][c:block_forward.pre-ln][c:block_forward.sub-layers]"
          "[c:block_forward.returns]") {
    // Expected from ref_pre_ln: LayerNorm in double loops, chapter 5's self_attention,
    // chapter 2's linear and an erf GELU.
    const Tensor3 x = wbtest::randn<Tensor3>({2, 5, 8}, 121);
    const BlockParams p = random_block(8, 2, 130);
    const wb::Mask mask = causal(5);
    const wb::BlockResult r = wb::block_forward(x, p, mask);
    const Ref expected = ref_pre_ln(x, p, mask);
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5,
                   "the weights are those of self_attention(LN1(x), attn, mask): attention "
                   "reads the NORMALISED input, with the mask");
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5, kPreHint);
    // Without a mask too (the block must pass the mask on, not invent one).
    const Ref open = ref_pre_ln(x, p, std::nullopt);
    WB_CHECK_CLOSE(wb::block_forward(x, p).output, open.output, 1e-5,
                   "without a mask every token reads every token");
}

TEST_CASE(
    "post_ln_block_forward is y = LN1(x + MHA(x)), z = LN2(y + FFN(y)), and differs "
    "from Pre-LN",
    "[block][post-ln][c:post_ln_block_forward.post-ln]"
    "[c:post_ln_block_forward.normalised-output]"
    "[c:post_ln_block_forward.returns]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 5, 8}, 141);
    const BlockParams p = random_block(8, 2, 150);
    const wb::Mask mask = causal(5);
    const wb::BlockResult post = wb::post_ln_block_forward(x, p, mask);
    const Ref expected = ref_post_ln(x, p, mask);
    WB_CHECK_CLOSE(post.weights, expected.weights, 1e-5,
                   "Post-LN attention reads x itself (no LayerNorm in front)");
    WB_CHECK_CLOSE(post.output, expected.output, 1e-5,
                   "Post-LN: add the sub-layer's result to the stream first, THEN normalise "
                   "the sum (ln1 after attention, ln2 after the FFN)");
    const wb::BlockResult pre = wb::block_forward(x, p, mask);
    const double d = max_diff(pre.output, post.output);
    INFO("Pre-LN and Post-LN outputs differ by at most " << d << "; they must differ (> 0.1)");
    INFO("hint: the two wirings use the same parameters but are different functions");
    CHECK(d > 0.1);
    // With gamma = 1, beta = 0 the Post-LN output is normalised per token; Pre-LN's is not.
    BlockParams plain = p;
    plain.ln1 = ln_params(8);
    plain.ln2 = ln_params(8);
    const Tensor3 z = wb::post_ln_block_forward(x, plain, mask).output;
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 5; ++t) {
            double mu = 0.0;
            for (std::size_t i = 0; i < 8; ++i) mu += z(b, t, i);
            INFO("Post-LN output token ["
                 << b << ", " << t << "] has mean " << mu / 8.0
                 << "; the last step of a Post-LN block is LN2, so it must be ~0");
            CHECK(std::fabs(mu / 8.0) < 1e-4);
        }
}

TEST_CASE(
    "block_forward and post_ln_block_forward match torch (nn.MultiheadAttention, "
    "nn.LayerNorm, the FFN, nn.TransformerEncoderLayer)",
    "[block][golden][c:block_forward.pre-ln]"
    "[c:post_ln_block_forward.post-ln]") {
    const wbtest::Golden g("7-blocks/block.txt");
    const BlockParams p = golden_block(g, "", 2);
    const wb::Mask mask = golden_mask(g);
    const Tensor3 x = g.tensor<3>("x");
    const wb::BlockResult pre = wb::block_forward(x, p, mask);
    WB_CHECK_CLOSE(pre.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "torch's per-head weights of attention on LN1(x), causal");
    WB_CHECK_CLOSE(pre.output, g.tensor<3>("output"), wbtest::golden_tolerance, kPreHint);
    const wb::BlockResult post = wb::post_ln_block_forward(x, p, mask);
    WB_CHECK_CLOSE(post.weights, g.tensor<4>("post_weights"), wbtest::golden_tolerance,
                   "Post-LN attention reads x directly");
    WB_CHECK_CLOSE(post.output, g.tensor<3>("post_output"), wbtest::golden_tolerance,
                   "torch's nn.TransformerEncoderLayer(norm_first=False): LN1(x + MHA(x)), "
                   "then LN2(y + FFN(y))");
}

TEST_CASE("a block keeps the shapes: output [B, T, D], weights [B, H, T, T]",
          "[block][shapes][c:block_forward.returns]"
          "[c:post_ln_block_forward.returns]") {
    struct Case {
        std::size_t B, T, D, H;
    };
    for (const Case c : {Case{1, 1, 4, 1}, Case{2, 3, 8, 2}, Case{3, 6, 12, 4}}) {
        const Tensor3 x = wbtest::randn<Tensor3>({c.B, c.T, c.D}, 161);
        const BlockParams p = random_block(c.D, c.H, 170);
        INFO("B = " << c.B << ", T = " << c.T << ", D = " << c.D << ", H = " << c.H);
        const wb::BlockResult pre = wb::block_forward(x, p, causal(c.T));
        WB_CHECK_SHAPE(pre.output, (wb::Shape{c.B, c.T, c.D}),
                       "a block maps [B, T, D] to [B, T, D]");
        WB_CHECK_SHAPE(pre.weights, (wb::Shape{c.B, c.H, c.T, c.T}),
                       "the weights are every head's [B, H, T, T]");
        const wb::BlockResult post = wb::post_ln_block_forward(x, p, causal(c.T));
        WB_CHECK_SHAPE(post.output, (wb::Shape{c.B, c.T, c.D}), "Post-LN: [B, T, D]");
        WB_CHECK_SHAPE(post.weights, (wb::Shape{c.B, c.H, c.T, c.T}), "Post-LN: [B, H, T, T]");
    }
}

// ---- the stack (§2, §21.6) --------------------------------------------------------------------

TEST_CASE(
    "stack_forward runs the blocks in order, each on the previous output, then the final "
    "LayerNorm",
    "[stack][c:stack_forward.in-order]"
    "[c:stack_forward.final-norm]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 4, 8}, 181);
    const std::vector<BlockParams> blocks = {random_block(8, 2, 200), random_block(8, 4, 220),
                                             random_block(8, 1, 240)};
    const LayerNormParams final_norm = random_ln(8, 260);
    const wb::Mask mask = causal(4);
    const wb::StackResult r = wb::stack_forward(x, blocks, final_norm, mask);
    // Expected: the references, chained by hand.
    Tensor3 h = x;
    std::vector<Tensor4> weights;
    for (const BlockParams& b : blocks) {
        Ref out = ref_pre_ln(h, b, mask);
        h = out.output;
        weights.push_back(out.weights);
    }
    INFO("stack_forward returned " << r.weights.size() << " weight tensors, expected L = 3");
    REQUIRE(r.weights.size() == 3);
    for (std::size_t l = 0; l < 3; ++l) {
        INFO("block " << l << " (it has " << blocks[l].attn.H << " heads)");
        WB_CHECK_CLOSE(r.weights[l], weights[l], 1e-5,
                       "weights[l] come from block l, which reads the output of block l - 1 "
                       "(not x): apply the blocks in order and chain them");
    }
    WB_CHECK_CLOSE(r.output, ref_layer_norm(h, final_norm), 1e-5,
                   "output = final_norm(block_2(block_1(block_0(x)))): every block, in order, "
                   "then the final LayerNorm (did you skip it, or apply the blocks reversed?)");
}

TEST_CASE("stack_forward matches torch: two Pre-LN blocks then a final LayerNorm",
          "[stack][golden][c:stack_forward.in-order]"
          "[c:stack_forward.final-norm]") {
    const wbtest::Golden g("7-blocks/stack.txt");
    const std::vector<BlockParams> blocks = {golden_block(g, "l0_", 2), golden_block(g, "l1_", 2)};
    const LayerNormParams final_norm{g.tensor<1>("final_gamma"), g.tensor<1>("final_beta"), 1e-5f};
    const wb::StackResult r =
        wb::stack_forward(g.tensor<3>("x"), blocks, final_norm, golden_mask(g));
    REQUIRE(r.weights.size() == 2);
    WB_CHECK_CLOSE(r.weights[0], g.tensor<4>("weights_0"), wbtest::golden_tolerance,
                   "block 0 reads x");
    WB_CHECK_CLOSE(r.weights[1], g.tensor<4>("weights_1"), wbtest::golden_tolerance,
                   "block 1 reads block 0's output");
    WB_CHECK_CLOSE(r.output, g.tensor<3>("output"), wbtest::golden_tolerance,
                   "torch's ModuleList loop then nn.LayerNorm (= nn.TransformerEncoder with "
                   "norm_first layers and a final norm)");
}

TEST_CASE(
    "a stack of three blocks stays causal: changing token j leaves every output before j "
    "unchanged",
    "[stack][causal][c:stack_forward.same-mask]") {
    const std::size_t T = 6;
    const Tensor3 x = wbtest::randn<Tensor3>({2, T, 8}, 281);
    const std::vector<BlockParams> blocks = {random_block(8, 2, 300), random_block(8, 2, 320),
                                             random_block(8, 2, 340)};
    const LayerNormParams final_norm = random_ln(8, 360);
    const wb::Mask mask = causal(T);
    const Tensor3 y = wb::stack_forward(x, blocks, final_norm, mask).output;
    for (std::size_t j = 0; j < T; ++j) {
        Tensor3 changed = x;
        xt::view(changed, xt::all(), j, xt::all()) = wbtest::randn<Tensor2>({2, 8}, 400 + j) * 2.0f;
        const Tensor3 yc = wb::stack_forward(changed, blocks, final_norm, mask).output;
        INFO("token j = " << j << " changed (T = " << T << ", L = 3 blocks)");
        WB_CHECK_CLOSE(before(yc, j), before(y, j), 1e-6,
                       "outputs before j must not see token j through ANY of the L blocks: pass "
                       "the mask to every block, and keep every other step (LayerNorm, FFN) "
                       "within its own token");
        const double d = max_diff(from(yc, j), from(y, j));
        INFO("outputs at positions >= j changed by at most " << d);
        INFO("hint: they must change (> 1e-3): a stack that ignores its input is causal too");
        CHECK(d > 1e-3);
    }
}

TEST_CASE("stack_forward with no blocks is the final LayerNorm of x",
          "[stack][c:stack_forward.no-blocks]"
          "[c:stack_forward.final-norm]") {
    // Documented decision: an empty list is allowed, like an empty nn.ModuleList.
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 6}, 381);
    const LayerNormParams final_norm = random_ln(6, 382);
    const wb::StackResult r = wb::stack_forward(x, {}, final_norm);
    INFO("L = 0 must give no weights, got " << r.weights.size());
    CHECK(r.weights.empty());
    WB_CHECK_CLOSE(r.output, ref_layer_norm(x, final_norm), 1e-5,
                   "with L = 0 the output is final_norm(x): the final LayerNorm is always applied");
}

// ---- errors -----------------------------------------------------------------------------------

TEST_CASE("layer_norm rejects gamma or beta that are not [D], D == 0 and eps <= 0",
          "[layer_norm][errors][c:layer_norm.bad-shape]"
          "[c:layer_norm.bad-eps]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 4}, 1);
    LayerNormParams bad_gamma = ln_params(4);
    bad_gamma.gamma = xt::ones<float>({5});
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm(x, bad_gamma),
                    "gamma has one entry per feature: [D] = [4]", "wb::layer_norm", "gamma", "[5]",
                    "[4]");
    LayerNormParams bad_beta = ln_params(4);
    bad_beta.beta = xt::zeros<float>({3});
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm(x, bad_beta),
                    "beta has one entry per feature: [D] = [4]", "wb::layer_norm", "beta", "[3]");
    const Tensor3 empty = Tensor3::from_shape({2, 3, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm(empty, ln_params(0)),
                    "a token of D = 0 features has no mean", "wb::layer_norm", "[2, 3, 0]");
    WB_CHECK_THROWS(wb::ValueError, wb::layer_norm(x, ln_params(4, 0.0f)),
                    "eps must be > 0: with eps = 0 a constant token divides 0 by 0",
                    "wb::layer_norm", "eps = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::layer_norm(x, ln_params(4, -1.0f)), "eps must be > 0",
                    "wb::layer_norm", "eps = -1");
    WB_CHECK_THROWS(wb::ValueError, wb::layer_norm(x, ln_params(4, std::nanf(""))),
                    "a NaN eps is not > 0 either: test !(eps > 0), which is true for NaN",
                    "wb::layer_norm", "eps");
}

TEST_CASE("rms_norm rejects gamma that is not [D], D == 0 and eps <= 0",
          "[rms_norm][errors][c:rms_norm.bad-shape][c:rms_norm.bad-eps]") {
    const Tensor3 x = wbtest::randn<Tensor3>({1, 2, 4}, 2);
    WB_CHECK_THROWS(wb::ShapeError, wb::rms_norm(x, vec({1, 1, 1})), "gamma is [D] = [4]",
                    "wb::rms_norm", "gamma", "[3]", "[4]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::rms_norm(Tensor3::from_shape({1, 2, 0}), Tensor1::from_shape({0})),
                    "D = 0: no features to normalise", "wb::rms_norm", "[1, 2, 0]");
    WB_CHECK_THROWS(wb::ValueError, wb::rms_norm(x, vec({1, 1, 1, 1}), 0.0f), "eps must be > 0",
                    "wb::rms_norm", "eps = 0");
}

TEST_CASE("rms_norm rejects a negative or NaN eps, and Post-LN a bad LayerNorm eps",
          "[rms_norm][block][errors][c:rms_norm.bad-eps]"
          "[c:post_ln_block_forward.bad-params]"
          "[c:block_forward.bad-eps]") {
    // A negative eps can make ms + eps negative (sqrt gives NaN); a NaN eps fails every
    // comparison, so test !(eps > 0).
    const Tensor3 x = wbtest::randn<Tensor3>({1, 2, 4}, 2);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    WB_CHECK_THROWS(wb::ValueError, wb::rms_norm(x, vec({1, 1, 1, 1}), -1.0f), "eps must be > 0",
                    "wb::rms_norm", "eps = -1");
    WB_CHECK_THROWS(wb::ValueError, wb::rms_norm(x, vec({1, 1, 1, 1}), nan),
                    "a NaN eps is not > 0 either: test !(eps > 0), which is true for NaN",
                    "wb::rms_norm", "eps");
    const Tensor3 x8 = wbtest::randn<Tensor3>({2, 3, 8}, 4);
    BlockParams bad_eps = random_block(8, 2, 500);
    bad_eps.ln2.eps = nan;
    WB_CHECK_THROWS(wb::ValueError, wb::post_ln_block_forward(x8, bad_eps),
                    "Post-LN checks both LayerNorms' eps too", "wb::post_ln_block_forward",
                    "ln2.eps");
    WB_CHECK_THROWS(wb::ValueError, wb::block_forward(x8, bad_eps), "a NaN eps is not > 0",
                    "wb::block_forward", "ln2.eps");
}

TEST_CASE("init_layer_norm, init_ffn and init_block reject zero widths and D % H != 0",
          "[init][errors][c:init_layer_norm.zero-width]"
          "[c:init_ffn.zero-width][c:init_block.bad-heads]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::init_layer_norm(0), "D must be >= 1", "wb::init_layer_norm",
                    "D = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_ffn(0, 8, 1), "D must be >= 1", "wb::init_ffn",
                    "D = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_ffn(4, 0, 1), "hidden must be >= 1", "wb::init_ffn",
                    "hidden = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_block(8, 3, 1),
                    "8 features cannot be split into 3 heads: check D % H in init_block itself",
                    "wb::init_block", "D = 8", "H = 3");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_block(8, 0, 1), "H == 0 heads", "wb::init_block",
                    "H = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_block(0, 1, 1), "D == 0", "wb::init_block", "D = 0");
}

TEST_CASE("ffn and swiglu_ffn reject layers that do not fit x or each other",
          "[ffn][errors][c:ffn.bad-shape][c:swiglu_ffn.bad-shape]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 4}, 3);
    const wb::FfnParams good{random_linear(16, 4, 10), random_linear(4, 16, 11)};
    wb::FfnParams bad_up = good;
    bad_up.up = random_linear(16, 5, 12);
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(x, bad_up), "up reads the D = 4 features of x",
                    "wb::ffn", "up.weight", "[16, 5]");
    wb::FfnParams bad_down = good;
    bad_down.down = random_linear(4, 12, 13);
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(x, bad_down),
                    "down reads the hidden = 16 features of up: [D, hidden] = [4, 16]", "wb::ffn",
                    "down.weight", "[4, 12]", "[4, 16]");
    wb::FfnParams bad_bias = good;
    bad_bias.down.bias = vec({1, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(x, bad_bias), "down's bias is [D] = [4] or empty",
                    "wb::ffn", "down.bias", "[2]");
    wb::FfnParams bad_up_bias = good;
    bad_up_bias.up.bias = vec({1, 2, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(x, bad_up_bias),
                    "up's bias is [hidden] = [16] or empty: check both layers' biases", "wb::ffn",
                    "up.bias", "[3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(Tensor3::from_shape({2, 3, 0}), good), "D = 0",
                    "wb::ffn", "[2, 3, 0]");
    wb::FfnParams no_hidden = good;
    no_hidden.up.weight = Tensor2::from_shape({0, 4});
    no_hidden.up.bias = Tensor1::from_shape({0});
    no_hidden.down.weight = Tensor2::from_shape({4, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::ffn(x, no_hidden), "hidden = 0: the FFN has no hidden unit",
                    "wb::ffn", "up.weight", "[0, 4]");

    wb::SwiGluParams s{random_linear(8, 4, 20), random_linear(8, 4, 21), random_linear(4, 8, 22)};
    wb::SwiGluParams bad_gate_up = s;
    bad_gate_up.up = random_linear(6, 4, 23);
    WB_CHECK_THROWS(wb::ShapeError, wb::swiglu_ffn(x, bad_gate_up),
                    "gate and up must have the same hidden width (they are multiplied element "
                    "by element)",
                    "wb::swiglu_ffn", "up.weight", "[6, 4]");
    wb::SwiGluParams bad_sdown = s;
    bad_sdown.down = random_linear(5, 8, 24);
    WB_CHECK_THROWS(wb::ShapeError, wb::swiglu_ffn(x, bad_sdown), "down is [D, hidden] = [4, 8]",
                    "wb::swiglu_ffn", "down.weight", "[5, 8]");
    wb::SwiGluParams no_gate = s;
    no_gate.gate.weight = Tensor2::from_shape({0, 4});
    no_gate.gate.bias = Tensor1::from_shape({0});
    WB_CHECK_THROWS(wb::ShapeError, wb::swiglu_ffn(x, no_gate), "hidden = 0: nothing to gate",
                    "wb::swiglu_ffn", "gate.weight", "[0, 4]");
    WB_CHECK_THROWS(wb::ShapeError, wb::swiglu_ffn(Tensor3::from_shape({1, 2, 0}), s), "D = 0",
                    "wb::swiglu_ffn", "[1, 2, 0]");
}

TEST_CASE("swiglu_ffn checks every layer's bias, not only its weight",
          "[swiglu][errors][c:swiglu_ffn.bad-shape]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 4}, 3);
    const wb::SwiGluParams s{random_linear(8, 4, 20), random_linear(8, 4, 21),
                             random_linear(4, 8, 22)};
    wb::SwiGluParams bad_gate_bias = s;
    bad_gate_bias.gate.bias = vec({1, 2, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::swiglu_ffn(x, bad_gate_bias),
                    "the gate's bias is [hidden] = [8] or empty: check every layer's bias, not "
                    "only its weight (a bias that does not fit is a layer that does not fit)",
                    "wb::swiglu_ffn", "[3]");
}

TEST_CASE("post_ln_block_forward rejects what block_forward rejects, naming itself",
          "[block][post-ln][errors][c:post_ln_block_forward.bad-params]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 8}, 4);
    const BlockParams good = random_block(8, 2, 500);
    BlockParams bad_ffn = good;
    bad_ffn.ffn.down = random_linear(8, 16, 510);  // up is [32, 8]: down must be [8, 32]
    WB_CHECK_THROWS(wb::ShapeError, wb::post_ln_block_forward(x, bad_ffn),
                    "Post-LN checks the FFN itself too, before calling ffn",
                    "wb::post_ln_block_forward", "ffn.down.weight", "[8, 16]", "[8, 32]");
    const Tensor3 narrow = wbtest::randn<Tensor3>({2, 3, 6}, 5);
    WB_CHECK_THROWS(wb::ShapeError, wb::post_ln_block_forward(narrow, good),
                    "Post-LN: x's last axis must be the block's D = 8", "wb::post_ln_block_forward",
                    "[6]");
    WB_CHECK_THROWS(wb::ShapeError, wb::post_ln_block_forward(Tensor3::from_shape({2, 0, 8}), good),
                    "Post-LN rejects T = 0 itself, as block_forward does",
                    "wb::post_ln_block_forward", "[2, 0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::post_ln_block_forward(Tensor3::from_shape({0, 3, 8}), good),
                    "Post-LN rejects B = 0 itself, as block_forward does",
                    "wb::post_ln_block_forward", "[0, 3, 8]");
}

TEST_CASE(
    "block_forward and post_ln_block_forward reject parameters that do not fit x, naming "
    "the parameter",
    "[block][errors][c:block_forward.bad-shape]"
    "[c:block_forward.bad-eps][c:block_forward.attention-errors]"
    "[c:post_ln_block_forward.bad-params]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 8}, 4);
    const BlockParams good = random_block(8, 2, 500);
    BlockParams bad_ln2 = good;
    bad_ln2.ln2.gamma = xt::ones<float>({6});
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(x, bad_ln2),
                    "check both LayerNorms against D before using them", "wb::block_forward",
                    "ln2.gamma", "[6]", "[8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::post_ln_block_forward(x, bad_ln2),
                    "Post-LN checks the same parameters", "wb::post_ln_block_forward", "ln2.gamma",
                    "[6]");
    BlockParams bad_eps = good;
    bad_eps.ln1.eps = 0.0f;
    WB_CHECK_THROWS(wb::ValueError, wb::block_forward(x, bad_eps), "ln1.eps must be > 0",
                    "wb::block_forward", "ln1.eps = 0");
    BlockParams bad_ffn = good;
    bad_ffn.ffn.down = random_linear(8, 16, 510);  // up is [32, 8]: down must be [8, 32]
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(x, bad_ffn),
                    "the FFN must fit D and its own hidden width", "wb::block_forward",
                    "ffn.down.weight", "[8, 16]", "[8, 32]");
    const Tensor3 narrow = wbtest::randn<Tensor3>({2, 3, 6}, 5);
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(narrow, good),
                    "x's last axis must be the block's D = 8", "wb::block_forward", "[6]");
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(Tensor3::from_shape({2, 0, 8}), good),
                    "T = 0: no token to attend to", "wb::block_forward", "[2, 0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(Tensor3::from_shape({0, 3, 8}), good),
                    "B = 0: no sequence", "wb::block_forward", "[0, 3, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(Tensor3::from_shape({2, 3, 0}), good),
                    "D = 0: no features", "wb::block_forward", "[2, 3, 0]");
    // Attention built for D = 4 inside a block whose LayerNorms and FFN are for D = 8.
    BlockParams bad_attn = good;
    bad_attn.attn = random_block(4, 2, 520).attn;
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(x, bad_attn),
                    "the attention must read the block's D = 8 features", "wb::block_forward",
                    "attn.w_q.weight", "[4, 4]");
    // The attention's own consistency and the mask are checked by multi_head_attention.
    BlockParams bad_heads = good;
    bad_heads.attn.H = 3;
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(x, bad_heads),
                    "D = 8 cannot be split into H = 3 heads (reported by multi_head_attention)",
                    "wb::multi_head_attention", "H = 3");
    WB_CHECK_THROWS(wb::ShapeError, wb::block_forward(x, good, causal(4)),
                    "the mask of a block is [B, T, T] or [1, T, T] with T = 3 (reported by "
                    "multi_head_attention)",
                    "wb::multi_head_attention", "mask", "[1, 4, 4]");
}

TEST_CASE("stack_forward names the block and the final norm that do not fit",
          "[stack][errors][c:stack_forward.bad-params]"
          "[c:stack_forward.checked-first]") {
    const Tensor3 x = wbtest::randn<Tensor3>({2, 3, 8}, 6);
    std::vector<BlockParams> blocks = {random_block(8, 2, 600), random_block(8, 2, 620)};
    const LayerNormParams good_final = ln_params(8);
    std::vector<BlockParams> bad_second = blocks;
    bad_second[1].ln1.beta = xt::zeros<float>({4});
    WB_CHECK_THROWS(wb::ShapeError, wb::stack_forward(x, bad_second, good_final),
                    "check every block before running any, and say which one is wrong",
                    "wb::stack_forward", "blocks[1].ln1.beta", "[4]");
    LayerNormParams bad_final = ln_params(8);
    bad_final.gamma = xt::ones<float>({7});
    WB_CHECK_THROWS(wb::ShapeError, wb::stack_forward(x, blocks, bad_final),
                    "the final norm is [D] too", "wb::stack_forward", "final_norm.gamma", "[7]");
    LayerNormParams bad_final_eps = ln_params(8, -0.5f);
    WB_CHECK_THROWS(wb::ValueError, wb::stack_forward(x, blocks, bad_final_eps),
                    "the final norm's eps must be > 0", "wb::stack_forward", "final_norm.eps");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::stack_forward(Tensor3::from_shape({0, 3, 8}), blocks, good_final),
                    "B = 0: nothing to run", "wb::stack_forward", "[0, 3, 8]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::stack_forward(Tensor3::from_shape({2, 0, 8}), blocks, good_final),
                    "T = 0: no token to attend to", "wb::stack_forward", "[2, 0, 8]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::stack_forward(Tensor3::from_shape({2, 0, 8}), {}, good_final),
                    "T = 0 is an error even with no blocks, as in block_forward",
                    "wb::stack_forward", "[2, 0, 8]");
    // Checked before anything is computed: with a mask that does not fit (multi_head_attention
    // reports it when block 0 runs), the stack's own error must come first.
    wb::Mask wrong_mask = causal(4);  // x has T = 3
    WB_CHECK_THROWS(wb::ValueError, wb::stack_forward(x, blocks, bad_final_eps, wrong_mask),
                    "check the final norm before running any block (block 0's attention would "
                    "report the mask first)",
                    "wb::stack_forward", "final_norm.eps");
    WB_CHECK_THROWS(wb::ShapeError, wb::stack_forward(x, bad_second, good_final, wrong_mask),
                    "check every block before running block 0 (its attention would report the "
                    "mask first)",
                    "wb::stack_forward", "blocks[1].ln1.beta", "[4]");
}
