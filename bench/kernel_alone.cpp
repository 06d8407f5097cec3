// The capstone kernel timed by a plain program, outside Google Benchmark: what a learner's own
// caller sees. Beside bench_workbook's capstone rows it shows whether the benchmark reports
// what the library does (bench/compare_standalone.sh runs the two in alternation).
//
//   build/<dir>/bench/kernel_alone [--threads 1] [--calls 60] [--offset 0] [--backward]
//                                  [--B 1 --H 8 --T 1024 --d 64]
//
// The buffers start `offset` bytes after a 64-byte boundary (0: cache-line aligned, as
// bench_workbook's; 16: what glibc's malloc gives a large std::vector). Prints the median,
// mean (all the work over all the time, as Google Benchmark counts) and best GFLOP/s of
// `calls` calls after 3 warm-up calls, counting the useful work as bench_workbook does (the
// T(T+1)/2 visible scores; the backward 2.5 times the forward).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <omp.h>
#include <CLI/CLI.hpp>

#include "kernels.hpp"

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

// n floats starting `offset` bytes after a 64-byte boundary.
struct Placed {
    std::vector<unsigned char> raw;
    float* data;
    Placed(std::size_t n, std::size_t offset) : raw(n * sizeof(float) + 128) {
        auto at = reinterpret_cast<std::uintptr_t>(raw.data());
        at = (at + 63) / 64 * 64 + offset;
        data = reinterpret_cast<float*>(at);
    }
};

}  // namespace

int main(int argc, char** argv) {
    int threads = 1, calls = 60;
    std::size_t offset = 0, B = 1, H = 8, T = 1024, d = 64;
    bool backward = false;
    CLI::App app{"Time the capstone kernel (the reference) from a plain program"};
    app.add_option("--threads", threads, "OpenMP threads")->check(CLI::PositiveNumber);
    app.add_option("--calls", calls, "timed calls")->check(CLI::PositiveNumber);
    app.add_option("--offset", offset, "bytes after a 64-byte boundary (multiple of 4)")
        ->check(CLI::Range(0, 60));
    app.add_flag("--backward", backward, "time the backward instead of the forward");
    app.add_option("--B", B, "batch");
    app.add_option("--H", H, "heads");
    app.add_option("--T", T, "sequence length");
    app.add_option("--d", d, "head width");
    CLI11_PARSE(app, argc, argv);
    omp_set_num_threads(threads);
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);

    const std::size_t n = B * H * T * d;
    Placed q(n, offset), k(n, offset), v(n, offset), out(n, offset), lse(B * H * T, offset);
    Placed dout(n, offset), dq(n, offset), dk(n, offset), dv(n, offset);
    std::mt19937 gen(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (Placed* p : {&q, &k, &v, &dout})
        for (std::size_t i = 0; i < n; ++i) p->data[i] = normal(gen);
    const wbbench::Kernels& kr = wbbench::kernels_reference();
    auto forward = [&] {
        kr.attention_forward(B, H, T, d, q.data, k.data, v.data, out.data, lse.data);
    };
    auto back = [&] {
        kr.attention_backward(B, H, T, d, q.data, k.data, v.data, out.data, lse.data, dout.data,
                              dq.data, dk.data, dv.data);
    };
    forward();
    const double flops =
        4.0 * B * H * d * (static_cast<double>(T) * (T + 1) / 2) * (backward ? 2.5 : 1.0);
    std::vector<double> rates;
    double total = 0;
    for (int c = -3; c < calls; ++c) {
        const auto t0 = std::chrono::steady_clock::now();
        backward ? back() : forward();
        const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
        if (c >= 0) rates.push_back(flops / dt.count() * 1e-9);
        if (c >= 0) total += dt.count();
    }
    std::sort(rates.begin(), rates.end());
    // "mean" is what Google Benchmark reports: all the work over all the time, so a call slowed
    // by other load counts in full; the median leaves such calls out.
    std::printf(
        "capstone/attention_%s B%zu_H%zu_T%zu_d%zu threads %d offset %zu: "
        "median %.1f GFLOP/s, mean %.1f, best %.1f\n",
        backward ? "backward" : "forward", B, H, T, d, threads, offset, rates[rates.size() / 2],
        flops * calls / total * 1e-9, rates.back());
    return 0;
}
