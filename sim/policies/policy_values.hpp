#pragma once
// What a policy's factory is given (sim/policies/policy_registry.hpp): the
// values of every key it declares, the declared default where the scenario
// wrote none, and the key path each written key was read at (flat in
// `kv_cache:` or in the policy's own map), so its checks point where the
// user wrote it.
#include <map>
#include <string>

#include "base/params.hpp"

namespace kvsim {

struct PolicyValues {
  config::ParamValues values;
  std::map<std::string, std::string, std::less<>> paths;  // written keys only
};

}  // namespace kvsim
