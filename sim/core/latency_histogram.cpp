#include "sim/core/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kvsim {

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

namespace {

using U128 = RoundedUint128;

// The x87 format: 64 significant bits, exponent wide enough for any value
// below 2^128; other long doubles are not emulated (the histogram then
// adds in long double).
constexpr bool kX87LongDouble =
    std::numeric_limits<long double>::digits == 64 && std::numeric_limits<long double>::is_iec559;
constexpr U128 kLimit = U128{1} << 126;

int bit_width_128(U128 v) {
  const auto high = static_cast<uint64_t>(v >> 64);
  return high != 0 ? 64 + std::bit_width(high) : std::bit_width(static_cast<uint64_t>(v));
}

// v rounded to 64 significant bits, ties to even.
U128 round_to_64_bits(U128 v) {
  const int width = bit_width_128(v);
  if (width <= 64) return v;
  const int k = width - 64;
  const U128 q = v >> k;
  const U128 r = v & ((U128{1} << k) - 1);
  const U128 half = U128{1} << (k - 1);
  const bool up = r > half || (r == half && (q & 1) != 0);
  return (q + (up ? 1 : 0)) << k;
}

}  // namespace

U128 square_rounded(uint64_t v) {
  if (v >> 32 == 0) return v * v;  // below 2^64: exact
  return round_to_64_bits(static_cast<U128>(v) * v);
}

namespace {

// The loop below's first pass in 64-bit words, for the usual call (an
// addend below 2^64 whose every addition stays in the sum's binade): the
// same q, a, r and step, so the same sum. False, changing nothing, when
// the call is not of that kind.
bool add_within_binade(U128& sum, uint64_t x, uint64_t times) {
  const auto high = static_cast<uint64_t>(sum >> 64);
  const auto low = static_cast<uint64_t>(sum);
  uint64_t add = 0;
  if (high == 0) {
    // Below 2^64 every integer is exact (k = 0): a plain sum while it fits.
    if (__builtin_mul_overflow(x, times, &add)) return false;
    uint64_t total = 0;
    if (__builtin_add_overflow(low, add, &total)) return false;
    sum = total;
    return true;
  }
  // s = q 2^k with q of 64 bits (the sum holds 64 significant bits), and
  // k <= 62 below kLimit.
  const int k = std::bit_width(high);
  const uint64_t q = (high << (64 - k)) | (low >> k);
  const uint64_t a = x >> k;
  const uint64_t r = x & ((uint64_t{1} << k) - 1);
  const uint64_t half = uint64_t{1} << (k - 1);
  if (r == half) return false;  // a tie: the loop decides by the parity of q
  const uint64_t step = a + (r > half ? 1 : 0);
  if (step == 0) return false;
  if (__builtin_mul_overflow(step, times, &add) || add > ~q) return false;  // leaves the binade
  const uint64_t moved = q + add;
  sum = (static_cast<U128>(moved) << k);
  return true;
}

}  // namespace

bool add_repeatedly_rounded(U128& sum, U128 x, uint64_t times) {
  if (!kX87LongDouble || sum >= kLimit || x >= kLimit) return false;
  if ((x >> 64) == 0 && add_within_binade(sum, static_cast<uint64_t>(x), times)) return true;
  if (times == 1) {
    // One addition is its definition: what the loop below makes of one
    // (a tie, or a sum leaving its binade, is why the call above declined)
    // without working out a run of them.
    const U128 one = round_to_64_bits(sum + x);
    if (one >= kLimit) return false;
    sum = one;
    return true;
  }
  U128 s = sum;
  while (times > 0) {
    // s = q 2^k with q below 2^64: its last place is 2^k (k = 0 below
    // 2^64, where every integer is exact). While the sums stay below
    // 2^(64+k), adding x = a 2^k + r moves q by a, plus one when r is
    // above half a place: the same amount every time. On a tie (r exactly
    // half) the result is the even neighbour: from an even q that is q + a
    // for an even a and q + a + 1 for an odd one, even again, so the same
    // amount every time too; from an odd q, one addition alone first.
    const int k = std::max(0, bit_width_128(s) - 64);
    const U128 q = s >> k;
    const U128 a = x >> k;
    const U128 r = x & ((U128{1} << k) - 1);
    const U128 half = k > 0 ? U128{1} << (k - 1) : 0;
    const U128 top = (U128{1} << 64) - 1;  // q stays at most this inside the binade
    const bool tie = k > 0 && r == half;
    const bool steady = !tie || (q & 1) == 0;
    const U128 step = tie ? a + (a & 1) : a + (r > half ? 1 : 0);
    if (steady && step == 0) break;  // no addition moves the sum
    uint64_t n = 0;
    if (steady && step <= top - q) {
      // Additions that stay in the binade: all when they fit (the usual
      // case, no division), else as many as fit. Both sides below 2^64.
      const auto room = static_cast<uint64_t>(top - q);
      const auto each = static_cast<uint64_t>(step);
      n = static_cast<U128>(each) * times <= room ? times : room / each;
    }
    if (n == 0) {  // a tie from an odd q, or the addition that leaves the binade
      s = round_to_64_bits(s + x);
      --times;
    } else {
      s = (q + step * n) << k;
      times -= n;
    }
    if (s >= kLimit) return false;
  }
  sum = s;
  return true;
}

LatencyHistogram::LatencyHistogram() {
  page_at_.fill(kNoPage);
}

uint64_t& LatencyHistogram::bucket(size_t index) {
  int32_t& at = page_at_[index / kSub];
  if (at == kNoPage) {
    at = static_cast<int32_t>(pages_.size());
    pages_.resize(pages_.size() + kSub, 0);
  }
  return pages_[static_cast<size_t>(at) + index % kSub];
}

double LatencyHistogram::bucket_mid(size_t index) {
  if (index < kExact) return static_cast<double>(index);
  const size_t rel = index - kExact;
  const int shift = static_cast<int>(rel / kSub) + 1;
  const double low = std::ldexp(static_cast<double>(kSub + rel % kSub), shift);
  const double width = std::ldexp(1.0, shift);
  return low + (width - 1) / 2.0;
}

inline void LatencyHistogram::count_value(uint64_t v, uint64_t times) {
  bucket(bucket_of(v)) += times;
  if (count_ == 0) {
    min_ = max_ = static_cast<TimeNs>(v);
  } else {
    min_ = std::min(min_, static_cast<TimeNs>(v));
    max_ = std::max(max_, static_cast<TimeNs>(v));
  }
  count_ += times;
  sum_ += static_cast<Uint128>(v) * times;
}

void LatencyHistogram::add(TimeNs value) {
  // add_repeated(value, 1) without the arithmetic of runs: one addition to
  // the sum of squares is the exact sum rounded once to 64 significant
  // bits, what add_repeatedly_rounded makes of one (an engine adds three
  // values per completed request, one at a time).
  const uint64_t v = value < 0 ? 0 : static_cast<uint64_t>(value);
  count_value(v, 1);
  if (kX87LongDouble && sum_sq_in_integers_ && sum_sq_int_ < kLimit) {
    const U128 square = square_rounded(v);
    if (square < kLimit) {
      const U128 one = round_to_64_bits(sum_sq_int_ + square);
      if (one < kLimit) {
        sum_sq_int_ = one;
        return;
      }
    }
  }
  add_squares(v, 1);
}

void LatencyHistogram::add_repeated(TimeNs value, uint64_t times) {
  if (times == 0) return;
  const uint64_t v = value < 0 ? 0 : static_cast<uint64_t>(value);
  count_value(v, times);
  add_squares(v, times);
}

void LatencyHistogram::add_squares(uint64_t v, uint64_t times) {
  if (sum_sq_in_integers_) {
    const U128 square = square_rounded(v);
    // The usual case first, without the general routine's call.
    if (kX87LongDouble && sum_sq_int_ < kLimit && (square >> 64) == 0 &&
        add_within_binade(sum_sq_int_, static_cast<uint64_t>(square), times))
      return;
    if (add_repeatedly_rounded(sum_sq_int_, square, times)) return;
    // Out of the integers' range: on in long double from the same value.
    sum_sq_in_integers_ = false;
    sum_sq_ = static_cast<long double>(sum_sq_int_);
  }
  const long double square = static_cast<long double>(v) * static_cast<long double>(v);
  sum_sq_ = add_repeatedly(sum_sq_, square, times);
}

long double LatencyHistogram::sum_of_squares() const {
  // Exact: the integer holds at most 64 significant bits.
  return sum_sq_in_integers_ ? static_cast<long double>(sum_sq_int_) : sum_sq_;
}

double LatencyHistogram::stddev() const {
  if (count_ == 0) return 0.0;
  const long double n = static_cast<long double>(count_);
  const long double mean = static_cast<long double>(sum_) / n;
  const long double var = sum_of_squares() / n - mean * mean;
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
  // Buckets in order; a page never touched holds only zeroes.
  for (size_t i = bucket_of(static_cast<uint64_t>(min_)); i < kBuckets;) {
    const int32_t at = page_at_[i / kSub];
    const size_t page_end = (i / kSub + 1) * kSub;
    if (at == kNoPage) {
      i = page_end;
      continue;
    }
    for (; i < page_end; ++i) {
      seen += pages_[static_cast<size_t>(at) + i % kSub];
      if (seen >= rank) {
        return std::clamp(bucket_mid(i), static_cast<double>(min_), static_cast<double>(max_));
      }
    }
  }
  return static_cast<double>(max_);
}

}  // namespace kvsim
