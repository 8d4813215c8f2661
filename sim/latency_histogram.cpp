#include "sim/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kvsim {
namespace {
constexpr uint64_t kExact = 2048;   // values below are their own bucket
constexpr uint64_t kSub = 1024;     // buckets per power of two above
constexpr int kMaxShift = 64 - 11;  // v < 2^64
}  // namespace

long double add_repeatedly(long double sum, long double x, uint64_t times) {
  // Short runs are cheaper one by one than the binade arithmetic below.
  constexpr uint64_t kShortRun = 32;
  while (times > 0) {
    if (times <= kShortRun) {
      for (; times > 0; --times) sum += x;
      break;
    }
    // Three additions one by one: when all three results lie in one binade
    // [2^(e-1), 2^e), the second started from a sum of that binade, so its
    // result has the even mantissa a tie rounds to, and the third moved the
    // sum by the amount every later addition inside the binade moves it.
    sum += x;
    const long double s2 = sum += x;
    const long double s3 = sum += x;
    times -= 3;
    int e2 = 0, e3 = 0;
    std::frexp(s2, &e2);
    std::frexp(s3, &e3);
    if (s2 == 0 || e2 != e3) continue;
    const long double delta = s3 - s2;  // exact: s2 <= s3 < 2 s2
    if (delta == 0) break;              // x is below half a unit of the sum: no addition moves it
    // In units of the binade's last place (64-bit mantissa): stay two units
    // below 2^e, where no addition can round up into the next binade.
    const long double unit = std::ldexp(1.0L, e3 - 64);
    const auto room = static_cast<uint64_t>((std::ldexp(1.0L, e3) - s3) / unit);
    const auto step = static_cast<uint64_t>(delta / unit);
    if (room <= 2) continue;
    const uint64_t n = std::min(times, (room - 2) / step);
    sum += static_cast<long double>(n * step) * unit;  // n * step < 2^63 units: exact
    times -= n;
  }
  return sum;
}

LatencyHistogram::LatencyHistogram() : buckets_(kExact + kSub * (kMaxShift + 1), 0) {}

size_t LatencyHistogram::bucket_of(uint64_t v) {
  if (v < kExact) return static_cast<size_t>(v);
  const int shift = std::bit_width(v) - 11;  // v >> shift is in [1024, 2047]
  return static_cast<size_t>(kExact + static_cast<uint64_t>(shift - 1) * kSub +
                             ((v >> shift) - kSub));
}

double LatencyHistogram::bucket_mid(size_t index) {
  if (index < kExact) return static_cast<double>(index);
  const size_t rel = index - kExact;
  const int shift = static_cast<int>(rel / kSub) + 1;
  const double low = std::ldexp(static_cast<double>(kSub + rel % kSub), shift);
  const double width = std::ldexp(1.0, shift);
  return low + (width - 1) / 2.0;
}

void LatencyHistogram::add(TimeNs value) {
  add_repeated(value, 1);
}

void LatencyHistogram::add_repeated(TimeNs value, uint64_t times) {
  if (times == 0) return;
  const uint64_t v = value < 0 ? 0 : static_cast<uint64_t>(value);
  buckets_[bucket_of(v)] += times;
  if (count_ == 0) {
    min_ = max_ = static_cast<TimeNs>(v);
  } else {
    min_ = std::min(min_, static_cast<TimeNs>(v));
    max_ = std::max(max_, static_cast<TimeNs>(v));
  }
  count_ += times;
  sum_ += static_cast<Uint128>(v) * times;
  const long double square = static_cast<long double>(v) * static_cast<long double>(v);
  sum_sq_ = add_repeatedly(sum_sq_, square, times);
}

double LatencyHistogram::stddev() const {
  if (count_ == 0) return 0.0;
  const long double n = static_cast<long double>(count_);
  const long double mean = static_cast<long double>(sum_) / n;
  const long double var = sum_sq_ / n - mean * mean;
  return var > 0 ? static_cast<double>(std::sqrt(var)) : 0.0;
}

double LatencyHistogram::mean() const {
  return count_ == 0 ? 0.0
                     : static_cast<double>(static_cast<long double>(sum_) /
                                           static_cast<long double>(count_));
}

double LatencyHistogram::percentile(double p) const {
  if (count_ == 0) return 0.0;
  const double clamped = std::clamp(p, 0.0, 100.0);
  uint64_t rank = static_cast<uint64_t>(std::ceil(clamped / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = bucket_of(static_cast<uint64_t>(min_)); i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      return std::clamp(bucket_mid(i), static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace kvsim
