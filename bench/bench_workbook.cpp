// Your kernels against the reference, on the same inputs, in one run.
//
//   cmake --workflow --preset bench   (or: cmake --preset bench && cmake --build --preset bench)
//   build/bench/bench/bench_workbook --benchmark_min_time=0.2
//   build/bench/bench/bench_workbook --benchmark_filter=capstone --benchmark_format=json
//
// Every benchmark is named <chapter>/<function>/<student|reference>/<shape>/threads:<n>, to
// which Google Benchmark appends /real_time (times are wall-clock, so that the work of every
// OpenMP thread counts; with --benchmark_repetitions, also _mean, _median …):
// "student" is the implementation the build selected (yours, or the reference where you chose
// it), "reference" is always the reference. Pair the two rows of a name to get your ratio
// (`tools/workbook bench` does it from the JSON). Before timing, the student's output is
// compared with the reference's: a wrong kernel is reported as "wrong result: …" and an
// unfinished one as "not implemented: …", never timed.
//
// Counters: GFLOPs = useful floating-point work per second (billions), counting only what the
// maths needs (for causal attention the T(T+1)/2 visible scores, not T²); extra_MiB = the most
// heap memory one call allocated on top of what existed before it (outputs included for the
// functions that return tensors; the raw capstone kernels write into buffers made beforehand,
// so theirs is the kernel's own scratch); tokens_per_s for generation.
// Threads: OpenMP and OpenBLAS are both set to the thread count of the name.
//
// The limit (peak.hpp): before the benchmarks run, the program measures this CPU's float32
// multiply-add peak on 1 and 2 threads for each instruction set it can use (about a second).
// In the JSON output the context holds it: "peak_isa" (the widest set, e.g. avx512),
// "peak_gflops_threads:1" and "peak_gflops_threads:2" (that set's peak, GFLOP/s) and
// "peak_fma_<isa>_gflops_threads:<n>" for each set. Every row with a GFLOPs counter also gets
// peak_pct = its GFLOP/s as a percentage of the peak at its thread count, and a summary at the
// end (on stderr, so the JSON on stdout stays valid) reads "your kernel: 23 % of this CPU's
// peak". Rows named peak/fma/<isa>/threads:<n> and peak/sgemm/N<n>/threads:<n> time the probe
// and OpenBLAS's sgemm themselves. --benchmark_list_tests skips the measurement.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xview.hpp>

#include "heap_count.hpp"
#include "kernels.hpp"
#include "peak.hpp"

// OpenBLAS's own thread count (xtensor-blas calls it for the matrix products). Weak, so that
// the program still links against another BLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

using wbbench::Kernels;
using Flat = std::vector<float>;

void set_threads(int n) {
    omp_set_num_threads(n);
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(n);
}

// ---- the limit: this CPU's FMA peak by thread count (widest instruction set) -----------------
std::map<int, double>& peak_gflops() {
    static std::map<int, double> peak;
    return peak;
}

std::string fixed1(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
}

// Measures the FMA peak of every supported instruction set on each thread count and puts it in
// the output's context; peak_gflops() keeps the widest set's.
void measure_peak(const std::vector<int>& thread_counts) {
    const std::string widest = wbbench::widest_isa();
    benchmark::AddCustomContext("peak_isa", widest);
    for (int t : thread_counts) {
        for (const wbbench::PeakIsa& isa : wbbench::peak_isas()) {
            if (!isa.supported || isa.name == "sse2") continue;
            const double g = wbbench::fma_peak_gflops(isa.name, t, 0.05, 3);
            benchmark::AddCustomContext(
                "peak_fma_" + isa.name + "_gflops_threads:" + std::to_string(t), fixed1(g));
            if (isa.name == widest) {
                peak_gflops()[t] = g;
                benchmark::AddCustomContext("peak_gflops_threads:" + std::to_string(t), fixed1(g));
            }
        }
    }
}

// What each GFLOPs row reached, for the summary: name -> (iterations, GFLOP/s) of each call.
// Google Benchmark calls a row with growing iteration counts until one is long enough; the
// calls with the largest count are the ones it reports (one per repetition).
std::map<std::string, std::vector<std::pair<double, double>>>& achieved() {
    static std::map<std::string, std::vector<std::pair<double, double>>> rates;
    return rates;
}

void print_peak_summary() {
    if (achieved().empty() || peak_gflops().empty()) return;
    std::fprintf(stderr, "\nShare of this CPU's float32 FMA peak (%s; GFLOP/s):",
                 wbbench::widest_isa().c_str());
    for (const auto& [t, g] : peak_gflops())
        std::fprintf(stderr, " %d thread%s %.0f", t, t == 1 ? "" : "s", g);
    std::fprintf(stderr, "\n");
    for (const auto& [name, calls] : achieved()) {
        double most = 0;
        for (const auto& call : calls) most = std::max(most, call.first);
        std::vector<double> rates;
        for (const auto& call : calls)
            if (call.first == most) rates.push_back(call.second);
        std::sort(rates.begin(), rates.end());
        const double g = rates[rates.size() / 2];
        const std::size_t at = name.rfind("threads:");
        const int t = at == std::string::npos ? 1 : std::atoi(name.c_str() + at + 8);
        const auto peak = peak_gflops().find(t);
        if (peak == peak_gflops().end() || peak->second <= 0) continue;
        const bool yours = name.find("/student/") != std::string::npos;
        std::fprintf(stderr, "  %-62s %8.1f GFLOP/s  %s%3.0f %% of this CPU's peak\n", name.c_str(),
                     g, yours ? "your kernel: " : "             ", 100.0 * g / peak->second);
    }
}

// peak_pct = GFLOP/s as a percentage of the peak at `threads`, from the loop's own wall-clock
// time (a plain number, not a rate, so that the console shows "peak_pct=41.2").
void set_peak_pct(benchmark::State& state, double gflop_per_iteration, int threads,
                  double seconds) {
    const auto peak = peak_gflops().find(threads);
    if (peak == peak_gflops().end() || peak->second <= 0 || seconds <= 0) return;
    const double gflops = gflop_per_iteration * static_cast<double>(state.iterations()) / seconds;
    state.counters["peak_pct"] = 100.0 * gflops / peak->second;
}

template <class T>
T random_tensor(const typename T::shape_type& shape, unsigned seed, float scale = 1.0f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    T t(shape);
    for (auto& v : t) v = normal(gen);
    return t;
}

template <class E>
Flat flat(const E& e) {
    return Flat(e.begin(), e.end());
}

// Empty when `yours` matches `reference` (|y − r| <= tol·(1 + |r|) everywhere), else why not.
std::string mismatch(const Flat& yours, const Flat& reference, double tol) {
    if (yours.size() != reference.size()) {
        return "wrong result: your output has " + std::to_string(yours.size()) +
               " elements, the reference's " + std::to_string(reference.size());
    }
    for (std::size_t n = 0; n < yours.size(); ++n) {
        const double y = yours[n], r = reference[n];
        if (!(std::fabs(y - r) <= tol * (1.0 + std::fabs(r)))) {
            std::ostringstream s;
            s << "wrong result: element " << n << " is " << y << ", the reference gives " << r
              << " (tolerance " << tol << ")";
            return s.str();
        }
    }
    return {};
}

// One benchmark: `compute` returns the output to validate (run once per name), `call` is
// what is timed.
struct Case {
    std::string chapter, function, shape;
    int threads = 1;
    double flops = 0;   // useful floating-point operations of one call (0: no GFLOPs counter)
    double tokens = 0;  // tokens produced by one call (0: no tokens_per_s counter)
    double tol = 1e-4;
    std::function<Flat(const Kernels&)> compute;
    std::function<void(const Kernels&)> call;
    std::function<void(const Kernels&)> setup;  // optional, run before timing (not timed)
};

Case make_case(std::string chapter, std::string function, std::string shape, int threads = 1) {
    Case c;
    c.chapter = std::move(chapter);
    c.function = std::move(function);
    c.shape = std::move(shape);
    c.threads = threads;
    return c;
}

std::string name_of(const Case& c, bool student) {
    return c.chapter + "/" + c.function + "/" + (student ? "student" : "reference") + "/" +
           c.shape + "/threads:" + std::to_string(c.threads);
}

// The reference outputs, computed once per chapter/function/shape, and each student row's
// verdict, computed once per name (Google Benchmark calls a benchmark several times).
std::map<std::string, Flat>& expected_cache() {
    static std::map<std::string, Flat> cache;
    return cache;
}
std::map<std::string, std::string>& verdict_cache() {
    static std::map<std::string, std::string> cache;
    return cache;
}

void run_case(benchmark::State& state, const Case& c, bool student) {
    double seconds = 0;  // the timed loop's wall-clock time, for peak_pct
    const Kernels& kernels = student ? wbbench::kernels_impl() : wbbench::kernels_reference();
    set_threads(c.threads);
    try {
        if (student) {
            const std::string name = name_of(c, true);
            auto verdict = verdict_cache().find(name);
            if (verdict == verdict_cache().end()) {
                const std::string key = c.chapter + "/" + c.function + "/" + c.shape;
                auto expected = expected_cache().find(key);
                if (expected == expected_cache().end()) {
                    const Flat reference = c.compute(wbbench::kernels_reference());
                    expected = expected_cache().emplace(key, reference).first;
                }
                std::string problem;
                try {
                    problem = mismatch(c.compute(kernels), expected->second, c.tol);
                } catch (const wb::NotImplemented& e) {
                    problem = std::string("not implemented: ") + e.what();
                } catch (const std::exception& e) {
                    problem = std::string("error: ") + e.what();
                }
                verdict = verdict_cache().emplace(name, problem).first;
            }
            if (!verdict->second.empty()) {
                state.SkipWithError(verdict->second.c_str());
                return;
            }
        }
        if (c.setup) c.setup(kernels);
        std::size_t extra = 0;
        bool first = true;
        const auto start = std::chrono::steady_clock::now();
        for (auto _ : state) {
            if (first) {
                const std::size_t base = wbbench::heap_reset_peak();
                c.call(kernels);
                extra = wbbench::heap_peak() - base;
                first = false;
            } else {
                c.call(kernels);
            }
            benchmark::ClobberMemory();
        }
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (c.flops > 0 && seconds > 0) {
            const auto n = static_cast<double>(state.iterations());
            achieved()[name_of(c, student)].emplace_back(n, c.flops * n / seconds * 1e-9);
        }
        state.counters["extra_MiB"] = static_cast<double>(extra) / (1024.0 * 1024.0);
    } catch (const std::exception& e) {
        state.SkipWithError((std::string("error: ") + e.what()).c_str());
        return;
    }
    // Rates: the value per iteration, divided by the (wall-clock) time of one iteration.
    const auto rate = benchmark::Counter::kIsIterationInvariantRate;
    if (c.flops > 0) state.counters["GFLOPs"] = benchmark::Counter(c.flops * 1e-9, rate);
    if (c.flops > 0) set_peak_pct(state, c.flops * 1e-9, c.threads, seconds);
    if (c.tokens > 0) state.counters["tokens_per_s"] = benchmark::Counter(c.tokens, rate);
}

std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
}

std::string bhtd(std::size_t B, std::size_t H, std::size_t T, std::size_t d) {
    return "B" + std::to_string(B) + "_H" + std::to_string(H) + "_T" + std::to_string(T) + "_d" +
           std::to_string(d);
}

// Useful work of causal attention: 2 multiply-adds per (visible score, c) for q·k and P·v.
double causal_flops(std::size_t B, std::size_t H, std::size_t T, std::size_t d) {
    return 4.0 * B * H * d * (static_cast<double>(T) * (T + 1) / 2);
}

// ---- chapter 1 -------------------------------------------------------------------------------
void add_chapter1() {
    for (std::size_t T : {64, 256}) {
        auto scores = std::make_shared<wb::Array>(random_tensor<wb::Array>({1, 8, T, T}, 1));
        Case c = make_case("chapter1", "softmax", "B1_H8_T" + std::to_string(T));
        c.flops = 3.0 * 8 * T * T;
        c.compute = [scores](const Kernels& k) { return flat(k.softmax(*scores)); };
        c.call = [scores](const Kernels& k) { benchmark::DoNotOptimize(k.softmax(*scores)); };
        cases().push_back(c);

        auto q = std::make_shared<wb::Tensor4>(random_tensor<wb::Tensor4>({1, 8, T, 64}, 2));
        auto kt = std::make_shared<wb::Tensor4>(random_tensor<wb::Tensor4>({1, 8, 64, T}, 3));
        Case m = make_case("chapter1", "matmul", bhtd(1, 8, T, 64));
        m.flops = 2.0 * 8 * T * T * 64;
        m.compute = [q, kt](const Kernels& k) { return flat(k.matmul(*q, *kt)); };
        m.call = [q, kt](const Kernels& k) { benchmark::DoNotOptimize(k.matmul(*q, *kt)); };
        cases().push_back(m);

        auto x = std::make_shared<wb::Tensor3>(random_tensor<wb::Tensor3>({4, T, 512}, 4));
        Case s = make_case("chapter1", "split_heads", "B4_T" + std::to_string(T) + "_D512_H8");
        s.compute = [x](const Kernels& k) { return flat(k.split_heads(*x, 8)); };
        s.call = [x](const Kernels& k) { benchmark::DoNotOptimize(k.split_heads(*x, 8)); };
        cases().push_back(s);
    }
}

// ---- chapters 4, 5, 6: the readable attention -------------------------------------------------
void add_readable_attention() {
    const std::size_t B = 1, H = 8, T = 1024, d = 64, D = H * d;
    auto q = std::make_shared<wb::Tensor4>(random_tensor<wb::Tensor4>({B, H, T, d}, 11));
    auto k = std::make_shared<wb::Tensor4>(random_tensor<wb::Tensor4>({B, H, T, d}, 12));
    auto v = std::make_shared<wb::Tensor4>(random_tensor<wb::Tensor4>({B, H, T, d}, 13));
    auto x = std::make_shared<wb::Tensor3>(random_tensor<wb::Tensor3>({B, T, D}, 14));
    auto w = std::make_shared<std::vector<wb::Tensor2>>();
    for (unsigned i = 0; i < 4; ++i)
        w->push_back(random_tensor<wb::Tensor2>({D, D}, 15 + i, 1.0f / std::sqrt(float(D))));

    for (int threads : {1, 2}) {
        Case a = make_case("chapter4", "sdpa", bhtd(B, H, T, d), threads);
        a.flops = 4.0 * B * H * T * T * d;  // q kᵀ and A v, every score
        a.compute = [=](const Kernels& kr) { return flat(kr.sdpa(*q, *k, *v)); };
        a.call = [=](const Kernels& kr) { benchmark::DoNotOptimize(kr.sdpa(*q, *k, *v)); };
        cases().push_back(a);

        Case m = make_case("chapter5", "self_attention",
                           "B" + std::to_string(B) + "_T" + std::to_string(T) + "_D" +
                               std::to_string(D) + "_H" + std::to_string(H),
                           threads);
        m.flops = 4 * 2.0 * B * T * D * D + 4.0 * B * T * T * D;  // 4 projections + attention
        m.compute = [=](const Kernels& kr) { return flat(kr.self_attention(*x, *w, H)); };
        m.call = [=](const Kernels& kr) { benchmark::DoNotOptimize(kr.self_attention(*x, *w, H)); };
        cases().push_back(m);

        Case c = make_case("chapter6", "causal_sdpa", bhtd(B, H, T, d), threads);
        c.flops = causal_flops(B, H, T, d);  // the same useful work as the capstone kernel
        c.compute = [=](const Kernels& kr) { return flat(kr.causal_sdpa(*q, *k, *v)); };
        c.call = [=](const Kernels& kr) { benchmark::DoNotOptimize(kr.causal_sdpa(*q, *k, *v)); };
        cases().push_back(c);
    }
}

// ---- capstone: the fast kernel ------------------------------------------------------------------
// Inputs and outputs of one shape, made once and shared by all its rows.
struct KernelBuffers {
    std::size_t B, H, T, d;
    Flat q, k, v, dout, out, lse, dq, dk, dv;
    KernelBuffers(std::size_t B_, std::size_t H_, std::size_t T_, std::size_t d_, bool backward)
        : B(B_), H(H_), T(T_), d(d_) {
        const std::size_t n = B * H * T * d;
        std::mt19937 gen(21);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (Flat* f : {&q, &k, &v}) {
            f->resize(n);
            for (auto& e : *f) e = normal(gen);
        }
        out.assign(n, 0.0f);
        lse.assign(B * H * T, 0.0f);
        if (!backward) return;
        dout.resize(n);
        for (auto& e : dout) e = normal(gen);
        for (Flat* f : {&dq, &dk, &dv}) f->assign(n, 0.0f);
    }
    bool has_forward = false;  // out and lse hold the reference forward of q, k, v
    void forward(const Kernels& kr) {
        has_forward = false;
        kr.attention_forward(B, H, T, d, q.data(), k.data(), v.data(), out.data(), lse.data());
        has_forward = &kr == &wbbench::kernels_reference();
    }
    void backward(const Kernels& kr) {
        kr.attention_backward(B, H, T, d, q.data(), k.data(), v.data(), out.data(), lse.data(),
                              dout.data(), dq.data(), dk.data(), dv.data());
    }
};

void add_capstone() {
    struct S {
        std::size_t B, H, T, d;
        bool backward;
    };
    // B = 4, T = 4096 only forward: it shows the memory of a long sequence (no T × T buffer).
    for (S s : {S{1, 8, 1024, 64, true}, S{4, 8, 1024, 64, true}, S{1, 8, 2048, 64, true},
                S{4, 8, 4096, 64, false}}) {
        // Made on first use and kept for the shape's other rows (B = 4, T = 4096 is 32 MiB a
        // tensor), so that listing or filtering the benchmarks allocates nothing.
        auto holder = std::make_shared<std::unique_ptr<KernelBuffers>>();
        auto buffers = [holder, s]() -> KernelBuffers& {
            if (!*holder) holder->reset(new KernelBuffers(s.B, s.H, s.T, s.d, s.backward));
            return **holder;
        };
        for (int threads : {1, 2}) {
            if (s.T == 4096 && threads == 1) continue;
            Case f = make_case("capstone", "attention_forward", bhtd(s.B, s.H, s.T, s.d), threads);
            f.flops = causal_flops(s.B, s.H, s.T, s.d);
            f.compute = [buffers](const Kernels& kr) {
                KernelBuffers& buf = buffers();
                buf.forward(kr);
                Flat r = buf.out;
                r.insert(r.end(), buf.lse.begin(), buf.lse.end());
                return r;
            };
            f.call = [buffers](const Kernels& kr) { buffers().forward(kr); };
            // The inputs are made before the memory is counted, whichever row runs first.
            f.setup = [buffers](const Kernels&) { buffers(); };
            cases().push_back(f);
            if (!s.backward) continue;

            Case b = make_case("capstone", "attention_backward", bhtd(s.B, s.H, s.T, s.d), threads);
            b.flops = 2.5 * causal_flops(s.B, s.H, s.T, s.d);  // 5 products to the forward's 2
            b.compute = [buffers](const Kernels& kr) {
                // Both sides start from the reference forward, so only the backward is judged.
                KernelBuffers& buf = buffers();
                buf.forward(wbbench::kernels_reference());
                buf.backward(kr);
                Flat r = buf.dq;
                r.insert(r.end(), buf.dk.begin(), buf.dk.end());
                r.insert(r.end(), buf.dv.begin(), buf.dv.end());
                return r;
            };
            b.call = [buffers](const Kernels& kr) {
                KernelBuffers& buf = buffers();
                // out and lse must come from a forward: a row that is run alone (a filter on
                // the backward) runs the reference forward once first.
                if (!buf.has_forward) buf.forward(wbbench::kernels_reference());
                buf.backward(kr);
            };
            b.setup = [buffers](const Kernels&) {
                KernelBuffers& buf = buffers();
                if (!buf.has_forward) buf.forward(wbbench::kernels_reference());
            };
            cases().push_back(b);
        }
    }
}

// ---- chapter 2: training the byte-level BPE on the bundled corpus ------------------------------
// The mini-GPT's bundled corpus (WB_MINIGPT_CORPUS, from the build); 154,469 bytes, so V = 512
// takes 256 merges. The bar: under 0.5 s on 1 core.
void add_chapter2() {
    const std::string path = WB_MINIGPT_CORPUS;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    auto corpus = std::make_shared<std::string>(text.str());
    if (corpus->empty()) {
        std::fprintf(stderr, "bench_workbook: %s not found: chapter 2's BPE is not timed\n",
                     path.c_str());
        return;
    }
    Case c = make_case("chapter2", "bpe_train", "shakespeare_V512");
    c.tol = 0;  // the merges are ids: equal or wrong
    c.compute = [corpus](const Kernels& k) {
        const std::vector<std::int64_t> merges = k.bpe_train(*corpus, 512);
        return Flat(merges.begin(), merges.end());  // ids below 512: exact as floats
    };
    c.call = [corpus](const Kernels& k) { benchmark::DoNotOptimize(k.bpe_train(*corpus, 512)); };
    cases().push_back(c);
}

// ---- chapter 9: decoding with and without the KV cache ---------------------------------------
// The mini-GPT of the capstone (V = 96, D = 128, H = 4, L = 4) with a 512-token context: the
// next token's logits from decode_step on a cache of 511 positions, against gpt_logits
// recomputing the whole 512-token prefix (which is what generation costs without a cache).
void add_decode() {
    const wb::GptConfig config{96, 512, 128, 4, 4};
    const std::size_t context = 512;
    auto params =
        std::make_shared<wb::GptParams<float>>(wbbench::kernels_reference().init_gpt(config, 5));
    auto prefix = std::make_shared<wb::TokenIds>(wb::TokenIds::from_shape({1, context}));
    std::mt19937 gen(9);
    std::uniform_int_distribution<std::int64_t> token(0, static_cast<std::int64_t>(config.V) - 1);
    for (auto& id : *prefix) id = token(gen);
    const std::string shape = "ctx" + std::to_string(context) + "_D128_L4";

    for (int threads : {1, 2}) {
        // One cache per implementation and thread count, prefilled with the first 511 tokens
        // on first use; each timed step rewinds it to 511 and decodes token 512.
        auto cache = std::make_shared<std::map<const Kernels*, wb::KvCache>>();
        auto ready = [=](const Kernels& kr) -> wb::KvCache& {
            auto it = cache->find(&kr);
            if (it == cache->end()) {
                it = cache->emplace(&kr, kr.make_kv_cache(config, 1)).first;
                const wb::TokenIds head = xt::view(*prefix, xt::all(), xt::range(0, context - 1));
                kr.prefill(*params, config, head, it->second);
            }
            it->second.length = context - 1;
            return it->second;
        };
        const std::vector<std::int64_t> last{(*prefix)(0, context - 1)};

        Case c = make_case("chapter9", "decode_step", shape, threads);
        c.tokens = 1;
        c.tol = 1e-3;
        c.compute = [=](const Kernels& kr) {
            return flat(kr.decode_step(*params, config, last, ready(kr)));
        };
        c.call = [=](const Kernels& kr) {
            benchmark::DoNotOptimize(kr.decode_step(*params, config, last, ready(kr)));
        };
        c.setup = [=](const Kernels& kr) { ready(kr); };  // the prefill is not timed
        cases().push_back(c);

        Case r = make_case("chapter9", "gpt_logits_whole_prefix", shape, threads);
        r.tokens = 1;
        r.tol = 1e-3;
        r.compute = [=](const Kernels& kr) {
            const wb::Mat<float> all = kr.gpt_logits(*params, config, *prefix);  // [T, V]
            return flat(xt::view(all, context - 1, xt::all()));
        };
        r.call = [=](const Kernels& kr) {
            benchmark::DoNotOptimize(kr.gpt_logits(*params, config, *prefix));
        };
        cases().push_back(r);
    }
}

// ---- the limit itself: the FMA probe and OpenBLAS's sgemm as rows ------------------------------
void add_peak_rows() {
    const auto rate = benchmark::Counter::kIsIterationInvariantRate;
    for (int threads : {1, 2}) {
        for (const wbbench::PeakIsa& isa : wbbench::peak_isas()) {
            if (!isa.supported || isa.name == "sse2") continue;
            const std::string name = "peak/fma/" + isa.name + "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(
                name.c_str(),
                [isa, threads, rate](benchmark::State& s) {
                    const long iterations = 1L << 20;  // ~0.1-1 ms per thread
                    const auto start = std::chrono::steady_clock::now();
                    for (auto _ : s) {
#pragma omp parallel num_threads(threads)
                        benchmark::DoNotOptimize(wbbench::fma_chains(isa.name, iterations));
                    }
                    const std::chrono::duration<double> dt =
                        std::chrono::steady_clock::now() - start;
                    const double flops = threads * wbbench::fma_chain_flops(isa.name, iterations);
                    s.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, rate);
                    set_peak_pct(s, flops * 1e-9, threads, dt.count());
                })
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        }
        for (int n : {512, 1024, 2048}) {
            const std::string name =
                "peak/sgemm/N" + std::to_string(n) + "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(
                name.c_str(),
                [n, threads, rate](benchmark::State& s) {
                    set_threads(threads);
                    const std::size_t size = static_cast<std::size_t>(n) * n;
                    Flat a(size, 0.5f), b(size, 0.25f), c(size, 0.0f);
                    wbbench::sgemm_square(n, a.data(), b.data(), c.data());  // warm-up
                    const auto start = std::chrono::steady_clock::now();
                    for (auto _ : s) {
                        wbbench::sgemm_square(n, a.data(), b.data(), c.data());
                        benchmark::ClobberMemory();
                    }
                    const std::chrono::duration<double> dt =
                        std::chrono::steady_clock::now() - start;
                    const double flops = 2.0 * n * static_cast<double>(n) * n;
                    s.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, rate);
                    set_peak_pct(s, flops * 1e-9, threads, dt.count());
                })
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        listing = listing || std::string(argv[i]).rfind("--benchmark_list_tests", 0) == 0;
    add_peak_rows();
    add_chapter1();
    add_chapter2();
    add_readable_attention();
    add_capstone();
    add_decode();
    for (const Case& c : cases()) {
        for (bool student : {true, false}) {
            auto run = [c, student](benchmark::State& s) { run_case(s, c, student); };
            benchmark::RegisterBenchmark(name_of(c, student).c_str(), run)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (!listing) measure_peak({1, 2});
    benchmark::RunSpecifiedBenchmarks();
    print_peak_summary();
    benchmark::Shutdown();
    return 0;
}
