#include "sim/scenario/component_catalog.hpp"

#include "devices/device_family.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"
#include "sim/cache/tiers/connector_presets.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/cluster/pool_presets.hpp"
#include "sim/cluster/routing_registry.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/engine_registry.hpp"
#include "sim/serve/session_retention_spec.hpp"
#include "sim/serve/speculative_spec.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim {
namespace {

std::vector<config::ComponentInfo> engine_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const auto& e : engine_kinds()) infos.push_back(e.info());
  infos.push_back(session_retention_info());  // a section of the serving engine's
  infos.push_back(speculative_info());        // the serving engine's speculative decoding
  infos.push_back(speculative_acceptance_info());
  infos.push_back(kv_vtcm_section_info());  // the genie engine's htp.kv_vtcm
  for (auto& i : kv_vtcm_placement_infos()) infos.push_back(std::move(i));
  return infos;
}

std::vector<config::ComponentInfo> policy_kind_infos() {
  std::vector<config::ComponentInfo> infos = cache_policy_infos();
  infos.insert(infos.begin(), kv_cache_section_info(cache_policy_names()));  // the keys they share
  return infos;
}

std::vector<config::ComponentInfo> preset_infos() {
  std::vector<config::ComponentInfo> infos = connector_preset_infos();
  for (config::ComponentInfo& info : pool_preset_infos()) infos.push_back(std::move(info));
  return infos;
}

std::vector<config::ComponentInfo> prefix_index_catalog_infos() {
  std::vector<config::ComponentInfo> infos = prefix_index_infos();
  infos.insert(infos.begin(), prefix_index_section_info());  // the key they share
  return infos;
}

}  // namespace

std::vector<ComponentKind> component_catalog() {
  return {
      {"policies", "kv_cache.policy and the keys of each", policy_kind_infos()},
      {"engines",
       "the serving engine (scheduler:, its session_retention:) and the genie engine (htp:)",
       engine_infos()},
      {"workloads", "workload.kind and the keys of each", workload_infos()},
      {"arrivals", "arrival.process and the keys of each", arrival_infos()},
      {"distributions", "{dist: ...} of a length or a time and the keys of each",
       distribution_infos()},
      {"families", "device files' kind and the keys of each device family", device_family_infos()},
      {"evictions", "kv_cache.eviction: which free cached block or chunk goes first",
       eviction_order_infos()},
      {"clusters",
       "cluster: instance groups behind a router, and the keys of a group",
       {cluster_section_info(), cluster_group_info(), global_pool_info(), shared_link_info()}},
      {"routers", "cluster.router.policy (and decode_router) and the keys of each",
       routing_policy_infos()},
      {"indexes", "cluster.router.index.kind: what a router knows of the cached prefixes",
       prefix_index_catalog_infos()},
      {"tiers",
       "kv_tiers: tiers of KV blocks below device HBM, and the keys of each tier",
       {kv_tiers_section_info(), kv_tier_info()}},
      {"presets",
       "kv_tiers.preset and cluster.global_pool.preset: a deployed connector as values of "
       "those keys, each with its source",
       preset_infos()},
  };
}

std::string catalog_marker_key(const config::ComponentInfo& info) {
  std::string kind = info.kind;
  for (char& c : kind)
    if (c == ' ') c = '-';  // "device family" -> device-family: one word in the marker
  return kind + ":" + info.name;
}

std::vector<std::pair<std::string, std::string>> catalog_markdown_blocks() {
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const auto& kind : component_catalog())
    for (const auto& info : kind.infos)
      blocks.emplace_back(catalog_marker_key(info), config::params_markdown(info));
  return blocks;
}

}  // namespace kvsim
