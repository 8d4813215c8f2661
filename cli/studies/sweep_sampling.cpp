// Sampling of a sweep's numeric ranges (random, Latin hypercube). The
// generator is SplitMix64 and doubles are built from its top 53 bits, so a
// seed gives the same points on every compiler and standard library (std::
// distributions are not specified bit for bit).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "cli/studies/sweep_spec.hpp"

namespace kvsim {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }  // bias < n / 2^64: negligible here

 private:
  uint64_t state_;
};

double place(const SweepRange& r, double u) {
  if (!r.integer) return r.lo + u * (r.hi - r.lo);
  // Integers: count + 1 equal cells over [lo, hi + 1), floored.
  const double v = r.lo + u * (r.hi - r.lo + 1.0);
  return std::min(std::floor(v), r.hi);
}

}  // namespace

std::vector<std::vector<double>> sample_ranges(const std::vector<SweepRange>& ranges,
                                               const SweepSample& sample) {
  SplitMix64 rng(sample.seed);
  const size_t n = static_cast<size_t>(sample.count);
  std::vector<std::vector<double>> points(n, std::vector<double>(ranges.size()));
  if (sample.method == "latin_hypercube") {
    // Per range, a random permutation of the n strata; one point per stratum.
    for (size_t d = 0; d < ranges.size(); ++d) {
      std::vector<size_t> strata(n);
      std::iota(strata.begin(), strata.end(), size_t{0});
      for (size_t i = n; i > 1; --i) std::swap(strata[i - 1], strata[rng.below(i)]);
      for (size_t i = 0; i < n; ++i)
        points[i][d] = place(
            ranges[d], (static_cast<double>(strata[i]) + rng.unit()) / static_cast<double>(n));
    }
  } else {
    for (auto& p : points)
      for (size_t d = 0; d < ranges.size(); ++d) p[d] = place(ranges[d], rng.unit());
  }
  return points;
}

}  // namespace kvsim
