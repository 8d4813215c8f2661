#pragma once
// What `kvsim run` writes and prints: metrics.json, report.md and the summary
// table on stdout.
#include <nlohmann/json.hpp>

#include <string>

#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// metrics.json text (2-space indent, keys in SPEC order, trailing newline).
std::string metrics_json_text(const RunMetrics& m);
// The summary table printed after a run (plain text, fixed width).
std::string summary_table(const ScenarioSpec& s, const RunMetrics& m);
// "goodput: N requests met the SLO (...)" and the numerics verdict (mode,
// checks passed, largest error), as the summary and the reports show them.
std::string goodput_line(const RunMetrics& m);
std::string numerics_verdict(const RunMetrics& m);
// report.md: the scenario, the memory plan and the summary as Markdown;
// `warning` (reports/load_verdict.hpp), when not empty, leads it.
std::string run_report_markdown(const ScenarioSpec& s, const RunMetrics& m,
                                const PoolSizing& sizing, const std::string& warning = {});

}  // namespace kvsim
