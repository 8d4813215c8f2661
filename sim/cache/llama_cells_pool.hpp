#pragma once
// llama_cells under the serving engine: llama.cpp's unified KV cache
// (seed 004) shared by many sequences at once, as llama-server runs its
// parallel slots on one cache. Each sequence is a llama.cpp sequence id; a
// cell holds one token of one sequence, so to the serving engine the cache
// is a pool of one-token blocks whose block table is the sequence's cells
// in position order (scattered wherever find_slot put them).
//
//   admit / grow:  find_slot(n) (seed_2024: a contiguous run from head, else
//                  any free cells in ring order; current: the free cells in
//                  ring order, scattered) and apply_slot at the next positions.
//   release:       seq_rm of the sequence; then, as llama_decode does before
//                  the next batch, a defragmentation when 1 - used / n
//                  exceeds defrag_thold (n >= 128 cells; below 0 never;
//                  seed_2024 only, current llama.cpp no longer defragments):
//                  cells move into the holes, K and V of every layer, priced
//                  as a device copy before the next step.
//   attention:     every token of a batch attends over the unified view
//                  [0, n), n = cell_max padded to 32 cells (256 without
//                  v_trans), the other sequences' cells masked: what the
//                  step reads grows with the whole cache, not with the
//                  sequence's own context.
// No prefix reuse (llama-server's prompt cache is per slot) and no swap:
// a preempted sequence is recomputed.
#include <cstdint>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/llama_cells_policy.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/cache/llama_kv_sizing.hpp"

namespace kvsim {

struct LlamaCellsPoolParams {
  LlamaKvSizing sizing;  // kv_size cells, ggml types
  // seed_2024: contiguous runs first, defragmentation; current: scattered
  // cells, never defragmented, n padded to 256 (sim/cache/llama_kv_cells.hpp).
  LlamaBehaviour behaviour = LlamaBehaviour::seed_2024;
  double defrag_thold = 0.1;  // < 0: never defragment
  bool v_trans = true;        // attention span padded to 32 cells (256 without)
  int64_t max_seqs = kLlamaMaxSeqs;
  // One token's K and V over every layer at the scenario's kv_cache.dtype:
  // the unit attention_context() counts in (0: a cell's own bytes).
  Bytes column_bytes = 0;
};

class LlamaCellsPool final : public KvCachePolicy {
 public:
  explicit LlamaCellsPool(const LlamaCellsPoolParams& params);

  std::string_view name() const override { return "llama_cells"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const override;
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override;
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  void release(SeqSlot seq) override;
  SwapPlan plan_swap_out(SeqSlot seq) const override;
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override;
  SwapPlan plan_swap_in(HostSlot host) const override;
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;
  const std::vector<BlockId>& block_table(SeqSlot seq) const override;
  int64_t free_blocks() const override;
  CacheAccounting accounting() const override;
  void check_drained() const override;
  int64_t attention_context(int64_t context_tokens) const override;
  bool caps_attention_context() const override { return true; }
  bool take_pending_work(StepWork& pass) override;
  void report(RunMetrics& metrics) const override;

  const LlamaKvCells& cells() const { return cells_; }
  const LlamaCellsCounters& counters() const { return counters_; }

 private:
  struct Seq {
    bool live = false;
    std::vector<BlockId> cells;  // in position order
  };
  // The cells of `plan` at positions from the sequence's length on.
  void place(SeqSlot seq, const LlamaSlotPlan& plan);
  void maybe_defragment();
  bool seed_2024() const { return p_.behaviour == LlamaBehaviour::seed_2024; }
  uint32_t pad() const { return seed_2024() && p_.v_trans ? 32u : 256u; }

  LlamaCellsPoolParams p_;
  LlamaKvCells cells_;
  std::vector<Seq> seqs_;
  std::vector<SeqSlot> free_ids_;
  // Which sequence and table index each cell belongs to (-1: free).
  std::vector<SeqSlot> owner_;
  std::vector<int32_t> owner_index_;
  LlamaCellsCounters counters_;
  Bytes bytes_moved_ = 0;
  Bytes pending_copy_ = 0;
  int64_t queried_ = 0;
  mutable int64_t max_n_ = 0;  // widest attention view priced
};

}  // namespace kvsim
