// Chapter 8 — reference implementation: AdamW, step for step as torch.optim.AdamW
// (torch/optim/adamw.py, _single_tensor_adamw, amsgrad off).
#include "8-training/optim.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace wb {
inline namespace WB_IMPL {

namespace {

const std::string kAdamW = "wb::adamw_step";

std::string value_str(float v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

void check_config(const AdamWConfig& c) {
    auto bad = [](const char* field, float v, const char* expected) {
        throw ValueError(kAdamW + ": " + field + " = " + value_str(v) + ", expected " + expected);
    };
    if (!(c.lr > 0.0f) || !std::isfinite(c.lr)) bad("lr", c.lr, "> 0 and finite");
    if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f)) bad("beta1", c.beta1, "in [0, 1)");
    if (!(c.beta2 >= 0.0f && c.beta2 < 1.0f)) bad("beta2", c.beta2, "in [0, 1)");
    if (!(c.eps > 0.0f) || !std::isfinite(c.eps)) bad("eps", c.eps, "> 0 and finite");
    if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay)) {
        bad("weight_decay", c.weight_decay, ">= 0 and finite");
    }
}

}  // namespace

template <class Real>
void adamw_step(GptParams<Real>& params, const GptParams<Real>& grads, AdamWState<Real>& state,
                const AdamWConfig& config) {
    check_config(config);
    if (state.step < 0 || state.step == std::numeric_limits<std::int64_t>::max()) {
        throw ValueError(kAdamW + ": state.step = " + std::to_string(state.step) +
                         ", expected a count in [0, 2^63 - 1) (one more step must fit)");
    }
    {
        // A finite lr can still make the step itself overflow: the decay lr·wd and the step size
        // lr / (1 − β1ᵗ) of this step (t = step + 1) must be finite in Real, or every parameter
        // the step touches would become inf or NaN.
        const Real lr_r = static_cast<Real>(config.lr);
        const Real decay = lr_r * static_cast<Real>(config.weight_decay);
        const Real first_moment_scale =
            Real(1) - std::pow(static_cast<Real>(config.beta1), static_cast<Real>(state.step + 1));
        const Real largest_step = lr_r / first_moment_scale;
        if (!std::isfinite(decay) || !std::isfinite(largest_step)) {
            throw ValueError(
                kAdamW + ": lr = " + value_str(config.lr) +
                " at step t = " + std::to_string(state.step + 1) +
                " gives a decay lr * weight_decay = " + value_str(static_cast<float>(decay)) +
                " and a step size lr / (1 - beta1^t) = " +
                value_str(static_cast<float>(largest_step)) +
                ", expected both finite (a smaller lr)");
        }
    }
    std::vector<ParamRef<Real>> p = parameters(params);
    const std::vector<ParamRef<const Real>> g = parameters(grads);
    if (g.size() != p.size()) {
        throw ShapeError(kAdamW + ": grads have " + std::to_string(g.size()) +
                         " tensors, params have " + std::to_string(p.size()));
    }
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (g[i].shape != p[i].shape) {
            throw ShapeError(kAdamW + ": grad of " + p[i].name + " has shape " +
                             shape_str(g[i].shape) + ", the parameter has shape " +
                             shape_str(p[i].shape));
        }
    }

    // First step: the moments start at 0 (which is why they need the bias correction).
    if (state.step == 0 && state.m.empty() && state.v.empty()) {
        for (const ParamRef<Real>& r : p) {
            Vec<Real> zeros = Vec<Real>::from_shape({r.size});  // [size], flat like the parameter
            zeros.fill(Real(0));
            state.m.push_back(zeros);
            state.v.push_back(zeros);
        }
    }
    if (state.m.size() != p.size() || state.v.size() != p.size()) {
        throw ShapeError(kAdamW + ": the state has " + std::to_string(state.m.size()) + " m and " +
                         std::to_string(state.v.size()) + " v tensors, params have " +
                         std::to_string(p.size()) + " (a state of another model?)");
    }
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (state.m[i].size() != p[i].size || state.v[i].size() != p[i].size) {
            throw ShapeError(kAdamW + ": the state of " + p[i].name + " has " +
                             std::to_string(state.m[i].size()) + " m and " +
                             std::to_string(state.v[i].size()) + " v values, the parameter has " +
                             std::to_string(p[i].size) + " elements (a state of another model?)");
        }
    }

    state.step += 1;
    const Real lr = config.lr, beta1 = config.beta1, beta2 = config.beta2, eps = config.eps;
    const Real wd = config.weight_decay;
    const Real t = static_cast<Real>(state.step);
    const Real bias_correction1 = Real(1) - std::pow(beta1, t);
    const Real bias_correction2_sqrt = std::sqrt(Real(1) - std::pow(beta2, t));
    const Real step_size = lr / bias_correction1;

    for (std::size_t i = 0; i < p.size(); ++i) {
        Real* w = p[i].data;
        const Real* dw = g[i].data;
        Real* m = state.m[i].data();
        Real* v = state.v[i].data();
        for (std::size_t j = 0; j < p[i].size; ++j) {
            w[j] *= Real(1) - lr * wd;  // decoupled weight decay: shrink p itself, not its gradient
            m[j] = beta1 * m[j] + (Real(1) - beta1) * dw[j];
            v[j] = beta2 * v[j] + (Real(1) - beta2) * dw[j] * dw[j];
            // p -= lr · m̂ / (sqrt(v̂) + eps), with m̂ = m / bc1 and sqrt(v̂) = sqrt(v) / sqrt(bc2)
            const Real denom = std::sqrt(v[j]) / bias_correction2_sqrt + eps;
            w[j] -= step_size * m[j] / denom;
        }
    }
}

WB_INSTANTIATE_ADAMW(float)
WB_INSTANTIATE_ADAMW(double)

}  // namespace WB_IMPL
}  // namespace wb
