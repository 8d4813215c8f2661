#pragma once
// The engines, registered by name (DESIGN practice 1). Policy, engine and
// device compose (SPEC 12): an engine runs any policy that offers the
// contract it asks for (the serving engine a block pool, the genie engine
// on-device graph buffers, sim/spec/policy_spec.hpp) on any device its
// family lists it for (DeviceFamily::engines), with the workloads it takes.
// A scenario names its engine with `engine:`, or gets the first of its
// device family's engines that can run it; an impossible combination is a
// load error saying why. Each entry also builds its engine on a clock it is
// given, so a router of N instances builds N of them on one Simulator.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

struct EngineKind {
  std::string_view name;  // "serving", "genie": InferenceEngine::kind()
  std::string_view doc;
  EngineContract contract;  // what it asks of the policy
  std::string_view needs;   // that contract in words, for messages
  // Builds the engine on `sim`, with the numerics observer `numerics.mode` asks for.
  std::unique_ptr<InferenceEngine> (*make)(const InstanceSpec& s, Simulator& sim,
                                           EngineUplink& uplink, RunSink* sink);
  // The scenario section the engine reads (serving: `scheduler:`, genie:
  // `htp:`), declared beside the code that reads it.
  config::ComponentInfo (*info)();
  // What else it cannot run (the device, the workload), none when it can.
  std::optional<EngineRefusal> (*refuses)(const InstanceSpec& s);
  // Run after the whole scenario is read, for the engine that runs it.
  void (*checks)(const InstanceSpec& s, config::LoadContext& ctx);
  // It can be an instance of a cluster, fed by a router.
  bool routable = false;
  // It keeps nothing of a request once it leaves, so a dialog's turns carry
  // their conversation (SourceOptions).
  bool turns_carry_history = false;
};

// Every engine, by name.
const std::vector<EngineKind>& engine_kinds();
std::vector<std::string> engine_names();
const EngineKind* find_engine(std::string_view name);
// The engine that runs `s` (s.engine, set when the scenario was read).
// std::invalid_argument when it names none.
const EngineKind& engine_for(const InstanceSpec& s);
// Why `engine` cannot run `s` (its contract, its own refusals), none when it can.
std::optional<EngineRefusal> engine_refusal(const EngineKind& engine, const InstanceSpec& s);
// The engine for `s`: `given` when set (an error at `engine` saying why when
// it cannot run it), else the first of the device family's engines that
// can (an error naming each one's reason when none can). Empty on error.
std::string resolve_engine(const InstanceSpec& s, const std::optional<std::string>& given,
                           config::LoadContext& ctx);

}  // namespace kvsim
