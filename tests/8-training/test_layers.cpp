#include "8-training/layers.hpp"
#include "check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "forward_double.hpp"
#include "golden.hpp"
#include "gradcheck.hpp"

// Checks of chapter 8's layers: every backward, and the loss. The forwards are chapters 2–7's
// and are checked there; the gradient checks below take the slope of forward_double.hpp, the
// same formulas written out in double.
//
// Expected numbers come from three places, named beside each one:
//  - by hand, or with Python's math module (printed with 9 significant digits);
//  - tests/goldens/8-training/layers_*.txt, written by tools/goldens/chapter8_layers.py with
//    PyTorch 1.13 (F.linear, F.layer_norm, F.gelu, softmax with a triu mask, F.cross_entropy,
//    and torch.autograd for the gradients), compared in float with wbtest::golden_tolerance;
//  - the central-difference gradient check of gradcheck.hpp, in double, for every backward on
//    random shapes (T = 1, N = 1, widths 5 and 7), bound wbtest::grad_tolerance = 1e-6 on
//    |analytic − numeric| / max(|analytic|, |numeric|, 1).

namespace {

using Mf = wb::Mat<float>;
using Vf = wb::Vec<float>;
using Cf = wb::Heads<float>;
using Md = wb::Mat<double>;
using Vd = wb::Vec<double>;
using Cd = wb::Heads<double>;
using Targets = xt::xtensor<std::int64_t, 1>;

constexpr double kGolden = wbtest::golden_tolerance;

// sum(a ⊙ r) in double: the scalar loss whose gradient with respect to a is r. Pulling a
// random r back through a backward is how every layer is checked on its own.
template <class A, class R>
double dot_all(const A& a, const R& r) {
    REQUIRE(wbtest::shape_of(a) == wbtest::shape_of(r));
    double s = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) {
        s += static_cast<double>(a.data()[k]) * static_cast<double>(r.data()[k]);
    }
    return s;
}

// Targets stored as floats in the golden files.
Targets as_targets(const xt::xtensor<float, 1>& t) {
    Targets out = Targets::from_shape({t.size()});
    for (std::size_t i = 0; i < t.size(); ++i)
        out(i) = static_cast<std::int64_t>(std::lround(t(i)));
    return out;
}

// Positions [from, to) of the T axis of a [B, H, T, d] tensor.
Cd positions(const Cd& x, std::size_t from, std::size_t to) {
    return xt::view(x, xt::all(), xt::all(), xt::range(from, to), xt::all());
}

// The embedding lookup the checks need to build a loss (the forward is chapter 2's):
// row b*T + t of the result is table[ids[b, t]].
Md lookup(const wb::TokenIds& ids, const Md& table) {
    const std::size_t B = ids.shape(0), T = ids.shape(1), D = table.shape(1);
    Md out = Md::from_shape({B * T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < D; ++c)
                out(b * T + t, c) = table(static_cast<std::size_t>(ids(b, t)), c);
    return out;
}

const std::string kGradHint =
    " (the gradient check compares your backward with the slope of the layer's forward, "
    "measured in double: the backward formula is wrong)";

}  // namespace

// ---- Linear ---------------------------------------------------------------------------------

TEST_CASE("linear_backward matches PyTorch's autograd in float",
          "[linear_backward][linear][backward][c:linear_backward.gradients]") {
    const wbtest::Golden g("8-training/layers_linear.txt");
    const Mf x = g.tensor<2>("x"), w = g.tensor<2>("weight"), dy = g.tensor<2>("dy");
    Mf dx;
    Mf dw = xt::zeros<float>({3, 5});
    Vf db = xt::zeros<float>({3});
    wb::linear_backward(dy, x, w, dx, dw, db);
    WB_CHECK_CLOSE(dx, g.tensor<2>("dx"), kGolden,
                   "dx = dy W ([N, out] · [out, in]): every input feature collects the gradient "
                   "of every output it fed");
    WB_CHECK_CLOSE(dw, g.tensor<2>("dweight"), kGolden,
                   "dweight = dyᵀ x ([out, N] · [N, in]); not x dyᵀ, not dy xᵀ");
    WB_CHECK_CLOSE(db, g.tensor<1>("dbias"), kGolden,
                   "dbias = the sum of dy over the rows (the bias is added to every row)");
}

TEST_CASE("linear_backward passes the gradient check in double, with bias",
          "[linear_backward][linear][backward][gradcheck][c:linear_backward.gradients]") {
    struct Case {
        std::size_t N, in, out;
    };
    for (const Case c : {Case{1, 5, 3}, Case{4, 7, 1}, Case{3, 5, 7}}) {
        INFO("N = " << c.N << ", in = " << c.in << ", out = " << c.out);
        Md x = wbtest::randn<Md>({c.N, c.in}, 11);
        Md w = wbtest::randn<Md>({c.out, c.in}, 12);
        Vd b = wbtest::randn<Vd>({c.out}, 13);
        const Md r = wbtest::randn<Md>({c.N, c.out}, 14);  // dL/dy for L = Σ y ⊙ r
        const auto loss = [&] { return dot_all(wbtest::linear_forward(x, w, b), r); };

        Md dx;
        Md dw = xt::zeros<double>({c.out, c.in});
        Vd db = xt::zeros<double>({c.out});
        wb::linear_backward(r, x, w, dx, dw, db);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx", "dx = dy W" + kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, w, dw), "dweight", "dweight = dyᵀ x" + kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, b, db), "dbias", "dbias = Σ_rows dy" + kGradHint);
    }
}

TEST_CASE("linear_backward without bias passes the gradient check and leaves dbias empty",
          "[linear_backward][linear][backward][gradcheck][c:linear_backward.gradients]"
          "[c:linear_backward.dbias-accumulated-or-empty]") {
    Md x = wbtest::randn<Md>({3, 7}, 21);
    Md w = wbtest::randn<Md>({5, 7}, 22);
    const Md r = wbtest::randn<Md>({3, 5}, 23);
    const auto loss = [&] { return dot_all(wbtest::linear_forward(x, w, Vd{}), r); };
    Md dx;
    Md dw = xt::zeros<double>({5, 7});
    Vd db;  // empty: no bias, nothing to accumulate
    wb::linear_backward(r, x, w, dx, dw, db);
    INFO("dbias has " << db.size() << " elements");
    CHECK(db.size() == 0);
    WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx", "dx = dy W" + kGradHint);
    WB_CHECK_GRAD(wbtest::gradcheck(loss, w, dw), "dweight", "dweight = dyᵀ x" + kGradHint);
}

TEST_CASE("linear_backward accumulates dweight and dbias over calls but assigns dx",
          "[linear_backward][linear][backward][accumulate][c:linear_backward.dx-assigned]"
          "[c:linear_backward.dweight-accumulated]"
          "[c:linear_backward.dbias-accumulated-or-empty]") {
    // By hand: x = [[1, 2], [3, 4]], W = [[1, 0], [0, 1], [1, 1]], dy = [[1, 0, 1], [0, 1, 0]].
    //   dx = dy W    = [[1+1, 0+1], [0, 1]]          = [[2, 1], [0, 1]]
    //   dW = dyᵀ x   = [[1, 2], [3, 4], [1, 2]]      (row o = Σ_n dy[n, o] x[n])
    //   db = Σ_n dy  = [1, 1, 1]
    const Mf x = {{1, 2}, {3, 4}};
    const Mf w = {{1, 0}, {0, 1}, {1, 1}};
    const Mf dy = {{1, 0, 1}, {0, 1, 0}};
    Mf dx = {{99, 99}, {99, 99}};  // stale values from an earlier step: must be overwritten
    Mf dw = xt::zeros<float>({3, 2});
    Vf db = xt::zeros<float>({3});
    wb::linear_backward(dy, x, w, dx, dw, db);
    WB_CHECK_CLOSE(dw, (Mf{{1, 2}, {3, 4}, {1, 2}}), 1e-5,
                   "dweight = dyᵀ x after one call from zero");
    wb::linear_backward(dy, x, w, dx, dw, db);
    WB_CHECK_CLOSE(dx, (Mf{{2, 1}, {0, 1}}), 1e-5,
                   "dx is ASSIGNED (dx = dy W), not accumulated: it is the gradient of this "
                   "call's input; its old contents (99) must not survive");
    WB_CHECK_CLOSE(dw, (Mf{{2, 4}, {6, 8}, {2, 4}}), 1e-5,
                   "after two calls dweight must be 2 × one call: parameter gradients "
                   "ACCUMULATE (dweight += dyᵀ x), as in PyTorch, until zero_grad. Did you "
                   "write dweight = ... ?");
    WB_CHECK_CLOSE(db, (Vf{2, 2, 2}), 1e-5,
                   "after two calls dbias must be 2 × one call: dbias += Σ_rows dy");
}

// ---- LayerNorm ------------------------------------------------------------------------------

TEST_CASE("layer_norm_backward matches PyTorch's autograd in float",
          "[layer_norm_backward][layer_norm][backward][c:layer_norm_backward.gradients]") {
    const wbtest::Golden g("8-training/layers_layer_norm.txt");
    const Mf x = g.tensor<2>("x"), dy = g.tensor<2>("dy");
    const Vf gamma = g.tensor<1>("gamma");
    const float eps = g.scalar("eps");
    Mf dx;
    Vf dgamma = xt::zeros<float>({7}), dbeta = xt::zeros<float>({7});
    wb::layer_norm_backward(dy, x, gamma, eps, dx, dgamma, dbeta);
    WB_CHECK_CLOSE(dx, g.tensor<2>("dx"), kGolden,
                   "dx = rstd · (g − mean(g) − xhat · mean(g ⊙ xhat)) with g = dy ⊙ gamma: the "
                   "mean and the variance depend on every x of the row, so both mean terms "
                   "are needed");
    WB_CHECK_CLOSE(dgamma, g.tensor<1>("dgamma"), kGolden, "dgamma = Σ_rows dy ⊙ xhat");
    WB_CHECK_CLOSE(dbeta, g.tensor<1>("dbeta"), kGolden, "dbeta = Σ_rows dy");
}

TEST_CASE("layer_norm_backward passes the gradient check in double for D = 1, 5, 7",
          "[layer_norm_backward][layer_norm][backward][gradcheck]"
          "[c:layer_norm_backward.gradients]") {
    struct Case {
        std::size_t N, D;
    };
    for (const Case c : {Case{1, 5}, Case{3, 7}, Case{2, 1}}) {
        INFO("N = " << c.N << ", D = " << c.D);
        Md x = wbtest::randn<Md>({c.N, c.D}, 31);
        x += 0.5;  // rows whose mean is not 0
        Vd gamma = wbtest::randn<Vd>({c.D}, 32);
        Vd beta = wbtest::randn<Vd>({c.D}, 33);
        const Md r = wbtest::randn<Md>({c.N, c.D}, 34);
        const double eps = 1e-5;
        const auto loss = [&] {
            return dot_all(wbtest::layer_norm_forward(x, gamma, beta, eps), r);
        };
        Md dx;
        Vd dgamma = xt::zeros<double>({c.D}), dbeta = xt::zeros<double>({c.D});
        wb::layer_norm_backward(r, x, gamma, eps, dx, dgamma, dbeta);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx",
                      "dx = rstd · (g − mean(g) − xhat · mean(g ⊙ xhat)), g = dy ⊙ gamma, both "
                      "means over the D features of the row; a missing mean term is the "
                      "classic mistake" +
                          kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, gamma, dgamma), "dgamma",
                      "dgamma = Σ_rows dy ⊙ xhat" + kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, beta, dbeta), "dbeta",
                      "dbeta = Σ_rows dy" + kGradHint);
    }
}

TEST_CASE("layer_norm_backward accumulates dgamma and dbeta over calls but assigns dx",
          "[layer_norm_backward][layer_norm][backward][accumulate]"
          "[c:layer_norm_backward.dx-assigned][c:layer_norm_backward.dgamma-accumulated]"
          "[c:layer_norm_backward.dbeta-accumulated]") {
    const wbtest::Golden g("8-training/layers_layer_norm.txt");
    const Mf x = g.tensor<2>("x"), dy = g.tensor<2>("dy");
    const Vf gamma = g.tensor<1>("gamma");
    const float eps = g.scalar("eps");
    Mf dx = xt::ones<float>({3, 7}) * 99.0f;  // stale: must be overwritten
    Vf dgamma = xt::zeros<float>({7}), dbeta = xt::zeros<float>({7});
    wb::layer_norm_backward(dy, x, gamma, eps, dx, dgamma, dbeta);
    wb::layer_norm_backward(dy, x, gamma, eps, dx, dgamma, dbeta);
    // torch's one-call gradients, doubled: two backward calls without zero_grad in between.
    const Vf dgamma2 = 2.0f * g.tensor<1>("dgamma"), dbeta2 = 2.0f * g.tensor<1>("dbeta");
    WB_CHECK_CLOSE(dx, g.tensor<2>("dx"), kGolden,
                   "dx is ASSIGNED: after two calls it is one call's dx, and stale values "
                   "(99) are gone");
    WB_CHECK_CLOSE(dgamma, dgamma2, kGolden,
                   "dgamma must ACCUMULATE (+=): two calls give 2 × torch's one-call gradient");
    WB_CHECK_CLOSE(dbeta, dbeta2, kGolden,
                   "dbeta must ACCUMULATE (+=): two calls give 2 × torch's one-call gradient");
}

// ---- GELU -----------------------------------------------------------------------------------

TEST_CASE("gelu_backward is the derivative of the exact erf form x Φ(x) at known points",
          "[gelu_backward][gelu][c:gelu_backward.gradient]") {
    // python: the derivative of x * 0.5 * (1 + math.erf(x / math.sqrt(2))),
    //         Phi(x) + x * math.exp(-x*x/2) / math.sqrt(2*math.pi)
    const Mf x = {{-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f}};
    const Mf d_expected = {
        {-0.0119456472f, -0.0833154706f, 0.5f, 0.867495125f, 1.08331547f, 1.0852318f}};
    WB_CHECK_CLOSE(wb::gelu_backward(Mf(xt::ones<float>({1, 6})), x), d_expected, 1e-5,
                   "d/dx [x Φ(x)] = Φ(x) + x φ(x) (product rule); Φ(x) alone gives 0.841 at "
                   "x = 1 instead of 1.083");
}

TEST_CASE("gelu_backward matches PyTorch's autograd of F.gelu in float",
          "[gelu_backward][gelu][backward][c:gelu_backward.gradient]") {
    const wbtest::Golden g("8-training/layers_gelu.txt");
    const Mf x = g.tensor<2>("x");
    WB_CHECK_CLOSE(wb::gelu_backward(Mf(g.tensor<2>("dy")), x), g.tensor<2>("dx"), kGolden,
                   "dx = dy · (Φ(x) + x φ(x)), φ(x) = exp(−x²/2) / √(2π)");
}

TEST_CASE("gelu_backward passes the gradient check in double",
          "[gelu_backward][gelu][backward][gradcheck][c:gelu_backward.gradient]") {
    struct Case {
        std::size_t N, F;
    };
    for (const Case c : {Case{1, 7}, Case{3, 5}}) {
        INFO("N = " << c.N << ", F = " << c.F);
        Md x = wbtest::randn<Md>({c.N, c.F}, 41);
        x *= 2.0;
        const Md r = wbtest::randn<Md>({c.N, c.F}, 42);
        const auto loss = [&] { return dot_all(wbtest::gelu_forward(x), r); };
        const Md dx = wb::gelu_backward(r, x);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx",
                      "dx = dy · (Φ(x) + x φ(x)): did you forget the x φ(x) term of the product "
                      "rule?" +
                          kGradHint);
    }
}

// ---- Causal attention -----------------------------------------------------------------------

TEST_CASE("causal_attention_backward matches PyTorch's autograd and assigns dq, dk, dv",
          "[causal_attention_backward][attention][backward]"
          "[c:causal_attention_backward.gradients][c:causal_attention_backward.assigned]") {
    const wbtest::Golden g("8-training/layers_attention.txt");
    const Cf q = g.tensor<4>("q"), k = g.tensor<4>("k"), v = g.tensor<4>("v");
    Cf weights;
    (void)wbtest::causal_attention_forward(q, k, v, weights);
    Cf dq = xt::ones<float>({2, 2, 5, 3}) * 99.0f, dk = dq, dv = dq;  // stale: overwritten
    wb::causal_attention_backward(Cf(g.tensor<4>("dout")), q, k, v, weights, dq, dk, dv);
    WB_CHECK_CLOSE(dv, g.tensor<4>("dv"), kGolden,
                   "dv_j = Σ_{i >= j} w_ij dout_i (dv = weightsᵀ dout); dv is ASSIGNED, not "
                   "added to its old contents");
    WB_CHECK_CLOSE(dq, g.tensor<4>("dq"), kGolden,
                   "dq_i = Σ_j ds_ij k_j / sqrt(d) with ds = w ⊙ (dw − rowsum(dw ⊙ w)) and "
                   "dw_ij = dout_i · v_j");
    WB_CHECK_CLOSE(dk, g.tensor<4>("dk"), kGolden,
                   "dk_j = Σ_i ds_ij q_i / sqrt(d): the same ds as dq, summed over the queries "
                   "instead of the keys");
}

TEST_CASE("causal_attention_backward passes the gradient check in double, T = 1 included",
          "[causal_attention_backward][attention][backward][gradcheck]"
          "[c:causal_attention_backward.gradients]") {
    struct Case {
        std::size_t B, H, T, d;
    };
    for (const Case c : {Case{1, 1, 1, 5}, Case{2, 1, 4, 7}, Case{1, 2, 6, 3}}) {
        INFO("B = " << c.B << ", H = " << c.H << ", T = " << c.T << ", d = " << c.d);
        Cd q = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 61);
        Cd k = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 62);
        Cd v = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 63);
        const Cd r = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 64);
        const auto loss = [&] {
            Cd w;
            return dot_all(wbtest::causal_attention_forward(q, k, v, w), r);
        };
        Cd weights, dq, dk, dv;
        (void)wbtest::causal_attention_forward(q, k, v, weights);
        wb::causal_attention_backward(r, q, k, v, weights, dq, dk, dv);
        WB_CHECK_GRAD(
            wbtest::gradcheck(loss, v, dv), "dv",
            "dv = weightsᵀ dout: dv_j sums over the queries i that read key j" + kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, q, dq), "dq",
                      "dq = ds k / sqrt(d), ds_ij = w_ij (dw_ij − Σ_l w_il dw_il): did you drop "
                      "the rowsum term of the softmax, or the 1/sqrt(d) scale?" +
                          kGradHint);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, k, dk), "dk",
                      "dk = dsᵀ q / sqrt(d): did you drop the rowsum term of the softmax, or "
                      "the 1/sqrt(d) scale?" +
                          kGradHint);
    }
}

TEST_CASE("causal_attention_backward sends no gradient from a query to future keys",
          "[causal_attention_backward][attention][backward]"
          "[c:causal_attention_backward.gradients]") {
    // Query i reads keys j <= i only, so dout_i must not reach dk_j or dv_j for j > i, and it
    // reaches dq only at position i.
    const std::size_t B = 1, H = 2, T = 5, d = 3;
    const Cd q = wbtest::randn<Cd>({B, H, T, d}, 71), k = wbtest::randn<Cd>({B, H, T, d}, 72);
    const Cd v = wbtest::randn<Cd>({B, H, T, d}, 73), dout = wbtest::randn<Cd>({B, H, T, d}, 74);
    Cd weights, dq, dk, dv;
    (void)wbtest::causal_attention_forward(q, k, v, weights);
    wb::causal_attention_backward(dout, q, k, v, weights, dq, dk, dv);
    for (std::size_t i = 0; i < T; ++i) {
        INFO("dout changed at position i = " << i << " only");
        Cd dout2 = dout;
        xt::view(dout2, xt::all(), xt::all(), xt::range(i, i + 1), xt::all()) +=
            wbtest::randn<Cd>({B, H, 1, d}, 75 + static_cast<unsigned>(i));
        Cd dq2, dk2, dv2;
        wb::causal_attention_backward(dout2, q, k, v, weights, dq2, dk2, dv2);
        WB_CHECK_CLOSE(positions(dk2, i + 1, T), positions(dk, i + 1, T), 1e-12,
                       "dk at positions > i changed: query i sent gradient to a FUTURE key. "
                       "Only keys j <= i were read (w_ij = 0 above the diagonal)");
        WB_CHECK_CLOSE(positions(dv2, i + 1, T), positions(dv, i + 1, T), 1e-12,
                       "dv at positions > i changed: query i sent gradient to a FUTURE value");
        WB_CHECK_CLOSE(positions(dq2, 0, i), positions(dq, 0, i), 1e-12,
                       "dq at positions < i changed: dq_j depends only on dout_j");
        const double moved =
            xt::amax(xt::abs(positions(dv2, 0, i + 1) - positions(dv, 0, i + 1)))();
        INFO("max change of dv at positions <= i: "
             << moved << " (must be > 0: query i did read those values)");
        CHECK(moved > 1e-6);
    }
}

// ---- RoPE -----------------------------------------------------------------------------------

TEST_CASE("rope_backward turns the gradient back by the angle, on a hand example",
          "[rope_backward][rope][backward][c:rope_backward.gradient]") {
    // d = 2 (one pair, θ_0 = base^0 = 1), the token at position p = offset = 1: the forward
    // turned (x0, x1) by +1 radian, so dy = (1, 0) comes back turned by −1 radian:
    // dx = (cos 1, −sin 1) = (0.540302306, −0.841470985) (python math).
    const Cf dy = {{{{1.0f, 0.0f}}}};
    WB_CHECK_CLOSE(wb::rope_backward(dy, 1, 10000.0f), (Cf{{{{0.540302306f, -0.841470985f}}}}),
                   1e-6,
                   "RoPE's backward is the TRANSPOSED rotation (angle −p θ_i): dx[2i] = dy[2i] cos "
                   "+ dy[2i+1] sin, dx[2i+1] = −dy[2i] sin + dy[2i+1] cos. (cos 1, +sin 1) means "
                   "the forward's rotation was applied again");
    WB_CHECK_CLOSE(wb::rope_backward(dy, 0, 10000.0f), dy, 0.0,
                   "position 0 is not turned: its gradient passes unchanged");
}

TEST_CASE("rope_backward passes the gradient check in double, with offsets",
          "[rope_backward][rope][backward][gradcheck][c:rope_backward.gradient]"
          "[c:rope_backward.offset-used]") {
    struct Case {
        std::size_t B, H, T, d;
        std::int64_t offset;
    };
    for (const Case c : {Case{1, 1, 1, 2, 0}, Case{2, 2, 4, 6, 0}, Case{1, 3, 3, 8, 5}}) {
        INFO("B = " << c.B << ", H = " << c.H << ", T = " << c.T << ", d = " << c.d
                    << ", offset = " << c.offset);
        Cd x = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 81);
        const Cd r = wbtest::randn<Cd>({c.B, c.H, c.T, c.d}, 82);
        const double base = 10000.0;
        const auto loss = [&] { return dot_all(wbtest::rope_forward(x, c.offset, base), r); };
        const Cd dx = wb::rope_backward(r, c.offset, base);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, x, dx), "dx",
                      "dx is dy turned by −p θ_i, p = offset + t: did you use the forward's "
                      "angle sign, forget the offset, or pair features i and i + d/2 instead of "
                      "2i and 2i + 1?" +
                          kGradHint);
    }
}

TEST_CASE("rope_backward rejects an odd head width, a negative offset and a bad base",
          "[rope_backward][rope][errors][c:rope_backward.odd-width]"
          "[c:rope_backward.bad-offset-or-base]") {
    const Cf odd = xt::zeros<float>({1, 1, 2, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::rope_backward(odd, 0, 10000.0f),
                    "RoPE turns pairs: d must be even", "wb::rope_backward", "[1, 1, 2, 3]");
    const Cf even = xt::zeros<float>({1, 1, 2, 4});
    WB_CHECK_THROWS(wb::ValueError, wb::rope_backward(even, -1, 10000.0f),
                    "offset is a position: >= 0", "wb::rope_backward", "-1");
    WB_CHECK_THROWS(wb::ValueError, wb::rope_backward(even, 0, 1.0f), "base must be > 1",
                    "wb::rope_backward", "base");
}

// ---- Embedding ------------------------------------------------------------------------------

TEST_CASE("embedding_backward sums the gradients of repeated ids and accumulates",
          "[embedding_backward][embedding][backward][accumulate]"
          "[c:embedding_backward.sum-repeated][c:embedding_backward.accumulated]") {
    // ids [B=2, T=3] = [[2, 0, 2], [1, 2, 0]]; V = 4, D = 2; dout row r = [2r + 1, 2r + 2].
    // By hand: id 2 <- rows 0, 2, 4 = [1+5+9, 2+6+10] = [15, 18]
    //          id 0 <- rows 1, 5    = [3+11, 4+12]    = [14, 16]
    //          id 1 <- row 3        = [7, 8];  id 3 never occurs: keeps its [100, 100].
    const wb::TokenIds ids = {{2, 0, 2}, {1, 2, 0}};
    const Mf dout = {{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}};
    Mf dtable = {{0, 0}, {0, 0}, {0, 0}, {100, 100}};
    wb::embedding_backward(ids, dout, dtable);
    WB_CHECK_CLOSE(dtable, (Mf{{14, 16}, {7, 8}, {15, 18}, {100, 100}}), 1e-5,
                   "dtable[ids[b, t]] += dout[b*T + t]: a token that occurs several times gets "
                   "the SUM of its rows (id 2: rows 0, 2, 4). If id 2 shows [9, 10], you "
                   "assigned (=) and kept only the last occurrence. Row b*T + t of dout "
                   "belongs to ids(b, t)");
    wb::embedding_backward(ids, dout, dtable);
    WB_CHECK_CLOSE(dtable, (Mf{{28, 32}, {14, 16}, {30, 36}, {100, 100}}), 1e-5,
                   "a second call ADDS again (gradients accumulate until zero_grad)");
}

TEST_CASE("embedding_backward passes the gradient check in double, T = 1 included",
          "[embedding_backward][embedding][backward][gradcheck]"
          "[c:embedding_backward.sum-repeated]") {
    struct Case {
        wb::TokenIds ids;
        std::size_t V, D;
    };
    const std::vector<Case> cases = {
        {wb::TokenIds{{3}}, 5, 7},                   // B = 1, T = 1
        {wb::TokenIds{{1, 4, 1}, {0, 1, 4}}, 5, 5},  // repeated ids across rows
        {wb::TokenIds{{2}, {2}, {2}}, 3, 1},         // T = 1, one id three times
    };
    for (const Case& c : cases) {
        INFO("ids " << wb::shape_str(c.ids.shape()) << ", V = " << c.V << ", D = " << c.D);
        Md table = wbtest::randn<Md>({c.V, c.D}, 81);
        const Md r = wbtest::randn<Md>({c.ids.size(), c.D}, 82);
        const auto loss = [&] { return dot_all(lookup(c.ids, table), r); };
        Md dtable = xt::zeros<double>({c.V, c.D});
        wb::embedding_backward(c.ids, r, dtable);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, table, dtable), "dtable",
                      "dtable[ids[b, t]] += dout[b*T + t]; rows of unused ids stay 0; repeated "
                      "ids sum" +
                          kGradHint);
    }
}

// ---- Cross entropy --------------------------------------------------------------------------

TEST_CASE("cross entropy is -log softmax at the target, computed from raw logits",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy]"
          "[c:cross_entropy_forward.mean-loss][c:cross_entropy_backward.gradient]") {
    // python math: log(e + e² + e³) - 3 = 0.407605964 (target 2), - 1 = 2.40760596 (target 0).
    const Mf logits = {{1, 2, 3}, {1, 2, 3}};
    WB_CHECK_CLOSE((Vf{wb::cross_entropy_forward(Mf{{1, 2, 3}}, Targets{2}, -1)}),
                   (Vf{0.407605964f}), 1e-5,
                   "loss = logsumexp(z) − z[target] = −log softmax(z)[target], from the RAW "
                   "logits. If you got 0.797, you applied softmax first (CrossEntropyLoss "
                   "takes raw logits, §21.7)");
    WB_CHECK_CLOSE((Vf{wb::cross_entropy_forward(logits, Targets{2, 0}, -1)}), (Vf{1.40760596f}),
                   1e-5, "the loss is the MEAN over rows: (0.407606 + 2.407606) / 2");
    // Gradient: (softmax(z) − onehot) / 2; softmax([1, 2, 3]) = [0.0900305732, 0.244728471,
    // 0.665240956] (python math).
    const Mf expected = {{0.0450152866f, 0.122364236f, (0.665240956f - 1.0f) / 2},
                         {(0.0900305732f - 1.0f) / 2, 0.122364236f, 0.332620478f}};
    WB_CHECK_CLOSE(wb::cross_entropy_backward(logits, Targets{2, 0}, -1), expected, 1e-5,
                   "dlogits = (softmax(z) − onehot(target)) / n_valid");
}

TEST_CASE("cross entropy is stable for logits of +-1000",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy]"
          "[c:cross_entropy_forward.mean-loss][c:cross_entropy_backward.gradient]") {
    // python math: row 0 log(1 + e^-1000 + e^-2000) = 0; row 1 1000 + 1000 + log(1 + ...) = 2000;
    // row 2 log(3) = 1.09861229. Mean = (0 + 2000 + 1.09861229) / 3 = 667.032871.
    const Mf logits = {{1000, -1000, 0}, {-1000, 1000, 0}, {-1000, -1000, -1000}};
    const Targets targets = {0, 0, 1};
    const float loss = wb::cross_entropy_forward(logits, targets, -1);
    INFO("loss = " << loss
                   << ": exp(1000) overflows; compute logsumexp(z) = m + log Σ exp(z − m) "
                      "with m = max(z)");
    CHECK(std::isfinite(loss));
    WB_CHECK_CLOSE((Vf{loss}), (Vf{667.032871f}), 1e-5,
                   "logsumexp must subtract the row maximum: exp(1000) is inf, exp(-1000) is 0 "
                   "and log(0) is -inf");
    // By hand: (softmax − onehot) / 3: row 0 [1,0,0]−[1,0,0] = 0; row 1 [0,1,0]−[1,0,0];
    // row 2 [1/3,1/3,1/3]−[0,1,0].
    const Mf expected = {{0, 0, 0}, {-1.0f / 3, 1.0f / 3, 0}, {1.0f / 9, -2.0f / 9, 1.0f / 9}};
    WB_CHECK_CLOSE(wb::cross_entropy_backward(logits, targets, -1), expected, 1e-5,
                   "the softmax in the gradient must be stable too: exp(z − logsumexp(z))");
}

TEST_CASE("cross entropy with ignore_index -1 matches PyTorch's F.cross_entropy",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy][golden]"
          "[c:cross_entropy_forward.ignore-index][c:cross_entropy_backward.gradient]") {
    const wbtest::Golden g("8-training/layers_cross_entropy.txt");
    const Mf logits = g.tensor<2>("logits");
    const Targets targets = as_targets(g.tensor<1>("targets"));  // rows 1 and 4 are -1
    WB_CHECK_CLOSE((Vf{wb::cross_entropy_forward(logits, targets, -1)}), (Vf{g.scalar("loss")}),
                   kGolden,
                   "mean over the 4 VALID rows only: rows whose target is ignore_index are "
                   "neither summed nor counted. Dividing by N = 6 gives 2/3 of the loss");
    WB_CHECK_CLOSE(wb::cross_entropy_backward(logits, targets, -1), g.tensor<2>("dlogits"), kGolden,
                   "valid rows: (softmax − onehot) / n_valid with n_valid = 4, not N = 6; "
                   "ignored rows: exactly 0");
}

TEST_CASE("padding rows with any logits leave the loss and the other rows' gradients unchanged",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy][padding]"
          "[c:cross_entropy_forward.ignore-index][c:cross_entropy_backward.gradient]") {
    // The 4 valid rows of the golden case, alone; then with 3 padding rows (target -1) of wild
    // logits interleaved. torch's loss over the valid rows is the golden loss (the script
    // asserts F.cross_entropy(valid rows) == F.cross_entropy(all rows, ignore_index=-1)).
    const wbtest::Golden g("8-training/layers_cross_entropy.txt");
    const Mf all = g.tensor<2>("logits");
    const Mf dall = g.tensor<2>("dlogits");
    const std::vector<std::size_t> valid_rows = {0, 2, 3, 5};
    Mf valid = Mf::from_shape({4, 5}), dvalid = Mf::from_shape({4, 5});
    for (std::size_t r = 0; r < 4; ++r) {
        xt::view(valid, r) = xt::view(all, valid_rows[r]);
        xt::view(dvalid, r) = xt::view(dall, valid_rows[r]);
    }
    const Targets t_valid = {3, 0, 4, 1};

    // Padded: rows 0, 3, 6 are padding with logits of +-1e4, 0 and random.
    Mf padded = xt::zeros<float>({7, 5});
    Targets t_padded = {-1, 3, 0, -1, 4, 1, -1};
    xt::view(padded, 0) = Vf{1e4f, -1e4f, 3, 0, 1};
    xt::view(padded, 3) = Vf{0, 0, 0, 0, 0};
    xt::view(padded, 6) = Vf{5, -2, 7, 1, 1e4f};
    const std::vector<std::size_t> into = {1, 2, 4, 5};
    for (std::size_t r = 0; r < 4; ++r) xt::view(padded, into[r]) = xt::view(valid, r);

    const float expected = g.scalar("loss");
    WB_CHECK_CLOSE((Vf{wb::cross_entropy_forward(valid, t_valid, -1)}), (Vf{expected}), kGolden,
                   "the 4 valid rows alone: the mean of logsumexp(z) − z[target]");
    WB_CHECK_CLOSE((Vf{wb::cross_entropy_forward(padded, t_padded, -1)}), (Vf{expected}), kGolden,
                   "padding rows (target = ignore_index) must not change the loss, whatever "
                   "their logits: skip them AND leave them out of the count. Masking padded "
                   "keys in attention does not remove them from the loss (§12)");
    Mf expected_grad = xt::zeros<float>({7, 5});
    for (std::size_t r = 0; r < 4; ++r) xt::view(expected_grad, into[r]) = xt::view(dvalid, r);
    WB_CHECK_CLOSE(wb::cross_entropy_backward(padded, t_padded, -1), expected_grad, kGolden,
                   "padding rows get gradient exactly 0; the valid rows keep the gradient they "
                   "had without the padding (divided by n_valid = 4)");
}

TEST_CASE("cross entropy with every row ignored is 0 with a zero gradient",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy][padding]"
          "[c:cross_entropy_forward.no-valid-row][c:cross_entropy_backward.gradient]") {
    const Mf logits = {{1, 2, 3}, {1e4f, 0, -1e4f}};
    const Targets targets = {-1, -1};
    const float loss = wb::cross_entropy_forward(logits, targets, -1);
    INFO("loss = " << loss << "; with no valid row the mean is defined as 0, not 0/0 = NaN");
    CHECK(loss == 0.0f);
    WB_CHECK_CLOSE(wb::cross_entropy_backward(logits, targets, -1), Mf(xt::zeros<float>({2, 3})),
                   0.0, "no valid row: every gradient is 0 (and not NaN from dividing by 0)");
    // No rows at all: N = 0.
    const Mf none = Mf::from_shape({0, 3});
    INFO("N = 0 rows: the loss is 0");
    CHECK(wb::cross_entropy_forward(none, Targets::from_shape({0}), -1) == 0.0f);
}

TEST_CASE("cross_entropy_backward passes the gradient check in double, with ignored rows",
          "[cross_entropy_backward][cross_entropy_forward][cross_entropy][backward][gradcheck]"
          "[c:cross_entropy_backward.gradient][c:cross_entropy_forward.ignore-index]") {
    struct Case {
        std::size_t N, V;
        Targets targets;
        std::int64_t ignore;
    };
    const std::vector<Case> cases = {
        {1, 7, Targets{4}, -1},                // N = 1
        {5, 5, Targets{0, -1, 4, 2, -1}, -1},  // two padding rows
        {4, 3, Targets{0, 2, 1, 0}, 0},        // the padding id inside the vocabulary
    };
    for (const Case& c : cases) {
        INFO("N = " << c.N << ", V = " << c.V << ", ignore_index = " << c.ignore);
        Md logits = wbtest::randn<Md>({c.N, c.V}, 91);
        logits *= 3.0;
        const auto loss = [&] { return wb::cross_entropy_forward(logits, c.targets, c.ignore); };
        const Md dlogits = wb::cross_entropy_backward(logits, c.targets, c.ignore);
        WB_CHECK_GRAD(wbtest::gradcheck(loss, logits, dlogits), "dlogits",
                      "dlogits = (softmax(z) − onehot(target)) / n_valid on valid rows, 0 on "
                      "ignored rows" +
                          kGradHint);
    }
}

// ---- Errors ---------------------------------------------------------------------------------

TEST_CASE("linear_backward rejects mismatched shapes",
          "[linear_backward][linear][errors][c:linear_backward.shape-mismatch]") {
    const Mf x = xt::zeros<float>({2, 3});
    const Mf w = xt::zeros<float>({4, 3});
    Mf dx;
    Mf dw = xt::zeros<float>({4, 3});
    Vf db = xt::zeros<float>({4});
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::linear_backward(Mf(xt::zeros<float>({2, 5})), x, w, dx, dw, db),
                    "dy must be [N, out] = [2, 4]", "wb::linear_backward", "[2, 5]", "[2, 4]");
    Mf dw_bad = xt::zeros<float>({3, 4});
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::linear_backward(Mf(xt::zeros<float>({2, 4})), x, w, dx, dw_bad, db),
                    "dweight must have the weight's shape [out, in] = [4, 3]",
                    "wb::linear_backward", "[3, 4]", "[4, 3]");
    Vf db_bad = xt::zeros<float>({3});
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::linear_backward(Mf(xt::zeros<float>({2, 4})), x, w, dx, dw, db_bad),
                    "dbias must be [out] = [4] or empty", "wb::linear_backward", "[3]", "[4]");
    Mf w_bad = xt::zeros<float>({4, 2});
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::linear_backward(Mf(xt::zeros<float>({2, 4})), x, w_bad, dx, dw, db),
                    "weight [out, in] must match x's in = 3", "wb::linear_backward", "[4, 2]");
}

TEST_CASE("layer_norm_backward rejects mismatched shapes and a bad eps",
          "[layer_norm_backward][layer_norm][errors][c:layer_norm_backward.shape-mismatch]"
          "[c:layer_norm_backward.bad-eps]") {
    const Mf x = xt::zeros<float>({2, 5});
    const Vf g5 = xt::ones<float>({5}), g4 = xt::ones<float>({4});
    Mf dx;
    Vf dg = xt::zeros<float>({5}), db = xt::zeros<float>({5}), dg4 = xt::zeros<float>({4});
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::layer_norm_backward(Mf(xt::zeros<float>({2, 4})), x, g5, 1e-5f, dx, dg, db),
                    "dy must have x's shape [2, 5]", "wb::layer_norm_backward", "[2, 4]", "[2, 5]");
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm_backward(x, x, g5, 1e-5f, dx, dg4, db),
                    "dgamma must be [D] = [5]", "wb::layer_norm_backward", "[4]", "[5]");
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm_backward(x, x, g5, 1e-5f, dx, dg, dg4),
                    "dbeta must be [D] = [5]", "wb::layer_norm_backward", "[4]", "[5]");
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm_backward(x, x, g4, 1e-5f, dx, dg, db),
                    "gamma must be [D] = [5]", "wb::layer_norm_backward", "[4]", "[5]");
    const Mf empty = xt::zeros<float>({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::layer_norm_backward(empty, empty, Vf{}, 1e-5f, dx, dg, db),
                    "D == 0: nothing was normalised", "wb::layer_norm_backward", "[2, 0]");
    WB_CHECK_THROWS(wb::ValueError, wb::layer_norm_backward(x, x, g5, 0.0f, dx, dg, db),
                    "eps must be > 0, as the forward's (chapter 7's rule)",
                    "wb::layer_norm_backward", "eps");
}
TEST_CASE("gelu_backward and causal attention reject mismatched shapes",
          "[gelu_backward][causal_attention_backward][gelu][attention][errors]"
          "[c:gelu_backward.shape-mismatch][c:causal_attention_backward.shape-mismatch]") {
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::gelu_backward(Mf(xt::zeros<float>({2, 3})), Mf(xt::zeros<float>({3, 2}))),
                    "dy and x must have one shape", "wb::gelu_backward", "[2, 3]", "[3, 2]");
    const Cf q = xt::zeros<float>({1, 2, 4, 3});
    Cf weights;
    (void)wbtest::causal_attention_forward(q, q, q, weights);
    Cf dq, dk, dv;
    WB_CHECK_THROWS(
        wb::ShapeError,
        wb::causal_attention_backward(q, q, q, q, Cf(xt::zeros<float>({1, 2, 4, 3})), dq, dk, dv),
        "weights must be [B, H, T, T] = [1, 2, 4, 4]", "wb::causal_attention_backward",
        "[1, 2, 4, 3]", "[1, 2, 4, 4]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::causal_attention_backward(Cf(xt::zeros<float>({1, 2, 4, 2})), q, q, q,
                                                  weights, dq, dk, dv),
                    "dout must have q's shape", "wb::causal_attention_backward", "[1, 2, 4, 2]",
                    "[1, 2, 4, 3]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::causal_attention_backward(q, q, Cf(xt::zeros<float>({1, 2, 4, 2})), q,
                                                  weights, dq, dk, dv),
                    "q, k, v must share [B, H, T, d]", "wb::causal_attention_backward",
                    "[1, 2, 4, 2]");
}

TEST_CASE("causal attention's backward refuses heads of width d = 0",
          "[causal_attention_backward][attention][errors]"
          "[c:causal_attention_backward.shape-mismatch]") {
    // q, k, v, dout and the weights agree with each other: only the width check can refuse
    // them. Without it the scale 1/√d is infinite and empty gradients come back silently.
    const Cf empty = xt::zeros<float>({1, 2, 3, 0});
    const Cf weights = xt::zeros<float>({1, 2, 3, 3});
    Cf dq, dk, dv;
    INFO("hint: check d = q.shape(3) >= 1 with the other shapes, before the loops");
    WB_CHECK_THROWS(
        wb::ShapeError,
        wb::causal_attention_backward(empty, empty, empty, empty, weights, dq, dk, dv),
        "heads of width 0 have nothing to attend with: refuse d = 0 as the forward does",
        "wb::causal_attention_backward", "[1, 2, 3, 0]");
}

TEST_CASE(
    "embedding_backward rejects ids out of range and mismatched shapes, leaving dtable unchanged",
    "[embedding_backward][embedding][errors][c:embedding_backward.bad-id]"
    "[c:embedding_backward.shape-mismatch]") {
    const Mf dout = xt::ones<float>({6, 2});
    Mf dtable = xt::zeros<float>({5, 2});
    WB_CHECK_THROWS(wb::ValueError,
                    wb::embedding_backward(wb::TokenIds{{0, 1, 2}, {3, 4, 5}}, dout, dtable),
                    "ids must be in [0, V) = [0, 5): 5 is one past the end",
                    "wb::embedding_backward", "ids[1, 2] = 5");
    WB_CHECK_THROWS(
        wb::ValueError, wb::embedding_backward(wb::TokenIds{{0, 1, 2}, {3, 7, 4}}, dout, dtable),
        "ids must be in [0, V) = [0, 5)", "wb::embedding_backward", "ids[1, 1] = 7", "5");
    WB_CHECK_THROWS(wb::ValueError,
                    wb::embedding_backward(wb::TokenIds{{0, -1, 2}, {3, 4, 4}}, dout, dtable),
                    "a negative id is out of range", "wb::embedding_backward", "ids[0, 1] = -1");
    WB_CHECK_CLOSE(dtable, Mf(xt::zeros<float>({5, 2})), 0.0,
                   "check every id BEFORE adding anything: a rejected call must leave dtable as "
                   "it was");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::embedding_backward(wb::TokenIds{{0, 1}, {2, 3}}, dout, dtable),
                    "dout must have B*T = 4 rows", "wb::embedding_backward", "[6, 2]", "[4, 2]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::embedding_backward(wb::TokenIds{{0, 1, 2}, {3, 4, 0}},
                                           Mf(xt::ones<float>({6, 3})), dtable),
                    "dout must be as wide as dtable (D = 2)", "wb::embedding_backward", "[6, 3]",
                    "[6, 2]");
}

TEST_CASE("cross entropy rejects targets of the wrong shape or out of range",
          "[cross_entropy_forward][cross_entropy_backward][cross_entropy][errors]"
          "[c:cross_entropy_forward.targets-shape][c:cross_entropy_forward.bad-target]"
          "[c:cross_entropy_backward.errors]") {
    const Mf logits = xt::zeros<float>({4, 5});
    WB_CHECK_THROWS(wb::ShapeError, wb::cross_entropy_forward(logits, Targets{0, 1, 2}, -1),
                    "one target per row: targets must be [N] = [4]", "wb::cross_entropy_forward",
                    "[3]", "[4]");
    WB_CHECK_THROWS(wb::ShapeError, wb::cross_entropy_backward(logits, Targets{0, 1, 2}, -1),
                    "one target per row: targets must be [N] = [4]", "wb::cross_entropy_backward",
                    "[3]", "[4]");
    WB_CHECK_THROWS(wb::ValueError, wb::cross_entropy_forward(logits, Targets{0, 1, 5, -1}, -1),
                    "targets must be in [0, V) = [0, 5) or ignore_index",
                    "wb::cross_entropy_forward", "targets[2] = 5", "[0, 5)");
    WB_CHECK_THROWS(wb::ValueError, wb::cross_entropy_backward(logits, Targets{0, -2, 1, -1}, -1),
                    "-2 is neither a class nor ignore_index = -1", "wb::cross_entropy_backward",
                    "targets[1] = -2", "-1");
    WB_CHECK_THROWS(wb::ValueError, wb::cross_entropy_forward(logits, Targets{0, -1, 1, 2}, -100),
                    "-1 is not a class when ignore_index is -100", "wb::cross_entropy_forward",
                    "targets[1] = -1", "-100");
}
