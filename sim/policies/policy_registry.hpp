#pragma once
// Cache policies by name (DESIGN practice 1): the YAML value
// `kv_cache.policy` picks one. The table in policy_registry.cpp is the only
// place a policy is registered (one line, beside the declaration of its
// entry); each entry is defined in the policy's own file under
// sim/policies/ and says everything about it: its keys (declared once, with
// defaults, units, ranges and docs), the policy it wraps if any, and how
// its typed spec (sim/spec/policy_spec.hpp) is made from read values. A
// test compares the table with the expected names so none can be lost.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/policies/policy_values.hpp"
#include "sim/spec/kv_cache_spec.hpp"
#include "sim/spec/policy_spec.hpp"

namespace kvsim {

struct PolicyEntry {
  config::ComponentInfo info;  // kind "policy", its name, doc and own keys
  // A policy that wraps another (sliding_window) names it with this key and
  // takes the keys of the policy it names as well.
  std::string base_key;
  std::shared_ptr<PolicySpec> (*make)(const PolicyValues& values) = nullptr;
};

// Sorted by name, one entry per value of kv_cache.policy.
const std::vector<PolicyEntry>& policy_entries();
const PolicyEntry* find_policy(std::string_view name);
std::vector<std::string> cache_policy_names();
// Each policy's own keys (what `kvsim list policies --params` and the docs show).
std::vector<config::ComponentInfo> cache_policy_infos();
// The keys `entry` reads when its base key names `base` (its own keys, then
// the base's it does not declare); its own keys for a policy that wraps none.
config::ComponentInfo policy_keys(const PolicyEntry& entry, std::string_view base);

// The spec of policy `name` from `values` (every declared key not in
// `values` takes its default): a study builds the policy of its flags this
// way. std::invalid_argument for a name that is not registered or a value
// of the wrong type.
std::shared_ptr<const PolicySpec> make_policy_spec(std::string_view name,
                                                   const config::ParamValues& values = {});

// Reads `kv_cache:` of `top` (docs/yaml.md "Several policies in one
// scenario"): the section's shared keys; the running policy's keys written
// beside them or in its map `kv_cache.<name>:` (the same key in both is an
// error); every other policy's map, validated by that policy. A key beside
// the shared ones that the running policy does not take is an error naming
// its owners. Errors go to the diagnostics.
KvCacheSpec read_kv_cache_section(config::MapReader& top);

// Before `--set kv_cache.policy=NEW` (or a compare's `--vary`) replaces the
// policy a document names: its keys written beside the shared ones that NEW
// does not take move into the old policy's own map, so they stay that
// policy's settings instead of becoming foreign keys of NEW. Keys both take
// (ctx_size for two Genie modes, block_size for paged and chunk_lru) stay
// where they are, and so do the key paths in `kept` (those the command line
// sets or removes itself). Returns false with an error in ctx when a moved
// key is also in the old policy's map.
bool rehome_policy_keys(YAML::Node& doc, const std::string& new_policy, const std::string& file,
                        config::LoadContext& ctx, const std::vector<std::string>& kept = {});

}  // namespace kvsim
