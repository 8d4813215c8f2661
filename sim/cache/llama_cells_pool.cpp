#include "sim/cache/llama_cells_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

LlamaCellsPool::LlamaCellsPool(const LlamaCellsPoolParams& params)
    : p_(params),
      cells_(static_cast<uint32_t>(params.sizing.kv_size)),
      seqs_(static_cast<size_t>(params.max_seqs)),
      owner_(static_cast<size_t>(params.sizing.kv_size), kNoSeq),
      owner_index_(static_cast<size_t>(params.sizing.kv_size), -1) {
  if (p_.max_seqs < 1 || p_.max_seqs > kLlamaMaxSeqs)
    throw std::invalid_argument(fmt::format(
        "llama_cells: {} sequences, llama.cpp's cells take 1..{}", p_.max_seqs, kLlamaMaxSeqs));
  // Lowest id first, as llama-server numbers its slots.
  for (SeqSlot s = static_cast<SeqSlot>(p_.max_seqs) - 1; s >= 0; --s) free_ids_.push_back(s);
}

PrefixHit LlamaCellsPool::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>&) const {
  // No reuse across sequences: the lookup counts for the hit rate's
  // denominator only, as paged does with prefix caching off.
  PrefixHit hit;
  hit.tokens_queried = tokens.prompt_len;
  return hit;
}

AdmitPlan LlamaCellsPool::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan;
  plan.hit = std::move(hit);
  plan.tokens = new_tokens;
  plan.new_blocks = new_tokens;
  plan.fits = !free_ids_.empty() && new_tokens <= free_blocks();
  return plan;
}

void LlamaCellsPool::place(SeqSlot seq, const LlamaSlotPlan& slot) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  const int64_t first = static_cast<int64_t>(s.cells.size());
  std::vector<int64_t> pos(slot.cells.size());
  std::iota(pos.begin(), pos.end(), first);
  cells_.apply_slot(slot, pos, uint64_t{1} << seq);
  for (uint32_t c : slot.cells) {
    owner_[c] = seq;
    owner_index_[c] = static_cast<int32_t>(s.cells.size());
    s.cells.push_back(static_cast<BlockId>(c));
  }
  ++(slot.contiguous ? counters_.slots_contiguous : counters_.slots_scattered);
}

SeqSlot LlamaCellsPool::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits || free_ids_.empty())
    throw std::logic_error("llama_cells: apply_admit with a plan that does not fit");
  const SeqSlot seq = free_ids_.back();
  free_ids_.pop_back();
  queried_ += plan.hit.tokens_queried;
  seqs_[static_cast<size_t>(seq)].live = true;
  if (plan.tokens > 0) {
    const LlamaSlotPlan slot = cells_.find_slot(plan.tokens, seed_2024());
    if (!slot.fits) throw std::logic_error("llama_cells: admitted past the free cells");
    place(seq, slot);
  }
  return seq;
}

GrowPlan LlamaCellsPool::plan_grow(SeqSlot seq, int64_t new_tokens) const {
  (void)seq;
  return {new_tokens <= free_blocks(), new_tokens};
}

void LlamaCellsPool::apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) {
  if (!plan.fits) throw std::logic_error("llama_cells: apply_grow with a plan that does not fit");
  if (new_tokens <= 0) return;
  const LlamaSlotPlan slot = cells_.find_slot(new_tokens, seed_2024());
  if (!slot.fits) throw std::logic_error("llama_cells: grew past the free cells");
  place(seq, slot);
}

void LlamaCellsPool::commit(SeqSlot, const TokenView&, int64_t) {}

void LlamaCellsPool::release(SeqSlot seq) {
  Seq& s = seqs_.at(static_cast<size_t>(seq));
  if (!s.live) throw std::logic_error("llama_cells: release of a sequence it does not hold");
  cells_.seq_rm(seq, -1, -1);
  for (BlockId c : s.cells) {
    owner_[static_cast<size_t>(c)] = kNoSeq;
    owner_index_[static_cast<size_t>(c)] = -1;
  }
  s = Seq{};
  free_ids_.push_back(seq);
  maybe_defragment();
}

void LlamaCellsPool::maybe_defragment() {
  // llama_decode: defragment once 1 - used / n passes the threshold.
  if (!seed_2024() || p_.defrag_thold < 0 || cells_.used() == 0) return;
  if (cells_.fragmentation(cells_.padded_n(pad())) <= p_.defrag_thold) return;
  const LlamaDefragPlan plan = cells_.plan_defrag();
  if (plan.moves.empty()) return;
  cells_.apply_defrag(plan);
  for (const LlamaCellMove& m : plan.moves) {
    const SeqSlot seq = owner_[m.src];
    const int32_t index = owner_index_[m.src];
    seqs_[static_cast<size_t>(seq)].cells[static_cast<size_t>(index)] = static_cast<BlockId>(m.dst);
    owner_[m.dst] = seq;
    owner_index_[m.dst] = index;
    owner_[m.src] = kNoSeq;
    owner_index_[m.src] = -1;
  }
  // Each move copies the cell's K and V rows of every layer.
  const Bytes bytes = static_cast<Bytes>(plan.moves.size()) * p_.sizing.cell_bytes();
  ++counters_.defrags;
  counters_.defrag_moves += static_cast<int64_t>(plan.moves.size());
  counters_.defrag_bytes += bytes;
  bytes_moved_ += bytes;
  pending_copy_ += bytes;
}

SwapPlan LlamaCellsPool::plan_swap_out(SeqSlot) const {
  return {};  // llama.cpp keeps no host copy of a sequence: recompute
}
HostSlot LlamaCellsPool::apply_swap_out(SeqSlot, const SwapPlan&) {
  throw std::logic_error("llama_cells: no swap (preemption recomputes)");
}
SwapPlan LlamaCellsPool::plan_swap_in(HostSlot) const {
  return {};
}
SeqSlot LlamaCellsPool::apply_swap_in(HostSlot, const SwapPlan&) {
  throw std::logic_error("llama_cells: no swap (preemption recomputes)");
}

const std::vector<BlockId>& LlamaCellsPool::block_table(SeqSlot seq) const {
  return seqs_.at(static_cast<size_t>(seq)).cells;
}

int64_t LlamaCellsPool::free_blocks() const {
  return static_cast<int64_t>(cells_.size()) - static_cast<int64_t>(cells_.used());
}

CacheAccounting LlamaCellsPool::accounting() const {
  CacheAccounting a;
  a.num_blocks = cells_.size();
  a.block_size = 1;
  a.block_bytes = p_.sizing.cell_bytes();
  a.blocks_used = cells_.used();
  a.slots_reserved = cells_.used();
  a.tokens_held = cells_.used();
  a.bytes_moved = bytes_moved_;
  a.prefix_query_tokens = queried_;
  return a;
}

void LlamaCellsPool::check_drained() const {
  if (cells_.used() != 0 || free_ids_.size() != seqs_.size())
    throw std::logic_error(
        fmt::format("llama_cells: the run ended with {} cells used and {} sequences held",
                    cells_.used(), seqs_.size() - free_ids_.size()));
  for (size_t c = 0; c < owner_.size(); ++c)
    if (owner_[c] != kNoSeq || !cells_.cell(static_cast<uint32_t>(c)).empty())
      throw std::logic_error(fmt::format("llama_cells: cell {} still held after the run", c));
}

int64_t LlamaCellsPool::attention_context(int64_t) const {
  // The unified view: n = cell_max padded, whatever the sequence's context,
  // at the bytes of the cells' ggml types, in tokens of the scenario's
  // column (KvCachePolicy's unit).
  const int64_t n = cells_.padded_n(pad());
  max_n_ = std::max(max_n_, n);
  const Bytes column = p_.column_bytes > 0 ? p_.column_bytes : p_.sizing.cell_bytes();
  return (n * p_.sizing.cell_bytes() + column - 1) / column;
}

void LlamaCellsPool::report(RunMetrics& m) const {
  LlamaCellsMetrics& o = m.part<LlamaCellsMetrics>();
  const LlamaKvSizing& z = p_.sizing;
  o.type_k = std::string(kernels::ggml_type_traits(z.type_k).name);
  o.type_v = std::string(kernels::ggml_type_traits(z.type_v).name);
  o.v_trans = p_.v_trans;
  o.behaviour = std::string(llama_behaviour_name(p_.behaviour));
  o.context_shift = false;  // the serving engine never shifts a context
  o.set_sizing(z);
  o.defrags = counters_.defrags;
  o.defrag_moves = counters_.defrag_moves;
  o.defrag_bytes = counters_.defrag_bytes;
  o.slots_contiguous = counters_.slots_contiguous;
  o.slots_scattered = counters_.slots_scattered;
  o.max_n = max_n_;
}

bool LlamaCellsPool::take_pending_work(StepWork& pass) {
  if (pending_copy_ == 0) return false;
  pass.kv_copy_bytes += pending_copy_;
  pending_copy_ = 0;
  return true;
}

}  // namespace kvsim
