#include "5-mha/mha.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "1-tensors/tensors.hpp"
#include "golden.hpp"

namespace {

using wb::MhaParams;
using wb::Tensor2;
using wb::Tensor3;
using wb::Tensor4;

// A Linear with seeded standard-normal weights scaled by 1/sqrt(in) (unit-scale outputs) and,
// if asked, a bias of scale 0.1. Built here so that the checks do not depend on init_mha.
wb::Linear random_linear(std::size_t D, bool bias, unsigned seed) {
    wb::Linear l;
    l.weight = wbtest::randn<Tensor2>({D, D}, seed) / std::sqrt(static_cast<float>(D));
    l.bias = bias ? wb::Tensor1(wbtest::randn<wb::Tensor1>({D}, seed + 100) * 0.1f)
                  : wb::Tensor1::from_shape({0});
    return l;
}

MhaParams random_params(std::size_t D, std::size_t H, bool bias, unsigned seed) {
    MhaParams p;
    p.H = H;
    p.w_q = random_linear(D, bias, seed);
    p.w_k = random_linear(D, bias, seed + 1);
    p.w_v = random_linear(D, bias, seed + 2);
    p.w_o = random_linear(D, bias, seed + 3);
    return p;
}

wb::Linear identity_linear(std::size_t D) {
    wb::Linear l;
    l.weight = Tensor2::from_shape({D, D});
    l.weight.fill(0.0f);
    for (std::size_t i = 0; i < D; ++i) l.weight(i, i) = 1.0f;
    l.bias = wb::Tensor1::from_shape({0});
    return l;
}

// `allowed` of shape [Bm, N, M] from a rule (i, j) -> may query i read key j.
template <class F>
wb::Mask make_mask(std::size_t Bm, std::size_t N, std::size_t M, F rule) {
    wb::Mask m{xt::xtensor<bool, 3>::from_shape({Bm, N, M})};
    for (std::size_t b = 0; b < Bm; ++b)
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t j = 0; j < M; ++j) m.allowed(b, i, j) = rule(b, i, j);
    return m;
}

wb::Mask causal_mask(std::size_t T) {
    return make_mask(1, T, T, [](std::size_t, std::size_t i, std::size_t j) { return j <= i; });
}

// Multi-head attention written out with plain loops in double precision, one head at a time,
// independent of every chapter's code. Head h uses rows h*d..(h+1)*d of W_Q, W_K, W_V (and
// of their biases) and columns h*d..(h+1)*d of W_O: the "H small attentions" view of §10.
struct Naive {
    Tensor3 output;   // [B, N, D]
    Tensor4 weights;  // [B, H, N, M]
};

Naive naive_mha(const Tensor3& xq, const Tensor3& xkv, const MhaParams& p,
                const std::optional<wb::Mask>& mask = std::nullopt) {
    const std::size_t B = xq.shape(0), N = xq.shape(1), M = xkv.shape(1), D = xq.shape(2);
    const std::size_t H = p.H, d = D / H;
    auto bias = [](const wb::Linear& l, std::size_t o) {
        return l.bias.size() ? static_cast<double>(l.bias(o)) : 0.0;
    };
    // row o of layer l applied to token t of x: Σ_f x[b, t, f] W[o, f] + bias[o]
    auto project = [&](const Tensor3& x, std::size_t b, std::size_t t, const wb::Linear& l,
                       std::size_t o) {
        double s = bias(l, o);
        for (std::size_t f = 0; f < D; ++f) s += double(x(b, t, f)) * double(l.weight(o, f));
        return s;
    };
    Naive r{Tensor3::from_shape({B, N, D}), Tensor4::from_shape({B, H, N, M})};
    std::vector<double> concat(N * D);  // [N, D] of one sequence: head h in columns h*d..
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t h = 0; h < H; ++h) {
            // This head's Q [N, d], K [M, d], V [M, d] from its slices of the projections.
            std::vector<double> q(N * d), k(M * d), v(M * d);
            for (std::size_t c = 0; c < d; ++c) {
                for (std::size_t i = 0; i < N; ++i)
                    q[i * d + c] = project(xq, b, i, p.w_q, h * d + c);
                for (std::size_t j = 0; j < M; ++j) {
                    k[j * d + c] = project(xkv, b, j, p.w_k, h * d + c);
                    v[j * d + c] = project(xkv, b, j, p.w_v, h * d + c);
                }
            }
            for (std::size_t i = 0; i < N; ++i) {
                std::vector<double> s(M);
                double mx = -1e300;
                for (std::size_t j = 0; j < M; ++j) {
                    double dotqk = 0.0;
                    for (std::size_t c = 0; c < d; ++c) dotqk += q[i * d + c] * k[j * d + c];
                    s[j] = dotqk / std::sqrt(double(d));
                    const bool ok =
                        !mask || mask->allowed(mask->allowed.shape(0) == 1 ? 0 : b, i, j);
                    if (!ok) s[j] = -INFINITY;
                    mx = std::max(mx, s[j]);
                }
                double z = 0.0;
                for (std::size_t j = 0; j < M; ++j) z += std::exp(s[j] - mx);
                for (std::size_t c = 0; c < d; ++c) concat[i * D + h * d + c] = 0.0;
                for (std::size_t j = 0; j < M; ++j) {
                    const double a = std::exp(s[j] - mx) / z;
                    r.weights(b, h, i, j) = static_cast<float>(a);
                    for (std::size_t c = 0; c < d; ++c)
                        concat[i * D + h * d + c] += a * v[j * d + c];
                }
            }
        }
        // Output projection: out[i, o] = Σ_h Σ_c head_h[i, c] W_O[o, h*d + c] + b_O[o].
        for (std::size_t i = 0; i < N; ++i) {
            for (std::size_t o = 0; o < D; ++o) {
                double s = bias(p.w_o, o);
                for (std::size_t f = 0; f < D; ++f)
                    s += concat[i * D + f] * double(p.w_o.weight(o, f));
                r.output(b, i, o) = static_cast<float>(s);
            }
        }
    }
    return r;
}

// Largest |a - b| over two tensors of the same shape.
template <class A, class B>
double max_diff(const A& a, const B& b) {
    double m = 0.0;
    auto ib = b.begin();
    for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib)
        m = std::max(m, std::fabs(double(*ia) - double(*ib)));
    return m;
}

// Parameters of a golden file (written by tools/goldens/chapter5.py).
MhaParams golden_params(const wbtest::Golden& g, std::size_t H, bool bias) {
    MhaParams p;
    p.H = H;
    const char* names[4][2] = {{"w_q", "b_q"}, {"w_k", "b_k"}, {"w_v", "b_v"}, {"w_o", "b_o"}};
    wb::Linear* layers[4] = {&p.w_q, &p.w_k, &p.w_v, &p.w_o};
    for (int n = 0; n < 4; ++n) {
        layers[n]->weight = g.tensor<2>(names[n][0]);
        layers[n]->bias = bias ? g.tensor<1>(names[n][1]) : wb::Tensor1::from_shape({0});
    }
    return p;
}

const char* kSplitHint =
    "head h must use features h*d..(h+1)*d of the projections: split with reshape to "
    "[B, T, H, d] THEN transpose to [B, H, T, d] (a plain reshape to [B, H, T, d] mixes tokens "
    "and heads), merge back with transpose before reshape, and scale by sqrt(d) = sqrt(D / H)";

}  // namespace

// ---- the tensor flow of §11 ----------------------------------------------------------------

TEST_CASE(
    "the example of notes 11 (B=2, T=4, D=8, H=2) gives Q/K/V [2, 2, 4, 4], weights "
    "[2, 2, 4, 4] and output [2, 4, 8]",
    "[mha][shapes][c:multi_head_attention.formula][c:multi_head_attention.weights-per-head]") {
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 11);
    const MhaParams p = wb::init_mha(8, 2, true, 5);
    const wb::MhaResult r = wb::self_attention(x, p);
    WB_CHECK_SHAPE(r.weights, (wb::Shape{2, 2, 4, 4}),
                   "weights are [B, H, T, T]: one T x T pattern per head, not averaged over heads");
    WB_CHECK_SHAPE(r.output, (wb::Shape{2, 4, 8}),
                   "the output is [B, T, D]: merge the heads back and apply W_O");
    // The intermediate tensors of §11, built from the parameters init_mha returned.
    for (const wb::Linear* w : {&p.w_q, &p.w_k, &p.w_v}) {
        WB_CHECK_SHAPE(w->weight, (wb::Shape{8, 8}), "init_mha: every projection is [D, D]");
        const Tensor3 projected = wb::linear(x, *w);  // [2, 4, 8]
        WB_CHECK_SHAPE(wb::split_heads(projected, p.H), (wb::Shape{2, 2, 4, 4}),
                       "Q, K and V after split_heads are [B, H, T, d] = [2, 2, 4, 4]");
    }
    // T and d are both 4 here, but they mean different things: with T = 6 only the weights'
    // last two axes change.
    const auto x6 = wbtest::randn<Tensor3>({2, 6, 8}, 12);
    const wb::MhaResult r6 = wb::self_attention(x6, p);
    WB_CHECK_SHAPE(r6.weights, (wb::Shape{2, 2, 6, 6}),
                   "with T = 6 the weights are [B, H, 6, 6]; d = D / H stays 4");
    WB_CHECK_SHAPE(r6.output, (wb::Shape{2, 6, 8}), "with T = 6 the output is [B, 6, D]");
}

TEST_CASE(
    "multi-head attention equals a loop of single-head attentions over slices of W_Q, "
    "W_K, W_V and W_O",
    "[mha][heads][c:multi_head_attention.formula][c:multi_head_attention.head-slices]") {
    // B=2, T=4, D=8, H=2 with biases; expected values from naive_mha above (plain loops in
    // double, head h uses rows h*d..(h+1)*d of W_Q/W_K/W_V and columns h*d..(h+1)*d of W_O).
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 21);
    const MhaParams p = random_params(8, 2, true, 200);
    const wb::MhaResult r = wb::multi_head_attention(x, x, p);
    const Naive expected = naive_mha(x, x, p);
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5, kSplitHint);
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5,
                   "the weights may be right and the output wrong: merge [B, H, T, d] -> "
                   "[B, T, H, d] -> [B, T, D] (head h back in features h*d..(h+1)*d), then "
                   "apply W_O with its bias");
}

TEST_CASE("multi-head attention with four heads and no bias equals the per-head loop",
          "[mha][heads][c:multi_head_attention.formula][c:multi_head_attention.head-slices]") {
    // D=8, H=4 (d = 2), no biases, B=3, T=5; expected from naive_mha (plain loops).
    const auto x = wbtest::randn<Tensor3>({3, 5, 8}, 31);
    const MhaParams p = random_params(8, 4, false, 300);
    const wb::MhaResult r = wb::multi_head_attention(x, x, p);
    const Naive expected = naive_mha(x, x, p);
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5, kSplitHint);
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5,
                   "merge the heads with transpose then reshape, then apply W_O");
}

// ---- self and cross attention (§13) ---------------------------------------------------------

TEST_CASE(
    "cross attention with N queries and M keys gives weights [B, H, N, M] and output [B, N, D]",
    "[mha][cross][c:multi_head_attention.cross]") {
    // Queries from a sequence of N = 3 tokens, keys and values from one of M = 5 tokens.
    const auto x_q = wbtest::randn<Tensor3>({2, 3, 6}, 41);
    const auto x_kv = wbtest::randn<Tensor3>({2, 5, 6}, 42);
    const MhaParams p = random_params(6, 3, true, 400);
    const wb::MhaResult r = wb::multi_head_attention(x_q, x_kv, p);
    WB_CHECK_SHAPE(r.weights, (wb::Shape{2, 3, 3, 5}),
                   "cross attention weights are [B, H, N, M]: one row per query of x_q, one "
                   "column per key of x_kv (did you take K and V from x_q?)");
    WB_CHECK_SHAPE(r.output, (wb::Shape{2, 3, 6}),
                   "the output has one row per QUERY: [B, N, D], whatever M is");
    const Naive expected = naive_mha(x_q, x_kv, p);
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5,
                   "Q = x_q W_Qᵀ, K = x_kv W_Kᵀ, V = x_kv W_Vᵀ: check which sequence and which "
                   "weight each projection uses");
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5,
                   "the values must come from x_kv through W_V (did you swap W_K and W_V, or "
                   "project V from x_q?)");
}

TEST_CASE("self_attention(x) is multi_head_attention(x, x), with and without a mask",
          "[mha][self][c:self_attention.same-as-mha]") {
    const auto x = wbtest::randn<Tensor3>({2, 5, 8}, 51);
    const MhaParams p = random_params(8, 2, true, 500);
    const wb::MhaResult a = wb::self_attention(x, p);
    const wb::MhaResult b = wb::multi_head_attention(x, x, p);
    WB_CHECK_CLOSE(a.output, b.output, 1e-6,
                   "self attention is multi-head attention with x as both sequences");
    WB_CHECK_CLOSE(a.weights, b.weights, 1e-6, "self attention's weights are those of MHA(x, x)");
    // Query i of sequence b may read key j when (i + j + b) is even or j == i.
    const wb::Mask mask = make_mask(2, 5, 5, [](std::size_t s, std::size_t i, std::size_t j) {
        return (i + j + s) % 2 == 0 || i == j;
    });
    const wb::MhaResult am = wb::self_attention(x, p, mask);
    const wb::MhaResult bm = wb::multi_head_attention(x, x, p, mask);
    WB_CHECK_CLOSE(am.weights, bm.weights, 1e-6,
                   "self_attention must pass its mask on to multi_head_attention");
    WB_CHECK_CLOSE(am.output, bm.output, 1e-6,
                   "self_attention must pass its mask on to multi_head_attention");
}

// ---- the parameters ------------------------------------------------------------------------

TEST_CASE("init_mha builds four [D, D] projections with seeds seed .. seed + 3",
          "[mha][init][c:init_mha.seeds][c:init_mha.shapes]") {
    const MhaParams p = wb::init_mha(12, 3, true, 70);
    INFO("init_mha(12, 3, true, 70).H = " << p.H << ", expected 3");
    CHECK(p.H == 3);
    // The expected layers are chapter 2's init_linear (not this chapter's code), as the header
    // specifies: w_q seed, w_k seed + 1, w_v seed + 2, w_o seed + 3.
    const wb::Linear* got[4] = {&p.w_q, &p.w_k, &p.w_v, &p.w_o};
    const char* names[4] = {"w_q", "w_k", "w_v", "w_o"};
    for (unsigned n = 0; n < 4; ++n) {
        INFO(names[n] << " must be init_linear(12, 12, true, 70 + " << n << ")");
        const wb::Linear expected = wb::init_linear(12, 12, true, 70 + n);
        WB_CHECK_SHAPE(got[n]->weight, (wb::Shape{12, 12}), "every projection is [D, D]");
        WB_CHECK_SHAPE(got[n]->bias, (wb::Shape{12}), "with bias, every projection has bias [D]");
        WB_CHECK_CLOSE(got[n]->weight, expected.weight, 0.0,
                       "use a different seed per projection (seed, seed+1, seed+2, seed+3): "
                       "equal seeds make W_Q == W_K and the scores symmetric");
        WB_CHECK_CLOSE(got[n]->bias, expected.bias, 0.0,
                       "the bias comes from the same init_linear");
    }
    const MhaParams nb = wb::init_mha(8, 2, false, 1);
    for (const wb::Linear* l : {&nb.w_q, &nb.w_k, &nb.w_v, &nb.w_o}) {
        WB_CHECK_SHAPE(l->bias, (wb::Shape{0}), "init_mha(..., bias = false): every bias is empty");
    }
}

TEST_CASE("init_mha rejects D % H != 0, H == 0 and D == 0, naming D and H",
          "[mha][errors][c:init_mha.bad-heads]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::init_mha(8, 3, true, 1),
                    "8 features cannot be split into 3 heads of equal width d = D / H",
                    "wb::init_mha", "D = 8", "H = 3");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_mha(8, 0, true, 1),
                    "H == 0 heads: check before dividing by H", "wb::init_mha", "H = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::init_mha(0, 2, false, 1),
                    "D == 0: a model needs at least one feature", "wb::init_mha", "D = 0");
}

// ---- what the heads are (§10) ---------------------------------------------------------------

TEST_CASE("heads are independent, so changing head 0's rows of W_Q changes only head 0's weights",
          "[mha][heads][c:multi_head_attention.head-slices]") {
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 61);
    const MhaParams p = random_params(8, 2, true, 600);
    MhaParams changed = p;
    // Head 0 owns rows 0..3 of W_Q (d = 4): replace them with other numbers.
    const auto other = wbtest::randn<Tensor2>({4, 8}, 62);
    xt::view(changed.w_q.weight, xt::range(0, 4), xt::all()) = other;
    const wb::MhaResult a = wb::self_attention(x, p);
    const wb::MhaResult b = wb::self_attention(x, changed);
    auto head = [](const Tensor4& w, std::size_t h) {
        return Tensor3(xt::view(w, xt::all(), h, xt::all(), xt::all()));
    };
    WB_CHECK_CLOSE(head(b.weights, 1), head(a.weights, 1), 1e-6,
                   "head 1 must not see rows 0..3 of W_Q (they belong to head 0): split the "
                   "projected Q by features (reshape [B, T, H, d] then transpose), not by tokens");
    const double moved = max_diff(head(b.weights, 0), head(a.weights, 0));
    INFO("head 0's weights moved by at most " << moved << " after its rows of W_Q changed");
    INFO(
        "hint: head 0 is computed from rows 0..d-1 of W_Q; if they change nothing, head 0 is "
        "reading another head's slice");
    CHECK(moved > 1e-3);
}

TEST_CASE("each head reads all D input features, not a slice of the input",
          "[mha][heads][c:multi_head_attention.head-slices]") {
    // §10: the heads split the PROJECTED features, not the input. Change only input feature 7
    // (which a wrong "head 0 reads features 0..3 of x" picture would give to head 1 alone).
    const auto x = wbtest::randn<Tensor3>({1, 4, 8}, 71);
    const MhaParams p = random_params(8, 2, false, 700);
    Tensor3 x2 = x;
    for (std::size_t t = 0; t < 4; ++t) x2(0, t, 7) += 2.0f;
    const wb::MhaResult a = wb::self_attention(x, p);
    const wb::MhaResult b = wb::self_attention(x2, p);
    for (std::size_t h = 0; h < 2; ++h) {
        const double moved = max_diff(Tensor2(xt::view(b.weights, 0, h, xt::all(), xt::all())),
                                      Tensor2(xt::view(a.weights, 0, h, xt::all(), xt::all())));
        INFO("head " << h << "'s weights moved by " << moved << " when input feature 7 changed");
        INFO(
            "hint: project with the full [D, D] weights first, then split the result; every "
            "head's rows of W_Q and W_K read all D input features");
        CHECK(moved > 1e-3);
    }
    const Naive expected = naive_mha(x2, x2, p);
    WB_CHECK_CLOSE(b.output, expected.output, 1e-5,
                   "every head's Q, K, V are its rows of the [D, D] projections applied to all "
                   "of x");
}

TEST_CASE("the output projection W_O is applied (a hand-computed case)",
          "[mha][output][c:multi_head_attention.formula]") {
    // D = 2, H = 2 (d = 1), one sequence of T = 2 tokens x = [[1, 2], [3, 4]].
    // W_Q = W_K = 0 -> every score is 0 -> every weight is 1/2 (uniform over 2 keys).
    // W_V = I -> each head's output is the mean of its value column: [2, 3] for both queries.
    // W_O = [[1, 2], [3, 4]], b_O = [0.5, -1] -> y = [2, 3] W_Oᵀ + b_O
    //     = [1*2 + 2*3 + 0.5, 3*2 + 4*3 - 1] = [8.5, 17] (by hand).
    MhaParams p;
    p.H = 2;
    p.w_q.weight = Tensor2{{0.0f, 0.0f}, {0.0f, 0.0f}};
    p.w_k.weight = Tensor2{{0.0f, 0.0f}, {0.0f, 0.0f}};
    p.w_v = identity_linear(2);
    p.w_o.weight = Tensor2{{1.0f, 2.0f}, {3.0f, 4.0f}};
    p.w_o.bias = wb::Tensor1{0.5f, -1.0f};
    const Tensor3 x = {{{1.0f, 2.0f}, {3.0f, 4.0f}}};
    const wb::MhaResult r = wb::self_attention(x, p);
    const Tensor4 uniform = {{{{0.5f, 0.5f}, {0.5f, 0.5f}}, {{0.5f, 0.5f}, {0.5f, 0.5f}}}};
    WB_CHECK_CLOSE(r.weights, uniform, 1e-6, "zero W_Q and W_K give zero scores: uniform weights");
    const Tensor3 expected = {{{8.5f, 17.0f}, {8.5f, 17.0f}}};
    WB_CHECK_CLOSE(r.output, expected, 1e-5,
                   "got the merged heads without W_O? the output is merge(heads) W_Oᵀ + b_O "
                   "([2, 3] before W_O, [11, 16] + b if W_O was not transposed)");
}

TEST_CASE("scores are scaled by sqrt(d) = sqrt(D / H), the width of one head, not sqrt(D)",
          "[mha][scale][c:multi_head_attention.formula]") {
    // D = 4, H = 2 (d = 2); all projections are the identity, no bias.
    // x = [[2, 0, 0, 0], [0, 0, 0, 0]] (B = 1, T = 2).
    // Head 0 (features 0, 1): q0 = k0 = [2, 0], k1 = [0, 0]. Query 0's scores are
    //   [4 / sqrt(2), 0] -> softmax = [σ(2.8284271), 1 - σ(...)] = [0.94419278, 0.05580722]
    //   (math.exp in Python; with sqrt(D) = 2 it would be σ(2) = 0.88079708).
    // Query 1 is [0, 0]: uniform [0.5, 0.5]. Head 1 (features 2, 3) is all zero: uniform.
    // Output (W_O = I): head 0's query 0 reads 0.94419278 * [2, 0] = [1.88838556, 0];
    // query 1 reads 0.5 * [2, 0] = [1, 0]; head 1 gives zeros.
    MhaParams p;
    p.H = 2;
    p.w_q = p.w_k = p.w_v = p.w_o = identity_linear(4);
    const Tensor3 x = {{{2.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}}};
    const wb::MhaResult r = wb::self_attention(x, p);
    const Tensor4 weights = {
        {{{0.94419278f, 0.05580722f}, {0.5f, 0.5f}}, {{0.5f, 0.5f}, {0.5f, 0.5f}}}};
    WB_CHECK_CLOSE(r.weights, weights, 1e-5,
                   "0.88079708 instead of 0.94419278 means you divided by sqrt(D) = 2; divide "
                   "by sqrt(d) with d = D / H the width of one head");
    const Tensor3 output = {{{1.88838556f, 0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 0.0f}}};
    WB_CHECK_CLOSE(r.output, output, 1e-5,
                   "merge heads with transpose then reshape: query 0's features must be "
                   "[head 0 | head 1] of query 0");
}

// ---- masks and positions --------------------------------------------------------------------

TEST_CASE("a causal mask reaches every head, so weights above the diagonal are 0",
          "[mha][mask][c:multi_head_attention.mask]") {
    const std::size_t T = 5;
    const auto x = wbtest::randn<Tensor3>({2, T, 9}, 81);
    const MhaParams p = random_params(9, 3, true, 800);
    const wb::Mask mask = causal_mask(T);
    const wb::MhaResult r = wb::self_attention(x, p, mask);
    WB_CHECK_SHAPE(r.weights, (wb::Shape{2, 3, T, T}), "weights are [B, H, T, T]");
    double future = 0.0, worst_row = 0.0;
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 3; ++h)
            for (std::size_t i = 0; i < T; ++i) {
                double row = 0.0;
                for (std::size_t j = 0; j < T; ++j) {
                    row += r.weights(b, h, i, j);
                    if (j > i) future = std::max(future, std::fabs(double(r.weights(b, h, i, j))));
                }
                worst_row = std::max(worst_row, std::fabs(row - 1.0));
            }
    INFO("largest weight on a future key: " << future << " (expected 0 in every head)");
    INFO(
        "hint: pass the mask on to sdpa (self_attention -> multi_head_attention -> sdpa); "
        "every head uses the same [B, N, M] pattern");
    CHECK(future == 0.0);
    INFO("largest |row sum - 1|: " << worst_row);
    CHECK(worst_row < 1e-5);
    const Naive expected = naive_mha(x, x, p, mask);
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5,
                   "with the causal mask the output must equal the per-head loop's");
}

TEST_CASE("a cross-attention mask [B, N, M] or [1, N, M] passes through to every head",
          "[mha][mask][cross][c:multi_head_attention.mask][c:multi_head_attention.cross]") {
    const auto x_q = wbtest::randn<Tensor3>({2, 3, 8}, 91);
    const auto x_kv = wbtest::randn<Tensor3>({2, 6, 8}, 92);
    const MhaParams p = random_params(8, 4, true, 900);
    // Per sequence: sequence 1 has only 4 real keys (padding of keys 4, 5).
    const wb::Mask per_seq = make_mask(2, 3, 6, [](std::size_t b, std::size_t i, std::size_t j) {
        return (b == 0 || j < 4) && j != i;  // query i also may not read key i
    });
    const wb::MhaResult r = wb::multi_head_attention(x_q, x_kv, p, per_seq);
    const Naive expected = naive_mha(x_q, x_kv, p, per_seq);
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5,
                   "hidden keys must get weight exactly 0 in every head: pass the mask to "
                   "sdpa, whose allowed[b] applies to all H heads of sequence b");
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5, "masked cross attention output");
    const wb::Mask shared =
        make_mask(1, 3, 6, [](std::size_t, std::size_t i, std::size_t j) { return j >= i; });
    const wb::MhaResult s = wb::multi_head_attention(x_q, x_kv, p, shared);
    WB_CHECK_CLOSE(s.weights, naive_mha(x_q, x_kv, p, shared).weights, 1e-5,
                   "a [1, N, M] mask is shared by every sequence of the batch and every head");
}

TEST_CASE("a query that may read no key gets zero heads, so its output row is W_O's bias",
          "[mha][mask][c:multi_head_attention.formula]") {
    // Chapter 4's sdpa gives such a query zero weights and a zero output in every head; the
    // merged heads are then 0 and W_O adds only its bias. V's bias must go into V, before sdpa.
    const auto x_q = wbtest::randn<Tensor3>({2, 3, 8}, 95);
    const auto x_kv = wbtest::randn<Tensor3>({2, 4, 8}, 96);
    const MhaParams p = random_params(8, 2, true, 950);
    // Query 1 of sequence 0 may read no key; every other query reads keys 0 .. i + 1.
    const wb::Mask mask = make_mask(2, 3, 4, [](std::size_t b, std::size_t i, std::size_t j) {
        return !(b == 0 && i == 1) && j <= i + 1;
    });
    const wb::MhaResult r = wb::multi_head_attention(x_q, x_kv, p, mask);
    Naive expected = naive_mha(x_q, x_kv, p, mask);  // its row of 0/0 is replaced below
    for (std::size_t o = 0; o < 8; ++o) expected.output(0, 1, o) = p.w_o.bias(o);
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t j = 0; j < 4; ++j) expected.weights(0, h, 1, j) = 0.0f;
    WB_CHECK_CLOSE(r.weights, expected.weights, 1e-5,
                   "a query with no readable key gets all-zero weights in every head (sdpa)");
    WB_CHECK_CLOSE(r.output, expected.output, 1e-5,
                   "project V with its bias BEFORE sdpa: adding b_V to the heads' output "
                   "afterwards gives a query that reads no key W_O b_V instead of zero heads");
}

TEST_CASE("without mask or positions, permuting the tokens permutes the output (notes 4)",
          "[mha][positions][c:multi_head_attention.formula]") {
    // Attention sees a set of tokens: nothing in it knows their order.
    const auto x = wbtest::randn<Tensor3>({1, 5, 8}, 101);
    const MhaParams p = random_params(8, 2, true, 1000);
    const std::size_t perm[5] = {3, 0, 4, 1, 2};  // new token t is old token perm[t]
    Tensor3 xp = x;
    for (std::size_t t = 0; t < 5; ++t)
        xt::view(xp, 0, t, xt::all()) = xt::view(x, 0, perm[t], xt::all());
    const wb::MhaResult a = wb::self_attention(x, p);
    const wb::MhaResult b = wb::self_attention(xp, p);
    Tensor3 a_perm = a.output;
    Tensor4 w_perm = a.weights;
    for (std::size_t t = 0; t < 5; ++t) {
        xt::view(a_perm, 0, t, xt::all()) = xt::view(a.output, 0, perm[t], xt::all());
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t u = 0; u < 5; ++u)
                w_perm(0, h, t, u) = a.weights(0, h, perm[t], perm[u]);
    }
    WB_CHECK_CLOSE(b.output, a_perm, 1e-5,
                   "row t of the permuted input's output must be row perm[t] of the original "
                   "output: did something mix tokens by position (a reshape across T)?");
    WB_CHECK_CLOSE(b.weights, w_perm, 1e-5,
                   "the weights must permute along both the query and the key axis");
}

// ---- goldens from torch.nn.MultiheadAttention -----------------------------------------------

TEST_CASE("matches torch.nn.MultiheadAttention on self attention with bias, B=2 T=4 D=8 H=2",
          "[mha][golden][c:multi_head_attention.formula]") {
    const wbtest::Golden g("5-mha/self_bias.txt");
    const MhaParams p = golden_params(g, 2, true);
    const Tensor3 x = g.tensor<3>("x_q");
    const wb::MhaResult r = wb::self_attention(x, p);
    WB_CHECK_CLOSE(r.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "per-head weights of torch (average_attn_weights=False): check the head "
                   "split and the scale sqrt(d)");
    WB_CHECK_CLOSE(r.output, g.tensor<3>("output"), wbtest::golden_tolerance,
                   "torch's output: every projection has a bias, and W_O comes last");
}

TEST_CASE("matches torch.nn.MultiheadAttention on cross attention with N=3 queries, M=5 keys, H=4",
          "[mha][golden][cross][c:multi_head_attention.cross]") {
    const wbtest::Golden g("5-mha/cross.txt");
    const MhaParams p = golden_params(g, 4, true);
    const wb::MhaResult r = wb::multi_head_attention(g.tensor<3>("x_q"), g.tensor<3>("x_kv"), p);
    WB_CHECK_CLOSE(r.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "torch's mha(query = x_q, key = x_kv, value = x_kv) weights [B, H, N, M]");
    WB_CHECK_CLOSE(r.output, g.tensor<3>("output"), wbtest::golden_tolerance,
                   "torch's cross attention output [B, N, D]: K and V from x_kv");
}

TEST_CASE("matches torch.nn.MultiheadAttention with a causal mask (torch's True = hidden)",
          "[mha][golden][mask][c:multi_head_attention.mask]") {
    const wbtest::Golden g("5-mha/causal.txt");
    const MhaParams p = golden_params(g, 3, false);
    const Tensor3 allowed_f = g.tensor<3>("allowed");           // ours: 1 = may read
    const Tensor2 torch_mask = g.tensor<2>("torch_attn_mask");  // torch's: 1 = hidden
    wb::Mask mask{xt::xtensor<bool, 3>::from_shape({1, 5, 5})};
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 5; ++j) {
            mask.allowed(0, i, j) = allowed_f(0, i, j) != 0.0f;
            // The two conventions are opposite: what torch hides, we do not allow.
            REQUIRE(mask.allowed(0, i, j) == (torch_mask(i, j) == 0.0f));
        }
    const wb::MhaResult r = wb::self_attention(g.tensor<3>("x_q"), p, mask);
    WB_CHECK_CLOSE(r.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "torch's causal weights: Mask::allowed is true where query i may read key "
                   "j (j <= i); torch's attn_mask is true where it may NOT");
    WB_CHECK_CLOSE(r.output, g.tensor<3>("output"), wbtest::golden_tolerance,
                   "torch's causal output, D=12 H=3 without bias");
}

TEST_CASE("weights are per head, and torch's default averaged weights are their mean over H",
          "[mha][golden][c:multi_head_attention.weights-per-head]") {
    // nn.MultiheadAttention returns the head average unless average_attn_weights=False; this
    // API returns every head. weights_avg is torch's default output for the same case.
    const wbtest::Golden g("5-mha/cross.txt");
    const MhaParams p = golden_params(g, 4, true);
    const wb::MhaResult r = wb::multi_head_attention(g.tensor<3>("x_q"), g.tensor<3>("x_kv"), p);
    WB_CHECK_SHAPE(r.weights, (wb::Shape{2, 4, 3, 5}), "weights are [B, H, N, M]");
    const Tensor3 avg_torch = g.tensor<3>("weights_avg");  // [B, N, M]
    Tensor3 avg = Tensor3::from_shape({2, 3, 5});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < 5; ++j) {
                double s = 0.0;
                for (std::size_t h = 0; h < 4; ++h) s += r.weights(b, h, i, j);
                avg(b, i, j) = static_cast<float>(s / 4.0);
            }
    WB_CHECK_CLOSE(avg, avg_torch, wbtest::golden_tolerance,
                   "the mean over heads of your weights must be torch's averaged weights");
    const double spread =
        max_diff(Tensor3(xt::view(r.weights, xt::all(), 0, xt::all(), xt::all())),
                 Tensor3(xt::view(r.weights, xt::all(), 1, xt::all(), xt::all())));
    INFO("heads 0 and 1 differ by at most " << spread);
    INFO("hint: return every head's weights [B, H, N, M], not their average or one head copied");
    CHECK(spread > 1e-3);
}

// ---- errors ---------------------------------------------------------------------------------

TEST_CASE("multi_head_attention rejects inputs whose D is not the projections' D",
          "[mha][errors][c:multi_head_attention.bad-width]") {
    const MhaParams p = random_params(8, 2, true, 1100);
    const auto good = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const auto narrow_q = wbtest::randn<Tensor3>({2, 4, 6}, 2);
    const auto narrow_kv = wbtest::randn<Tensor3>({2, 5, 6}, 3);
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(narrow_q, good, p),
                    "x_q's last axis must be D = 8, the input width of W_Q",
                    "wb::multi_head_attention", "[2, 4, 6]", "D = 8");
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(good, narrow_kv, p),
                    "x_kv's last axis must be D = 8, the input width of W_K and W_V",
                    "wb::multi_head_attention", "[2, 5, 6]", "D = 8");
}

TEST_CASE("multi_head_attention rejects x_q and x_kv of different batch sizes",
          "[mha][errors][c:multi_head_attention.batch-mismatch]") {
    const MhaParams p = random_params(8, 2, true, 1200);
    const auto x_q = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const auto x_kv = wbtest::randn<Tensor3>({3, 4, 8}, 2);
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, x_kv, p),
                    "sequence b of x_q reads sequence b of x_kv: B must agree",
                    "wb::multi_head_attention", "[2, 4, 8]", "[3, 4, 8]");
}

TEST_CASE("multi_head_attention rejects inconsistent parameters",
          "[mha][errors][c:multi_head_attention.bad-params]") {
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const MhaParams good = random_params(8, 2, true, 1300);

    MhaParams bad_o = good;
    bad_o.w_o.weight = Tensor2::from_shape({8, 4});
    bad_o.w_o.weight.fill(0.1f);
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, bad_o),
                    "check every projection is [D, D] before using it (W_O reads the D merged "
                    "features)",
                    "wb::multi_head_attention", "[8, 4]");

    MhaParams bad_h = good;
    bad_h.H = 3;
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, bad_h),
                    "D = 8 cannot be split into H = 3 heads: check D % H in multi_head_attention "
                    "itself",
                    "wb::multi_head_attention", "D = 8", "H = 3");

    MhaParams zero_h = good;
    zero_h.H = 0;
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, zero_h), "H == 0 heads",
                    "wb::multi_head_attention", "H = 0");

    MhaParams bad_bias = good;
    bad_bias.w_k.bias = wb::Tensor1::from_shape({5});
    bad_bias.w_k.bias.fill(0.0f);
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, bad_bias),
                    "a bias must have D entries or none", "wb::multi_head_attention", "[5]");
}

TEST_CASE("multi_head_attention rejects a mask that is not [B, N, M] or [1, N, M]",
          "[mha][errors][mask][c:multi_head_attention.mask-shape]") {
    const MhaParams p = random_params(8, 2, true, 1400);
    const auto x_q = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const auto x_kv = wbtest::randn<Tensor3>({2, 5, 8}, 2);
    const wb::Mask square =
        make_mask(2, 4, 4, [](std::size_t, std::size_t, std::size_t) { return true; });
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, x_kv, p, square),
                    "a cross-attention mask is [B, N, M] = [2, 4, 5]: one column per key of x_kv",
                    "wb::multi_head_attention", "[2, 4, 4]", "5");
    const wb::Mask batch3 =
        make_mask(3, 4, 5, [](std::size_t, std::size_t, std::size_t) { return true; });
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, x_kv, p, batch3),
                    "the mask's first axis is B or 1", "wb::multi_head_attention", "[3, 4, 5]");
}

TEST_CASE("multi_head_attention rejects a mask of the wrong N, or of a batch axis neither B nor 1",
          "[mha][errors][mask][c:multi_head_attention.mask-shape]") {
    const MhaParams p = random_params(8, 2, true, 1450);
    auto all = [](std::size_t, std::size_t, std::size_t) { return true; };
    const auto x_q = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const auto x_kv = wbtest::randn<Tensor3>({2, 5, 8}, 2);
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, x_kv, p, make_mask(2, 3, 5, all)),
                    "compare the mask's middle axis with N = 4 (one row per query of x_q) in "
                    "multi_head_attention, before sdpa reports it under its own name",
                    "wb::multi_head_attention", "mask", "[2, 3, 5]");
    // B = 4 and a mask of 2 sequences: smaller than B but not 1, so it fits no sequence.
    const auto x_q4 = wbtest::randn<Tensor3>({4, 4, 8}, 3);
    const auto x_kv4 = wbtest::randn<Tensor3>({4, 5, 8}, 4);
    WB_CHECK_THROWS(wb::ShapeError,
                    wb::multi_head_attention(x_q4, x_kv4, p, make_mask(2, 4, 5, all)),
                    "the mask's first axis is exactly B or exactly 1: 2 sequences of masks for "
                    "B = 4 is an error too, not only more than B",
                    "wb::multi_head_attention", "mask", "[2, 4, 5]");
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, x_kv, p, make_mask(0, 4, 5, all)),
                    "a mask of 0 sequences is neither B nor 1: test s[0] == 1, not s[0] <= 1",
                    "wb::multi_head_attention", "mask", "[0, 4, 5]");
}

TEST_CASE("multi_head_attention rejects empty sequences",
          "[mha][errors][c:multi_head_attention.empty]") {
    const MhaParams p = random_params(8, 2, true, 1500);
    const auto x_q = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const Tensor3 no_keys = Tensor3::from_shape({2, 0, 8});
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x_q, no_keys, p),
                    "M == 0: there is no key to read, the softmax would be 0/0",
                    "wb::multi_head_attention", "[2, 0, 8]");
    const Tensor3 no_queries = Tensor3::from_shape({2, 0, 8});
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(no_queries, x_q, p),
                    "N == 0: no query", "wb::multi_head_attention", "[2, 0, 8]");
}

TEST_CASE("self_attention reports the errors of multi_head_attention",
          "[mha][errors][self][c:self_attention.errors]") {
    const MhaParams p = random_params(8, 2, true, 1600);
    const auto narrow = wbtest::randn<Tensor3>({2, 4, 6}, 1);
    WB_CHECK_THROWS(wb::ShapeError, wb::self_attention(narrow, p), "x's last axis must be D = 8",
                    "multi_head_attention", "[2, 4, 6]", "D = 8");
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 2);
    const wb::Mask wrong =
        make_mask(1, 4, 3, [](std::size_t, std::size_t, std::size_t) { return true; });
    WB_CHECK_THROWS(wb::ShapeError, wb::self_attention(x, p, wrong),
                    "self attention's mask is [B, T, T]", "multi_head_attention", "[1, 4, 3]");
}

TEST_CASE("multi_head_attention checks all four projections itself, and refuses B == 0",
          "[mha][errors][c:multi_head_attention.bad-params][c:multi_head_attention.empty]") {
    const auto x = wbtest::randn<Tensor3>({2, 4, 8}, 1);
    const MhaParams good = random_params(8, 2, true, 1700);
    for (int n = 0; n < 4; ++n) {
        INFO("projection "
             << "qkvo"[n] << " is the bad one");
        MhaParams bad_weight = good, bad_bias = good;
        wb::Linear* w[4] = {&bad_weight.w_q, &bad_weight.w_k, &bad_weight.w_v, &bad_weight.w_o};
        wb::Linear* b[4] = {&bad_bias.w_q, &bad_bias.w_k, &bad_bias.w_v, &bad_bias.w_o};
        const char* names[4] = {"w_q", "w_k", "w_v", "w_o"};
        // w_q's input width defines D, so its bad weight keeps 8 inputs and has 6 outputs.
        w[n]->weight = Tensor2::from_shape(
            {n == 0 ? std::size_t(6) : std::size_t(8), n == 0 ? std::size_t(8) : std::size_t(7)});
        w[n]->weight.fill(0.1f);
        b[n]->bias = wb::Tensor1::from_shape({5});
        b[n]->bias.fill(0.0f);
        WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, bad_weight),
                        "check every projection's weight is [D, D] in multi_head_attention, "
                        "before linear or split_heads reports it under its own name, and name "
                        "the projection (w_q, w_k, w_v or w_o) in the message",
                        "wb::multi_head_attention", names[n], wb::shape_str(w[n]->weight.shape()));
        WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(x, x, bad_bias),
                        "every projection's bias has D entries or none: check all four, and name "
                        "the projection whose bias is wrong",
                        "wb::multi_head_attention", names[n], "[5]");
    }
    const Tensor3 no_batch = Tensor3::from_shape({0, 4, 8});
    WB_CHECK_THROWS(wb::ShapeError, wb::multi_head_attention(no_batch, no_batch, good),
                    "B == 0: no sequence to attend in (the header refuses B, N or M of 0)",
                    "wb::multi_head_attention", "[0, 4, 8]");
}

TEST_CASE("init_mha's seeds wrap around in uint32: seed 2^32 - 1 gives w_k the seed 0",
          "[mha][init][c:init_mha.seeds]") {
    const MhaParams p = wb::init_mha(4, 2, true, 4294967295u);
    const wb::Linear* got[4] = {&p.w_q, &p.w_k, &p.w_v, &p.w_o};
    const std::uint32_t seeds[4] = {4294967295u, 0u, 1u, 2u};
    for (int n = 0; n < 4; ++n) {
        INFO("projection "
             << "qkvo"[n] << " must be init_linear(4, 4, true, " << seeds[n] << ")");
        const wb::Linear expected = wb::init_linear(4, 4, true, seeds[n]);
        WB_CHECK_CLOSE(got[n]->weight, expected.weight, 0.0,
                       "seed + 1, seed + 2, seed + 3 in std::uint32_t arithmetic (wrapping)");
        WB_CHECK_CLOSE(got[n]->bias, expected.bias, 0.0, "the bias of the same init_linear");
    }
}
