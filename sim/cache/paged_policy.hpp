#pragma once
// `paged` (seeds 000 and 001): one pre-allocated pool of fixed-size blocks,
// per-sequence block tables, prefix caching by chained block hashes with
// reference counts and LRU reuse of freed cached blocks, and block-level swap
// to a bounded host pool.
#include <memory>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/kv_layout.hpp"

namespace kvsim {

struct PagedParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;  // tokens per block
  Bytes block_bytes = 0;   // per rank
  bool prefix_caching = true;
  int64_t host_blocks = 0;  // swap space in blocks
};

class PagedPolicy final : public KvCachePolicy {
 public:
  explicit PagedPolicy(const PagedParams& params);

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
  const std::vector<BlockId>& block_table(SeqSlot seq) const override;
  int64_t free_blocks() const override { return pool_.num_free(); }
  CacheAccounting accounting() const override;
  void check_drained() const override;

  const BlockPool& pool() const { return pool_; }

 private:
  struct SeqCache {
    std::vector<BlockId> block_table;
    std::vector<BlockHash> hashes;  // of the first hashes.size() full blocks
    int64_t tokens = 0;             // token slots in use (computed or scheduled)
    int64_t registered_blocks = 0;  // full blocks whose hash is in the pool's map
    bool live = false;
  };
  struct HostSeq {
    std::vector<BlockHash> hashes;  // full blocks' content, to revive on swap-in
    int64_t blocks = 0;
    int64_t tokens = 0;
    bool live = false;
  };

  int64_t blocks_for(int64_t tokens) const {
    return (tokens + params_.block_size - 1) / params_.block_size;
  }
  SeqSlot new_slot();
  // Blocks a swap-in must copy: those whose content is no longer on device.
  int64_t blocks_to_copy(const HostSeq& h) const;

  PagedParams params_;
  BlockPool pool_;
  std::vector<SeqCache> seqs_;
  std::vector<SeqSlot> free_seq_slots_;
  std::vector<HostSeq> host_;
  std::vector<HostSlot> free_host_slots_;
  int64_t live_seqs_ = 0;
  int64_t slots_reserved_ = 0;
  int64_t tokens_held_ = 0;
  int64_t host_blocks_used_ = 0;
  Bytes bytes_moved_ = 0;
  Bytes swapped_bytes_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  mutable std::vector<int32_t> scratch_tokens_;  // reused buffer for hashing
};

}  // namespace kvsim
