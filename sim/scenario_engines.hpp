#pragma once
// The engines a scenario can run on, as components: the serving engine
// (server devices, the `scheduler:` keys) and the genie engine (kind: htp
// devices, the `htp:` keys). Each declares its keys beside the code that
// reads them and checks, after the whole scenario is read, that what it
// would run belongs together; parse_scenario calls the checks through this
// table, never by name.
#include <vector>

#include "base/params.hpp"
#include "sim/cache/policy_registry.hpp"

namespace kvsim {

struct EngineComponent {
  config::ComponentInfo info;
  ScenarioChecks checks = nullptr;
};

const std::vector<EngineComponent>& engine_components();

}  // namespace kvsim
