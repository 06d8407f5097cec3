// Test-side helpers of chapter 9: a small GPT with weights large enough that attention is far
// from uniform (so a decode that forgets the history or the position cannot hide in rounding),
// built field by field by tests/support/random_gpt.hpp, independently of chapter 8's init_gpt;
// sampling options and distributions as vectors for the sampling checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "8-training/model.hpp"
#include "9-kv-cache/sampling.hpp"
#include "check.hpp"
#include "random_gpt.hpp"

namespace wbtest {

// V = 11 tokens, T_max = 8 positions, D = 8, H = 2 heads of d = 4, L = 2 blocks, learned
// positions (a table wpe [T_max, D]).
inline wb::GptConfig small_config() { return wb::GptConfig{11, 8, 8, 2, 2}; }

// The same shape with RoPE: no position table (wpe [0, D]); queries and keys of every layer are
// rotated. d = 4 is two pairs: θ_0 = 1 radian per position, θ_1 = 10000^(-1/2) = 0.01.
inline wb::GptConfig rope_config() {
    wb::GptConfig c = small_config();
    c.positions = wb::Positions::rope;
    return c;
}

// Large enough that attention is far from uniform: wte and wpe N(0, 1), the block matrices
// N(0, 0.5²) (w_proj 0.3²), lm_head N(0, 0.7²), biases and LayerNorm N(0, 0.1²) around 0 and 1.
// With RoPE, wpe is [0, D] (the model has no position table).
inline wb::GptParams<float> small_model(const wb::GptConfig& c, unsigned seed) {
    return random_params<float>(c, seed * 1000, GptScales{1.0, 0.5, 0.3, 0.7, 0.1});
}

// Row r of a [rows, V] matrix as a [1, V] matrix, for WB_CHECK_CLOSE against [B, V] rows.
inline wb::Mat<float> row_of(const wb::Mat<float>& m, std::size_t r) {
    wb::Mat<float> out = wb::Mat<float>::from_shape({1, m.shape(1)});
    for (std::size_t j = 0; j < m.shape(1); ++j) out(0, j) = m(r, j);
    return out;
}

/// Sampling options of temperature, top-k and top-p.
inline wb::SamplingOptions opts(float temperature, std::size_t top_k, float top_p) {
    wb::SamplingOptions o;
    o.temperature = temperature;
    o.top_k = top_k;
    o.top_p = top_p;
    return o;
}

/// A distribution (floats or doubles) as a vector of floats, for WB_CHECK_CLOSE.
template <class T>
wb::Vec<float> as_vec(const std::vector<T>& p) {
    wb::Vec<float> out = wb::Vec<float>::from_shape({p.size()});
    for (std::size_t i = 0; i < p.size(); ++i) out(i) = static_cast<float>(p[i]);
    return out;
}

}  // namespace wbtest
