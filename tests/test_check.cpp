// Regression checks: `kvsim check` lists every difference between two
// metrics.json files and fails (exit 1) beyond tolerance; `expect` blocks fail
// `kvsim run` with exit 1 on a deliberate regression and pass otherwise.
#include <gtest/gtest.h>

#include "base/diagnostics.hpp"
#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using Json = nlohmann::ordered_json;
using testing::TempFolderTest;

Json sample() {
  return Json::parse(R"({"scenario": "a", "requests": {"completed": 100},
    "latency_ms": {"ttft": {"p99": 200.0}}, "sim": {"simulated_s": 10.0, "wall_s": 0.5}})");
}

TEST(MetricsCheck, IdenticalFilesPassWithNoDifferenceAndSkipWallTime) {
  Json other = sample();
  other["sim"]["wall_s"] = 9.0;  // host time: skipped by default
  const auto r = check_metrics(other, sample(), {});
  EXPECT_TRUE(r.passed());
  EXPECT_TRUE(r.differences.empty());
  EXPECT_EQ(r.keys_compared, 4);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0], "sim.wall_s");
  EXPECT_NE(r.format({}).find("skipped sim.wall_s"), std::string::npos);
}

TEST(MetricsCheck, EveryDifferenceIsListedAndOnlyThoseBeyondToleranceFail) {
  Json m = sample();
  m["latency_ms"]["ttft"]["p99"] = 204.0;  // +2 %
  m["requests"]["completed"] = 99;         // -1 %
  MetricsCheckOptions o;
  o.rel_tol = 0.015;
  const auto r = check_metrics(m, sample(), o);
  ASSERT_EQ(r.differences.size(), 2u);
  EXPECT_EQ(r.differences[0].key, "requests.completed");
  EXPECT_FALSE(r.differences[0].beyond_tolerance);
  EXPECT_EQ(r.differences[1].key, "latency_ms.ttft.p99");
  EXPECT_TRUE(r.differences[1].beyond_tolerance);
  EXPECT_NEAR(*r.differences[1].rel_diff, 0.02, 1e-12);
  EXPECT_FALSE(r.passed());
  o.abs_tol = 5.0;  // max(abs, rel * |baseline|) = 5 ms covers the 4 ms
  EXPECT_TRUE(check_metrics(m, sample(), o).passed());
}

TEST(MetricsCheck, MissingKeysAndStringChangesFailAndKeyPatternsSelect) {
  Json m = sample();
  m["scenario"] = "b";
  m["requests"].erase("completed");
  m["extra"] = 1;
  const auto r = check_metrics(m, sample(), {});
  ASSERT_EQ(r.differences.size(), 3u);
  for (const auto& d : r.differences) EXPECT_TRUE(d.beyond_tolerance) << d.key;
  EXPECT_EQ(r.differences[1].value, "(missing)");
  MetricsCheckOptions only_latency;
  only_latency.key_patterns = {"latency_ms.*"};
  const auto l = check_metrics(m, sample(), only_latency);
  EXPECT_TRUE(l.passed());
  EXPECT_EQ(l.keys_compared, 1);
}

class CheckCli : public TempFolderTest {};

TEST_F(CheckCli, ExitCodesZeroOneAndTwo) {
  const std::string base = write("base.json", sample().dump(2));
  Json slower = sample();
  slower["latency_ms"]["ttft"]["p99"] = 260.0;
  const std::string worse = write("worse.json", slower.dump(2));

  auto r = kvsim("check " + base + " --baseline " + base);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = kvsim("check " + worse + " --baseline " + base);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL latency_ms.ttft.p99: 260 vs baseline 200 (+60, +30.000%)"),
            std::string::npos)
      << r.output;
  r = kvsim("check " + worse + " --baseline " + base + " --rel-tol 0.5");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ok   latency_ms.ttft.p99"), std::string::npos) << r.output;
  r = kvsim("check " + worse + " --baseline " + base + " --keys 'requests.*,sim.*'");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  r = kvsim("check " + path("absent.json") + " --baseline " + base);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("absent.json:1:1: cannot read the file"), std::string::npos) << r.output;
  const std::string broken = write("broken.json", "{\n  \"a\": 1,\n  oops\n}\n");
  r = kvsim("check " + broken + " --baseline " + base);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("broken.json:3:3: invalid JSON"), std::string::npos) << r.output;
}

// A document nested far deeper than any metrics.json, or one that is not an
// object, is bad input (exit 2), never a crash from the code that walks it.
TEST_F(CheckCli, ADeeplyNestedOrNonObjectDocumentIsExitTwo) {
  const std::string base = write("base.json", sample().dump(2));
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "1";
  deep += std::string(100000, '}');
  auto r = kvsim("check " + write("deep.json", deep) + " --baseline " + base);
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 400);
  EXPECT_NE(r.output.find("nested deeper than 64 levels"), std::string::npos)
      << r.output.substr(0, 400);
  r = kvsim("check " + base + " --baseline " + write("list.json", "[1, 2]"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is not a JSON object of metrics"), std::string::npos) << r.output;
}

TEST_F(CheckCli, ExpectBlockFailsOnADeliberateRegressionAndPassesOtherwise) {
  const std::string base = testing::small_scenario("expect-test");
  const std::string ok = write("ok.yaml", base + R"(expect:
  requests.completed: {equals: 40}
  latency_ms.ttft.p50: {min: 0.001, max: 100000}
  kv_cache.prefix_hit_rate: {approx: 0.5, abs: 0.5}
)");
  auto r = kvsim("run " + ok + " --quiet --out " + path("ok"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The same run against bounds that its own metrics break.
  const std::string bad = write("bad.yaml", base + R"(expect:
  requests.completed: {equals: 41}
  latency_ms.ttft.p50: {max: 0.001}
  kv_cache.prefix_hit_rate: {approx: 2.0, rel: 0.01}
)");
  r = kvsim("run " + bad + " --quiet --out " + path("bad"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("expect.requests.completed: 40 is not equal to 41"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("expect.latency_ms.ttft.p50"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expect.kv_cache.prefix_hit_rate"), std::string::npos) << r.output;

  // The two runs differ only in their expectations: `check` finds no difference.
  r = kvsim("check " + path("bad") + "/metrics.json --baseline " + path("ok") + "/metrics.json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(", 0 differ,"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
