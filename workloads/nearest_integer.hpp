#pragma once
// The nearest integer to a double, halves away from zero (std::llround's
// rule), computed inline: std::llround and std::round are calls into libm,
// and every request makes a few of them (its lengths, its arrival gap).
#include <cstdint>

namespace kvsim {

// std::llround(x), exactly, for |x| < 2^63. The truncation t is exact, and
// so is x - t: below 2^52 both are multiples of x's unit in the last place
// and differ by less than 1 (x - t needs at most 52 bits); from 2^52 on, x
// is an integer and x - t is 0.
inline int64_t round_half_away(double x) {
  const auto t = static_cast<int64_t>(x);
  const double fraction = x - static_cast<double>(t);
  return t + (fraction >= 0.5 ? 1 : 0) - (fraction <= -0.5 ? 1 : 0);
}

}  // namespace kvsim
