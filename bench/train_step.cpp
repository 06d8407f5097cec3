// Training throughput of the mini-GPT, two ways side by side: chapter 8's readable
// gpt_forward / gpt_backward (xtensor, full T × T attention weights) and the capstone's
// wb::minigpt::GptTrainer (preallocated buffers, cblas_sgemm, the OpenMP attention kernel).
// One step is §21.7's zero_grad → forward → loss → backward → AdamW step, timed end to end.
//
//   build/<dir>/bench/train_step [--steps 5] [--threads 1] [--only reference|trainer]
//
// Model V=96, T=T_max=128, D=128, H=4, L=4 (~0.8 M parameters), batch B=16 of random tokens,
// AdamW(lr 3e-4, betas 0.9/0.95, weight decay 0.1). Both start from the same parameters and
// their steps alternate, so a busy machine slows both alike. Prints the median wall time of
// each, tokens/s = B·T / median and the ratio, and the median CPU time of a step (all
// threads). --threads sets both the OpenMP threads and OpenBLAS's (the reference's matrix
// products run on OpenBLAS threads; GptTrainer sets OpenBLAS to 1 thread during its step).
// On a machine shared with other jobs, run with OMP_WAIT_POLICY=passive: OpenMP's spinning
// barriers waste the time slices the other jobs leave.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>
#include <omp.h>
#include <CLI/CLI.hpp>

#include "8-training/model.hpp"
#include "8-training/optim.hpp"
#include "median.hpp"
#include "minigpt/fast/gpt_train.hpp"

int main(int argc, char** argv) {
    int steps = 5;
    int threads = 0;
    std::string only;
    CLI::App app{"Time a training step of the mini-GPT: chapter 8's reference vs GptTrainer"};
    app.add_option("--steps", steps, "timed steps of each, after one warm-up step")
        ->check(CLI::PositiveNumber);
    app.add_option("--threads", threads,
                   "OpenMP and OpenBLAS threads (default: OMP_NUM_THREADS / OPENBLAS_NUM_THREADS)")
        ->check(CLI::PositiveNumber);
    app.add_option("--only", only, "time one side only")
        ->check(CLI::IsMember({"reference", "trainer"}));
    CLI11_PARSE(app, argc, argv);
    if (threads > 0) {
        omp_set_num_threads(threads);
        openblas_set_num_threads(threads);
    }
    const bool run_ref = only != "trainer", run_fast = only != "reference";

    const wb::GptConfig config{96, 128, 128, 4, 4};
    const std::size_t B = 16, T = 128;
    try {
        const wb::GptParams<float> init = wb::init_gpt<float>(config, 1);
        std::size_t count = 0;
        for (const auto& r : wb::parameters(init)) count += r.size;
        const wb::AdamWConfig adamw{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};

        // Random tokens [B, T + 1], shifted into inputs and targets [B, T] (§15).
        std::mt19937 gen(7);
        std::uniform_int_distribution<std::int64_t> token(0,
                                                          static_cast<std::int64_t>(config.V) - 1);
        wb::TokenIds tokens = wb::TokenIds::from_shape({B, T + 1});
        for (auto& id : tokens) id = token(gen);
        const wb::NextToken batch = wb::shift_for_next_token(tokens);

        // The reference: chapter 8's functions, a cache rebuilt by every forward.
        wb::GptParams<float> ref_params = init;
        wb::GptParams<float> ref_grads = wb::zeros_like(init);
        wb::AdamWState<float> ref_state;
        wb::GptCache<float> cache;
        auto ref_step = [&] {
            wb::zero_grad(ref_grads);
            const float loss =
                wb::gpt_forward(ref_params, config, batch.inputs, batch.targets, -1, cache);
            wb::gpt_backward(ref_params, config, cache, ref_grads);
            wb::adamw_step(ref_params, ref_grads, ref_state, adamw);
            return loss;
        };
        // The trainer: every buffer allocated here, once.
        wb::GptParams<float> params = init;
        wb::GptParams<float> grads = wb::zeros_like(init);
        wb::AdamWState<float> state;
        wb::minigpt::GptTrainer trainer(config, B, T);
        auto fast_step = [&] {
            wb::zero_grad(grads);
            const float loss = trainer.forward(params, batch.inputs, batch.targets);
            trainer.backward(params, grads);
            wb::adamw_step(params, grads, state, adamw);
            return loss;
        };

        std::printf(
            "GPT V=%zu T=%zu D=%zu H=%zu L=%zu (%zu parameters), batch B=%zu, "
            "%d OpenMP threads, %d OpenBLAS threads\n",
            config.V, config.T_max, config.D, config.H, config.L, count, B, omp_get_max_threads(),
            openblas_get_num_threads());
        using clock = std::chrono::steady_clock;
        // Wall time, and the CPU time of the whole process (all threads): on a machine shared
        // with other jobs the wall time grows while the CPU time of one thread barely moves.
        auto timed = [](auto&& step, std::vector<double>& times, std::vector<double>& cpu) {
            const std::clock_t c0 = std::clock();
            const auto t0 = clock::now();
            const float loss = step();
            times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
            cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
            return loss;
        };
        std::vector<double> ref_times, fast_times, ref_cpu, fast_cpu;
        for (int s = 0; s <= steps; ++s) {  // step 0 is the warm-up, not counted
            std::printf("step %d:", s);
            if (run_ref) {
                const float loss = timed(ref_step, ref_times, ref_cpu);
                std::printf("  reference loss %.5f %.1f ms", static_cast<double>(loss),
                            1e3 * ref_times.back());
            }
            if (run_fast) {
                const float loss = timed(fast_step, fast_times, fast_cpu);
                std::printf("  GptTrainer loss %.5f %.1f ms", static_cast<double>(loss),
                            1e3 * fast_times.back());
            }
            std::printf("\n");
            if (s == 0) ref_times.clear(), fast_times.clear(), ref_cpu.clear(), fast_cpu.clear();
        }
        const double step_tokens = static_cast<double>(B * T);
        double ref_rate = 0.0, fast_rate = 0.0;
        // One side's median step: its time, its rate (returned) and its CPU time.
        auto report = [&](const char* name, const std::vector<double>& times,
                          const std::vector<double>& cpu) {
            const double rate = step_tokens / wbbench::median(times);
            std::printf("%s   median %7.1f ms/step %8.0f tokens/s   (CPU %7.1f ms/step)\n", name,
                        1e3 * wbbench::median(times), rate, 1e3 * wbbench::median(cpu));
            return rate;
        };
        if (run_ref) ref_rate = report("reference (chapter 8)", ref_times, ref_cpu);
        if (run_fast) fast_rate = report("GptTrainer (capstone)", fast_times, fast_cpu);
        if (run_ref && run_fast)
            std::printf("GptTrainer / reference: %.1fx\n", fast_rate / ref_rate);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "train_step: %s\n", e.what());
        return 1;
    }
    return 0;
}
