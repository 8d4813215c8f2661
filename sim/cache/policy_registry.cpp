#include "sim/cache/policy_registry.hpp"

#include <functional>
#include <utility>

#include "sim/cache/paged_policy.hpp"

namespace kvsim {
namespace {

using Factory =
    std::function<std::unique_ptr<KvCachePolicy>(const CacheConfig&, const PoolSizing&)>;

std::unique_ptr<KvCachePolicy> make_paged(const CacheConfig& c, const PoolSizing& sizing) {
  PagedParams p;
  p.num_blocks = sizing.num_blocks;
  p.block_size = c.block_size;
  p.block_bytes = sizing.block_bytes;
  p.prefix_caching = c.prefix_caching;
  p.host_blocks = c.preemption == "swap" ? sizing.host_blocks : 0;
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

std::unique_ptr<KvCachePolicy> make_cache_policy(const CacheConfig& config,
                                                 const PoolSizing& sizing) {
  for (const auto& [name, factory] : table()) {
    if (name == config.policy) return factory(config, sizing);
  }
  return nullptr;
}

}  // namespace kvsim
