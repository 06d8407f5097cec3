#include "capstone/attention_kernel.hpp"
#include "check.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <omp.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "8-training/layers.hpp"
#include "forward_double.hpp"

// Checks of the capstone's attention kernel.
//
// Expected numbers come from four independent places, named beside each one:
//  - a hand example whose values were printed by PyTorch 1.13 in float64
//    (softmax with a triu mask, torch.logsumexp, and torch.autograd for the gradients);
//  - the readable reference: causal attention written out in tests/support/forward_double.hpp,
//    and chapter 8's wb::causal_attention_backward
//    (full T × T weights, an implementation that shares no code with the kernel), in float
//    and in double on the same inputs;
//  - log-sum-exp of the causal scores computed here in double, and hand-made extreme cases;
//  - properties: the same bits for 1 and 4 threads, causality, gradients assigned.
// Every check calls the kernel first, so each one fails while the kernel is a stub.

namespace {

using Cf = wb::Heads<float>;
using Cd = wb::Heads<double>;
using Lse = xt::xtensor<float, 3>;

Cf randn4(std::size_t B, std::size_t H, std::size_t T, std::size_t d, unsigned seed) {
    return wbtest::randn<Cf>({B, H, T, d}, seed);
}

// The shapes the comparisons run on: T = 1, d not a power of two, B·H = 1, B·H = 15 > threads,
// and T = 150 and 130: more than two 64-key tiles, the last one partial, so a tiled kernel must
// carry its running max, sum and output from tile to tile (and rescale them).
const std::vector<std::vector<std::size_t>> kShapes = {
    {1, 1, 1, 4},  {1, 1, 5, 3},    {2, 3, 7, 5},  {3, 5, 9, 8},
    {1, 2, 17, 7}, {1, 2, 150, 16}, {2, 1, 130, 9}};

std::string shape_name(const std::vector<std::size_t>& s) { return wb::shape_str(s); }

// Runs `f` with OpenMP limited to `threads` threads, then restores the previous setting.
template <class F>
void with_threads(int threads, F f) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    f();
    omp_set_num_threads(before);
}

// Bitwise equality of two float tensors, reported with the first differing index.
template <class E>
void check_same_bits(const E& a, const E& b, const std::string& hint) {
    bool same = a.shape() == b.shape();
    std::size_t where = 0;
    for (std::size_t n = 0; same && n < a.size(); ++n) {
        if (a.data()[n] != b.data()[n]) {
            same = false;
            where = n;
        }
    }
    INFO("first difference at flat index " << where << ": " << a.data()[where] << " vs "
                                           << b.data()[where] << "\nhint: " << hint);
    CHECK(same);
}

}  // namespace

// ---- forward ---------------------------------------------------------------------------------

TEST_CASE("attention_forward matches PyTorch on a hand example, out and lse",
          "[attention_forward][forward][c:attention_forward.output][c:attention_forward.lse]") {
    // [1, 1, 3, 3]; row 1 has two equal scores (0 and 0), so it averages v0 and v1.
    const Cf q = {{{{1, 0, 2}, {0.5, -1, 1}, {-1, 2, 0}}}};
    const Cf k = {{{{0, 1, 1}, {2, 0, -1}, {1, 1, 1}}}};
    const Cf v = {{{{1, 2, 3}, {-1, 0, 1}, {0.5, 0.5, -2}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    // torch: s = q@k.T/sqrt(3) masked_fill(triu(1), -inf); softmax(s,-1)@v; logsumexp(s,-1)
    const Cf expected = {{{{1, 2, 3}, {0, 1, 2}, {0.711367461f, 1.37332787f, 1.1901893f}}}};
    const Lse expected_lse = {{{1.15470054f, 0.693147181f, 1.66194253f}}};
    WB_CHECK_SHAPE(out, (wb::Shape{1, 1, 3, 3}), "out has q's shape [B, H, T, d]");
    WB_CHECK_CLOSE(out, expected, 1e-5,
                   "row 0 must equal v0 (one key); row 1 averages v0 and v1 — did you scale by "
                   "sqrt(d), rescale the running output when the max grows, and skip keys j > i?");
    WB_CHECK_SHAPE(lse, (wb::Shape{1, 1, 3}), "lse is [B, H, T]");
    WB_CHECK_CLOSE(
        lse, expected_lse, 1e-5,
        "lse = m + log(l): row 0 is 2/sqrt(3), row 1 is log 2 — did you forget the max m?");
}

TEST_CASE("attention_forward equals chapter 8's reference attention on many shapes",
          "[attention_forward][forward][c:attention_forward.output][c:attention_forward.layout]") {
    unsigned seed = 10;
    for (const auto& sh : kShapes) {
        const Cf q = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        const Cf k = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        const Cf v = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        Lse lse;
        const Cf out = wb::attention_forward(q, k, v, lse);
        Cf weights;
        const Cf expected = wbtest::causal_attention_forward<float>(q, k, v, weights);
        INFO("shape [B, H, T, d] = " << shape_name(sh));
        WB_CHECK_CLOSE(out, expected, 1e-5,
                       "the kernel must equal softmax(q kᵀ / sqrt(d), causal) v — did you forget "
                       "to rescale o by exp(m - m_new), update m, read keys j > i, or scale by d?");
    }
}

TEST_CASE("attention_forward writes lse as log-sum-exp of the scaled causal scores",
          "[attention_forward][forward][c:attention_forward.lse]") {
    const std::size_t B = 2, H = 2, T = 6, d = 5;
    const Cf q = randn4(B, H, T, d, 21);
    const Cf k = randn4(B, H, T, d, 22);
    const Cf v = randn4(B, H, T, d, 23);
    Lse lse;
    (void)wb::attention_forward(q, k, v, lse);
    // Expected in double, directly from the definition: log Σ_{j ≤ i} exp(q_i·k_j / sqrt(d)).
    Lse expected = xt::zeros<float>({B, H, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < T; ++i) {
                double sum = 0.0;
                for (std::size_t j = 0; j <= i; ++j) {
                    double dot = 0.0;
                    for (std::size_t c = 0; c < d; ++c)
                        dot += double(q(b, h, i, c)) * k(b, h, j, c);
                    sum += std::exp(dot / std::sqrt(double(d)));
                }
                expected(b, h, i) = static_cast<float>(std::log(sum));
            }
    WB_CHECK_CLOSE(lse, expected, 1e-5,
                   "lse[b,h,i] = m + log(l) over keys j ≤ i — did you store log(l) without the "
                   "max, or sum over future keys?");
}

TEST_CASE("attention_forward with T = 1 returns v, and lse is the single scaled score",
          "[attention_forward][forward][c:attention_forward.output][c:attention_forward.lse]") {
    // One position: the softmax has one entry, weight 1. lse = q·k / sqrt(d) by hand:
    // q·k = 1·2 + 2·(-1) + 3·1 + 4·0.5 = 5, / sqrt(4) = 2.5.
    const Cf q = {{{{1, 2, 3, 4}}}};
    const Cf k = {{{{2, -1, 1, 0.5}}}};
    const Cf v = {{{{0.25, -3, 7, 1}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    WB_CHECK_CLOSE(out, v, 1e-6, "with one key the weight is exactly 1: out must equal v");
    const Lse expected_lse = {{{2.5f}}};
    WB_CHECK_CLOSE(lse, expected_lse, 1e-6, "lse of one score is the score itself, q·k / sqrt(d)");
}

TEST_CASE("attention_forward is causal: changing k and v at position j leaves rows < j alone",
          "[attention_forward][forward][causal][c:attention_forward.causal]") {
    const std::size_t B = 1, H = 2, T = 8, d = 6, j = 5;
    const Cf q = randn4(B, H, T, d, 31);
    Cf k = randn4(B, H, T, d, 32);
    Cf v = randn4(B, H, T, d, 33);
    Lse lse1, lse2;
    const Cf out1 = wb::attention_forward(q, k, v, lse1);
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t c = 0; c < d; ++c) {
            k(0, h, j, c) += 50.0f;  // a huge future score: it would dominate if it were read
            v(0, h, j, c) = 1000.0f;
        }
    const Cf out2 = wb::attention_forward(q, k, v, lse2);
    const Cf before1 = xt::view(out1, xt::all(), xt::all(), xt::range(0, j), xt::all());
    const Cf before2 = xt::view(out2, xt::all(), xt::all(), xt::range(0, j), xt::all());
    check_same_bits(before1, before2,
                    "rows i < j changed when key/value j changed: the loop over keys must stop "
                    "at j = i (causal), never read keys j > i");
    const Cf after1 = xt::view(out1, xt::all(), xt::all(), xt::range(j, T), xt::all());
    const Cf after2 = xt::view(out2, xt::all(), xt::all(), xt::range(j, T), xt::all());
    INFO("rows i ≥ j must see the change; max |Δ| = " << xt::amax(xt::abs(after1 - after2))());
    CHECK(xt::amax(xt::abs(after1 - after2))() > 1.0f);
}

TEST_CASE("attention_forward stays finite for scaled scores of ±1000",
          "[attention_forward][forward][stability][c:attention_forward.output]"
          "[c:attention_forward.non-finite]") {
    // c = sqrt(2000), q_i = ±c e0, k_j = κ_j c e0, d = 4: scores q·k / 2 = ±1000 κ_j.
    // κ = (1, -1, 0.5). Row 0: score 1000 → out = v0, lse = 1000.
    // Row 1 (q = +c e0): scores 1000, -1000 → out = v0, lse = 1000 + log(1 + e^-2000) = 1000.
    // Row 2 (q = -c e0): scores -1000, 1000, -500 → out = v1, lse = 1000.
    const float c = std::sqrt(2000.0f);
    Cf q = xt::zeros<float>({1, 1, 3, 4});
    Cf k = xt::zeros<float>({1, 1, 3, 4});
    q(0, 0, 0, 0) = c;
    q(0, 0, 1, 0) = c;
    q(0, 0, 2, 0) = -c;
    k(0, 0, 0, 0) = c;
    k(0, 0, 1, 0) = -c;
    k(0, 0, 2, 0) = 0.5f * c;
    const Cf v = {{{{1, 2, 3, 4}, {-1, -2, -3, -4}, {9, 9, 9, 9}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    const Cf expected = {{{{1, 2, 3, 4}, {1, 2, 3, 4}, {-1, -2, -3, -4}}}};
    WB_CHECK_CLOSE(out, expected, 1e-5,
                   "exp(1000) overflows: keep a running max m and use exp(s - m), rescaling the "
                   "old sum and output by exp(m - m_new)");
    const Lse expected_lse = {{{1000.0f, 1000.0f, 1000.0f}}};
    WB_CHECK_CLOSE(lse, expected_lse, 1e-5, "lse = m + log(l) must stay finite (1000 here)");

    const Cf dout = xt::ones<float>({1, 1, 3, 4});
    Cf dq, dk, dv;
    wb::attention_backward(q, k, v, out, lse, dout, dq, dk, dv);
    bool finite = true;
    for (const Cf* g : {&dq, &dk, &dv})
        for (float x : *g) finite = finite && std::isfinite(x);
    INFO("the backward must recompute p = exp(s - lse) (≤ 1), never exp(s) on its own");
    CHECK(finite);
}

TEST_CASE("attention_forward on a row whose scores are all -1000 gives its values, lse -1000",
          "[attention_forward][forward][stability][c:attention_forward.output]"
          "[c:attention_forward.lse]") {
    // c = sqrt(2000), d = 4: scores q·k / 2. q_0 = q_1 = -c e0, k_0 = c e0, k_1 = 0.5 c e0.
    // Row 0: score -1000 → out = v0, lse = -1000. Row 1: scores -1000, -500 → out = v1 (v0's
    // weight is e^-500), lse = -500 + log(1 + e^-500) = -500. Every score of these rows is far
    // below 0: a running max started at 0 gives exp(-1000 - 0) = 0, l = 0 and out = 0 / 0.
    const float c = std::sqrt(2000.0f);
    Cf q = xt::zeros<float>({1, 1, 2, 4});
    Cf k = xt::zeros<float>({1, 1, 2, 4});
    q(0, 0, 0, 0) = -c;
    q(0, 0, 1, 0) = -c;
    k(0, 0, 0, 0) = c;
    k(0, 0, 1, 0) = 0.5f * c;
    const Cf v = {{{{1, 2, 3, 4}, {-1, -2, -3, -4}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    const Cf expected = {{{{1, 2, 3, 4}, {-1, -2, -3, -4}}}};
    INFO(
        "hint: start the running max at m = -inf, not 0: with every score at -1000 an m of 0 "
        "makes every exp(s - m) underflow to 0, so l = 0 and out = 0 / 0");
    WB_CHECK_CLOSE(out, expected, 1e-5,
                   "the softmax of scores that are all very negative is still a weighted "
                   "average of v: the max shift uses the row's own maximum, -1000 here");
    const Lse expected_lse = {{{-1000.0f, -500.0f}}};
    WB_CHECK_CLOSE(lse, expected_lse, 1e-5, "lse = m + log(l) with m the row's max score");
}

// ---- backward --------------------------------------------------------------------------------

TEST_CASE("attention_backward matches PyTorch's autograd on the hand example",
          "[attention_backward][backward][c:attention_backward.gradients]") {
    const Cf q = {{{{1, 0, 2}, {0.5, -1, 1}, {-1, 2, 0}}}};
    const Cf k = {{{{0, 1, 1}, {2, 0, -1}, {1, 1, 1}}}};
    const Cf v = {{{{1, 2, 3}, {-1, 0, 1}, {0.5, 0.5, -2}}}};
    const Cf dout = {{{{1, -1, 0.5}, {0, 2, 1}, {-0.5, 1, 1}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    Cf dq, dk, dv;
    wb::attention_backward(q, k, v, out, lse, dout, dq, dk, dv);
    // torch (float64): out.backward(dout) through softmax(masked q@k.T/sqrt(3))@v.
    const Cf edq = {{{{0, 0, 0},
                      {-1.73205081f, 0.866025404f, 1.73205081f},
                      {-0.821321344f, 0.0244409403f, 0.0488818806f}}}};
    const Cf edk = {{{{-0.363867702f, 0.727735403f, 0.866025404f},
                      {-0.408571762f, 0.817143523f, -0.866025404f},
                      {0.772439463f, -1.54487893f, 0}}}};
    const Cf edv = {{{{0.698922981f, 0.602154038f, 1.60215404f},
                      {-0.0299031861f, 1.05980637f, 0.559806372f},
                      {-0.169019795f, 0.33803959f, 0.33803959f}}}};
    WB_CHECK_CLOSE(
        dv, edv, 1e-5,
        "dv_j = Σ_{i ≥ j} P_ij dout_i: accumulate (+=) over the query rows, never assign");
    WB_CHECK_CLOSE(dq, edq, 1e-5,
                   "dq_i = Σ_j dS_ij k_j / sqrt(d) with dS = P ⊙ (dP − D_i), D_i = dout_i · out_i");
    WB_CHECK_CLOSE(dk, edk, 1e-5,
                   "dk_j = Σ_i dS_ij q_i / sqrt(d) — did you drop D_i or the 1/sqrt(d)?");
}

TEST_CASE("attention_backward equals chapter 8's reference backward in float",
          "[attention_backward][backward][c:attention_backward.gradients]") {
    // Tolerance 1e-5 (absolute + relative): both are float, the kernel recomputes
    // P = exp(s − lse) where the reference divides by a sum; they differ by a few ulps.
    unsigned seed = 40;
    for (const auto& sh : kShapes) {
        const Cf q = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        const Cf k = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        const Cf v = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        const Cf dout = randn4(sh[0], sh[1], sh[2], sh[3], seed++);
        Lse lse;
        const Cf out = wb::attention_forward(q, k, v, lse);
        Cf dq, dk, dv;
        wb::attention_backward(q, k, v, out, lse, dout, dq, dk, dv);

        Cf weights, rdq, rdk, rdv;
        (void)wbtest::causal_attention_forward<float>(q, k, v, weights);
        wb::causal_attention_backward<float>(dout, q, k, v, weights, rdq, rdk, rdv);
        INFO("shape [B, H, T, d] = " << shape_name(sh));
        WB_CHECK_CLOSE(dv, rdv, 1e-5, "dv_j = Σ_{i ≥ j} P_ij dout_i, summed over every query row");
        WB_CHECK_CLOSE(dq, rdq, 1e-5,
                       "dq: did you subtract D_i = dout_i · out_i inside dS = P (dP − D_i), "
                       "and recompute P = exp(s − lse) with the lse of the forward?");
        WB_CHECK_CLOSE(dk, rdk, 1e-5, "dk_j = Σ_{i ≥ j} dS_ij q_i / sqrt(d)");
    }
}

TEST_CASE("attention_backward equals chapter 8's backward run in double on the same inputs",
          "[attention_backward][backward][c:attention_backward.gradients]") {
    // The double reference is exact to ~1e-15; the float kernel is within 1e-4 of it
    // (absolute + relative; float rounding of sums over up to 17 keys, values of order 1).
    const std::size_t B = 2, H = 2, T = 11, d = 6;
    const Cf q = randn4(B, H, T, d, 61);
    const Cf k = randn4(B, H, T, d, 62);
    const Cf v = randn4(B, H, T, d, 63);
    const Cf dout = randn4(B, H, T, d, 64);
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    Cf dq, dk, dv;
    wb::attention_backward(q, k, v, out, lse, dout, dq, dk, dv);

    const Cd qd = xt::cast<double>(q), kd = xt::cast<double>(k), vd = xt::cast<double>(v);
    Cd weights, rdq, rdk, rdv;
    const Cd rout = wbtest::causal_attention_forward<double>(qd, kd, vd, weights);
    wb::causal_attention_backward<double>(Cd(xt::cast<double>(dout)), qd, kd, vd, weights, rdq, rdk,
                                          rdv);
    WB_CHECK_CLOSE(out, rout, 1e-4, "the forward drifts from the double reference");
    WB_CHECK_CLOSE(dq, rdq, 1e-4, "dq drifts from the exact gradient — is D_i in dS?");
    WB_CHECK_CLOSE(dk, rdk, 1e-4, "dk drifts from the exact gradient — 1/sqrt(d) on dS?");
    WB_CHECK_CLOSE(dv, rdv, 1e-4, "dv drifts from the exact gradient — accumulate over rows");
}

TEST_CASE("attention_backward with T = 1 gives dv = dout and dq = dk = 0",
          "[attention_backward][backward][c:attention_backward.gradients]") {
    // One key: P = 1 whatever the score, so the score's gradient dS = 1·(dP − D) = 0 exactly
    // (D = dout·out = dout·v = dP): dq = dk = 0, and out = v gives dv = dout.
    const Cf q = {{{{1, 2, 3, 4, 5}}}};
    const Cf k = {{{{-1, 0.5, 2, 0, 1}}}};
    const Cf v = {{{{3, -2, 1, 0.5, 4}}}};
    const Cf dout = {{{{0.5, 1, -1, 2, -3}}}};
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    Cf dq, dk, dv;
    wb::attention_backward(q, k, v, out, lse, dout, dq, dk, dv);
    const Cf zero = xt::zeros<float>({1, 1, 1, 5});
    WB_CHECK_CLOSE(dv, dout, 1e-5, "out = v when T = 1, so dv must equal dout");
    WB_CHECK_CLOSE(dq, zero, 1e-5, "dS = P (dP − D_i) is 0 with one key: did you drop D_i?");
    WB_CHECK_CLOSE(dk, zero, 1e-5, "dS = P (dP − D_i) is 0 with one key: did you drop D_i?");
}

TEST_CASE("attention_backward assigns dq, dk, dv whatever the raw buffers held",
          "[attention_backward][backward][c:attention_backward.assigned]") {
    const wb::AttentionShape s{2, 2, 5, 3};
    const std::size_t n = 2 * 2 * 5 * 3;
    const Cf q = randn4(2, 2, 5, 3, 71), k = randn4(2, 2, 5, 3, 72), v = randn4(2, 2, 5, 3, 73);
    const Cf dout = randn4(2, 2, 5, 3, 74);
    Cf out = xt::zeros<float>({2, 2, 5, 3});
    Lse lse = xt::zeros<float>({2, 2, 5});
    wb::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());

    std::vector<float> dq0(n, 0.0f), dk0(n, 0.0f), dv0(n, 0.0f);
    std::vector<float> dq7(n, 7.0f), dk7(n, 7.0f), dv7(n, 7.0f);  // garbage from a previous step
    wb::attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                           dq0.data(), dk0.data(), dv0.data());
    wb::attention_backward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                           dq7.data(), dk7.data(), dv7.data());
    INFO(
        "the gradients must be assigned: zero each head's dq, dk, dv before accumulating "
        "(a buffer holding 7s gave a different answer)");
    CHECK(dq0 == dq7);
    CHECK(dk0 == dk7);
    CHECK(dv0 == dv7);
}

// ---- threads ---------------------------------------------------------------------------------

TEST_CASE("attention_forward gives the same bits with 1 and 4 threads",
          "[attention_forward][threads][c:attention_forward.deterministic]") {
    // B·H = 15 heads, T = 150: more rows, heads and tiles than threads.
    const Cf q = randn4(3, 5, 150, 7, 81), k = randn4(3, 5, 150, 7, 82),
             v = randn4(3, 5, 150, 7, 83);
    Lse lse1, lse4;
    Cf out1, out4;
    with_threads(1, [&] { out1 = wb::attention_forward(q, k, v, lse1); });
    with_threads(4, [&] { out4 = wb::attention_forward(q, k, v, lse4); });
    check_same_bits(out1, out4,
                    "each query row must be computed by one thread, keys in order j = 0..i, so the "
                    "thread count cannot change a single bit (no shared accumulators)");
    check_same_bits(lse1, lse4, "lse depends on the thread count: a race on m or l?");
}

TEST_CASE("attention_backward gives the same bits with 1 and 4 threads",
          "[attention_backward][threads][backward][c:attention_backward.deterministic]") {
    // One (b, h) per thread: no two threads add into the same dk or dv element, and each sum
    // runs in a fixed order, so the backward is bit-identical too.
    const Cf q = randn4(3, 5, 150, 7, 91), k = randn4(3, 5, 150, 7, 92),
             v = randn4(3, 5, 150, 7, 93);
    const Cf dout = randn4(3, 5, 150, 7, 94);
    Lse lse;
    const Cf out = wb::attention_forward(q, k, v, lse);
    Cf dq1, dk1, dv1, dq4, dk4, dv4;
    with_threads(1, [&] { wb::attention_backward(q, k, v, out, lse, dout, dq1, dk1, dv1); });
    with_threads(4, [&] { wb::attention_backward(q, k, v, out, lse, dout, dq4, dk4, dv4); });
    const std::string hint =
        "parallelise the backward over (b, h) only: dk and dv sum over query rows, so splitting "
        "the rows of one head across threads races";
    check_same_bits(dq1, dq4, hint);
    check_same_bits(dk1, dk4, hint);
    check_same_bits(dv1, dv4, hint);
}

// ---- errors ----------------------------------------------------------------------------------

TEST_CASE("raw attention_forward and attention_backward reject an axis of size 0",
          "[attention_forward][attention_backward][errors][c:attention_forward.zero-axis]"
          "[c:attention_backward.zero-axis]") {
    std::vector<float> buf(16, 0.0f);
    float* p = buf.data();
    WB_CHECK_THROWS(wb::ValueError,
                    wb::attention_forward(wb::AttentionShape{1, 1, 0, 4}, p, p, p, p, p),
                    "check B, H, T, d ≥ 1 before touching the buffers", "wb::attention_forward",
                    "[1, 1, 0, 4]");
    WB_CHECK_THROWS(wb::ValueError,
                    wb::attention_forward(wb::AttentionShape{1, 1, 2, 0}, p, p, p, p, p),
                    "d = 0 would divide by sqrt(0)", "wb::attention_forward", "[1, 1, 2, 0]");
    WB_CHECK_THROWS(
        wb::ValueError,
        wb::attention_backward(wb::AttentionShape{0, 2, 2, 2}, p, p, p, p, p, p, p, p, p),
        "check B, H, T, d ≥ 1 in the backward too", "wb::attention_backward", "[0, 2, 2, 2]");
}

TEST_CASE("attention_forward wrapper rejects mismatched or empty shapes",
          "[attention_forward][errors][c:attention_forward.wrapper-shape-mismatch]") {
    const Cf q = randn4(2, 2, 4, 3, 1);
    const Cf bad = randn4(2, 2, 5, 3, 2);
    Lse lse;
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(q, bad, q, lse), "k must have q's shape",
                    "wb::attention_forward", "[2, 2, 5, 3]", "[2, 2, 4, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(q, q, bad, lse), "v must have q's shape",
                    "wb::attention_forward", "[2, 2, 5, 3]", "[2, 2, 4, 3]");
    const Cf empty = xt::zeros<float>({2, 2, 0, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(empty, empty, empty, lse),
                    "an empty q has no rows to attend from", "wb::attention_forward",
                    "[2, 2, 0, 3]");
}

TEST_CASE("attention_backward wrapper rejects mismatched shapes, lse included",
          "[attention_backward][errors][c:attention_backward.wrapper-shape-mismatch]") {
    const Cf q = randn4(1, 2, 4, 3, 3);
    Lse lse;
    const Cf out = wb::attention_forward(q, q, q, lse);
    Cf dq, dk, dv;
    const Cf bad = randn4(1, 2, 4, 5, 4);
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(q, q, q, out, lse, bad, dq, dk, dv),
                    "dout must have q's shape", "wb::attention_backward", "[1, 2, 4, 5]",
                    "[1, 2, 4, 3]");
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(q, bad, q, out, lse, q, dq, dk, dv),
                    "k must have q's shape", "wb::attention_backward", "[1, 2, 4, 5]");
    const Lse bad_lse = xt::zeros<float>({1, 2, 3});
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(q, q, q, out, bad_lse, q, dq, dk, dv),
                    "lse is [B, H, T], one value per query row", "wb::attention_backward",
                    "[1, 2, 3]", "[1, 2, 4]");
}

TEST_CASE(
    "attention_forward and attention_backward reject mismatched batch or heads, and "
    "B = 0 or H = 0",
    "[attention_forward][attention_backward][errors][c:attention_forward.zero-axis]"
    "[c:attention_backward.zero-axis][c:attention_forward.wrapper-shape-mismatch]"
    "[c:attention_backward.wrapper-shape-mismatch]") {
    std::vector<float> buf(16, 0.0f);
    float* p = buf.data();
    WB_CHECK_THROWS(wb::ValueError,
                    wb::attention_forward(wb::AttentionShape{0, 1, 2, 4}, p, p, p, p, p),
                    "B = 0: nothing to compute, and no buffer may be touched",
                    "wb::attention_forward", "[0, 1, 2, 4]");
    WB_CHECK_THROWS(
        wb::ValueError, wb::attention_forward(wb::AttentionShape{1, 0, 2, 4}, p, p, p, p, p),
        "H = 0 is refused like every other empty axis", "wb::attention_forward", "[1, 0, 2, 4]");
    WB_CHECK_THROWS(
        wb::ValueError,
        wb::attention_backward(wb::AttentionShape{1, 1, 2, 0}, p, p, p, p, p, p, p, p, p),
        "d = 0 would divide by sqrt(0) in the backward too", "wb::attention_backward",
        "[1, 1, 2, 0]");

    const Cf q = randn4(2, 2, 4, 3, 11);
    Lse lse;
    const Cf other_batch = randn4(3, 2, 4, 3, 12);
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(q, other_batch, other_batch, lse),
                    "k and v must have q's batch B", "wb::attention_forward", "[3, 2, 4, 3]",
                    "[2, 2, 4, 3]");
    const Cf other_heads = randn4(2, 1, 4, 3, 13);
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(q, q, other_heads, lse),
                    "v must have q's heads H", "wb::attention_forward", "[2, 1, 4, 3]",
                    "[2, 2, 4, 3]");

    const Cf out = wb::attention_forward(q, q, q, lse);
    Cf dq, dk, dv;
    WB_CHECK_THROWS(
        wb::ShapeError, wb::attention_backward(q, q, other_heads, out, lse, q, dq, dk, dv),
        "v must have q's shape in the backward", "wb::attention_backward", "[2, 1, 4, 3]");
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::attention_backward(q, q, q, other_batch, lse, q, dq, dk, dv),
                    "out must have q's shape", "wb::attention_backward", "[3, 2, 4, 3]");
}

TEST_CASE("the wrappers reject a tensor of q's size in another shape, lse included",
          "[attention_forward][attention_backward][errors]"
          "[c:attention_forward.wrapper-shape-mismatch]"
          "[c:attention_backward.wrapper-shape-mismatch]") {
    // Each bad tensor holds exactly as many elements as the right one: a check of the element
    // count (size()) accepts it, only a check of the shape refuses it.
    const Cf q = randn4(1, 2, 3, 4, 21);
    const Cf swapped = randn4(1, 2, 4, 3, 22);  // T and d exchanged: 24 elements, like q
    Lse lse;
    INFO("hint: compare the whole shape with require_shape, not the element count");
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_forward(q, swapped, q, lse),
                    "k must have q's shape, not only its number of elements",
                    "wb::attention_forward", "[1, 2, 4, 3]", "[1, 2, 3, 4]");
    const Cf out = wb::attention_forward(q, q, q, lse);
    Cf dq, dk, dv;
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(q, q, q, swapped, lse, q, dq, dk, dv),
                    "out must have q's shape, not only its number of elements",
                    "wb::attention_backward", "[1, 2, 4, 3]", "[1, 2, 3, 4]");
    WB_CHECK_THROWS(wb::ShapeError, wb::attention_backward(q, q, q, out, lse, swapped, dq, dk, dv),
                    "dout must have q's shape, not only its number of elements",
                    "wb::attention_backward", "[1, 2, 4, 3]", "[1, 2, 3, 4]");
    const Lse lse_swapped = xt::zeros<float>({1, 3, 2});  // [B, T, H]: 6 values, like [1, 2, 3]
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::attention_backward(q, q, q, out, lse_swapped, q, dq, dk, dv),
                    "lse is [B, H, T], not any tensor of B·H·T values", "wb::attention_backward",
                    "[1, 3, 2]", "[1, 2, 3]");
}

TEST_CASE("attention_backward wrapper rejects an empty q with a ShapeError, as the forward does",
          "[attention_backward][errors][c:attention_backward.wrapper-shape-mismatch]") {
    // Every tensor agrees with q's shape [2, 2, 0, 3]; only the axis of size 0 is wrong. The raw
    // kernel would refuse it too, but with its own ValueError: the wrapper checks first.
    const Cf empty = xt::zeros<float>({2, 2, 0, 3});
    const Lse lse = xt::zeros<float>({2, 2, 0});
    Cf dq, dk, dv;
    INFO("hint: call require_nonempty on q in the backward wrapper too, before the raw kernel");
    WB_CHECK_THROWS(
        wb::ShapeError, wb::attention_backward(empty, empty, empty, empty, lse, empty, dq, dk, dv),
        "an empty q has no rows to attend from", "wb::attention_backward", "[2, 2, 0, 3]");
}
