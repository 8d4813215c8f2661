#include "sim/scenario_engines.hpp"

#include "sim/genie/genie_checks.hpp"
#include "sim/genie/genie_session_config.hpp"
#include "sim/scenario_sections.hpp"

namespace kvsim {

const std::vector<EngineComponent>& engine_components() {
  static const std::vector<EngineComponent> t = {
      {serving_engine_info(), serving_engine_checks},
      {genie_engine_info(), genie_engine_checks},
  };
  return t;
}

}  // namespace kvsim
