#include "sim/cache/hybrid_paged_policy.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

HybridPagedPolicy::HybridPagedPolicy(const HybridPagedParams& params)
    : groups_(params.groups),
      block_size_(params.full.block_size),
      host_blocks_(params.full.host_blocks),
      pool_(std::make_shared<BlockPool>(
          BlockPoolParams{params.full.num_blocks, params.full.eviction})) {
  if (!groups_.hybrid())
    throw std::invalid_argument("hybrid paged policy: the model has no sliding and full groups");
  PagedParams full = params.full;
  full.shared_pool = pool_;
  full_ = std::make_unique<PagedPolicy>(full);
  for (int64_t g = 0; g < groups_.sliding_groups; ++g) {
    PagedWindowParams w;
    w.num_blocks = params.full.num_blocks;
    w.block_size = params.full.block_size;
    w.block_bytes = params.full.block_bytes;
    w.window = groups_.window;
    w.host_blocks = params.full.host_blocks;  // the total is checked here
    w.shared_pool = pool_;
    w.hash_salt = static_cast<uint64_t>(g + 1);  // the full group's hashes are unsalted
    sliding_.push_back(std::make_unique<PagedWindowPolicy>(w));
  }
}

bool HybridPagedPolicy::sliding_cached(const BlockHash& hash) const {
  for (size_t g = 0; g < sliding_.size(); ++g)
    if (pool_->lookup(salted_block_hash(hash, g + 1)) == kNoBlock) return false;
  return true;
}

PrefixHit HybridPagedPolicy::lookup_prefix(const TokenView& tokens,
                                           std::vector<BlockHash>& memo) const {
  PrefixHit hit = full_->lookup_prefix(tokens, memo);
  // The longest prefix of L <= full-hit blocks whose last window every
  // sliding group still holds: scanning right to left, a missing block m
  // rules out every L whose window contains m, so the next candidate is m.
  auto length = static_cast<int64_t>(hit.blocks.size());
  while (length > 0) {
    const int64_t first = sliding_.front()->first_block_in_window(length * block_size_);
    int64_t missing = -1;
    for (int64_t b = length - 1; b >= first; --b) {
      if (!sliding_cached(hit.hashes[static_cast<size_t>(b)])) {
        missing = b;
        break;
      }
    }
    if (missing < 0) break;
    length = missing;
  }
  hit.blocks.resize(static_cast<size_t>(length));
  hit.cached_tokens = length * block_size_;
  return hit;
}

std::vector<AdmitPlan> HybridPagedPolicy::sliding_admits(const PrefixHit& hit,
                                                         int64_t new_tokens) const {
  std::vector<AdmitPlan> plans;
  const int64_t hit_blocks = hit.cached_tokens / block_size_;
  const int64_t first = sliding_.front()->first_block_in_window(hit.cached_tokens);
  for (size_t g = 0; g < sliding_.size(); ++g) {
    PrefixHit own;
    own.cached_tokens = hit.cached_tokens;
    for (int64_t b = first; b < hit_blocks; ++b)
      own.blocks.push_back(
          pool_->lookup(salted_block_hash(hit.hashes[static_cast<size_t>(b)], g + 1)));
    plans.push_back(sliding_[g]->plan_admit(std::move(own), new_tokens));
  }
  return plans;
}

AdmitPlan HybridPagedPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan = full_->plan_admit(hit, new_tokens);
  // Every group's new blocks and revived hits come from the one pool.
  int64_t needed = plan.new_blocks;
  for (BlockId b : plan.hit.blocks) needed += pool_->ref_count(b) == 0 ? 1 : 0;
  for (const AdmitPlan& p : sliding_admits(plan.hit, new_tokens)) {
    plan.new_blocks += p.new_blocks;
    needed += p.new_blocks;
    for (BlockId b : p.hit.blocks) needed += pool_->ref_count(b) == 0 ? 1 : 0;
  }
  plan.fits = needed <= pool_->num_free();
  return plan;
}

SeqSlot HybridPagedPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  const int64_t new_tokens = plan.tokens - plan.hit.cached_tokens;
  AdmitPlan full = full_->plan_admit(plan.hit, new_tokens);
  std::vector<AdmitPlan> sliding = sliding_admits(plan.hit, new_tokens);
  // Every group's hits are held before any group allocates, so that no
  // allocation evicts another group's hit from the free queue.
  std::vector<BlockId> held = full.hit.blocks;
  for (const AdmitPlan& p : sliding)
    held.insert(held.end(), p.hit.blocks.begin(), p.hit.blocks.end());
  for (BlockId b : held) pool_->touch(b);
  full.fits = true;
  const SeqSlot s = full_->apply_admit(full);
  std::vector<SeqSlot> slots;
  for (size_t g = 0; g < sliding_.size(); ++g) {
    sliding[g].fits = true;
    slots.push_back(sliding_[g]->apply_admit(sliding[g]));
  }
  for (BlockId b : held) pool_->release(b);
  // The full group registered the blocks this step computes (vLLM V1's
  // cache_blocks at allocation, paged_policy_scheduled.cpp); every group
  // does, so a later admission of this pass finds the whole hit.
  const std::vector<BlockHash>& hashes = full_->content_hashes(s);
  for (size_t g = 0; g < sliding_.size(); ++g) sliding_[g]->register_scheduled(slots[g], hashes);
  if (sliding_slots_.size() <= static_cast<size_t>(s))
    sliding_slots_.resize(static_cast<size_t>(s) + 1);
  sliding_slots_[static_cast<size_t>(s)] = std::move(slots);
  return s;
}

std::vector<GrowPlan> HybridPagedPolicy::grow_plans(SeqSlot s, int64_t new_tokens) const {
  std::vector<GrowPlan> plans{full_->plan_grow(s, new_tokens)};
  const std::vector<SeqSlot>& slots = slots_of(s);
  for (size_t g = 0; g < sliding_.size(); ++g)
    plans.push_back(sliding_[g]->plan_grow(slots[g], new_tokens));
  return plans;
}

GrowPlan HybridPagedPolicy::plan_grow(SeqSlot s, int64_t new_tokens) const {
  GrowPlan plan;
  for (const GrowPlan& p : grow_plans(s, new_tokens)) plan.new_blocks += p.new_blocks;
  plan.fits = plan.new_blocks <= pool_->num_free();
  return plan;
}

void HybridPagedPolicy::apply_grow(SeqSlot s, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("apply_grow with a plan that does not fit");
  std::vector<GrowPlan> plans = grow_plans(s, new_tokens);
  for (GrowPlan& p : plans) p.fits = true;
  full_->apply_grow(s, plans[0], new_tokens);
  const std::vector<SeqSlot>& slots = slots_of(s);
  const std::vector<BlockHash>& hashes = full_->content_hashes(s);
  for (size_t g = 0; g < sliding_.size(); ++g) {
    sliding_[g]->apply_grow(slots[g], plans[g + 1], new_tokens);
    sliding_[g]->register_scheduled(slots[g], hashes);  // as in apply_admit
  }
}

void HybridPagedPolicy::commit(SeqSlot s, const TokenView& tokens, int64_t computed_tokens) {
  full_->commit(s, tokens, computed_tokens);
  // The sliding groups register the blocks the full group hashed (none
  // without prefix caching) before the window frees them.
  const std::vector<BlockHash>& hashes = full_->content_hashes(s);
  const std::vector<SeqSlot>& slots = slots_of(s);
  for (size_t g = 0; g < sliding_.size(); ++g) {
    sliding_[g]->register_hashes(slots[g], hashes, computed_tokens / block_size_);
    sliding_[g]->commit(slots[g], tokens, computed_tokens);
  }
}

void HybridPagedPolicy::release(SeqSlot s) {
  full_->release(s);
  const std::vector<SeqSlot>& slots = slots_of(s);
  for (size_t g = 0; g < sliding_.size(); ++g) sliding_[g]->release(slots[g]);
  sliding_slots_[static_cast<size_t>(s)].clear();
}

SwapPlan HybridPagedPolicy::plan_swap_out(SeqSlot s) const {
  SwapPlan plan = full_->plan_swap_out(s);
  const std::vector<SeqSlot>& slots = slots_of(s);
  for (size_t g = 0; g < sliding_.size(); ++g) {
    const SwapPlan p = sliding_[g]->plan_swap_out(slots[g]);
    plan.blocks += p.blocks;
    plan.copy_blocks += p.copy_blocks;
    plan.bytes += p.bytes;
  }
  plan.fits = accounting().host_blocks_used + plan.blocks <= host_blocks_;
  return plan;
}

HostSlot HybridPagedPolicy::apply_swap_out(SeqSlot s, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_out with a plan that does not fit");
  std::vector<HostSlot> hosts;
  const std::vector<SeqSlot> slots = slots_of(s);
  for (size_t g = 0; g < sliding_.size(); ++g) {
    SwapPlan p = sliding_[g]->plan_swap_out(slots[g]);
    p.fits = true;
    hosts.push_back(sliding_[g]->apply_swap_out(slots[g], p));
  }
  SwapPlan full = full_->plan_swap_out(s);
  full.fits = true;
  const HostSlot h = full_->apply_swap_out(s, full);
  sliding_slots_[static_cast<size_t>(s)].clear();
  if (sliding_host_.size() <= static_cast<size_t>(h))
    sliding_host_.resize(static_cast<size_t>(h) + 1);
  sliding_host_[static_cast<size_t>(h)] = std::move(hosts);
  return h;
}

SwapPlan HybridPagedPolicy::plan_swap_in(HostSlot h) const {
  SwapPlan plan = full_->plan_swap_in(h);
  int64_t needed = plan.copy_blocks + plan.revived_blocks;
  const std::vector<HostSlot>& hosts = sliding_host_.at(static_cast<size_t>(h));
  for (size_t g = 0; g < sliding_.size(); ++g) {
    const SwapPlan p = sliding_[g]->plan_swap_in(hosts[g]);
    plan.blocks += p.blocks;
    plan.copy_blocks += p.copy_blocks;
    plan.bytes += p.bytes;
    needed += p.copy_blocks;
  }
  plan.fits = needed <= pool_->num_free();
  return plan;
}

SeqSlot HybridPagedPolicy::apply_swap_in(HostSlot h, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_in with a plan that does not fit");
  // The full group first: it holds the blocks it revives before the
  // sliding groups allocate theirs.
  SwapPlan full = full_->plan_swap_in(h);
  full.fits = true;
  std::vector<SwapPlan> sliding;
  const std::vector<HostSlot> hosts = sliding_host_.at(static_cast<size_t>(h));
  for (size_t g = 0; g < sliding_.size(); ++g)
    sliding.push_back(sliding_[g]->plan_swap_in(hosts[g]));
  const SeqSlot s = full_->apply_swap_in(h, full);
  std::vector<SeqSlot> slots;
  for (size_t g = 0; g < sliding_.size(); ++g) {
    sliding[g].fits = true;
    slots.push_back(sliding_[g]->apply_swap_in(hosts[g], sliding[g]));
  }
  sliding_host_[static_cast<size_t>(h)].clear();
  if (sliding_slots_.size() <= static_cast<size_t>(s))
    sliding_slots_.resize(static_cast<size_t>(s) + 1);
  sliding_slots_[static_cast<size_t>(s)] = std::move(slots);
  return s;
}

const std::vector<BlockId>& HybridPagedPolicy::block_table(SeqSlot s) const {
  return full_->block_table(s);
}

CacheAccounting HybridPagedPolicy::accounting() const {
  CacheAccounting a = full_->accounting();
  for (const auto& w : sliding_) {
    const CacheAccounting b = w->accounting();
    a.slots_reserved += b.slots_reserved;
    a.tokens_held += b.tokens_held;
    a.bytes_moved += b.bytes_moved;
    a.swapped_bytes += b.swapped_bytes;
    a.host_blocks_used += b.host_blocks_used;
  }
  a.window_evicted_tokens = sliding_.front()->accounting().window_evicted_tokens;
  return a;
}

void HybridPagedPolicy::check_drained() const {
  full_->check_drained();
  for (const auto& w : sliding_) w->check_drained();
}

}  // namespace kvsim
