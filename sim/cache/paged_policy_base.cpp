#include "sim/cache/paged_policy_base.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/recycled_index.hpp"

namespace kvsim {

PagedPolicyBase::PagedPolicyBase(const BlockPoolParams& pool, int64_t block_size, Bytes block_bytes,
                                 int64_t host_blocks)
    : PagedPolicyBase(std::make_shared<BlockPool>(pool), block_size, block_bytes, host_blocks) {}

PagedPolicyBase::PagedPolicyBase(std::shared_ptr<BlockPool> shared_pool, int64_t block_size,
                                 Bytes block_bytes, int64_t host_blocks)
    : pool_owner_(std::move(shared_pool)),
      pool_(*pool_owner_),
      block_size_(block_size),
      block_bytes_(block_bytes),
      host_blocks_(host_blocks) {
  if (block_size <= 0) throw std::invalid_argument("block_size must be positive");
}

SeqSlot PagedPolicyBase::open_seq(const std::vector<BlockId>& reused, int64_t new_blocks,
                                  int64_t tokens, int64_t freed_blocks) {
  const SeqSlot s = take_recycled_index(seqs_, free_seq_slots_);
  SeqTable& sq = seqs_[static_cast<size_t>(s)];
  sq.block_table.assign(static_cast<size_t>(freed_blocks), kNoBlock);
  // Reused and released blocks lie anywhere in the pool: their metadata is
  // loaded a few blocks ahead of its use.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < reused.size(); ++i) {
    if (i + kAhead < reused.size()) pool_.prefetch_block(reused[i + kAhead]);
    pool_.touch(reused[i]);
    sq.block_table.push_back(reused[i]);
  }
  pool_.allocate_into(new_blocks, sq.block_table);
  room(s) = {tokens, static_cast<int64_t>(sq.block_table.size()) * block_size_};
  sq.freed_blocks = static_cast<int32_t>(freed_blocks);  // the table holds as many entries
  sq.live = true;
  ++live_seqs_;
  slots_reserved_ += (static_cast<int64_t>(reused.size()) + new_blocks) * block_size_;
  tokens_held_ += tokens - freed_blocks * block_size_;
  return s;
}

GrowPlan PagedPolicyBase::plan_grow(SeqSlot s, int64_t new_tokens) const {
  const SeqRoom& r = seqs_.at(static_cast<size_t>(s)).room;
  GrowPlan plan;
  // Most calls are a decode that stays inside its last block: tell that by a
  // compare.
  if (const int64_t beyond = r.tokens + new_tokens - r.capacity; beyond > 0) {
    // A decode crossing into a new block needs one: no divide either.
    plan.new_blocks = beyond <= block_size_ ? 1 : blocks_for(beyond);
  }
  plan.fits = plan.new_blocks <= pool_.num_free();
  return plan;
}

void PagedPolicyBase::apply_grow(SeqSlot s, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("apply_grow with a plan that does not fit");
  SeqTable& sq = seqs_.at(static_cast<size_t>(s));
  pool_.allocate_into(plan.new_blocks, sq.block_table);
  slots_reserved_ += plan.new_blocks * block_size_;
  SeqRoom& r = room(s);
  r.capacity += plan.new_blocks * block_size_;
  r.tokens += new_tokens;
  tokens_held_ += new_tokens;
}

bool PagedPolicyBase::grow_in_place(SeqSlot s, int64_t new_tokens) {
  SeqRoom& r = room(s);
  if (r.tokens + new_tokens > r.capacity) return false;
  r.tokens += new_tokens;
  tokens_held_ += new_tokens;
  return true;
}

int64_t PagedPolicyBase::in_place_room(SeqSlot s) const {
  const SeqRoom& r = room(s);
  return r.capacity - r.tokens;
}

SettledGrowth PagedPolicyBase::settle_and_grow(SeqSlot s, int64_t settled, int64_t new_tokens) {
  return settle_then_grow(s, settled, new_tokens, [](const std::vector<BlockId>&) {});
}

void PagedPolicyBase::throw_settle_beyond_room() {
  throw std::logic_error("settle_in_place beyond the sequence's in-place room");
}

int64_t PagedPolicyBase::free_leading_blocks(SeqSlot s, int64_t end) {
  SeqTable& sq = seqs_.at(static_cast<size_t>(s));
  const int64_t last = std::min<int64_t>(end, static_cast<int64_t>(sq.block_table.size()));
  int64_t released = 0;
  for (; sq.freed_blocks < last; ++sq.freed_blocks, ++released) {
    BlockId& b = sq.block_table[static_cast<size_t>(sq.freed_blocks)];
    pool_.release(b);
    b = kNoBlock;
  }
  slots_reserved_ -= released * block_size_;
  tokens_held_ -= released * block_size_;
  return released;
}

void PagedPolicyBase::rollback(SeqSlot s, int64_t tokens) {
  SeqTable& sq = seqs_.at(static_cast<size_t>(s));
  SeqRoom& r = sq.room;
  if (!sq.live || tokens < 0 || tokens > r.tokens - int64_t{sq.freed_blocks} * block_size_)
    throw std::logic_error(fmt::format("rollback of {} tokens of sequence slot {}", tokens, s));
  r.tokens -= tokens;
  tokens_held_ -= tokens;
  // Blocks holding only rejected drafts: fresh from this step's growth,
  // referenced by this table alone, never registered.
  const int64_t keep = std::max<int64_t>(blocks_for(r.tokens), sq.freed_blocks);
  while (static_cast<int64_t>(sq.block_table.size()) > keep) {
    pool_.release(sq.block_table.back());
    sq.block_table.pop_back();
    slots_reserved_ -= block_size_;
    r.capacity -= block_size_;
  }
}

void PagedPolicyBase::release(SeqSlot s) {
  release_blocks(s);
  close_slot(s);
}

void PagedPolicyBase::release_blocks(SeqSlot s) {
  SeqTable& sq = seqs_.at(static_cast<size_t>(s));
  if (!sq.live)
    throw std::logic_error(fmt::format("release of sequence slot {} that is not held", s));
  // Tail first: the blocks least likely to be shared go to the free queue
  // first and so are reused before the common prefix (vLLM v1 frees in
  // reverse order for the same reason).
  pool_.release_backwards(sq.block_table);
  slots_reserved_ -= live_blocks(s) * block_size_;
  tokens_held_ -= room(s).tokens - sq.freed_blocks * block_size_;
}

void PagedPolicyBase::close_slot(SeqSlot s) {
  SeqTable& sq = seqs_[static_cast<size_t>(s)];
  sq.block_table.clear();
  room(s) = {};
  sq.freed_blocks = 0;
  sq.live = false;
  --live_seqs_;
  free_seq_slots_.push_back(s);
}

int64_t PagedPolicyBase::live_blocks(SeqSlot s) const {
  const SeqTable& sq = seqs_.at(static_cast<size_t>(s));
  return static_cast<int64_t>(sq.block_table.size()) - sq.freed_blocks;
}

SwapPlan PagedPolicyBase::plan_swap_out(SeqSlot s) const {
  SwapPlan plan;
  plan.blocks = live_blocks(s);
  // Every held block is copied out, shared ones too: another sequence's
  // release may let them be evicted while this one waits on the host. Blocks
  // that left a window are not held and do not cross the link.
  plan.copy_blocks = plan.blocks;
  plan.bytes = plan.copy_blocks * block_bytes_;
  plan.fits = host_blocks_used_ + plan.blocks <= host_blocks_;
  return plan;
}

HostSlot PagedPolicyBase::apply_swap_out(SeqSlot s, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_out with a plan that does not fit");
  const SeqBlocks sq = seq(s);
  const HostSlot h = take_recycled_index(host_, free_host_slots_);
  host_[static_cast<size_t>(h)] = {plan.blocks, sq.freed_blocks, sq.tokens, true};
  host_blocks_used_ += plan.blocks;
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  release(s);
  return h;
}

SwapPlan PagedPolicyBase::plan_swap_in(HostSlot hs) const {
  const HostSeq& h = host(hs);
  SwapPlan plan;
  plan.blocks = h.blocks;
  plan.copy_blocks = h.blocks;
  plan.bytes = plan.copy_blocks * block_bytes_;
  plan.fits = plan.blocks <= pool_.num_free();
  return plan;
}

SeqSlot PagedPolicyBase::apply_swap_in(HostSlot hs, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_in with a plan that does not fit");
  return restore_from_host(hs, plan, {});
}

SeqSlot PagedPolicyBase::restore_from_host(HostSlot hs, const SwapPlan& plan,
                                           const std::vector<BlockId>& on_device) {
  HostSeq& h = host_.at(static_cast<size_t>(hs));
  const int64_t copied = h.blocks - static_cast<int64_t>(on_device.size());
  const SeqSlot s = open_seq(on_device, copied, h.tokens, h.freed_blocks);
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  host_blocks_used_ -= h.blocks;
  h.live = false;
  free_host_slots_.push_back(hs);
  return s;
}

const std::vector<BlockId>& PagedPolicyBase::block_table(SeqSlot s) const {
  return seq(s).block_table;
}

CacheAccounting PagedPolicyBase::accounting() const {
  CacheAccounting a;
  a.num_blocks = pool_.num_blocks();
  a.block_size = block_size_;
  a.block_bytes = block_bytes_;
  a.blocks_used = pool_.num_used();
  a.slots_reserved = slots_reserved_;
  a.tokens_held = tokens_held_;
  a.evictions = pool_.evictions();
  a.bytes_moved = bytes_moved_;
  a.swapped_bytes = swapped_bytes_;
  a.host_blocks_used = host_blocks_used_;
  return a;
}

void PagedPolicyBase::check_drained() const {
  pool_.check_invariants();
  if (live_seqs_ != 0)
    throw std::logic_error(fmt::format("{} sequences still hold blocks", live_seqs_));
  if (host_blocks_used_ != 0)
    throw std::logic_error(
        fmt::format("{} blocks still swapped out on the host", host_blocks_used_));
  if (pool_.num_free() != pool_.num_blocks())
    throw std::logic_error(fmt::format("{} of {} blocks are not back in the pool",
                                       pool_.num_blocks() - pool_.num_free(), pool_.num_blocks()));
  if (slots_reserved_ != 0 || tokens_held_ != 0)
    throw std::logic_error("slot accounting did not return to zero");
}

}  // namespace kvsim
