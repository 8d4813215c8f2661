#pragma once
// Cache policies by name: the YAML value `kv_cache.policy` picks one. The
// table in policy_registry.cpp is the only place a policy is registered; a
// test compares it with the expected names so none can be lost.
#include <memory>
#include <string>
#include <vector>

#include "sim/cache/cache_config.hpp"
#include "sim/cache/genie_policy.hpp"
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

// The on-device (HTP) family of seed 002: shift_concat, pointer_shift,
// smart_mask, and sliding_window over one of them (kv_cache.update_mode).
// sliding_window over `paged` is a serving-engine policy: make_cache_policy
// builds it and is_genie_policy() says false.
std::vector<std::string> genie_policy_names();
bool is_genie_policy(const CacheConfig& config);
// nullptr when `config` is not an on-device policy; throws
// std::invalid_argument when its shape is unusable (variants beyond ctx_size).
std::unique_ptr<GenieKvPolicy> make_genie_policy(const CacheConfig& config, const ModelSpec& model);

}  // namespace kvsim
