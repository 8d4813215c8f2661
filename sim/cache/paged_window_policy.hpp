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
};

class PagedWindowPolicy final : public PagedPolicyBase {
 public:
  explicit PagedWindowPolicy(const PagedWindowParams& params);

  std::string_view name() const override { return "sliding_window"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  // Frees the blocks the next token's window no longer covers.
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  CacheAccounting accounting() const override;
  int64_t attention_context(int64_t context_tokens) const override;

 private:
  int64_t window_;
  int64_t window_evicted_tokens_ = 0;
};

}  // namespace kvsim
