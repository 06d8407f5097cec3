// Test-side helpers of chapter 9: a small GPT with weights large enough that attention is far
// from uniform (so a decode that forgets the history or the position cannot hide in rounding),
// built here field by field, independently of chapter 8's init_gpt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "8-training/model.hpp"
#include "check.hpp"

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

inline wb::Mat<float> rand_mat(std::size_t r, std::size_t c, unsigned seed, float scale) {
    return randn<wb::Mat<float>>({r, c}, seed) * scale;
}
inline wb::Vec<float> rand_vec(std::size_t n, unsigned seed, float scale, float offset = 0.0f) {
    return randn<wb::Vec<float>>({n}, seed) * scale + offset;
}

// Every matrix N(0, 0.5²), biases N(0, 0.1²), LayerNorm gamma 1 + N(0, 0.1²), beta N(0, 0.1²).
// With RoPE, wpe is [0, D] (the model has no position table); every other tensor is the same
// for both position kinds and the same seed.
inline wb::GptParams<float> small_model(const wb::GptConfig& c, unsigned seed) {
    const std::size_t D = c.D;
    unsigned s = seed * 1000;
    wb::GptParams<float> p;
    p.wte = rand_mat(c.V, D, ++s, 1.0f);
    p.wpe = rand_mat(c.positions == wb::Positions::rope ? 0 : c.T_max, D, ++s, 1.0f);
    p.blocks.resize(c.L);
    for (auto& b : p.blocks) {
        b.ln1_g = rand_vec(D, ++s, 0.1f, 1.0f);
        b.ln1_b = rand_vec(D, ++s, 0.1f);
        b.w_q = rand_mat(D, D, ++s, 0.5f);
        b.b_q = rand_vec(D, ++s, 0.1f);
        b.w_k = rand_mat(D, D, ++s, 0.5f);
        b.b_k = rand_vec(D, ++s, 0.1f);
        b.w_v = rand_mat(D, D, ++s, 0.5f);
        b.b_v = rand_vec(D, ++s, 0.1f);
        b.w_o = rand_mat(D, D, ++s, 0.5f);
        b.b_o = rand_vec(D, ++s, 0.1f);
        b.ln2_g = rand_vec(D, ++s, 0.1f, 1.0f);
        b.ln2_b = rand_vec(D, ++s, 0.1f);
        b.w_fc = rand_mat(4 * D, D, ++s, 0.5f);
        b.b_fc = rand_vec(4 * D, ++s, 0.1f);
        b.w_proj = rand_mat(D, 4 * D, ++s, 0.3f);
        b.b_proj = rand_vec(D, ++s, 0.1f);
    }
    p.ln_f_g = rand_vec(D, ++s, 0.1f, 1.0f);
    p.ln_f_b = rand_vec(D, ++s, 0.1f);
    p.lm_head = rand_mat(c.V, D, ++s, 0.7f);
    return p;
}

// Row r of a [rows, V] matrix as a [1, V] matrix, for WB_CHECK_CLOSE against [B, V] rows.
inline wb::Mat<float> row_of(const wb::Mat<float>& m, std::size_t r) {
    wb::Mat<float> out = wb::Mat<float>::from_shape({1, m.shape(1)});
    for (std::size_t j = 0; j < m.shape(1); ++j) out(0, j) = m(r, j);
    return out;
}

}  // namespace wbtest
