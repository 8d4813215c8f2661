#include "sim/cache/policy_registry.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "models/model_spec.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/cache/hybrid_paged_policy.hpp"
#include "sim/cache/llama_cells_policy.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"
#include "sim/cache/policy_checks.hpp"
#include "sim/cache/policy_params.hpp"

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
  p.eviction = c.eviction;
  // A model with sliding and full layers: a group per attention type over
  // the pool of pages the sizing laid out.
  if (sizing.groups.hybrid())
    return std::make_unique<HybridPagedPolicy>(HybridPagedParams{p, sizing.groups});
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
      {"llama_cells", make_llama_cells_policy},       {"pointer_shift", make_pointer_shift_policy},
      {"shift_concat", make_shift_concat_policy},     {"smart_mask", make_smart_mask_policy},
      {"sliding_window", make_sliding_window_policy},
  };
  return t;
}

// Every key a policy may read: its own plus those of every base it can
// wrap, so that a key is attributed to each policy that could take it.
std::vector<config::ComponentInfo> key_owners() {
  std::vector<config::ComponentInfo> owners;
  for (const auto& c : cache_policy_components()) {
    config::ComponentInfo keys = c.info;
    if (const config::ParamSpec* base = c.info.find(c.base_key)) {
      for (const auto& name : base->choices)
        if (const auto* b = find_cache_policy(name)) keys = config::compose_infos(keys, b->info);
    }
    owners.push_back(std::move(keys));
  }
  return owners;
}

}  // namespace

const std::vector<CachePolicyComponent>& cache_policy_components() {
  static const std::vector<CachePolicyComponent> t = {
      {chunk_lru_policy_info(), "", chunk_lru_policy_checks, PolicyEngine::serving, true},
      {llama_cells_policy_info(), "", llama_cells_policy_checks, PolicyEngine::genie},
      {paged_policy_info(), "", nullptr, PolicyEngine::serving, true, true},
      {pointer_shift_policy_info(), "", pointer_shift_policy_checks, PolicyEngine::genie},
      {shift_concat_policy_info(), "", genie_buffer_checks, PolicyEngine::genie},
      {sliding_window_policy_info(), kSlidingWindowBaseKey, sliding_window_policy_checks,
       PolicyEngine::of_base},
      {smart_mask_policy_info(), "", genie_buffer_checks, PolicyEngine::genie},
  };
  return t;
}

const CachePolicyComponent* find_cache_policy(std::string_view name) {
  for (const auto& c : cache_policy_components())
    if (c.info.name == name) return &c;
  return nullptr;
}

config::ComponentInfo kv_cache_section_info() {
  using namespace config;
  return {
      "section",
      "kv_cache",
      "keys every policy shares",
      {choice_param("policy", std::string("paged"), cache_policy_names(),
                    "the cache policy; its own keys follow in its table"),
       choice_param("dtype", std::string("fp16"), kKvDtypeNames,
                    "element type of the cached K and V (fp8 = fp8_e4m3; fp8 rows carry one "
                    "scale per token and head); vLLM's top-level kv_cache_dtype is the same key"),
       choice_param("kv_scale", std::string("per_token"), {"per_token", "per_tensor"},
                    "fp8 KV scales: one per token and head (the row's amax), or one per layer's "
                    "K and V (a calibrated amax, vLLM's k_scale / v_scale); fp8 dtypes only"),
       number_param("memory_fraction", 0.9, 0.01, 1.0, "fraction of device memory",
                    "memory the engine may use: weights, activations, KV (chunk_lru: see "
                    "main_pool_fraction)")}};
}

std::vector<config::ComponentInfo> cache_policy_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const auto& c : cache_policy_components()) infos.push_back(c.info);
  return infos;
}

config::ParamValues read_cache_policy_params(config::MapReader& reader, const std::string& name) {
  const CachePolicyComponent* policy = find_cache_policy(name);
  if (policy == nullptr) return {};
  config::ParamValues values = config::read_params(reader, policy->info);
  config::ComponentInfo keys = policy->info;
  if (!policy->base_key.empty()) {
    if (const CachePolicyComponent* base = find_cache_policy(values.string(policy->base_key))) {
      const config::ParamValues base_values = config::read_params(reader, base->info);
      for (const auto& [key, value] : base_values.all()) values.set(key, value.first, value.second);
      keys = config::compose_infos(keys, base->info);
    }
  }
  std::vector<std::string> shared;
  for (const auto& p : kv_cache_section_info().params) shared.push_back(p.key);
  config::report_foreign_keys(reader, keys, key_owners(), shared);
  return values;
}

void run_cache_policy_checks(const std::string& name, const ScenarioSpec& s,
                             config::LoadContext& ctx) {
  if (const CachePolicyComponent* policy = find_cache_policy(name); policy && policy->checks)
    policy->checks(s, ctx);
}

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

namespace {

// The engine `policy` runs on, following a wrapper to the base it names;
// nullopt for a name that is not registered.
std::optional<PolicyEngine> engine_of(const std::string& policy, const CacheConfig& config) {
  const CachePolicyComponent* c = find_cache_policy(policy);
  if (c == nullptr) return std::nullopt;
  if (c->engine != PolicyEngine::of_base) return c->engine;
  const std::string& base = config.text(c->base_key);
  if (base == policy) return std::nullopt;  // a wrapper of itself would not end
  return engine_of(base, config);
}

}  // namespace

bool is_genie_policy(const CacheConfig& config) {
  return engine_of(config.policy, config) == PolicyEngine::genie;
}

bool policy_groups_kv_by_attention(const std::string& policy) {
  const CachePolicyComponent* c = find_cache_policy(policy);
  return c != nullptr && c->kv_groups_by_attention;
}

bool policy_supports_numerics(const CacheConfig& config) {
  const CachePolicyComponent* c = find_cache_policy(config.policy);
  return c != nullptr && (c->serving_numerics || is_genie_policy(config));
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
