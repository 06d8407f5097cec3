#include "5-mha/mha.hpp"
#include "6-masks/masks.hpp"
#include "check.hpp"
#include "golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

namespace {

using Bool3 = xt::xtensor<bool, 3>;
using Ints3 = xt::xtensor<int, 3>;  // hand-written masks: 1 = may read, 0 = hidden
using Rows = std::vector<std::size_t>;

// A mask as 0/1 numbers, so that WB_CHECK_CLOSE can report the first wrong entry.
Ints3 as01(const Bool3& allowed) {
    Ints3 out = Ints3::from_shape(allowed.shape());
    std::transform(allowed.begin(), allowed.end(), out.begin(), [](bool a) { return a ? 1 : 0; });
    return out;
}

Bool3 as_bool(const Ints3& t) {
    Bool3 out = Bool3::from_shape(t.shape());
    std::transform(t.begin(), t.end(), out.begin(), [](int v) { return v != 0; });
    return out;
}

std::string rows_str(const Rows& rows) { return wb::shape_str(rows); }

// max |a - b| over all elements, in double; the shapes must agree.
template <class A, class B>
double max_diff(const A& a, const B& b) {
    REQUIRE(wbtest::shape_of(a) == wbtest::shape_of(b));
    double m = 0.0;
    auto ib = b.begin();
    for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
        m = std::max(m, std::fabs(static_cast<double>(*ia) - static_cast<double>(*ib)));
    }
    return m;
}

// Positions [0, j) of a [B, H, T, d] tensor, and position t alone.
wb::Tensor4 before(const wb::Tensor4& x, std::size_t j) {
    return xt::view(x, xt::all(), xt::all(), xt::range(0, j), xt::all());
}
wb::Tensor4 at(const wb::Tensor4& x, std::size_t t) {
    return xt::view(x, xt::all(), xt::all(), xt::range(t, t + 1), xt::all());
}
// The same for [B, T, D].
wb::Tensor3 before(const wb::Tensor3& x, std::size_t j) {
    return xt::view(x, xt::all(), xt::range(0, j), xt::all());
}
wb::Tensor3 at(const wb::Tensor3& x, std::size_t t) {
    return xt::view(x, xt::all(), xt::range(t, t + 1), xt::all());
}

// Replaces token t of a [B, H, T, d] tensor with fresh random numbers.
void replace_token(wb::Tensor4& x, std::size_t t, unsigned seed) {
    const auto fresh = wbtest::randn<wb::Tensor4>({x.shape(0), x.shape(1), 1, x.shape(3)}, seed);
    xt::view(x, xt::all(), xt::all(), xt::range(t, t + 1), xt::all()) = fresh;
}

// Row sums of [B, H, N, M] weights.
wb::Tensor3 row_sums(const wb::Tensor4& w) {
    wb::Tensor3 s = wb::Tensor3::from_shape({w.shape(0), w.shape(1), w.shape(2)});
    for (std::size_t b = 0; b < w.shape(0); ++b)
        for (std::size_t h = 0; h < w.shape(1); ++h)
            for (std::size_t i = 0; i < w.shape(2); ++i) {
                float sum = 0.0f;
                for (std::size_t j = 0; j < w.shape(3); ++j) sum += w(b, h, i, j);
                s(b, h, i) = sum;
            }
    return s;
}

std::vector<std::size_t> lengths_of(const wb::Tensor1& t) {
    std::vector<std::size_t> out;
    for (float v : t) out.push_back(static_cast<std::size_t>(v));
    return out;
}

const char* const kCausalHint =
    "query i may read key j exactly when j <= i: the past and itself. "
    "j < i hides the diagonal, j <= i + 1 reads one future token, i <= j (or a transposed "
    "table) reads the whole future";

}  // namespace

// ---- the causal mask (§12, §21.5) ------------------------------------------------------------

TEST_CASE("causal mask for T = 4 is the notes' table of allowed and forbidden reads",
          "[causal][c:causal_mask.no-future]"
          "[c:causal_mask.diagonal-allowed][c:causal_mask.shared-batch]") {
    const wb::Mask m = wb::causal_mask(4);
    WB_CHECK_SHAPE(m.allowed, (wb::Shape{1, 4, 4}),
                   "causal_mask(T) is [1, T, T]: batch 1 is shared by every sequence");
    // §12, copied by hand: rows are queries 1..4, columns keys 1..4; ✓ = 1, × = 0.
    const Ints3 table = {{{1, 0, 0, 0},    // query 1: ✓ × × ×
                          {1, 1, 0, 0},    // query 2: ✓ ✓ × ×
                          {1, 1, 1, 0},    // query 3: ✓ ✓ ✓ ×
                          {1, 1, 1, 1}}};  // query 4: ✓ ✓ ✓ ✓
    WB_CHECK_CLOSE(as01(m.allowed), table, 0.0, kCausalHint);
}

TEST_CASE("causal mask lets every query read itself and its whole past, never the future",
          "[causal][c:causal_mask.no-future]"
          "[c:causal_mask.diagonal-allowed][c:causal_mask.shared-batch]") {
    for (std::size_t T : {1u, 3u, 7u}) {
        INFO("T = " << T);
        const wb::Mask m = wb::causal_mask(T);
        WB_CHECK_SHAPE(m.allowed, (wb::Shape{1, T, T}), "causal_mask(T) is [1, T, T]");
        if (m.allowed.shape() != std::array<std::size_t, 3>{1, T, T}) continue;
        for (std::size_t i = 0; i < T; ++i) {
            INFO("query " << i << " reading itself (the diagonal)");
            INFO(
                "hint: reading yourself is not a leak — position i predicts token i + 1 "
                "(§12); torch.triu(..., diagonal=1) starts ABOVE the diagonal. "
                "Did you write j < i, or triu with diagonal=0?");
            CHECK(m.allowed(0, i, i));
        }
        std::size_t readable = 0;
        for (bool a : m.allowed) readable += a ? 1 : 0;
        // 1 + 2 + ... + T keys are readable: the lower triangle with its diagonal.
        INFO("expected " << T * (T + 1) / 2 << " readable (query, key) pairs, got " << readable
                         << "\nhint: " << kCausalHint);
        CHECK(readable == T * (T + 1) / 2);
        INFO("query 0 may read only key 0; the last query may read every key");
        CHECK(m.allowed(0, T - 1, 0));
        CHECK((T == 1 || !m.allowed(0, 0, T - 1)));
    }
}

TEST_CASE("causal attention with equal scores averages the prefix (hand-computed)",
          "[causal][c:causal_mask.no-future]") {
    // q = 0 makes every score 0, so query i spreads its weight evenly over the keys it may
    // read: weights 1/(i+1) on keys 0..i, and the output is the mean of v_0..v_i.
    const wb::Tensor4 q = wb::Tensor4::from_shape({1, 1, 4, 2});
    wb::Tensor4 qz = q;
    qz.fill(0.0f);
    const wb::Tensor4 k = wbtest::randn<wb::Tensor4>({1, 1, 4, 2}, 61);
    const wb::Tensor4 v = {{{{1.0f, 0.0f}, {3.0f, 2.0f}, {5.0f, -4.0f}, {-1.0f, 6.0f}}}};
    const wb::Attention a = wb::sdpa(qz, k, v, wb::causal_mask(4));
    // Running means by hand: column 0: 1, (1+3)/2, (1+3+5)/3, (1+3+5-1)/4;
    //                        column 1: 0, (0+2)/2, (0+2-4)/3, (0+2-4+6)/4.
    const wb::Tensor4 expected_out = {
        {{{1.0f, 0.0f}, {2.0f, 1.0f}, {3.0f, -2.0f / 3.0f}, {2.0f, 1.0f}}}};
    const wb::Tensor4 expected_w = {{{{1.0f, 0.0f, 0.0f, 0.0f},
                                      {0.5f, 0.5f, 0.0f, 0.0f},
                                      {1.0f / 3, 1.0f / 3, 1.0f / 3, 0.0f},
                                      {0.25f, 0.25f, 0.25f, 0.25f}}}};
    WB_CHECK_CLOSE(a.weights, expected_w, 1e-6,
                   "with equal scores query i must weight keys 0..i by 1/(i+1) and the future by "
                   "0; a different pattern means the mask allows the wrong keys");
    WB_CHECK_CLOSE(a.output, expected_out, 1e-5,
                   "output i must be the mean of v_0..v_i; query 0 reads only v_0 (itself)");
}

TEST_CASE("causal weights are exactly 0 above the diagonal and every row sums to 1",
          "[causal][c:causal_mask.no-future]") {
    const std::size_t T = 5;
    const auto q = wbtest::randn<wb::Tensor4>({2, 2, T, 4}, 62);
    const auto k = wbtest::randn<wb::Tensor4>({2, 2, T, 4}, 63);
    const auto v = wbtest::randn<wb::Tensor4>({2, 2, T, 3}, 64);
    const wb::Attention a = wb::sdpa(q, k, v, wb::causal_mask(T));
    REQUIRE(wbtest::shape_of(a.weights) == (wb::Shape{2, 2, T, T}));
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < T; ++i)
                for (std::size_t j = i + 1; j < T; ++j) {
                    INFO("weights[" << b << ", " << h << ", " << i << ", " << j
                                    << "] = " << a.weights(b, h, i, j) << " must be exactly 0: key "
                                    << j << " is in the future of "
                                    << "query " << i << ". " << kCausalHint);
                    CHECK(a.weights(b, h, i, j) == 0.0f);
                }
    wb::Tensor3 ones = wb::Tensor3::from_shape({2, 2, T});
    ones.fill(1.0f);
    WB_CHECK_CLOSE(row_sums(a.weights), ones, 1e-5,
                   "every query may read at least itself, so every row sums to 1; a row of 0 "
                   "means the diagonal is hidden (query 0 then reads nothing)");
}

// ---- causality end to end (§18, §21.8) -------------------------------------------------------

TEST_CASE("changing token j leaves every earlier output of sdpa unchanged (causality)",
          "[causal][causality][c:causal_mask.no-future]") {
    for (std::size_t T : {1u, 3u, 7u}) {
        const auto q = wbtest::randn<wb::Tensor4>({2, 1, T, 4}, 65);
        const auto k = wbtest::randn<wb::Tensor4>({2, 1, T, 4}, 66);
        const auto v = wbtest::randn<wb::Tensor4>({2, 1, T, 3}, 67);
        const wb::Mask mask = wb::causal_mask(T);
        const wb::Tensor4 original = wb::sdpa(q, k, v, mask).output;
        for (std::size_t j = 0; j < T; ++j) {
            INFO("T = " << T << ": token j = " << j << " (its q, k and v) replaced");
            wb::Tensor4 q2 = q, k2 = k, v2 = v;
            replace_token(q2, j, 100 + static_cast<unsigned>(j));
            replace_token(k2, j, 200 + static_cast<unsigned>(j));
            replace_token(v2, j, 300 + static_cast<unsigned>(j));
            const wb::Tensor4 changed = wb::sdpa(q2, k2, v2, mask).output;
            // Exact in principle (hidden keys weigh exactly 0); 1e-6 as in §21.8's allclose.
            WB_CHECK_CLOSE(before(changed, j), before(original, j), 1e-6,
                           "an output before position j changed when only token j changed: an "
                           "earlier query read a future key. " +
                               std::string(kCausalHint));
            for (std::size_t t = j; t < T; ++t) {
                const double d = max_diff(at(changed, t), at(original, t));
                INFO("output at position "
                     << t << " >= j moved by " << d << "; it reads token j (query " << t
                     << " may read key " << j
                     << "), so it must change. If it did not, the check is vacuous: did you "
                        "hide the diagonal (query 0 then reads nothing and outputs 0)?");
                CHECK(d > 1e-4);
            }
        }
    }
}

TEST_CASE(
    "changing token j leaves every earlier output of multi-head attention unchanged "
    "(causality)",
    "[causal][causality][mha][c:causal_mask.no-future]") {
    const wb::MhaParams p = wb::init_mha(8, 2, true, 68);
    for (std::size_t T : {1u, 3u, 7u}) {
        const auto x = wbtest::randn<wb::Tensor3>({2, T, 8}, 69);
        const wb::Mask mask = wb::causal_mask(T);
        const wb::Tensor3 original = wb::self_attention(x, p, mask).output;
        for (std::size_t j = 0; j < T; ++j) {
            INFO("T = " << T << ", D = 8, H = 2: token x[:, " << j << ", :] replaced");
            wb::Tensor3 x2 = x;
            xt::view(x2, xt::all(), xt::range(j, j + 1), xt::all()) =
                wbtest::randn<wb::Tensor3>({2, 1, 8}, 400 + static_cast<unsigned>(j));
            const wb::Tensor3 changed = wb::self_attention(x2, p, mask).output;
            WB_CHECK_CLOSE(before(changed, j), before(original, j), 1e-5,
                           "a multi-head output before position j changed when only token j "
                           "changed: the causal mask lets a query read the future. " +
                               std::string(kCausalHint));
            for (std::size_t t = j; t < T; ++t) {
                const double d = max_diff(at(changed, t), at(original, t));
                INFO("output at position " << t << " >= j moved by " << d
                                           << "; it reads token j, so it must change");
                CHECK(d > 1e-4);
            }
        }
    }
}

// ---- the padding mask -------------------------------------------------------------------------

TEST_CASE("padding mask for lengths {3, 1, 4} hides each sequence's padded keys",
          "[padding][c:padding_mask.shape]"
          "[c:padding_mask.length-at-most-m]") {
    const wb::Mask m = wb::padding_mask({3, 1, 4}, 2, 4);
    WB_CHECK_SHAPE(m.allowed, (wb::Shape{3, 2, 4}),
                   "padding_mask(lengths, N, M) is [B, N, M] with B = lengths.size()");
    // allowed(b, i, j) = j < lengths[b], by hand; every query row of a sequence is the same.
    const Ints3 expected = {{{1, 1, 1, 0}, {1, 1, 1, 0}},   // length 3: key 3 is padding
                            {{1, 0, 0, 0}, {1, 0, 0, 0}},   // length 1: keys 1..3 are padding
                            {{1, 1, 1, 1}, {1, 1, 1, 1}}};  // length 4 = M: no padding
    WB_CHECK_CLOSE(as01(m.allowed), expected, 0.0,
                   "key j of sequence b is real when j < lengths[b] (strictly less: a sequence "
                   "of length 3 has keys 0, 1, 2). The lengths cut the KEY axis j, the last one");
}

TEST_CASE("padding mask cuts the key axis, not the query axis (N = 3 queries, M = 5 keys)",
          "[padding][c:padding_mask.keys-only][c:padding_mask.shape]") {
    const wb::Mask m = wb::padding_mask({2}, 3, 5);
    WB_CHECK_SHAPE(m.allowed, (wb::Shape{1, 3, 5}), "padding_mask({2}, N = 3, M = 5) is [1, 3, 5]");
    // Every query (real or padded) may read the 2 real keys and nothing else.
    const Ints3 expected = {{{1, 1, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 0, 0, 0}}};
    WB_CHECK_CLOSE(as01(m.allowed), expected, 0.0,
                   "padded KEYS are hidden from every query; did you compare the query index i "
                   "with the length instead of the key index j?");
}

TEST_CASE("changing padded keys and values changes no output of sdpa",
          "[padding][c:padding_mask.keys-only]") {
    const std::vector<std::size_t> lengths = {3, 1, 4};
    const std::size_t T = 4;
    const auto q = wbtest::randn<wb::Tensor4>({3, 2, T, 4}, 70);
    const auto k = wbtest::randn<wb::Tensor4>({3, 2, T, 4}, 71);
    const auto v = wbtest::randn<wb::Tensor4>({3, 2, T, 3}, 72);
    const wb::Mask mask = wb::padding_mask(lengths, T, T);
    const wb::Tensor4 original = wb::sdpa(q, k, v, mask).output;

    // Overwrite every padded key and value with large garbage.
    wb::Tensor4 k2 = k, v2 = v;
    const auto noise_k = wbtest::randn<wb::Tensor4>({3, 2, T, 4}, 73);
    const auto noise_v = wbtest::randn<wb::Tensor4>({3, 2, T, 3}, 74);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t j = lengths[b]; j < T; ++j) {
            xt::view(k2, b, xt::all(), j, xt::all()) =
                10.0f * xt::view(noise_k, b, xt::all(), j, xt::all());
            xt::view(v2, b, xt::all(), j, xt::all()) =
                10.0f * xt::view(noise_v, b, xt::all(), j, xt::all());
        }
    const wb::Tensor4 changed = wb::sdpa(q, k2, v2, mask).output;
    for (std::size_t b = 0; b < 3; ++b) {
        INFO("sequence " << b << " of length " << lengths[b]);
        const wb::Tensor3 o = xt::view(original, b, xt::all(), xt::range(0, lengths[b]), xt::all());
        const wb::Tensor3 c = xt::view(changed, b, xt::all(), xt::range(0, lengths[b]), xt::all());
        WB_CHECK_CLOSE(c, o, 1e-6,
                       "a real query's output changed when only PADDED keys/values changed: the "
                       "padding leaks in. Hide keys j >= length (not j > length), on the key axis");
    }
    // A padded query reads the same real keys, so its (meaningless) output does not move either.
    WB_CHECK_CLOSE(changed, original, 1e-6,
                   "padded queries read only real keys too (the mask is the same for every "
                   "query), so no output at all may depend on the padded keys");

    // Not vacuous: changing a REAL key (key 0 of sequence 1) does change that sequence.
    wb::Tensor4 v3 = v;
    xt::view(v3, 1, xt::all(), 0, xt::all()) += 1.0f;
    const wb::Tensor4 moved = wb::sdpa(q, k, v3, mask).output;
    const double d = max_diff(wb::Tensor3(xt::view(moved, 1)), wb::Tensor3(xt::view(original, 1)));
    INFO("changing the only real value of sequence 1 moved its outputs by "
         << d << "; it is the only key they may read, so every output must move by 1");
    CHECK(d > 0.5);
}

TEST_CASE("padding in multi-head self attention keeps padded tokens away from real queries",
          "[padding][mha][c:causal_padding_mask.causal-and-padding]") {
    const std::vector<std::size_t> lengths = {3, 1, 4};
    const std::size_t T = 4, D = 8;
    const wb::MhaParams p = wb::init_mha(D, 2, true, 75);
    const auto x = wbtest::randn<wb::Tensor3>({3, T, D}, 76);
    const wb::Mask mask = wb::causal_padding_mask(lengths, T);
    const wb::Tensor3 original = wb::self_attention(x, p, mask).output;
    wb::Tensor3 x2 = x;
    const auto noise = wbtest::randn<wb::Tensor3>({3, T, D}, 77);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t t = lengths[b]; t < T; ++t)
            xt::view(x2, b, t, xt::all()) = 5.0f * xt::view(noise, b, t, xt::all());
    const wb::Tensor3 changed = wb::self_attention(x2, p, mask).output;
    for (std::size_t b = 0; b < 3; ++b) {
        INFO("sequence " << b << " of length " << lengths[b]);
        WB_CHECK_CLOSE(wb::Tensor2(xt::view(changed, b, xt::range(0, lengths[b]), xt::all())),
                       wb::Tensor2(xt::view(original, b, xt::range(0, lengths[b]), xt::all())),
                       1e-5,
                       "a real token's output changed when only padding tokens changed: the "
                       "mask must hide every key j >= lengths[b]");
    }
}

// ---- combining ---------------------------------------------------------------------------------

TEST_CASE("combining masks is a logical AND, a key is readable only if both allow it",
          "[combine][c:combine_masks.and]") {
    // All four cases of the truth table, one per entry.
    const wb::Mask a{as_bool(Ints3{{{1, 1}, {0, 0}}})};
    const wb::Mask b{as_bool(Ints3{{{1, 0}, {1, 0}}})};
    const wb::Mask c = wb::combine_masks(a, b);
    WB_CHECK_SHAPE(c.allowed, (wb::Shape{1, 2, 2}), "two [1, 2, 2] masks combine to [1, 2, 2]");
    const Ints3 expected = {{{1, 0}, {0, 0}}};  // 1&1, 1&0, 0&1, 0&0
    WB_CHECK_CLOSE(as01(c.allowed), expected, 0.0,
                   "combine with AND: either mask may hide a key (OR would let a padded key "
                   "through the causal mask, or a future key through the padding mask)");
}

TEST_CASE("combining broadcasts a mask of batch 1 over a batch of B, in either order",
          "[combine][c:combine_masks.broadcast]") {
    const wb::Mask shared{as_bool(Ints3{{{1, 1, 0}, {1, 0, 1}}})};     // [1, 2, 3]
    const wb::Mask per_sequence{as_bool(Ints3{{{1, 1, 1}, {1, 1, 1}},  // [2, 2, 3]
                                              {{0, 1, 1}, {1, 1, 0}}})};
    // By hand: sequence 0 is `shared` itself, sequence 1 is shared AND its own pattern.
    const Ints3 expected = {{{1, 1, 0}, {1, 0, 1}}, {{0, 1, 0}, {1, 0, 0}}};
    const char* hint =
        "a batch of 1 is shared: read it at batch index 0 for EVERY sequence, and "
        "read the other mask at the sequence's own index";
    const wb::Mask ab = wb::combine_masks(shared, per_sequence);
    WB_CHECK_SHAPE(ab.allowed, (wb::Shape{2, 2, 3}), "[1, 2, 3] with [2, 2, 3] gives [2, 2, 3]");
    WB_CHECK_CLOSE(as01(ab.allowed), expected, 0.0, hint);
    const wb::Mask ba = wb::combine_masks(per_sequence, shared);
    WB_CHECK_SHAPE(ba.allowed, (wb::Shape{2, 2, 3}), "[2, 2, 3] with [1, 2, 3] gives [2, 2, 3]");
    WB_CHECK_CLOSE(as01(ba.allowed), expected, 0.0, hint);
}

TEST_CASE("causal padding mask for lengths {3, 1, 4} and T = 4 (hand-written)",
          "[combine][c:causal_padding_mask.causal-and-padding]"
          "[c:causal_padding_mask.padded-rows]"
          "[c:causal_padding_mask.shape]"
          "[c:causal_padding_mask.length-at-most-t]") {
    const wb::Mask m = wb::causal_padding_mask({3, 1, 4}, 4);
    WB_CHECK_SHAPE(m.allowed, (wb::Shape{3, 4, 4}), "causal_padding_mask(lengths, T) is [B, T, T]");
    // allowed(b, i, j) = (j <= i) AND (j < lengths[b]), by hand.
    const Ints3 expected = {{{1, 0, 0, 0},  // length 3
                             {1, 1, 0, 0},
                             {1, 1, 1, 0},
                             {1, 1, 1, 0}},  // padded query 3 reads the 3 real keys
                            {{1, 0, 0, 0},   // length 1: everyone reads key 0 only
                             {1, 0, 0, 0},
                             {1, 0, 0, 0},
                             {1, 0, 0, 0}},
                            {{1, 0, 0, 0},  // length 4: the plain causal table
                             {1, 1, 0, 0},
                             {1, 1, 1, 0},
                             {1, 1, 1, 1}}};
    WB_CHECK_CLOSE(as01(m.allowed), expected, 0.0,
                   "causal AND padding: j <= i and j < lengths[b]. Is one of the two missing, "
                   "or combined with OR?");
}

// ---- fully masked rows (§18) -------------------------------------------------------------------

TEST_CASE("fully_masked_rows reports exactly the queries that may read nothing",
          "[fully-masked][c:fully_masked_rows.ascending]"
          "[c:fully_masked_rows.which-masks]"
          "[c:padding_mask.length-zero]") {
    for (std::size_t T : {1u, 3u, 7u}) {
        const Rows rows = wb::fully_masked_rows(wb::causal_mask(T), 0);
        INFO("causal_mask(" << T << "): expected no fully masked row, got " << rows_str(rows)
                            << "\nhint: every query may read itself. A row is fully masked only "
                               "when NO key is allowed, not when SOME key is hidden; and is the "
                               "diagonal allowed?");
        CHECK(rows.empty());
    }
    const wb::Mask m = wb::padding_mask({2, 0, 3}, 2, 3);  // sequence 1 has no real token
    const Rows expected_1 = {0, 1};
    const Rows r0 = wb::fully_masked_rows(m, 0);
    const Rows r1 = wb::fully_masked_rows(m, 1);
    const Rows r2 = wb::fully_masked_rows(m, 2);
    INFO("padding_mask({2, 0, 3}, 2, 3): sequence 0 -> "
         << rows_str(r0) << ", sequence 1 -> " << rows_str(r1) << ", sequence 2 -> " << rows_str(r2)
         << "; expected [], [0, 1], []. A sequence of length 0 leaves every query with nothing "
            "to read; report the row indices i of sequence b, in ascending order");
    CHECK(r0.empty());
    CHECK(r1 == expected_1);
    CHECK(r2.empty());
    // A hand-made mask: query 1 may read nothing, queries 0 and 2 may read something.
    const wb::Mask hand{as_bool(Ints3{{{0, 1, 0}, {0, 0, 0}, {1, 0, 0}}})};
    const Rows expected_hand = {1};
    const Rows got = wb::fully_masked_rows(hand, 0);
    INFO("rows {0 1 0}, {0 0 0}, {1 0 0}: expected [1], got "
         << rows_str(got) << "; look along each query's ROW (all keys j), not down a column");
    CHECK(got == expected_hand);
}

TEST_CASE("a length-0 sequence gives no NaN, only zero weights and zero output in sdpa",
          "[fully-masked][c:fully_masked_rows.no-nan]"
          "[c:causal_padding_mask.padded-rows]") {
    const std::size_t T = 3;
    const wb::Mask mask = wb::causal_padding_mask({3, 0}, T);
    const Rows all_rows = {0, 1, 2};
    const Rows rows = wb::fully_masked_rows(mask, 1);
    INFO("sequence 1 has length 0: every row must be reported as fully masked, got "
         << rows_str(rows));
    CHECK(rows == all_rows);
    const auto q = wbtest::randn<wb::Tensor4>({2, 2, T, 4}, 78);
    const auto k = wbtest::randn<wb::Tensor4>({2, 2, T, 4}, 79);
    const auto v = wbtest::randn<wb::Tensor4>({2, 2, T, 3}, 80);
    const wb::Attention a = wb::sdpa(q, k, v, mask);
    INFO("a row of -inf scores gives exp(-inf) / sum = 0 / 0 = NaN without a guard (§18)");
    CHECK(wbtest::all_finite(a.weights));
    CHECK(wbtest::all_finite(a.output));
    WB_CHECK_CLOSE(wb::Tensor3(xt::view(a.weights, 1)), xt::zeros<float>({2u, 3u, 3u}), 0.0,
                   "a query that may read no key gets all-zero weights (chapter 4's guard)");
    WB_CHECK_CLOSE(wb::Tensor3(xt::view(a.output, 1)), xt::zeros<float>({2u, 3u, 3u}), 0.0,
                   "a query that may read no key gets a zero output");
    // The other sequence is untouched by the guard: a plain causal softmax.
    wb::Tensor2 ones = wb::Tensor2::from_shape({2, 3});
    ones.fill(1.0f);
    WB_CHECK_CLOSE(wb::Tensor2(xt::view(row_sums(a.weights), 0)), ones, 1e-5,
                   "sequence 0 (length 3 = T) is a plain causal batch: its rows sum to 1");
}

TEST_CASE(
    "left padding under a causal mask leaves the first queries nothing to read, "
    "without NaN",
    "[fully-masked][c:fully_masked_rows.no-nan]"
    "[c:fully_masked_rows.which-masks]"
    "[c:fully_masked_rows.ascending]") {
    // Two pad tokens at the FRONT (keys 0 and 1 hidden from everyone), then the causal mask:
    // queries 0 and 1 may read only keys <= themselves, all of which are padding.
    const wb::Mask left_padding{
        as_bool(Ints3{{{0, 0, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}}})};
    const wb::Mask mask = wb::combine_masks(wb::causal_mask(4), left_padding);
    const Rows expected = {0, 1};
    const Rows rows = wb::fully_masked_rows(mask, 0);
    INFO("causal AND left padding of 2: expected fully masked rows [0, 1], got " << rows_str(rows));
    CHECK(rows == expected);
    const auto q = wbtest::randn<wb::Tensor4>({1, 2, 4, 4}, 81);
    const auto k = wbtest::randn<wb::Tensor4>({1, 2, 4, 4}, 82);
    const auto v = wbtest::randn<wb::Tensor4>({1, 2, 4, 2}, 83);
    const wb::Attention a = wb::sdpa(q, k, v, mask);
    CHECK(wbtest::all_finite(a.weights));
    CHECK(wbtest::all_finite(a.output));
    // Row sums by hand: queries 0 and 1 read nothing (0), queries 2 and 3 read keys 2..i (1).
    const wb::Tensor3 expected_sums = {{{0.0f, 0.0f, 1.0f, 1.0f}, {0.0f, 0.0f, 1.0f, 1.0f}}};
    WB_CHECK_CLOSE(row_sums(a.weights), expected_sums, 1e-5,
                   "queries 0 and 1 must get all-zero weights, queries 2 and 3 weights summing "
                   "to 1 over keys 2..i: combine with AND, and keep the diagonal");
    // Query 2 may read only key 2 (itself): its output is v_2 exactly.
    WB_CHECK_CLOSE(wb::Tensor2(xt::view(a.output, 0, xt::all(), 2, xt::all())),
                   wb::Tensor2(xt::view(v, 0, xt::all(), 2, xt::all())), 1e-6,
                   "query 2 may read only key 2 (keys 0, 1 are padding, key 3 is the future)");
}

TEST_CASE("a fully masked row gives no NaN in multi-head attention either",
          "[fully-masked][mha][c:fully_masked_rows.no-nan]") {
    const std::size_t T = 3, D = 8;
    const wb::MhaParams p = wb::init_mha(D, 2, true, 84);
    const auto x = wbtest::randn<wb::Tensor3>({2, T, D}, 85);
    const wb::Mask mask = wb::causal_padding_mask({2, 0}, T);  // sequence 1: nothing to read
    const wb::MhaResult r = wb::self_attention(x, p, mask);
    INFO("sequence 1 has length 0; softmax over no key is 0/0 = NaN without the guard");
    CHECK(wbtest::all_finite(r.weights));
    CHECK(wbtest::all_finite(r.output));
    WB_CHECK_CLOSE(wb::Tensor3(xt::view(r.weights, 1)), xt::zeros<float>({2u, 3u, 3u}), 0.0,
                   "every head of a fully masked query gets all-zero weights");
    // Each head outputs 0, the merged heads are 0, and W_O maps 0 to its bias b_O.
    for (std::size_t t = 0; t < T; ++t) {
        INFO("sequence 1, position " << t);
        WB_CHECK_CLOSE(wb::Tensor1(xt::view(r.output, 1, t, xt::all())), p.w_o.bias, 1e-6,
                       "a fully masked query's heads are all 0, so its output is W_O·0 + b_O = "
                       "b_O: finite, and meaningless (the loss must skip it)");
    }
}

// ---- the two conventions (§18) -----------------------------------------------------------------

TEST_CASE("from_forbidden turns PyTorch's true = hidden into our true = may read",
          "[convention][c:from_forbidden.negation]"
          "[c:causal_mask.not-triu]") {
    const Bool3 forbidden = as_bool(Ints3{{{1, 0, 0}, {0, 1, 1}}, {{0, 0, 0}, {1, 1, 1}}});
    const wb::Mask m = wb::from_forbidden(forbidden);
    WB_CHECK_SHAPE(m.allowed, (wb::Shape{2, 2, 3}), "from_forbidden keeps the shape [B, N, M]");
    const Ints3 expected = {{{0, 1, 1}, {1, 0, 0}}, {{1, 1, 1}, {0, 0, 0}}};  // NOT, by hand
    WB_CHECK_CLOSE(as01(m.allowed), expected, 0.0,
                   "masked_fill's mask is true where the key is HIDDEN; wb::Mask is true where "
                   "it may be READ: allowed = NOT forbidden");
    // §21.5's causal mask, torch.triu(ones(4, 4), diagonal=1), printed by torch 1.13:
    const Bool3 triu = as_bool(Ints3{{{0, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 0, 1}, {0, 0, 0, 0}}});
    WB_CHECK_CLOSE(as01(wb::from_forbidden(triu).allowed), as01(wb::causal_mask(4).allowed), 0.0,
                   "from_forbidden(triu(ones, diagonal=1)) must equal causal_mask(4)");
}

TEST_CASE("a causal mask built the wrong way round is caught",
          "[convention][c:from_forbidden.negation]"
          "[c:fully_masked_rows.which-masks]") {
    // The mistake: torch.triu(ones, diagonal=1) (true = hidden) put straight into wb::Mask
    // (true = may read). Query 0 then reads the whole future and the last query reads nothing.
    const Bool3 triu = as_bool(Ints3{{{0, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 0, 1}, {0, 0, 0, 0}}});
    const wb::Mask wrong{triu};
    const Rows wrong_rows = wb::fully_masked_rows(wrong, 0);
    const Rows last = {3};
    INFO(
        "triu used as `allowed`: expected the last query [3] to be fully masked (the telltale "
        "of an inverted causal mask), got "
        << rows_str(wrong_rows));
    CHECK(wrong_rows == last);
    const wb::Mask right = wb::from_forbidden(triu);
    const Rows right_rows = wb::fully_masked_rows(right, 0);
    INFO("from_forbidden(triu): a causal mask has no fully masked row, got "
         << rows_str(right_rows));
    CHECK(right_rows.empty());
    // And the causality check of §21.8 catches it too: with the wrong mask, query 0's output
    // moves when the last token changes; with the right one it does not.
    const auto q = wbtest::randn<wb::Tensor4>({1, 1, 4, 4}, 86);
    const auto k = wbtest::randn<wb::Tensor4>({1, 1, 4, 4}, 87);
    const auto v = wbtest::randn<wb::Tensor4>({1, 1, 4, 3}, 88);
    wb::Tensor4 k2 = k, v2 = v;
    replace_token(k2, 3, 89);
    replace_token(v2, 3, 90);
    const double leak =
        max_diff(at(wb::sdpa(q, k2, v2, wrong).output, 0), at(wb::sdpa(q, k, v, wrong).output, 0));
    const double kept =
        max_diff(at(wb::sdpa(q, k2, v2, right).output, 0), at(wb::sdpa(q, k, v, right).output, 0));
    INFO("changing token 3 moved query 0's output by "
         << leak << " with the inverted mask and by " << kept
         << " with from_forbidden; expected a visible move and none");
    CHECK(leak > 1e-4);
    CHECK(kept <= 1e-6);
}

// ---- goldens (PyTorch, tools/goldens/chapter6.py) --------------------------------------------

TEST_CASE("masks equal the masks built in torch with triu and key padding",
          "[golden][c:causal_mask.not-triu]"
          "[c:causal_padding_mask.causal-and-padding]"
          "[c:padding_mask.keys-only]") {
    const wbtest::Golden g1("6-masks/causal_padding.txt");
    // torch: ~torch.triu(ones(5, 5), diagonal=1), stored as 0/1.
    const wb::Tensor2 causal = g1.tensor<2>("causal_allowed");
    WB_CHECK_CLOSE(wb::Tensor2(xt::view(as01(wb::causal_mask(5).allowed), 0)), causal, 0.0,
                   "causal_mask(5) must be NOT triu(ones, diagonal=1)");
    const auto lengths = lengths_of(g1.tensor<1>("lengths"));  // {5, 3, 1}
    WB_CHECK_CLOSE(as01(wb::causal_padding_mask(lengths, 5).allowed), g1.tensor<3>("allowed"), 0.0,
                   "causal_padding_mask must be NOT (triu(ones, diagonal=1) | (j >= length))");
    const wbtest::Golden g2("6-masks/padding_cross.txt");
    WB_CHECK_CLOSE(as01(wb::padding_mask(lengths_of(g2.tensor<1>("lengths")), 3, 5).allowed),
                   g2.tensor<3>("allowed"), 0.0,
                   "padding_mask({5, 2}, N = 3, M = 5) must be NOT (j >= length) for every query");
}

TEST_CASE("sdpa with the causal padding mask matches torch's masked_fill attention",
          "[golden][c:causal_padding_mask.causal-and-padding]") {
    const wbtest::Golden g("6-masks/causal_padding.txt");
    const wb::Mask mask = wb::causal_padding_mask(lengths_of(g.tensor<1>("lengths")), 5);
    const wb::Attention a = wb::sdpa(g.tensor<4>("q"), g.tensor<4>("k"), g.tensor<4>("v"), mask);
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "torch: softmax(scores.masked_fill(triu | padding, -inf)); a wrong weight "
                   "means the mask allows or hides the wrong keys");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "torch: weights @ v with the causal padding mask");
}

TEST_CASE("cross attention with padded keys matches torch (N = 3 queries, M = 5 keys)",
          "[golden][c:padding_mask.keys-only]") {
    const wbtest::Golden g("6-masks/padding_cross.txt");
    const wb::Mask mask = wb::padding_mask(lengths_of(g.tensor<1>("lengths")), 3, 5);
    const wb::Attention a = wb::sdpa(g.tensor<4>("q"), g.tensor<4>("k"), g.tensor<4>("v"), mask);
    WB_CHECK_CLOSE(a.weights, g.tensor<4>("weights"), wbtest::golden_tolerance,
                   "torch: the padded keys j >= length get weight 0 for every query");
    WB_CHECK_CLOSE(a.output, g.tensor<4>("output"), wbtest::golden_tolerance,
                   "torch: weights @ v with the key padding mask");
}

// ---- errors ------------------------------------------------------------------------------------

TEST_CASE("causal_mask rejects T = 0", "[errors][c:causal_mask.no-tokens]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_mask(0),
                    "a mask over no tokens is a ShapeError naming T", "wb::causal_mask", "T = 0");
}

TEST_CASE("padding_mask rejects empty lengths, empty axes and a length beyond M",
          "[errors][c:padding_mask.empty-axis]"
          "[c:padding_mask.length-beyond-m]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({}, 2, 3),
                    "no lengths means B = 0 sequences: a ShapeError", "wb::padding_mask", "lengths",
                    "B = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({1}, 0, 3),
                    "N = 0 queries is a ShapeError naming N", "wb::padding_mask", "N = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({1}, 2, 0),
                    "M = 0 keys is a ShapeError naming M", "wb::padding_mask", "M = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::padding_mask({3, 5, 2}, 4, 4),
                    "a sequence cannot have more real tokens than M key positions; name the "
                    "sequence b, its length and M",
                    "wb::padding_mask", "lengths[1] = 5", "M = 4");
}

TEST_CASE("padding_mask accepts a length equal to M (a sequence without padding)",
          "[errors][c:padding_mask.length-at-most-m]"
          "[c:padding_mask.length-beyond-m]") {
    // The boundary of the check: length == M is legal (see the {3, 1, 4} case), M + 1 is not.
    const wb::Mask m = wb::padding_mask({4}, 1, 4);
    WB_CHECK_CLOSE(as01(m.allowed), (Ints3{{{1, 1, 1, 1}}}), 0.0,
                   "length 4 with M = 4 is a full sequence: every key readable (reject only "
                   "length > M, not length >= M)");
    WB_CHECK_THROWS(wb::ValueError, wb::padding_mask({5}, 1, 4), "length M + 1 is too long",
                    "wb::padding_mask", "lengths[0] = 5", "M = 4");
}

TEST_CASE("padding_mask and causal_padding_mask name the first length beyond M",
          "[errors][c:padding_mask.length-beyond-m]"
          "[c:causal_padding_mask.length-beyond-t]") {
    // Two lengths are too long; the header asks for the first one, b = 0.
    WB_CHECK_THROWS(wb::ValueError, wb::padding_mask({5, 6}, 2, 4),
                    "lengths 5 and 6 both exceed M = 4: name the first, lengths[0] = 5 (look "
                    "at b = 0, 1, ... in order and stop at the first)",
                    "wb::padding_mask", "lengths[0] = 5", "M = 4");
    WB_CHECK_THROWS(wb::ValueError, wb::causal_padding_mask({4, 5}, 3),
                    "lengths 4 and 5 both exceed T = 3: name the first, lengths[0] = 4",
                    "wb::causal_padding_mask", "lengths[0] = 4", "T = 3");
}

TEST_CASE("combine_masks rejects masks that do not fit together",
          "[errors][c:combine_masks.mismatch]") {
    const wb::Mask b2{Bool3::from_shape({2, 3, 3})};
    const wb::Mask b3{Bool3::from_shape({3, 3, 3})};
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(b2, b3),
                    "batches 2 and 3 cannot broadcast (only equal batches or a batch of 1 can); "
                    "name both shapes",
                    "wb::combine_masks", "[2, 3, 3]", "[3, 3, 3]");
    const wb::Mask n4{Bool3::from_shape({1, 4, 3})};
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(b2, n4), "the query counts N differ (3 vs 4)",
                    "wb::combine_masks", "[2, 3, 3]", "[1, 4, 3]");
    const wb::Mask m5{Bool3::from_shape({1, 3, 5})};
    WB_CHECK_THROWS(wb::ShapeError, wb::combine_masks(m5, b3), "the key counts M differ (5 vs 3)",
                    "wb::combine_masks", "[1, 3, 5]", "[3, 3, 3]");
}

TEST_CASE("causal_padding_mask rejects T = 0, empty lengths and a length beyond T",
          "[errors][c:causal_padding_mask.empty-axis]"
          "[c:causal_padding_mask.length-beyond-t]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask({1}, 0),
                    "report the error under this function's own name", "wb::causal_padding_mask",
                    "T = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask({}, 3),
                    "no lengths means B = 0 sequences", "wb::causal_padding_mask", "B = 0");
    WB_CHECK_THROWS(wb::ValueError, wb::causal_padding_mask({2, 4}, 3),
                    "a length beyond T: name the sequence b, its length and T",
                    "wb::causal_padding_mask", "lengths[1] = 4", "T = 3");
}

TEST_CASE("fully_masked_rows rejects a sequence index beyond the mask's batch",
          "[errors][c:fully_masked_rows.b-out-of-range]") {
    WB_CHECK_THROWS(wb::ValueError, wb::fully_masked_rows(wb::causal_mask(3), 1),
                    "a causal mask has batch 1 (shared): only b = 0 exists; name b and the shape",
                    "wb::fully_masked_rows", "b = 1", "[1, 3, 3]");
    WB_CHECK_THROWS(wb::ValueError, wb::fully_masked_rows(wb::padding_mask({1, 2}, 2, 2), 2),
                    "b must be < B = 2", "wb::fully_masked_rows", "b = 2", "[2, 2, 2]");
}

TEST_CASE("padding_mask and causal_padding_mask report a shape error before a length beyond M",
          "[errors][c:padding_mask.shape-before-value]"
          "[c:causal_padding_mask.shape-before-value]") {
    // Each call breaks two rules: an empty axis (a ShapeError) and a length beyond M or T (a
    // ValueError). The header puts the ShapeError first.
    INFO(
        "lengths {5} with N = 0 and M = 4: the empty query axis must be reported, as a "
        "ShapeError, before the length 5 > M = 4");
    WB_CHECK_THROWS(wb::ShapeError, wb::padding_mask({5}, 0, 4),
                    "check the axes (a ShapeError) before the lengths (a ValueError)",
                    "wb::padding_mask", "N = 0");
    INFO(
        "lengths {4} with T = 0: T = 0 must be reported, as a ShapeError, before the length "
        "4 > T = 0");
    WB_CHECK_THROWS(wb::ShapeError, wb::causal_padding_mask({4}, 0),
                    "check T (a ShapeError) before the lengths (a ValueError)",
                    "wb::causal_padding_mask", "T = 0");
}
