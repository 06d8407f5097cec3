// This CPU's float32 multiply-add peak and OpenBLAS's sgemm on it (see peak.hpp).
#include "peak.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define WB_PEAK_X86 1
#endif

// OpenBLAS's own thread count. Weak, so that the program still links against another BLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" int openblas_get_num_threads(void) __attribute__((weak));

namespace wbbench {
namespace {

constexpr int kChains = 12;  // independent accumulators: > latency (4) × FMA units (2)

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

#ifdef WB_PEAK_X86
// acc = acc · a + b converges to b / (1 − a) = 1 and stays there: no overflow, no denormals.
// Twelve named accumulators (an array would live in memory); the empty asm keeps each in its
// own register and stops the compiler from merging or reordering the chains.
// One line of twelve steps reads better than the list clang-format would make of it.
// clang-format off
#define WB_PEAK_CHAINS(STEP) \
    STEP(c0) STEP(c1) STEP(c2) STEP(c3) STEP(c4) STEP(c5) STEP(c6) STEP(c7) STEP(c8) STEP(c9) \
    STEP(c10) STEP(c11)
// clang-format on
#define WB_PEAK_BODY(VEC, SET1, FMA, ADD, CONSTRAINT)                                    \
    const VEC a = SET1(0.999f), b = SET1(0.001f);                                        \
    VEC c0 = SET1(1.00f), c1 = SET1(1.01f), c2 = SET1(1.02f), c3 = SET1(1.03f);          \
    VEC c4 = SET1(1.04f), c5 = SET1(1.05f), c6 = SET1(1.06f), c7 = SET1(1.07f);          \
    VEC c8 = SET1(1.08f), c9 = SET1(1.09f), c10 = SET1(1.10f), c11 = SET1(1.11f);        \
    for (long i = 0; i < iterations; ++i) {                                              \
        WB_PEAK_CHAINS(WB_PEAK_STEP_##FMA)                                               \
        WB_PEAK_CHAINS(WB_PEAK_KEEP_##CONSTRAINT)                                        \
    }                                                                                    \
    const VEC s = ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))), \
                      ADD(ADD(c8, c9), ADD(c10, c11)));
#define WB_PEAK_STEP_FMA512(c) c = _mm512_fmadd_ps(c, a, b);
#define WB_PEAK_STEP_FMA256(c) c = _mm256_fmadd_ps(c, a, b);
#define WB_PEAK_STEP_MULADD128(c) c = _mm_add_ps(_mm_mul_ps(c, a), b);
#define WB_PEAK_KEEP_V(c) __asm__ volatile("" : "+v"(c));
#define WB_PEAK_KEEP_X(c) __asm__ volatile("" : "+x"(c));

// The sum of a vector's lanes, stored in `out`, first to last.
template <std::size_t N>
float lane_sum(const float (&out)[N]) {
    float r = 0;
    for (float x : out) r += x;
    return r;
}

__attribute__((target("avx512f"))) float chains_avx512(long iterations) {
    WB_PEAK_BODY(__m512, _mm512_set1_ps, FMA512, _mm512_add_ps, V)
    alignas(64) float out[16];
    _mm512_store_ps(out, s);
    return lane_sum(out);
}

__attribute__((target("avx2,fma"))) float chains_avx2(long iterations) {
    WB_PEAK_BODY(__m256, _mm256_set1_ps, FMA256, _mm256_add_ps, X)
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    return lane_sum(out);
}

// Without FMA: a multiply and an add per element (2 flops), 4 lanes.
float chains_sse2(long iterations) {
    WB_PEAK_BODY(__m128, _mm_set1_ps, MULADD128, _mm_add_ps, X)
    alignas(16) float out[4];
    _mm_store_ps(out, s);
    return out[0] + out[1] + out[2] + out[3];
}
#endif

// The sum of n floats with 32 independent accumulators: only the loads matter.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
float sum_floats(const float* a, std::size_t n) {
    float acc[32] = {};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (std::size_t j = 0; j < 32; ++j) acc[j] += a[i + j];
    for (; i < n; ++i) acc[0] += a[i];
    float s = 0;
    for (float x : acc) s += x;
    return s;
}

int lanes_of(const std::string& isa) {
    if (isa == "avx512") return 16;
    if (isa == "avx2") return 8;
    if (isa == "sse2") return 4;
    throw std::invalid_argument("unknown instruction set '" + isa + "' (avx512, avx2, sse2)");
}

bool supported(const std::string& isa) {
#ifdef WB_PEAK_X86
    __builtin_cpu_init();
    if (isa == "avx512") return __builtin_cpu_supports("avx512f");
    if (isa == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == "sse2") return true;
#endif
    (void)isa;
    return false;
}

}  // namespace

std::vector<PeakIsa> peak_isas() {
    std::vector<PeakIsa> all;
    for (const char* name : {"avx512", "avx2", "sse2"}) {
        all.push_back(PeakIsa{name, lanes_of(name), supported(name)});
    }
    return all;
}

std::string widest_isa() {
    for (const PeakIsa& i : peak_isas())
        if (i.supported) return i.name;
    return "none";
}

double fma_chain_flops(const std::string& isa, long iterations) {
    return 2.0 * kChains * lanes_of(isa) * static_cast<double>(iterations);
}

float fma_chains(const std::string& isa, long iterations) {
    lanes_of(isa);  // throws for an unknown name
#ifdef WB_PEAK_X86
    if (!supported(isa)) return 0.0f;
    if (isa == "avx512") return chains_avx512(iterations);
    if (isa == "avx2") return chains_avx2(iterations);
    return chains_sse2(iterations);
#else
    (void)iterations;
    return 0.0f;
#endif
}

double fma_peak_gflops(const std::string& isa, int threads, double seconds, int rounds) {
    if (!supported(isa)) return 0.0;
    threads = std::max(1, threads);
    // Calibrate on one thread: iterations for about `seconds`.
    long iterations = 1 << 16;
    for (;;) {
        const double t0 = now_s();
        volatile float sink = fma_chains(isa, iterations);
        (void)sink;
        const double dt = now_s() - t0;
        if (dt > seconds / 4 || iterations > (1L << 40)) {
            iterations = static_cast<long>(static_cast<double>(iterations) * seconds / dt) + 1;
            break;
        }
        iterations *= 4;
    }
    double best = 0.0;
    for (int r = 0; r < rounds; ++r) {
        double dt = 0.0;
#pragma omp parallel num_threads(threads)
        {
#pragma omp barrier
            const double t0 = now_s();
            volatile float sink = fma_chains(isa, iterations);
            (void)sink;
#pragma omp barrier
#pragma omp master
            dt = now_s() - t0;
        }
        best = std::max(best, threads * fma_chain_flops(isa, iterations) / dt * 1e-9);
    }
    return best;
}

void sgemm_square(int n, const float* a, const float* b, float* c) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

double sgemm_gflops(int n, int threads, int rounds) {
    const int before = openblas_get_num_threads != nullptr ? openblas_get_num_threads() : 0;
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);
    const std::size_t size = static_cast<std::size_t>(n) * n;
    std::vector<float> a(size), b(size), c(size, 0.0f);
    for (std::size_t i = 0; i < size; ++i) {
        a[i] = static_cast<float>((i * 7 % 13) - 6) * 0.1f;
        b[i] = static_cast<float>((i * 5 % 11) - 5) * 0.1f;
    }
    auto call = [&] { sgemm_square(n, a.data(), b.data(), c.data()); };
    call();  // warm-up: OpenBLAS's threads start, the pages are touched
    std::vector<double> rates;
    for (int r = 0; r < std::max(1, rounds); ++r) {
        const double t0 = now_s();
        call();
        rates.push_back(2.0 * n * static_cast<double>(n) * n / (now_s() - t0) * 1e-9);
    }
    std::sort(rates.begin(), rates.end());
    if (openblas_set_num_threads != nullptr && before > 0) openblas_set_num_threads(before);
    return rates[rates.size() / 2];
}

double read_bandwidth_gbs(std::size_t bytes, int threads, double seconds, int rounds) {
    threads = std::max(1, threads);
    const std::size_t n = std::max<std::size_t>(bytes / sizeof(float), 1024);
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 7) * 1e-3f;
    double best = 0.0;
    for (int r = 0; r < std::max(1, rounds); ++r) {
        double dt = 0.0;
        long passes = 0;
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
            float sink = sum_floats(data.data() + lo, hi - lo);  // warm: bring the share in
#pragma omp barrier
            const double t0 = now_s();
            long mine = 0;
            // Every thread makes the same number of passes: thread 0 decides when to stop.
            for (;;) {
                sink += sum_floats(data.data() + lo, hi - lo);
                ++mine;
                bool stop = false;
#pragma omp master
                passes = (now_s() - t0 > seconds) ? mine : 0;
#pragma omp barrier
                stop = passes != 0;
#pragma omp barrier
                if (stop) break;
            }
#pragma omp master
            dt = now_s() - t0;
            volatile float keep = sink;
            (void)keep;
        }
        best = std::max(
            best, static_cast<double>(passes) * static_cast<double>(n) * sizeof(float) / dt * 1e-9);
    }
    return best;
}

}  // namespace wbbench
