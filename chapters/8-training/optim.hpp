/// @file optim.hpp
/// @brief Chapter 8 — AdamW, the optimizer of §21.7 (`torch.optim.AdamW`).
///
/// `backward` only computes gradients; `optimizer.step()` is what changes the parameters
/// (§21.7). AdamW keeps, for every parameter element, a running mean of its gradient (m) and
/// of its squared gradient (v), and moves the parameter by the ratio of the two; weight decay
/// is applied to the parameter directly, apart from the gradient ("decoupled").
#pragma once

#include <cstdint>
#include <vector>

#include "8-training/layers.hpp"
#include "8-training/model.hpp"
#include "workbook/core.hpp"

namespace wb {

/// @addtogroup chapter8
/// @{

/// AdamW's hyper-parameters, with PyTorch's defaults except weight decay (torch: 0.01 too).
struct AdamWConfig {
    float lr = 1e-3f;            ///< learning rate, > 0
    float beta1 = 0.9f;          ///< decay of the gradient mean m, in [0, 1)
    float beta2 = 0.999f;        ///< decay of the squared-gradient mean v, in [0, 1)
    float eps = 1e-8f;           ///< added to sqrt(v̂) so the division is safe, > 0
    float weight_decay = 0.01f;  ///< decoupled decay: `p -= lr · weight_decay · p`, >= 0
};

/// What AdamW remembers between steps: it must be saved to resume training (§21.9).
template <class Real>
struct AdamWState {
    std::int64_t step = 0;     ///< steps taken so far (t of the bias correction)
    std::vector<Vec<Real>> m;  ///< first moments, one flat `[size]` per tensor of parameters()
    std::vector<Vec<Real>> v;  ///< second moments, same layout
};

/// @}

inline namespace WB_IMPL {

/// @addtogroup chapter8
/// @{

/// One AdamW step, exactly as `torch.optim.AdamW` (amsgrad off). With t = state.step + 1,
/// for every element p of every tensor and its gradient g:
/// ```
///   p ← p − lr·wd·p                               decoupled weight decay (first, as torch)
///   m ← β1·m + (1 − β1)·g                          mean of the gradient
///   v ← β2·v + (1 − β2)·g²                         mean of the squared gradient
///   m̂ = m / (1 − β1ᵗ),  v̂ = v / (1 − β2ᵗ)          bias correction (m, v start at 0)
///   p ← p − lr · m̂ / (sqrt(v̂) + eps)
/// ```
/// <!-- clause: adamw_step.update -->
/// Weight decay is applied to **every** parameter, biases and LayerNorm gains included, as
/// torch does when given `model.parameters()` (nanoGPT excludes 1-D tensors with parameter
/// groups; this workbook keeps the default). <!-- clause: adamw_step.decay-every-tensor --> Adding `wd·p` to the gradient instead is Adam
/// with L2 regularisation, a different optimizer.
///
/// On the first call (`state.step == 0` and `state.m` empty) m and v are created as zeros,
/// one `[size]` vector per tensor of parameters() <!-- clause: adamw_step.state-created -->; then state.step is incremented
/// (by one per call, from whatever value it held). <!-- clause: adamw_step.step-counted -->
/// @param params updated in place
/// @param grads the gradients, shaped like params
/// @param state the moments and the step count, updated
/// @param config the hyper-parameters
/// @throws ValueError if lr <= 0, beta1 or beta2 is outside [0, 1), eps <= 0 or
///         weight_decay < 0, or lr, eps or weight_decay is infinite or NaN (the message names
///         the field and its value) <!-- clause: adamw_step.bad-config -->; or if state.step is negative or 2^63 − 1 (one more step
///         would overflow; the message names state.step and its value) <!-- clause: adamw_step.bad-step -->; all checked before anything is changed
///         (params, state.step, state.m and state.v are left as they were) <!-- clause: adamw_step.checked-first -->
/// @throws ValueError naming wb::adamw_step and lr, before anything is changed, if lr is finite
///         but the step it makes is not: the decay lr·weight_decay or the step size
///         lr / (1 − beta1ᵗ) overflows (lr = 3e38, beta1 = 0.9: 3e39, inf in float); expected
///         both finite. <!-- clause: adamw_step.finite-step -->
/// @throws ShapeError if grads' tensors differ in number or size from params' (the message names the
///         tensor, e.g. `blocks.1.b_q`), or a non-empty state does not match them (e.g. a state restored for another
///         model; the message names the state) <!-- clause: adamw_step.shape-mismatch -->
template <class Real>
void adamw_step(GptParams<Real>& params, const GptParams<Real>& grads, AdamWState<Real>& state,
                const AdamWConfig& config);

/// @}

}  // namespace WB_IMPL
}  // namespace wb

/// The explicit instantiations of adamw_step for one scalar type, written once for the stub and
/// the reference: each `.cpp` ends with `WB_INSTANTIATE_ADAMW(float)` and
/// `WB_INSTANTIATE_ADAMW(double)`, inside the chapter's namespaces.
/// @param Real the scalar type: float or double
#define WB_INSTANTIATE_ADAMW(Real)                                                              \
    template void adamw_step<Real>(GptParams<Real>&, const GptParams<Real>&, AdamWState<Real>&, \
                                   const AdamWConfig&);
