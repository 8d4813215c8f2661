#include "sim/run_scenario.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/genie/genie_engine.hpp"

namespace kvsim {
namespace {

ScenarioRunResult run_serving(const ScenarioSpec& s, RunSink* sink,
                              std::function<void(const RunProgress&)> progress) {
  ServingEngine engine(s, sink);
  if (progress) engine.set_progress(std::move(progress));
  ScenarioRunResult r;
  r.metrics = engine.run();
  r.sizing = engine.sizing();
  return r;
}

ScenarioRunResult run_dialog(const ScenarioSpec& s, RunSink* sink,
                             std::function<void(const RunProgress&)> progress) {
  GenieEngine engine(s, sink);
  if (progress) engine.set_progress(std::move(progress));
  ScenarioRunResult r;
  r.metrics = engine.run();
  // No paged pool on a phone: the report's memory table shows the device,
  // the weights and the Genie buffers (memory.kv_bytes).
  r.sizing.budget =
      static_cast<Bytes>(static_cast<double>(s.device.memory_bytes) * s.cache.memory_fraction);
  r.sizing.weights_bytes = r.metrics.memory.weights_bytes;
  r.sizing.kv_budget = r.metrics.memory.kv_bytes;
  r.sizing.kv_bytes_per_token = r.metrics.kv_cache.kv_bytes_per_token;
  r.sizing.capacity_tokens = r.metrics.kv_cache.capacity_tokens;
  return r;
}

struct EngineEntry {
  const char* device_kind;
  const char* engine;
  ScenarioRunResult (*run)(const ScenarioSpec&, RunSink*, std::function<void(const RunProgress&)>);
};

// Device kind -> engine. Adding a kind: one line here.
constexpr EngineEntry kEngines[] = {
    {"ascend", "serving", run_serving},
    {"htp", "dialog", run_dialog},
};

const EngineEntry& entry_for(const ScenarioSpec& s) {
  for (const auto& e : kEngines)
    if (s.device.kind == e.device_kind) return e;
  throw std::invalid_argument(
      fmt::format("no engine for device kind '{}' ({})", s.device.kind, s.device.name));
}

}  // namespace

ScenarioRunResult run_scenario(const ScenarioSpec& scenario, RunSink* sink,
                               std::function<void(const RunProgress&)> progress) {
  return entry_for(scenario).run(scenario, sink, std::move(progress));
}

std::string engine_name_for(const ScenarioSpec& scenario) {
  return entry_for(scenario).engine;
}

}  // namespace kvsim
