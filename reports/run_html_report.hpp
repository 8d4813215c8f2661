#pragma once
// report.html of one run (SPEC 9): self-contained, the scenario and memory
// plan as tables, the summary, and charts (KV memory and queue over time,
// TTFT/TPOT CDFs) rendered by gnuplot from the run's CSV files.
#include <string>

#include "sim/cache/pool_sizing.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

namespace kvsim {

// `requests_csv`/`timeline_csv`: the run's files (read for the charts).
std::string run_report_html(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing,
                            const std::string& requests_csv, const std::string& timeline_csv);

}  // namespace kvsim
