#pragma once
// How the timing model rounds and adds durations, shared by its pricing
// files and the pipeline's stage timing.
#include <cmath>
#include <cstdint>

#include "base/checked_math.hpp"
#include "base/units.hpp"

namespace kvsim {

// Durations are integer nanoseconds, rounded up: an op never takes less than
// its roofline. The small slack keeps an exact quotient (say 1000.0000000001
// from floating-point division) from rounding up a whole nanosecond. A
// duration past kMaxSimulatedTimeNs (or not a number) is never cast: a tiny
// efficiency or rate from the input is an error, not an op that wraps to a
// negative time and drops out of the step.
inline TimeNs ceil_ns(double ns) {
  if (ns <= 0) return 0;
  if (!(ns < static_cast<double>(kMaxSimulatedTimeNs)))
    throw_duration_overflow("an op", ns, static_cast<double>(kMaxSimulatedTimeNs));
  // std::ceil without a library call (x86-64's baseline has no rounding
  // instruction): truncate, then one up if that was below. Exact while the
  // value fits in 63 bits, as every duration here does.
  const double up_to = ns - 1e-6;
  const auto whole = static_cast<TimeNs>(up_to);
  return static_cast<double>(whole) < up_to ? whole + 1 : whole;
}

inline constexpr double kTwoTo52 = 4503599627370496.0;

// A whole number of magnitude below 2^52 (sums of two such are exact).
inline bool whole_below_2_52(double x) {
  return std::abs(x) < kTwoTo52 && static_cast<double>(static_cast<int64_t>(x)) == x;
}

}  // namespace kvsim
