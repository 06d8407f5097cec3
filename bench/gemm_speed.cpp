// The mini-GPT trainer's matrix products, one thread: wb::minigpt::sgemm (gemm.hpp, this
// processor's path) against OpenBLAS's cblas_sgemm, in GFLOP/s, on the shapes of the benchmark
// step of train_step (V=96 T=128 D=128 H=4 L=4 B=16: N = 2048 rows).
//
//   build/<dir>/bench/gemm_speed [--seconds 0.2] [--shape NAME]
//
// Each product is one call, as the trainer makes it on one thread (gpt_train.cpp's gemm cuts
// a product into one piece per thread). The two sides alternate, `--seconds` each per round, 5
// rounds; the median round is printed. `WB_SIMD=0|1` in the environment caps the path (cblas /
// avx2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>
#include <CLI/CLI.hpp>

#include "median.hpp"
#include "minigpt/fast/gemm.hpp"

namespace {

struct Shape {
    const char* name;
    bool trans_a, trans_b;
    std::size_t M, N, K;
};

}  // namespace

int main(int argc, char** argv) {
    double seconds = 0.2;
    std::string only;
    CLI::App app{"GFLOP/s of the trainer's sgemm against cblas_sgemm, one thread"};
    app.add_option("--seconds", seconds, "time of each side per round")->check(CLI::PositiveNumber);
    app.add_option("--shape", only, "one shape only (its name in the table)");
    CLI11_PARSE(app, argc, argv);
    openblas_set_num_threads(1);

    const std::size_t N = 2048, D = 128, F = 512, V = 96;
    const std::vector<Shape> shapes = {
        {"fwd qkv    x.Wt", false, true, N, 3 * D, D},
        {"fwd w_o    x.Wt", false, true, N, D, D},
        {"fwd w_fc   x.Wt", false, true, N, F, D},
        {"fwd w_proj x.Wt", false, true, N, D, F},
        {"fwd lm_head x.Wt", false, true, N, V, D},
        {"dx qkv     dy.W", false, false, N, D, 3 * D},
        {"dx w_o     dy.W", false, false, N, D, D},
        {"dx w_fc    dy.W", false, false, N, D, F},
        {"dx w_proj  dy.W", false, false, N, F, D},
        {"dx lm_head dy.W", false, false, N, D, V},
        {"dW qkv     dyt.x", true, false, 3 * D, D, N},
        {"dW w_o     dyt.x", true, false, D, D, N},
        {"dW w_fc    dyt.x", true, false, F, D, N},
        {"dW w_proj  dyt.x", true, false, D, F, N},
        {"dW lm_head dyt.x", true, false, V, D, N},
    };
    std::printf("wb::minigpt::sgemm path: %s; GFLOP/s on 1 thread, median of 5 rounds\n",
                wb::minigpt::sgemm_path());
    std::printf("%-18s %5s %5s %5s %10s %10s %7s\n", "product", "M", "N", "K", "sgemm", "cblas",
                "ratio");
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<double> ratios;
    for (const Shape& s : shapes) {
        if (!only.empty() && only != s.name) continue;
        std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N, 0.0f);
        for (float& x : A) x = dist(gen);
        for (float& x : B) x = dist(gen);
        const std::size_t lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N;
        auto ours = [&] {
            wb::minigpt::sgemm(s.trans_a, s.trans_b, s.M, s.N, s.K, A.data(), lda, B.data(), ldb,
                               0.0f, C.data(), s.N);
        };
        auto theirs = [&] {
            cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                        s.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(s.M),
                        static_cast<int>(s.N), static_cast<int>(s.K), 1.0f, A.data(),
                        static_cast<int>(lda), B.data(), static_cast<int>(ldb), 0.0f, C.data(),
                        static_cast<int>(s.N));
        };
        const double flops = 2.0 * static_cast<double>(s.M * s.N * s.K);
        // GFLOP/s of `seconds` of calls (at least one).
        auto rate = [&](auto&& call) {
            using clock = std::chrono::steady_clock;
            const auto t0 = clock::now();
            long calls = 0;
            double elapsed = 0.0;
            do {
                call();
                ++calls;
                elapsed = std::chrono::duration<double>(clock::now() - t0).count();
            } while (elapsed < seconds);
            return flops * static_cast<double>(calls) / elapsed * 1e-9;
        };
        ours();  // warm-up: scratch, caches
        theirs();
        std::vector<double> r_ours, r_theirs;
        for (int round = 0; round < 5; ++round) {
            r_ours.push_back(rate(ours));
            r_theirs.push_back(rate(theirs));
        }
        const double g_ours = wbbench::median(r_ours), g_theirs = wbbench::median(r_theirs);
        ratios.push_back(g_ours / g_theirs);
        std::printf("%-18s %5zu %5zu %5zu %10.1f %10.1f %6.2fx\n", s.name, s.M, s.N, s.K, g_ours,
                    g_theirs, g_ours / g_theirs);
    }
    if (!ratios.empty())
        std::printf("median ratio sgemm / cblas: %.2fx\n", wbbench::median(ratios));
    return 0;
}
