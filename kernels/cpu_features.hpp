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

}  // namespace kvsim::kernels
