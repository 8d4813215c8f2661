#include "workloads/stream_ids.hpp"

#include <cstring>

namespace kvsim {

namespace {

// Where the CPU has AVX-512 (64-bit lane multiplies, int64 <-> double
// conversions), eight ids are made at a time with GCC/Clang vector
// extensions; elsewhere one at a time, as TokenStream::at does.
#define KVSIM_AVX512 gnu::target("avx512f,avx512dq,avx512vl")

using U64x8 = uint64_t __attribute__((vector_size(64)));
using I64x8 = int64_t __attribute__((vector_size(64)));
using F64x8 = double __attribute__((vector_size(64)));
using I32x8 = int32_t __attribute__((vector_size(32)));

constexpr int kLanes = 8;
// The divisors the floating-point remainder below is exact for: from 2^13
// (see there) to 2^61 (remainders in [-d, 2d) are held in int64 lanes).
constexpr uint64_t kMinFloatDivisor = uint64_t{1} << 13;
constexpr uint64_t kMaxFloatDivisor = uint64_t{1} << 61;

// workloads/rng.hpp mix64, lane by lane, in place.
[[KVSIM_AVX512, gnu::always_inline]] inline void mix64_lanes(U64x8& x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
}

// The ids of positions [first, first + count) in blocks of eight, the rest
// left to the caller; returns how many it made. x mod d exactly, for d in
// [2^13, 2^61]: the quotient is estimated in double precision and the
// remainder corrected. With x = 2^12 m + l (m < 2^52 is exact as a double,
// l < 2^12), m * (2^12 / d) is within half a unit of 2^12 m / d (relative
// rounding <= 2^-52 on a value <= 2^51), and l / d < 1/2, so the truncated
// estimate q is floor(x / d) - 1, + 0 or + 1, and x - q d lies in [-d, 2d):
// one correction either way.
[[KVSIM_AVX512]] int64_t ids_by_float_remainder(uint64_t key, uint64_t d, uint64_t first,
                                                int64_t count, int32_t* dst) {
  const double scale = 4096.0 / static_cast<double>(d);
  const I64x8 dv = I64x8{} + static_cast<int64_t>(d);
  U64x8 pos = {0, 1, 2, 3, 4, 5, 6, 7};
  pos += first;
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes, pos += kLanes) {
    U64x8 x = pos;
    mix64_lanes(x);
    x ^= key;
    mix64_lanes(x);
    const F64x8 estimate = __builtin_convertvector(x >> 12, F64x8) * scale;
    const I64x8 q = __builtin_convertvector(estimate, I64x8);
    // In unsigned lanes, where wrapping is defined: q d is near x, up to 2^64.
    const U64x8 qd = __builtin_convertvector(q, U64x8) * d;
    I64x8 r = __builtin_convertvector(x - qd, I64x8);
    r += (r < 0) & dv;
    r -= (r >= dv) & dv;
    const I32x8 ids = __builtin_convertvector(r, I32x8);
    std::memcpy(dst + i, &ids, sizeof(ids));
  }
  return i;
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

#undef KVSIM_AVX512

}  // namespace

void generate_stream_ids(uint64_t key, const FastModulo& vocabulary, uint64_t first, int64_t count,
                         int32_t* dst) {
  if (count <= 0) return;
  const uint64_t d = vocabulary.divisor();
  int64_t done = 0;
  if (d >= kMinFloatDivisor && d <= kMaxFloatDivisor && count >= kLanes && cpu_has_avx512())
    done = ids_by_float_remainder(key, d, first, count, dst);
  const TokenStream stream(key, vocabulary);
  for (int64_t i = done; i < count; ++i) dst[i] = stream.at(first + static_cast<uint64_t>(i));
}

}  // namespace kvsim
