// Chapter 8 — your AdamW. Replace the WB_STUB() with the body; the spec is the comment in
// optim.hpp, the formulas are in README.md ("AdamW"). Keep the instantiations at the end.
// Check your work with:  ctest --preset student -L chapter8  (rebuilds what changed first;
// `cmake --preset student` once before), or  tools/workbook check 8  /  tools/workbook watch 8
#include "8-training/optim.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace wb {
inline namespace WB_IMPL {

template <class Real>
void adamw_step(GptParams<Real>& params, const GptParams<Real>& grads, AdamWState<Real>& state,
                const AdamWConfig& config) {
    // Spec: optim.hpp, @throws first. Guide §12.
    (void)params, (void)grads, (void)state, (void)config;
    WB_STUB();
}

WB_INSTANTIATE_ADAMW(float)
WB_INSTANTIATE_ADAMW(double)

}  // namespace WB_IMPL
}  // namespace wb
