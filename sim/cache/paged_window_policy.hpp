#pragma once
// `sliding_window` over `paged` (SPEC 6, seed 002's window-size on the
// serving side): a paged pool whose sequences keep only the last `window`
// tokens. After every step, blocks whose tokens all lie before the window of
// the next token are released to the pool (their block-table entries become
// kNoBlock, positions are kept), so a long decode holds at most
// ceil(window / block_size) + 1 blocks, and attention reads at most `window`
// tokens (attention_context).
//
// Its own class rather than a flag inside PagedPolicy: prefix caching is off
// under a window (a block that leaves the window is freed, so a chained hash
// could point at a prefix that is gone), which removes the part of
// PagedPolicy that is hard to combine with freeing blocks mid-sequence.
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/kv_cache_policy.hpp"

namespace kvsim {

struct PagedWindowParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  Bytes block_bytes = 0;
  int64_t window = 0;  // tokens attended (and kept), >= 1
  int64_t host_blocks = 0;
};

class PagedWindowPolicy final : public KvCachePolicy {
 public:
  explicit PagedWindowPolicy(const PagedWindowParams& params);

  std::string_view name() const override { return "sliding_window"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const override;
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override;
  // Frees the blocks the next token's window no longer covers.
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  void release(SeqSlot seq) override;
  SwapPlan plan_swap_out(SeqSlot seq) const override;
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override;
  SwapPlan plan_swap_in(HostSlot host) const override;
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;
  // Freed leading blocks read kNoBlock.
  const std::vector<BlockId>& block_table(SeqSlot seq) const override;
  int64_t free_blocks() const override { return pool_.num_free(); }
  CacheAccounting accounting() const override;
  void check_drained() const override;
  int64_t attention_context(int64_t context_tokens) const override;

  // Blocks of a held sequence that are still allocated.
  int64_t live_blocks(SeqSlot seq) const;

 private:
  struct SeqCache {
    std::vector<BlockId> block_table;
    int64_t tokens = 0;
    int64_t freed_blocks = 0;  // leading entries released (kNoBlock)
    bool live = false;
  };
  struct HostSeq {
    int64_t blocks = 0;  // live blocks copied out
    int64_t freed_blocks = 0;
    int64_t tokens = 0;
    bool live = false;
  };
  int64_t blocks_for(int64_t tokens) const {
    return (tokens + params_.block_size - 1) / params_.block_size;
  }
  SeqSlot new_slot();

  PagedWindowParams params_;
  BlockPool pool_;
  std::vector<SeqCache> seqs_;
  std::vector<SeqSlot> free_seq_slots_;
  std::vector<HostSeq> host_;
  std::vector<HostSlot> free_host_slots_;
  int64_t live_seqs_ = 0;
  int64_t slots_reserved_ = 0;
  int64_t tokens_held_ = 0;  // tokens in live blocks
  int64_t host_blocks_used_ = 0;
  Bytes bytes_moved_ = 0;
  Bytes swapped_bytes_ = 0;
  int64_t window_evicted_tokens_ = 0;
};

}  // namespace kvsim
