#pragma once
// Cache policies by name: the YAML value `kv_cache.policy` picks one. The
// table in policy_registry.cpp is the only place a policy is registered; a
// test compares it with the expected names so none can be lost.
#include <memory>
#include <string>
#include <vector>

#include "sim/cache/cache_config.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

std::vector<std::string> cache_policy_names();
// Policies in SPEC 6 that this build does not implement yet, so an error can
// say "not available yet" rather than "unknown".
std::vector<std::string> planned_cache_policy_names();
// nullptr when the name is not registered.
std::unique_ptr<KvCachePolicy> make_cache_policy(const CacheConfig& config,
                                                 const PoolSizing& sizing);

}  // namespace kvsim
