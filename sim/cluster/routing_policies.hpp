#pragma once
// The routing policies kvsim ships, one file each; routing_registry.cpp
// lists them. Each declares its parameters beside its code.
#include <memory>

#include "base/params.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {

// What a policy is made from: its values, its prefix index's `index:` map
// (the kind `exact` when the YAML gives none; read by the policies that
// declare prefix_index_param()) and the scenario's seed (a policy that
// samples draws from it, so a run is reproducible).
struct RoutingPolicyArgs {
  config::ParamValues params;
  PrefixIndexConfig index;
  uint64_t seed = 0;
};

config::ComponentInfo round_robin_routing_info();  // round_robin_routing.cpp
std::unique_ptr<RoutingPolicy> make_round_robin_routing(const RoutingPolicyArgs& args);

config::ComponentInfo least_loaded_routing_info();  // least_loaded_routing.cpp
std::unique_ptr<RoutingPolicy> make_least_loaded_routing(const RoutingPolicyArgs& args);

config::ComponentInfo prefix_aware_routing_info();  // prefix_aware_routing.cpp
std::unique_ptr<RoutingPolicy> make_prefix_aware_routing(const RoutingPolicyArgs& args);

config::ComponentInfo kv_cost_routing_info();  // kv_cost_routing.cpp
std::unique_ptr<RoutingPolicy> make_kv_cost_routing(const RoutingPolicyArgs& args);

config::ComponentInfo weighted_routing_info();  // weighted_routing.cpp
std::unique_ptr<RoutingPolicy> make_weighted_routing(const RoutingPolicyArgs& args);

config::ComponentInfo session_affinity_routing_info();  // session_affinity_routing.cpp
std::unique_ptr<RoutingPolicy> make_session_affinity_routing(const RoutingPolicyArgs& args);

}  // namespace kvsim
