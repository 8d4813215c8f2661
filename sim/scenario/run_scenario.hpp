#pragma once
// One scenario, one engine, one clock: run_scenario() builds the Simulator
// and the workload's request source, then the engine the registry names for
// the device kind (sim/engine/engine_registry.hpp), and runs it to the end.
#include <functional>
#include <string>
#include <vector>

#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/run_sink.hpp"

namespace kvsim {

struct ScenarioRunResult {
  RunMetrics metrics;  // metrics.engine names the engine that ran
  PoolSizing sizing;   // the paged pool (serving); weights and budget only for a dialog
};

// Runs `scenario` on the engine its device kind names, streaming rows to
// `sink` (may be null). Throws what the engine throws (CheckFailed on a
// numerics mismatch, std::logic_error on a broken invariant).
ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress = {});

// "serving" or "genie": the engine run_scenario() uses for `scenario`.
std::string engine_name_for(const ScenarioSpec& scenario);

}  // namespace kvsim
