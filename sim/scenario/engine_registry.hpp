#pragma once
// The engines, registered by name (DESIGN practice 1): each entry says how
// to build it on a clock it is given. The device's family names the engine
// that simulates it (DeviceFamily::engine); run_scenario() picks that entry,
// and a router of N instances builds N of them on one Simulator.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/serve/run_sink.hpp"

namespace kvsim {

struct ScenarioSpec;
namespace config {
struct LoadContext;
}

struct EngineKind {
  std::string_view name;  // "serving", "genie": InferenceEngine::kind()
  std::string_view doc;
  std::unique_ptr<InferenceEngine> (*make)(const ScenarioSpec& scenario, Simulator& sim,
                                           EngineUplink& uplink, RunSink* sink);
  // The scenario section the engine reads (serving: `scheduler:`, genie:
  // `htp:`), declared beside the code that reads it.
  config::ComponentInfo (*info)();
  // Run after the whole scenario is read: what the engine would run belongs
  // together (every engine's checks run: the genie engine also refuses a
  // phone dialog on a server device).
  void (*checks)(const ScenarioSpec& s, config::LoadContext& ctx);
};

// Every engine, by name.
const std::vector<EngineKind>& engine_kinds();
std::vector<std::string> engine_names();
// The engine the scenario's device family names. Throws
// std::invalid_argument naming the family's engine and listing the engines.
const EngineKind& engine_for(const ScenarioSpec& scenario);

}  // namespace kvsim
