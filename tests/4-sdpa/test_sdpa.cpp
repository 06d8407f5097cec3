#include "4-sdpa/sdpa.hpp"
#include "check.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "golden.hpp"

// Expected numbers come from three places, named beside each one:
//  - by hand (small integer examples, the notes' worked example);
//  - torch.softmax(torch.tensor([...], dtype=torch.float64), -1), printed with 9 digits;
//  - tests/goldens/4-sdpa/*.txt, written by tools/goldens/chapter4.py with PyTorch 1.13.

namespace {

using wb::Shape;
using wb::Tensor4;
using Bool3 = xt::xtensor<bool, 3>;

wb::Mask make_mask(const Bool3& allowed) { return wb::Mask{allowed}; }

// The golden files store `allowed` as 0/1 floats.
wb::Mask golden_mask(const wbtest::Golden& g) {
    const xt::xtensor<float, 3> a = g.tensor<3>("allowed");
    return wb::Mask{Bool3(a > 0.5f)};
}

// Row sums of weights [B, H, N, M] over the key axis, in double: [B, H, N].
xt::xtensor<double, 3> row_sums(const Tensor4& w) {
    xt::xtensor<double, 3> s = xt::zeros<double>({w.shape(0), w.shape(1), w.shape(2)});
    for (std::size_t b = 0; b < w.shape(0); ++b)
        for (std::size_t h = 0; h < w.shape(1); ++h)
            for (std::size_t i = 0; i < w.shape(2); ++i)
                for (std::size_t j = 0; j < w.shape(3); ++j) s(b, h, i) += w(b, h, i, j);
    return s;
}

// The weights of keys hidden by `allowed` [B or 1, N, M]; each must be exactly 0.
std::vector<float> hidden_weights(const Tensor4& w, const Bool3& allowed) {
    std::vector<float> out;
    const bool shared = allowed.shape(0) == 1;
    for (std::size_t b = 0; b < w.shape(0); ++b)
        for (std::size_t h = 0; h < w.shape(1); ++h)
            for (std::size_t i = 0; i < w.shape(2); ++i)
                for (std::size_t j = 0; j < w.shape(3); ++j)
                    if (!allowed(shared ? 0 : b, i, j)) out.push_back(w(b, h, i, j));
    return out;
}

bool all_zero(const std::vector<float>& v) {
    for (float x : v)
        if (x != 0.0f) return false;
    return true;
}

// The rows of a [B, H, N, M] tensor as text, for INFO messages: "[b, h, i]: v v v".
std::string rows_str(const Tensor4& w) {
    std::ostringstream out;
    for (std::size_t b = 0; b < w.shape(0); ++b)
        for (std::size_t h = 0; h < w.shape(1); ++h)
            for (std::size_t i = 0; i < w.shape(2); ++i) {
                out << "\n  [" << b << ", " << h << ", " << i << "]:";
                for (std::size_t j = 0; j < w.shape(3); ++j) out << ' ' << w(b, h, i, j);
            }
    return out.str();
}

}  // namespace

// ---- weighted_sum: O = A V ------------------------------------------------------------------

TEST_CASE(
    "weighted_sum reproduces the notes' worked example, 0.1 v1 + 0.7 v2 + 0.2 v3 = (0.7, 1.6)",
    "[weighted_sum][c:weighted_sum.product]") {
    // Notes §9: weights [0.1, 0.7, 0.2] over v1 = [1, 0], v2 = [0, 2], v3 = [3, 1].
    const Tensor4 weights = {{{{0.1f, 0.7f, 0.2f}}}};                  // [1, 1, N=1, M=3]
    const Tensor4 v = {{{{1.0f, 0.0f}, {0.0f, 2.0f}, {3.0f, 1.0f}}}};  // [1, 1, M=3, d_v=2]
    // By hand: 0.1*[1,0] + 0.7*[0,2] + 0.2*[3,1] = [0.1 + 0 + 0.6, 0 + 1.4 + 0.2] = [0.7, 1.6].
    const Tensor4 expected = {{{{0.7f, 1.6f}}}};  // [1, 1, 1, 2]
    const Tensor4 out = wb::weighted_sum(weights, v);
    WB_CHECK_SHAPE(out, (Shape{1, 1, 1, 2}),
                   "weights [B, H, N, M] times v [B, H, M, d_v] is [B, H, N, d_v]: one row per "
                   "query, as wide as a value");
    WB_CHECK_CLOSE(out, expected, 1e-5,
                   "the output is the weighted sum of the VALUE rows, sum_j A[i, j] v_j; the "
                   "weights only say how much of each value to take");
}

TEST_CASE("weighted_sum gives query i the mix of value rows named by weight row i, per head",
          "[weighted_sum][c:weighted_sum.product]") {
    // N = M = 2, so a transposed weight matrix still has the right shape but wrong numbers.
    const Tensor4 weights = {{{{0.25f, 0.75f}, {1.0f, 0.0f}},  // head 0
                              {{0.5f, 0.5f}, {0.0f, 1.0f}}}};  // head 1   [1, 2, 2, 2]
    const Tensor4 v = {{{{1.0f, 2.0f}, {3.0f, 4.0f}},          // head 0
                        {{-1.0f, 0.0f}, {2.0f, 6.0f}}}};       // head 1   [1, 2, 2, 2]
    // By hand. head 0: 0.25*[1,2] + 0.75*[3,4] = [2.5, 3.5]; 1*[1,2] = [1, 2].
    //          head 1: 0.5*[-1,0] + 0.5*[2,6] = [0.5, 3];   1*[2,6] = [2, 6].
    const Tensor4 expected = {{{{2.5f, 3.5f}, {1.0f, 2.0f}}, {{0.5f, 3.0f}, {2.0f, 6.0f}}}};
    WB_CHECK_CLOSE(wb::weighted_sum(weights, v), expected, 1e-5,
                   "out[b, h, i, :] = sum_j weights[b, h, i, j] * v[b, h, j, :]: did you "
                   "multiply by the transposed weights (sum over queries), or mix up heads?");
}

// ---- attention_scores: S = Q K^T / sqrt(d_k) ------------------------------------------------

TEST_CASE("attention_scores matches hand-computed q_i . k_j / sqrt(d_k)",
          "[attention_scores][c:attention_scores.scaled]") {
    // d_k = 4, so sqrt(d_k) = 2. N = 2 queries, M = 3 keys.
    const Tensor4 q = {{{{1, 0, 1, 0}, {0, 2, 0, 2}}}};                // [1, 1, 2, 4]
    const Tensor4 k = {{{{1, 1, 1, 1}, {2, 0, 0, 0}, {0, 0, 0, 3}}}};  // [1, 1, 3, 4]
    // By hand: q0.k = [2, 2, 0], q1.k = [4, 0, 6]; divided by 2: [1, 1, 0] and [2, 0, 3].
    const Tensor4 expected = {{{{1, 1, 0}, {2, 0, 3}}}};  // [1, 1, N=2, M=3]
    const Tensor4 s = wb::attention_scores(q, k);
    WB_CHECK_SHAPE(s, (Shape{1, 1, 2, 3}),
                   "scores are [B, H, N, M]: one row per query, one column per key; did you "
                   "multiply q by q, or k by q?");
    WB_CHECK_CLOSE(s, expected, 1e-5,
                   "S[i, j] = q_i . k_j / sqrt(d_k): multiply q by k TRANSPOSED (swap only the "
                   "last two axes of k) and divide by sqrt(4) = 2");
}

TEST_CASE("attention_scores divides by sqrt(d_k) of one head, not sqrt(D) or d_k",
          "[attention_scores][c:attention_scores.scaled]") {
    // B = 1, H = 2 heads of width d_k = 4 (so D = H*d_k = 8), one query and one key per head.
    const Tensor4 q = {{{{1, 1, 1, 1}}, {{2, 2, 2, 2}}}};  // [1, 2, 1, 4]
    const Tensor4 k = {{{{1, 1, 1, 1}}, {{1, 1, 1, 1}}}};  // [1, 2, 1, 4]
    // By hand: raw dot products 4 and 8; divided by sqrt(d_k) = 2 they are 2 and 4.
    // (sqrt(D) = sqrt(8) would give 1.414 and 2.828; d_k would give 1 and 2; no scale 4 and 8.)
    const Tensor4 expected = {{{{2.0f}}, {{4.0f}}}};
    WB_CHECK_CLOSE(wb::attention_scores(q, k), expected, 1e-5,
                   "divide by sqrt(d_k) = sqrt(4) = 2, d_k being the width of ONE head "
                   "(q.shape(3)); not by sqrt(D) = sqrt(H*d_k), not by d_k, and not by nothing");
}

// ---- masked_softmax -------------------------------------------------------------------------

TEST_CASE("masked_softmax without a mask is a softmax over the keys of each query",
          "[masked_softmax][c:masked_softmax.over-keys]") {
    const Tensor4 scores = {{{{1, 2, 3}, {3, 1, 1}}}};  // [1, 1, N=2, M=3]
    // torch.softmax(torch.tensor([[1., 2, 3], [3, 1, 1]], dtype=torch.float64), -1)
    const Tensor4 expected = {
        {{{0.090030573f, 0.244728471f, 0.665240956f}, {0.786986042f, 0.106506979f, 0.106506979f}}}};
    WB_CHECK_CLOSE(wb::masked_softmax(scores), expected, 1e-5,
                   "softmax along the LAST axis (keys): row i is query i's distribution over "
                   "the keys. Did you normalise over the query axis? Did you store the row "
                   "maximum and sum in tensors before broadcasting (the keep_dims trap)?");
}

TEST_CASE("masked_softmax survives scores of +-1000, with and without a mask",
          "[masked_softmax][c:masked_softmax.over-keys][c:masked_softmax.hidden-zero]") {
    const Tensor4 scores = {{{{1000, -1000, 999}, {-1000, -999, -1000}}}};  // [1, 1, 2, 3]
    // torch.softmax(torch.tensor([[1000., -1000, 999], [-1000, -999, -1000]],
    //               dtype=torch.float64), -1)
    const Tensor4 expected = {
        {{{0.731058579f, 0.0f, 0.268941421f}, {0.211941558f, 0.576116885f, 0.211941558f}}}};
    const Tensor4 w = wb::masked_softmax(scores);
    INFO("weights:" << rows_str(w));
    CHECK(wbtest::all_finite(w));
    WB_CHECK_CLOSE(w, expected, 1e-5,
                   "exp(1000) overflows to inf and inf/inf is NaN: subtract each row's maximum "
                   "before exp");

    // Key 0 hidden: row 0 becomes softmax([-1000, 999]) = [0, 1], row 1 softmax([-999, -1000]).
    // torch.softmax(torch.tensor([-999., -1000], dtype=torch.float64), -1) = [0.731058579, 0.268941421]
    const Bool3 allowed = {{{false, true, true}, {false, true, true}}};  // [1, N=2, M=3]
    const Tensor4 expected_masked = {{{{0.0f, 0.0f, 1.0f}, {0.0f, 0.731058579f, 0.268941421f}}}};
    WB_CHECK_CLOSE(wb::masked_softmax(scores, make_mask(allowed)), expected_masked, 1e-5,
                   "take the maximum over the readable keys (or over the row after hiding with "
                   "-inf) and subtract it before exp");
}

TEST_CASE("masked_softmax gives hidden keys weight exactly 0 and renormalises the readable ones",
          "[masked_softmax][mask][c:masked_softmax.hidden-zero]"
          "[c:masked_softmax.allowed-means-readable]") {
    const Tensor4 scores = {{{{1, 2, 3, 4}, {0.5f, -1, 2, 0}}}};  // [1, 1, N=2, M=4]
    const Bool3 allowed = {{{true, false, true, false},           // query 0 reads keys 0, 2
                            {false, true, true, true}}};          // query 1 reads keys 1-3
    // torch.softmax(torch.tensor([1., 3], dtype=torch.float64), -1)     = [0.119202922, 0.880797078]
    // torch.softmax(torch.tensor([-1., 2, 0], dtype=torch.float64), -1) = [0.042010066, 0.843794734, 0.114195199]
    const Tensor4 expected = {{{{0.119202922f, 0.0f, 0.880797078f, 0.0f},
                                {0.0f, 0.042010066f, 0.843794734f, 0.114195199f}}}};
    const Tensor4 w = wb::masked_softmax(scores, make_mask(allowed));
    const std::vector<float> hidden = hidden_weights(w, allowed);
    INFO("weights:" << rows_str(w));
    INFO(
        "allowed(b, i, j) == true means query i MAY read key j; hidden keys must get "
        "exactly 0 (score -inf before the softmax, exp(-inf) = 0). Did you invert the mask?");
    CHECK(all_zero(hidden));
    WB_CHECK_CLOSE(w, expected, 1e-5,
                   "the readable keys' weights are the softmax over the readable keys only "
                   "(they sum to 1). If they sum to less, you zeroed the hidden keys AFTER the "
                   "softmax; if hidden keys get weight, the mask is inverted or ignored");
}

TEST_CASE(
    "the mask is applied before the softmax, so every row sums to 1 over its readable keys",
    "[masked_softmax][mask][c:masked_softmax.hidden-zero][c:masked_softmax.heads-share-pattern]") {
    // Random scores of size up to a few thousand, and a random mask in which every query can
    // read at least one key (key (i * 3) % M is always readable).
    const std::size_t B = 2, H = 3, N = 4, M = 6;
    Tensor4 scores = wbtest::randn<Tensor4>({B, H, N, M}, 41);
    scores *= 1000.0f;  // logits of +-1000 and more must not overflow
    const Bool3 noise = wbtest::randn<xt::xtensor<float, 3>>({B, N, M}, 42) > 0.0f;
    Bool3 allowed = noise;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < N; ++i) allowed(b, i, (i * 3) % M) = true;

    for (bool use_mask : {false, true}) {
        INFO((use_mask ? "with a random mask [B, N, M]" : "without a mask"));
        const Tensor4 w =
            use_mask ? wb::masked_softmax(scores, make_mask(allowed)) : wb::masked_softmax(scores);
        INFO("weights:" << rows_str(w));
        CHECK(wbtest::all_finite(w));
        const xt::xtensor<double, 3> ones = xt::ones<double>({B, H, N});
        WB_CHECK_CLOSE(row_sums(w), ones, 1e-5,
                       "each query's weights must sum to 1 over the keys it may read. Rows that "
                       "sum to less than 1: the hidden keys were zeroed AFTER the softmax (set "
                       "them to -inf BEFORE it). Rows that are NaN: subtract the row maximum. "
                       "Rows that sum to more or less without a mask: wrong softmax axis");
        if (use_mask) {
            INFO("a hidden key must get weight exactly 0");
            CHECK(all_zero(hidden_weights(w, allowed)));
        }
    }
}

TEST_CASE("hidden keys stay at weight 0 even when every readable score is very negative",
          "[masked_softmax][mask][c:masked_softmax.hidden-zero]") {
    // Only -inf is below every score. A finite stand-in is not: with readable scores of -2e4 a
    // key hidden with -1e4 would win the softmax (the next check goes below -1e9 and -1e30).
    const Tensor4 scores = {{{{-20000.0f, -30000.0f, 5.0f}}}};  // [1, 1, 1, 3]
    const Bool3 allowed = {{{true, true, false}}};              // key 2 hidden
    // torch.softmax(torch.tensor([-20000., -30000], dtype=torch.float64), -1) = [1, 0]
    const Tensor4 expected = {{{{1.0f, 0.0f, 0.0f}}}};
    WB_CHECK_CLOSE(wb::masked_softmax(scores, make_mask(allowed)), expected, 1e-5,
                   "hide keys with -infinity (std::numeric_limits<float>::infinity()), not "
                   "with a large negative number such as -1e4: a hidden key must get weight 0 "
                   "whatever the readable scores are");
}

TEST_CASE("hidden keys stay at weight 0 below any finite stand-in: -1e9, -1e30, the lowest float",
          "[masked_softmax][mask][c:masked_softmax.hidden-zero]") {
    // Finite scores of any size: readable scores below -1e9 (row 0), below -1e30 (row 1) and
    // equal to the lowest float (row 2). A key hidden with any finite number ties with or beats
    // them; zeroing the hidden weights after the softmax then leaves the row summing to 0.
    const float lowest = std::numeric_limits<float>::lowest();  // -3.4e38, finite
    const Tensor4 scores = {{{{-3e9f, -4e9f, 5.0f},             // [1, 1, N=3, M=3]
                              {-1e38f, -2e38f, 0.0f},
                              {lowest, lowest, -1.0f}}}};
    const Bool3 allowed = {{{true, true, false}, {true, true, false}, {true, true, false}}};
    // Rows 0 and 1: the readable scores are 1e9 and 1e38 apart, so exp gives [1, 0]; row 2:
    // two equal readable scores share the row, [0.5, 0.5]. Key 2 is hidden in every row.
    const Tensor4 expected = {{{{1.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}}}};
    const Tensor4 w = wb::masked_softmax(scores, make_mask(allowed));
    INFO("weights:" << rows_str(w));
    INFO(
        "hint: hide keys with -infinity, not -1e9, -1e30 or -FLT_MAX; zeroing the hidden "
        "weights after the softmax does not repair a row whose readable keys lost to them");
    WB_CHECK_CLOSE(w, expected, 1e-6,
                   "the hidden key 2 must get weight exactly 0 and the readable keys must sum to "
                   "1, whatever their (finite) scores: only -inf is below every score");
}

TEST_CASE(
    "a fully masked row gives finite zero weights and a zero output row, not NaN",
    "[masked_softmax][sdpa][mask][c:masked_softmax.fully-masked-zero][c:sdpa.fully-masked-zero]") {
    // Query 1 may read no key at all. softmax of all -inf is 0/0 = NaN; the documented result
    // is all-zero weights (sdpa.hpp), hence a zero output row.
    const Tensor4 scores = {{{{0.5f, 1.0f, -1.0f}, {2.0f, 0.0f, 1.0f}, {1.0f, 1.0f, 1.0f}}}};
    const Bool3 allowed = {{{true, false, true}, {false, false, false}, {true, true, true}}};
    // Row 0: torch.softmax(torch.tensor([0.5, -1.0], dtype=torch.float64), -1)
    //        = [0.817574476, 0.182425524]; row 2: uniform 1/3.
    const Tensor4 expected = {
        {{{0.817574476f, 0.0f, 0.182425524f}, {0.0f, 0.0f, 0.0f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}}}};
    const Tensor4 w = wb::masked_softmax(scores, make_mask(allowed));
    INFO("weights:" << rows_str(w));
    INFO(
        "a query that may read no key gets all -inf scores; exp(-inf - (-inf)) is NaN. Guard "
        "that row: give it all-zero weights");
    CHECK(wbtest::all_finite(w));
    WB_CHECK_CLOSE(w, expected, 1e-5,
                   "a fully masked row must be all 0 (not NaN, not uniform 1/M: uniform means "
                   "you hid keys with a finite number instead of -inf)");

    // Through sdpa: q [1, 1, 3, 2], k [1, 1, 3, 2], v [1, 1, 3, 2] with the same mask.
    const Tensor4 q = {{{{1, 0}, {0, 1}, {1, 1}}}};
    const Tensor4 k = {{{{1, 2}, {0, 1}, {2, 0}}}};
    const Tensor4 v = {{{{1, 1}, {2, -1}, {0, 3}}}};
    const wb::Attention a = wb::sdpa(q, k, v, make_mask(allowed));
    INFO("output:" << rows_str(a.output));
    CHECK(wbtest::all_finite(a.output));
    CHECK(wbtest::all_finite(a.weights));
    const Tensor4 zero_row = xt::zeros<float>({1, 1, 1, 2});
    WB_CHECK_CLOSE(Tensor4(xt::view(a.output, xt::all(), xt::all(), xt::range(1, 2), xt::all())),
                   zero_row, 1e-6,
                   "the fully masked query's output row must be 0 (zero weights times any values)");
}

TEST_CASE("a mask of shape [1, N, M] is shared by every sequence of the batch",
          "[masked_softmax][mask][c:masked_softmax.shared-mask]") {
    const Tensor4 scores = {{{{1, 2, 3}}}, {{{3, 2, 1}}}};  // [B=2, 1, 1, 3]
    const Bool3 allowed = {{{true, false, true}}};          // [1, N=1, M=3]: key 1 hidden
    // torch.softmax(torch.tensor([1., 3], dtype=torch.float64), -1) = [0.119202922, 0.880797078],
    // and reversed for sequence 1.
    const Tensor4 expected = {{{{0.119202922f, 0.0f, 0.880797078f}}},
                              {{{0.880797078f, 0.0f, 0.119202922f}}}};
    WB_CHECK_CLOSE(wb::masked_softmax(scores, make_mask(allowed)), expected, 1e-5,
                   "a mask with batch axis 1 applies to every sequence b: read "
                   "allowed(0, i, j) for all b (and the same pattern for every head)");
}

// ---- sdpa -----------------------------------------------------------------------------------

TEST_CASE("sdpa has one output row per query, with N != M and d_k != d_v",
          "[sdpa][c:sdpa.composition]") {
    const std::size_t B = 2, H = 3, N = 2, M = 5, dk = 4, dv = 3;
    const Tensor4 q = wbtest::randn<Tensor4>({B, H, N, dk}, 1);
    const Tensor4 k = wbtest::randn<Tensor4>({B, H, M, dk}, 2);
    const Tensor4 v = wbtest::randn<Tensor4>({B, H, M, dv}, 3);
    const wb::Attention a = wb::sdpa(q, k, v);
    WB_CHECK_SHAPE(a.weights, (Shape{B, H, N, M}),
                   "weights are [B, H, N, M]: N queries (rows) by M keys (columns)");
    WB_CHECK_SHAPE(a.output, (Shape{B, H, N, dv}),
                   "the output has one row per QUERY (N) and the width of a VALUE (d_v), not "
                   "M rows or d_k columns");
    // Each output row is its weight row applied to the values, summed here by hand.
    Tensor4 by_hand = xt::zeros<float>({B, H, N, dv});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t j = 0; j < M; ++j)
                    for (std::size_t c = 0; c < dv; ++c)
                        by_hand(b, h, i, c) += a.weights(b, h, i, j) * v(b, h, j, c);
    WB_CHECK_CLOSE(a.output, by_hand, 1e-5,
                   "sdpa's output must be its own weights times v (output = weights @ v)");
}

TEST_CASE("attention_scores and sdpa take a q with no queries (N = 0)",
          "[attention_scores][sdpa][c:attention_scores.scaled][c:sdpa.composition]") {
    // N = 0 is a shape like any other: d_k = 4 >= 1 and B, H, d_k, M all fit, so no @throws of
    // sdpa.hpp applies. The results are empty: scores and weights [1, 1, 0, 3], output
    // [1, 1, 0, 6].
    const Tensor4 q = xt::zeros<float>({1, 1, 0, 4});  // [B, H, N=0, d_k]
    const Tensor4 k = xt::ones<float>({1, 1, 3, 4});   // [B, H, M=3, d_k]
    const Tensor4 v = xt::ones<float>({1, 1, 3, 6});   // [B, H, M, d_v]
    INFO(
        "hint: only d_k == 0 is refused; a check that q is not empty (require_nonempty) also "
        "refuses N = 0, which fits");
    WB_CHECK_SHAPE(wb::attention_scores(q, k), (Shape{1, 1, 0, 3}),
                   "no queries give no rows of scores: [B, H, 0, M], not an error");
    const wb::Attention a = wb::sdpa(q, k, v);
    WB_CHECK_SHAPE(a.weights, (Shape{1, 1, 0, 3}), "no queries give no rows of weights");
    WB_CHECK_SHAPE(a.output, (Shape{1, 1, 0, 6}), "no queries give no output rows");
}

TEST_CASE("without a mask, permuting keys and values together leaves the output unchanged",
          "[sdpa][c:sdpa.composition]") {
    const std::size_t B = 1, H = 2, N = 3, M = 5, dk = 4, dv = 3;
    const Tensor4 q = wbtest::randn<Tensor4>({B, H, N, dk}, 11);
    const Tensor4 k = wbtest::randn<Tensor4>({B, H, M, dk}, 12);
    const Tensor4 v = wbtest::randn<Tensor4>({B, H, M, dv}, 13);
    const std::size_t perm[M] = {3, 0, 4, 1, 2};  // new key j is old key perm[j]
    Tensor4 k2 = k, v2 = v;
    for (std::size_t j = 0; j < M; ++j) {
        xt::view(k2, xt::all(), xt::all(), j, xt::all()) =
            xt::view(k, xt::all(), xt::all(), perm[j], xt::all());
        xt::view(v2, xt::all(), xt::all(), j, xt::all()) =
            xt::view(v, xt::all(), xt::all(), perm[j], xt::all());
    }
    const wb::Attention a = wb::sdpa(q, k, v);
    const wb::Attention a2 = wb::sdpa(q, k2, v2);
    WB_CHECK_CLOSE(a2.output, a.output, 1e-5,
                   "attention reads the keys as a SET: reordering (key, value) pairs together "
                   "must not change the output. Did the softmax run over the wrong axis, or "
                   "does the weighted sum pair weight j with another value row?");
}

TEST_CASE("without a mask, permuting the queries permutes the output rows the same way",
          "[sdpa][c:sdpa.composition]") {
    const std::size_t B = 2, H = 2, N = 3, M = 4, dk = 4, dv = 2;
    const Tensor4 q = wbtest::randn<Tensor4>({B, H, N, dk}, 21);
    const Tensor4 k = wbtest::randn<Tensor4>({B, H, M, dk}, 22);
    const Tensor4 v = wbtest::randn<Tensor4>({B, H, M, dv}, 23);
    const std::size_t perm[N] = {2, 0, 1};  // new query i is old query perm[i]
    Tensor4 q2 = q;
    for (std::size_t i = 0; i < N; ++i)
        xt::view(q2, xt::all(), xt::all(), i, xt::all()) =
            xt::view(q, xt::all(), xt::all(), perm[i], xt::all());
    const wb::Attention a = wb::sdpa(q, k, v);
    const wb::Attention a2 = wb::sdpa(q2, k, v);
    Tensor4 expected = a.output;
    for (std::size_t i = 0; i < N; ++i)
        xt::view(expected, xt::all(), xt::all(), i, xt::all()) =
            xt::view(a.output, xt::all(), xt::all(), perm[i], xt::all());
    WB_CHECK_CLOSE(a2.output, expected, 1e-5,
                   "each query is answered on its own: moving a query moves its output row and "
                   "changes nothing else. Did the softmax normalise over the queries?");
}

// ---- goldens from PyTorch -------------------------------------------------------------------

TEST_CASE("sdpa without a mask matches PyTorch (N != M, d_k != d_v)",
          "[sdpa][golden][c:sdpa.composition][c:attention_scores.scaled]") {
    const wbtest::Golden g("4-sdpa/no_mask.txt");
    const Tensor4 q = g.tensor<4>("q"), k = g.tensor<4>("k"), v = g.tensor<4>("v");
    WB_CHECK_CLOSE(wb::attention_scores(q, k), g.tensor<4>("scores"), wbtest::golden_tolerance,
                   "scores = q @ k.transpose(-2, -1) / sqrt(d_k) with d_k = 4 (torch)");
    WB_CHECK_CLOSE(wb::masked_softmax(g.tensor<4>("scores")), g.tensor<4>("weights"),
                   wbtest::golden_tolerance,
                   "weights = torch.softmax(scores, dim=-1): the softmax runs over the keys");
    WB_CHECK_CLOSE(wb::weighted_sum(g.tensor<4>("weights"), v), g.tensor<4>("output"),
                   wbtest::golden_tolerance, "output = weights @ v (torch)");
    const wb::Attention a = wb::sdpa(q, k, v);
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "sdpa's weights must equal torch's softmax(q k^T / sqrt(d_k), dim=-1)");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "sdpa's output must equal torch's weights @ v");
}

TEST_CASE("sdpa with a causal mask [1, T, T] matches PyTorch",
          "[sdpa][golden][mask][c:sdpa.composition][c:masked_softmax.shared-mask]"
          "[c:masked_softmax.allowed-means-readable]") {
    const wbtest::Golden g("4-sdpa/causal.txt");
    const Tensor4 q = g.tensor<4>("q"), k = g.tensor<4>("k"), v = g.tensor<4>("v");
    const wb::Mask mask = golden_mask(g);  // [1, T, T], lower triangle: query i reads keys 0..i
    WB_CHECK_CLOSE(wb::masked_softmax(g.tensor<4>("scores"), mask), g.tensor<4>("weights"),
                   wbtest::golden_tolerance,
                   "torch: softmax(scores.masked_fill(~allowed, -inf), dim=-1) with one [1, T, T] "
                   "mask for the whole batch");
    const wb::Attention a = wb::sdpa(q, k, v, mask);
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "sdpa must pass its mask to the softmax: future keys get weight 0");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "the causal output must equal torch's; did sdpa ignore the mask?");
}

TEST_CASE("sdpa with a padding mask [B, N, M] matches PyTorch",
          "[sdpa][golden][mask][c:sdpa.composition][c:masked_softmax.heads-share-pattern]") {
    const wbtest::Golden g("4-sdpa/padding.txt");
    const Tensor4 q = g.tensor<4>("q"), k = g.tensor<4>("k"), v = g.tensor<4>("v");
    const wb::Mask mask = golden_mask(g);  // [B, N, M]: key j readable iff j < length[b]
    const wb::Attention a = wb::sdpa(q, k, v, mask);
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "each sequence b uses its own mask row allowed(b, i, j); padded keys get 0");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "padded keys must not change the output (torch, lengths [5, 3])");
}

TEST_CASE("sdpa with fully masked rows matches PyTorch elsewhere and gives zeros there",
          "[sdpa][golden][mask][c:sdpa.fully-masked-zero]") {
    // torch gives NaN on a fully masked row; the golden holds the documented zeros for those
    // rows and torch's values for all the others (see tools/goldens/chapter4.py).
    const wbtest::Golden g("4-sdpa/fully_masked_row.txt");
    const Tensor4 q = g.tensor<4>("q"), k = g.tensor<4>("k"), v = g.tensor<4>("v");
    const wb::Attention a = wb::sdpa(q, k, v, golden_mask(g));
    INFO("output:" << rows_str(a.output));
    CHECK(wbtest::all_finite(a.output));
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "the fully masked rows (query 1 of sequence 0, query 0 of sequence 1) must be "
                   "all 0, not NaN; the other rows are torch's masked softmax");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "a fully masked query's output row is 0; the others are torch's weights @ v");
}

// ---- errors ---------------------------------------------------------------------------------

TEST_CASE(
    "attention_scores rejects q and k whose B, H or d_k differ",
    "[attention_scores][errors][c:attention_scores.shape-mismatch][c:attention_scores.zero-dk]") {
    using wb::ShapeError;
    const Tensor4 q = xt::zeros<float>({2, 2, 3, 4});
    WB_CHECK_THROWS(ShapeError, wb::attention_scores(q, Tensor4(xt::zeros<float>({1, 2, 5, 4}))),
                    "B of q and k differ: name the function and both shapes",
                    "wb::attention_scores", "[2, 2, 3, 4]", "[1, 2, 5, 4]");
    WB_CHECK_THROWS(ShapeError, wb::attention_scores(q, Tensor4(xt::zeros<float>({2, 3, 5, 4}))),
                    "H of q and k differ: name the function and both shapes",
                    "wb::attention_scores", "[2, 2, 3, 4]", "[2, 3, 5, 4]");
    WB_CHECK_THROWS(ShapeError, wb::attention_scores(q, Tensor4(xt::zeros<float>({2, 2, 3, 5}))),
                    "d_k of q and k differ (a query must be as wide as a key)",
                    "wb::attention_scores", "[2, 2, 3, 4]", "[2, 2, 3, 5]");
    WB_CHECK_THROWS(ShapeError,
                    wb::attention_scores(Tensor4(xt::zeros<float>({1, 1, 3, 0})),
                                         Tensor4(xt::zeros<float>({1, 1, 2, 0}))),
                    "d_k == 0 would divide by sqrt(0)", "wb::attention_scores", "[1, 1, 3, 0]");
}

TEST_CASE("masked_softmax rejects a mask that does not fit the scores",
          "[masked_softmax][errors][c:masked_softmax.mask-shape]") {
    using wb::ShapeError;
    const Tensor4 scores = xt::zeros<float>({2, 2, 3, 5});  // [B, H, N, M]
    const auto mask_of = [](std::size_t b, std::size_t n, std::size_t m) {
        return wb::Mask{Bool3(xt::ones<bool>({b, n, m}))};
    };
    WB_CHECK_THROWS(ShapeError, wb::masked_softmax(scores, mask_of(2, 4, 5)),
                    "the mask's N (4) is not the scores' N (3)", "wb::masked_softmax", "[2, 4, 5]",
                    "[2, 2, 3, 5]");
    WB_CHECK_THROWS(ShapeError, wb::masked_softmax(scores, mask_of(2, 3, 4)),
                    "the mask's M (4) is not the scores' M (5)", "wb::masked_softmax", "[2, 3, 4]",
                    "[2, 2, 3, 5]");
    WB_CHECK_THROWS(ShapeError, wb::masked_softmax(scores, mask_of(3, 3, 5)),
                    "the mask's batch axis must be B (2) or 1", "wb::masked_softmax", "[3, 3, 5]",
                    "[2, 2, 3, 5]");
}

TEST_CASE("weighted_sum rejects weights and values whose B, H or M differ",
          "[weighted_sum][errors][c:weighted_sum.shape-mismatch]") {
    using wb::ShapeError;
    const Tensor4 w = xt::zeros<float>({2, 2, 3, 5});  // [B, H, N, M]
    WB_CHECK_THROWS(ShapeError, wb::weighted_sum(w, Tensor4(xt::zeros<float>({1, 2, 5, 4}))),
                    "B differs", "wb::weighted_sum", "[2, 2, 3, 5]", "[1, 2, 5, 4]");
    WB_CHECK_THROWS(ShapeError, wb::weighted_sum(w, Tensor4(xt::zeros<float>({2, 1, 5, 4}))),
                    "H differs", "wb::weighted_sum", "[2, 2, 3, 5]", "[2, 1, 5, 4]");
    WB_CHECK_THROWS(ShapeError, wb::weighted_sum(w, Tensor4(xt::zeros<float>({2, 2, 3, 4}))),
                    "weights have M = 5 keys but v has 3 value rows", "wb::weighted_sum",
                    "[2, 2, 3, 5]", "[2, 2, 3, 4]");
}

TEST_CASE("sdpa rejects q, k, v or a mask that do not fit together, naming every shape",
          "[sdpa][errors][c:sdpa.shape-mismatch][c:sdpa.mask-shape]") {
    using wb::ShapeError;
    const Tensor4 q = xt::zeros<float>({1, 2, 3, 4});  // [B, H, N, d_k]
    const Tensor4 k = xt::zeros<float>({1, 2, 5, 4});  // [B, H, M, d_k]
    const Tensor4 v = xt::zeros<float>({1, 2, 5, 6});  // [B, H, M, d_v]
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, k, Tensor4(xt::zeros<float>({1, 2, 6, 6}))),
                    "k has 5 keys but v has 6 values: every key needs its value", "wb::sdpa",
                    "[1, 2, 3, 4]", "[1, 2, 5, 4]", "[1, 2, 6, 6]");
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, Tensor4(xt::zeros<float>({1, 2, 5, 3})), v),
                    "d_k of q (4) and k (3) differ", "wb::sdpa", "[1, 2, 3, 4]", "[1, 2, 5, 3]",
                    "[1, 2, 5, 6]");
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, k, Tensor4(xt::zeros<float>({2, 2, 5, 6}))),
                    "B of v (2) differs from q's and k's (1)", "wb::sdpa", "[1, 2, 3, 4]",
                    "[1, 2, 5, 4]", "[2, 2, 5, 6]");
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, Tensor4(xt::zeros<float>({1, 1, 5, 4})), v),
                    "H of k (1) differs from q's (2)", "wb::sdpa", "[1, 2, 3, 4]", "[1, 1, 5, 4]");
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, k, v, wb::Mask{Bool3(xt::ones<bool>({1, 5, 3}))}),
                    "a mask [1, N, M] must be [1, 3, 5] here, not [1, 5, 3] (N and M swapped)",
                    "wb::sdpa", "[1, 5, 3]");
}

namespace {

// The formula of sdpa.hpp in double precision, written independently: scores q.k / sqrt(d_k),
// hidden keys skipped, softmax over the readable keys (a row with none stays 0), output A v.
struct DoubleAttention {
    xt::xtensor<double, 4> scores, weights, output;
};

DoubleAttention attention_in_double(const Tensor4& q, const Tensor4& k, const Tensor4& v,
                                    const Bool3* allowed) {
    const std::size_t B = q.shape(0), H = q.shape(1), N = q.shape(2), dk = q.shape(3);
    const std::size_t M = k.shape(2), dv = v.shape(3);
    DoubleAttention r;
    r.scores = xt::zeros<double>({B, H, N, M});
    r.weights = xt::zeros<double>({B, H, N, M});
    r.output = xt::zeros<double>({B, H, N, dv});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i) {
                auto open = [&](std::size_t j) {
                    return !allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : b, i, j);
                };
                double top = -INFINITY;
                for (std::size_t j = 0; j < M; ++j) {
                    double s = 0.0;
                    for (std::size_t t = 0; t < dk; ++t) s += double(q(b, h, i, t)) * k(b, h, j, t);
                    r.scores(b, h, i, j) = s / std::sqrt(double(dk));
                    if (open(j)) top = std::max(top, r.scores(b, h, i, j));
                }
                double sum = 0.0;
                for (std::size_t j = 0; j < M; ++j)
                    if (open(j)) sum += std::exp(r.scores(b, h, i, j) - top);
                for (std::size_t j = 0; j < M; ++j) {
                    if (!open(j) || sum == 0.0) continue;
                    r.weights(b, h, i, j) = std::exp(r.scores(b, h, i, j) - top) / sum;
                    for (std::size_t c = 0; c < dv; ++c)
                        r.output(b, h, i, c) += r.weights(b, h, i, j) * v(b, h, j, c);
                }
            }
    return r;
}

}  // namespace

TEST_CASE("sdpa equals the formula in double on drawn sizes, d_k not a perfect square",
          "[sdpa][attention_scores][masked_softmax][mask][c:attention_scores.scaled]"
          "[c:masked_softmax.over-keys][c:masked_softmax.hidden-zero]"
          "[c:masked_softmax.fully-masked-zero][c:masked_softmax.shared-mask]"
          "[c:masked_softmax.heads-share-pattern][c:weighted_sum.product][c:sdpa.composition]") {
    // {B, H, N, M, d_k, d_v, mask batch (0: no mask)}: sizes of 1, odd sizes, d_k of 1, 2, 3, 5
    // and 7 (sqrt(d_k) is not an integer: an integer square root shows), N != M, d_k != d_v.
    using Case = std::array<std::size_t, 7>;
    const Case c =
        GENERATE(Case{1, 1, 1, 1, 1, 1, 0}, Case{1, 1, 1, 1, 3, 1, 1}, Case{2, 3, 4, 5, 3, 2, 2},
                 Case{1, 2, 7, 3, 5, 6, 1}, Case{3, 1, 2, 9, 2, 1, 3}, Case{2, 2, 5, 5, 7, 3, 1});
    const std::size_t B = c[0], H = c[1], N = c[2], M = c[3], dk = c[4], dv = c[5], mb = c[6];
    const unsigned seed = static_cast<unsigned>(500 + 7 * (B + 3 * H + 5 * N + 11 * M + 13 * dk));
    INFO("B = " << B << ", H = " << H << ", N = " << N << ", M = " << M << ", d_k = " << dk
                << ", d_v = " << dv << ", mask batch " << mb << " (0: none), seed " << seed);
    Tensor4 q = wbtest::randn<Tensor4>({B, H, N, dk}, seed);
    q *= 3.0f;  // scores of a few units: a wrong scale changes the weights visibly
    const Tensor4 k = wbtest::randn<Tensor4>({B, H, M, dk}, seed + 1);
    const Tensor4 v = wbtest::randn<Tensor4>({B, H, M, dv}, seed + 2);
    Bool3 allowed = wbtest::randn<xt::xtensor<float, 3>>({std::max<std::size_t>(mb, 1), N, M},
                                                         seed + 3) > -0.3f;
    if (mb > 0 && N > 1)
        for (std::size_t j = 0; j < M; ++j) allowed(0, N - 1, j) = false;  // one row fully masked
    const Bool3* mask_ptr = mb > 0 ? &allowed : nullptr;
    const DoubleAttention want = attention_in_double(q, k, v, mask_ptr);
    const std::optional<wb::Mask> mask =
        mb > 0 ? std::optional<wb::Mask>(wb::Mask{allowed}) : std::nullopt;

    WB_CHECK_CLOSE(wb::attention_scores(q, k), want.scores, 1e-5,
                   "S = q k^T / sqrt(d_k) with d_k = q.shape(3) as a real number: sqrt(3) is "
                   "1.732, not 1 (no integer square root)");
    const Tensor4 w = wb::masked_softmax(wb::attention_scores(q, k), mask);
    WB_CHECK_CLOSE(w, want.weights, 1e-5,
                   "softmax over the keys of each query, hidden keys at exactly 0, a query with "
                   "no readable key all 0; a [1, N, M] mask serves every b, every head of b "
                   "reads mask b");
    const wb::Attention a = wb::sdpa(q, k, v, mask);
    WB_CHECK_CLOSE(a.weights, want.weights, 1e-5,
                   "sdpa's weights are masked_softmax(attention_scores(q, k), mask)");
    WB_CHECK_CLOSE(a.output, want.output, 1e-5,
                   "sdpa's output is weighted_sum(weights, v): one row per query, d_v wide");
}

TEST_CASE("sdpa names itself when v's H or the mask's batch does not fit",
          "[sdpa][errors][c:sdpa.shape-mismatch][c:sdpa.mask-shape]") {
    using wb::ShapeError;
    const Tensor4 q = xt::zeros<float>({2, 2, 3, 4});  // [B, H, N, d_k]
    const Tensor4 k = xt::zeros<float>({2, 2, 5, 4});  // [B, H, M, d_k]
    const Tensor4 v = xt::zeros<float>({2, 2, 5, 6});  // [B, H, M, d_v]
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, k, Tensor4(xt::zeros<float>({2, 3, 5, 6}))),
                    "v has H = 3 heads, q and k have 2: sdpa checks v's B and H too, under its "
                    "own name",
                    "wb::sdpa", "[2, 2, 3, 4]", "[2, 2, 5, 4]", "[2, 3, 5, 6]");
    WB_CHECK_THROWS(ShapeError, wb::sdpa(q, k, v, wb::Mask{Bool3(xt::ones<bool>({3, 3, 5}))}),
                    "a mask's batch axis is B (2) or 1, not 3: sdpa checks it under its own name",
                    "wb::sdpa", "[3, 3, 5]");
}

TEST_CASE("with no queries (N = 0) every function still checks its shapes before returning",
          "[attention_scores][masked_softmax][weighted_sum][sdpa][errors]"
          "[c:attention_scores.shape-mismatch][c:attention_scores.zero-dk]"
          "[c:masked_softmax.mask-shape][c:weighted_sum.shape-mismatch][c:sdpa.shape-mismatch]") {
    // An empty result is no excuse to skip a check: the @throws of sdpa.hpp hold for N = 0 too.
    using wb::ShapeError;
    INFO(
        "hint: an early return for an empty result (N == 0, size() == 0) must come after the "
        "shape checks, not before them");
    WB_CHECK_THROWS(ShapeError,
                    wb::attention_scores(Tensor4(xt::zeros<float>({2, 2, 0, 4})),
                                         Tensor4(xt::zeros<float>({1, 2, 5, 4}))),
                    "B of q (2) and k (1) differ, even with no queries", "wb::attention_scores",
                    "[2, 2, 0, 4]", "[1, 2, 5, 4]");
    WB_CHECK_THROWS(ShapeError,
                    wb::attention_scores(Tensor4(xt::zeros<float>({1, 1, 0, 0})),
                                         Tensor4(xt::zeros<float>({1, 1, 2, 0}))),
                    "d_k == 0 is refused even with no queries", "wb::attention_scores",
                    "[1, 1, 0, 0]");
    WB_CHECK_THROWS(ShapeError,
                    wb::masked_softmax(Tensor4(xt::zeros<float>({2, 2, 0, 5})),
                                       wb::Mask{Bool3(xt::ones<bool>({2, 4, 5}))}),
                    "the mask's N (4) is not the scores' N (0)", "wb::masked_softmax", "[2, 4, 5]",
                    "[2, 2, 0, 5]");
    WB_CHECK_THROWS(ShapeError,
                    wb::weighted_sum(Tensor4(xt::zeros<float>({2, 2, 0, 5})),
                                     Tensor4(xt::zeros<float>({1, 2, 5, 4}))),
                    "B of the weights (2) and v (1) differ, even with no queries",
                    "wb::weighted_sum", "[2, 2, 0, 5]", "[1, 2, 5, 4]");
    WB_CHECK_THROWS(
        ShapeError,
        wb::sdpa(Tensor4(xt::zeros<float>({1, 2, 0, 4})), Tensor4(xt::zeros<float>({1, 2, 5, 4})),
                 Tensor4(xt::zeros<float>({1, 2, 6, 6}))),
        "k has 5 keys but v has 6 values, even with no queries", "wb::sdpa", "[1, 2, 0, 4]",
        "[1, 2, 5, 4]", "[1, 2, 6, 6]");
}
