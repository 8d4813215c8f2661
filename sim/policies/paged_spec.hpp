#pragma once
// paged (seeds 000, 001) as a policy: a pool of fixed-size blocks with
// prefix caching, the serving engine's block pool.
#include "sim/policies/paged_pool_spec.hpp"
#include "sim/policies/policy_values.hpp"
#include "sim/spec/policy_spec.hpp"

namespace kvsim {

class PagedSpec final : public PolicySpec, public BlockPoolContract {
 public:
  explicit PagedSpec(const PolicyValues& v);

  std::string_view name() const override { return "paged"; }
  const BlockPoolContract* block_pool() const override { return this; }
  void check(const InstanceSpec& s, EngineContract engine, config::LoadContext& ctx) const override;

  int64_t block_size() const override { return pool_.block_size; }
  PoolSizing size(const ModelSpec& model, PoolSizingInput in) const override;
  std::unique_ptr<KvCachePolicy> make(const InstanceSpec& s,
                                      const PoolSizing& sizing) const override;
  bool swap_preemption() const override { return pool_.swap; }
  bool keeps_prefix_blocks() const override { return prefix_caching_; }
  // PagedPolicy does; the hybrid policy (a group per attention type) not yet.
  bool publishes_kv_events(const InstanceSpec& s) const override;
  ServingNumerics numerics() const override { return ServingNumerics::block_tables; }
  std::string layout() const override { return pool_.layout; }

 private:
  PagedPoolSettings pool_;
  bool prefix_caching_;
};

// A pool's block layout against the model's shape (seed 000: ATB takes some
// block sizes only); the key is where the user set the block size.
void check_block_layout(const PagedPoolSettings& pool, const PolicySpec& keys,
                        const InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
