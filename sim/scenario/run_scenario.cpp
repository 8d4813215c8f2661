#include "sim/scenario/run_scenario.hpp"

#include "sim/cluster/cluster_run.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/scenario/engine_registry.hpp"

namespace kvsim {

ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress) {
  if (scenario.cluster) {
    ClusterRun cluster(scenario, sink);
    ScenarioRunResult r;
    r.metrics = cluster.run();
    r.sizing = cluster.memory_plan();
    return r;
  }
  Simulator sim;
  const std::unique_ptr<RequestSource> source =
      make_request_source(*scenario.workload, scenario.seed, scenario.model.vocab_size);
  ArrivalPump pump(sim, *source);
  const std::unique_ptr<InferenceEngine> engine =
      engine_for(scenario).make(scenario, sim, pump, sink);
  if (progress) engine->set_progress(std::move(progress));
  ScenarioRunResult r;
  r.metrics = run_engine_alone(*engine, sim, pump);
  r.sizing = engine->memory_plan();
  return r;
}

std::string engine_name_for(const ScenarioSpec& scenario) {
  return std::string(engine_for(scenario).name);
}

}  // namespace kvsim
