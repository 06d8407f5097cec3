// Chapter 8, a second answer: AdamW with every check done up front, the bias corrections in
// double, one element at a time.
#include "8-training/optim.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace wb {
inline namespace WB_IMPL {

namespace {

void refuse(const char* field, double value, const char* rule) {
    std::ostringstream text;
    text << "wb::adamw_step: config." << field << " = " << value << " is not allowed: " << rule;
    throw ValueError(text.str());
}

}  // namespace

template <class Real>
void adamw_step(GptParams<Real>& params, const GptParams<Real>& grads, AdamWState<Real>& state,
                const AdamWConfig& config) {
    const char* fn = "wb::adamw_step";
    // Betas first, then the rest: the header leaves the order free.
    if (!(config.beta1 >= 0.0f && config.beta1 < 1.0f))
        refuse("beta1", config.beta1, "need [0, 1)");
    if (!(config.beta2 >= 0.0f && config.beta2 < 1.0f))
        refuse("beta2", config.beta2, "need [0, 1)");
    if (!(config.lr > 0.0f) || std::isinf(config.lr))
        refuse("lr", config.lr, "need a finite lr > 0");
    if (!(config.eps > 0.0f) || std::isinf(config.eps))
        refuse("eps", config.eps, "need a finite eps > 0");
    if (!(config.weight_decay >= 0.0f) || std::isinf(config.weight_decay)) {
        refuse("weight_decay", config.weight_decay, "need a finite weight_decay >= 0");
    }
    if (state.step < 0 || state.step == std::numeric_limits<std::int64_t>::max()) {
        throw ValueError(std::string(fn) + ": state.step = " + std::to_string(state.step) +
                         " cannot take another step (need 0 <= step < 2^63 - 1)");
    }
    // The step itself must stay finite: the decay lr·wd and the first moment's step lr / c1.
    const Real c1_next =
        static_cast<Real>(1.0 - std::pow(double(config.beta1), double(state.step) + 1.0));
    if (!std::isfinite(Real(config.lr) * Real(config.weight_decay)) ||
        !std::isfinite(Real(config.lr) / c1_next)) {
        refuse("lr", config.lr,
               "need an lr whose step, lr * weight_decay and lr / (1 - beta1^t), "
               "is finite");
    }
    std::vector<ParamRef<Real>> p = parameters(params);
    const std::vector<ParamRef<const Real>> g = parameters(grads);
    if (g.size() != p.size()) {
        throw ShapeError(std::string(fn) + ": grads has " + std::to_string(g.size()) +
                         " tensors, params has " + std::to_string(p.size()));
    }
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (g[i].size != p[i].size) {
            throw ShapeError(std::string(fn) + ": grads tensor " + g[i].name + " has " +
                             std::to_string(g[i].size) + " elements, params tensor " + p[i].name +
                             " has " + std::to_string(p[i].size));
        }
    }
    const bool fresh = state.m.empty() && state.v.empty();
    if (!fresh) {
        if (state.m.size() != p.size() || state.v.size() != p.size()) {
            throw ShapeError(std::string(fn) + ": state holds " + std::to_string(state.m.size()) +
                             " m and " + std::to_string(state.v.size()) +
                             " v tensors, params has " + std::to_string(p.size()));
        }
        for (std::size_t i = 0; i < p.size(); ++i) {
            if (state.m[i].size() != p[i].size || state.v[i].size() != p[i].size) {
                throw ShapeError(std::string(fn) + ": state's moments of " + p[i].name + " have " +
                                 std::to_string(state.m[i].size()) + " and " +
                                 std::to_string(state.v[i].size()) + " elements, expected " +
                                 std::to_string(p[i].size));
            }
        }
    } else {
        for (const ParamRef<Real>& r : p) {
            state.m.push_back(xt::zeros<Real>({r.size}));
            state.v.push_back(xt::zeros<Real>({r.size}));
        }
    }
    state.step += 1;
    const double t = double(state.step);
    const Real lr = config.lr, wd = config.weight_decay, b1 = config.beta1, b2 = config.beta2,
               eps = config.eps;
    const Real c1 = static_cast<Real>(1.0 - std::pow(double(b1), t));
    const Real c2 = static_cast<Real>(1.0 - std::pow(double(b2), t));
    for (std::size_t i = 0; i < p.size(); ++i) {
        Real* w = p[i].data;
        const Real* grad = g[i].data;
        Real* m = state.m[i].data();
        Real* v = state.v[i].data();
        for (std::size_t j = 0; j < p[i].size; ++j) {
            w[j] -= lr * wd * w[j];
            m[j] = b1 * m[j] + (Real(1) - b1) * grad[j];
            v[j] = b2 * v[j] + (Real(1) - b2) * grad[j] * grad[j];
            const Real mhat = m[j] / c1, vhat = v[j] / c2;
            w[j] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
    }
}

WB_INSTANTIATE_ADAMW(float)
WB_INSTANTIATE_ADAMW(double)

}  // namespace WB_IMPL
}  // namespace wb
