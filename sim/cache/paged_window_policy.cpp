#include "sim/cache/paged_window_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

PagedWindowPolicy::PagedWindowPolicy(const PagedWindowParams& params)
    : params_(params), pool_(params.num_blocks) {
  if (params.block_size <= 0) throw std::invalid_argument("block_size must be positive");
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
  plan.tokens = new_tokens;
  plan.new_blocks = blocks_for(new_tokens);
  plan.fits = plan.new_blocks <= pool_.num_free();
  plan.hit = std::move(hit);
  return plan;
}

SeqSlot PagedWindowPolicy::new_slot() {
  if (!free_seq_slots_.empty()) {
    const SeqSlot s = free_seq_slots_.back();
    free_seq_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  return static_cast<SeqSlot>(seqs_.size() - 1);
}

SeqSlot PagedWindowPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  const SeqSlot s = new_slot();
  SeqCache& seq = seqs_[static_cast<size_t>(s)];
  seq.block_table.clear();
  for (int64_t i = 0; i < plan.new_blocks; ++i) seq.block_table.push_back(pool_.allocate());
  seq.tokens = plan.tokens;
  seq.freed_blocks = 0;
  seq.live = true;
  ++live_seqs_;
  slots_reserved_ += plan.new_blocks * params_.block_size;
  tokens_held_ += seq.tokens;
  return s;
}

GrowPlan PagedWindowPolicy::plan_grow(SeqSlot s, int64_t new_tokens) const {
  const SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  GrowPlan plan;
  plan.new_blocks = std::max<int64_t>(
      0, blocks_for(seq.tokens + new_tokens) - static_cast<int64_t>(seq.block_table.size()));
  plan.fits = plan.new_blocks <= pool_.num_free();
  return plan;
}

void PagedWindowPolicy::apply_grow(SeqSlot s, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("apply_grow with a plan that does not fit");
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  for (int64_t i = 0; i < plan.new_blocks; ++i) seq.block_table.push_back(pool_.allocate());
  slots_reserved_ += plan.new_blocks * params_.block_size;
  seq.tokens += new_tokens;
  tokens_held_ += new_tokens;
}

void PagedWindowPolicy::commit(SeqSlot s, const TokenView&, int64_t computed_tokens) {
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  // The next token (position computed_tokens) attends to positions
  // [computed_tokens + 1 - window, computed_tokens]: block b is out of every
  // later window once (b + 1) * block_size <= computed_tokens + 1 - window.
  const int64_t first_needed = computed_tokens + 1 - params_.window;
  const int64_t out = std::min<int64_t>(std::max<int64_t>(0, first_needed) / params_.block_size,
                                        static_cast<int64_t>(seq.block_table.size()));
  while (seq.freed_blocks < out) {
    BlockId& b = seq.block_table[static_cast<size_t>(seq.freed_blocks)];
    pool_.release(b);
    b = kNoBlock;
    ++seq.freed_blocks;
    slots_reserved_ -= params_.block_size;
    tokens_held_ -= params_.block_size;
    window_evicted_tokens_ += params_.block_size;
  }
}

void PagedWindowPolicy::release(SeqSlot s) {
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  if (!seq.live)
    throw std::logic_error(fmt::format("release of sequence slot {} that is not held", s));
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it)
    if (*it != kNoBlock) pool_.release(*it);
  const int64_t live = static_cast<int64_t>(seq.block_table.size()) - seq.freed_blocks;
  slots_reserved_ -= live * params_.block_size;
  tokens_held_ -= seq.tokens - seq.freed_blocks * params_.block_size;
  seq.block_table.clear();
  seq.tokens = 0;
  seq.freed_blocks = 0;
  seq.live = false;
  --live_seqs_;
  free_seq_slots_.push_back(s);
}

int64_t PagedWindowPolicy::live_blocks(SeqSlot s) const {
  const SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  return static_cast<int64_t>(seq.block_table.size()) - seq.freed_blocks;
}

SwapPlan PagedWindowPolicy::plan_swap_out(SeqSlot s) const {
  SwapPlan plan;
  plan.blocks = live_blocks(s);
  plan.copy_blocks = plan.blocks;  // only the blocks still in the window cross the link
  plan.bytes = plan.copy_blocks * params_.block_bytes;
  plan.fits = host_blocks_used_ + plan.blocks <= params_.host_blocks;
  return plan;
}

HostSlot PagedWindowPolicy::apply_swap_out(SeqSlot s, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_out with a plan that does not fit");
  const SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  HostSlot h;
  if (!free_host_slots_.empty()) {
    h = free_host_slots_.back();
    free_host_slots_.pop_back();
  } else {
    host_.emplace_back();
    h = static_cast<HostSlot>(host_.size() - 1);
  }
  HostSeq& host = host_[static_cast<size_t>(h)];
  host = {plan.blocks, seq.freed_blocks, seq.tokens, true};
  host_blocks_used_ += plan.blocks;
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  release(s);
  return h;
}

SwapPlan PagedWindowPolicy::plan_swap_in(HostSlot hs) const {
  const HostSeq& h = host_.at(static_cast<size_t>(hs));
  SwapPlan plan;
  plan.blocks = h.blocks;
  plan.copy_blocks = h.blocks;
  plan.bytes = plan.copy_blocks * params_.block_bytes;
  plan.fits = plan.blocks <= pool_.num_free();
  return plan;
}

SeqSlot PagedWindowPolicy::apply_swap_in(HostSlot hs, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_in with a plan that does not fit");
  HostSeq& h = host_.at(static_cast<size_t>(hs));
  const SeqSlot s = new_slot();
  SeqCache& seq = seqs_[static_cast<size_t>(s)];
  seq.block_table.assign(static_cast<size_t>(h.freed_blocks), kNoBlock);
  for (int64_t i = 0; i < h.blocks; ++i) seq.block_table.push_back(pool_.allocate());
  seq.tokens = h.tokens;
  seq.freed_blocks = h.freed_blocks;
  seq.live = true;
  ++live_seqs_;
  slots_reserved_ += h.blocks * params_.block_size;
  tokens_held_ += h.tokens - h.freed_blocks * params_.block_size;
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  host_blocks_used_ -= h.blocks;
  h.live = false;
  free_host_slots_.push_back(hs);
  return s;
}

const std::vector<BlockId>& PagedWindowPolicy::block_table(SeqSlot s) const {
  return seqs_.at(static_cast<size_t>(s)).block_table;
}

int64_t PagedWindowPolicy::attention_context(int64_t context_tokens) const {
  // A query attends to itself and the window - 1 tokens before it.
  return std::min(context_tokens, params_.window - 1);
}

CacheAccounting PagedWindowPolicy::accounting() const {
  CacheAccounting a;
  a.num_blocks = pool_.num_blocks();
  a.block_size = params_.block_size;
  a.block_bytes = params_.block_bytes;
  a.blocks_used = pool_.num_used();
  a.slots_reserved = slots_reserved_;
  a.tokens_held = tokens_held_;
  a.evictions = pool_.evictions();
  a.bytes_moved = bytes_moved_;
  a.swapped_bytes = swapped_bytes_;
  a.host_blocks_used = host_blocks_used_;
  a.window_evicted_tokens = window_evicted_tokens_;
  return a;
}

void PagedWindowPolicy::check_drained() const {
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
