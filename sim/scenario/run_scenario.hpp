#pragma once
// One scenario, one engine, one clock: run_scenario() builds the Simulator
// and the workload's request source, then the scenario's engine
// (sim/scenario/engine_registry.hpp), and runs it to the end.
#include <functional>
#include <string>
#include <vector>

#include "sim/cache/pool_sizing.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

struct ScenarioRunResult {
  RunMetrics metrics;  // metrics.engine names the engine that ran
  PoolSizing sizing;   // the paged pool (serving); weights and budget only for a dialog
};

// Runs `scenario` on its engine (sim/scenario/engine_registry.hpp), streaming
// rows to `sink` (may be null). Throws what the engine throws (CheckFailed on
// a numerics mismatch, std::logic_error on a broken invariant).
ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress = {});

// The engine `s` names (InstanceSpec::engine) on a clock it is given, with
// the numerics observer `numerics.mode` asks for: what run_scenario() and a
// cluster build, for tests and studies that drive an engine themselves.
std::unique_ptr<InferenceEngine> make_engine(const InstanceSpec& s, Simulator& sim,
                                             EngineUplink& uplink, RunSink* sink);

}  // namespace kvsim
