#pragma once
// Fixed-memory latency distribution: values below 2048 ns are exact, larger
// ones fall in buckets 1/1024 wide in relative terms (HdrHistogram's scheme),
// so percentiles carry at most ~0.1% error while memory does not grow with the
// number of requests. Mean, standard deviation and max are exact; a percentile is clamped to the
// exact [min, max] (so a lone value is reported exactly).
#include <cstdint>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(TimeNs value);
  uint64_t count() const { return count_; }
  double mean() const;
  // Population standard deviation, exact (from the running sum of squares).
  double stddev() const;
  TimeNs max() const { return max_; }
  TimeNs min() const { return min_; }
  // Nearest-rank percentile, p in [0, 100]. 0 when empty.
  double percentile(double p) const;

 private:
  static size_t bucket_of(uint64_t v);
  static double bucket_mid(size_t index);

  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  long double sum_ = 0;
  long double sum_sq_ = 0;
  TimeNs min_ = 0;
  TimeNs max_ = 0;
};

}  // namespace kvsim
