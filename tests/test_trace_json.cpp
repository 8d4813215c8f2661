// `kvsim run --trace FILE.json`: Chrome trace-event JSON that ui.perfetto.dev
// and chrome://tracing load: an object with a traceEvents array, every event
// with a phase, a pid and a numeric timestamp; async begin/end pairs
// balanced per request; complete events with a non-negative duration.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using Json = nlohmann::json;

class TraceJson : public testing::TempFolderTest {
 protected:
  // Runs `scenario` with --trace and returns the parsed trace, checking what
  // every event must carry.
  Json traced_run(const std::string& scenario) {
    const auto r = kvsim("run " + scenario + " --quiet --no-expect --out " + path("out") +
                         " --trace " + path("trace.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const Json j = Json::parse(read(path("trace.json")));  // throws on invalid JSON
    EXPECT_TRUE(j.at("traceEvents").is_array());
    std::map<std::pair<uint64_t, std::string>, int> open;  // (id, name) -> depth
    for (const Json& e : j["traceEvents"]) {
      const std::string ph = e.at("ph");
      EXPECT_TRUE(e.at("pid").is_number_integer());
      if (ph == "M") continue;
      EXPECT_TRUE(e.at("ts").is_number());
      EXPECT_GE(e["ts"].get<double>(), 0.0);
      if (ph == "X") {
        EXPECT_GE(e.at("dur").get<double>(), 0.0);
      }
      if (ph == "b") ++open[{e.at("id").get<uint64_t>(), e.at("name").get<std::string>()}];
      if (ph == "e") --open[{e.at("id").get<uint64_t>(), e.at("name").get<std::string>()}];
    }
    for (const auto& [key, depth] : open) EXPECT_EQ(depth, 0) << key.second << " " << key.first;
    return j;
  }

  static int count(const Json& j, const std::string& ph, const std::string& name) {
    int n = 0;
    for (const Json& e : j["traceEvents"])
      if (e["ph"] == ph && e.value("name", "") == name) ++n;
    return n;
  }
};

TEST_F(TraceJson, TheDefaultScenarioTraceHasRequestPhasesAndStepsWithBatchSizes) {
  const Json j = traced_run(std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/default.yaml");
  EXPECT_GT(count(j, "b", "queue"), 0);
  EXPECT_EQ(count(j, "b", "prefill"), count(j, "e", "prefill"));
  EXPECT_GT(count(j, "b", "decode"), 0);
  ASSERT_GT(count(j, "X", "step"), 0);
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "step") {
      EXPECT_GE(e["args"]["batch_size"].get<int>(), 1);
      EXPECT_GE(e["args"]["tokens"].get<int>(), 1);
    }
  EXPECT_GT(count(j, "C", "queue"), 0);
  EXPECT_TRUE(j.at("otherData").contains("steps"));
}

TEST_F(TraceJson, ADialogTraceHasPassesKvUpdatesAndVtcmWaits) {
  const Json j =
      traced_run(std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-vtcm-contention-v75.yaml");
  int passes = 0, updates = 0, waits = 0;
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    passes += e["cat"] == "pass";
    updates += e["cat"] == "kv_update";
    waits += e["cat"] == "vtcm_wait";
  }
  EXPECT_GT(passes, 0);
  EXPECT_GT(updates, 0);
  EXPECT_GT(waits, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
