// The random GPT of the checks: every tensor of a GptParams filled with seeded normal numbers,
// field by field, independently of chapter 8's init_gpt and wb::parameters (so that a wrong
// init_gpt or parameters() cannot hide a wrong gradient or a wrong decode). Chapter 8's model
// checks, chapter 9's cache checks and the mini-GPT's checks build their models here.
#pragma once

#include <cstddef>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>

#include "8-training/model.hpp"

namespace wbtest {

/// Calls f(name, tensor) for every tensor of a GptParams, by field, in wb::parameters() order.
template <class P, class F>
void each_tensor(P& p, F f) {
    f(std::string("wte"), p.wte);
    f(std::string("wpe"), p.wpe);
    for (std::size_t l = 0; l < p.blocks.size(); ++l) {
        auto& b = p.blocks[l];
        const std::string pre = "blocks." + std::to_string(l) + ".";
        f(pre + "ln1_g", b.ln1_g);
        f(pre + "ln1_b", b.ln1_b);
        f(pre + "w_q", b.w_q);
        f(pre + "b_q", b.b_q);
        f(pre + "w_k", b.w_k);
        f(pre + "b_k", b.b_k);
        f(pre + "w_v", b.w_v);
        f(pre + "b_v", b.b_v);
        f(pre + "w_o", b.w_o);
        f(pre + "b_o", b.b_o);
        f(pre + "ln2_g", b.ln2_g);
        f(pre + "ln2_b", b.ln2_b);
        f(pre + "w_fc", b.w_fc);
        f(pre + "b_fc", b.b_fc);
        f(pre + "w_proj", b.w_proj);
        f(pre + "b_proj", b.b_proj);
    }
    f(std::string("ln_f_g"), p.ln_f_g);
    f(std::string("ln_f_b"), p.ln_f_b);
    f(std::string("lm_head"), p.lm_head);
}

/// The rank of an xtensor type.
template <class E>
constexpr std::size_t rank_of = std::tuple_size<typename std::decay_t<E>::shape_type>::value;

/// The standard deviations of random_params, by kind of tensor. Biases and LayerNorm shifts are
/// N(0, vectors²), LayerNorm gains 1 + N(0, vectors²).
struct GptScales {
    double tables = 0.3;   ///< wte [V, D] and wpe [T_max, D]
    double blocks = 0.3;   ///< w_q, w_k, w_v, w_o [D, D] and w_fc [4D, D]
    double proj = 0.3;     ///< w_proj [D, 4D]
    double head = 0.3;     ///< lm_head [V, D]
    double vectors = 0.1;  ///< every bias and LayerNorm parameter
};

/// A model of `config` whose every tensor is random (see GptScales), from one seeded generator
/// walked in wb::parameters() order: the same seed and scales give the same model in float and
/// in double (up to rounding). With RoPE, wpe is `[0, D]`.
template <class Real>
wb::GptParams<Real> random_params(const wb::GptConfig& c, unsigned seed, const GptScales& s) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    wb::GptParams<Real> p;
    p.blocks.resize(c.L);
    const std::size_t D = c.D;
    auto fill = [&](auto& t, double scale, double offset) {
        for (auto& v : t) v = static_cast<Real>(offset + scale * normal(gen));
    };
    each_tensor(p, [&](const std::string& name, auto& t) {
        using Tensor = std::decay_t<decltype(t)>;
        const bool gain = name.size() >= 2 && name.compare(name.size() - 2, 2, "_g") == 0;
        if constexpr (rank_of<Tensor> == 1) {
            t = Tensor::from_shape({name.find("b_fc") != std::string::npos ? 4 * D : D});
            fill(t, s.vectors, gain ? 1.0 : 0.0);
        } else {
            std::size_t rows = D, cols = D;
            double scale = s.blocks;
            if (name == "wte" || name == "lm_head") rows = c.V;
            if (name == "wpe") rows = c.positions == wb::Positions::learned ? c.T_max : 0;
            if (name == "wte" || name == "wpe") scale = s.tables;
            if (name == "lm_head") scale = s.head;
            if (name.find("w_fc") != std::string::npos) rows = 4 * D;
            if (name.find("w_proj") != std::string::npos) {
                cols = 4 * D;
                scale = s.proj;
            }
            t = Tensor::from_shape({rows, cols});
            fill(t, scale, 0.0);
        }
    });
    return p;
}

/// random_params with every matrix N(0, scale²): larger weights than init_gpt's, so that every
/// term moves the loss.
template <class Real>
wb::GptParams<Real> random_params(const wb::GptConfig& c, unsigned seed, double scale = 0.3) {
    return random_params<Real>(c, seed, GptScales{scale, scale, scale, scale});
}

}  // namespace wbtest
