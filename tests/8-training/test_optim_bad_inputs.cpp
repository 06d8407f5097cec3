#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "check.hpp"

#include <cmath>

// A finite learning rate whose step is not: lr = 3e38 with beta1 = 0.9 gives a first step size
// lr / (1 - beta1) = 3e39, infinite in float, and every parameter the step touches would become
// inf or NaN. Refused before anything changes, like an infinite lr.

namespace {

bool all_finite(const wb::GptParams<float>& p) {
    for (const auto& r : wb::parameters(p)) {
        for (std::size_t i = 0; i < r.size; ++i) {
            if (!std::isfinite(r.data[i])) return false;
        }
    }
    return true;
}

}  // namespace

TEST_CASE("adamw_step refuses a finite lr whose step overflows, before changing anything",
          "[adamw][adamw_step][errors][c:adamw_step.finite-step]") {
    const wb::GptConfig c{5, 4, 8, 2, 1};
    wb::GptParams<float> p = wb::init_gpt<float>(c, 1);
    const wb::GptParams<float> before = p;
    const wb::GptParams<float> g = wb::init_gpt<float>(c, 2);
    wb::AdamWState<float> s;
    wb::AdamWConfig huge;
    huge.lr = 3e38f;  // finite; lr / (1 - 0.9) = 3e39 is not
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, huge),
                    "the step size lr / (1 - beta1^t) of the first step overflows float",
                    "wb::adamw_step", "lr", "finite");
    CHECK(s.m.empty());  // the state was not created
    CHECK(s.step == 0);
    const bool unchanged = p.wte == before.wte && p.lm_head == before.lm_head;
    CHECK(unchanged);

    wb::AdamWConfig decay;
    decay.lr = 1e30f;
    decay.weight_decay = 1e10f;  // lr · weight_decay = 1e40: inf
    WB_CHECK_THROWS(wb::ValueError, wb::adamw_step(p, g, s, decay),
                    "the decay lr * weight_decay overflows float", "wb::adamw_step", "lr",
                    "finite");

    // A large lr whose step is finite still steps, and leaves finite parameters.
    wb::AdamWConfig fine;
    fine.lr = 1e30f;
    wb::adamw_step(p, g, s, fine);
    CHECK(s.step == 1);
    CHECK(all_finite(p));
}
