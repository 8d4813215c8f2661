#pragma once
// Routing policies by name: the YAML value `cluster.router.policy` (and
// `cluster.decode_router.policy`) picks one. The table in
// routing_registry.cpp is the only place a policy is registered; a test
// compares it with the expected names so none can be lost.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {

constexpr std::string_view kDefaultRoutingPolicy = "round_robin";

// Registered names, sorted.
std::vector<std::string> routing_policy_names();
// Kind "router", name, doc and parameters of each (the `policy` key aside),
// in name order.
std::vector<config::ComponentInfo> routing_policy_infos();
const config::ComponentInfo& routing_policy_info(std::string_view name);
// Every declared parameter of `name` at its default (tests set the ones they vary).
config::ParamValues routing_policy_defaults(std::string_view name);
// A new policy of that name over the values read for it. Throws
// std::invalid_argument naming the known policies when the name is not
// registered (the reader checks the YAML value first: a caller's bug).
std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name,
                                                   const config::ParamValues& params);
// The same with the policy's prefix index (its `index:` map; the kind's
// defaults when `index.params` is empty, ignored by a policy that declares
// none) and the scenario's seed (for a policy that samples).
std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name,
                                                   const config::ParamValues& params,
                                                   const PrefixIndexConfig& index, uint64_t seed);

}  // namespace kvsim
