#include "sim/cache/paged_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

void TokenView::copy(int64_t begin, int64_t count, int32_t* dst) const {
  for (int64_t i = 0; i < count; ++i) dst[i] = at(begin + i);
}

PagedPolicy::PagedPolicy(const PagedParams& params) : params_(params), pool_(params.num_blocks) {
  if (params.block_size <= 0) throw std::invalid_argument("block_size must be positive");
  scratch_tokens_.resize(static_cast<size_t>(params.block_size));
}

PrefixHit PagedPolicy::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const {
  PrefixHit hit;
  if (!params_.prefix_caching) return hit;
  hit.tokens_queried = tokens.size();
  // Hash every full block of the known content once (the memo keeps them
  // across calls); the sequence registers them as its blocks get computed.
  const int64_t full_blocks = tokens.size() / params_.block_size;
  for (int64_t b = static_cast<int64_t>(memo.size()); b < full_blocks; ++b) {
    tokens.copy(b * params_.block_size, params_.block_size, scratch_tokens_.data());
    const BlockHash parent = b == 0 ? BlockHash{} : memo[static_cast<size_t>(b - 1)];
    memo.push_back(chained_block_hash(parent, scratch_tokens_.data(),
                                      static_cast<size_t>(params_.block_size)));
  }
  hit.hashes.assign(memo.begin(), memo.begin() + full_blocks);
  // The last token is always recomputed, so at most (n - 1) / block_size
  // blocks can be hits (vLLM v1 get_computed_blocks).
  const int64_t max_hit_blocks = (tokens.size() - 1) / params_.block_size;
  for (int64_t b = 0; b < max_hit_blocks; ++b) {
    const BlockId found = pool_.lookup(hit.hashes[static_cast<size_t>(b)]);
    if (found == kNoBlock) break;
    hit.blocks.push_back(found);
  }
  hit.cached_tokens = static_cast<int64_t>(hit.blocks.size()) * params_.block_size;
  return hit;
}

AdmitPlan PagedPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan;
  plan.tokens = hit.cached_tokens + new_tokens;
  plan.new_blocks = blocks_for(plan.tokens) - static_cast<int64_t>(hit.blocks.size());
  // Hit blocks that sit in the free queue leave it when touched: they count
  // against the free capacity like new blocks.
  int64_t revived = 0;
  for (BlockId b : hit.blocks) revived += pool_.ref_count(b) == 0 ? 1 : 0;
  plan.fits = plan.new_blocks + revived <= pool_.num_free();
  plan.hit = std::move(hit);
  return plan;
}

SeqSlot PagedPolicy::new_slot() {
  if (!free_seq_slots_.empty()) {
    const SeqSlot s = free_seq_slots_.back();
    free_seq_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  return static_cast<SeqSlot>(seqs_.size() - 1);
}

SeqSlot PagedPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  const SeqSlot s = new_slot();
  SeqCache& seq = seqs_[static_cast<size_t>(s)];
  seq.block_table.clear();
  seq.hashes = plan.hit.hashes;
  for (BlockId b : plan.hit.blocks) {
    pool_.touch(b);
    seq.block_table.push_back(b);
  }
  for (int64_t i = 0; i < plan.new_blocks; ++i) seq.block_table.push_back(pool_.allocate());
  seq.tokens = plan.tokens;
  seq.registered_blocks = static_cast<int64_t>(plan.hit.blocks.size());
  seq.live = true;
  ++live_seqs_;
  slots_reserved_ += static_cast<int64_t>(seq.block_table.size()) * params_.block_size;
  tokens_held_ += seq.tokens;
  prefix_query_tokens_ += plan.hit.tokens_queried;
  prefix_hit_tokens_ += plan.hit.cached_tokens;
  return s;
}

GrowPlan PagedPolicy::plan_grow(SeqSlot s, int64_t new_tokens) const {
  const SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  GrowPlan plan;
  plan.new_blocks = std::max<int64_t>(
      0, blocks_for(seq.tokens + new_tokens) - static_cast<int64_t>(seq.block_table.size()));
  plan.fits = plan.new_blocks <= pool_.num_free();
  return plan;
}

void PagedPolicy::apply_grow(SeqSlot s, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("apply_grow with a plan that does not fit");
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  for (int64_t i = 0; i < plan.new_blocks; ++i) seq.block_table.push_back(pool_.allocate());
  slots_reserved_ += plan.new_blocks * params_.block_size;
  seq.tokens += new_tokens;
  tokens_held_ += new_tokens;
}

void PagedPolicy::commit(SeqSlot s, const TokenView& tokens, int64_t computed_tokens) {
  if (!params_.prefix_caching) return;
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  const int64_t full = std::min<int64_t>(computed_tokens / params_.block_size,
                                         static_cast<int64_t>(seq.block_table.size()));
  while (seq.registered_blocks < full) {
    const int64_t b = seq.registered_blocks;
    if (static_cast<int64_t>(seq.hashes.size()) <= b) {
      // A block filled by generated tokens: hash it now, chained on its parent.
      const BlockHash parent = b == 0 ? BlockHash{} : seq.hashes[static_cast<size_t>(b - 1)];
      tokens.copy(b * params_.block_size, params_.block_size, scratch_tokens_.data());
      seq.hashes.push_back(chained_block_hash(parent, scratch_tokens_.data(),
                                              static_cast<size_t>(params_.block_size)));
    }
    pool_.register_hash(seq.block_table[static_cast<size_t>(b)],
                        seq.hashes[static_cast<size_t>(b)]);
    ++seq.registered_blocks;
  }
}

void PagedPolicy::release(SeqSlot s) {
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  if (!seq.live)
    throw std::logic_error(fmt::format("release of sequence slot {} that is not held", s));
  // Tail first: the blocks least likely to be shared go to the free queue
  // first and so are reused before the common prefix (vLLM v1 frees in
  // reverse order for the same reason).
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it) pool_.release(*it);
  slots_reserved_ -= static_cast<int64_t>(seq.block_table.size()) * params_.block_size;
  tokens_held_ -= seq.tokens;
  seq.block_table.clear();
  seq.hashes.clear();
  seq.tokens = 0;
  seq.registered_blocks = 0;
  seq.live = false;
  --live_seqs_;
  free_seq_slots_.push_back(s);
}

SwapPlan PagedPolicy::plan_swap_out(SeqSlot s) const {
  const SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  SwapPlan plan;
  plan.blocks = static_cast<int64_t>(seq.block_table.size());
  // Every block is copied out: blocks shared with other sequences may be
  // evicted while this one waits on the host.
  plan.copy_blocks = plan.blocks;
  plan.bytes = plan.copy_blocks * params_.block_bytes;
  plan.fits = host_blocks_used_ + plan.blocks <= params_.host_blocks;
  return plan;
}

HostSlot PagedPolicy::apply_swap_out(SeqSlot s, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_out with a plan that does not fit");
  SeqCache& seq = seqs_.at(static_cast<size_t>(s));
  HostSlot h;
  if (!free_host_slots_.empty()) {
    h = free_host_slots_.back();
    free_host_slots_.pop_back();
  } else {
    host_.emplace_back();
    h = static_cast<HostSlot>(host_.size() - 1);
  }
  HostSeq& host = host_[static_cast<size_t>(h)];
  // Only hashes of blocks whose content is complete AND registered are kept:
  // those are the ones a swap-in may find still on device.
  host.hashes.assign(
      seq.hashes.begin(),
      seq.hashes.begin() +
          std::min<int64_t>(seq.registered_blocks, static_cast<int64_t>(seq.hashes.size())));
  host.blocks = plan.blocks;
  host.tokens = seq.tokens;
  host.live = true;
  host_blocks_used_ += plan.blocks;
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  release(s);
  return h;
}

int64_t PagedPolicy::blocks_to_copy(const HostSeq& h) const {
  int64_t on_device = 0;
  for (const BlockHash& hash : h.hashes) {
    if (pool_.lookup(hash) == kNoBlock) break;
    ++on_device;
  }
  return h.blocks - on_device;
}

SwapPlan PagedPolicy::plan_swap_in(HostSlot hs) const {
  const HostSeq& h = host_.at(static_cast<size_t>(hs));
  SwapPlan plan;
  plan.blocks = h.blocks;
  plan.copy_blocks = blocks_to_copy(h);
  plan.bytes = plan.copy_blocks * params_.block_bytes;
  int64_t revived = 0;
  for (int64_t i = 0; i < h.blocks - plan.copy_blocks; ++i) {
    revived += pool_.ref_count(pool_.lookup(h.hashes[static_cast<size_t>(i)])) == 0 ? 1 : 0;
  }
  plan.fits = plan.copy_blocks + revived <= pool_.num_free();
  return plan;
}

SeqSlot PagedPolicy::apply_swap_in(HostSlot hs, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_in with a plan that does not fit");
  HostSeq& h = host_.at(static_cast<size_t>(hs));
  const SeqSlot s = new_slot();
  SeqCache& seq = seqs_[static_cast<size_t>(s)];
  seq.block_table.clear();
  const int64_t kept = h.blocks - plan.copy_blocks;
  for (int64_t i = 0; i < kept; ++i) {
    const BlockId b = pool_.lookup(h.hashes[static_cast<size_t>(i)]);
    pool_.touch(b);
    seq.block_table.push_back(b);
  }
  for (int64_t i = kept; i < h.blocks; ++i) seq.block_table.push_back(pool_.allocate());
  seq.hashes = h.hashes;
  seq.tokens = h.tokens;
  seq.registered_blocks = kept;
  seq.live = true;
  ++live_seqs_;
  slots_reserved_ += static_cast<int64_t>(seq.block_table.size()) * params_.block_size;
  tokens_held_ += seq.tokens;
  bytes_moved_ += plan.bytes;
  swapped_bytes_ += plan.bytes;
  host_blocks_used_ -= h.blocks;
  h.hashes.clear();
  h.live = false;
  free_host_slots_.push_back(hs);
  return s;
}

const std::vector<BlockId>& PagedPolicy::block_table(SeqSlot s) const {
  return seqs_.at(static_cast<size_t>(s)).block_table;
}

CacheAccounting PagedPolicy::accounting() const {
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
  a.prefix_query_tokens = prefix_query_tokens_;
  a.prefix_hit_tokens = prefix_hit_tokens_;
  a.host_blocks_used = host_blocks_used_;
  return a;
}

void PagedPolicy::check_drained() const {
  pool_.check_invariants();
  if (live_seqs_ != 0)
    throw std::logic_error(fmt::format("{} sequences still hold blocks", live_seqs_));
  if (host_blocks_used_ != 0) {
    throw std::logic_error(
        fmt::format("{} blocks still swapped out on the host", host_blocks_used_));
  }
  if (pool_.num_free() != pool_.num_blocks()) {
    throw std::logic_error(fmt::format("{} of {} blocks are not back in the pool",
                                       pool_.num_blocks() - pool_.num_free(), pool_.num_blocks()));
  }
  if (slots_reserved_ != 0 || tokens_held_ != 0) {
    throw std::logic_error("slot accounting did not return to zero");
  }
}

}  // namespace kvsim
