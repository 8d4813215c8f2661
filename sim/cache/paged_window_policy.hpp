#pragma once
// `sliding_window` over `paged` (SPEC 6, seed 002's window-size on the
// serving side): a paged pool whose sequences keep only the last `window`
// tokens. After every step, blocks whose tokens all lie before the window of
// the next token are released to the pool (their block-table entries become
// kNoBlock, positions are kept), so a long decode holds at most
// ceil(window / block_size) + 1 blocks, and attention reads at most `window`
// tokens (attention_context).
//
// Its own class beside PagedPolicy (both build on PagedPolicyBase) rather
// than a flag inside it: prefix caching is off under a window (a block that
// leaves the window is freed, so a chained hash could point at a prefix that
// is gone), which removes the part of PagedPolicy that is hard to combine
// with freeing blocks mid-sequence. Block tables, swap (of the blocks still
// in the window) and accounting are the base's.
#include <memory>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/paged_policy_base.hpp"

namespace kvsim {

struct PagedWindowParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  Bytes block_bytes = 0;
  int64_t window = 0;  // tokens attended (and kept), >= 1
  int64_t host_blocks = 0;
  // The sliding group of a hybrid model (hybrid_paged_policy.hpp): blocks
  // come from the pool the groups share, and full blocks are registered
  // under their content hash salted by `hash_salt` (each group's hashes
  // apart), so a later prefix hit can revive the ones still in the pool.
  std::shared_ptr<BlockPool> shared_pool = nullptr;
  uint64_t hash_salt = 0;
};

// The hash a sliding group registers a block's content under: the
// sequence's chained hash, moved to the group's own key space.
BlockHash salted_block_hash(const BlockHash& hash, uint64_t salt);

class PagedWindowPolicy final : public PagedPolicyBase {
 public:
  explicit PagedWindowPolicy(const PagedWindowParams& params);

  std::string_view name() const override { return "sliding_window"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  // hit.blocks (from a hybrid lookup; empty alone) are the blocks of the
  // hit's last window: the table starts with the released entries before
  // them, at cached_tokens / block_size - hit.blocks.size().
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  // Frees the blocks the next token's window no longer covers.
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  CacheAccounting accounting() const override;
  int64_t attention_context(int64_t context_tokens) const override;
  bool caps_attention_context() const override { return true; }

  // Hybrid groups: registers the salted hashes of the sequence's full
  // blocks below `full_blocks` not registered yet, before commit() frees
  // the ones that leave the window (freed blocks keep their hash in the
  // pool). `hashes` are the sequence's chained content hashes.
  void register_hashes(SeqSlot seq, const std::vector<BlockHash>& hashes, int64_t full_blocks);
  // register_hashes below the blocks the tokens held (computed or scheduled)
  // fill: at allocation, as the full group registers them (vLLM V1,
  // paged_policy_scheduled.cpp).
  void register_scheduled(SeqSlot s, const std::vector<BlockHash>& hashes) {
    register_hashes(s, hashes, seq(s).tokens / block_size());
  }
  // First block the next token's window needs after `computed_tokens`.
  int64_t first_block_in_window(int64_t computed_tokens) const;
  int64_t window() const { return window_; }
  // A swapped-in sequence's blocks are fresh copies: none is registered.
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;

 private:
  int64_t window_;
  uint64_t hash_salt_;
  std::vector<int64_t> registered_;  // by SeqSlot: blocks whose hash is registered (or skipped)
  int64_t window_evicted_tokens_ = 0;
};

}  // namespace kvsim
