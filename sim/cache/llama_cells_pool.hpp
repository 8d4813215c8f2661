#pragma once
// llama_cells under the serving engine: llama-server's parallel slots on
// llama.cpp's cell cache (seed 004; the server as ggml-org/llama.cpp
// tools/server/server-context.cpp fb402660 runs it). Each slot is a
// llama.cpp sequence id; a cell holds one token, so to the serving engine
// the cache is a pool of one-token blocks whose block table is the slot's
// cells in position order (scattered wherever find_slot put them).
//
//   kv_unified:    one stream of kv_size cells shared by every slot, each
//                  slot's context up to kv_size (llama-server's default
//                  since it sets n_parallel = 4 and kv_unified = true,
//                  tools/server/server.cpp aa6192d3); else one stream per
//                  slot of kv_size / n_parallel cells (llama_kv_cache's
//                  n_stream = n_seq_max), a slot's context that many.
//   admit:         the slot get_available_slot picks: the idle one whose
//                  cached tokens share the longest prefix with the prompt
//                  (LCP / prompt > slot_prompt_similarity), else the least
//                  recently used. Handing over a slot by LRU, or one that
//                  keeps under half its tokens, first saves its tokens in
//                  the host prompt cache and restores the best entry there
//                  (sim/cache/llama_prompt_cache.hpp), both over the host
//                  link. A request naming a slot (llama-server's id_slot)
//                  takes that one, waiting while it is processing, and
//                  touches no prompt cache. With cache_prompt the slot's tokens up to the
//                  longest common prefix stay (never the whole prompt: its
//                  last token is computed); the rest is seq_rm'd.
//   grow:          find_slot in the slot's stream (seed_2024: a contiguous
//                  run first; current: scattered); in the unified cache an
//                  idle slot's cells are purged when nothing else is free
//                  (try_clear_idle_slots).
//   release:       the slot goes idle and keeps its cells (its prompt and
//                  reply), for the next request it is picked for (counted
//                  free, as a prefix cache's cached blocks); seed_2024
//                  then defragments past defrag_thold (n >= 128 cells).
//   attention:     every token attends over n cells, n = the largest
//                  stream's cell_max padded (32, or 256 without v_trans or
//                  under current), the other sequences' cells masked.
//   context:       a prompt of n_ctx (the slot's context) tokens or more is
//                  refused; with context shift off a reply stops where the
//                  slot's context is full (process_token: truncated). The
//                  pool shifts no context: with context shift on a request
//                  that would need a shift is refused.
//   children:      a request for n_cmpl > 1 completions of one prompt is a
//                  parent task and n_cmpl - 1 children (handle_completions_impl),
//                  each child in a slot of its own that waits
//                  (SLOT_STATE_WAIT_OTHER) while the parent computes the
//                  prompt, then takes the parent's state (copy_state_to:
//                  seq_rm of the child, seq_cp parent -> child). In the
//                  unified cache seq_cp adds the child's id to the parent's
//                  cells: the prompt is held once, each child's reply in
//                  cells of its own. With streams it copies the parent's
//                  stream buffer into the child's whole (update()'s
//                  ggml_backend_tensor_copy of every layer's k/v stream):
//                  the prompt is held once per slot. This is the only way
//                  llama-server shares cells between slots: independent
//                  requests with a common prefix each compute it in their
//                  own slot (tools/server/server-context.cpp fb402660,
//                  src/llama-kv-cache.cpp 3514e9f6).
// No swap: a preempted sequence is recomputed (llama-server never preempts;
// its slot keeps the cells it had, so the recompute mostly reuses them).
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/cache/llama_cells_policy.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/cache/llama_kv_sizing.hpp"
#include "sim/cache/llama_prompt_cache.hpp"

namespace kvsim {

struct LlamaCellsPoolParams {
  LlamaKvSizing sizing;  // kv_size cells (every stream together), ggml types
  // seed_2024: contiguous runs first, defragmentation; current: scattered
  // cells, never defragmented, n padded to 256 (sim/cache/llama_kv_cells.hpp).
  LlamaBehaviour behaviour = LlamaBehaviour::seed_2024;
  double defrag_thold = 0.1;  // < 0: never defragment
  bool v_trans = true;        // attention span padded to 32 cells (256 without)
  bool context_shift = false;
  int64_t n_parallel = 4;  // slots (llama-server -np)
  bool kv_unified = true;  // one stream for every slot (-kvu)
  bool cache_prompt = true;
  double slot_prompt_similarity = 0.1;  // 0: slots by LRU only
  Bytes cache_ram = 0;                  // host prompt cache bytes; 0: none
  // The host prompt cache's copies cross the host link (an accelerator);
  // false on a CPU, whose cells are in host memory: a copy in place.
  bool cache_over_host_link = true;
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
  int64_t context_limited_output(int64_t prompt, int64_t output) override;
  bool take_pending_work(StepWork& pass) override;
  void report(RunMetrics& metrics) const override;

  // One slot's context (llama_n_ctx_seq): kv_size unified, else a stream.
  int64_t slot_context() const { return stream_size_; }
  int64_t streams() const { return static_cast<int64_t>(streams_.size()); }
  // The cells of stream `s` (a unified cache has one).
  const LlamaKvCells& cells(int64_t s = 0) const { return streams_.at(static_cast<size_t>(s)); }
  int64_t used_cells() const;     // every slot's, idle ones' too (a shared cell once)
  int64_t running_cells() const;  // the slots running a request (a shared cell once)

  // A child task of a parent's n_cmpl completions takes the slot
  // get_available_slot picks for the prompt and waits (nothing computed,
  // its old cells kept until the copy); kNoSeq when no slot is idle.
  SeqSlot admit_child(const TokenView& prompt);
  // copy_state_to once the parent's prompt is computed: the child keeps
  // nothing of its own and holds the parent's cells and tokens (see
  // children above). Both slots must be running.
  void copy_state(SeqSlot parent, SeqSlot child);
  const LlamaCellsCounters& counters() const { return counters_; }
  const LlamaServerCounters& server_counters() const { return server_; }
  const LlamaPromptCache* prompt_cache() const { return prompt_cache_.get(); }
  // The tokens slot `s` holds (its prompt and reply so far).
  const std::vector<int32_t>& slot_tokens(SeqSlot s) const {
    return slots_.at(static_cast<size_t>(s)).tokens;
  }

 private:
  struct Slot {
    bool processing = false;
    int64_t last_used = -1;      // llama-server's t_last_used (a counter here)
    std::vector<BlockId> cells;  // in position order
    std::vector<int32_t> tokens;
  };
  // get_available_slot's choice for a prompt, and what it would do.
  struct Choice {
    SeqSlot slot = kNoSeq;
    bool by_similarity = false;
    bool by_id = false;    // the request named it (id_slot)
    bool save = false;     // the slot's tokens go to the host prompt cache
    int64_t restore = -1;  // the prompt cache entry restored, -1 none
    bool restore_fails = false;
    int64_t restore_tokens = 0;
    int64_t n_past = 0;  // tokens the slot keeps (the hit)
  };
  Choice choose(const std::vector<int32_t>& prompt, int32_t id_slot, bool clear) const;
  static std::vector<int32_t> ids_of(const TokenView& tokens);
  int64_t stream_of(SeqSlot s) const { return kv_unified() ? 0 : s; }
  bool kv_unified() const { return streams_.size() == 1; }
  // Cells idle slots other than `except` hold in the unified cache (0 with
  // streams: an idle slot's stream is its own).
  int64_t purgeable(SeqSlot except) const;
  // Purges idle slots (lowest id first) until stream 0 has `need` free.
  void purge_until(int64_t need, SeqSlot except);
  // The running slots as a bit set of sequence ids.
  uint64_t running_seqs() const;
  // Cells of slot s's table from index `from` on that no other sequence
  // holds: what trimming it there frees.
  int64_t exclusive_cells(SeqSlot s, int64_t from) const;
  // Drops the slot's cells from position `from` on.
  void trim(SeqSlot s, int64_t from);
  // find_slot for n cells of slot s in its stream, placed at its next positions.
  void place(SeqSlot s, int64_t n);
  void maybe_defragment(int64_t stream);
  bool seed_2024() const { return p_.behaviour == LlamaBehaviour::seed_2024; }
  uint32_t pad() const { return seed_2024() && p_.v_trans ? 32u : 256u; }

  LlamaCellsPoolParams p_;
  int64_t stream_size_ = 0;
  std::vector<LlamaKvCells> streams_;
  std::vector<Slot> slots_;
  int64_t total_cells_ = 0;  // every stream's cells
  // Some cell has held more than one sequence (a child's copy in the
  // unified cache): the counts below then look at the cells, not the tables.
  bool any_shared_ = false;
  std::unique_ptr<LlamaPromptCache> prompt_cache_;
  int64_t clock_ = 0;
  LlamaCellsCounters counters_;
  LlamaServerCounters server_;
  Bytes bytes_moved_ = 0, host_bytes_ = 0;
  Bytes pending_copy_ = 0, pending_in_ = 0, pending_out_ = 0;
  int64_t queried_ = 0, hit_tokens_ = 0, recompute_queried_ = 0, recompute_hits_ = 0;
  mutable int64_t max_n_ = 0;  // widest attention view priced
};

}  // namespace kvsim
