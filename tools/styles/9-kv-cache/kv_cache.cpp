// Style answer for chapter 9 (tools/test-styles): the cache written through one helper that
// takes the written slots as a [start, stop) pair; every argument check gathered in one
// validation pass per public function, in another valid order than the reference (the ids
// and the cache's length before the cache's shapes in prefill), with messages worded
// differently that still name each fact kv_cache.hpp promises. It exists because it is a
// correct answer: every check of chapter 9 must accept it.
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

using std::to_string;

void check_ids(const char* fn, const TokenIds& ids, std::size_t V) {
    for (std::size_t b = 0; b < ids.shape()[0]; ++b) {
        for (std::size_t t = 0; t < ids.shape()[1]; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || static_cast<std::size_t>(id) >= V) {
                throw ValueError(
                    std::string(fn) + ": token id " + to_string(id) + " at [b = " + to_string(b) +
                    ", t = " + to_string(t) +
                    "] is not a valid id; ids must lie in 0 .. V - 1 = " + to_string(V - 1));
            }
        }
    }
}

void check_cache_layout(const char* fn, const KvCache& cache, const GptConfig& c, std::size_t B) {
    if (cache.k.size() != c.L || cache.v.size() != c.L) {
        throw ShapeError(std::string(fn) + ": the cache holds " + to_string(cache.k.size()) +
                         " K and " + to_string(cache.v.size()) +
                         " V layers, but the model has L = " + to_string(c.L));
    }
    const Shape want{B, c.H, c.T_max, c.D / c.H};
    for (std::size_t l = 0; l < c.L; ++l) {
        for (const Heads<float>* t : {&cache.k[l], &cache.v[l]}) {
            const Shape got(t->shape().begin(), t->shape().end());
            if (got != want) {
                throw ShapeError(std::string(fn) + ": layer " + to_string(l) + " of the cache is " +
                                 shape_str(got) + " where [B, H, T_max, d] = " + shape_str(want) +
                                 " was expected");
            }
        }
    }
}

Tensor4 slots(const Heads<float>& c, std::size_t stop) {
    return xt::view(c, xt::all(), xt::all(), xt::range(0, stop), xt::all());
}

// Runs ids [B, n] at positions [start, start + n): writes their K and V into every layer's
// cache, returns the last position's logits [B, V].
Mat<float> run_new_tokens(const GptParams<float>& p, const GptConfig& c, const TokenIds& ids,
                          std::size_t start, const std::optional<Mask>& mask, KvCache& cache) {
    const std::size_t n = ids.shape()[1];
    const std::size_t stop = start + n;
    const auto offset = static_cast<std::int64_t>(start);
    const float eps = static_cast<float>(kGptLayerNormEps);

    Tensor3 x = embed(p.wte, ids);
    if (c.positions == Positions::learned) x = add_positions(x, p.wpe, offset);

    for (std::size_t l = 0; l < c.L; ++l) {
        const GptBlock<float>& blk = p.blocks[l];
        const Tensor3 h = layer_norm(x, LayerNormParams{blk.ln1_g, blk.ln1_b, eps});
        Tensor4 q = split_heads(linear(h, Linear{blk.w_q, blk.b_q}), c.H);
        Tensor4 k = split_heads(linear(h, Linear{blk.w_k, blk.b_k}), c.H);
        const Tensor4 v = split_heads(linear(h, Linear{blk.w_v, blk.b_v}), c.H);
        if (c.positions == Positions::rope) {
            q = apply_rope(q, offset, kRopeBase);
            k = apply_rope(k, offset, kRopeBase);
        }
        xt::view(cache.k[l], xt::all(), xt::all(), xt::range(start, stop), xt::all()) = k;
        xt::view(cache.v[l], xt::all(), xt::all(), xt::range(start, stop), xt::all()) = v;
        const Attention att = sdpa(q, slots(cache.k[l], stop), slots(cache.v[l], stop), mask);
        x = x + linear(merge_heads(att.output), Linear{blk.w_o, blk.b_o});
        const Tensor3 h2 = layer_norm(x, LayerNormParams{blk.ln2_g, blk.ln2_b, eps});
        const Tensor3 up = linear(h2, Linear{blk.w_fc, blk.b_fc});
        x = x + linear(c.gelu == Gelu::exact ? gelu(up) : gelu_tanh(up),
                       Linear{blk.w_proj, blk.b_proj});
    }
    const Tensor3 last = layer_norm(last_token_keep(x), LayerNormParams{p.ln_f_g, p.ln_f_b, eps});
    return next_token_logits(last, Linear{p.lm_head, Tensor1{}});
}

}  // namespace

KvCache make_kv_cache(const GptConfig& config, std::size_t B) {
    const char* fn = "wb::make_kv_cache";
    if (B == 0) throw ShapeError(std::string(fn) + ": got B = 0 sequences, need B >= 1");
    require_valid_config(fn, config);
    checked_size(fn, "2 * L * B * T_max * D", {2, config.L, B, config.T_max, config.D});
    KvCache cache;
    const std::size_t d = config.D / config.H;
    cache.k.reserve(config.L);
    cache.v.reserve(config.L);
    for (std::size_t l = 0; l < config.L; ++l) {
        cache.k.emplace_back(Heads<float>::from_shape({B, config.H, config.T_max, d}));
        cache.k.back().fill(0.0f);
        cache.v.emplace_back(Heads<float>::from_shape({B, config.H, config.T_max, d}));
        cache.v.back().fill(0.0f);
    }
    cache.length = 0;
    return cache;
}

std::size_t kv_cache_elements(const GptConfig& config, std::size_t B) {
    return checked_size("wb::kv_cache_elements", "K and V of L layers, B x T_max x D each",
                        {config.L, B, config.T_max, config.D, 2});
}

std::size_t kv_cache_bytes(const GptConfig& config, std::size_t B) {
    const std::size_t elements = kv_cache_elements(config, B);
    return checked_size("wb::kv_cache_bytes", "elements x sizeof(float)",
                        {sizeof(float), elements});
}

Mat<float> prefill(const GptParams<float>& params, const GptConfig& config, const TokenIds& prompt,
                   KvCache& cache) {
    const char* fn = "wb::prefill";
    require_valid_config(fn, config);
    require_gpt_shapes(fn, "params", params, config);
    const std::size_t B = prompt.shape()[0], T = prompt.shape()[1];
    if (B == 0 || T == 0) {
        throw ShapeError(std::string(fn) + ": the prompt is " + shape_str(prompt.shape()) +
                         "; B and T must both be at least 1");
    }
    if (T > config.T_max) {
        throw ValueError(std::string(fn) + ": a prompt of T = " + to_string(T) +
                         " tokens does not fit in T_max = " + to_string(config.T_max));
    }
    check_ids(fn, prompt, config.V);
    if (cache.length != 0) {
        throw ValueError(std::string(fn) + ": the cache already holds length = " +
                         to_string(cache.length) + " positions; prefill needs an empty one (0)");
    }
    check_cache_layout(fn, cache, config, B);

    Mat<float> logits = run_new_tokens(params, config, prompt, 0, causal_mask(T), cache);
    cache.length = T;
    return logits;
}

Mat<float> decode_step(const GptParams<float>& params, const GptConfig& config,
                       const std::vector<std::int64_t>& tokens, KvCache& cache) {
    const char* fn = "wb::decode_step";
    require_valid_config(fn, config);
    require_gpt_shapes(fn, "params", params, config);
    if (cache.k.empty()) {
        throw ShapeError(std::string(fn) +
                         ": the cache has no layers, expected L = " + to_string(config.L));
    }
    const std::size_t B = cache.k[0].shape()[0];
    check_cache_layout(fn, cache, config, B);
    if (tokens.size() != B || B == 0) {
        throw ShapeError(std::string(fn) + ": " + to_string(tokens.size()) +
                         " tokens given for a cache of B = " + to_string(B) + " sequences");
    }
    if (cache.length >= config.T_max) {
        throw ValueError(std::string(fn) + ": no free slot: the cache holds " +
                         to_string(cache.length) + " of T_max = " + to_string(config.T_max) +
                         " positions");
    }
    TokenIds ids = TokenIds::from_shape({B, 1});
    for (std::size_t b = 0; b < B; ++b) ids(b, 0) = tokens[b];
    check_ids(fn, ids, config.V);

    Mat<float> logits = run_new_tokens(params, config, ids, cache.length, std::nullopt, cache);
    ++cache.length;
    return logits;
}

}  // namespace WB_IMPL
}  // namespace wb
