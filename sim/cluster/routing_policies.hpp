#pragma once
// The routing policies kvsim ships, one file each; routing_registry.cpp
// lists them. Each declares its parameters beside its code.
#include <memory>

#include "base/params.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {

config::ComponentInfo round_robin_routing_info();  // round_robin_routing.cpp
std::unique_ptr<RoutingPolicy> make_round_robin_routing(const config::ParamValues& params);

config::ComponentInfo least_loaded_routing_info();  // least_loaded_routing.cpp
std::unique_ptr<RoutingPolicy> make_least_loaded_routing(const config::ParamValues& params);

config::ComponentInfo prefix_aware_routing_info();  // prefix_aware_routing.cpp
std::unique_ptr<RoutingPolicy> make_prefix_aware_routing(const config::ParamValues& params);

config::ComponentInfo session_affinity_routing_info();  // session_affinity_routing.cpp
std::unique_ptr<RoutingPolicy> make_session_affinity_routing(const config::ParamValues& params);

}  // namespace kvsim
