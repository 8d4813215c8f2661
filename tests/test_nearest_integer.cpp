// round_half_away (workloads/nearest_integer.hpp) is std::llround, bit for
// bit, wherever the workloads use it: a request's lengths and its arrival
// gap are rounded by it, and a different integer would change every run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "workloads/nearest_integer.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

void expect_llround(double x) {
  ASSERT_EQ(round_half_away(x), std::llround(x)) << x;
}

TEST(RoundHalfAway, IsLlroundAtHalvesAndTheirNeighbours) {
  for (int64_t i = -1000; i <= 1000; ++i) {
    const double half = static_cast<double>(i) + 0.5;
    for (const double x : {half, std::nextafter(half, -INFINITY), std::nextafter(half, INFINITY),
                           static_cast<double>(i), std::nextafter(static_cast<double>(i), 0.0)})
      expect_llround(x);
  }
  // 0.5 - 2^-54 rounds to 0 (adding 0.5 and truncating would give 1).
  expect_llround(0.49999999999999994);
  expect_llround(-0.49999999999999994);
  expect_llround(0.0);
  expect_llround(-0.0);
}

TEST(RoundHalfAway, IsLlroundAcrossMagnitudes) {
  // Around 2^52, where doubles stop having a fraction, up to 2^62.
  for (int e = 50; e <= 62; ++e) {
    const double p = std::ldexp(1.0, e);
    for (double x = p - 4; x <= p + 4; x = std::nextafter(x, INFINITY)) {
      expect_llround(x);
      expect_llround(-x);
      if (e > 53) break;  // past 2^53 neighbours are integers 2+ apart: a few suffice
    }
  }
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> exponent(-10, 62);
  for (int i = 0; i < 200000; ++i) {
    const double x =
        std::ldexp(std::uniform_real_distribution<double>(0, 1)(rng), 0) * std::exp2(exponent(rng));
    expect_llround(x);
    expect_llround(-x);
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
