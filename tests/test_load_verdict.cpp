// The overload verdict (reports/load_verdict.hpp): an engine that serves
// what arrives is never called overloaded, one that falls behind is, with
// the rates the arithmetic gives; a burst worked off before the second half
// of the arrivals is not overload; and kvsim run says so in its summary,
// report.md and report.html.
#include <gtest/gtest.h>

#include "report_test_helpers.hpp"
#include "reports/load_verdict.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::TempFolderTest;

constexpr TimeNs kMs = 1'000'000;

RequestRow row(uint64_t id, TimeNs arrival, TimeNs finished) {
  RequestRow r;
  r.id = id;
  r.status = "completed";
  r.arrival = arrival;
  r.finished = finished;
  r.first_token = arrival;
  return r;
}

TEST(LoadVerdict, AnEngineThatKeepsUpIsNotOverloaded) {
  LoadVerdictSink sink;
  for (uint64_t i = 0; i < 200; ++i)  // 10 req/s, each 50 ms
    sink.request(
        row(i, static_cast<TimeNs>(i) * 100 * kMs, static_cast<TimeNs>(i) * 100 * kMs + 50 * kMs));
  const auto v = sink.verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->overloaded);
  EXPECT_NEAR(v->offered_per_s, 10.0, 0.2);
  EXPECT_NEAR(v->served_per_s, 10.0, 0.2);
  EXPECT_LE(v->backlog_to, 1);
  EXPECT_EQ(overload_warning(v), "");
}

// 10 req/s offered to an engine that finishes one request per 200 ms, in
// order: it serves 5/s and the backlog grows by 5 a second.
TEST(LoadVerdict, AnEngineThatFallsBehindIsOverloadedByTheRatesDifference) {
  LoadVerdictSink sink;
  for (uint64_t i = 0; i < 400; ++i)
    sink.request(
        row(i, static_cast<TimeNs>(i) * 100 * kMs, static_cast<TimeNs>(i + 1) * 200 * kMs));
  const auto v = sink.verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->overloaded);
  EXPECT_NEAR(v->offered_per_s, 10.0, 0.3);
  EXPECT_NEAR(v->served_per_s, 5.0, 0.3);
  const double window = v->to_s - v->from_s;
  EXPECT_NEAR(static_cast<double>(v->backlog_to - v->backlog_from), 5.0 * window, 3.0);
  const std::string w = overload_warning(v);
  EXPECT_NE(w.find("overloaded"), std::string::npos);
  EXPECT_NE(w.find("arrived at 10."), std::string::npos) << w;
}

// Half of the requests at once, worked off within the first half of the
// arrival window; then a rate the engine keeps up with.
TEST(LoadVerdict, ABurstWorkedOffEarlyIsNotOverload) {
  LoadVerdictSink sink;
  uint64_t id = 0;
  for (int i = 0; i < 100; ++i) sink.request(row(id++, 0, static_cast<TimeNs>(i + 1) * 40 * kMs));
  for (int i = 0; i < 100; ++i) {
    const TimeNs t = 5000 * kMs + static_cast<TimeNs>(i) * 100 * kMs;
    sink.request(row(id++, t, t + 30 * kMs));
  }
  const auto v = sink.verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->overloaded);
}

TEST(LoadVerdict, FewArrivalsOrRejectionsSayNothingWrong) {
  LoadVerdictSink few;
  for (uint64_t i = 0; i < 10; ++i)
    few.request(row(i, static_cast<TimeNs>(i) * kMs, 1000000 * kMs));
  EXPECT_FALSE(few.verdict().has_value());
  EXPECT_FALSE(LoadVerdictSink().verdict().has_value());
  // Rejected requests leave as they arrive: refused work is no backlog.
  LoadVerdictSink rejected;
  for (uint64_t i = 0; i < 100; ++i) {
    RequestRow r = row(i, static_cast<TimeNs>(i) * 100 * kMs, -1);
    r.status = "rejected";
    rejected.request(r);
  }
  ASSERT_TRUE(rejected.verdict().has_value());
  EXPECT_FALSE(rejected.verdict()->overloaded);
}

// Hours of arrivals fold into the same bounded buckets and keep the verdict.
TEST(LoadVerdict, LongRunsFoldIntoBoundedBuckets) {
  LoadVerdictSink sink;
  const TimeNs gap = 2000 * kMs;  // 0.5 req/s for ~5.5 hours, served at 0.4/s
  for (uint64_t i = 0; i < 10000; ++i)
    sink.request(row(i, static_cast<TimeNs>(i) * gap, static_cast<TimeNs>(i + 1) * 2500 * kMs));
  const auto v = sink.verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->overloaded);
  EXPECT_NEAR(v->served_per_s / v->offered_per_s, 0.8, 0.02);
}

class OverloadedRun : public TempFolderTest {};

TEST_F(OverloadedRun, TheSummaryAndBothReportsWarnAndAStableRunDoesNot) {
  // 300 req/s of up to 1024-token prompts on one die: far past what it serves.
  const std::string hot = write("hot.yaml", testing::small_scenario("hot", 600, 300));
  const auto r = kvsim("run " + hot + " --no-expect --out " + path("hot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: overloaded"), std::string::npos) << r.output;
  EXPECT_NE(read(path("hot/report.md")).find("warning: overloaded"), std::string::npos);
  EXPECT_NE(read(path("hot/report.html")).find("<p class=\"warning\">warning: overloaded"),
            std::string::npos);
  const std::string calm = write("calm.yaml", testing::small_scenario("calm", 200, 2));
  const auto c = kvsim("run " + calm + " --no-expect --out " + path("calm"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.output.find("overloaded"), std::string::npos) << c.output;
  EXPECT_EQ(read(path("calm/report.html")).find("class=\"warning\""), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
