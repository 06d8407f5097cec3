// Style answer for chapter 2 (tools/test-styles): plain index loops over the tensors instead of
// views and linalg::dot, products summed in double, the 3-D forwards one token at a time
// (no reshape), next_token_logits checks the layer before T, and messages worded unlike the
// reference but naming each fact embedding.hpp promises. It exists because it is a correct
// answer: every check of chapter 2 must accept it.
#include "2-embedding/embedding.hpp"

#include <cmath>
#include <random>
#include <string>

namespace wb {
inline namespace WB_IMPL {
namespace {

// The layer's shape checks, shared by every forward: `got` is the caller's input shape.
template <class S>
void check_layer(const std::string& fn, const char* input, const S& got, std::size_t last,
                 const Linear& layer) {
    const std::size_t out = layer.weight.shape(0);
    const std::size_t in = layer.weight.shape(1);
    if (out == 0 || in == 0) {
        throw ShapeError(fn + ": the weight is empty (shape " + shape_str(layer.weight.shape()) +
                         "); a layer needs in >= 1 and out >= 1");
    }
    if (last != in) {
        throw ShapeError(fn + ": " + input + " is " + shape_str(got) +
                         " and the weight [out, in] is " + shape_str(layer.weight.shape()) +
                         "; the last axis of " + input + " must equal in = " + num(in));
    }
    if (layer.bias.size() != 0 && layer.bias.size() != out) {
        throw ShapeError(fn + ": bias of size " + num(layer.bias.size()) +
                         " fits neither a layer without bias (size 0) nor out = " + num(out));
    }
}

// One row: y[o] = sum_i x[i] W[o, i] + b[o], summed in double.
void project_row(const float* x, const Linear& layer, float* y) {
    const std::size_t out = layer.weight.shape(0);
    const std::size_t in = layer.weight.shape(1);
    const bool has_bias = layer.bias.size() == out;
    for (std::size_t o = 0; o < out; ++o) {
        double acc = has_bias ? double(layer.bias(o)) : 0.0;
        for (std::size_t i = 0; i < in; ++i) acc += double(x[i]) * double(layer.weight(o, i));
        y[o] = static_cast<float>(acc);
    }
}

Tensor3 forward3(const std::string& fn, const char* input, const Tensor3& x, const Linear& layer) {
    check_layer(fn, input, x.shape(), x.shape(2), layer);
    const std::size_t B = x.shape(0), T = x.shape(1), out = layer.weight.shape(0);
    Tensor3 y = Tensor3::from_shape({B, T, out});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) project_row(&x(b, t, 0), layer, &y(b, t, 0));
    }
    return y;
}

}  // namespace

Tensor2 init_embedding(std::size_t V, std::size_t D, std::uint32_t seed) {
    checked_size("wb::init_embedding", "V x D", {V, D});
    if (V == 0 || D == 0) {
        throw ShapeError("wb::init_embedding: cannot make a table of V = " + num(V) +
                         " rows and D = " + num(D) + " columns; both must be at least 1");
    }
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Tensor2 table = Tensor2::from_shape({V, D});
    for (std::size_t v = 0; v < V; ++v) {
        for (std::size_t d = 0; d < D; ++d) table(v, d) = normal(gen);
    }
    return table;
}

Linear init_linear(std::size_t in, std::size_t out, bool bias, std::uint32_t seed) {
    if (in == 0 || out == 0) {
        throw ShapeError("wb::init_linear: in = " + num(in) + ", out = " + num(out) +
                         "; a layer needs both to be at least 1");
    }
    checked_size("wb::init_linear", "out x in", {out, in});
    const float k = 1.0f / std::sqrt(static_cast<float>(in));
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> uniform(-k, k);
    Linear layer;
    layer.weight = Tensor2::from_shape({out, in});
    for (std::size_t o = 0; o < out; ++o) {
        for (std::size_t i = 0; i < in; ++i) layer.weight(o, i) = uniform(gen);
    }
    layer.bias = Tensor1::from_shape({bias ? out : std::size_t(0)});
    for (std::size_t o = 0; o < layer.bias.size(); ++o) layer.bias(o) = uniform(gen);
    return layer;
}

Tensor3 embed(const Tensor2& table, const TokenIds& ids) {
    const std::size_t V = table.shape(0), D = table.shape(1);
    if (V == 0 || D == 0) {
        throw ShapeError("wb::embed: the table " + shape_str(table.shape()) +
                         " is empty; expected V >= 1 rows of D >= 1");
    }
    const std::size_t B = ids.shape(0), T = ids.shape(1);
    Tensor3 out = Tensor3::from_shape({B, T, D});
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = ids(b, t);
            if (id < 0 || id >= static_cast<std::int64_t>(V)) {
                throw ValueError("wb::embed: token id " + std::to_string(id) + " at [" + num(b) +
                                 ", " + num(t) + "] has no row; ids must lie in [0, " + num(V) +
                                 ") (V = " + num(V) + ")");
            }
            const auto row = static_cast<std::size_t>(id);
            for (std::size_t d = 0; d < D; ++d) out(b, t, d) = table(row, d);
        }
    }
    return out;
}

Tensor2 linear(const Tensor2& x, const Linear& layer) {
    check_layer("wb::linear", "x", x.shape(), x.shape(1), layer);
    const std::size_t N = x.shape(0), out = layer.weight.shape(0);
    Tensor2 y = Tensor2::from_shape({N, out});
    for (std::size_t n = 0; n < N; ++n) project_row(&x(n, 0), layer, &y(n, 0));
    return y;
}

Tensor3 linear(const Tensor3& x, const Linear& layer) {
    return forward3("wb::linear", "x", x, layer);
}

Tensor3 lm_head(const Tensor3& h, const Linear& head) {
    return forward3("wb::lm_head", "h", h, head);
}

Tensor2 next_token_logits(const Tensor3& h, const Linear& head) {
    check_layer("wb::next_token_logits", "h", h.shape(), h.shape(2), head);
    const std::size_t B = h.shape(0), T = h.shape(1), V = head.weight.shape(0);
    if (T == 0) {
        throw ShapeError("wb::next_token_logits: h " + shape_str(h.shape()) +
                         " has T = 0 positions, so no last one; expected T >= 1");
    }
    Tensor2 logits = Tensor2::from_shape({B, V});
    for (std::size_t b = 0; b < B; ++b) project_row(&h(b, T - 1, 0), head, &logits(b, 0));
    return logits;
}

}  // namespace WB_IMPL
}  // namespace wb
