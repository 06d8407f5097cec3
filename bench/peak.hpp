// The limit every benchmark is measured against: this CPU's float32 multiply-add peak, per
// instruction set the program can use, and what OpenBLAS's sgemm reaches on the same cores.
//
// The FMA probe runs many independent chains of `acc = acc · a + b` on full vectors (12
// chains, more than the FMA units' latency × throughput needs, so the units never wait), on
// 1 thread or on every OpenMP thread at once. Each instruction set is a function compiled with
// __attribute__((target(...))), called only where __builtin_cpu_supports says the processor
// has it, so the probe needs no build flag (no -march=native) and runs on any x86-64.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace wbbench {

/// One instruction set the probe knows.
struct PeakIsa {
    std::string name;  ///< "avx512", "avx2" (AVX2 + FMA) or "sse2" (no FMA: a multiply and an add)
    int lanes = 0;     ///< floats per vector
    bool supported = false;  ///< whether this processor runs it
};

/// The instruction sets the probe has, widest first, each marked supported or not.
std::vector<PeakIsa> peak_isas();

/// The widest supported instruction set's name ("avx512", "avx2" or "sse2").
std::string widest_isa();

/// Float32 multiply-add peak in GFLOP/s (an FMA counts 2 flops) of one instruction set on
/// `threads` OpenMP threads running at once: the best of `rounds` runs of about `seconds`
/// each. Returns 0 if the processor lacks the instruction set.
double fma_peak_gflops(const std::string& isa, int threads, double seconds = 0.1, int rounds = 3);

/// Floating-point operations of one call of fma_chains(isa, iterations): 2 · chains · lanes ·
/// iterations.
double fma_chain_flops(const std::string& isa, long iterations);

/// Runs the FMA chains of `isa` for `iterations` rounds on the calling thread (what
/// fma_peak_gflops times; also what a benchmark row can time itself). Returns a value
/// derived from the chains so that the work cannot be optimised away.
float fma_chains(const std::string& isa, long iterations);

/// OpenBLAS `cblas_sgemm` on square n × n row-major matrices, C = A·B, in GFLOP/s (2n³ per
/// call), with OpenBLAS set to `threads` threads: the median of `rounds` calls after a warm-up.
/// Restores OpenBLAS's thread count afterwards.
double sgemm_gflops(int n, int threads, int rounds = 5);

/// One `cblas_sgemm` C = A·B on n × n row-major matrices, on OpenBLAS's current thread count
/// (what sgemm_gflops times; a benchmark row can time it itself).
void sgemm_square(int n, const float* a, const float* b, float* c);

/// Streaming read bandwidth in GB/s (10^9 bytes per second) over a working set of `bytes`,
/// split evenly among `threads` OpenMP threads that each read their share front to back again
/// and again (what a matrix-vector product does with its weights): the best of `rounds` runs of
/// about `seconds`. The limit of any kernel that streams more bytes than it computes on, such
/// as one token of decoding.
double read_bandwidth_gbs(std::size_t bytes, int threads, double seconds = 0.1, int rounds = 3);

}  // namespace wbbench
