// The data-parallel checks' fixed inputs, shared by the MPI worker (which runs the chapter's
// functions on every rank) and the checks (which compute the expected values in one process
// with chapter 8's functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"

namespace wbtest {

// A tiny GPT: V = 11, T_max = 8, D = 8, H = 2, L = 1, learned positions.
inline wb::GptConfig dp_config() { return wb::GptConfig{11, 8, 8, 2, 1}; }

// The model every rank starts from (rank 0's, after the broadcast).
inline constexpr std::uint64_t kDpSeed = 7;

// The global batch of the bit-identity checks: B = 6 sequences of T + 1 = 6 tokens, so 4
// ranks hold 2, 2, 1 and 1 of them (uneven shards).
inline constexpr std::size_t kDpBatch = 6;
inline constexpr std::size_t kDpTokens = 6;
// The batch of the MPI_Allreduce checks: 8 sequences, an equal share for 1, 2 or 4 ranks.
inline constexpr std::size_t kDpEvenBatch = 8;
// Training steps of the bit-identity check.
inline constexpr int kDpSteps = 5;

// Batch `step` of B sequences: ids drawn from mt19937_64(1000 + step), the same on every rank.
inline wb::TokenIds dp_batch(std::size_t B, int step) {
    std::mt19937_64 gen(1000 + static_cast<std::uint64_t>(step));
    wb::TokenIds t = wb::TokenIds::from_shape({B, kDpTokens});
    for (auto& x : t) x = static_cast<std::int64_t>(gen() % dp_config().V);
    return t;
}

inline wb::AdamWConfig dp_adamw() {
    wb::AdamWConfig c;
    c.lr = 1e-2f;
    return c;
}

// Rank r's gradients in the checks of the mean: element i is (i mod 7 + r) / 4, exact in float,
// so that every order of addition gives the same sum.
inline float dp_grad_value(std::size_t i, int rank) {
    return static_cast<float>(static_cast<int>(i % 7) + rank) * 0.25f;
}

}  // namespace wbtest
