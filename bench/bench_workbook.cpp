// Your kernels against the reference, on the same inputs, in one run.
//
//   cmake --workflow --preset bench   (or: cmake --preset bench && cmake --build --preset bench)
//   build/bench/bench/bench_workbook --benchmark_min_time=0.2
//
// Each pair of rows times `yours` and `reference`. Before timing, your output is compared
// with the reference's: a wrong or unfinished kernel is reported as an error, not timed.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>

#include "kernels.hpp"

namespace {

using wbbench::Kernels;

template <class T>
T random_tensor(const typename T::shape_type& shape, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    T t(shape);
    for (auto& v : t) v = normal(gen);
    return t;
}

// Empty when `yours` matches `reference`, otherwise why not.
template <class A, class B>
std::string mismatch(const A& yours, const B& reference) {
    if (yours.shape() != reference.shape()) return "your output has the wrong shape";
    auto y = yours.begin();
    for (auto r = reference.begin(); r != reference.end(); ++r, ++y) {
        if (!(std::fabs(*y - *r) <= 1e-4f + 1e-4f * std::fabs(*r))) return "your output differs from the reference";
    }
    return {};
}

// Runs `call(kernels)` in the timing loop after validating it against the reference.
template <class Call>
void timed(benchmark::State& state, const Kernels& kernels, Call call, double flops) {
    try {
        const auto expected = call(wbbench::kernels_reference());
        const auto got = call(kernels);
        const std::string problem = mismatch(got, expected);
        if (!problem.empty()) {
            state.SkipWithError(problem.c_str());
            return;
        }
        for (auto _ : state) benchmark::DoNotOptimize(call(kernels));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    // Shown as GFLOP=…/s: the counter is a rate (billions of floating-point operations a second).
    if (flops > 0) state.counters["GFLOP"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const Kernels& pick(benchmark::State& state) {
    return state.range(0) == 0 ? wbbench::kernels_impl() : wbbench::kernels_reference();
}

// Softmax over the key axis of scores [B=1, H=8, T, T].
void softmax(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(1));
    const wb::Array scores = random_tensor<wb::Array>({1, 8, T, T}, 1);
    state.SetLabel(state.range(0) == 0 ? "yours" : "reference");
    timed(state, pick(state), [&](const Kernels& k) { return k.softmax(scores); }, 3.0 * 8 * T * T);
}

// Q Kᵀ for [B=1, H=8, T, d=64].
void matmul(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(1));
    const auto q = random_tensor<wb::Tensor4>({1, 8, T, 64}, 2);
    const auto kt = random_tensor<wb::Tensor4>({1, 8, 64, T}, 3);
    state.SetLabel(state.range(0) == 0 ? "yours" : "reference");
    timed(state, pick(state), [&](const Kernels& k) { return k.matmul(q, kt); }, 2.0 * 8 * T * T * 64);
}

// [B=4, T, D=512] into 8 heads.
void split_heads(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(1));
    const auto x = random_tensor<wb::Tensor3>({4, T, 512}, 4);
    state.SetLabel(state.range(0) == 0 ? "yours" : "reference");
    timed(state, pick(state), [&](const Kernels& k) { return k.split_heads(x, 8); }, 0.0);
}

}  // namespace

// Args: {0 = yours, 1 = reference} × T
BENCHMARK(softmax)->ArgsProduct({{0, 1}, {64, 256}})->ArgNames({"ref", "T"});
BENCHMARK(matmul)->ArgsProduct({{0, 1}, {64, 256}})->ArgNames({"ref", "T"});
BENCHMARK(split_heads)->ArgsProduct({{0, 1}, {64, 256}})->ArgNames({"ref", "T"});

BENCHMARK_MAIN();
