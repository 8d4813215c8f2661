#pragma once
// Fixed-memory latency distribution: values below 2048 ns are exact, larger
// ones fall in buckets 1/1024 wide in relative terms (HdrHistogram's scheme),
// so percentiles carry at most ~0.1% error while memory does not grow with the
// number of requests. Mean, standard deviation and max are exact; a percentile is clamped to the
// exact [min, max] (so a lone value is reported exactly).
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

// `sum` after `times` additions of `x` (both >= 0) in long double, each
// rounded as the hardware rounds it, without adding one at a time: inside
// one binade every addition after the first moves the sum by the same
// amount (a tie rounds to an even mantissa, after which the parity stays),
// so those runs are one exact multiply-add.
long double add_repeatedly(long double sum, long double x, uint64_t times);

// The same in integers, for the x87 80-bit long double (64-bit mantissa):
// `sum` and `x` are integers that long double holds exactly (at most 64
// significant bits, below 2^126), and each addition is the exact sum
// rounded to 64 significant bits, ties to even, as the hardware rounds it.
// Returns false, changing nothing, when a value is out of that range.
__extension__ using RoundedUint128 = unsigned __int128;
bool add_repeatedly_rounded(RoundedUint128& sum, RoundedUint128 x, uint64_t times);
// v * v rounded to 64 significant bits (what long double makes of it).
RoundedUint128 square_rounded(uint64_t v);

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(TimeNs value);
  // Adds `value` `times` times: the same state as that many add(value) calls
  // in a row (the sum of squares is still accumulated one value at a time,
  // in long double, so its rounding is that of the calls it stands for:
  // add_repeatedly).
  void add_repeated(TimeNs value, uint64_t times);
  // Starts loading the bucket add(value) increments (a hint: nothing
  // changes). A run's buckets lie apart in pages of 8 KiB and have mostly
  // left the core's caches between two completions, so a caller adding
  // several values requests all their buckets first and waits on the
  // misses together.
  void prefetch(TimeNs value) const {
    const size_t index = bucket_of(value < 0 ? 0 : static_cast<uint64_t>(value));
    const int32_t at = page_at_[index / kSub];
    if (at != kNoPage) __builtin_prefetch(&pages_[static_cast<size_t>(at) + index % kSub], 1);
  }
  uint64_t count() const { return count_; }
  double mean() const;
  // Population standard deviation, exact (from the running sum of squares).
  double stddev() const;
  TimeNs max() const { return max_; }
  TimeNs min() const { return min_; }
  // Nearest-rank percentile, p in [0, 100]. 0 when empty.
  double percentile(double p) const;

 private:
  static constexpr uint64_t kExact = 2048;   // values below are their own bucket
  static constexpr uint64_t kSub = 1024;     // buckets per power of two above
  static constexpr int kMaxShift = 64 - 11;  // v < 2^64
  static constexpr size_t kBuckets = kExact + kSub * (kMaxShift + 1);
  // The buckets come in pages of kSub (8 KiB), each allocated zeroed when a
  // value first falls in it: a run's latencies fill a few powers of two of
  // the 56, and an engine's four histograms were 1.8 MB of zeroes written
  // at its construction (bench/bench_step_cost.cpp builds one per run).
  static constexpr size_t kPages = kBuckets / kSub;
  static_assert(kBuckets % kSub == 0);
  static constexpr int32_t kNoPage = -1;
  static size_t bucket_of(uint64_t v) {
    if (v < kExact) return static_cast<size_t>(v);
    const int shift = std::bit_width(v) - 11;  // v >> shift is in [1024, 2047]
    return static_cast<size_t>(kExact + static_cast<uint64_t>(shift - 1) * kSub +
                               ((v >> shift) - kSub));
  }
  static double bucket_mid(size_t index);
  uint64_t& bucket(size_t index);
  // add_repeated's two halves: the value's bucket, count, bounds and sum,
  // then its squares' sum (v is the value clamped at 0).
  [[gnu::always_inline]] inline void count_value(uint64_t v, uint64_t times);
  void add_squares(uint64_t v, uint64_t times);

  std::vector<uint64_t> pages_;          // the touched pages, in the order first touched
  std::array<int32_t, kPages> page_at_;  // by page: its first bucket in pages_, or kNoPage
  uint64_t count_ = 0;
  // Exact: a sum of whole nanoseconds, which the long double sum it
  // replaced also held exactly below 2^64 ns (584 years of latency).
  __extension__ using Uint128 = unsigned __int128;
  Uint128 sum_ = 0;
  // The sum of squares as long double accumulates it, one value at a time:
  // kept in integers (add_repeatedly_rounded, bit for bit the same value
  // and much cheaper per call) while it fits there, else in long double.
  bool sum_sq_in_integers_ = true;
  Uint128 sum_sq_int_ = 0;
  long double sum_sq_ = 0;
  long double sum_of_squares() const;
  TimeNs min_ = 0;
  TimeNs max_ = 0;
};

}  // namespace kvsim
