// The series a run's reports are drawn from, gathered while it streams: bounded
// whatever the run's length, and faithful (sums kept, peaks kept, CDFs ending
// at 1); the trace's sampling stays within its budget and covers the run.
#include <gtest/gtest.h>

#include <cmath>

#include "reports/run_charts.hpp"
#include "reports/run_series.hpp"
#include "reports/trace_writer.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(RunSeries, AMillionRowsFoldIntoAtMostTheChartWidthWithSumsAndPeaksKept) {
  RunSeries series;
  int64_t tokens = 0;
  for (int64_t i = 0; i < 1'000'000; ++i) {
    TimelineRow row;
    row.time = i * 1'000'000;  // 1 ms apart: 1,000 s
    row.kv_used_bytes = i == 777'777 ? 1'000'000 : 10;
    row.running = i % 7;
    row.step_tokens = 3;
    row.step_latency = 5;
    row.steps = 1;
    row.step_seqs = 2;
    tokens += 3;
    series.timeline(row);
  }
  ASSERT_LE(series.buckets().size(), RunSeries::kMaxBuckets);
  double sum = 0, peak = 0, steps = 0, seqs = 0;
  for (const SeriesBucket& b : series.buckets()) {
    sum += b.step_tokens;
    peak = std::max(peak, b.kv_used_max);
    steps += b.steps;
    seqs += b.step_seqs;
  }
  EXPECT_EQ(sum, static_cast<double>(tokens));
  EXPECT_EQ(peak, 1'000'000.0);  // a one-row spike survives the folding
  EXPECT_EQ(seqs / steps, 2.0);
  const LabelledSeries run{"x", &series};
  EXPECT_LE(kv_memory_chart({run}, 2e6).series[0].x.size(), RunSeries::kMaxBuckets);
  const ChartSpec batch = batch_size_chart({run});
  for (const double y : batch.series[0].y) EXPECT_EQ(y, 2.0);
}

TEST(RunSeries, DistributionsAreExactWhileSmallAndBoundedWhenLarge) {
  BoundedDistribution few;
  for (const double v : {3.0, 1.0, 2.0}) few.add(v);
  std::vector<double> x, y;
  few.cdf(x, y);
  EXPECT_EQ(x, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(y.back(), 1.0);

  BoundedDistribution many;
  for (int i = 1; i <= 200'000; ++i) many.add(static_cast<double>(i) / 100.0);
  many.cdf(x, y, 500);
  ASSERT_LE(x.size(), 501u);
  EXPECT_EQ(y.back(), 1.0);
  for (size_t i = 1; i < x.size(); ++i) {
    EXPECT_GE(x[i], x[i - 1]);
    EXPECT_GE(y[i], y[i - 1]);
  }
  // The median within the bucket width (1%).
  for (size_t i = 0; i < x.size(); ++i)
    if (y[i] >= 0.5) {
      EXPECT_NEAR(x[i], 1000.0, 20.0);
      break;
    }
}

TEST(RunSeries, SpansAreKeptUpToACapAndUpdatesSummed) {
  RunSeries series;
  for (int i = 0; i < 10'000; ++i) {
    SpanRow s{"kv_update", "KV update", static_cast<uint64_t>(i), i / 100, i * 1000, 500};
    s.bytes = 64;
    s.pointer_updates = 2;
    series.span(s);
  }
  // Rows arriving after spans in the same buckets, and buckets merging as
  // the run grows, keep the sums.
  TimelineRow row;
  for (int i = 0; i < 2000; ++i) {
    row.time = static_cast<TimeNs>(i) * 9'000'000;
    series.timeline(row);
  }
  EXPECT_EQ(series.spans().size(), RunSeries::kMaxSpans);
  EXPECT_EQ(series.spans_dropped(), 10'000u - RunSeries::kMaxSpans);
  double bytes = 0, pointers = 0;
  for (const SeriesBucket& b : series.buckets()) {
    bytes += b.bytes_moved;
    pointers += b.pointer_updates;
  }
  EXPECT_EQ(bytes, 64.0 * 10'000);
  EXPECT_EQ(pointers, 2.0 * 10'000);
  const ChartSpec timeline = turn_timeline_chart(series);
  EXPECT_EQ(timeline.kind, ChartSpec::Kind::spans);
  EXPECT_TRUE(chart_has_signal(timeline));
}

TEST(TraceSampler, StaysWithinItsBudgetAndReachesTheEndOfTheRun) {
  TraceRunSink::Sampler sampler(1000);
  uint64_t last_kept = 0;
  for (uint64_t i = 0; i < 10'000'000; ++i)
    if (sampler.keep()) last_kept = i;
  EXPECT_LE(sampler.kept(), 1000u + 64u);
  EXPECT_GT(sampler.kept(), 500u);
  EXPECT_GT(last_kept, 10'000'000u / 2);  // later events are thinner, not gone
  TraceRunSink::Sampler small(1000);
  for (int i = 0; i < 400; ++i) EXPECT_TRUE(small.keep());  // a short run keeps everything
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
