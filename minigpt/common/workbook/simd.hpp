/// @file simd.hpp
/// @brief Given code: which vector instructions this processor runs, asked once, for the fast
/// code paths (the capstone's kernel, the given trainer's matrix products and GELU).
///
/// A function is compiled for a wider instruction set than the build's with a target
/// attribute (`WB_TARGET_AVX2`, `WB_TARGET_AVX512`), and called only where `wb::simd_level()`
/// says the processor has it, so no `-march=native` is needed and one binary runs anywhere.
/// `WB_SIMD=0|1|2` in the environment caps the level, to compare the paths side by side.
/// This is the one dispatch of every fast path (the kernel, the trainer's products and GELU,
/// the decoder's loops): a loop written once in plain C++ (or with GCC vector types) is
/// compiled for each level by `WB_SIMD_DISPATCH` below, never by `target_clones`, whose
/// choice the environment cannot cap.
#pragma once

#include <algorithm>
#include <cstdlib>

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
