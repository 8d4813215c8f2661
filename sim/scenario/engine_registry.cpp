#include "sim/scenario/engine_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "devices/device_family.hpp"
#include "sim/genie/genie_checks.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/numerics/genie_engine_numerics.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/serving_engine_spec.hpp"

namespace kvsim {
namespace {

std::unique_ptr<InferenceEngine> make_serving(const InstanceSpec& s, Simulator& sim,
                                              EngineUplink& uplink, RunSink* sink) {
  return std::make_unique<ServingEngine>(s, sim, uplink, sink, make_numerics_observer);
}

std::unique_ptr<InferenceEngine> make_genie(const InstanceSpec& s, Simulator& sim,
                                            EngineUplink& uplink, RunSink* sink) {
  auto engine = std::make_unique<GenieEngine>(s, sim, uplink, sink);
  if (auto numerics = make_genie_numerics_observer(s)) engine->add_observer(std::move(numerics));
  return engine;
}

bool offers(const PolicySpec& policy, EngineContract contract) {
  return contract == EngineContract::block_pool ? policy.block_pool() != nullptr
                                                : policy.device_buffers() != nullptr;
}

// The policies that offer `contract`, as a user writes them ("paged",
// "sliding_window with update_mode: paged"): from the registry, by asking
// each policy (and each base a wrapper can take) at its defaults.
std::string policies_offering(EngineContract contract) {
  std::vector<std::string> names;
  for (const PolicyEntry& entry : policy_entries()) {
    const config::ParamSpec* base = entry.info.find(entry.base_key);
    if (base == nullptr) {
      if (offers(*make_policy_spec(entry.info.name), contract)) names.push_back(entry.info.name);
      continue;
    }
    for (const std::string& choice : base->choices) {
      config::ParamValues v;
      v.set(entry.base_key, choice, true);
      if (offers(*make_policy_spec(entry.info.name, v), contract))
        names.push_back(fmt::format("{} with {}: {}", entry.info.name, entry.base_key, choice));
    }
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const std::vector<EngineKind>& engine_kinds() {
  static const std::vector<EngineKind> kinds = {
      {"genie",
       "an on-device dialog over Genie's graph buffers on an NPU graph executor (seed 002)",
       EngineContract::device_buffers, "on-device graph buffers", make_genie, genie_engine_info,
       genie_engine_refusal, genie_engine_checks, false, false},
      {"serving", "continuous batching over a block pool (vLLM, SPEC 5)",
       EngineContract::block_pool, "a block pool", make_serving, serving_engine_info,
       serving_engine_refusal, serving_engine_checks, true, ServingEngine::kTurnsCarryHistory},
  };
  return kinds;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const EngineKind& k : engine_kinds()) names.emplace_back(k.name);
  return names;
}

const EngineKind* find_engine(std::string_view name) {
  for (const EngineKind& k : engine_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

const EngineKind& engine_for(const InstanceSpec& s) {
  if (const EngineKind* k = find_engine(s.engine)) return *k;
  throw std::invalid_argument(
      fmt::format("no engine '{}' (engines: {})", s.engine, fmt::join(engine_names(), ", ")));
}

std::optional<EngineRefusal> engine_refusal(const EngineKind& engine, const InstanceSpec& s) {
  if (!offers(s.policy(), engine.contract))
    return EngineRefusal{
        s.policy().key_path("policy"),
        fmt::format("it needs {} ({}), which '{}' does not keep", engine.needs,
                    policies_offering(engine.contract), s.policy().display_name())};
  return engine.refuses(s);
}

std::string resolve_engine(const InstanceSpec& s, const std::optional<std::string>& given,
                           config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const DeviceFamily& family = device_family_of(s.device);
  const std::vector<std::string_view> offered = family.engines();
  if (given) {
    const EngineKind& engine = *find_engine(*given);
    std::optional<EngineRefusal> no = engine_refusal(engine, s);
    if (!no && std::find(offered.begin(), offered.end(), engine.name) == offered.end())
      no = EngineRefusal{
          "device", fmt::format("{} (kind {}) does not offer it", s.device.name, s.device.kind)};
    if (!no) return *given;
    ctx.diagnostics.error(
        at("engine"), "engine",
        fmt::format("the {} engine cannot run this scenario: {} ({})", engine.name, no->why,
                    no->key),
        fmt::format("an engine of {}: {}", s.device.name, fmt::join(offered, ", ")));
    return "";
  }
  std::vector<EngineRefusal> refusals;
  std::vector<std::string> reasons;
  for (std::string_view name : offered) {
    const EngineKind* engine = find_engine(name);
    if (engine == nullptr) continue;
    std::optional<EngineRefusal> no = engine_refusal(*engine, s);
    if (!no) return std::string(name);
    reasons.push_back(fmt::format("the {} engine: {}", name, no->why));
    refusals.push_back(*no);
  }
  const std::string key = refusals.empty() ? "device" : refusals.front().key;
  ctx.diagnostics.error(at(key), key,
                        fmt::format("no engine of {} (kind {}) runs this scenario; {}",
                                    s.device.name, s.device.kind, fmt::join(reasons, "; ")),
                        "a policy, workload or device one of them takes");
  return "";
}

}  // namespace kvsim
