// metrics.json says which kvsim wrote it and from what (SPEC 9 additions, the
// `provenance` section, last in the file), and a run folder can be run again
// from it: `kvsim run --from`. `--no-expect` runs without the expect block.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/build_info.hpp"
#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using Json = nlohmann::ordered_json;

class RunProvenanceCli : public testing::TempFolderTest {
 protected:
  // metrics.json with the host time zeroed, as text: runs compare byte for byte.
  std::string metrics_text(const std::string& folder) const {
    Json doc = read_json_file(folder + "/metrics.json");
    doc["sim"]["wall_s"] = 0.0;
    return doc.dump(2);
  }
};

TEST_F(RunProvenanceCli, ProvenanceIsTheLastSectionAndRunsOfOneBuildWriteTheSameBytes) {
  const std::string scenario = write("s.yaml", testing::small_scenario("prov"));
  const std::string sets = " --set seed=9 --set kv_cache.block_size=32";
  ASSERT_EQ(kvsim("run " + scenario + sets + " --quiet --out " + path("a")).exit_code, 0);
  ASSERT_EQ(kvsim("run " + scenario + sets + " --quiet --out " + path("b")).exit_code, 0);
  EXPECT_EQ(metrics_text(path("a")), metrics_text(path("b")));

  const Json doc = read_json_file(path("a") + "/metrics.json");
  std::string last;
  for (auto it = doc.begin(); it != doc.end(); ++it) last = it.key();
  EXPECT_EQ(last, "provenance");
  const Json& p = doc["provenance"];
  EXPECT_EQ(p["kvsim_version"], build_info::version());
  EXPECT_EQ(p["kvsim_commit"], build_info::commit());
  EXPECT_EQ(p["overrides"], Json({"seed=9", "kv_cache.block_size=32"}));
  EXPECT_EQ(p["scenario_file"], std::filesystem::weakly_canonical(scenario).string());
  const std::string resolved = p["resolved_scenario"];
  EXPECT_NE(resolved.find("seed: 9"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("block_size: 32"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("device: ascend-910b2"), std::string::npos) << resolved;
  // The resolved document is also beside metrics.json, with its origin.
  const std::string saved = read(path("a") + "/scenario.resolved.yaml");
  EXPECT_NE(saved.find("# override: seed=9"), std::string::npos) << saved;
  EXPECT_NE(saved.find(resolved), std::string::npos) << saved;
}

TEST_F(RunProvenanceCli, RunFromMetricsJsonOrResolvedYamlRepeatsTheRun) {
  const std::string scenario = write("s.yaml", testing::small_scenario("again"));
  ASSERT_EQ(kvsim("run " + scenario + " --set seed=11 --quiet --out " + path("first")).exit_code,
            0);
  auto r = kvsim("run --from " + path("first") + "/metrics.json --quiet --out " + path("json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(metrics_text(path("json")), metrics_text(path("first")));
  // The file may have changed since: the rerun uses the recorded document.
  write("s.yaml", testing::small_scenario("again", 5));
  r = kvsim("run --from " + path("first") + "/scenario.resolved.yaml --quiet --out " +
            path("yaml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(metrics_text(path("yaml")), metrics_text(path("first")));
  EXPECT_EQ(read(path("yaml") + "/requests.csv"), read(path("first") + "/requests.csv"));
}

// A preset is recorded as the keys it set, the user's overrides (from the
// file and from --set) winning, and the rerun from that record is the run.
TEST_F(RunProvenanceCli, TheResolvedScenarioHoldsThePresetsExpanded) {
  const std::string scenario =
      write("s.yaml", testing::small_scenario("presets") +
                          "kv_tiers: {preset: vllm_offloading, tiers: {dram: {capacity: 8GiB}}}\n");
  ASSERT_EQ(kvsim("run " + scenario + " --set kv_tiers.tiers.dram.latency=20us --quiet --out " +
                  path("a"))
                .exit_code,
            0);
  const std::string saved = read(path("a") + "/scenario.resolved.yaml");
  EXPECT_EQ(saved.find("preset:"), std::string::npos) << saved;
  EXPECT_EQ(saved.find("vllm_offloading"), std::string::npos) << saved;
  for (const char* key : {"capacity: 8GiB", "latency: 20us", "write_mode: async",
                          "store: on_compute", "read_bandwidth: 25GB/s", "eviction: lru"})
    EXPECT_NE(saved.find(key), std::string::npos) << key << "\n" << saved;
  EXPECT_EQ(read_json_file(path("a") + "/metrics.json")["provenance"]["resolved_scenario"],
            saved.substr(saved.find("name: presets")));
  const auto r =
      kvsim("run --from " + path("a") + "/scenario.resolved.yaml --quiet --out " + path("again"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read(path("again") + "/requests.csv"), read(path("a") + "/requests.csv"));
}

// `--set kv_cache.policy=NEW` keeps the old policy's own keys as its
// settings (kv_cache.<old>.*): the record holds them there too, so the
// rerun from it reads what the run read instead of failing on a key the
// new policy does not own.
TEST_F(RunProvenanceCli, TheResolvedScenarioRecordsAPolicySwitchAsTheRunReadIt) {
  std::string text = testing::small_scenario("switch");
  const std::string paged = "kv_cache: {policy: paged, block_size: 64, prefix_caching: true}";
  text.replace(
      text.find(paged), paged.size(),
      "kv_cache: {policy: sliding_window, update_mode: paged, window: 512, block_size: 64, "
      "prefix_caching: false}");
  const std::string scenario = write("s.yaml", text);
  ASSERT_EQ(kvsim("run " + scenario + " --set kv_cache.policy=paged --quiet --out " + path("a"))
                .exit_code,
            0);
  const std::string saved = read(path("a") + "/scenario.resolved.yaml");
  EXPECT_NE(saved.find("sliding_window:"), std::string::npos) << saved;
  const auto r =
      kvsim("run --from " + path("a") + "/scenario.resolved.yaml --quiet --out " + path("again"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read(path("again") + "/requests.csv"), read(path("a") + "/requests.csv"));
  EXPECT_EQ(metrics_text(path("again")), metrics_text(path("a")));
}

// A record edited into bad input is an error at its own line, in the file
// given to --from (not at that line of the first run's scenario file).
TEST_F(RunProvenanceCli, AnErrorInTheRecordNamesTheRecordsLine) {
  const std::string scenario = write("s.yaml", testing::small_scenario("edited"));
  ASSERT_EQ(kvsim("run " + scenario + " --set seed=3 --quiet --out " + path("a")).exit_code, 0);
  std::string saved = read(path("a") + "/scenario.resolved.yaml");
  const size_t at = saved.find("seed: 3");
  ASSERT_NE(at, std::string::npos) << saved;
  saved.replace(at, 7, "sede: 3");
  const int line = 1 + static_cast<int>(std::count(saved.begin(), saved.begin() + at, '\n'));
  const std::string edited = write("edited.resolved.yaml", saved);
  const auto r = kvsim("run --from " + edited + " --quiet --out " + path("b"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(edited + ":" + std::to_string(line) + ":1: sede"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(scenario + ":"), std::string::npos) << r.output;
}

TEST_F(RunProvenanceCli, RunFromRefusesFilesWithoutProvenanceAndAmbiguousArguments) {
  const std::string scenario = write("s.yaml", testing::small_scenario("bad"));
  const std::string plain = write("plain.json", R"({"scenario": "x"})");
  auto r = kvsim("run --from " + plain + " --quiet --out " + path("o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("provenance"), std::string::npos) << r.output;
  r = kvsim("run --from " + scenario + " --quiet --out " + path("o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = kvsim("run " + scenario + " --from " + plain + " --quiet --out " + path("o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = kvsim("run --quiet --out " + path("o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST_F(RunProvenanceCli, VersionFlagPrintsVersionAndCommit) {
  const auto r = kvsim("--version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(build_info::version()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(build_info::commit()), std::string::npos) << r.output;
}

TEST_F(RunProvenanceCli, NoExpectSkipsTheExpectBlock) {
  const std::string scenario = write(
      "s.yaml", testing::small_scenario("strict") + "expect:\n  requests.completed: {min: 1e9}\n");
  EXPECT_EQ(kvsim("run " + scenario + " --quiet --out " + path("a")).exit_code, 1);
  const auto r = kvsim("run " + scenario + " --quiet --no-expect --out " + path("b"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(path("b") + "/metrics.json"));
  // A run that cannot start still fails.
  EXPECT_EQ(
      kvsim("run " + scenario + " --no-expect --set seed=-1 --quiet --out " + path("c")).exit_code,
      2);
}

TEST(MetricsCheckProvenance, ProvenanceKeysAreNotCompared) {
  Json a = {{"requests", {{"completed", 3}}},
            {"provenance", {{"kvsim_commit", "abc"}, {"overrides", Json::array()}}}};
  Json b = {{"requests", {{"completed", 3}}}, {"provenance", {{"kvsim_commit", "def"}}}};
  const auto r = check_metrics(a, b, {});
  EXPECT_TRUE(r.passed()) << r.format({});
  EXPECT_EQ(r.keys_compared, 1);
  EXPECT_EQ(r.keys_ignored, 2);
  EXPECT_NE(r.format({}).find("2 provenance keys not compared"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
