#include "sim/scenario/run_scenario.hpp"

#include "sim/cluster/cluster_run.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/scenario/engine_registry.hpp"

namespace kvsim {
namespace {

std::unique_ptr<InferenceEngine> make_instance_engine(const InstanceSpec& s, Simulator& sim,
                                                      EngineUplink& uplink, RunSink* sink) {
  return engine_for(s).make(s, sim, uplink, sink);
}

}  // namespace

ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress) {
  // parallel.data ranks without a cluster: one group of the scenario's
  // ranks, the arrivals split evenly over them (round_robin; a `cluster:`
  // section's router feeds them otherwise).
  std::shared_ptr<const ClusterSpec> ranks = scenario.cluster;
  if (!ranks && scenario.dp > 1) ranks = data_parallel_cluster(scenario);
  if (ranks) {
    ClusterRun cluster(scenario, *ranks, make_instance_engine, sink);
    if (progress) cluster.set_progress(std::move(progress));
    ScenarioRunResult r;
    r.metrics = cluster.run();
    r.sizing = cluster.memory_plan();
    return r;
  }
  Simulator sim;
  const std::unique_ptr<RequestSource> source =
      make_request_source(*scenario.workload, scenario.seed, scenario.model.vocab_size,
                          SourceOptions{engine_for(scenario).turns_carry_history});
  ArrivalPump pump(sim, *source);
  const std::unique_ptr<InferenceEngine> engine = make_instance_engine(scenario, sim, pump, sink);
  if (progress) engine->set_progress(std::move(progress));
  ScenarioRunResult r;
  r.metrics = run_engine_alone(*engine, sim, pump);
  r.sizing = engine->memory_plan();
  return r;
}

std::unique_ptr<InferenceEngine> make_engine(const InstanceSpec& s, Simulator& sim,
                                             EngineUplink& uplink, RunSink* sink) {
  return make_instance_engine(s, sim, uplink, sink);
}

}  // namespace kvsim
