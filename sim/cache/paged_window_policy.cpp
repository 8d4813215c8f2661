#include "sim/cache/paged_window_policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {

BlockHash salted_block_hash(const BlockHash& hash, uint64_t salt) {
  return {hash.low ^ (salt * 0x9E3779B97F4A7C15ull), hash.high ^ (salt * 0xC2B2AE3D27D4EB4Full)};
}

namespace {
// Alone, blocks under a window hold no hash: the free order only picks
// block ids, so the default (`lru`) order is kept.
std::shared_ptr<BlockPool> window_pool_of(const PagedWindowParams& params) {
  if (params.shared_pool) return params.shared_pool;
  return std::make_shared<BlockPool>(BlockPoolParams{params.num_blocks});
}
}  // namespace

PagedWindowPolicy::PagedWindowPolicy(const PagedWindowParams& params)
    : PagedPolicyBase(window_pool_of(params), params.block_size, params.block_bytes,
                      params.host_blocks),
      window_(params.window),
      hash_salt_(params.hash_salt) {
  if (params.window <= 0) throw std::invalid_argument("sliding_window: window must be at least 1");
}

PrefixHit PagedWindowPolicy::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>&) const {
  // Prefix caching is off under a window: nothing is reused, but the lookup
  // still counts for the hit rate's denominator as paged does with it off.
  (void)tokens;
  return PrefixHit{};
}

AdmitPlan PagedWindowPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan;
  const int64_t hit_blocks = hit.cached_tokens / block_size();
  plan.tokens = hit.cached_tokens + new_tokens;
  plan.new_blocks = blocks_for(plan.tokens) - hit_blocks;
  int64_t revived = 0;
  for (BlockId b : hit.blocks) revived += pool_.ref_count(b) == 0 ? 1 : 0;
  plan.fits = plan.new_blocks + revived <= pool_.num_free();
  plan.hit = std::move(hit);
  return plan;
}

SeqSlot PagedWindowPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  const int64_t hit_blocks = plan.hit.cached_tokens / block_size();
  const int64_t skipped = hit_blocks - static_cast<int64_t>(plan.hit.blocks.size());
  const SeqSlot s = open_seq(plan.hit.blocks, plan.new_blocks, plan.tokens, skipped);
  if (registered_.size() <= static_cast<size_t>(s)) registered_.resize(static_cast<size_t>(s) + 1);
  registered_[static_cast<size_t>(s)] = hit_blocks;
  return s;
}

int64_t PagedWindowPolicy::first_block_in_window(int64_t computed_tokens) const {
  // The next token (position computed_tokens) attends to positions
  // [computed_tokens + 1 - window, computed_tokens]: block b is out of every
  // later window once (b + 1) * block_size <= computed_tokens + 1 - window.
  return std::max<int64_t>(0, computed_tokens + 1 - window_) / block_size();
}

void PagedWindowPolicy::commit(SeqSlot s, const TokenView&, int64_t computed_tokens) {
  const int64_t released = free_leading_blocks(s, first_block_in_window(computed_tokens));
  window_evicted_tokens_ += released * block_size();
}

void PagedWindowPolicy::register_hashes(SeqSlot s, const std::vector<BlockHash>& hashes,
                                        int64_t full_blocks) {
  int64_t& done = registered_.at(static_cast<size_t>(s));
  const std::vector<BlockId>& table = seq(s).block_table;
  const int64_t end = std::min<int64_t>(
      {full_blocks, static_cast<int64_t>(hashes.size()), static_cast<int64_t>(table.size())});
  for (; done < end; ++done) {
    const BlockId b = table[static_cast<size_t>(done)];
    if (b != kNoBlock)
      pool_.register_hash(b, salted_block_hash(hashes[static_cast<size_t>(done)], hash_salt_));
  }
}

SeqSlot PagedWindowPolicy::apply_swap_in(HostSlot h, const SwapPlan& plan) {
  const SeqSlot s = PagedPolicyBase::apply_swap_in(h, plan);
  if (registered_.size() <= static_cast<size_t>(s)) registered_.resize(static_cast<size_t>(s) + 1);
  registered_[static_cast<size_t>(s)] = seq(s).tokens / block_size();
  return s;
}

int64_t PagedWindowPolicy::attention_context(int64_t context_tokens) const {
  // A query attends to itself and the window - 1 tokens before it.
  return std::min(context_tokens, window_ - 1);
}

CacheAccounting PagedWindowPolicy::accounting() const {
  CacheAccounting a = PagedPolicyBase::accounting();
  a.window_evicted_tokens = window_evicted_tokens_;
  return a;
}

}  // namespace kvsim
