#include "sim/cache/policy_registry.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"

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

// sliding_window over paged (update_mode: paged); over a Genie mode it is an
// on-device policy and this factory gives nullptr.
std::unique_ptr<KvCachePolicy> make_paged_window(const CacheConfig& c, const PoolSizing& sizing) {
  if (c.update_mode != "paged") return nullptr;
  PagedWindowParams p;
  p.num_blocks = sizing.num_blocks;
  p.block_size = c.block_size;
  p.block_bytes = sizing.block_bytes;
  p.window = c.window;
  return std::make_unique<PagedWindowPolicy>(p);
}

const std::vector<std::pair<std::string, Factory>>& table() {
  static const std::vector<std::pair<std::string, Factory>> t = {
      {"paged", make_paged},
      {"chunk_lru", make_chunk_lru_policy},
      {"sliding_window", make_paged_window},
  };
  return t;
}

using GenieFactory = std::function<std::unique_ptr<GenieKvPolicy>(const GenieCacheShape&)>;

// The on-device family (seed 002), one line each.
const std::vector<std::pair<std::string, GenieFactory>>& genie_table() {
  static const std::vector<std::pair<std::string, GenieFactory>> t = {
      {"pointer_shift", make_pointer_shift_policy},
      {"shift_concat", make_shift_concat_policy},
      {"smart_mask", make_smart_mask_policy},
      {"sliding_window", make_sliding_window_policy},
  };
  return t;
}

}  // namespace

std::vector<std::string> cache_policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : table()) names.push_back(name);
  for (const auto& [name, factory] : genie_table()) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> planned_cache_policy_names() {
  return {};
}

std::vector<std::string> genie_policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : genie_table()) names.push_back(name);
  return names;
}

bool is_genie_policy(const CacheConfig& config) {
  if (config.policy == "sliding_window") return config.update_mode != "paged";
  for (const auto& [name, factory] : genie_table())
    if (name == config.policy) return true;
  return false;
}

std::unique_ptr<GenieKvPolicy> make_genie_policy(const CacheConfig& config,
                                                 const ModelSpec& model) {
  if (!is_genie_policy(config)) return nullptr;
  const GenieCacheShape shape = genie_cache_shape(config, model);
  for (const auto& [name, factory] : genie_table())
    if (name == config.policy) return factory(shape);
  return nullptr;
}

std::unique_ptr<KvCachePolicy> make_cache_policy(const CacheConfig& config,
                                                 const PoolSizing& sizing) {
  for (const auto& [name, factory] : table()) {
    if (name == config.policy) return factory(config, sizing);
  }
  return nullptr;
}

}  // namespace kvsim
