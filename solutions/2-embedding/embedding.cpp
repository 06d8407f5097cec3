// Chapter 2 — reference implementation.
#include "2-embedding/embedding.hpp"

#include <cmath>
#include <random>
#include <string>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace wb {
inline namespace WB_IMPL {

namespace {

// The checks every Linear forward shares. `function` and `x_shape` are the caller's, so the
// message names what the student passed in (e.g. h [B, T, D]), not an internal reshape.
template <class S>
void check_layer(const char* function, const char* what, const S& x_shape, const Linear& layer) {
    const Tensor2& W = layer.weight;  // [out, in]
    if (W.size() == 0) {
        throw ShapeError(std::string(function) + ": weight [out, in] has shape " +
                         shape_str(W.shape()) + ", expected in >= 1 and out >= 1");
    }
    const std::size_t out = W.shape(0), in = W.shape(1);
    if (x_shape.back() != in) {
        throw ShapeError(std::string(function) + ": " + what + " has shape " + shape_str(x_shape) +
                         ", but weight [out, in] has shape " + shape_str(W.shape()) +
                         ": the last axis of x must be in = " + std::to_string(in));
    }
    if (layer.bias.size() != 0 && layer.bias.size() != out) {
        throw ShapeError(std::string(function) + ": bias has shape " +
                         shape_str(layer.bias.shape()) + ", but weight [out, in] has shape " +
                         shape_str(W.shape()) + ": expected [" + std::to_string(out) +
                         "] (out) or [0] (no bias)");
    }
}

// y = x Wᵀ + b on rows. x2 [N, in] (already checked) -> [N, out].
template <class E>
Tensor2 rows_times_weight_t(const E& x2, const Linear& layer) {
    const std::size_t N = x2.shape(0), out = layer.weight.shape(0);
    if (N == 0) return Tensor2::from_shape({0, out});
    // One BLAS matrix product for all N rows: [N, in] · [in, out].
    Tensor2 y = xt::linalg::dot(x2, xt::transpose(layer.weight));  // [N, out]
    if (layer.bias.size() != 0) {
        y += xt::view(layer.bias, xt::newaxis(), xt::all());  // [1, out] broadcast over rows
    }
    return y;
}

// Shared by lm_head and linear: [B, T, in] -> [B, T, out] through one [B*T, in] product.
Tensor3 tokens_times_weight_t(const Tensor3& x, const Linear& layer) {
    const std::size_t B = x.shape(0), T = x.shape(1), in = x.shape(2);
    const std::size_t out = layer.weight.shape(0);
    // Merging B and T keeps every token's features together: row b*T + t is x[b, t, :].
    auto x2 = xt::reshape_view(x, {B * T, in});     // [B*T, in], no copy
    Tensor2 y2 = rows_times_weight_t(x2, layer);    // [B*T, out]
    Tensor3 y = xt::reshape_view(y2, {B, T, out});  // [B, T, out]
    return y;
}

}  // namespace

Tensor2 init_embedding(std::size_t V, std::size_t D, std::uint32_t seed) {
    if (V == 0 || D == 0) {
        throw ShapeError("wb::init_embedding: got V = " + std::to_string(V) +
                         " and D = " + std::to_string(D) + ", expected both >= 1");
    }
    checked_size("wb::init_embedding", "the table [V, D]", {V, D});
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);  // nn.Embedding: N(0, 1)
    Tensor2 table = Tensor2::from_shape({V, D});         // [V, D]
    for (auto& v : table) v = normal(gen);               // row-major: row 0 first
    return table;
}

Linear init_linear(std::size_t in, std::size_t out, bool bias, std::uint32_t seed) {
    if (in == 0 || out == 0) {
        throw ShapeError("wb::init_linear: got in = " + std::to_string(in) +
                         " and out = " + std::to_string(out) + ", expected both >= 1");
    }
    // nn.Linear: U(-k, k) with k = 1/sqrt(fan-in), for the weight and the bias alike.
    // The fan-in keeps the variance of each output near that of one input feature.
    checked_size("wb::init_linear", "the weight [out, in]", {out, in});
    const float k = 1.0f / std::sqrt(static_cast<float>(in));
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> uniform(-k, k);
    Linear layer;
    layer.weight = Tensor2::from_shape({out, in});  // [out, in]
    for (auto& w : layer.weight) w = uniform(gen);
    layer.bias = Tensor1::from_shape({bias ? out : 0});  // [out] or [0]
    for (auto& b : layer.bias) b = uniform(gen);
    return layer;
}

Tensor3 embed(const Tensor2& table, const TokenIds& ids) {
    require_nonempty("wb::embed", "table [V, D]", table);
    const std::size_t V = table.shape(0), D = table.shape(1);
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    Tensor3 out = Tensor3::from_shape({B, T, D});  // [B, T, D]
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            // A bad id must not read outside the table: check before the lookup.
            if (id < 0 || id >= static_cast<std::int64_t>(V)) {
                throw ValueError("wb::embed: token id " + std::to_string(id) + " at position " +
                                 shape_str(Shape{b, t}) +
                                 " is out of range for a table of V = " + std::to_string(V) +
                                 " rows (ids must be in [0, " + std::to_string(V) + "))");
            }
            // The lookup is a row copy: token id -> row id of the table.
            xt::view(out, b, t, xt::all()) = xt::view(table, id, xt::all());
        }
    }
    return out;
}

Tensor2 linear(const Tensor2& x, const Linear& layer) {
    check_layer("wb::linear", "x [N, in]", x.shape(), layer);
    return rows_times_weight_t(x, layer);
}

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    check_layer("wb::linear", "x [B, T, in]", x.shape(), layer);
    return tokens_times_weight_t(x, layer);
}

Tensor3 lm_head(const Tensor3& h, const Linear& head) {
    check_layer("wb::lm_head", "h [B, T, D]", h.shape(), head);
    return tokens_times_weight_t(h, head);  // [B, T, V]
}

Tensor2 next_token_logits(const Tensor3& h, const Linear& head) {
    if (h.shape(1) == 0) {
        throw ShapeError("wb::next_token_logits: h [B, T, D] has shape " + shape_str(h.shape()) +
                         ", expected T >= 1 (the last position predicts the next token)");
    }
    check_layer("wb::next_token_logits", "h [B, T, D]", h.shape(), head);
    const std::size_t T = h.shape(1);
    // Generation only needs the last position: project [B, D], not all of [B, T, D].
    Tensor2 last = xt::view(h, xt::all(), T - 1, xt::all());  // [B, D]
    return rows_times_weight_t(last, head);                   // [B, V]
}

}  // namespace WB_IMPL
}  // namespace wb
