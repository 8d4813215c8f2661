// kvsim sweep and kvsim search: the sweep file (strict, FILE:LINE:COL),
// grid and sample expansion, byte-identical results for any --jobs and under
// mpirun, --resume from the journal, and the search's choice on a case whose
// answer can be reasoned out by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "base/diagnostics.hpp"
#include "base/source_paths.hpp"
#include "cli/studies/search.hpp"
#include "cli/studies/sweep_report.hpp"
#include "cli/studies/sweep_spec.hpp"
#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
using testing::TempFolderTest;

// A 2 x 2 grid of a small scenario: four variants of ~20 ms each.
std::string small_sweep(const std::string& base) {
  return "base: " + base + R"(
set: {workload.requests: 20}
grid:
  kv_cache.block_size: [16, 64]
  workload.arrival.rate_per_s: [10, 40]
metrics: [requests.completed, latency_ms.ttft.p99, throughput.output_tokens_per_s]
)";
}

int run_kvsim(const std::string& args) {
  const int rc = std::system((std::string(KVSIM_BINARY) + " " + args).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class SweepTest : public TempFolderTest {
 protected:
  std::string sweep_file() {
    write("base.yaml", testing::small_scenario("sweep-base"));
    return write("sweep.yaml", small_sweep("base.yaml"));
  }
};

TEST(SweepFile, GridExpandsFirstAxisOutermostAndSamplesAreStratified) {
  SweepSpec spec;
  spec.grid = {{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}};
  const auto v = expand_sweep(spec);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[1].label, "a=1 b=y");
  EXPECT_EQ(v[5].sets, (std::vector<std::string>{"a=2", "b=z"}));

  const std::vector<SweepRange> ranges = {{"r", 0, 10, false}, {"n", 1, 4, true}};
  const auto pts = sample_ranges(ranges, {"latin_hypercube", 10, 7});
  std::set<int> strata;
  for (const auto& p : pts) {
    strata.insert(static_cast<int>(p[0]));  // one point per unit stratum of [0, 10)
    EXPECT_GE(p[1], 1);
    EXPECT_LE(p[1], 4);
    EXPECT_EQ(p[1], std::floor(p[1]));
  }
  EXPECT_EQ(strata.size(), 10u);
  EXPECT_EQ(pts, sample_ranges(ranges, {"latin_hypercube", 10, 7}));  // same seed, same points
  EXPECT_NE(pts, sample_ranges(ranges, {"latin_hypercube", 10, 8}));
}

TEST(SweepFile, ParetoFrontKeepsOnlyUndominatedPoints) {
  const auto front = pareto_front({{0, 100, 50}, {1, 200, 80}, {2, 150, 90}, {3, 50, 40}});
  ASSERT_EQ(front.size(), 3u);
  EXPECT_EQ(front[0].index, 3u);
  EXPECT_EQ(front[1].index, 0u);
  EXPECT_EQ(front[2].index, 1u);  // 2 is dominated by 1 (more throughput, less latency)
}

TEST_F(SweepTest, BadSweepFileIsExitTwoWithFileLineColumn) {
  write("base.yaml", testing::small_scenario("sweep-base"));
  const std::string bad = write("bad.yaml", R"(base: base.yaml
grid:
  kv_cache.block_size: [16, 64]
metrics: [latency_ms.ttft.p99, latency_ms.ttft.p999]
colour: blue
)");
  try {
    load_sweep(bad, false);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(bad + ":4:"), std::string::npos) << text;  // the unknown metric
    EXPECT_NE(text.find("did you mean 'latency_ms.ttft.p99'"), std::string::npos) << text;
    EXPECT_NE(text.find(bad + ":5:1"), std::string::npos) << text;  // the unknown key
  }
  // An axis none of whose values loads points at the axis in the sweep file.
  const std::string typo =
      write("typo.yaml", "base: base.yaml\ngrid:\n  kv_cache.blok_size: [16]\n");
  EXPECT_EQ(run_kvsim("sweep " + typo + " --quiet --out " + path("o") + " 2>" + path("err")), 2);
  EXPECT_NE(read(path("err")).find(typo + ":3:3: kv_cache.blok_size"), std::string::npos)
      << read(path("err"));
}

TEST_F(SweepTest, JobsAndMpiRanksWriteByteIdenticalFiles) {
  const std::string file = sweep_file();
  ASSERT_EQ(run_kvsim("sweep " + file + " --quiet --jobs 1 --out " + path("j1")), 0);
  ASSERT_EQ(run_kvsim("sweep " + file + " --quiet --jobs 2 --out " + path("j2")), 0);
  const std::string csv = read(path("j1/sweep.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_EQ(csv, read(path("j2/sweep.csv")));
  EXPECT_EQ(read(path("j1/sweep.json")), read(path("j2/sweep.json")));
  EXPECT_EQ(read(path("j1/sweep.html")), read(path("j2/sweep.html")));
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun not found: the MPI comparison is skipped";
  // Root (CI containers) must opt in; --oversubscribe: 2 ranks on any core count.
  // Open MPI keeps allocations of its own until exit; under the sanitizer
  // build the ranks' leak report would be Open MPI's, not kvsim's (the
  // --jobs runs above keep leak checking).
  const std::string mpirun =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 "
      "timeout 60 mpirun -np 2 "
      "--oversubscribe " +
      std::string(KVSIM_BINARY) + " sweep " + file + " --quiet --out " + path("mpi");
  ASSERT_EQ(std::system(mpirun.c_str()), 0);
  EXPECT_EQ(csv, read(path("mpi/sweep.csv")));
  EXPECT_EQ(read(path("j1/sweep.json")), read(path("mpi/sweep.json")));
}

TEST_F(SweepTest, ResumeKeepsTheJournalsVariantsAndRunsTheRest) {
  const std::string file = sweep_file();
  ASSERT_EQ(run_kvsim("sweep " + file + " --quiet --jobs 2 --out " + path("s")), 0);
  const std::string full = read(path("s/sweep.csv"));
  // Keep variant 1's line only, with a marked value: if --resume ran it
  // again the mark would be gone. A torn line (a kill mid-write) follows.
  std::ifstream in(path("s/journal.jsonl"));
  std::string line, kept;
  while (std::getline(in, line))
    if (line.rfind("{\"index\":1,", 0) == 0) kept = line;
  ASSERT_FALSE(kept.empty());
  const std::string key = "\"completed\":20";
  ASSERT_NE(kept.find(key), std::string::npos);
  kept.replace(kept.find(key), key.size(), "\"completed\":12345");
  std::ofstream(path("s/journal.jsonl")) << kept << "\n{\"index\":2,\"lab";
  ASSERT_EQ(
      run_kvsim("sweep " + file + " --jobs 2 --resume --out " + path("s") + " > " + path("stdout")),
      0);
  EXPECT_NE(read(path("stdout")).find("(1 taken from the journal)"), std::string::npos);
  const std::string resumed = read(path("s/sweep.csv"));
  EXPECT_NE(resumed.find(",12345,"), std::string::npos) << resumed;
  std::string expected = full;
  const size_t row = expected.find("\n1,") + 1;
  const size_t cell = expected.find(",20,", row);
  expected.replace(cell, 4, ",12345,");
  EXPECT_EQ(resumed, expected);
}

TEST_F(SweepTest, SearchPicksTheFewestDevicesAndPrunes) {
  // Qwen3-32B on 910B2: tensor 1 cannot hold the weights (pruned at load,
  // never run); with an SLO every probe meets, tensor 2 and 4 both serve the
  // top rate per instance, so the target needs the same number of instances
  // and tensor 2 uses half the devices: chosen.
  const std::string base = std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/qwen3-32b-tp4.yaml";
  const std::string loose = write("loose.yaml", "base: " + base + R"(
set: {workload.requests: 12}
grid: {parallel.tensor: [1, 2, 4]}
search: {rates: [1, 2], target_rate_per_s: 5, slo: {ttft_p99_ms: 1.0e9}}
)");
  SweepOptions options;
  options.jobs = 2;
  options.out = path("loose");
  options.kvsim_binary = KVSIM_BINARY;
  const SearchResult r = run_search(load_sweep(loose, true), options);
  ASSERT_EQ(r.candidates.size(), 3u);
  EXPECT_FALSE(r.candidates[0].load_error.empty());
  EXPECT_NE(r.candidates[0].reason.find("does not fit"), std::string::npos);
  ASSERT_TRUE(r.chosen.has_value());
  EXPECT_EQ(*r.chosen, 1u);
  EXPECT_EQ(r.candidates[1].instances, 3);  // ceil(5 / 2)
  EXPECT_EQ(r.candidates[1].total_devices, 6);
  EXPECT_EQ(r.candidates[2].total_devices, 12);
  EXPECT_EQ(r.probes.size(), 4u);  // 2 rates x 2 candidates that load
  EXPECT_NE(read(path("loose/search.md")).find("CHOSEN"), std::string::npos);

  // An SLO nothing meets: each candidate that loads runs its lowest rate only.
  const std::string tight = write("tight.yaml", "base: " + base + R"(
set: {workload.requests: 12}
grid: {parallel.tensor: [1, 2, 4]}
search: {rates: [1, 2, 4], slo: {tpot_p99_ms: 0.001}}
)");
  options.out = path("tight");
  const SearchResult t = run_search(load_sweep(tight, true), options);
  EXPECT_FALSE(t.chosen.has_value());
  ASSERT_EQ(t.probes.size(), 2u);
  for (const auto& p : t.probes) EXPECT_EQ(p.rate, 1);
  EXPECT_NE(t.candidates[1].reason.find("higher rates not run"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// One device's answer names its choice, or says none meets the SLO only when
// every probe ran: a probe the environment failed leaves it undetermined.
TEST(SearchPerDevice, AFailedProbeLeavesEveryDeviceUndetermined) {
  SearchResult r;
  r.candidates.resize(1);
  r.candidates[0].variant.label = "device=h100-sxm5,tp=2";
  r.candidates[0].total_devices = 4;
  const SearchResult::PerDevice chosen{"h100-sxm5", 0}, none{"ascend-910b2", std::nullopt};
  EXPECT_EQ(per_device_text(r, chosen), "device=h100-sxm5,tp=2 (4 devices)");
  EXPECT_EQ(per_device_text(r, none), "none meets the SLO");
  r.failed_environment = 1;
  EXPECT_EQ(per_device_text(r, none), "undetermined");
}

// kvsim validate reads a file under a sweeps/ folder as a sweep (every
// shipped one passes) instead of as a scenario.
// Whether the sweep's `base:` scenario replays shared data (../shared/data,
// referenced in place) that this checkout does not have beside it.
bool needs_absent_shared_data(const std::filesystem::path& sweep) {
  std::error_code ec;
  if (std::filesystem::is_directory(KVSIM_SHARED_DATA_DIR, ec)) return false;
  std::ifstream in(sweep);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("base:")) continue;
    std::string name = line.substr(5);
    name.erase(0, name.find_first_not_of(" \t"));
    name = name.substr(0, name.find_first_of(" \t#"));
    std::ifstream base(std::filesystem::path(KVSIM_SOURCE_DIR) / "configs/scenarios" /
                       (name + ".yaml"));
    const std::string text((std::istreambuf_iterator<char>(base)), {});
    return text.find("shared/data/") != std::string::npos;
  }
  return false;
}

TEST(SweepValidate, ShippedSweepsValidateAsSweeps) {
  const std::filesystem::path dir = std::filesystem::path(KVSIM_SOURCE_DIR) / "configs/sweeps";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (needs_absent_shared_data(e.path())) {
      std::cout << "skipped (shared data absent): " << e.path() << "\n";
      continue;
    }
    const auto r =
        testing::run_command(std::string(KVSIM_BINARY) + " validate " + e.path().string());
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
    ++files;
  }
  EXPECT_GE(files, 4);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
