#include "workloads/rng.hpp"

#include <cmath>
#include <numbers>

namespace kvsim {

uint64_t stream_key(uint64_t seed, RandomStream stream, uint64_t a, uint64_t b) {
  return StreamKeys(seed, stream)(a, b);
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (range == 0) return static_cast<int64_t>(next_u64());  // the whole int64 range
  // Lemire (2019), "Fast random integer generation in an interval": a 128-bit
  // product whose low half is rejected in the few biased cases.
  __extension__ typedef unsigned __int128 u128;
  u128 m = static_cast<u128>(next_u64()) * range;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < range) {
    const uint64_t threshold = (0 - range) % range;
    while (low < threshold) {
      m = static_cast<u128>(next_u64()) * range;
      low = static_cast<uint64_t>(m);
    }
  }
  return lo + static_cast<int64_t>(static_cast<uint64_t>(m >> 64));
}

double Rng::standard_normal() {
  const double u1 = uniform_open0();
  const double u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::exponential(double mean) {
  return -mean * std::log(uniform_open0());
}

double Rng::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Marsaglia and Tsang, section 6: X ~ Gamma(a + 1), U^(1/a) X ~ Gamma(a).
    const double boost = std::pow(uniform_open0(), 1.0 / shape);
    return gamma(shape + 1.0, scale) * boost;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = 0;
    double v = 0;
    do {
      x = standard_normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform_open0();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v * scale;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

}  // namespace kvsim
