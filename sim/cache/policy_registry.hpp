#pragma once
// Cache policies by name: the YAML value `kv_cache.policy` picks one. The
// table in policy_registry.cpp is the only place a policy is registered; a
// test compares it with the expected names so none can be lost.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"

#include "sim/cache/cache_config.hpp"
#include "sim/cache/genie_policy.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

struct ScenarioSpec;

std::vector<std::string> cache_policy_names();

// A policy as a component: the keys it declares (sim/cache/policy_params.hpp,
// each beside its policy's code) and the checks it runs once the whole
// scenario is read (its pools against the device, its buffers against its
// variants). A policy that wraps another (sliding_window) names its base in
// `base_key`, reads the base's keys as well and runs the base's checks from
// its own.
//
// What a policy can do is part of its entry, so callers ask the policy
// instead of comparing names: the engine it runs on (the serving engine's
// block pools, or the genie engine's on-device buffers of seed 002; a
// wrapper runs where its base does) and whether the serving engine's
// numerics checker (SPEC 8) follows its block tables.
using ScenarioChecks = void (*)(const ScenarioSpec& s, config::LoadContext& ctx);
enum class PolicyEngine : uint8_t { serving, genie, of_base };
struct CachePolicyComponent {
  config::ComponentInfo info;  // its own keys
  std::string base_key;        // "" unless it wraps the policy this key names
  ScenarioChecks checks = nullptr;
  PolicyEngine engine = PolicyEngine::serving;
  // The serving engine's numerics checker supports it (the genie engine
  // checks every on-device policy).
  bool serving_numerics = false;
  // On a model with sliding and full layers it keeps a KV cache group per
  // attention type over pages of one pool (sim/cache/kv_cache_groups.hpp).
  bool kv_groups_by_attention = false;
};
// Sorted by name, one entry per value of kv_cache.policy.
const std::vector<CachePolicyComponent>& cache_policy_components();
const CachePolicyComponent* find_cache_policy(std::string_view name);
// The keys of `kv_cache:` that every policy shares (policy, dtype,
// memory_fraction), read by the section itself.
config::ComponentInfo kv_cache_section_info();
// Each policy's own keys (what `kvsim list policies --params` and the docs show).
std::vector<config::ComponentInfo> cache_policy_infos();
// Reads the keys of policy `name` from the `kv_cache:` map: its own and,
// for a wrapping policy, those of the base it names; a key that belongs to
// another policy is an error naming its owners. Every key the reader
// holds is accounted for afterwards except the shared ones.
config::ParamValues read_cache_policy_params(config::MapReader& reader, const std::string& name);
// The policy's checks (and its base's, through it); nothing for a name
// that is not registered.
void run_cache_policy_checks(const std::string& name, const ScenarioSpec& s,
                             config::LoadContext& ctx);
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
// Whether `numerics.mode` other than off can run with this policy: on the
// genie engine always, on the serving engine when the policy says so.
bool policy_supports_numerics(const CacheConfig& config);
// Whether the policy named so sizes its pool by KV cache groups (false for
// a name that is not registered).
bool policy_groups_kv_by_attention(const std::string& policy);
// nullptr when `config` is not an on-device policy; throws
// std::invalid_argument when its shape is unusable (variants beyond ctx_size).
std::unique_ptr<GenieKvPolicy> make_genie_policy(const CacheConfig& config, const ModelSpec& model);

}  // namespace kvsim
