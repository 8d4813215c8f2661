#include "sim/cache/tiers/tier_config.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/policy_registry.hpp"

namespace kvsim {

config::ComponentInfo kv_tiers_section_info() {
  using namespace config;
  return {"kv tiers",
          "kv_tiers",
          "tiers of KV blocks below device HBM (host DRAM, SSD, a global pool), fastest first",
          {choice_param("load_overlap", std::string("none"), {"none", "layerwise"},
                        "none: hits are read back before the step; layerwise: while it "
                        "computes (step = max(compute, load))"),
           section_param("tiers", false, "[{name: dram, capacity: ..., ...}, ...]",
                         "the tiers, fastest first (kind `kv tier` lists an item's keys)")}};
}

void read_kv_tiers_section(config::MapReader& top, const CacheConfig& cache, KvTiersConfig& out) {
  const config::Node section = top.child("kv_tiers");
  if (!section.defined()) return;
  config::MapReader r(section);
  out.load_overlap = r.choice("load_overlap", "none", {"none", "layerwise"});
  const config::Node list = r.child("tiers");
  r.finish();
  if (!list.defined()) return;
  const std::vector<std::string>& order = kv_tier_names();
  size_t next_rank = 0;  // tiers come fastest first, each once
  const config::ComponentInfo info = kv_tier_info();
  for (const config::Node& item : list.items()) {
    config::MapReader ir(item);
    const config::ParamValues v = config::read_params(ir, info);
    ir.finish();
    if (!v.has("name")) continue;
    KvTierParams p;
    p.name = v.string("name");
    p.capacity = v.integer("capacity");
    p.read_bandwidth = v.integer("read_bandwidth");
    p.write_bandwidth = v.integer("write_bandwidth");
    p.latency = v.integer("latency");
    p.eviction = v.string("eviction");
    p.store = v.string("store");
    const auto rank =
        static_cast<size_t>(std::find(order.begin(), order.end(), p.name) - order.begin());
    if (rank < next_rank) {
      item.child_at("name").error(
          fmt::format("tier '{}' is listed after a slower one or twice", p.name),
          "each of dram, ssd, global at most once, in that order");
      continue;
    }
    next_rank = rank + 1;
    out.tiers.push_back(p);
  }
  // Tiers take the blocks a prefix cache keeps: the policy must have one
  // (declare prefix_caching) and have it on.
  const CachePolicyComponent* policy = find_cache_policy(cache.policy);
  const bool prefix_cached =
      policy != nullptr && policy->info.find("prefix_caching") != nullptr && cache.prefix_caching;
  if (!out.tiers.empty() && !prefix_cached) {
    section.error(fmt::format("tiers hold prefix-cached blocks; kv_cache.policy '{}'{} has none",
                              cache.policy, cache.prefix_caching ? "" : " without prefix_caching"),
                  "kv_cache: {policy: paged, prefix_caching: true}");
  }
}

std::unique_ptr<TierChain> make_tier_chain(const KvTiersConfig& config, Bytes block_bytes,
                                           int64_t block_size,
                                           std::shared_ptr<KvTier> global_pool) {
  std::vector<std::shared_ptr<KvTier>> tiers;
  for (const KvTierParams& p : config.tiers) {
    if (global_pool && p.name == global_pool->name()) {
      tiers.push_back(global_pool);
    } else {
      tiers.push_back(std::make_shared<KvTier>(p, block_bytes));
    }
  }
  return std::make_unique<TierChain>(std::move(tiers), config.load_overlap == "layerwise",
                                     block_size);
}

}  // namespace kvsim
