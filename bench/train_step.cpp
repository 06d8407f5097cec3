// Training throughput of the reference GPT of chapter 8: one step is §21.7's
// zero_grad → forward → loss → backward → AdamW step, timed end to end.
//
//   build/bench/bench/train_step [steps]          (default: 5 timed steps after 1 warm-up)
//
// Model V=96, T=T_max=128, D=128, H=4, L=4 (~0.8 M parameters), batch B=16 of random tokens.
// Prints the loss and time of every step, then tokens/s = B·T·steps / seconds.
// Built against the reference (WB_IMPL=reference), so it measures the workbook's own code:
// xtensor-blas for the Linear layers, plain loops for the attention.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
    if (steps < 1) {
        std::fprintf(stderr, "usage: %s [steps >= 1]\n", argv[0]);
        return 2;
    }
    const wb::GptConfig config{96, 128, 128, 4, 4};
    const std::size_t B = 16, T = 128;
    try {
        wb::GptParams<float> params = wb::init_gpt<float>(config, 1);
        wb::GptParams<float> grads = wb::zeros_like(params);
        wb::AdamWState<float> state;
        const wb::AdamWConfig adamw{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};

        std::size_t count = 0;
        for (const auto& r : wb::parameters(params)) count += r.size;

        // Random tokens [B, T + 1], shifted into inputs and targets [B, T] (§15).
        std::mt19937 gen(7);
        const auto last_id = static_cast<std::int64_t>(config.V) - 1;
        std::uniform_int_distribution<std::int64_t> token(0, last_id);
        wb::TokenIds tokens = wb::TokenIds::from_shape({B, T + 1});
        for (auto& id : tokens) id = token(gen);
        const wb::NextToken batch = wb::shift_for_next_token(tokens);

        wb::GptCache<float> cache;
        auto step = [&] {
            wb::zero_grad(grads);
            const float loss =
                wb::gpt_forward(params, config, batch.inputs, batch.targets, -1, cache);
            wb::gpt_backward(params, config, cache, grads);
            wb::adamw_step(params, grads, state, adamw);
            return loss;
        };

        std::printf("GPT V=%zu T=%zu D=%zu H=%zu L=%zu (%zu parameters), batch B=%zu\n", config.V,
                    config.T_max, config.D, config.H, config.L, count, B);
        using clock = std::chrono::steady_clock;
        std::printf("warm-up step: loss %.4f\n", static_cast<double>(step()));
        double total = 0.0;
        for (int s = 1; s <= steps; ++s) {
            const auto t0 = clock::now();
            const float loss = step();
            const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
            total += seconds;
            std::printf("step %d: loss %.4f, %.1f ms\n", s, static_cast<double>(loss),
                        1e3 * seconds);
        }
        const double tokens_per_s = static_cast<double>(B * T) * steps / total;
        std::printf("%.0f tokens/s (%.1f ms per step of %zu tokens)\n", tokens_per_s,
                    1e3 * total / steps, B * T);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "train_step: %s\n", e.what());
        return 1;
    }
    return 0;
}
