// Test-side helpers of chapter 8's model checks: loading PyTorch goldens into a model (the config
// and ids: tests/support/gpt2_golden.hpp) and
// comparing two models tensor by tensor. The walk by field (each_tensor) and the random model
// (random_params) are tests/support/random_gpt.hpp's, shared with chapter 9 and the mini-GPT.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "8-training/model.hpp"
#include "check.hpp"
#include "golden.hpp"
#include "gpt2_golden.hpp"
#include "random_gpt.hpp"

namespace wbtest {

/// Calls f(name, a_tensor, b_tensor) for the matching tensors of two models.
template <class PA, class PB, class F>
void each_pair(PA& a, PB& b, F f) {
    f(std::string("wte"), a.wte, b.wte);
    f(std::string("wpe"), a.wpe, b.wpe);
    for (std::size_t l = 0; l < a.blocks.size() && l < b.blocks.size(); ++l) {
        auto& x = a.blocks[l];
        auto& y = b.blocks[l];
        const std::string pre = "blocks." + std::to_string(l) + ".";
        f(pre + "ln1_g", x.ln1_g, y.ln1_g);
        f(pre + "ln1_b", x.ln1_b, y.ln1_b);
        f(pre + "w_q", x.w_q, y.w_q);
        f(pre + "b_q", x.b_q, y.b_q);
        f(pre + "w_k", x.w_k, y.w_k);
        f(pre + "b_k", x.b_k, y.b_k);
        f(pre + "w_v", x.w_v, y.w_v);
        f(pre + "b_v", x.b_v, y.b_v);
        f(pre + "w_o", x.w_o, y.w_o);
        f(pre + "b_o", x.b_o, y.b_o);
        f(pre + "ln2_g", x.ln2_g, y.ln2_g);
        f(pre + "ln2_b", x.ln2_b, y.ln2_b);
        f(pre + "w_fc", x.w_fc, y.w_fc);
        f(pre + "b_fc", x.b_fc, y.b_fc);
        f(pre + "w_proj", x.w_proj, y.w_proj);
        f(pre + "b_proj", x.b_proj, y.b_proj);
    }
    f(std::string("ln_f_g"), a.ln_f_g, b.ln_f_g);
    f(std::string("ln_f_b"), a.ln_f_b, b.ln_f_b);
    f(std::string("lm_head"), a.lm_head, b.lm_head);
}

/// A model whose tensor NAME is the golden's tensor `prefix + NAME`, built by field.
template <class Real>
wb::GptParams<Real> golden_params(const Golden& g, const std::string& prefix, std::size_t L) {
    wb::GptParams<Real> p;
    p.blocks.resize(L);
    each_tensor(p, [&](const std::string& name, auto& t) {
        using Tensor = std::decay_t<decltype(t)>;
        const auto stored = g.tensor<rank_of<Tensor>>(prefix + name);
        t = Tensor::from_shape(stored.shape());
        std::copy(stored.begin(), stored.end(), t.begin());
    });
    return p;
}

/// A model of the same shapes as p, every element 0 (built by field, not with wb::zeros_like).
template <class Real>
wb::GptParams<Real> zero_params(const wb::GptParams<Real>& p) {
    wb::GptParams<Real> z = p;
    each_tensor(z, [](const std::string&, auto& t) { t.fill(Real(0)); });
    return z;
}

/// True when every element of every tensor of a and b is bit-for-bit equal.
template <class Real>
bool identical(const wb::GptParams<Real>& a, const wb::GptParams<Real>& b) {
    if (a.blocks.size() != b.blocks.size()) return false;
    bool same = true;
    each_pair(a, b, [&](const std::string&, const auto& x, const auto& y) {
        same = same && x.shape() == y.shape() &&
               std::equal(x.begin(), x.end(), y.begin(),
                          [](Real u, Real v) { return std::memcmp(&u, &v, sizeof(Real)) == 0; });
    });
    return same;
}

/// What gpt_backward takes for a model of `c` (init_gpt's weights for seed 1): the weights, the
/// cache of their forward on a batch [2, 3] of ids i mod V (each target the id after), and zero
/// gradients.
struct BackwardInputs {
    wb::GptParams<float> params;
    wb::GptCache<float> cache;
    wb::GptParams<float> grads;
};

inline BackwardInputs backward_inputs(const wb::GptConfig& c) {
    BackwardInputs in{wb::init_gpt<float>(c, 1), {}, {}};
    wb::TokenIds x = wb::TokenIds::from_shape({2, 3}), y = wb::TokenIds::from_shape({2, 3});
    const auto V = static_cast<std::int64_t>(c.V);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.flat(i) = std::int64_t(i) % V;
        y.flat(i) = std::int64_t(i + 1) % V;
    }
    (void)wb::gpt_forward(in.params, c, x, y, -1, in.cache);
    in.grads = wb::zeros_like(in.params);
    return in;
}

/// Whether every value of every tensor of `p` is 0 (gradients nothing was written to).
inline bool all_zero(const wb::GptParams<float>& p) {
    for (const auto& r : wb::parameters(p)) {
        for (std::size_t i = 0; i < r.size; ++i) {
            if (r.data[i] != 0.0f) return false;
        }
    }
    return true;
}

}  // namespace wbtest
