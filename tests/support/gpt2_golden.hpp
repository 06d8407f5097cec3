// The goldens of a GPT (tests/goldens/8-training): its config and token ids, and GPT-2's weights
// as chapter 8's model: tests/goldens/8-training/gpt2_tiny.txt (written by
// tools/goldens/gpt2_model.py) holds a tiny GPT-2 in GPT-2's own names and layout and the
// logits GPT-2's code computes. The mapping below is the checks' own: every Conv1D weight of
// GPT-2 is `[in, out]` and multiplies from the right (x W + b), so chapter 8's `[out, in]`
// weight is its transpose; c_attn holds q | k | v side by side; lm_head is wte (tied).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include <xtensor/xview.hpp>

#include "8-training/model.hpp"
#include "golden.hpp"

namespace wbtest {

/// The config stored as tensor "config" = [V, T_max, D, H, L].
inline wb::GptConfig golden_config(const Golden& g) {
    const auto c = g.tensor<1>("config");
    return wb::GptConfig{static_cast<std::size_t>(c(0)), static_cast<std::size_t>(c(1)),
                         static_cast<std::size_t>(c(2)), static_cast<std::size_t>(c(3)),
                         static_cast<std::size_t>(c(4))};
}

/// Token ids stored as floats.
inline wb::TokenIds golden_ids(const Golden& g, const std::string& name) {
    const auto f = g.tensor<2>(name);
    wb::TokenIds ids = wb::TokenIds::from_shape(f.shape());
    for (std::size_t i = 0; i < f.size(); ++i) ids.data()[i] = std::llround(f.data()[i]);
    return ids;
}

/// The golden GPT-2's config: [V, T_max, D, H, L] with GPT-2's tanh GELU.
inline wb::GptConfig gpt2_golden_config(const Golden& g) {
    wb::GptConfig config = golden_config(g);
    config.gelu = wb::Gelu::tanh;
    return config;
}

/// The golden GPT-2's weights as wb::GptParams.
inline wb::GptParams<float> gpt2_golden_params(const Golden& g, const wb::GptConfig& c) {
    const std::size_t D = c.D;
    const auto vec = [&](const std::string& name) { return wb::Vec<float>(g.tensor<1>(name)); };
    const auto t = [&](const std::string& name) {  // GPT-2's [in, out] -> chapter 8's [out, in]
        return wb::Mat<float>(xt::transpose(g.tensor<2>(name)));
    };
    wb::GptParams<float> p;
    p.wte = g.tensor<2>("transformer.wte.weight");
    p.wpe = g.tensor<2>("transformer.wpe.weight");
    p.lm_head = p.wte;  // tied: GPT-2 scores the vocabulary with its token table
    p.ln_f_g = vec("transformer.ln_f.weight");
    p.ln_f_b = vec("transformer.ln_f.bias");
    for (std::size_t l = 0; l < c.L; ++l) {
        const std::string h = "transformer.h." + std::to_string(l) + ".";
        wb::GptBlock<float> b;
        b.ln1_g = vec(h + "ln_1.weight");
        b.ln1_b = vec(h + "ln_1.bias");
        const wb::Mat<float> qkv = t(h + "attn.c_attn.weight");  // [3D, D]: q, k, v rows
        const wb::Vec<float> qkv_b = vec(h + "attn.c_attn.bias");
        b.w_q = xt::view(qkv, xt::range(0, D), xt::all());
        b.w_k = xt::view(qkv, xt::range(D, 2 * D), xt::all());
        b.w_v = xt::view(qkv, xt::range(2 * D, 3 * D), xt::all());
        b.b_q = xt::view(qkv_b, xt::range(0, D));
        b.b_k = xt::view(qkv_b, xt::range(D, 2 * D));
        b.b_v = xt::view(qkv_b, xt::range(2 * D, 3 * D));
        b.w_o = t(h + "attn.c_proj.weight");
        b.b_o = vec(h + "attn.c_proj.bias");
        b.ln2_g = vec(h + "ln_2.weight");
        b.ln2_b = vec(h + "ln_2.bias");
        b.w_fc = t(h + "mlp.c_fc.weight");
        b.b_fc = vec(h + "mlp.c_fc.bias");
        b.w_proj = t(h + "mlp.c_proj.weight");
        b.b_proj = vec(h + "mlp.c_proj.bias");
        p.blocks.push_back(std::move(b));
    }
    return p;
}

}  // namespace wbtest
