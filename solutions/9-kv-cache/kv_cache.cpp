// Chapter 9 — reference implementation: prefill and decode on a per-layer KV cache.
// Both run the same code path, forward_new_tokens: n new tokens per sequence at positions
// [start, start + n). Prefill is n = T, start = 0; decode is n = 1, start = cache.length.
// The math is chapter 8's forward (Pre-LN, learned positions, causal attention, GELU FFN),
// except that the keys and values of earlier positions are read from the cache.
#include "9-kv-cache/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace wb {
inline namespace WB_IMPL {

namespace {

std::string num(std::size_t n) { return std::to_string(n); }

void check_model(const std::string& fn, const GptParams<float>& p, const GptConfig& c) {
    require_valid_config(fn, c);
    if (p.blocks.size() != c.L) {
        throw ShapeError(fn + ": params has " + num(p.blocks.size()) + " blocks, expected L = " +
                         num(c.L) + " for config " + config_str(c));
    }
    // Every tensor the forward reads (wte, wpe, each block's, the final LayerNorm, lm_head).
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

// Runs ids [B, n] at positions [start, start + n): writes their K, V into every layer's cache
// and returns the logits [B, V] of the last of them. Earlier positions come from the cache.
Mat<float> forward_new_tokens(const GptParams<float>& p, const GptConfig& c, const TokenIds& ids,
                              std::size_t start, KvCache& cache) {
    const std::size_t B = ids.shape(0), n = ids.shape(1), D = c.D, H = c.H, d = D / H;
    const float eps = static_cast<float>(kGptLayerNormEps);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));  // 1/sqrt(d), one head's width

    // Token embedding plus the position embedding of the token's absolute position.
    Mat<float> x = Mat<float>::from_shape({B * n, D});  // [B·n, D], row b·n + i
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto id = static_cast<std::size_t>(ids(b, i));
            for (std::size_t j = 0; j < D; ++j) x(b * n + i, j) = p.wte(id, j) + p.wpe(start + i, j);
        }
    }

    Vec<float> mean, rstd;  // LayerNorm statistics: not needed without a backward
    std::vector<float> w(start + n);  // attention weights of one query over positions [0, pos]
    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& blk = p.blocks[l];
        Cube<float>& kc = cache.k[l];  // [B, H, T_max, d]: this layer's own keys
        Cube<float>& vc = cache.v[l];  // [B, H, T_max, d]: this layer's own values

        // Attention half: q, k, v of the new tokens only.
        const Mat<float> ln1 = layer_norm_forward(x, blk.ln1_g, blk.ln1_b, eps, mean, rstd);  // [B·n, D]
        const Mat<float> q = linear_forward(ln1, blk.w_q, blk.b_q);  // [B·n, D]
        const Mat<float> k = linear_forward(ln1, blk.w_k, blk.b_k);  // [B·n, D]
        const Mat<float> v = linear_forward(ln1, blk.w_v, blk.b_v);  // [B·n, D]

        // Append: column h·d + e of row b·n + i goes to head h, position start + i.
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t h = 0; h < H; ++h)
                    for (std::size_t e = 0; e < d; ++e) {
                        kc(b, h, start + i, e) = k(b * n + i, h * d + e);
                        vc(b, h, start + i, e) = v(b * n + i, h * d + e);
                    }

        // Each new query at position pos reads the cached keys and values [0, pos]: the
        // history and itself, never the future (causal).
        Mat<float> att_out = xt::zeros<float>({B * n, D});  // [B·n, D], heads merged
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t h = 0; h < H; ++h) {
                for (std::size_t i = 0; i < n; ++i) {
                    const std::size_t row = b * n + i, pos = start + i;
                    const std::size_t first = 0, end = pos + 1;  // keys [0, pos]: history and itself
                    float m = -INFINITY;
                    for (std::size_t j = first; j < end; ++j) {
                        float s = 0.0f;
                        for (std::size_t e = 0; e < d; ++e) s += q(row, h * d + e) * kc(b, h, j, e);
                        w[j] = s * scale;
                        m = std::max(m, w[j]);
                    }
                    float sum = 0.0f;
                    for (std::size_t j = first; j < end; ++j) {
                        w[j] = std::exp(w[j] - m);  // stable softmax: shift by the maximum
                        sum += w[j];
                    }
                    for (std::size_t j = first; j < end; ++j) {
                        const float a = w[j] / sum;
                        for (std::size_t e = 0; e < d; ++e) att_out(row, h * d + e) += a * vc(b, h, j, e);
                    }
                }
            }
        }
        const Mat<float> x_mid = x + linear_forward(att_out, blk.w_o, blk.b_o);  // [B·n, D]

        // FFN half, position by position.
        const Mat<float> ln2 = layer_norm_forward(x_mid, blk.ln2_g, blk.ln2_b, eps, mean, rstd);
        const Mat<float> fc = gelu_forward(Mat<float>(linear_forward(ln2, blk.w_fc, blk.b_fc)));  // [B·n, 4D]
        x = x_mid + linear_forward(fc, blk.w_proj, blk.b_proj);  // [B·n, D]
    }

    // Only the last new position of each sequence predicts the next token (§14).
    Mat<float> last = Mat<float>::from_shape({B, D});  // [B, D]
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < D; ++j) last(b, j) = x(b * n + n - 1, j);
    const Mat<float> ln_f = layer_norm_forward(last, p.ln_f_g, p.ln_f_b, eps, mean, rstd);  // [B, D]
    const Vec<float> no_bias = Vec<float>::from_shape({0});
    return linear_forward(ln_f, p.lm_head, no_bias);  // [B, V]
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

Mat<float> prefill(const GptParams<float>& params, const GptConfig& config,
                   const TokenIds& prompt, KvCache& cache) {
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

    Mat<float> logits = forward_new_tokens(params, config, prompt, 0, cache);  // [B, V]
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
                         " (the position table and the cache end there)");
    }
    TokenIds ids = TokenIds::from_shape({B, 1});  // [B, 1]
    for (std::size_t b = 0; b < B; ++b) {
        check_id(fn, "tokens[" + num(b) + "]", tokens[b], config);
        ids(b, 0) = tokens[b];
    }

    Mat<float> logits = forward_new_tokens(params, config, ids, cache.length, cache);  // [B, V]
    cache.length += 1;  // the new token is now history
    return logits;
}

}  // namespace WB_IMPL
}  // namespace wb
