// llama_cells under the serving engine: what is not the slots' choice
// (sim/cache/llama_cells_pool.cpp): seed 004's defragmentation, the
// attention view, the context rule of a request, the accounting and the
// counters.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/cache/llama_cells_pool.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

void LlamaCellsPool::maybe_defragment(int64_t stream) {
  // llama_decode: defragment once 1 - used / n passes the threshold.
  LlamaKvCells& cells = streams_[static_cast<size_t>(stream)];
  if (!seed_2024() || p_.defrag_thold < 0 || cells.used() == 0) return;
  if (cells.fragmentation(cells.padded_n(pad())) <= p_.defrag_thold) return;
  const LlamaDefragPlan plan = cells.plan_defrag();
  if (plan.moves.empty()) return;
  cells.apply_defrag(plan);
  // Every table entry of this stream at a moved cell follows it (a shared
  // cell is in several tables).
  const int64_t base = stream * stream_size_;
  std::vector<int64_t> moved_to(static_cast<size_t>(stream_size_), -1);
  for (const LlamaCellMove& m : plan.moves) moved_to[m.src] = m.dst;
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (stream_of(static_cast<SeqSlot>(s)) != stream) continue;
    for (BlockId& g : slots_[s].cells) {
      const int64_t to = moved_to[static_cast<size_t>(g - base)];
      if (to >= 0) g = static_cast<BlockId>(base + to);
    }
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
  return {};  // llama.cpp keeps no host copy of a running sequence: recompute
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
  return slots_.at(static_cast<size_t>(seq)).cells;
}

int64_t LlamaCellsPool::used_cells() const {
  int64_t n = 0;
  for (const LlamaKvCells& c : streams_) n += c.used();
  return n;
}

int64_t LlamaCellsPool::running_cells() const {
  int64_t n = 0;
  if (!any_shared_) {
    for (const Slot& sl : slots_)
      if (sl.processing) n += static_cast<int64_t>(sl.cells.size());
    return n;
  }
  const uint64_t running = running_seqs();
  for (const LlamaKvCells& cells : streams_)
    for (uint32_t c = 0; c < cells.size(); ++c)
      if ((cells.cell(c).seqs & running) != 0) ++n;
  return n;
}

// An idle slot's cells are kept for the next prompt but belong to no
// request, as a prefix cache's free blocks: in use are the running slots'.
int64_t LlamaCellsPool::free_blocks() const {
  return total_cells_ - running_cells();
}

CacheAccounting LlamaCellsPool::accounting() const {
  CacheAccounting a;
  a.num_blocks = total_cells_;
  a.block_size = 1;
  a.block_bytes = p_.sizing.cell_bytes();
  a.blocks_used = a.slots_reserved = a.tokens_held = running_cells();
  a.bytes_moved = bytes_moved_ + server_.cache_saved_bytes + server_.cache_restored_bytes;
  a.swapped_bytes = server_.cache_saved_bytes + server_.cache_restored_bytes;
  a.prefix_query_tokens = queried_;
  a.prefix_hit_tokens = hit_tokens_;
  a.recompute_query_tokens = recompute_queried_;
  a.recompute_hit_tokens = recompute_hits_;
  a.host_blocks_used = prompt_cache_ ? prompt_cache_->tokens() : 0;
  return a;
}

void LlamaCellsPool::check_drained() const {
  // Idle slots keep their cells (llama-server's prompt reuse); every used
  // cell is one of theirs, at the position its table gives it.
  int64_t held = 0;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& sl = slots_[s];
    if (sl.processing)
      throw std::logic_error(fmt::format("llama_cells: slot {} still runs after the run", s));
    if (sl.cells.size() != sl.tokens.size())
      throw std::logic_error(fmt::format("llama_cells: slot {} holds {} cells for {} tokens", s,
                                         sl.cells.size(), sl.tokens.size()));
    for (size_t i = 0; i < sl.cells.size(); ++i) {
      const auto g = static_cast<size_t>(sl.cells[i]);
      const LlamaKvCell& c = streams_[g / static_cast<size_t>(stream_size_)].cell(
          static_cast<uint32_t>(g % static_cast<size_t>(stream_size_)));
      if (!c.has(static_cast<LlamaSeqId>(s)) || c.pos != static_cast<int64_t>(i))
        throw std::logic_error(fmt::format("llama_cells: cell {} of slot {} is not its", g, s));
    }
    held += static_cast<int64_t>(sl.cells.size());
  }
  // A shared cell is in several tables: count each once.
  if (any_shared_) {
    std::vector<BlockId> all;
    for (const Slot& sl : slots_) all.insert(all.end(), sl.cells.begin(), sl.cells.end());
    std::sort(all.begin(), all.end());
    held = std::unique(all.begin(), all.end()) - all.begin();
  }
  if (held != used_cells())
    throw std::logic_error(
        fmt::format("llama_cells: {} cells used, {} held by the slots", used_cells(), held));
}

int64_t LlamaCellsPool::attention_context(int64_t) const {
  // Every token of a ubatch attends over n cells of its stream, n the
  // largest stream's cell_max padded (get_n_kv over the ubatch's streams),
  // whatever its own context: in bytes of the cells' ggml types, in tokens
  // of the scenario's column (KvCachePolicy's unit).
  int64_t n = 0;
  for (const LlamaKvCells& c : streams_) n = std::max<int64_t>(n, c.padded_n(pad()));
  max_n_ = std::max(max_n_, n);
  const Bytes column = p_.column_bytes > 0 ? p_.column_bytes : p_.sizing.cell_bytes();
  return (n * p_.sizing.cell_bytes() + column - 1) / column;
}

int64_t LlamaCellsPool::context_limited_output(int64_t prompt, int64_t output) {
  // update_slots: "the request exceeds the available context size" for a
  // prompt of n_ctx tokens or more, whatever the context shift.
  const int64_t n_ctx = slot_context();
  if (prompt >= n_ctx) {
    ++counters_.requests_refused;
    return 0;
  }
  if (prompt + output <= n_ctx) return output;
  // Context shift on would shift the slot here; the pool does not, so it
  // refuses what would need one.
  if (p_.context_shift) {
    ++counters_.requests_refused;
    return 0;
  }
  // process_token: stops once prompt.n_tokens() + 1 >= n_ctx, after
  // n_ctx - prompt tokens (truncated, STOP_TYPE_LIMIT).
  ++counters_.replies_truncated;
  return n_ctx - prompt;
}

bool LlamaCellsPool::take_pending_work(StepWork& pass) {
  if (pending_copy_ == 0 && pending_in_ == 0 && pending_out_ == 0) return false;
  // Defragmentation copies on the device; the prompt cache's saves and
  // restores cross the host link (llama_state_seq_get/set_data), or copy
  // within host memory where the cells are there already (a CPU).
  pass.kv_copy_bytes += pending_copy_;
  if (p_.cache_over_host_link) {
    pass.swap_in_bytes += pending_in_;
    pass.swap_out_bytes += pending_out_;
  } else {
    pass.kv_copy_bytes += pending_in_ + pending_out_;
  }
  pending_copy_ = pending_in_ = pending_out_ = 0;
  return true;
}

void LlamaCellsPool::report(RunMetrics& m) const {
  LlamaCellsMetrics& o = m.part<LlamaCellsMetrics>();
  const LlamaKvSizing& z = p_.sizing;
  o.type_k = std::string(kernels::ggml_type_traits(z.type_k).name);
  o.type_v = std::string(kernels::ggml_type_traits(z.type_v).name);
  o.v_trans = p_.v_trans;
  o.behaviour = std::string(llama_behaviour_name(p_.behaviour));
  o.context_shift = p_.context_shift;
  o.set_sizing(z);
  o.defrags = counters_.defrags;
  o.defrag_moves = counters_.defrag_moves;
  o.defrag_bytes = counters_.defrag_bytes;
  o.slots_contiguous = counters_.slots_contiguous;
  o.slots_scattered = counters_.slots_scattered;
  o.max_n = max_n_;
  o.requests_refused = counters_.requests_refused;
  o.replies_truncated = counters_.replies_truncated;
  o.served = true;
  o.n_parallel = p_.n_parallel;
  o.kv_unified = p_.kv_unified;
  o.slot_context = slot_context();
  o.server = server_;
  o.cache_ram = p_.cache_ram;
  o.prompt_cache_entries = prompt_cache_ ? static_cast<int64_t>(prompt_cache_->entries()) : 0;
}

}  // namespace kvsim
