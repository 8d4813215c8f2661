// CPU features the kernels' vector paths need, asked once at run time.
#pragma once

#include <cstdlib>

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

// AVX2 with FMA, the vector paths' floor on x86-64; asked once.
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

// Whether the environment asks for the AVX2 paths on a CPU with AVX-512
// (KVSIM_NO_AVX512 set and not "0"), as a CPU without it runs them: ctest
// runs the kernel and numerics suites a second time so, and both paths
// stay checked on a machine that has AVX-512.
inline bool avx512_turned_off() {
  const char* v = std::getenv("KVSIM_NO_AVX512");
  return v != nullptr && v[0] != '\0' && !(v[0] == '0' && v[1] == '\0');
}

// AVX-512 F, DQ, BW and VL: 512-bit integer and float ops, 64-bit lane
// multiplies, 16-bit lane widening, and the same ops on 256-bit vectors
// with 32 registers. Only lane-wise ops are run on them where bits matter,
// so the results are those of the AVX2 paths.
inline bool cpu_has_avx512() {
#if defined(__x86_64__)
  static const bool ok = !avx512_turned_off() && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return ok;
#else
  return false;
#endif
}

}  // namespace kvsim::kernels
