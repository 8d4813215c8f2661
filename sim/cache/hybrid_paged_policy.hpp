#pragma once
// `paged` on a model that mixes sliding-window and full attention layers:
// one KV cache group per attention type over one shared block pool, as
// vLLM's hybrid KV cache manager does it (vLLM docs, design/
// hybrid_kv_cache_manager; llama.cpp's iSWA cache is the same idea with two
// pools of fixed sizes). Composed of the policies that already exist, over
// the shared pool: a PagedPolicy for the full-attention group (every token,
// prefix caching by chained block hashes) and one PagedWindowPolicy per
// sliding group (the window plus the partial block; blocks that slide out
// go back to the pool after each step). The pool's blocks are pages of
// KvCacheGroups::page_layers layers (sim/cache/kv_cache_groups.hpp).
//
// Prefix caching (vLLM's rule: "full attention: a cache hit prefix requires
// all tokens remain in the KV cache; sliding window: a cache hit prefix
// only requires the last sliding_window_size tokens remain"): the full
// group finds its longest prefix of cached blocks; each sliding group
// registers its full blocks under its own salted hashes before they leave
// the window, and a freed block keeps its hash until the pool reuses it.
// The hit is the longest prefix of L blocks, at most the full group's, for
// which every sliding group still has the blocks the token at L x
// block_size attends to (those from first_block_in_window on). vLLM's
// HybridKVCacheCoordinator finds the same length (the full group's hit,
// then the sliding groups' within it).
//
// A SeqSlot / HostSlot of this policy is the full group's; the sliding
// groups' slots sit beside it. Swap moves every group's held blocks. Not
// supported: tiers below the device (attach_tiers throws; the scenario
// checks refuse kv_tiers on such a model first).
#include <memory>
#include <vector>

#include "sim/cache/kv_cache_groups.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"

namespace kvsim {

struct HybridPagedParams {
  PagedParams full;  // num_blocks: pages of the shared pool; host_blocks: pages of swap space
  KvCacheGroups groups;
};

class HybridPagedPolicy final : public KvCachePolicy {
 public:
  explicit HybridPagedPolicy(const HybridPagedParams& params);

  std::string_view name() const override { return "paged"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const override;
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override;
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  void release(SeqSlot seq) override;
  SwapPlan plan_swap_out(SeqSlot seq) const override;
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override;
  SwapPlan plan_swap_in(HostSlot host) const override;
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;
  // The full group's table (every position has a block).
  const std::vector<BlockId>& block_table(SeqSlot seq) const override;
  int64_t free_blocks() const override { return pool_->num_free(); }
  // Pages of the shared pool; slots and tokens summed over the groups;
  // window_evicted_tokens counted once (every sliding group drops the same).
  CacheAccounting accounting() const override;
  void check_drained() const override;
  void report(RunMetrics& metrics) const override { full_->report(metrics); }

  const PagedPolicy& full_group() const { return *full_; }
  const PagedWindowPolicy& sliding_group(size_t i) const { return *sliding_[i]; }
  const BlockPool& pool() const { return *pool_; }

 private:
  // Whether every sliding group holds block b of this content.
  bool sliding_cached(const BlockHash& hash) const;
  // Each sliding group's admission plan for a full-group hit (its blocks of
  // the hit's last window, found again by hash).
  std::vector<AdmitPlan> sliding_admits(const PrefixHit& hit, int64_t new_tokens) const;
  std::vector<GrowPlan> grow_plans(SeqSlot seq, int64_t new_tokens) const;
  const std::vector<SeqSlot>& slots_of(SeqSlot s) const {
    return sliding_slots_.at(static_cast<size_t>(s));
  }

  KvCacheGroups groups_;
  int64_t block_size_;
  int64_t host_blocks_;
  std::shared_ptr<BlockPool> pool_;
  std::unique_ptr<PagedPolicy> full_;
  std::vector<std::unique_ptr<PagedWindowPolicy>> sliding_;
  std::vector<std::vector<SeqSlot>> sliding_slots_;  // by full SeqSlot
  std::vector<std::vector<HostSlot>> sliding_host_;  // by full HostSlot
};

}  // namespace kvsim
