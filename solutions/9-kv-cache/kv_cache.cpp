// Chapter 9 — reference implementation: prefill and decode on a per-layer KV cache.
// Both run one code path, forward_new_tokens: n new tokens per sequence at positions
// [start, start + n). Prefill is n = T, start = 0; decode is n = 1, start = cache.length.
// It is chapter 8's forward, made of the same chapter 1–7 functions, with two differences:
// every function is given the position offset `start` (add_positions, apply_rope), and the
// attention reads its keys and values from the cache, where earlier steps left them.
#include "9-kv-cache/kv_cache.hpp"

#include <optional>
#include <string>

#include <xtensor/xview.hpp>

#include "1-tensors/tensors.hpp"
#include "2-embedding/embedding.hpp"
#include "3-positions/positions.hpp"
#include "4-sdpa/sdpa.hpp"
#include "6-masks/masks.hpp"
#include "7-blocks/blocks.hpp"

namespace wb {
inline namespace WB_IMPL {

namespace {

void check_model(const std::string& fn, const GptParams<float>& p, const GptConfig& c) {
    require_valid_config(fn, c);
    if (p.blocks.size() != c.L) {
        throw ShapeError(fn + ": params has " + num(p.blocks.size()) +
                         " blocks, expected L = " + num(c.L) + " for config " + config_str(c));
    }
    // Every tensor the forward reads (wte, wpe: [T_max, D] or [0, D] with RoPE, each block's,
    // the final LayerNorm, lm_head).
    require_gpt_shapes(fn.c_str(), "params", p, c);
}

// The cache must be L layers of K and V, each [B, H, T_max, d].
void check_cache(const std::string& fn, const KvCache& cache, const GptConfig& c, std::size_t B) {
    const Shape expected = {B, c.H, c.T_max, c.D / c.H};
    if (cache.k.size() != c.L || cache.v.size() != c.L) {
        throw ShapeError(fn + ": cache has " + num(cache.k.size()) + " K and " +
                         num(cache.v.size()) + " V layers, expected L = " + num(c.L) +
                         " (use wb::make_kv_cache)");
    }
    for (std::size_t l = 0; l < c.L; ++l) {
        require_shape(fn.c_str(), "cache.k[l] [B, H, T_max, d]", cache.k[l], expected);
        require_shape(fn.c_str(), "cache.v[l] [B, H, T_max, d]", cache.v[l], expected);
    }
}

void check_id(const std::string& fn, const std::string& where, std::int64_t id,
              const GptConfig& c) {
    if (id < 0 || static_cast<std::size_t>(id) >= c.V) {
        throw ValueError(fn + ": " + where + " = " + std::to_string(id) +
                         " is outside [0, V) = [0, " + num(c.V) + ")");
    }
}

// Positions [0, end) of one layer's cache [B, H, T_max, d]: the keys (or values) the new
// queries read, [B, H, end, d]. A copy for sdpa; the cache itself never moves.
Tensor4 cached(const Heads<float>& c, std::size_t end) {
    return xt::view(c, xt::all(), xt::all(), xt::range(0, end), xt::all());
}

// Runs ids [B, n] at positions [start, start + n): writes their K (rotated, with RoPE) and V
// into every layer's cache and returns the logits [B, V] of the last of them. `mask` is what
// the n queries need over the start + n cached keys: prefill's causal mask, or none for the
// single newest query of a decode step (the cache holds no future to hide).
Tensor2 forward_new_tokens(const GptParams<float>& p, const GptConfig& c, const TokenIds& ids,
                           std::size_t start, const std::optional<Mask>& mask, KvCache& cache) {
    const std::size_t n = ids.shape(1), end = start + n;   // keys [0, end): history and new
    const auto offset = static_cast<std::int64_t>(start);  // position of the first new token
    const bool rope = c.positions == Positions::rope;
    const float eps = static_cast<float>(kGptLayerNormEps);

    Tensor3 x = embed(p.wte, ids);                   // [B, n, D]        chapter 2
    if (!rope) x = add_positions(x, p.wpe, offset);  // rows wpe[start, start + n)  chapter 3

    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& blk = p.blocks[l];
        Heads<float>& kc = cache.k[l];  // [B, H, T_max, d]: this layer's own keys
        Heads<float>& vc = cache.v[l];  // [B, H, T_max, d]: this layer's own values

        // Attention half: q, k, v of the new tokens only (chapters 7, 2, 1).
        const Tensor3 h = layer_norm(x, LayerNormParams{blk.ln1_g, blk.ln1_b, eps});  // [B, n, D]
        Tensor4 q = split_heads(linear(h, Linear{blk.w_q, blk.b_q}), c.H);        // [B, H, n, d]
        Tensor4 k = split_heads(linear(h, Linear{blk.w_k, blk.b_k}), c.H);        // [B, H, n, d]
        const Tensor4 v = split_heads(linear(h, Linear{blk.w_v, blk.b_v}), c.H);  // [B, H, n, d]
        if (rope) {
            // Each new token is turned by its own absolute position start + i (chapter 3).
            q = apply_rope(q, offset, kRopeBase);
            k = apply_rope(k, offset, kRopeBase);
        }

        // Write before reading: the new keys (already rotated, so never rotated again) and
        // values go to slots [start, end); the new queries then read slots [0, end).
        xt::view(kc, xt::all(), xt::all(), xt::range(start, end), xt::all()) = k;
        xt::view(vc, xt::all(), xt::all(), xt::range(start, end), xt::all()) = v;
        const Attention att = sdpa(q, cached(kc, end), cached(vc, end), mask);  // chapter 4
        x = x + linear(merge_heads(att.output), Linear{blk.w_o, blk.b_o});      // [B, n, D]

        // FFN half, token by token (chapter 7).
        const Tensor3 h2 = layer_norm(x, LayerNormParams{blk.ln2_g, blk.ln2_b, eps});
        const Tensor3 up = linear(h2, Linear{blk.w_fc, blk.b_fc});           // [B, n, 4D]
        const Tensor3 fc = c.gelu == Gelu::tanh ? gelu_tanh(up) : gelu(up);  // chapter 8's choice
        x = x + linear(fc, Linear{blk.w_proj, blk.b_proj});                  // [B, n, D]
    }

    // Only the last new position of each sequence predicts the next token (§14); the final
    // LayerNorm is per token, so it runs on that position alone.
    const Tensor3 last = layer_norm(last_token_keep(x), LayerNormParams{p.ln_f_g, p.ln_f_b, eps});
    return next_token_logits(last, Linear{p.lm_head, Tensor1::from_shape({0})});  // [B, V]
}

}  // namespace

KvCache make_kv_cache(const GptConfig& config, std::size_t B) {
    const std::string fn = "wb::make_kv_cache";
    require_valid_config(fn, config);
    if (B == 0) {
        throw ShapeError(fn + ": B = 0 sequences, expected B >= 1");
    }
    const std::size_t d = config.D / config.H;
    checked_size(fn, "the cache 2 x L x B x T_max x D", {2, config.L, B, config.T_max, config.D});
    KvCache cache;
    for (std::size_t l = 0; l < config.L; ++l) {
        // One K and one V per layer: each layer computes its own keys from its own input.
        cache.k.push_back(xt::zeros<float>({B, config.H, config.T_max, d}));  // [B, H, T_max, d]
        cache.v.push_back(xt::zeros<float>({B, config.H, config.T_max, d}));  // [B, H, T_max, d]
    }
    cache.length = 0;
    return cache;
}

std::size_t kv_cache_elements(const GptConfig& config, std::size_t B) {
    // K and V (2), per layer (L), per sequence (B), per position (T_max), D = H·d floats.
    checked_size("wb::kv_cache_elements", "2 x L x B x T_max x D",
                 {2, config.L, B, config.T_max, config.D});  // refuses a product that wraps
    return 2 * config.L * B * config.T_max * config.D;
}

std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B) {
    return checked_size("wb::kv_cache_bytes", "kv_cache_elements x 4 bytes",
                        {kv_cache_elements(config, B), sizeof(float)});
}

Mat<float> prefill(const GptParams<float>& params, const GptConfig& config, const TokenIds& prompt,
                   KvCache& cache) {
    const std::string fn = "wb::prefill";
    check_model(fn, params, config);
    const std::size_t B = prompt.shape(0), T = prompt.shape(1);
    if (B == 0 || T == 0) {
        throw ShapeError(fn + ": prompt [B, T] has shape " + shape_str(prompt.shape()) +
                         ", expected B >= 1 and T >= 1");
    }
    if (T > config.T_max) {
        throw ValueError(fn + ": prompt [B, T] has shape " + shape_str(prompt.shape()) +
                         ": T = " + num(T) + " exceeds T_max = " + num(config.T_max));
    }
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            check_id(fn, "prompt[" + num(b) + ", " + num(t) + "]", prompt(b, t), config);
    check_cache(fn, cache, config, B);
    if (cache.length != 0) {
        throw ValueError(fn + ": the cache already holds length = " + num(cache.length) +
                         " positions, expected an empty cache (length 0) from wb::make_kv_cache");
    }

    // The T prompt tokens are positions [0, T), all new: query i may read keys [0, i], the
    // causal mask of chapter 6, as in chapter 8's forward.
    Mat<float> logits =
        forward_new_tokens(params, config, prompt, 0, causal_mask(T), cache);  // [B, V]
    cache.length = T;
    return logits;
}

Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache) {
    const std::string fn = "wb::decode_step";
    check_model(fn, params, config);
    if (cache.k.empty()) {
        check_cache(fn, cache, config, 0);  // throws: no layers
    }
    const std::size_t B = cache.k[0].shape(0);
    check_cache(fn, cache, config, B);
    if (tokens.size() != B) {
        throw ShapeError(fn + ": got tokens.size() = " + num(tokens.size()) +
                         " new tokens, expected one per sequence of the cache, B = " + num(B));
    }
    if (cache.length >= config.T_max) {
        throw ValueError(fn + ": the cache is full: length = " + num(cache.length) +
                         " positions, T_max = " + num(config.T_max) +
                         " (the cache, and with learned positions the table wpe, end there)");
    }
    TokenIds ids = TokenIds::from_shape({B, 1});  // [B, 1]
    for (std::size_t b = 0; b < B; ++b) {
        check_id(fn, "tokens[" + num(b) + "]", tokens[b], config);
        ids(b, 0) = tokens[b];
    }

    // One query, the newest position: every cached key [0, length] is its past or itself, so
    // there is nothing to hide and no mask.
    Mat<float> logits =
        forward_new_tokens(params, config, ids, cache.length, std::nullopt, cache);  // [B, V]
    cache.length += 1;  // the new token is now history
    return logits;
}

}  // namespace WB_IMPL
}  // namespace wb
