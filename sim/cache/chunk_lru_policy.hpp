#pragma once
// `chunk_lru` (seed 003): a position-independent chunk cache for RAG prompts
// `sys_prompt ## chunk_1 ## ... ## question`, beside a main paged pool.
//
// - Every segment before the question, the system prompt included, is keyed
//   by the XXH3-128 of its token ids alone (no position), not by vLLM's
//   chained prefix hashes: the seed drops prefix caching for these prompts.
// - Admission walks the segments in order. A hit is copied from the chunk
//   pool into newly allocated main-pool blocks and its keys re-rotated from
//   the virtual position to the real one. A miss is prefilled at
//   `virtual_pos_start` attending the system prompt and causally itself
//   (seed 003 §3.7's mask; its key then covers the system prompt, see
//   ChunkAttention), or with `chunk_attention: isolated` only itself,
//   inserted into the chunk pool after evicting least-recently-used chunks
//   until its blocks are free, then copied and re-rotated like a hit. The
//   question is then prefilled by the scheduler as ordinary tokens
//   attending to everything before it.
// - `recompute_ratio` r > 0 (CacheBlend, Yao et al., EuroSys 2025): every
//   placed segment's ceil(r x tokens) tokens whose KV deviates most are
//   recomputed at their real positions attending everything before them,
//   after a first-layer pass over all placed tokens that finds them, so
//   part of the cross-chunk attention is restored (the selection itself is
//   kernels/llama2_selective_recompute.hpp; here it is priced).
// - A prompt without a separator is a plain prefill (counted as a fallback);
//   a chunk longer than max_chunk_tokens, or larger than the whole chunk
//   pool, is not cached: it is prefilled alone at its real position straight
//   into the main pool (counted as a fallback too).
// - When the request ends its main-pool blocks are freed; the chunk pool
//   keeps its copy.
//
// The device work of the chunk path (isolated prefills, copies, RoPE) is
// handed to the engine through take_pending_work(). Nothing here needs the
// timing model: lookup_prefix / plan_admit / apply_admit / commit / release
// run the cache logic alone (a hit-rate sweep can drive them in a loop).
#include <memory>
#include <vector>

#include "sim/cache/chunk_pool.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

// The three limits have no defaults here: chunk_lru declares them
// (sim/policies/chunk_lru_spec.cpp); start from declared_chunk_lru_params()
// there to get them.
struct ChunkLruParams {
  PagedParams main;  // the main pool (prefix caching is off: chunks replace it)
  int64_t chunk_blocks = 0;
  int64_t max_chunks = 0;
  int64_t max_chunk_tokens = 0;   // longer chunks are not cached
  int64_t virtual_pos_start = 0;  // where missed chunks are computed
  ChunkAttention attention = ChunkAttention::system_prompt;
  double recompute_ratio = 0;      // of each placed segment's tokens (CacheBlend)
  int64_t model_layers = 1;        // the recompute's selecting pass is one layer of them
  bool keep_eviction_log = false;  // record evicted hashes in order (tests)
  // Which chunk the chunk pool evicts first (seed 003: `lru`); a name of
  // eviction_order_names(). The main pool's order is main.eviction.
  std::string eviction = "lru";
};
// Seed 003 get_stats(), per admission (a request re-admitted after a
// recompute preemption looks its chunks up again: hits and misses count
// every lookup, the hit rate's tokens only first admissions).
struct ChunkStats {
  int64_t hits = 0, misses = 0;         // segments found / not found in the chunk pool
  int64_t hit_tokens = 0;               // tokens served from the chunk pool (first admissions)
  int64_t query_tokens = 0;             // tokens of the prompts looked up (first admissions)
  int64_t recompute_hit_tokens = 0;     // the same two for re-admissions after a
  int64_t recompute_query_tokens = 0;   //   recompute preemption
  int64_t no_separator = 0;             // prompts without a separator: plain prefill
  int64_t oversized = 0;                // chunks not cached (over max_chunk_tokens or the pool)
  int64_t isolated_prefill_tokens = 0;  // computed alone (misses and oversized chunks)
  Bytes bytes_copied = 0;               // chunk pool -> main pool, per rank
  int64_t rope_tokens = 0;              // keys re-rotated to their real position
  int64_t recompute_tokens = 0;         // placed tokens recomputed (recompute_ratio)
  int64_t system_prompt_context = 0;    // system-prompt keys missed chunks attended
};

class ChunkLruPolicy final : public KvCachePolicy {
 public:
  explicit ChunkLruPolicy(const ChunkLruParams& params);

  std::string_view name() const override { return "chunk_lru"; }
  using KvCachePolicy::lookup_prefix;
  // Splits the prompt on the separator and hashes each segment before the
  // question (memoised in `memo`). cached_tokens covers every such segment
  // (hit or miss: both are in place before the question runs), at most all
  // tokens but the last.
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const override {
    return main_.plan_grow(seq, new_tokens);
  }
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override {
    main_.apply_grow(seq, plan, new_tokens);
  }
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override {
    main_.commit(seq, tokens, computed_tokens);
  }
  void release(SeqSlot seq) override { main_.release(seq); }
  SwapPlan plan_swap_out(SeqSlot seq) const override { return main_.plan_swap_out(seq); }
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override {
    return main_.apply_swap_out(seq, plan);
  }
  SwapPlan plan_swap_in(HostSlot host) const override { return main_.plan_swap_in(host); }
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override {
    return main_.apply_swap_in(host, plan);
  }
  const std::vector<BlockId>& block_table(SeqSlot seq) const override {
    return main_.block_table(seq);
  }
  int64_t free_blocks() const override { return main_.free_blocks(); }
  CacheAccounting accounting() const override;
  // The main pool drains; the chunk pool keeps its chunks but must be
  // consistent.
  void check_drained() const override;
  bool take_pending_work(StepWork& pass) override;
  void report(RunMetrics& metrics) const override;

  // Seed 003 ChunkCacheManager.clear(): drops every cached chunk.
  void clear() { chunk_pool_.clear(); }
  const ChunkStats& stats() const { return stats_; }
  const ChunkPool& chunk_pool() const { return chunk_pool_; }
  const ChunkLruParams& params() const { return params_; }
  // Evicted chunk hashes in eviction order (with keep_eviction_log).
  const std::vector<BlockHash>& eviction_log() const { return eviction_log_; }
  // A chunk of this many content tokens is cached (not a fallback).
  bool cacheable(int64_t content_tokens) const;

 private:
  void copy_into_main(int64_t tokens);
  void add_prefill(int64_t tokens, int64_t context);
  void price_recompute(const PrefixHit& hit);

  ChunkLruParams params_;
  PagedPolicy main_;
  ChunkPool chunk_pool_;
  Bytes kv_bytes_per_token_ = 0;
  ChunkStats stats_;
  StepWork pending_;  // device work since the last take_pending_work()
  std::vector<BlockHash> eviction_log_;
};

}  // namespace kvsim
