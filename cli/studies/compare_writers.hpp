#pragma once
// The files of a comparison: compare.json (variants, values, ratios against
// the first variant), compare.csv, compare.md and compare.html (side-by-side
// table, bars of the metrics that differ most, a latency-throughput curve
// along a rate axis, overlaid CDFs and lines over time from the series each
// variant streamed).
#include <optional>
#include <string>
#include <vector>

#include "cli/studies/compare_report.hpp"
#include "reports/output_dir.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// value / first variant's value; nullopt when the first is 0.
std::optional<double> compare_ratio(double value, double first);

void write_compare_files(OutputDir& dir, const ScenarioSpec& base, const CompareResult& result,
                         const std::vector<VaryAxis>& axes, const std::vector<std::string>& sets);

}  // namespace kvsim
