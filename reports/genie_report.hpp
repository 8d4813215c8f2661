#pragma once
// The parts of a run's summary and report.md that only an on-device dialog
// has: Genie KV buffers and updates, VTCM sessions.
#include <string>

#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

namespace kvsim {

// True for a run of the dialog engine (it reports VTCM sessions).
inline bool is_genie_run(const RunMetrics& m) {
  return !m.sessions.empty();
}

// Lines of the terminal summary in place of the paged pool's.
std::string genie_summary_lines(const ScenarioSpec& s, const RunMetrics& m);

// report.md sections: the KV updates and the VTCM sessions.
std::string genie_report_markdown(const ScenarioSpec& s, const RunMetrics& m);

}  // namespace kvsim
