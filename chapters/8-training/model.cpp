// Chapter 8 — your GPT, assembled from your chapters 1–7 (the forward) and your backwards
// (layers.cpp). Replace each WB_STUB() with the body; the spec of every function is its comment
// in model.hpp, the walk-through is in README.md ("The model, AdamW and checkpoints"). The
// parameter helpers are templates over the scalar type Real (float to train, double for the
// gradient checks); T is the sequence length, as everywhere in the workbook. The model itself runs in float, like chapters 2–7. Keep the instantiations at
// the end.
// Check your work with:  ctest --preset student -L chapter8  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 8  /  tools/workbook watch 8
#include "8-training/model.hpp"

#include "1-tensors/tensors.hpp"
#include "2-embedding/embedding.hpp"
#include "3-positions/positions.hpp"
#include "4-sdpa/sdpa.hpp"
#include "6-masks/masks.hpp"
#include "7-blocks/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace wb {
inline namespace WB_IMPL {

template <class Real>
GptParams<Real> init_gpt(const GptConfig& config, std::uint64_t seed) {
    // Spec: model.hpp, @throws first. Guide §10.
    (void)config, (void)seed;
    WB_STUB();
}

template <class Real>
GptParams<Real> zeros_like(const GptParams<Real>& params) {
    // Spec: model.hpp, @throws first. Guide §8.
    (void)params;
    WB_STUB();
}

template <class Real>
std::vector<ParamRef<Real>> parameters(GptParams<Real>& params) {
    // Spec: model.hpp, @throws first. Guide §10 (the order of model.hpp).
    (void)params;
    WB_STUB();
}

template <class Real>
std::vector<ParamRef<const Real>> parameters(const GptParams<Real>& params) {
    // Spec: model.hpp, @throws first. Guide §10 (the order of model.hpp).
    (void)params;
    WB_STUB();
}

NextToken shift_for_next_token(const TokenIds& tokens) {
    // Spec: model.hpp, @throws first. Guide §3.
    (void)tokens;
    WB_STUB();
}

float gpt_forward(const GptParams<float>& params, const GptConfig& config, const TokenIds& inputs,
                  const TokenIds& targets, std::int64_t ignore_index, GptCache<float>& cache) {
    // Spec: model.hpp, @throws first. Guide §10 (the forward, and what the cache keeps).
    (void)params, (void)config, (void)inputs, (void)targets, (void)ignore_index, (void)cache;
    WB_STUB();
}

Mat<float> gpt_logits(const GptParams<float>& params, const GptConfig& config,
                      const TokenIds& inputs) {
    // Spec: model.hpp, @throws first. Guide §10 and §8 (inference: the same forward without the
    // cache).
    (void)params, (void)config, (void)inputs;
    WB_STUB();
}

void gpt_backward(const GptParams<float>& params, const GptConfig& config,
                  const GptCache<float>& cache, GptParams<float>& grads) {
    // Spec: model.hpp, @throws first. Guide §11 (the forward in reverse; the residual's two paths).
    (void)params, (void)config, (void)cache, (void)grads;
    WB_STUB();
}

template <class Real>
void zero_grad(GptParams<Real>& grads) {
    // Spec: model.hpp, @throws first. Guide §8.
    (void)grads;
    WB_STUB();
}

// The two instantiations of the parameter helpers: float for training, double for the
// gradient checks. Keep them.
WB_INSTANTIATE_MODEL(float)
WB_INSTANTIATE_MODEL(double)

}  // namespace WB_IMPL
}  // namespace wb
