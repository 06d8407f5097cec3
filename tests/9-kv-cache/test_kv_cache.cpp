#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "9-kv-cache/kv_cache.hpp"
#include "check.hpp"
#include "forward_double.hpp"
#include "gpt2_golden.hpp"
#include "model_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

// Reference for the cache: chapter 8's gpt_logits, the full forward over the whole sequence
// (notes §18: "compare one full forward with the step-by-step KV cache"). By causality, row
// b·T + t of the full forward is the prediction after the prefix [0, t], which is exactly what
// prefill / decode_step must return at position t.
//
// Tolerance 1e-5 (absolute + relative): both sides are float32 with the same operations,
// summed in a different order (a BLAS dot against a loop), a few ulps apart for logits of size ~1.

namespace {

using wbtest::rope_config;
using wbtest::row_of;
using wbtest::small_config;
using wbtest::small_model;

constexpr double kTol = 1e-5;

// Two sequences of 8 tokens (= T_max) over V = 11 (arbitrary ids, every one used once at least).
wb::TokenIds two_sequences() {
    return wb::TokenIds{{3, 1, 4, 1, 5, 9, 2, 6}, {10, 0, 7, 7, 3, 8, 2, 5}};
}

wb::TokenIds prefix(const wb::TokenIds& ids, std::size_t T) {
    wb::TokenIds out = wb::TokenIds::from_shape({ids.shape(0), T});
    for (std::size_t b = 0; b < ids.shape(0); ++b)
        for (std::size_t t = 0; t < T; ++t) out(b, t) = ids(b, t);
    return out;
}

// Rows b·T + t of the full-forward logits for every b: the [B, V] a step at position t returns.
wb::Mat<float> full_rows_at(const wb::Mat<float>& full, std::size_t B, std::size_t T,
                            std::size_t t) {
    wb::Mat<float> out = wb::Mat<float>::from_shape({B, full.shape(1)});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < full.shape(1); ++j) out(b, j) = full(b * T + t, j);
    return out;
}

// Position t of a [B, H, T_max, d] cache, as [B, H, d].
xt::xtensor<float, 3> slot(const wb::Heads<float>& c, std::size_t t) {
    xt::xtensor<float, 3> out =
        xt::xtensor<float, 3>::from_shape({c.shape(0), c.shape(1), c.shape(3)});
    for (std::size_t b = 0; b < c.shape(0); ++b)
        for (std::size_t h = 0; h < c.shape(1); ++h)
            for (std::size_t e = 0; e < c.shape(3); ++e) out(b, h, e) = c(b, h, t, e);
    return out;
}

template <class E>
double max_abs(const E& c) {
    double m = 0.0;
    for (float x : c) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}

// ---- layer 0 by hand: the plain loops of tests/support/forward_double.hpp (test code,
// independent of every chapter's), in float ----

// x = wte[id] + wpe[t] (learned positions) or wte[id] alone (RoPE): rows b·T + t, [B·T, D].
wb::Mat<float> embedded(const wb::GptParams<float>& p, const wb::TokenIds& ids) {
    const std::size_t B = ids.shape(0), T = ids.shape(1), D = p.wte.shape(1);
    const bool learned = p.wpe.shape(0) > 0;
    wb::Mat<float> x = wb::Mat<float>::from_shape({B * T, D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < D; ++j)
                x(b * T + t, j) =
                    p.wte(static_cast<std::size_t>(ids(b, t)), j) + (learned ? p.wpe(t, j) : 0.0f);
    return x;
}

// Layer 0's LN1 of the rows, then the projection (w, b): [B·T, D].
wb::Mat<float> layer0_projection(const wb::GptParams<float>& p, const wb::Mat<float>& x,
                                 const wb::Mat<float>& w, const wb::Vec<float>& b) {
    const wb::Mat<float> ln1 = wbtest::layer_norm_forward<float>(
        x, p.blocks[0].ln1_g, p.blocks[0].ln1_b, static_cast<float>(wb::kGptLayerNormEps));
    return wbtest::linear_forward<float>(ln1, w, b);
}

// Rows [B·T, D] as heads [B, H, T, d]: column h·d + e of row b·T + t is (b, h, t, e).
wb::Heads<float> heads_of(const wb::Mat<float>& m, std::size_t B, std::size_t T,
                          const wb::GptConfig& c) {
    const std::size_t d = c.D / c.H;
    wb::Heads<float> out = wb::Heads<float>::from_shape({B, c.H, T, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < c.H; ++h)
                for (std::size_t e = 0; e < d; ++e) out(b, h, t, e) = m(b * T + t, h * d + e);
    return out;
}

// Heads [B, H, T, d] in a cache's layout [B, H, T_max, d]: positions [T, T_max) stay zero.
wb::Heads<float> in_cache(const wb::Heads<float>& heads, const wb::GptConfig& c) {
    wb::Heads<float> out = xt::zeros<float>({heads.shape(0), c.H, c.T_max, heads.shape(3)});
    xt::view(out, xt::all(), xt::all(), xt::range(0, heads.shape(2)), xt::all()) = heads;
    return out;
}

// Three sequences of 8 tokens (= T_max) over V = 11, for the checks with B = 3.
wb::TokenIds three_sequences() {
    return wb::TokenIds{
        {3, 1, 4, 1, 5, 9, 2, 6}, {10, 0, 7, 7, 3, 8, 2, 5}, {2, 7, 1, 8, 2, 8, 1, 8}};
}

// Prefill of the first T0 tokens, then decode steps up to T_max: every [B, V] they return must
// equal the rows of the full forward (chapter 8's gpt_logits) at the same position.
void check_decode_equals_full_forward(const wb::GptParams<float>& p, const wb::GptConfig& c,
                                      const wb::TokenIds& ids, std::size_t T0, const char* hint) {
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    const wb::Mat<float> full = wb::gpt_logits(p, c, ids);  // [B·T, V], chapter 8
    wb::KvCache cache = wb::make_kv_cache(c, B);
    wb::Mat<float> logits = wb::prefill(p, c, prefix(ids, T0), cache);
    INFO("prefill of T0 = " << T0 << " tokens: its logits are position " << T0 - 1 << "'s");
    WB_CHECK_CLOSE(logits, full_rows_at(full, B, T, T0 - 1), kTol, hint);
    for (std::size_t t = T0; t < T; ++t) {
        std::vector<std::int64_t> tokens(B);
        for (std::size_t b = 0; b < B; ++b) tokens[b] = ids(b, t);
        logits = wb::decode_step(p, c, tokens, cache);
        INFO("after a prefill of T0 = " << T0 << " tokens, decode_step at position t = " << t
                                        << " (cache.length was " << t << ")");
        WB_CHECK_CLOSE(logits, full_rows_at(full, B, T, t), kTol, hint);
    }
}

// The model of `seed` decodes three sequences after prompts of 1, 3 and T_max - 1 tokens, each
// compared with the full forward (check_decode_equals_full_forward).
void check_prompts_of_1_3_and_T_max_minus_1(const wb::GptConfig& c, unsigned seed,
                                            const char* hint) {
    const wb::GptParams<float> p = small_model(c, seed);
    for (std::size_t T0 : {std::size_t{1}, std::size_t{3}, c.T_max - 1})
        check_decode_equals_full_forward(p, c, three_sequences(), T0, hint);
}

}  // namespace

TEST_CASE("make_kv_cache allocates zeroed K and V of shape B, H, T_max, d for every layer",
          "[make_kv_cache][c:make_kv_cache.layout][c:make_kv_cache.zeroed]") {
    const wb::GptConfig c{11, 8, 8, 2, 3};  // L = 3 layers
    const wb::KvCache cache = wb::make_kv_cache(c, 2);
    INFO("expected " << c.L << " K and " << c.L << " V tensors (one per layer), got "
                     << cache.k.size() << " and " << cache.v.size()
                     << ". Hint: every layer needs its own K and V.");
    REQUIRE(cache.k.size() == 3);
    REQUIRE(cache.v.size() == 3);
    for (std::size_t l = 0; l < 3; ++l) {
        WB_CHECK_SHAPE(cache.k[l], (wb::Shape{2, 2, 8, 4}),
                       "K cache must be [B, H, T_max, d], d = D / H");
        WB_CHECK_SHAPE(cache.v[l], (wb::Shape{2, 2, 8, 4}),
                       "V cache must be [B, H, T_max, d], d = D / H");
        WB_CHECK_CLOSE(cache.k[l], xt::zeros<float>({2, 2, 8, 4}), 0.0, "a new cache holds zeros");
        WB_CHECK_CLOSE(cache.v[l], xt::zeros<float>({2, 2, 8, 4}), 0.0, "a new cache holds zeros");
    }
    INFO("a new cache has length " << cache.length << ", expected 0");
    CHECK(cache.length == 0);
}

TEST_CASE("kv_cache_elements and kv_cache_bytes follow 2 L B T_max D",
          "[kv_cache_elements][c:kv_cache_elements.formula][c:kv_cache_bytes.formula]"
          "[c:make_kv_cache.layout]") {
    // By hand: L = 4, B = 16, T_max = 128, D = 128 (H = 4):
    //   2·4·16·128·128 = 2,097,152 floats = 8,388,608 bytes = 8 MiB (python: 2*4*16*128*128*4 / 2**20).
    const wb::GptConfig c{1000, 128, 128, 4, 4};
    const std::size_t elements = wb::kv_cache_elements(c, 16);
    const std::size_t bytes = wb::kv_cache_bytes(c, 16);
    INFO("kv_cache_elements = "
         << elements
         << ", expected 2097152 (= 2·L·B·T_max·D). Hint: K and V "
            "(the 2), every layer (L); D = H·d, so do not multiply by H again.");
    CHECK(elements == 2097152u);
    INFO("kv_cache_bytes = " << bytes
                             << ", expected 8388608 = 8 MiB (elements · sizeof(float) = 4)");
    CHECK(bytes == 8388608u);

    // GPT-2 small by hand: L = 12, D = 768, T_max = 1024, B = 1:
    //   2·12·1·1024·768 = 18,874,368 floats = 75,497,472 bytes = 72 MiB.
    const wb::GptConfig gpt2{50257, 1024, 768, 12, 12};
    INFO("GPT-2 small: kv_cache_elements = " << wb::kv_cache_elements(gpt2, 1)
                                             << ", expected 18874368");
    CHECK(wb::kv_cache_elements(gpt2, 1) == 18874368u);
    CHECK(wb::kv_cache_bytes(gpt2, 1) == 75497472u);

    // The formula counts what make_kv_cache allocates (L = 2, B = 3, T_max = 8, D = 8: 768).
    const wb::GptConfig small = small_config();
    const wb::KvCache cache = wb::make_kv_cache(small, 3);
    std::size_t allocated = 0;
    for (std::size_t l = 0; l < cache.k.size(); ++l)
        allocated += cache.k[l].size() + cache.v[l].size();
    INFO("make_kv_cache allocated " << allocated << " floats, expected 2·2·3·8·8 = 768");
    CHECK(allocated == 768u);
    CHECK(wb::kv_cache_elements(small, 3) == 768u);
}

TEST_CASE("prefill returns the last position's logits of the full forward",
          "[prefill][c:prefill.matches-full-forward][c:prefill.sets-length]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 1);
    const wb::TokenIds prompt = prefix(two_sequences(), 5);    // [2, 5]
    const wb::Mat<float> full = wb::gpt_logits(p, c, prompt);  // [10, V], chapter 8

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    const wb::Mat<float> logits = wb::prefill(p, c, prompt, cache);
    WB_CHECK_SHAPE(logits, (wb::Shape{2, 11}),
                   "prefill returns [B, V]: only the last position predicts");
    WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 5, 4), kTol,
                   "prefill must equal rows b·T + T-1 of gpt_logits: the LAST position of each "
                   "sequence (not the first), through the final LayerNorm and lm_head");
    INFO("after a prefill of T = 5 tokens, cache.length = " << cache.length << ", expected 5");
    CHECK(cache.length == 5);
}

TEST_CASE("prefill then decode_step matches the full forward at every position",
          "[decode_step][c:decode_step.matches-full-forward][c:decode_step.advances-length]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 2);
    const wb::TokenIds ids = two_sequences();               // [2, 8]
    const wb::Mat<float> full = wb::gpt_logits(p, c, ids);  // [16, V], chapter 8

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::Mat<float> logits = wb::prefill(p, c, prefix(ids, 3), cache);
    WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 8, 2), kTol, "prefill of 3 tokens: position 2");
    for (std::size_t t = 3; t < 8; ++t) {
        logits = wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache);
        INFO("decode_step at position t = " << t);
        WB_CHECK_SHAPE(logits, (wb::Shape{2, 11}), "decode_step returns [B, V]");
        WB_CHECK_CLOSE(
            logits, full_rows_at(full, 2, 8, t), kTol,
            "decode_step must equal the full forward: the new token gets wpe[cache.length] "
            "(not wpe[0]), its query reads every cached position [0, t] including itself, "
            "and layer l reads only cache.k[l], cache.v[l]");
        INFO("cache.length after the step = " << cache.length << ", expected " << t + 1
                                              << ". Hint: did you forget length += 1?");
        CHECK(cache.length == t + 1);
    }
}

TEST_CASE("GPT-2's own weights: prefill and decode_step give GPT-2's logits (tanh GELU)",
          "[prefill][decode_step][gpt2][golden][c:prefill.gelu-kind][c:decode_step.gelu-kind]") {
    // A tiny GPT-2 whose logits come from GPT-2's own forward in PyTorch
    // (tools/goldens/gpt2_model.py), not from chapter 8.
    const wbtest::Golden g("8-training/gpt2_tiny.txt");
    const wb::GptConfig c = wbtest::gpt2_golden_config(g);  // gelu = Gelu::tanh
    const wb::GptParams<float> p = wbtest::gpt2_golden_params(g, c);
    const wb::TokenIds ids = wbtest::golden_ids(g, "inputs");  // [2, 6]
    const wb::Mat<float> full = g.tensor<2>("logits");         // [12, V]
    const char* hint =
        "GPT-2's FFN is GELU's tanh form: with config.gelu == Gelu::tanh each layer runs "
        "chapter 7's gelu_tanh, as chapter 8's forward does (the exact gelu misses by 7e-4)";

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    WB_CHECK_CLOSE(wb::prefill(p, c, prefix(ids, 3), cache), full_rows_at(full, 2, 6, 2), kTol,
                   std::string("prefill: ") + hint);
    for (std::size_t t = 3; t < 6; ++t) {
        INFO("decode_step at position t = " << t);
        WB_CHECK_CLOSE(wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache),
                       full_rows_at(full, 2, 6, t), kTol, std::string("decode_step: ") + hint);
    }
}

TEST_CASE("with three layers, prefill masks every layer: decode then equals the full forward",
          "[prefill][decode_step][c:prefill.fills-cache][c:decode_step.matches-full-forward]") {
    // With L = 2 the last layer's mask changes only the positions before the last, which feed
    // no cache and no logits. With L = 3 layer 1's outputs are layer 2's keys and values: a
    // prefill that leaves a middle layer unmasked caches, in layer 2, keys that saw the future.
    wb::GptConfig c = small_config();
    c.L = 3;
    INFO(
        "hint: hand causal_mask(T) to sdpa in every layer of prefill (a std::optional<Mask> "
        "moved into the first layer's call is empty in the next ones)");
    check_prompts_of_1_3_and_T_max_minus_1(
        c, 31,
        "L = 3, learned positions: prefill then decode_step must equal the full forward, every "
        "layer of prefill under the causal mask");
}

TEST_CASE("decoding from a one-token prompt matches the full forward",
          "[decode_step][c:decode_step.matches-full-forward][c:prefill.prompt-length]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 3);
    const wb::TokenIds ids = two_sequences();
    const wb::Mat<float> full = wb::gpt_logits(p, c, ids);  // [16, V]

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::Mat<float> logits = wb::prefill(p, c, prefix(ids, 1), cache);
    WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 8, 0), kTol,
                   "a 1-token prompt: its query reads only itself (position 0)");
    for (std::size_t t = 1; t < 8; ++t) {
        logits = wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache);
        INFO("decode_step at position t = " << t);
        WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 8, t), kTol,
                       "step-by-step decode must equal the full forward (notes §18): check the "
                       "position row, the history read from the cache and the cache advance");
    }
}

TEST_CASE("decode_step on an empty cache equals prefill of one token",
          "[decode_step][c:decode_step.empty-cache]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 4);
    const wb::TokenIds ids = two_sequences();
    const wb::Mat<float> full = wb::gpt_logits(p, c, prefix(ids, 2));  // [4, V]

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::decode_step(p, c, {ids(0, 0), ids(1, 0)}, cache);
    const wb::Mat<float> logits = wb::decode_step(p, c, {ids(0, 1), ids(1, 1)}, cache);
    WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 2, 1), kTol,
                   "two decode steps from an empty cache are the first two positions");
}

TEST_CASE(
    "with learned positions, prefill then decode equals the full forward, for prompts of 1, 3 and "
    "T_max - 1 tokens (B = 3)",
    "[decode_step][c:decode_step.matches-full-forward]"
    "[c:prefill.matches-full-forward]") {
    check_prompts_of_1_3_and_T_max_minus_1(
        small_config(), 21,
        "with learned positions the new token at t = cache.length adds wpe[t] "
        "(add_positions with offset t, not 0), its query reads cache slots [0, t] including "
        "its own, and everything after the attention is chapter 8's block");
}

TEST_CASE(
    "with RoPE, prefill then decode equals the full forward, for prompts of 1, 3 and T_max - 1 "
    "tokens (B = 3)",
    "[decode_step][c:decode_step.matches-full-forward]"
    "[c:prefill.matches-full-forward]") {
    check_prompts_of_1_3_and_T_max_minus_1(  // wpe [0, D]: no position table
        rope_config(), 22,
        "with RoPE nothing is added to the embeddings; in every layer the new q and k are "
        "rotated by apply_rope(·, offset = cache.length, kRopeBase) (offset 0 rotates them "
        "as if the token were the first), the cache keeps the ROTATED keys, and the cached "
        "keys are never rotated again when read");
}

TEST_CASE("with RoPE, the position of a decoded token changes its logits: the offset matters",
          "[decode_step][c:decode_step.matches-full-forward]") {
    // The same token after the same prompt, decoded at position 3 and at position 5 (two more
    // tokens in between), must give the full forward's rows at those positions, and those
    // differ: a decode that rotates with offset 0 (or not at all) cannot match both.
    const wb::GptConfig c = rope_config();
    const wb::GptParams<float> p = small_model(c, 23);
    const wb::TokenIds ids{{4, 9, 2, 7, 7, 7}, {1, 6, 3, 7, 7, 7}};  // token 7 at positions 3, 4, 5
    const wb::Mat<float> full = wb::gpt_logits(p, c, ids);           // [12, V]
    const double spread =
        max_abs(wb::Mat<float>(full_rows_at(full, 2, 6, 3) - full_rows_at(full, 2, 6, 5)));
    INFO("the full forward's logits after token 7 at positions 3 and 5 differ by "
         << spread << " at most (the fixture must make positions visible)");
    REQUIRE(spread > 1e-2);

    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prefix(ids, 3), cache);
    for (std::size_t t = 3; t < 6; ++t) {
        const wb::Mat<float> logits = wb::decode_step(p, c, {7, 7}, cache);
        INFO("token 7 decoded at position t = " << t);
        WB_CHECK_CLOSE(logits, full_rows_at(full, 2, 6, t), kTol,
                       "the new token sits at position t = cache.length: rotate its q and k with "
                       "apply_rope(·, offset = cache.length), the position of its row in the "
                       "full forward, not offset 0");
    }
}

TEST_CASE("with RoPE, layer 0's cache holds the keys after the rotation, each at its own position",
          "[decode_step][c:prefill.fills-cache][c:decode_step.writes-slot-t]") {
    const wb::GptConfig c = rope_config();
    const wb::GptParams<float> p = small_model(c, 24);
    const wb::TokenIds ids = two_sequences();
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prefix(ids, 3), cache);
    for (std::size_t t = 3; t < 6; ++t) wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache);

    // Layer 0's keys of positions 0..5 by hand: k = LN1(wte[id]) w_kᵀ + b_k, then each token
    // turned by its position t; the values are not rotated.
    const std::size_t B = 2, T = 6;
    const wb::Mat<float> x = embedded(p, prefix(ids, T));  // [B·T, D], no position table
    const wb::Heads<float> k =
        heads_of(layer0_projection(p, x, p.blocks[0].w_k, p.blocks[0].b_k), B, T, c);
    const wb::Heads<float> v =
        heads_of(layer0_projection(p, x, p.blocks[0].w_v, p.blocks[0].b_v), B, T, c);
    const wb::Heads<float> k_rotated = wbtest::rope_forward<float>(k, 0, wb::kRopeBase);
    WB_CHECK_CLOSE(cache.k[0], in_cache(k_rotated, c), kTol,
                   "cache.k[0] at [b, h, t, :] must be layer 0's key of token t AFTER RoPE at "
                   "position t (written rotated once, by the step that computed it): not the key "
                   "before the rotation, not rotated with offset 0");
    WB_CHECK_CLOSE(cache.v[0], in_cache(v, c), kTol,
                   "cache.v[0] holds layer 0's values, never rotated (RoPE turns q and k only)");
}

TEST_CASE("with RoPE, prefill and decode_step refuse a model with a position table",
          "[prefill][errors][c:prefill.param-shapes][c:decode_step.param-shapes]"
          "[c:make_kv_cache.rope-odd-width]") {
    const wb::GptConfig c = rope_config();
    wb::GptParams<float> p = small_model(c, 25);
    p.wpe = xt::zeros<float>({c.T_max, c.D});  // a learned table in a RoPE model
    wb::KvCache cache = wb::make_kv_cache(c, 1);
    const wb::TokenIds prompt{{1, 2, 3}};
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, c, prompt, cache),
                    "a RoPE model has wpe [0, D]: check the shapes with the config's positions",
                    "wb::prefill", "[8, 8]", "[0, 8]");
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(p, c, {1}, cache),
                    "a RoPE model has wpe [0, D]", "wb::decode_step", "[8, 8]", "[0, 8]");
    INFO("a rejected call leaves the cache empty: length = " << cache.length);
    CHECK(cache.length == 0);
    const wb::GptConfig odd{11, 8, 6, 2, 1, wb::Positions::rope};  // d = 3 cannot be paired
    WB_CHECK_THROWS(wb::ShapeError, wb::make_kv_cache(odd, 1),
                    "RoPE turns pairs of features: the head width must be even",
                    "wb::make_kv_cache", "even");
}

TEST_CASE("each layer keeps its own cache, and layer 0 holds that layer's K and V",
          "[prefill][c:prefill.fills-cache]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 5);
    const wb::TokenIds prompt = prefix(two_sequences(), 4);  // [2, 4]
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prompt, cache);

    // Layer 0's keys and values, computed here from the weights with plain loops:
    // x = wte[id] + wpe[t];  k = LN1(x) w_kᵀ + b_k;  head h is columns [h·d, (h+1)·d).
    const std::size_t B = 2, T = 4;
    const wb::Mat<float> x = embedded(p, prompt);  // [B·T, D]
    const wb::Heads<float> k_expected =
        in_cache(heads_of(layer0_projection(p, x, p.blocks[0].w_k, p.blocks[0].b_k), B, T, c), c);
    const wb::Heads<float> v_expected =
        in_cache(heads_of(layer0_projection(p, x, p.blocks[0].w_v, p.blocks[0].b_v), B, T, c), c);
    WB_CHECK_CLOSE(cache.k[0], k_expected, kTol,
                   "cache.k[0] must hold layer 0's keys at [b, h, t, :]: did layer 1 overwrite "
                   "layer 0's cache (one cache shared by all layers), or are the heads laid out "
                   "wrongly (head h is columns h·d .. h·d + d - 1)?");
    WB_CHECK_CLOSE(cache.v[0], v_expected, kTol, "cache.v[0] must hold layer 0's values");

    const double k_diff = max_abs(cache.k[0] - cache.k[1]);
    const double v_diff = max_abs(cache.v[0] - cache.v[1]);
    INFO("max |cache.k[0] - cache.k[1]| = "
         << k_diff << ", max |cache.v[0] - cache.v[1]| = " << v_diff
         << ". Hint: layer 1 computes its keys from ITS input (the output of block 0) with ITS "
            "weights; one cache for all layers is the mistake of notes §16.");
    CHECK(k_diff > 1e-2);
    CHECK(v_diff > 1e-2);
    INFO("max |cache.k[1]| = " << max_abs(cache.k[1]) << ": layer 1's cache must be filled too");
    CHECK(max_abs(cache.k[1]) > 1e-2);
}

TEST_CASE("prefill fills exactly the first T positions and leaves the rest zero",
          "[prefill][c:prefill.fills-cache][c:prefill.rest-untouched]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 6);
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prefix(two_sequences(), 3), cache);
    for (std::size_t l = 0; l < c.L; ++l) {
        for (std::size_t t = 0; t < c.T_max; ++t) {
            const double k_mag = max_abs(wb::Heads<float>(
                xt::view(cache.k[l], xt::all(), xt::all(), xt::range(t, t + 1), xt::all())));
            const double v_mag = max_abs(wb::Heads<float>(
                xt::view(cache.v[l], xt::all(), xt::all(), xt::range(t, t + 1), xt::all())));
            INFO("layer " << l << ", position " << t << ": max |k| = " << k_mag << ", max |v| = "
                          << v_mag << " after a prefill of T = 3 (positions 0, 1, 2 filled)");
            if (t < 3) {
                CHECK(k_mag > 1e-3);
                CHECK(v_mag > 1e-3);
            } else {
                CHECK(k_mag == 0.0);
                CHECK(v_mag == 0.0);
            }
        }
    }
}

TEST_CASE("the cache is allocated once: its buffers never move across decode steps",
          "[decode_step][c:decode_step.no-reallocation]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 7);
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    std::vector<const float*> k_ptr, v_ptr;
    for (std::size_t l = 0; l < c.L; ++l) {
        k_ptr.push_back(cache.k[l].data());
        v_ptr.push_back(cache.v[l].data());
    }
    const wb::TokenIds ids = two_sequences();
    wb::prefill(p, c, prefix(ids, 2), cache);
    for (std::size_t t = 2; t < 8; ++t) {
        wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache);
        for (std::size_t l = 0; l < c.L; ++l) {
            INFO("after decode at position "
                 << t << ", layer " << l
                 << ": the K or V buffer moved or changed shape. Hint: write into the [B, H, "
                    "T_max, d] "
                    "buffers of make_kv_cache; never concatenate a new tensor each step.");
            CHECK(cache.k[l].data() == k_ptr[l]);
            CHECK(cache.v[l].data() == v_ptr[l]);
            CHECK(cache.k[l].shape(2) == 8);
        }
    }
}

TEST_CASE(
    "decoding more tokens never changes earlier cache entries, with learned positions and with "
    "RoPE",
    "[decode_step][c:decode_step.writes-slot-t]") {
    for (const wb::GptConfig& c : {small_config(), rope_config()}) {
        const wb::GptParams<float> p = small_model(c, 8);
        const wb::TokenIds ids = two_sequences();
        wb::KvCache cache = wb::make_kv_cache(c, 2);
        wb::prefill(p, c, prefix(ids, 3), cache);
        for (std::size_t t = 3; t < 8; ++t) {
            const wb::KvCache before = cache;  // copy of every layer
            wb::decode_step(p, c, {ids(0, t), ids(1, t)}, cache);
            for (std::size_t l = 0; l < c.L; ++l) {
                for (std::size_t s = 0; s < t; ++s) {
                    INFO(wb::positions_name(c.positions)
                         << " positions: decode at position " << t << " changed layer " << l
                         << "'s history at position " << s);
                    WB_CHECK_CLOSE(slot(cache.k[l], s), slot(before.k[l], s), 0.0,
                                   "history positions never change (notes §16): write only at "
                                   "position cache.length; with RoPE the cached keys were "
                                   "rotated once, when written, and are never rotated again");
                    WB_CHECK_CLOSE(slot(cache.v[l], s), slot(before.v[l], s), 0.0,
                                   "history positions never change (notes §16)");
                }
                INFO("layer " << l << ": position " << t << " must be written by this step");
                CHECK(max_abs(wb::Heads<float>(xt::view(cache.k[l], xt::all(), xt::all(),
                                                        xt::range(t, t + 1), xt::all()))) > 1e-3);
            }
        }
    }
}

TEST_CASE("make_kv_cache rejects B = 0 and an invalid config",
          "[make_kv_cache][errors][c:make_kv_cache.zero-batch]"
          "[c:make_kv_cache.invalid-config]") {
    WB_CHECK_THROWS(wb::ShapeError, wb::make_kv_cache(small_config(), 0),
                    "a cache needs at least one sequence", "wb::make_kv_cache", "0");
    WB_CHECK_THROWS(wb::ShapeError, wb::make_kv_cache(wb::GptConfig{11, 8, 8, 3, 2}, 1),
                    "H must divide D", "wb::make_kv_cache", "3", "8");
    WB_CHECK_THROWS(wb::ShapeError, wb::make_kv_cache(wb::GptConfig{11, 8, 8, 2, 0}, 1),
                    "L = 0 layers is not a model", "wb::make_kv_cache", "0");
}

TEST_CASE("prefill rejects bad prompts, a used cache and a cache of the wrong shape",
          "[prefill][errors][c:prefill.empty-prompt][c:prefill.too-long][c:prefill.bad-id]"
          "[c:prefill.cache-shape][c:prefill.used-cache][c:prefill.param-shapes]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 9);
    wb::KvCache cache = wb::make_kv_cache(c, 2);

    const wb::TokenIds empty = wb::TokenIds::from_shape({2, 0});
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, c, empty, cache),
                    "an empty prompt has no last position", "wb::prefill", "[2, 0]");
    wb::TokenIds too_long = xt::zeros<std::int64_t>({2, 9});
    WB_CHECK_THROWS(wb::ValueError, wb::prefill(p, c, too_long, cache),
                    "T > T_max: wpe and the cache have T_max rows", "wb::prefill", "9", "8");
    wb::TokenIds bad_id = xt::zeros<std::int64_t>({2, 3});
    bad_id(1, 2) = 11;
    WB_CHECK_THROWS(wb::ValueError, wb::prefill(p, c, bad_id, cache), "ids must be in [0, V)",
                    "wb::prefill", "[1, 2]", "11");
    {
        bad_id(1, 2) = -1;
        INFO(
            "hint: a negative id is outside [0, V) too: test id < 0 as well as id >= V, before "
            "embed reports it under its own name");
        WB_CHECK_THROWS(wb::ValueError, wb::prefill(p, c, bad_id, cache),
                        "ids must be in [0, V): -1 is below it", "wb::prefill", "[1, 2]", "-1");
    }
    const wb::TokenIds three = xt::zeros<std::int64_t>({3, 2});
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, c, three, cache),
                    "the cache was made for B = 2 sequences", "wb::prefill", "[2, 2, 8, 4]",
                    "[3, 2, 8, 4]");
    wb::KvCache one_layer = cache;
    one_layer.k.pop_back();
    one_layer.v.pop_back();
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(p, c, prefix(two_sequences(), 2), one_layer),
                    "one K and V per layer", "wb::prefill", "1", "2");

    wb::prefill(p, c, prefix(two_sequences(), 2), cache);
    WB_CHECK_THROWS(wb::ValueError, wb::prefill(p, c, prefix(two_sequences(), 2), cache),
                    "prefill starts a generation: it needs an empty cache", "wb::prefill", "2");

    wb::GptParams<float> short_model = p;
    short_model.blocks.pop_back();
    wb::KvCache fresh = wb::make_kv_cache(c, 2);
    WB_CHECK_THROWS(wb::ShapeError, wb::prefill(short_model, c, prefix(two_sequences(), 2), fresh),
                    "params must have L blocks", "wb::prefill", "1", "2");
}

TEST_CASE("decode_step on a full cache throws ValueError naming T_max",
          "[decode_step][errors][c:decode_step.full-cache]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 10);
    const wb::TokenIds ids = two_sequences();
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prefix(ids, 7), cache);
    wb::decode_step(p, c, {ids(0, 7), ids(1, 7)}, cache);  // position 7, the last one
    INFO("after 8 positions the cache length is " << cache.length << ", expected 8");
    CHECK(cache.length == 8);
    WB_CHECK_THROWS(wb::ValueError, wb::decode_step(p, c, {1, 2}, cache),
                    "position T_max does not exist: the cache and wpe end at T_max - 1",
                    "wb::decode_step", "8");
}

TEST_CASE("decode_step rejects a wrong number of tokens, bad ids and a malformed cache",
          "[decode_step][errors][c:decode_step.token-count][c:decode_step.bad-id]"
          "[c:decode_step.cache-shape][c:decode_step.param-shapes]"
          "[c:decode_step.invalid-config]") {
    const wb::GptConfig c = small_config();
    const wb::GptParams<float> p = small_model(c, 11);
    wb::KvCache cache = wb::make_kv_cache(c, 2);
    wb::prefill(p, c, prefix(two_sequences(), 2), cache);
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(p, c, {1, 2, 3}, cache),
                    "one new token per sequence", "wb::decode_step", "3", "2");
    WB_CHECK_THROWS(wb::ValueError, wb::decode_step(p, c, {1, -1}, cache), "ids must be in [0, V)",
                    "wb::decode_step", "-1");
    WB_CHECK_THROWS(wb::ValueError, wb::decode_step(p, c, {11, 0}, cache), "ids must be in [0, V)",
                    "wb::decode_step", "11");
    wb::KvCache bad = cache;
    bad.v[1] = xt::zeros<float>({2, 2, 4, 4});
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(p, c, {1, 2}, bad),
                    "every layer's V must be [B, H, T_max, d]", "wb::decode_step", "[2, 2, 4, 4]");
    wb::GptParams<float> short_model = p;
    short_model.blocks.pop_back();
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(short_model, c, {1, 2}, cache),
                    "params must have L blocks: check them before reading blocks[l]",
                    "wb::decode_step", "1", "2");
    const wb::GptConfig uneven{c.V, c.T_max, c.D, 3, c.L};  // H = 3 does not divide D = 8
    WB_CHECK_THROWS(wb::ShapeError, wb::decode_step(p, uneven, {1, 2}, cache),
                    "an invalid config is refused before anything is computed", "wb::decode_step",
                    "3", "8");
    INFO("a rejected step must not advance the cache: length = " << cache.length << ", expected 2");
    CHECK(cache.length == 2);
}
