// The random GPT of the fast engines' checks (GptTrainer, GptDecoder against chapter 8 and 9).
#pragma once

#include <cstdint>
#include <random>

#include "8-training/model.hpp"

namespace wbtest {

/// A model whose every tensor is random, biases and LayerNorm parameters included: init_gpt
/// sets those to 0 and 1, which would hide a missing bias or a swapped gamma, and the larger
/// weights keep the logits far from uniform (so greedy decoding has clear winners).
inline wb::GptParams<float> random_model(const wb::GptConfig& c, unsigned seed) {
    wb::GptParams<float> p = wb::init_gpt<float>(c, seed);
    std::mt19937 gen(seed + 100);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& r : wb::parameters(p)) {
        const bool matrix = r.shape.size() == 2;
        for (std::size_t i = 0; i < r.size; ++i) r.data[i] += (matrix ? 0.2f : 0.3f) * normal(gen);
    }
    return p;
}

/// Random ids [B, T] in [0, V); with `ignored`, about one target in four is -1.
inline wb::TokenIds random_ids(std::size_t B, std::size_t T, std::size_t V, unsigned seed,
                               bool ignored) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::int64_t> id(0, static_cast<std::int64_t>(V) - 1);
    std::uniform_int_distribution<int> coin(0, 3);
    wb::TokenIds ids = wb::TokenIds::from_shape({B, T});
    for (auto& x : ids) x = ignored && coin(gen) == 0 ? -1 : id(gen);
    return ids;
}

}  // namespace wbtest
