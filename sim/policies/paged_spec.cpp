#include "sim/policies/paged_spec.hpp"

#include <fmt/format.h>

#include "kernels/kv_layout.hpp"
#include "sim/cache/hybrid_paged_policy.hpp"
#include "sim/cache/kv_cache_groups.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

PagedSpec::PagedSpec(const PolicyValues& v)
    : pool_(PagedPoolSettings::from(v.values)),
      prefix_caching_(v.values.boolean("prefix_caching")) {
  set_read(v.values, v.paths);
}

void check_block_layout(const PagedPoolSettings& pool, const PolicySpec& keys,
                        const InstanceSpec& s, config::LoadContext& ctx) {
  // A latent cache (MLA) is one row of kv_lora_rank + rope per token and
  // layer, not K and V per head: the K/V layouts' constraints do not apply.
  const ModelSpec& m = s.model;
  if (m.mla.enabled()) return;
  const BlockGeometry g{m.num_hidden_layers, pool.block_size, m.kv_heads_per_rank(s.tp), m.head_dim,
                        s.kv.dtype_bytes()};
  if (auto layout = make_kv_layout(pool.layout)) {
    if (auto no = layout->reject(g)) {
      const std::string key = keys.key_path(no->key);
      ctx.diagnostics.error(ctx.location_of(key), key,
                            fmt::format("{} (kv_cache.layout {})", no->why, pool.layout),
                            no->allowed);
    }
    // The tables it builds on the host each step are priced from the host's
    // memory bandwidth (sim/serve/kv_layout_host_cost.hpp).
    if (layout->host_table_entries(g, 1) > 0 && s.device.host_memory_bandwidth <= 0) {
      const std::string key = keys.key_path("layout");
      ctx.diagnostics.error(
          ctx.location_of(key), key,
          fmt::format("layout {} builds a block table per layer on the host every step, priced "
                      "from the device's host_memory_bandwidth, which {} does not give",
                      pool.layout, s.device.name),
          "layout ksana, or a device file with host_memory_bandwidth");
    }
  }
}

void PagedSpec::check(const InstanceSpec& s, EngineContract engine,
                      config::LoadContext& ctx) const {
  (void)engine;
  check_block_layout(pool_, *this, s, ctx);
  const ModelSpec& m = s.model;
  if (!kv_cache_groups(m).hybrid()) return;
  // The KV cache groups of a hybrid model are laid out over all its layers;
  // a pipeline stage holding a slice of them is not modelled.
  if (s.pp > 1) {
    ctx.diagnostics.error(
        ctx.location_of("parallel.pipeline"), "parallel.pipeline",
        fmt::format("{} mixes sliding-window and full layers: its per-attention-type KV cache "
                    "groups are not split across pipeline stages",
                    m.name),
        "pipeline: 1 with this model and policy");
  }
  // The groups (sim/cache/hybrid_paged_policy.hpp) keep no chain of tiers
  // below the device.
  if (!s.kv_tiers.empty()) {
    ctx.diagnostics.error(
        ctx.location_of("kv_tiers"), "kv_tiers",
        fmt::format("{} mixes sliding-window and full layers: its KV cache groups keep no tiers "
                    "below the device",
                    m.name),
        "no kv_tiers section with this model");
  }
}

PoolSizing PagedSpec::size(const ModelSpec& model, PoolSizingInput in) const {
  pool_.fill(in);
  // On a model with sliding and full layers: a KV cache group per attention
  // type over pages of one pool (vLLM's hybrid allocator).
  in.kv_groups_by_attention = true;
  return size_paged_pool(model, in);
}

std::unique_ptr<KvCachePolicy> PagedSpec::make(const InstanceSpec& s,
                                               const PoolSizing& sizing) const {
  (void)s;
  PagedParams p;
  p.num_blocks = sizing.num_blocks;
  p.block_size = pool_.block_size;
  p.block_bytes = sizing.block_bytes;
  p.prefix_caching = prefix_caching_;
  p.host_blocks = pool_.host_blocks(sizing);
  p.eviction = pool_.eviction;
  // A model with sliding and full layers: a group per attention type over
  // the pool of pages the sizing laid out.
  if (sizing.groups.hybrid())
    return std::make_unique<HybridPagedPolicy>(HybridPagedParams{p, sizing.groups});
  return std::make_unique<PagedPolicy>(p);
}

bool PagedSpec::publishes_kv_events(const InstanceSpec& s) const {
  return prefix_caching_ && !s.pool_sizing().groups.hybrid();
}

PolicyEntry paged_policy_entry() {
  config::ComponentInfo info{"policy", "paged",
                             "vLLM's paged KV cache: fixed-size blocks, LRU reuse (seed 001)",
                             paged_pool_params()};
  info.params.insert(info.params.begin() + 1,
                     config::bool_param("prefix_caching", true,
                                        "reuse the cached blocks of a prompt's prefix (vLLM "
                                        "automatic prefix caching)"));
  return {info, "", [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<PagedSpec>(v);
          }};
}

}  // namespace kvsim
