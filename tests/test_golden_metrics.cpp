// Golden metrics (tests/golden/NAME.metrics.json): a fresh run of
// configs/scenarios/NAME.yaml must match its golden file exactly through
// `kvsim check` (sim.wall_s skipped). A deliberate change of behaviour is
// signed off by running tests/golden/refresh.sh and reviewing the diff.
#include <gtest/gtest.h>

#include <algorithm>

#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

const std::string kGoldenDir = std::string(KVSIM_SOURCE_DIR) + "/tests/golden";

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kGoldenDir, ec)) {
    const std::string f = e.path().filename().string();
    const std::string suffix = ".metrics.json";
    if (f.size() > suffix.size() && f.ends_with(suffix))
      names.push_back(f.substr(0, f.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

class GoldenMetrics : public testing::TempFolderTest,
                      public ::testing::WithParamInterface<std::string> {};

TEST_P(GoldenMetrics, FreshRunMatchesTheGoldenFile) {
  const std::string name = GetParam();
  const std::string golden = kGoldenDir + "/" + name + ".metrics.json";
  const std::string scenario =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/" + name + ".yaml";
  ASSERT_TRUE(fs::exists(scenario)) << "golden file without a scenario: " << golden;
  auto r = kvsim("run " + scenario + " --quiet --out " + path("run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kvsim("check " + path("run") + "/metrics.json --baseline " + golden);
  EXPECT_EQ(r.exit_code, 0) << r.output
                            << "\nIf this change of behaviour is intended, run "
                               "tests/golden/refresh.sh build/kvsim and review git diff.";

  // And a deliberate regression of 10 % in p99 TTFT is caught.
  auto doc = read_json_file(golden);
  doc["latency_ms"]["ttft"]["p99"] = doc["latency_ms"]["ttft"]["p99"].get<double>() * 1.1 + 1.0;
  const std::string worse = write("worse.json", doc.dump(2));
  r = kvsim("check " + worse + " --baseline " + golden + " --rel-tol 0.05");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL latency_ms.ttft.p99"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenMetrics, ::testing::ValuesIn(golden_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(GoldenMetricsFolder, HoldsAHandfulOfScenarios) {
  EXPECT_GE(golden_names().size(), 4u);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
