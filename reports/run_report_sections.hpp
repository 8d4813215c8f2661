#pragma once
// What the run's reports (summary, report.md, report.html) show of the
// engine that ran, chosen by RunMetrics::engine, the component the run
// recorded, and registered by the engine's name like the engines themselves
// (sim/scenario/engine_registry.hpp). The common parts (requests, latency,
// throughput, charts) are in run_report.cpp and run_html_report.cpp.
#include <string>
#include <string_view>
#include <vector>

#include "reports/run_charts.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

struct EngineReport {
  std::string_view engine;      // RunMetrics::engine
  std::string_view steps_word;  // what sim.steps counts ("steps", "passes")
  // The cache's geometry in the summary's first line and in report.html's.
  std::string (*summary_geometry)(const ScenarioSpec& s);
  std::string (*html_geometry)(const ScenarioSpec& s);
  // The summary's lines between throughput and the "simulated" line.
  std::string (*summary_lines)(const ScenarioSpec& s, const RunMetrics& m);
  // report.md: the KV row that ends the memory plan table, and the
  // sections of the engine's own that follow it.
  std::string (*markdown)(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing);
  // report.html: the engine's tables after the charts.
  std::string (*html_tables)(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing);
  // report.html: the charts this engine's run offers, from the series it
  // streamed and the counters its components wrote (a chart of prefix hits
  // only when the run looked prefixes up, of chunks only when chunks were
  // asked for, of VTCM only when a session ran).
  std::vector<CaptionedChart> (*charts)(const RunMetrics& m, const LabelledSeries& run);
};

// The report parts of `m.engine`, or of the cluster when the run was one
// (its metrics carry cluster.*). Throws std::logic_error naming the engines
// that have report parts when there are none for it.
const EngineReport& engine_report(const RunMetrics& m);
std::vector<std::string> engine_report_names();

// Defined beside each engine's report code.
EngineReport serving_engine_report();  // reports/run_report_paged.cpp
EngineReport genie_engine_report();    // reports/genie_report.cpp
// A cluster of serving instances: the same figures labelled with what they
// sum over, its groups and instances, its charts (reports/cluster_report.cpp).
EngineReport cluster_engine_report();

}  // namespace kvsim
