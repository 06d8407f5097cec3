// Chapter 8 — your GPT, assembled from your layers (layers.cpp). Replace each WB_STUB() with
// the body; the spec of every function is its comment in model.hpp, the walk-through is in
// README.md ("The model, AdamW and checkpoints"). Each function is a template over the scalar
// type T (float to train, double for the gradient checks): inside them T is the scalar type,
// so call the sequence length something else (`seq`). Keep the instantiations at the end.
// Check your work with:  ctest --preset student -L chapter8  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 8  /  tools/workbook watch 8
#include "8-training/model.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace wb {
inline namespace WB_IMPL {

template <class T>
GptParams<T> init_gpt(const GptConfig& config, std::uint64_t seed) {
    // Hint: reject a bad config first (ShapeError naming "wb::init_gpt" and V, T_max, D, H, L).
    // Size every tensor (Mat<T>::from_shape({V, D}) ...; w_fc is [4D, D], w_proj [D, 4D]).
    // Then walk parameters(p) with std::mt19937_64 gen(seed) and
    // std::normal_distribution<double>(0.0, 0.02): matrices random, gains (*_g) 1, the rest 0.
    (void)config, (void)seed;
    WB_STUB();
}

template <class T>
GptParams<T> zeros_like(const GptParams<T>& params) {
    // Hint: a copy has the right shapes; then zero it.
    (void)params;
    WB_STUB();
}

template <class T>
std::vector<ParamRef<T>> parameters(GptParams<T>& params) {
    // Hint: one push_back per tensor, in the order of model.hpp:
    // {name, t.data(), t.size(), Shape(t.shape().begin(), t.shape().end())}.
    // A generic lambda `[&](const std::string& name, auto& t) {...}` saves typing.
    (void)params;
    WB_STUB();
}

template <class T>
std::vector<ParamRef<const T>> parameters(const GptParams<T>& params) {
    // Hint: call the other overload through const_cast and copy each ParamRef into a
    // ParamRef<const T>; nothing is written through it.
    (void)params;
    WB_STUB();
}

NextToken shift_for_next_token(const TokenIds& tokens) {
    // Hint: inputs(b, t) = tokens(b, t) and targets(b, t) = tokens(b, t + 1) for t < T.
    // Reject B == 0 or fewer than 2 tokens per row (ShapeError).
    (void)tokens;
    WB_STUB();
}

template <class T>
T gpt_forward(const GptParams<T>& params, const GptConfig& config, const TokenIds& inputs,
              const TokenIds& targets, std::int64_t ignore_index, GptCache<T>& cache) {
    // Hint: check everything (require_valid_config, require_gpt_shapes, inputs, targets) before
    // computing. Then, with N = B·T rows (row b·T + t):
    //   x = wte[id] + wpe[t]                                             [N, D]
    //   per block: save x_in; ln1 = layer_norm_forward(x, ...); q, k, v = linear_forward(ln1,
    //     ...) split to [B, H, T, d] (row b·T + t, column h·d + i -> (b, h, t, i));
    //     causal_attention_forward; merge back; x_mid = x + linear_forward(att_out, w_o, b_o);
    //     ln2; fc; fc_gelu; x = x_mid + linear_forward(fc_gelu, w_proj, b_proj)
    //   ln_f = layer_norm_forward(x, ...); logits = linear_forward(ln_f, lm_head, empty bias)
    //   loss = cross_entropy_forward(logits, targets flattened to [N], ignore_index)
    // Store every intermediate in cache (the backward needs them) and set cache.has_loss.
    (void)params, (void)config, (void)inputs, (void)targets, (void)ignore_index, (void)cache;
    WB_STUB();
}

template <class T>
Mat<T> gpt_logits(const GptParams<T>& params, const GptConfig& config, const TokenIds& inputs) {
    // Hint: the forward without the loss. Write the forward up to the logits once, as a helper
    // in an anonymous namespace, and call it from here and from gpt_forward.
    (void)params, (void)config, (void)inputs;
    WB_STUB();
}

template <class T>
void gpt_backward(const GptParams<T>& params, const GptConfig& config, const GptCache<T>& cache,
                  GptParams<T>& grads) {
    // Hint: the forward in reverse, with the backward of each layer:
    //   dlogits = cross_entropy_backward; lm_head (linear_backward with an empty dbias);
    //   final LayerNorm -> dx. For l = L-1 down to 0:
    //     FFN branch: w_proj, gelu_backward, w_fc, LayerNorm 2 -> dbranch; dx_mid = dx + dbranch
    //     attention branch: w_o, split, causal_attention_backward, merge dq/dk/dv, the three
    //     projections (their dx's SUM into dln1), LayerNorm 1 -> dbranch; dx = dx_mid + dbranch
    //   embedding_backward(inputs, dx, grads.wte); grads.wpe row t += dx rows b·T + t.
    // Every parameter gradient is ADDED into grads.
    (void)params, (void)config, (void)cache, (void)grads;
    WB_STUB();
}

template <class T>
void zero_grad(GptParams<T>& grads) {
    // Hint: every tensor of parameters(grads), not only the first.
    (void)grads;
    WB_STUB();
}

// The two instantiations: float for training, double for the gradient checks. Keep them.
#define WB_INSTANTIATE_MODEL(T)                                                                  \
    template GptParams<T> init_gpt<T>(const GptConfig&, std::uint64_t);                        \
    template GptParams<T> zeros_like<T>(const GptParams<T>&);                                   \
    template std::vector<ParamRef<T>> parameters<T>(GptParams<T>&);                             \
    template std::vector<ParamRef<const T>> parameters<T>(const GptParams<T>&);                 \
    template T gpt_forward<T>(const GptParams<T>&, const GptConfig&, const TokenIds&,           \
                              const TokenIds&, std::int64_t, GptCache<T>&);                     \
    template Mat<T> gpt_logits<T>(const GptParams<T>&, const GptConfig&, const TokenIds&);      \
    template void gpt_backward<T>(const GptParams<T>&, const GptConfig&, const GptCache<T>&,    \
                                  GptParams<T>&);                                               \
    template void zero_grad<T>(GptParams<T>&);

WB_INSTANTIATE_MODEL(float)
WB_INSTANTIATE_MODEL(double)

#undef WB_INSTANTIATE_MODEL

}  // namespace WB_IMPL
}  // namespace wb
