#pragma once
// report.html of one run (SPEC 9): self-contained, the scenario, latency
// (p95, std, ITL), goodput and the numerics verdict as tables, the charts the
// run's components offer (reports/run_report_sections.hpp) rendered by
// gnuplot from the series the run streamed, the engine's tables and the
// summary; `warning` (reports/load_verdict.hpp), when not empty, above the
// latency tables. `charts`: a renderer started before the run (its gnuplot start-up
// overlapped the run), or nullptr for one started here.
#include <string>

#include "reports/gnuplot_chart.hpp"
#include "reports/run_series.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

std::string run_report_html(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing,
                            const RunSeries& series, ChartRenderer* charts = nullptr,
                            const std::string& warning = {});

}  // namespace kvsim
