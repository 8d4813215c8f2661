#pragma once
// Runs one scenario into an output folder: requests.csv and timeline.csv
// streamed while it runs, then metrics.json and report.md; the folder appears
// whole or not at all. Used by `kvsim run` and by every command that runs
// scenarios (compare, sweeps).
#include <functional>
#include <string>

#include "reports/load_verdict.hpp"
#include "reports/run_series.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {

struct RunFolderResult {
  RunMetrics metrics;
  PoolSizing sizing;
  std::string folder;  // final path
  RunSeries series;    // what the charts show, gathered while the run streamed (bounded)
  std::optional<LoadVerdict> load;  // whether the offered load exceeded what was served
};

// `force`: replace `out` even when kvsim did not write it (reports/output_dir.hpp).
// `provenance`, when given, goes into metrics.json and scenario.resolved.yaml
// so that `kvsim run --from` can run the folder's scenario again.
// `trace_path`, when not empty, receives the run as Chrome trace-event JSON
// (reports/trace_writer.hpp), under the same output rule (`force` applies to
// it too); it may not lie inside `out`. Nothing is read back from the CSV files: the
// reports come from the series streamed beside them, so memory stays flat
// whatever the run's length.
RunFolderResult run_into_folder(const ScenarioSpec& spec, const std::string& out,
                                std::function<void(const RunProgress&)> progress = {},
                                bool force = false, const RunProvenance* provenance = nullptr,
                                const std::string& trace_path = {});

}  // namespace kvsim
