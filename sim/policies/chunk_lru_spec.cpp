// chunk_lru (seed 003) as a policy: a main pool of blocks without prefix
// caching and a chunk pool beside it, both fractions of device memory, the
// serving engine's block pool (sim/cache/chunk_lru_policy.cpp).
#include "sim/policies/chunk_lru_spec.hpp"

#include <fmt/format.h>

#include "sim/policies/paged_pool_spec.hpp"
#include "sim/policies/paged_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

// The choice's names (chunk_attention's declared choices).
ChunkAttention chunk_attention_named(const std::string& name) {
  return name == "isolated" ? ChunkAttention::isolated : ChunkAttention::system_prompt;
}

config::ComponentInfo chunk_lru_policy_info() {
  using namespace config;
  // The main pool is a paged pool (without prefix caching: chunks take its
  // place); seed 003 sizes both pools as fractions of device memory.
  ComponentInfo info{"policy", "chunk_lru",
                     "position-independent chunk reuse in a second LRU pool (seed 003)",
                     paged_pool_params()};
  info.params.push_back(number_param("main_pool_fraction", 0.70, 0.0, 1.0,
                                     "fraction of device memory",
                                     "weights, activations and the main KV pool (in place of "
                                     "memory_fraction)"));
  info.params.push_back(number_param("chunk_pool_fraction", 0.15, 0.0, 1.0,
                                     "fraction of device memory",
                                     "the chunk pool; the rest of memory stays in reserve"));
  info.params.push_back(int_param("virtual_pos_start", 4096, 0, 1LL << 31, "tokens",
                                  "position where missed chunks are computed"));
  info.params.push_back(choice_param(
      "chunk_attention", std::string("system_prompt"), {"system_prompt", "isolated"},
      "what a missed chunk attends where it is computed: the system prompt and itself (seed "
      "003's mask; the key then covers the system prompt) or only itself"));
  info.params.push_back(number_param(
      "recompute_ratio", 0.0, 0.0, 1.0, "fraction of each placed segment's tokens",
      "CacheBlend selective recompute: the tokens whose KV deviates most are recomputed at "
      "their real positions attending everything before them (0: plain reuse, 1: a full "
      "prefill)"));
  info.params.push_back(
      int_param("max_chunks", 1 << 20, 1, 1LL << 31, "chunks", "chunks the index can hold"));
  info.params.push_back(
      int_param("max_chunk_tokens", 32768, 1, 1LL << 31, "tokens", "longest chunk that is cached"));
  return info;
}

class ChunkLruSpec final : public PolicySpec, public BlockPoolContract {
 public:
  explicit ChunkLruSpec(const PolicyValues& v)
      : pool_(PagedPoolSettings::from(v.values)),
        main_fraction_(v.values.number("main_pool_fraction")),
        chunk_fraction_(v.values.number("chunk_pool_fraction")),
        virtual_pos_start_(v.values.integer("virtual_pos_start")),
        max_chunks_(v.values.integer("max_chunks")),
        max_chunk_tokens_(v.values.integer("max_chunk_tokens")),
        attention_(chunk_attention_named(v.values.string("chunk_attention"))),
        recompute_ratio_(v.values.number("recompute_ratio")) {
    set_read(v.values, v.paths);
  }

  std::string_view name() const override { return "chunk_lru"; }
  const BlockPoolContract* block_pool() const override { return this; }

  // The main pool, the chunk pool and the reserve share the device's memory.
  void check(const InstanceSpec& s, EngineContract engine,
             config::LoadContext& ctx) const override {
    (void)engine;
    check_block_layout(pool_, *this, s, ctx);
    const std::string chunk_key = key_path("chunk_pool_fraction");
    if (main_fraction_ + chunk_fraction_ > 1.0 + 1e-9) {
      ctx.diagnostics.error(
          ctx.location_of(chunk_key), chunk_key,
          fmt::format("main_pool_fraction {} + chunk_pool_fraction {} = {} is more than the "
                      "device's memory",
                      main_fraction_, chunk_fraction_, main_fraction_ + chunk_fraction_),
          "a sum of at most 1 (seed 003: 0.70 main + 0.15 chunk, 0.15 left in reserve)");
    }
    // memory_fraction is a shared key of kv_cache, but the main pool takes
    // its place (size()).
    if (ctx.locations.count("kv_cache.memory_fraction") > 0) {
      ctx.diagnostics.error(ctx.location_of("kv_cache.memory_fraction"), "kv_cache.memory_fraction",
                            "does not apply to chunk_lru: its main pool (weights, activations, "
                            "main KV) is sized by main_pool_fraction",
                            "remove it and set main_pool_fraction / chunk_pool_fraction");
    }
    const PoolSizing sz = size(s.model, s.pool_input());
    if (sz.chunk_pool_blocks < 1) {
      ctx.diagnostics.error(
          ctx.location_of(chunk_key), chunk_key,
          fmt::format("{} x {} holds no block of {}", format_bytes(s.device.memory_bytes),
                      chunk_fraction_, format_bytes(sz.block_bytes)),
          "a chunk pool of at least one block");
    }
  }

  int64_t block_size() const override { return pool_.block_size; }
  // Seed 003's split: the main pool takes the place of memory_fraction
  // (weights, activations and the main KV pool), the chunk pool is its own.
  PoolSizing size(const ModelSpec& model, PoolSizingInput in) const override {
    pool_.fill(in);
    in.memory_fraction = main_fraction_;
    in.chunk_pool_fraction = chunk_fraction_;
    return size_paged_pool(model, in);
  }
  std::unique_ptr<KvCachePolicy> make(const InstanceSpec& s,
                                      const PoolSizing& sizing) const override {
    ChunkLruParams p;
    p.main.num_blocks = sizing.num_blocks;
    p.main.block_size = pool_.block_size;
    p.main.block_bytes = sizing.block_bytes;
    p.main.prefix_caching = false;
    p.main.host_blocks = pool_.host_blocks(sizing);
    p.main.eviction = pool_.eviction;
    p.eviction = pool_.eviction;
    p.chunk_blocks = sizing.chunk_pool_blocks;
    p.max_chunks = max_chunks_;
    p.max_chunk_tokens = max_chunk_tokens_;
    p.virtual_pos_start = virtual_pos_start_;
    p.attention = attention_;
    p.recompute_ratio = recompute_ratio_;
    p.model_layers = s.model.num_hidden_layers;
    return std::make_unique<ChunkLruPolicy>(p);
  }
  bool swap_preemption() const override { return pool_.swap; }
  bool reuses_chunks() const override { return true; }
  ServingNumerics numerics() const override { return ServingNumerics::chunks; }
  int64_t virtual_pos_start() const override { return virtual_pos_start_; }
  ChunkAttention chunk_attention() const override { return attention_; }
  double chunk_recompute_ratio() const override { return recompute_ratio_; }
  std::string layout() const override { return pool_.layout; }

 private:
  PagedPoolSettings pool_;
  double main_fraction_, chunk_fraction_;
  int64_t virtual_pos_start_, max_chunks_, max_chunk_tokens_;
  ChunkAttention attention_;
  double recompute_ratio_;
};

}  // namespace

ChunkLruParams declared_chunk_lru_params() {
  const config::ComponentInfo info = chunk_lru_policy_info();
  ChunkLruParams p;
  p.max_chunks = info.default_of<int64_t>("max_chunks");
  p.max_chunk_tokens = info.default_of<int64_t>("max_chunk_tokens");
  p.virtual_pos_start = info.default_of<int64_t>("virtual_pos_start");
  p.attention = chunk_attention_named(info.default_of<std::string>("chunk_attention"));
  p.recompute_ratio = info.default_of<double>("recompute_ratio");
  return p;
}

PolicyEntry chunk_lru_policy_entry() {
  return {chunk_lru_policy_info(), "", [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<ChunkLruSpec>(v);
          }};
}

}  // namespace kvsim
