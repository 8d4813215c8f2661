// The keys added to latency_ms (p95 and std of each distribution, the
// inter-token latency) and goodput: exact where they can be, consistent
// with the per-request rows, and appended after SPEC 9's first keys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "report_test_helpers.hpp"
#include "sim/core/latency_histogram.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(LatencyHistogramStd, StandardDeviationIsExactAndP95IsNearestRank) {
  LatencyHistogram h;
  EXPECT_EQ(h.stddev(), 0.0);
  for (int v = 1; v <= 100; ++v) h.add(v);  // below 2048 ns: exact buckets
  EXPECT_NEAR(h.stddev(), std::sqrt((100.0 * 100.0 - 1.0) / 12.0), 1e-9);
  EXPECT_EQ(h.percentile(95), 95.0);
  const LatencySummary s = summarize_latency(h);
  EXPECT_DOUBLE_EQ(s.p95, 95.0 / 1e6);
  EXPECT_NEAR(s.std, h.stddev() / 1e6, 1e-15);
  LatencyHistogram one;
  one.add(5'000'000'000);
  EXPECT_EQ(one.stddev(), 0.0);
}

// A run of equal values at once is the same histogram as one add() each,
// down to the last bit of the mean and the standard deviation (the squares
// are summed in long double in the same order, past 2^64 ns^2 too).
TEST(LatencyHistogramStd, RepeatedAddIsOneAddPerValue) {
  LatencyHistogram each, runs;
  const TimeNs values[] = {20'000'000, 20'000'000, 7, 3'000'000'000, 20'000'001};
  for (int round = 0; round < 50; ++round) {
    for (TimeNs v : values) {
      const uint64_t times = static_cast<uint64_t>(round % 7 + 1);
      for (uint64_t i = 0; i < times; ++i) each.add(v);
      runs.add_repeated(v, times);
    }
  }
  runs.add_repeated(1, 0);  // nothing
  EXPECT_EQ(each.count(), runs.count());
  EXPECT_EQ(each.mean(), runs.mean());
  EXPECT_EQ(each.stddev(), runs.stddev());
  EXPECT_EQ(each.min(), runs.min());
  EXPECT_EQ(each.max(), runs.max());
  for (double p : {1.0, 50.0, 95.0, 99.9}) EXPECT_EQ(each.percentile(p), runs.percentile(p));
}

// add() of one value (its own short path: one rounded addition to the
// integer sum of squares) leaves what add_repeated(value, 1) leaves, at
// every scale: sums below and past 2^64, odd squares (ties), and sums that
// leave the integers for long double.
TEST(LatencyHistogramStd, OneAddIsARepeatedAddOfOne) {
  std::mt19937_64 rng(4242);
  for (int shift_cap : {11, 33, 40, 63}) {
    LatencyHistogram one, repeated;
    for (int i = 0; i < 5000; ++i) {
      const auto v = static_cast<TimeNs>(rng() >> (64 - 1 - rng() % shift_cap)) - (i % 97 == 0);
      one.add(v);
      repeated.add_repeated(v, 1);
      if (i % 500 != 0) continue;
      ASSERT_EQ(one.stddev(), repeated.stddev()) << shift_cap << " " << i;
    }
    EXPECT_EQ(one.count(), repeated.count());
    EXPECT_EQ(one.mean(), repeated.mean());
    EXPECT_EQ(one.stddev(), repeated.stddev());
    EXPECT_EQ(one.min(), repeated.min());
    EXPECT_EQ(one.max(), repeated.max());
    for (double p : {0.0, 50.0, 95.0, 99.9, 100.0})
      EXPECT_EQ(one.percentile(p), repeated.percentile(p));
  }
}

// The closed form gives the bits a loop of additions gives: sums below and
// past 2^64 (where an odd square is a tie), values that cross binades at
// once, and values too small to move the sum.
TEST(LatencyHistogramStd, RepeatedAdditionMatchesTheLoopBitForBit) {
  std::mt19937_64 rng(2026);
  auto loop = [](long double sum, long double x, uint64_t times) {
    for (uint64_t i = 0; i < times; ++i) sum += x;
    return sum;
  };
  const long double starts[] = {0.0L,
                                1.0L,
                                std::ldexp(1.0L, 40),
                                std::ldexp(1.0L, 64) - 8,
                                std::ldexp(1.0L, 64),
                                std::ldexp(1.0L, 66) + 4,
                                std::ldexp(1.0L, 90)};
  for (int trial = 0; trial < 400; ++trial) {
    const long double start = starts[trial % 7] + static_cast<long double>(rng() % 1000);
    const auto v = static_cast<long double>(rng() % (trial % 3 == 0 ? 100 : 60'000'000));
    const long double x = trial % 11 == 0 ? std::ldexp(1.0L, 70) + 1 : v * v;
    const uint64_t times = rng() % (trial % 5 == 0 ? 200'000 : 3'000);
    const long double a = loop(start, x, times), b = add_repeatedly(start, x, times);
    ASSERT_EQ(std::memcmp(&a, &b, 10), 0) << "trial " << trial;
  }
}

// The integer sum of squares is the long double one bit for bit: from
// sums below 2^64 (exact) to far past it, with addends of up to 64
// significant bits at any offset from the sum's last place (ties to even
// included), squares that long double rounds, and runs long and short.
TEST(LatencyHistogramStd, IntegerSumOfSquaresIsTheLongDoubleSum) {
  if (std::numeric_limits<long double>::digits != 64)
    GTEST_SKIP() << "long double is not the x87 format here";
  using U128 = RoundedUint128;
  std::mt19937_64 rng(4242);
  auto as_long_double = [](U128 v) { return static_cast<long double>(v); };
  for (int trial = 0; trial < 3000; ++trial) {
    U128 start = 0;
    switch (trial % 5) {
      case 0:
        start = rng() % 1'000'000;
        break;
      case 1:
        start = (U128{1} << 64) - (rng() % 64);
        break;
      case 2:
        start = static_cast<U128>(rng() | (uint64_t{1} << 63)) << (rng() % 40);
        break;
      case 3:
        start = static_cast<U128>(rng()) << 60;
        break;
      default:
        start = static_cast<U128>(rng() % 4096) << (rng() % 100);
        break;
    }
    start = static_cast<U128>(as_long_double(start));  // a value long double holds
    U128 x = 0;
    switch (trial % 4) {
      case 0:
        x = square_rounded(rng() % 60'000'000);
        break;
      case 1:
        x = square_rounded(rng() >> (rng() % 64));  // squares long double must round
        break;
      case 2: {
        // An odd mantissa at a random offset: ties against many sums.
        const uint64_t m = (rng() >> (rng() % 64)) | 1;
        x = static_cast<U128>(m) << (rng() % 56);
        break;
      }
      default:
        x = (U128{1} << (rng() % 70)) + (U128{1} << (rng() % 8));
        break;
    }
    x = static_cast<U128>(as_long_double(x));
    const uint64_t times = rng() % (trial % 6 == 0 ? 100'000 : 70);
    long double want = as_long_double(start);
    const long double addend = as_long_double(x);
    for (uint64_t i = 0; i < times; ++i) want += addend;
    U128 got = start;
    if (!add_repeatedly_rounded(got, x, times)) {
      // Out of range: refused without a change.
      EXPECT_EQ(got, start) << "trial " << trial;
      continue;
    }
    const long double got_ld = as_long_double(got);
    ASSERT_EQ(std::memcmp(&got_ld, &want, 10), 0)
        << "trial " << trial << " start " << static_cast<double>(start) << " x "
        << static_cast<double>(x) << " times " << times;
  }
  // The square as long double makes it, for values whose square needs more
  // than 64 bits.
  for (int trial = 0; trial < 2000; ++trial) {
    const uint64_t v = rng() >> (rng() % 40);
    const long double want = static_cast<long double>(v) * static_cast<long double>(v);
    const long double got = static_cast<long double>(square_rounded(v));
    ASSERT_EQ(std::memcmp(&got, &want, 10), 0) << v;
  }
}

// A single addition (the histogram's add() of a value whose square needs
// more than 64 bits) is the long double addition, ties and sums leaving
// their binade included.
TEST(LatencyHistogramStd, OneIntegerAdditionIsTheLongDoubleAddition) {
  if (std::numeric_limits<long double>::digits != 64)
    GTEST_SKIP() << "long double is not the x87 format here";
  using U128 = RoundedUint128;
  std::mt19937_64 rng(77);
  auto as_long_double = [](U128 v) { return static_cast<long double>(v); };
  for (int trial = 0; trial < 20000; ++trial) {
    // Sums and addends of 64 significant bits at any scale below 2^126,
    // odd mantissas (ties) among them.
    const auto start =
        static_cast<U128>(as_long_double(static_cast<U128>(rng() | (trial % 2)) << (rng() % 62)));
    const auto x = static_cast<U128>(
        as_long_double(trial % 3 == 0 ? square_rounded(rng() >> (rng() % 32))
                                      : static_cast<U128>(rng() >> (rng() % 64)) << (rng() % 62)));
    long double want = as_long_double(start);
    want += as_long_double(x);
    U128 got = start;
    if (!add_repeatedly_rounded(got, x, 1)) {
      EXPECT_EQ(got, start) << "trial " << trial;
      continue;
    }
    // Compared as integers: converting an unrounded sum to long double
    // would round it the same way and hide the fault.
    ASSERT_TRUE(got == static_cast<U128>(want)) << "trial " << trial;
  }
}

// Past the integers' range the histogram goes on in long double from the
// same sum: its standard deviation is that of one long double sum.
TEST(LatencyHistogramStd, HugeValuesContinueInLongDouble) {
  LatencyHistogram h;
  long double squares = 0;
  uint64_t count = 0;
  long double sum = 0;
  for (TimeNs v : {TimeNs{5}, TimeNs{1} << 40, TimeNs{1} << 62, TimeNs{3} << 61, TimeNs{7}}) {
    h.add_repeated(v, 3);
    for (int i = 0; i < 3; ++i)
      squares += static_cast<long double>(v) * static_cast<long double>(v);
    count += 3;
    sum += 3 * static_cast<long double>(v);
  }
  const long double n = static_cast<long double>(count);
  const long double mean = sum / n;
  EXPECT_EQ(h.stddev(), static_cast<double>(std::sqrt(squares / n - mean * mean)));
}

TEST(SloTargetsMet, EachSetTargetIsCheckedAndAMissingTpotIsNot) {
  SloTargets none;
  EXPECT_TRUE(none.met(kNsPerS * 100, kNsPerS, kNsPerS * 1000));
  SloTargets slo;
  slo.ttft_ms = 500;
  slo.tpot_ms = 50;
  EXPECT_TRUE(slo.met(500 * kNsPerMs, 50 * kNsPerMs, 10 * kNsPerS));
  EXPECT_FALSE(slo.met(500 * kNsPerMs + 1, 10 * kNsPerMs, kNsPerS));
  EXPECT_FALSE(slo.met(100 * kNsPerMs, 51 * kNsPerMs, kNsPerS));
  EXPECT_TRUE(slo.met(100 * kNsPerMs, -1, kNsPerS));  // one token: no TPOT
  slo.e2e_ms = 900;
  EXPECT_FALSE(slo.met(100 * kNsPerMs, 10 * kNsPerMs, kNsPerS));
}

TEST(ServedMetricsGoodput, RateOverTheThroughputSpanAndFractionOfArrivals) {
  LatencyHistogram empty;
  RunMetrics m;
  fill_served_metrics({empty, empty, empty, empty, 8, 100, 50, 2 * kNsPerS, 10, 6}, m);
  EXPECT_EQ(m.goodput.requests, 6);
  EXPECT_DOUBLE_EQ(m.goodput.requests_per_s, 3.0);
  EXPECT_DOUBLE_EQ(m.goodput.fraction, 0.6);
  EXPECT_DOUBLE_EQ(m.throughput.requests_per_s, 4.0);
}

class LatencyExtrasRun : public testing::TempFolderTest {};

// The gaps between one request's tokens add up to (finish - first token), so
// the ITL mean is that sum over every request divided by its tokens after
// the first; and with no SLO every completed request is good.
TEST_F(LatencyExtrasRun, ItlMeanMatchesTheRequestRowsAndKeysAreAppended) {
  const ScenarioSpec spec = testing::scenario_from_text(testing::small_scenario("itl", 80));
  testing::CapturingSink sink;
  const ScenarioRunResult run = run_scenario(spec, &sink);
  double gaps_ns = 0, tokens = 0;
  int64_t completed = 0;
  for (const RequestRow& r : sink.request_rows) {
    if (r.status != "completed") continue;
    ++completed;
    gaps_ns += static_cast<double>(r.finished - r.first_token);
    tokens += static_cast<double>(r.output_tokens - 1);
  }
  ASSERT_GT(tokens, 0);
  EXPECT_NEAR(run.metrics.latency_ms.itl.mean, gaps_ns / tokens / 1e6, 1e-9);
  EXPECT_GT(run.metrics.latency_ms.itl.p95, 0);
  EXPECT_GE(run.metrics.latency_ms.itl.max, run.metrics.latency_ms.itl.p99);
  EXPECT_GT(run.metrics.latency_ms.ttft.std, 0);
  EXPECT_EQ(run.metrics.goodput.requests, completed);
  EXPECT_DOUBLE_EQ(run.metrics.goodput.requests_per_s, run.metrics.throughput.requests_per_s);

  const auto j = metrics_to_json(run.metrics);
  std::vector<std::string> ttft_keys, latency_keys;
  for (auto it = j["latency_ms"]["ttft"].begin(); it != j["latency_ms"]["ttft"].end(); ++it)
    ttft_keys.push_back(it.key());
  for (auto it = j["latency_ms"].begin(); it != j["latency_ms"].end(); ++it)
    latency_keys.push_back(it.key());
  EXPECT_EQ(ttft_keys,
            (std::vector<std::string>{"mean", "p50", "p90", "p99", "max", "p95", "std"}));
  EXPECT_EQ(latency_keys, (std::vector<std::string>{"ttft", "tpot", "e2e", "itl"}));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// `slo:` in the scenario sets what goodput counts: an impossible TTFT target
// leaves no request, a generous one every completed request, and a bad key
// is an error at its line.
TEST(ScenarioSlo, GoodputCountsTheRequestsMeetingTheScenariosTargets) {
  const std::string base = testing::small_scenario("slo", 40);
  const RunMetrics none =
      run_scenario(testing::scenario_from_text(base + "slo: {ttft_ms: 0.001}\n"), nullptr).metrics;
  EXPECT_EQ(none.goodput.requests, 0);
  const RunMetrics all =
      run_scenario(testing::scenario_from_text(base + "slo: {ttft_ms: 1.0e6, tpot_ms: 1.0e6}\n"),
                   nullptr)
          .metrics;
  EXPECT_EQ(all.goodput.requests, all.requests.completed);
  EXPECT_GT(all.goodput.requests, 0);
  EXPECT_THROW((void)testing::scenario_from_text(base + "slo: {ttft: 100}\n"), config::ConfigError);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
