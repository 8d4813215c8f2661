#pragma once
// The parts of a run's summary, report.md and report.html that only an
// on-device dialog has: Genie KV buffers and updates, VTCM sessions. The
// genie engine's entry of the report parts (run_report_sections.hpp).
#include <string>

#include "sim/core/llama_bench_metrics.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// Lines of the terminal summary in place of the paged pool's.
std::string genie_summary_lines(const ScenarioSpec& s, const RunMetrics& m);

// llama-bench's markdown table (model, size, params, backend, ngl, test,
// t/s), either engine's run of `kind: llama_bench`.
std::string llama_bench_table(const ScenarioSpec& s, const RunMetrics& m,
                              const LlamaBenchMetrics& bench);

// report.md sections: the KV updates and the VTCM sessions.
std::string genie_report_markdown(const ScenarioSpec& s, const RunMetrics& m);

// report.html tables: Genie's buffers, who held how much VTCM, memory.
std::string genie_tables_html(const ScenarioSpec& s, const RunMetrics& m);

}  // namespace kvsim
