// timeline.csv's step columns hold the work of every step launched within a
// row's interval, whatever the interval; a dialog (Genie) run's file has no
// serving-only columns that would be zero throughout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

struct Table {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  double sum(const std::string& column) const {
    double s = 0;
    for (const auto& r : rows) s += std::stod(r.at(column));
    return s;
  }
  int nonzero(const std::string& column) const {
    int n = 0;
    for (const auto& r : rows) n += std::stod(r.at(column)) != 0 ? 1 : 0;
    return n;
  }
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  std::string cell;
  while (std::getline(s, cell, ',')) out.push_back(cell);
  return out;
}

Table read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  Table t;
  std::getline(in, line);
  t.header = split(line);
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < t.header.size() && i < cells.size(); ++i) row[t.header[i]] = cells[i];
    t.rows.push_back(row);
  }
  return t;
}

class TimelineColumns : public testing::TempFolderTest {
 protected:
  Table run(const std::string& scenario, const std::string& name, const std::string& interval) {
    const auto r = kvsim("run " + scenario + " --quiet --set output.timeline_interval=" + interval +
                         " --out " + path(name));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return read_csv(path(name) + "/timeline.csv");
  }
};

TEST_F(TimelineColumns, StepColumnsSumEveryStepWhateverTheRowInterval) {
  const std::string scenario = write("s.yaml", testing::small_scenario("steps", 60));
  const Table every = run(scenario, "every", "1ns");
  const Table sparse = run(scenario, "sparse", "200ms");
  ASSERT_GT(every.rows.size(), sparse.rows.size());
  EXPECT_GT(sparse.nonzero("step_tokens"), 1) << "only the first row held a step";
  EXPECT_GT(sparse.nonzero("step_ms"), 1);
  EXPECT_EQ(every.sum("step_tokens"), sparse.sum("step_tokens"));
  EXPECT_GT(sparse.sum("step_tokens"), 0);
  // Milliseconds are printed to the microsecond: each row rounds by 0.5 us.
  EXPECT_NEAR(every.sum("step_ms"), sparse.sum("step_ms"),
              1e-3 * static_cast<double>(every.rows.size() + sparse.rows.size()));
  EXPECT_EQ(sparse.header,
            (std::vector<std::string>{"time_ms", "running", "waiting", "swapped", "blocks_used",
                                      "kv_used_bytes", "tokens_held", "step_tokens", "step_ms",
                                      "steps", "step_seqs"}));
  // steps counts every step once; step_seqs / steps is the batch size.
  const auto sparse_metrics = nlohmann::ordered_json::parse(read(path("sparse") + "/metrics.json"));
  EXPECT_EQ(sparse.sum("steps"), sparse_metrics["sim"]["steps"].get<double>());
  EXPECT_EQ(every.sum("step_seqs"), sparse.sum("step_seqs"));
  EXPECT_GE(sparse.sum("step_seqs"), sparse.sum("steps"));
  // The metrics do not depend on how often rows are written.
  auto metrics = [&](const std::string& name) {
    auto doc = nlohmann::ordered_json::parse(read(path(name) + "/metrics.json"));
    doc["sim"].erase("wall_s");
    doc.erase("provenance");
    return doc.dump();
  };
  EXPECT_EQ(metrics("every"), metrics("sparse"));
}

TEST_F(TimelineColumns, DialogRunsReportTokensHeldAndNoBlockColumns) {
  const std::string scenario =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-llama3.2-3b-elite-pointer-shift.yaml";
  const Table every = run(scenario + " --no-expect --set workload.turns=3", "every", "1ns");
  const Table sparse = run(scenario + " --no-expect --set workload.turns=3", "sparse", "500ms");
  EXPECT_EQ(sparse.header, (std::vector<std::string>{"time_ms", "running", "waiting",
                                                     "kv_used_bytes", "tokens_held", "step_tokens",
                                                     "step_ms", "steps", "step_seqs"}));
  EXPECT_EQ(every.sum("steps"), sparse.sum("steps"));
  EXPECT_GT(sparse.nonzero("tokens_held"), static_cast<int>(sparse.rows.size()) / 2);
  EXPECT_GT(sparse.nonzero("step_tokens"), 1);
  EXPECT_EQ(every.sum("step_tokens"), sparse.sum("step_tokens"));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
