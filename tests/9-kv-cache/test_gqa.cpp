#include "4-sdpa/sdpa.hpp"
#include "6-masks/masks.hpp"
#include "8-training/model.hpp"
#include "9-kv-cache/gqa.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

// Checks of the extra exercise, grouped-query attention. The expected values come from
// independent computations: chapter 4's sdpa with chapter 6's causal mask (ordinary multi-head
// attention) on K/V heads repeated here with plain loops, a masked attention written here in
// double, numbers printed by torch 1.13, and hand arithmetic for the cache sizes.
//
// Tolerance 1e-5: float32 attention of values of size ~1 summed in a different order.

namespace {

using Heads = wb::Heads<float>;

constexpr double kTol = 1e-5;

// torch.repeat_interleave(kv, H / H_kv, dim=1) with plain loops: [B, H_kv, M, d] -> [B, H, M, d],
// K/V head g copied to the query heads g·G .. g·G + G - 1.
Heads repeat_heads(const Heads& kv, std::size_t H) {
    const std::size_t B = kv.shape(0), H_kv = kv.shape(1), M = kv.shape(2), d = kv.shape(3);
    const std::size_t G = H / H_kv;
    Heads out = Heads::from_shape({B, H, M, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t j = 0; j < M; ++j)
                for (std::size_t e = 0; e < d; ++e) out(b, h, j, e) = kv(b, h / G, j, e);
    return out;
}

// Ordinary causal multi-head attention (T == M): chapter 4's sdpa, chapter 6's mask.
Heads mha_causal(const Heads& q, const Heads& k, const Heads& v) {
    return wb::sdpa(q, k, v, wb::causal_mask(q.shape(2))).output;
}

// Attention in double on already repeated K/V [B, H, M, d], with the mask written out as a
// table: visible[t][j] is true when query t (at position M - T + t) may read key j.
Heads masked_attention_double(const Heads& q, const Heads& k, const Heads& v,
                              const std::vector<std::vector<bool>>& visible) {
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), d = q.shape(3);
    const std::size_t M = k.shape(2);
    Heads out = Heads::from_shape({B, H, T, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                std::vector<double> w(M, 0.0);
                double m = -1e300, sum = 0.0;
                for (std::size_t j = 0; j < M; ++j) {
                    if (!visible[t][j]) continue;
                    double dot = 0.0;
                    for (std::size_t e = 0; e < d; ++e)
                        dot += double(q(b, h, t, e)) * k(b, h, j, e);
                    w[j] = dot / std::sqrt(double(d));
                    m = std::max(m, w[j]);
                }
                for (std::size_t j = 0; j < M; ++j) {
                    w[j] = visible[t][j] ? std::exp(w[j] - m) : 0.0;
                    sum += w[j];
                }
                for (std::size_t e = 0; e < d; ++e) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < M; ++j) acc += w[j] / sum * v(b, h, j, e);
                    out(b, h, t, e) = static_cast<float>(acc);
                }
            }
    return out;
}

Heads heads_of(const Heads::shape_type& shape, const std::vector<float>& values) {
    Heads c = Heads::from_shape(shape);
    std::size_t i = 0;
    for (auto& x : c) x = values[i++];
    return c;
}

// q [B, H, T, d] and k, v [B, H_kv, M, d], normal random from seeds seed, seed + 1, seed + 2.
struct Qkv {
    Heads q, k, v;
};
Qkv random_qkv(std::size_t B, std::size_t H, std::size_t H_kv, std::size_t T, std::size_t M,
               std::size_t d, unsigned seed) {
    return {wbtest::randn<Heads>({B, H, T, d}, seed),
            wbtest::randn<Heads>({B, H_kv, M, d}, seed + 1),
            wbtest::randn<Heads>({B, H_kv, M, d}, seed + 2)};
}

// The hand example of the torch checks: B = 1, H = 4, H_kv = 2, T = 2, M = 3, d = 2.
Heads example_q() {
    return heads_of({1, 4, 2, 2}, {1.0f, 0.0f, 0.5f, -1.0f,    // head 0
                                   0.0f, 1.0f, 2.0f, 0.5f,     // head 1
                                   -1.0f, 1.0f, 1.0f, 1.0f,    // head 2
                                   0.5f, 0.5f, -0.5f, 2.0f});  // head 3
}
Heads example_k() {
    return heads_of({1, 2, 3, 2}, {1.0f, 2.0f, 0.0f, -1.0f, 1.5f, 0.5f,    // K/V head 0
                                   -1.0f, 0.5f, 2.0f, 1.0f, 0.0f, 0.0f});  // K/V head 1
}
Heads example_v() {
    return heads_of({1, 2, 3, 2},
                    {1.0f, 0.0f, 0.0f, 1.0f, 2.0f, 3.0f, -1.0f, 2.0f, 0.5f, 0.5f, 4.0f, -2.0f});
}

}  // namespace

TEST_CASE("gqa_attention with as many K/V heads as query heads is ordinary multi-head attention",
          "[gqa_attention][c:gqa_attention.grouped-heads][c:gqa_attention.output-shape]") {
    const Heads q = wbtest::randn<Heads>({2, 3, 5, 4}, 901);  // [B, H, T, d]
    const Heads k = wbtest::randn<Heads>({2, 3, 5, 4}, 902);  // H_kv = H = 3, M = T
    const Heads v = wbtest::randn<Heads>({2, 3, 5, 4}, 903);
    const Heads out = wb::gqa_attention(q, k, v, true);
    WB_CHECK_SHAPE(out, (wb::Shape{2, 3, 5, 4}), "gqa_attention returns [B, H, T, d]");
    WB_CHECK_CLOSE(out, mha_causal(q, k, v), kTol,
                   "with H_kv == H every query head must read its own K/V head (G = 1), causal "
                   "as chapter 8: is the scale 1/sqrt(d), the mask j <= t?");
}

TEST_CASE(
    "gqa_attention with one K/V head (multi-query) equals attention on that head repeated H "
    "times",
    "[gqa_attention][c:gqa_attention.grouped-heads]") {
    const Heads q = wbtest::randn<Heads>({2, 4, 6, 3}, 911);  // [B, H = 4, T, d]
    const Heads k = wbtest::randn<Heads>({2, 1, 6, 3}, 912);  // [B, H_kv = 1, M = T, d]
    const Heads v = wbtest::randn<Heads>({2, 1, 6, 3}, 913);
    const Heads out = wb::gqa_attention(q, k, v, true);
    WB_CHECK_SHAPE(out, (wb::Shape{2, 4, 6, 3}), "the output has H query heads, not H_kv");
    WB_CHECK_CLOSE(out, mha_causal(q, repeat_heads(k, 4), repeat_heads(v, 4)), kTol,
                   "with H_kv = 1 every query head reads K/V head 0: the group size is "
                   "G = H / H_kv = H, and head h reads h / G");
}

TEST_CASE(
    "gqa_attention gives each K/V head a group of consecutive query heads (H = 6, H_kv = 2 and "
    "3)",
    "[gqa_attention][c:gqa_attention.grouped-heads]") {
    const Heads q = wbtest::randn<Heads>({1, 6, 4, 2}, 921);  // [B, H = 6, T, d]
    for (std::size_t H_kv : {2u, 3u}) {
        INFO("H = 6, H_kv = " << H_kv);
        const Heads k = wbtest::randn<Heads>({1, H_kv, 4, 2}, 922);
        const Heads v = wbtest::randn<Heads>({1, H_kv, 4, 2}, 923);
        const Heads out = wb::gqa_attention(q, k, v, true);
        WB_CHECK_CLOSE(out, mha_causal(q, repeat_heads(k, 6), repeat_heads(v, 6)), kTol,
                       "query head h reads K/V head h / G with G = H / H_kv (heads 0..G-1 share "
                       "K/V head 0). Did you use h % H_kv, or G = H_kv?");
    }
}

TEST_CASE("gqa_attention without a mask matches torch on a hand example",
          "[gqa_attention][c:gqa_attention.grouped-heads][c:gqa_attention.no-mask]") {
    const Heads out = wb::gqa_attention(example_q(), example_k(), example_v(), false);
    // torch 1.13: kr = torch.repeat_interleave(k, 2, dim=1), vr likewise;
    // (torch.softmax(q @ kr.transpose(-1, -2) / math.sqrt(2), -1) @ vr).flatten()
    const Heads expected = heads_of(
        {1, 4, 2, 2},
        {1.3191602230072021f, 1.633568286895752f, 0.7660260200500488f, 1.5719366073608398f,
         1.1543917655944824f, 0.7902287840843201f, 1.4870131015777588f, 1.6088719367980957f,
         0.3100091218948364f, 0.9182312488555908f, 0.7435917854309082f, 0.35596686601638794f,
         0.9745945334434509f, 0.23698994517326355f, 0.35930338501930237f, 0.8097184896469116f});
    WB_CHECK_SHAPE(out, (wb::Shape{1, 4, 2, 2}), "gqa_attention returns [B, H, T, d]");
    WB_CHECK_CLOSE(out, expected, kTol,
                   "without causal every query sees all M keys; heads 0, 1 read K/V head 0 and "
                   "heads 2, 3 read K/V head 1; scores are divided by sqrt(d)");
}

TEST_CASE("gqa_attention with a mask and M > T matches torch: the queries are the last T positions",
          "[gqa_attention][c:gqa_attention.causal-with-history]") {
    const Heads out = wb::gqa_attention(example_q(), example_k(), example_v(), true);
    // torch 1.13: the scores of the previous check, masked_fill(-inf) where key j > t + (M - T)
    // (query 0 sees keys 0, 1; query 1 sees keys 0, 1, 2), softmax, @ vr, flatten.
    const Heads expected = heads_of(
        {1, 4, 2, 2},
        {0.6697615385055542f, 0.3302384614944458f, 0.7660260200500488f, 1.5719366073608398f,
         0.8929581642150879f, 0.10704180598258972f, 1.4870131015777588f, 1.6088719367980957f,
         -0.7812696099281311f, 1.7812695503234863f, 0.7435917854309082f, 0.35596686601638794f,
         0.16267631947994232f, 0.8373236656188965f, 0.35930338501930237f, 0.8097184896469116f});
    WB_CHECK_CLOSE(out, expected, kTol,
                   "with M = 3 keys and T = 2 queries, query t sits at position t + (M - T): "
                   "query 0 sees keys 0 and 1, not only key 0");
}

TEST_CASE("gqa_attention causal with history (M > T) equals a mask built by hand, in double",
          "[gqa_attention][c:gqa_attention.causal-with-history]") {
    const std::size_t H = 4;
    const auto [q, k, v] = random_qkv(2, H, 2, 3, 7, 5, 931);  // T = 3 queries, M = 7 keys
    const Heads out = wb::gqa_attention(q, k, v, true);
    // The mask of decode with a cache: 4 positions of history, then the 3 new queries.
    //   query 0 (position 4): keys 0..4;  query 1: keys 0..5;  query 2: keys 0..6
    const std::vector<std::vector<bool>> visible = {{true, true, true, true, true, false, false},
                                                    {true, true, true, true, true, true, false},
                                                    {true, true, true, true, true, true, true}};
    WB_CHECK_CLOSE(out, masked_attention_double(q, repeat_heads(k, H), repeat_heads(v, H), visible),
                   kTol,
                   "query t may see keys j <= t + (M - T): the M - T history positions are all "
                   "visible. Did you mask with j <= t, as if there were no history?");
}

TEST_CASE("gqa_attention without a mask lets every query see every key, also when T > M",
          "[gqa_attention][c:gqa_attention.no-mask]") {
    const std::size_t H = 4, T = 5, M = 3;
    const auto [q, k, v] = random_qkv(1, H, 2, T, M, 2, 941);
    const Heads out = wb::gqa_attention(q, k, v, false);
    const std::vector<std::vector<bool>> all(T, std::vector<bool>(M, true));
    WB_CHECK_CLOSE(out, masked_attention_double(q, repeat_heads(k, H), repeat_heads(v, H), all),
                   kTol, "causal = false: no mask at all, T and M independent");
}

TEST_CASE("gqa_attention for one decode query equals the last row of the full causal attention",
          "[gqa_attention][c:gqa_attention.causal-with-history]") {
    // The decode step of a cache: the newest token (T = 1) against all M = 5 cached positions
    // must give what the full forward gives at its last position (notes §18).
    const Heads q_full = wbtest::randn<Heads>({1, 2, 5, 4}, 951);  // [B, H = 2, 5, d]
    const Heads k = wbtest::randn<Heads>({1, 2, 5, 4}, 952);       // H_kv = H
    const Heads v = wbtest::randn<Heads>({1, 2, 5, 4}, 953);
    Heads q_last = Heads::from_shape({1, 2, 1, 4});
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t e = 0; e < 4; ++e) q_last(0, h, 0, e) = q_full(0, h, 4, e);
    const Heads out = wb::gqa_attention(q_last, k, v, true);
    const Heads full = mha_causal(q_full, k, v);
    Heads expected = Heads::from_shape({1, 2, 1, 4});
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t e = 0; e < 4; ++e) expected(0, h, 0, e) = full(0, h, 4, e);
    WB_CHECK_CLOSE(out, expected, kTol,
                   "a single query over M cached keys sits at position M - 1 and sees all of "
                   "them; with the mask j <= t it would see only key 0");
}

TEST_CASE("gqa_attention stays finite for large scores (the softmax is shifted by its maximum)",
          "[gqa_attention][c:gqa_attention.grouped-heads]") {
    // One head, d = 2: the scores are 100·100/sqrt(2) ≈ 7071 for key 0 and 0 for key 1, so the
    // weights are (1, e^-7071) = (1, 0) and the output is value 0 exactly (by hand).
    const Heads q = heads_of({1, 1, 1, 2}, {100.0f, 0.0f});
    const Heads k = heads_of({1, 1, 2, 2}, {100.0f, 0.0f, 0.0f, 0.0f});
    const Heads v = heads_of({1, 1, 2, 2}, {0.25f, -3.0f, 7.0f, 7.0f});
    const Heads out = wb::gqa_attention(q, k, v, false);
    WB_CHECK_CLOSE(out, heads_of({1, 1, 1, 2}, {0.25f, -3.0f}), kTol,
                   "exp(7071) overflows to inf and inf / inf is NaN: subtract the row maximum "
                   "before exp");
}

TEST_CASE("gqa_cache_elements counts only the H_kv K/V heads (hand numbers)",
          "[gqa_cache_elements][c:gqa_cache_elements.formula]") {
    // L = 4, B = 2, T_max = 128, D = 128, H = 8 (d = 16), by hand:
    //   H_kv = 2: 2·4·2·128·2·16 = 65,536;  H_kv = 1: 32,768;  H_kv = 8: 262,144 (= MHA)
    const wb::GptConfig c{50, 128, 128, 8, 4};
    const std::size_t got2 = wb::gqa_cache_elements(c, 2, 2);
    INFO("H_kv = 2: expected 65536, got "
         << got2 << ". Hint: 2·L·B·T_max·H_kv·d with d = D / H, not H_kv·D or H·d.");
    CHECK(got2 == 65536u);
    const std::size_t got1 = wb::gqa_cache_elements(c, 1, 2);
    INFO("H_kv = 1 (multi-query): expected 32768, got " << got1);
    CHECK(got1 == 32768u);
    const std::size_t got8 = wb::gqa_cache_elements(c, 8, 2);
    INFO("H_kv = H = 8 (MHA): expected 262144, got " << got8);
    CHECK(got8 == 262144u);
    // A GPT-2-small-like model, L = 12, T_max = 1024, D = 768, H = 12 (d = 64), with 4 K/V
    // heads and one sequence: 2·12·1·1024·4·64 = 6,291,456 (Python: 2*12*1*1024*4*64).
    const wb::GptConfig g{50257, 1024, 768, 12, 12};
    const std::size_t gpt = wb::gqa_cache_elements(g, 4, 1);
    INFO("GPT-2-small-like, H_kv = 4: expected 6291456, got " << gpt);
    CHECK(gpt == 6291456u);
}

TEST_CASE("gqa_cache_elements is the MHA cache divided by H / H_kv",
          "[gqa_cache_elements][c:gqa_cache_elements.formula]") {
    const wb::GptConfig c{11, 16, 24, 6, 3};  // d = 4
    for (std::size_t H_kv : {1u, 2u, 3u, 6u}) {
        const std::size_t gqa = wb::gqa_cache_elements(c, H_kv, 5);
        const std::size_t mha = wb::kv_cache_elements(c, 5);  // 2·3·5·16·24 = 11,520 by hand
        INFO("H = 6, H_kv = " << H_kv << ": gqa_cache_elements = " << gqa
                              << ", kv_cache_elements = " << mha
                              << ", expected a saving of exactly 6 / H_kv = " << 6 / H_kv
                              << ". Hint: the GQA cache keeps H_kv of the H heads.");
        CHECK(mha == 11520u);
        CHECK(gqa * (6 / H_kv) == mha);
    }
}

TEST_CASE("gqa_attention rejects empty axes and mismatched shapes",
          "[gqa_attention][errors][c:gqa_attention.empty-axis]"
          "[c:gqa_attention.shape-mismatch]") {
    const Heads q = wbtest::randn<Heads>({2, 4, 3, 5}, 961);  // [B, H, T, d]
    const Heads k = wbtest::randn<Heads>({2, 2, 6, 5}, 962);  // [B, H_kv, M, d]
    const Heads v = wbtest::randn<Heads>({2, 2, 6, 5}, 963);
    const Heads empty_q = Heads::from_shape({2, 4, 0, 5});
    const Heads empty_k = Heads::from_shape({2, 2, 0, 5});
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(empty_q, k, v, false),
                    "T = 0 queries: reject it", "wb::gqa_attention", "[2, 4, 0, 5]");
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, empty_k, empty_k, false),
                    "M = 0 keys: a softmax over nothing is NaN", "wb::gqa_attention",
                    "[2, 2, 0, 5]");
    const Heads v_short = wbtest::randn<Heads>({2, 2, 5, 5}, 964);
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k, v_short, false),
                    "k and v must have the same shape [B, H_kv, M, d]", "wb::gqa_attention",
                    "[2, 2, 6, 5]", "[2, 2, 5, 5]");
    const Heads v_wide = wbtest::randn<Heads>({2, 2, 6, 7}, 967);
    INFO("hint: compare every axis of k and v, the head width d included, not only B, H_kv, M");
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k, v_wide, false),
                    "v's head width 7 differs from k's 5: k and v must have the same shape",
                    "wb::gqa_attention", "[2, 2, 6, 5]", "[2, 2, 6, 7]");
    const Heads k_b = wbtest::randn<Heads>({3, 2, 6, 5}, 965);
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k_b, k_b, false),
                    "q and k must have the same B", "wb::gqa_attention", "[2, 4, 3, 5]",
                    "[3, 2, 6, 5]");
    const Heads k_d = wbtest::randn<Heads>({2, 2, 6, 4}, 966);
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k_d, k_d, false),
                    "q and k must have the same head width d", "wb::gqa_attention", "[2, 4, 3, 5]",
                    "[2, 2, 6, 4]");
}

TEST_CASE(
    "gqa_attention rejects K/V heads that do not divide the query heads, and a mask with T > M",
    "[gqa_attention][errors][c:gqa_attention.heads-not-grouped]"
    "[c:gqa_attention.causal-too-few-keys]") {
    const Heads q = wbtest::randn<Heads>({1, 4, 3, 2}, 971);   // H = 4
    const Heads k3 = wbtest::randn<Heads>({1, 3, 3, 2}, 972);  // H_kv = 3 does not divide 4
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k3, k3, false),
                    "H_kv must divide H: each K/V head serves H / H_kv query heads",
                    "wb::gqa_attention", "[1, 4, 3, 2]", "[1, 3, 3, 2]");
    const Heads k8 = wbtest::randn<Heads>({1, 8, 3, 2}, 973);  // more K/V heads than query heads
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k8, k8, true),
                    "H_kv > H cannot be grouped", "wb::gqa_attention", "[1, 4, 3, 2]",
                    "[1, 8, 3, 2]");
    const Heads k_short = wbtest::randn<Heads>({1, 2, 2, 2}, 974);  // M = 2 < T = 3
    WB_CHECK_THROWS(wb::ShapeError, wb::gqa_attention(q, k_short, k_short, true),
                    "causal with T > M: the first query would see no key", "wb::gqa_attention",
                    "[1, 4, 3, 2]", "[1, 2, 2, 2]");
}

TEST_CASE("gqa_cache_elements rejects H_kv that does not divide H, and an invalid H",
          "[gqa_cache_elements][errors][c:gqa_cache_elements.bad-h]"
          "[c:gqa_cache_elements.bad-h-kv]") {
    const wb::GptConfig c{50, 128, 128, 8, 4};
    WB_CHECK_THROWS(wb::ValueError, wb::gqa_cache_elements(c, 3, 2), "H_kv must divide H",
                    "wb::gqa_cache_elements", "3", "8");
    WB_CHECK_THROWS(wb::ValueError, wb::gqa_cache_elements(c, 0, 2),
                    "H_kv = 0 K/V heads cannot serve any query head", "wb::gqa_cache_elements", "0",
                    "8");
    WB_CHECK_THROWS(wb::ValueError, wb::gqa_cache_elements(c, 16, 2),
                    "H_kv > H: more K/V heads than query heads", "wb::gqa_cache_elements", "16",
                    "8");
    const wb::GptConfig no_heads{50, 128, 128, 0, 4};
    WB_CHECK_THROWS(wb::ValueError, wb::gqa_cache_elements(no_heads, 1, 2),
                    "H = 0: no head width d = D / H", "wb::gqa_cache_elements", "0", "128");
    const wb::GptConfig odd{50, 128, 100, 8, 4};  // 8 does not divide 100
    WB_CHECK_THROWS(wb::ValueError, wb::gqa_cache_elements(odd, 2, 2), "H must divide D",
                    "wb::gqa_cache_elements", "8", "100");
}
