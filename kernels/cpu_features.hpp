// CPU features the kernels' vector paths need, asked once at run time.
#pragma once

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kvsim::kernels {

// F16C (fp16 <-> fp32 conversion): CPUID leaf 1, ECX bit 29. Asked through
// cpuid because clang's __builtin_cpu_supports does not know "f16c".
inline bool cpu_has_f16c() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
#else
  return false;
#endif
}

// AVX-512 F, DQ, BW and VL: 512-bit integer and float ops, 64-bit lane
// multiplies, 16-bit lane widening, and the same ops on 256-bit vectors
// with 32 registers. Only lane-wise ops are run on them where bits matter,
// so the results are those of the AVX2 paths.
inline bool cpu_has_avx512() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return ok;
#else
  return false;
#endif
}

}  // namespace kvsim::kernels
