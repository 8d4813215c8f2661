#include "sim/run_scenario.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "devices/device_family.hpp"
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
  const char* engine;
  ScenarioRunResult (*run)(const ScenarioSpec&, RunSink*, std::function<void(const RunProgress&)>);
};

// The engines by name; the device's family says which one runs it
// (DeviceFamily::engine). A new family reuses one of these.
constexpr EngineEntry kEngines[] = {
    {"serving", run_serving},
    {"dialog", run_dialog},
};

const EngineEntry& entry_for(const ScenarioSpec& s) {
  const std::string_view engine = device_family_of(s.device).engine();
  for (const auto& e : kEngines)
    if (engine == e.engine) return e;
  throw std::invalid_argument(fmt::format("no engine '{}' for device kind '{}' ({})", engine,
                                          s.device.kind, s.device.name));
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
