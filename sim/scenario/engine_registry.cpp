#include "sim/scenario/engine_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "devices/device_family.hpp"
#include "sim/genie/genie_checks.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_session_config.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_sections.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {
namespace {

template <class E>
std::unique_ptr<InferenceEngine> make(const ScenarioSpec& scenario, Simulator& sim,
                                      EngineUplink& uplink, RunSink* sink) {
  return std::make_unique<E>(scenario, sim, uplink, sink);
}

}  // namespace

const std::vector<EngineKind>& engine_kinds() {
  static const std::vector<EngineKind> kinds = {
      {"genie", "an on-device dialog on a Qualcomm HTP (seed 002)", make<GenieEngine>,
       genie_engine_info, genie_engine_checks},
      {"serving", "continuous batching over a paged KV cache (vLLM, SPEC 5)", make<ServingEngine>,
       serving_engine_info, serving_engine_checks},
  };
  return kinds;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const EngineKind& k : engine_kinds()) names.emplace_back(k.name);
  return names;
}

const EngineKind& engine_for(const ScenarioSpec& scenario) {
  const std::string_view wanted = device_family_of(scenario.device).engine();
  for (const EngineKind& k : engine_kinds())
    if (k.name == wanted) return k;
  throw std::invalid_argument(fmt::format("no engine '{}' for device kind '{}' ({}); engines: {}",
                                          wanted, scenario.device.kind, scenario.device.name,
                                          fmt::join(engine_names(), ", ")));
}

}  // namespace kvsim
