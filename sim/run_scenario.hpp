#pragma once
// The one place that picks the engine a scenario runs on: serving (Ascend,
// vLLM-style continuous batching, sim/serve) or an on-device dialog (Qualcomm
// HTP, sim/genie), by the device's kind, in an explicit table.
#include <functional>
#include <string>
#include <vector>

#include "sim/cache/pool_sizing.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/run_sink.hpp"

namespace kvsim {

struct ScenarioRunResult {
  RunMetrics metrics;
  PoolSizing sizing;  // the paged pool (serving); weights and budget only for a dialog
};

// Runs `scenario` on the engine its device kind names, streaming rows to
// `sink` (may be null). Throws what the engine throws (CheckFailed on a
// numerics mismatch, std::logic_error on a broken invariant).
ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress = {});

// "serving" or "dialog": the engine run_scenario() uses for `scenario`.
std::string engine_name_for(const ScenarioSpec& scenario);

}  // namespace kvsim
