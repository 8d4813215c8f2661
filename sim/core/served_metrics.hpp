#pragma once
// The request-level metrics every engine reports the same way (SPEC 9):
// latency_ms.{ttft,tpot,e2e} from the run's histograms and throughput over
// the time to the last completion. Every engine fills them here through the
// EngineShell it composes (sim/engine/engine_shell.cpp), so the two kinds of
// run can be compared key for key.
#include <cstdint>
#include <optional>

#include "base/units.hpp"
#include "sim/core/latency_histogram.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

// A histogram of nanoseconds as a summary in milliseconds; all zero when
// the histogram is empty.
LatencySummary summarize_latency(const LatencyHistogram& h);

// Service-level objectives a completed request must meet to count towards
// goodput; an unset target is not checked.
struct SloTargets {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
  // `tpot` < 0 when the request generated one token (no TPOT to check).
  bool met(TimeNs ttft, TimeNs tpot, TimeNs e2e) const;
};

// What the requests of a run came to. The shell brace-initialises it in
// field order from members of the same names.
struct ServedRequests {
  const LatencyHistogram& ttft;
  const LatencyHistogram& tpot;
  const LatencyHistogram& e2e;
  const LatencyHistogram& itl;
  int64_t completed = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;  // of the completed requests
  TimeNs last_completion = 0;                    // the throughput's time span
  int64_t arrived = 0;
  int64_t met_slo = 0;  // completed requests within SloTargets
};

// Fills m.latency_ms, m.throughput and m.goodput (rates stay 0 when nothing
// completed after time 0).
void fill_served_metrics(const ServedRequests& served, RunMetrics& m);

}  // namespace kvsim
