#include "sim/cluster/routing_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

struct RegisteredRouter {
  config::ComponentInfo (*info)();
  std::unique_ptr<RoutingPolicy> (*make)(const RoutingPolicyArgs&);
};

// One line per policy, kept in name order.
const std::vector<RegisteredRouter>& router_table() {
  static const std::vector<RegisteredRouter> t = {
      {kv_cost_routing_info, make_kv_cost_routing},
      {least_loaded_routing_info, make_least_loaded_routing},
      {prefix_aware_routing_info, make_prefix_aware_routing},
      {round_robin_routing_info, make_round_robin_routing},
      {session_affinity_routing_info, make_session_affinity_routing},
      {weighted_routing_info, make_weighted_routing},
  };
  return t;
}

const RegisteredRouter& find_router(std::string_view name) {
  for (const RegisteredRouter& r : router_table())
    if (r.info().name == name) return r;
  throw std::invalid_argument(fmt::format("unknown routing policy '{}' (known: {})", name,
                                          fmt::join(routing_policy_names(), ", ")));
}

}  // namespace

std::vector<std::string> routing_policy_names() {
  std::vector<std::string> names;
  for (const RegisteredRouter& r : router_table()) names.push_back(r.info().name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<config::ComponentInfo> routing_policy_infos() {
  std::vector<config::ComponentInfo> router_infos;
  for (const RegisteredRouter& r : router_table()) router_infos.push_back(r.info());
  std::sort(router_infos.begin(), router_infos.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return router_infos;
}

const config::ComponentInfo& routing_policy_info(std::string_view name) {
  static const std::vector<config::ComponentInfo> router_infos = routing_policy_infos();
  for (const auto& info : router_infos)
    if (info.name == name) return info;
  (void)find_router(name);  // throws the message listing the known names
  throw std::logic_error("unreachable");
}

config::ParamValues routing_policy_defaults(std::string_view name) {
  config::ParamValues v;
  for (const config::ParamSpec& p : routing_policy_info(name).params)
    if (p.default_value) v.set(p.key, *p.default_value, false);
  return v;
}

std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name,
                                                   const config::ParamValues& params) {
  return make_routing_policy(name, params, PrefixIndexConfig{}, 0);
}

std::unique_ptr<RoutingPolicy> make_routing_policy(std::string_view name,
                                                   const config::ParamValues& params,
                                                   const PrefixIndexConfig& index, uint64_t seed) {
  PrefixIndexConfig ix = index;
  if (ix.params.all().empty()) ix.params = prefix_index_defaults(ix.kind).params;
  return find_router(name).make(RoutingPolicyArgs{params, ix, seed});
}

}  // namespace kvsim
