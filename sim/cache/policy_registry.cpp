#include "sim/cache/policy_registry.hpp"

#include <functional>
#include <utility>

#include "sim/cache/paged_policy.hpp"
#include "sim/config/scenario.hpp"

namespace kvsim {
namespace {

using Factory =
    std::function<std::unique_ptr<KvCachePolicy>(const ScenarioSpec&, const PoolSizing&)>;

std::unique_ptr<KvCachePolicy> make_paged(const ScenarioSpec& s, const PoolSizing& sizing) {
  PagedParams p;
  p.num_blocks = sizing.num_blocks;
  p.block_size = s.cache.block_size;
  p.block_bytes = sizing.block_bytes;
  p.prefix_caching = s.cache.prefix_caching;
  p.host_blocks = s.cache.preemption == "swap" ? sizing.host_blocks : 0;
  return std::make_unique<PagedPolicy>(p);
}

const std::vector<std::pair<std::string, Factory>>& table() {
  static const std::vector<std::pair<std::string, Factory>> t = {
      {"paged", make_paged},
  };
  return t;
}

}  // namespace

std::vector<std::string> cache_policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : table()) names.push_back(name);
  return names;
}

std::vector<std::string> planned_cache_policy_names() {
  return {"pointer_shift", "shift_concat", "smart_mask", "sliding_window", "chunk_lru"};
}

std::unique_ptr<KvCachePolicy> make_cache_policy(const ScenarioSpec& scenario,
                                                 const PoolSizing& sizing) {
  for (const auto& [name, factory] : table()) {
    if (name == scenario.cache.policy) return factory(scenario, sizing);
  }
  return nullptr;
}

}  // namespace kvsim
