/// @file simd.hpp
/// @brief Given code: which vector instructions this processor runs, asked once, for the fast
/// code paths (the capstone's kernel, the given trainer's matrix products and GELU).
///
/// A function is compiled for a wider instruction set than the build's with a target
/// attribute (`WB_TARGET_AVX2`, `WB_TARGET_AVX512`), and called only where `wb::simd_level()`
/// says the processor has it, so no `-march=native` is needed and one binary runs anywhere.
/// `WB_SIMD=0|1|2` in the environment caps the level, to compare the paths side by side.
/// This is the one dispatch of every fast path (the kernel, the trainer's products and GELU,
/// the decoder's loops): a loop written once in plain C++ is compiled for each level by
/// `WB_SIMD_DISPATCH` below, never by `target_clones`, whose choice the environment cannot
/// cap. The given program (minigpt/) writes its vector code one way: its lanes made explicit
/// with the GCC vector types below (`F32x8`, `F32x16`: +, −, ·, / and ?: lane by lane), in a
/// body compiled for each level by `WB_SIMD_DISPATCH`, or, where each level needs its own shape
/// (the matrix product's micro-kernels), in a template instantiated under `WB_TARGET_AVX2` and
/// `WB_TARGET_AVX512`. No intrinsics, which tie a loop to one level and leave none for the
/// others, but in one place: the AVX-512 packing of the matrix product (minigpt/fast/gemm.cpp),
/// whose masked loads and stores have no spelling in vector types (it says why there).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__GNUC__) && defined(__x86_64__)
/// Defined where the x86 paths exist (GCC or Clang on x86-64).
#define WB_SIMD_X86 1
/// AVX2 with FMA: 8 floats per register.
#define WB_TARGET_AVX2 __attribute__((target("avx2,fma")))
/// AVX-512 (F, VL, BW, DQ) with FMA: 16 floats per register.
#define WB_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#endif

namespace wb {

/// The vector instruction sets the fast paths are written for, narrowest first.
enum SimdLevel : int {
    kSimdPortable = 0,  ///< the build's own flags (the compiler may still vectorise)
    kSimdAvx2 = 1,      ///< AVX2 + FMA
    kSimdAvx512 = 2,    ///< AVX-512 F/VL/BW/DQ
};

/// The widest level this processor runs, capped by `WB_SIMD` in the environment (read once).
inline SimdLevel simd_level() {
    static const SimdLevel level = [] {
        int best = kSimdPortable;
#ifdef WB_SIMD_X86
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = kSimdAvx2;
        if (best == kSimdAvx2 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512dq"))
            best = kSimdAvx512;
#endif
        const char* cap = std::getenv("WB_SIMD");
        if (cap != nullptr && *cap >= '0' && *cap <= '2') best = std::min(best, *cap - '0');
        return static_cast<SimdLevel>(best);
    }();
    return level;
}

}  // namespace wb

/// Defines `ret name params` that runs `name##_body args` compiled for the widest level
/// `wb::simd_level()` allows: the body (declared `WB_SIMD_BODY`, so it is inlined) is compiled
/// three times, into `name##_avx512`, `name##_avx2` and `name##_portable`.
///
///     WB_SIMD_BODY void add_body(float* y, const float* x, std::size_t n) { ... }
///     WB_SIMD_DISPATCH(void, add, (float* y, const float* x, std::size_t n), (y, x, n))
#define WB_SIMD_BODY inline __attribute__((always_inline))

namespace wb {

/// 8 floats (one AVX2 register), a GCC vector type: arithmetic and `?:` act on each lane, and
/// the function it is compiled in decides the instructions (one ymm with AVX2, two xmm on the
/// default target). A vector is passed by reference, never by value: a vector argument's
/// calling convention differs between the levels (g++ -Wpsabi).
typedef float F32x8 __attribute__((vector_size(8 * sizeof(float))));
/// 16 floats (one AVX-512 register), as F32x8.
typedef float F32x16 __attribute__((vector_size(16 * sizeof(float))));
/// 8 unsigned 32-bit integers, the bits of an F32x8.
typedef std::uint32_t U32x8 __attribute__((vector_size(8 * sizeof(std::uint32_t))));
/// 16 unsigned 32-bit integers, the bits of an F32x16.
typedef std::uint32_t U32x16 __attribute__((vector_size(16 * sizeof(std::uint32_t))));

/// The lanes of V (F32x8 or F32x16).
template <class V>
constexpr std::size_t kLanesOf = sizeof(V) / sizeof(float);

/// v = p[0 .. lanes): a load from any alignment.
template <class V>
WB_SIMD_BODY void load_lanes(V& v, const float* p) {
    std::memcpy(&v, p, sizeof v);
}

/// p[0 .. lanes) = v: a store to any alignment.
template <class V>
WB_SIMD_BODY void store_lanes(float* p, const V& v) {
    std::memcpy(p, &v, sizeof v);
}

/// Every lane of v = c.
template <class V>
WB_SIMD_BODY void splat(V& v, float c) {
    for (std::size_t l = 0; l < kLanesOf<V>; ++l) v[l] = c;
}

}  // namespace wb

#ifdef WB_SIMD_X86
/// The dispatcher of `WB_SIMD_BODY` functions (see above): three copies and a switch.
#define WB_SIMD_DISPATCH(ret, name, params, args)                          \
    WB_TARGET_AVX512 ret name##_avx512 params { return name##_body args; } \
    WB_TARGET_AVX2 ret name##_avx2 params { return name##_body args; }     \
    ret name##_portable params { return name##_body args; }                \
    ret name params {                                                      \
        switch (::wb::simd_level()) {                                      \
            case ::wb::kSimdAvx512:                                        \
                return name##_avx512 args;                                 \
            case ::wb::kSimdAvx2:                                          \
                return name##_avx2 args;                                   \
            default:                                                       \
                return name##_portable args;                               \
        }                                                                  \
    }
#else
/// The dispatcher where no x86 paths exist: the body alone.
#define WB_SIMD_DISPATCH(ret, name, params, args) \
    ret name params { return name##_body args; }
#endif
