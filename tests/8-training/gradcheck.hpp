// The gradient check of chapter 8: central differences in double precision.
//
// A backward is right when the gradient it returns (the "analytic" gradient) agrees with the
// slope of the loss measured by nudging each input element up and down:
//
//     numeric_k = (L(x + h e_k) − L(x − h e_k)) / (2h)
//
// The central difference has an error of order h² (the h terms of the two Taylor series
// cancel), and rounding adds about eps·|L| / h. In double (eps ≈ 2.2e-16), h = 1e-5 puts both
// near 1e-10: far below any mistake in a formula, which shows at 1e-2 or more. In float
// (eps ≈ 1.2e-7) the rounding term alone would be about 1e-2 — as large as the mistakes —
// which is why the layers are templates and the checks instantiate them in double.
//
// Usage (x is the tensor whose gradient is checked, `loss` recomputes L from the current x):
//
//     const auto r = wbtest::gradcheck([&] { return loss_of(x); }, x, dx_analytic);
//     WB_CHECK_GRAD(r, "dx", "hint naming the likely mistake");
//
// The report names the worst element: its index, the analytic and numeric values, and the
// error |analytic − numeric| / max(|analytic|, |numeric|, 1): relative for gradients larger
// than 1, absolute for smaller ones (a relative error of a gradient that should be exactly 0
// would divide rounding noise by nothing).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "check.hpp"

namespace wbtest {

/// The bound every gradient check of chapter 8 uses (stated in README.md): the reference
/// stays below 1e-9 on every case; a wrong formula is above 1e-3.
inline constexpr double grad_tolerance = 1e-6;

/// The step of the central difference.
inline constexpr double grad_step = 1e-5;

/// The outcome of one gradient check: the worst element over the whole tensor.
struct GradCheck {
    double worst_error = 0.0;  ///< |analytic − numeric| / max(|analytic|, |numeric|, 1)
    std::string index;         ///< index of the worst element, e.g. [1, 0, 2, 1]
    double analytic = 0.0;     ///< the backward's value there
    double numeric = 0.0;      ///< the central difference there
    std::size_t checked = 0;   ///< number of elements compared
    bool shape_ok = true;      ///< false if the analytic gradient has the wrong shape
    std::string shape_note;    ///< what was wrong with the shape

    /// Empty when the check passed, otherwise a report naming the worst element and the hint.
    std::optional<std::string> failure(const std::string& name, double bound,
                                       const std::string& hint) const {
        std::ostringstream out;
        out.precision(10);
        if (!shape_ok) {
            out << name << ": " << shape_note << "\nhint: " << hint;
            return out.str();
        }
        if (worst_error <= bound) return std::nullopt;  // NaN compares false: reported below
        out << name << ": the backward disagrees with the central difference (h = " << grad_step
            << ", double precision) over " << checked << " elements.\n  worst element " << index
            << ": analytic " << analytic << ", numeric " << numeric << ", error " << worst_error
            << " > bound " << bound
            << "\n  (error = |analytic - numeric| / max(|analytic|, |numeric|, 1))\nhint: " << hint;
        return out.str();
    }
};

/// Central-difference check of `analytic` = dL/dx for every element of `x`.
/// `loss` recomputes the loss from the current contents of `x` (capture it by reference);
/// `x` is restored exactly after each nudge.
template <class X, class G>
GradCheck gradcheck(const std::function<double()>& loss, X& x, const G& analytic,
                    double h = grad_step) {
    GradCheck r;
    const wb::Shape xs(x.shape().begin(), x.shape().end());
    const wb::Shape gs(analytic.shape().begin(), analytic.shape().end());
    if (xs != gs) {
        r.shape_ok = false;
        r.shape_note = "the gradient has shape " + wb::shape_str(gs) + ", expected " +
                       wb::shape_str(xs) + " (the shape of what it is the gradient of)";
        return r;
    }
    r.worst_error = -1.0;
    for (std::size_t k = 0; k < x.size(); ++k) {
        const double saved = x.data()[k];
        x.data()[k] = saved + h;
        const double up = loss();
        x.data()[k] = saved - h;
        const double down = loss();
        x.data()[k] = saved;
        const double numeric = (up - down) / (2.0 * h);
        const double a = static_cast<double>(analytic.data()[k]);
        double error = std::fabs(a - numeric) / std::max({std::fabs(a), std::fabs(numeric), 1.0});
        if (!std::isfinite(error)) error = std::numeric_limits<double>::infinity();
        if (error > r.worst_error) {
            r.worst_error = error;
            r.index = index_str(xs, k);
            r.analytic = a;
            r.numeric = numeric;
        }
        ++r.checked;
    }
    if (r.checked == 0) r.worst_error = 0.0;
    return r;
}

}  // namespace wbtest

/// Fails the test with the gradient check's report unless its worst error is within the bound.
#define WB_CHECK_GRAD(result, name, hint) \
    WB_REPORT((result).failure(name, ::wbtest::grad_tolerance, hint))
