#include "sim/cache/chunk_lru_policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/cache/chunk_lru_metrics.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

PagedParams main_pool_params(PagedParams p) {
  p.prefix_caching = false;  // seed 003: all content, sys_prompt included, goes through chunks
  return p;
}

// A caller that never prices the pending work (a hit-rate sweep driving the
// cache in a loop) must not grow memory without bound: past this many
// isolated prefills waiting, further ones are not recorded. An engine step
// admits at most max_num_seqs requests, far below it.
constexpr size_t kMaxPendingPrefills = size_t{1} << 16;

}  // namespace

ChunkLruPolicy::ChunkLruPolicy(const ChunkLruParams& params)
    : params_(params),
      main_(main_pool_params(params.main)),
      chunk_pool_(
          {params.chunk_blocks, params.main.block_size, params.max_chunks, params.eviction}) {
  if (params.main.block_size <= 0 || params.main.block_bytes % params.main.block_size != 0)
    throw std::invalid_argument("chunk_lru: block_bytes must be a multiple of block_size");
  kv_bytes_per_token_ = params.main.block_bytes / params.main.block_size;
}

bool ChunkLruPolicy::cacheable(int64_t content_tokens) const {
  return content_tokens <= params_.max_chunk_tokens &&
         chunk_pool_.can_hold(content_tokens + kChunkSeparatorLength);
}

PrefixHit ChunkLruPolicy::lookup_prefix(const TokenView& tokens,
                                        std::vector<BlockHash>& memo) const {
  PrefixHit hit;
  hit.tokens_queried = tokens.size();
  // Segments come from the prompt alone: generated tokens never hold a
  // separator and belong to the question's tail.
  const std::vector<PromptSegment> segments =
      split_chunked_prompt(tokens.prompt_ids(), tokens.prompt_len);
  if (segments.size() < 2) return hit;  // no separator: plain prefill
  const size_t units = segments.size() - 1;
  if (memo.size() != units)
    memo = chunk_segment_keys(tokens.prompt_ids(), segments, params_.attention);
  hit.hashes = memo;
  hit.segment_tokens.reserve(units);
  for (size_t i = 0; i < units; ++i)
    hit.segment_tokens.push_back(segments[i].length + kChunkSeparatorLength);
  // Everything up to the last separator is placed by the chunk path; the
  // last token is always computed (it yields the first logits).
  hit.cached_tokens = std::min(segments.back().begin, tokens.size() - 1);
  return hit;
}

AdmitPlan ChunkLruPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  // The chunk path fills newly allocated main-pool blocks: nothing is shared.
  AdmitPlan plan = main_.plan_admit(PrefixHit{}, hit.cached_tokens + new_tokens);
  plan.hit = std::move(hit);
  return plan;
}

void ChunkLruPolicy::copy_into_main(int64_t tokens) {
  const Bytes bytes = tokens * kv_bytes_per_token_;
  stats_.bytes_copied += bytes;
  stats_.rope_tokens += tokens;
  pending_.kv_copy_bytes += bytes;
  pending_.rerope_tokens += tokens;
}

SeqSlot ChunkLruPolicy::apply_admit(const AdmitPlan& plan) {
  AdmitPlan main_plan;
  main_plan.fits = plan.fits;
  main_plan.tokens = plan.tokens;
  main_plan.new_blocks = plan.new_blocks;
  const SeqSlot slot = main_.apply_admit(main_plan);
  const PrefixHit& hit = plan.hit;
  // First admissions make the hit rate; a re-admission after a recompute
  // preemption finds its own chunks again and is counted apart, as the
  // paged pool counts it (CacheAccounting::recompute_*).
  (hit.readmission ? stats_.recompute_query_tokens : stats_.query_tokens) += hit.tokens_queried;
  if (hit.segment_tokens.empty()) {
    ++stats_.no_separator;
    return slot;
  }
  auto isolated_prefill = [&](int64_t tokens, int64_t context) {
    stats_.isolated_prefill_tokens += tokens;
    add_prefill(tokens, context);
  };
  int64_t position = 0;  // real position of the segment's first token
  for (size_t i = 0; i < hit.segment_tokens.size(); ++i) {
    const int64_t unit = hit.segment_tokens[i];
    const int64_t placed = std::min(unit, hit.cached_tokens - position);
    if (placed <= 0) break;
    const BlockHash& hash = hit.hashes[i];
    if (!cacheable(unit - kChunkSeparatorLength)) {
      // Not cached: prefilled alone at its real position, straight into the
      // main pool (no copy, no re-rotation).
      ++stats_.oversized;
      isolated_prefill(placed, 0);
    } else if (chunk_pool_.touch(hash)) {
      ++stats_.hits;
      (hit.readmission ? stats_.recompute_hit_tokens : stats_.hit_tokens) += placed;
      copy_into_main(placed);
    } else {
      ++stats_.misses;
      // At virtual_pos_start, into the chunk pool; a chunk after the system
      // prompt reads the system prompt's keys too (seed 003 §3.7).
      const int64_t context =
          i > 0 && params_.attention == ChunkAttention::system_prompt ? hit.segment_tokens[0] : 0;
      stats_.system_prompt_context += context;
      isolated_prefill(unit, context);
      chunk_pool_.insert(hash, unit, params_.keep_eviction_log ? &eviction_log_ : nullptr);
      copy_into_main(placed);
    }
    position += unit;
  }
  price_recompute(hit);
  return slot;
}

void ChunkLruPolicy::add_prefill(int64_t tokens, int64_t context) {
  if (tokens > 0 && pending_.seqs.size() < kMaxPendingPrefills)
    pending_.seqs.push_back({tokens, context, false});
}

// CacheBlend's two parts, as prefills ahead of the step: one layer over every
// placed token (priced as ceil(P / layers) tokens through all layers: its
// matmuls exactly, its attention as if those tokens saw all P keys, an upper
// bound), then per segment its recomputed tokens, each priced as the
// segment's last tokens (they attend everything before them; an upper bound
// on where in the segment they sit).
void ChunkLruPolicy::price_recompute(const PrefixHit& hit) {
  if (params_.recompute_ratio <= 0) return;
  int64_t position = 0;
  for (size_t i = 0; i < hit.segment_tokens.size(); ++i) {
    const int64_t placed = std::min(hit.segment_tokens[i], hit.cached_tokens - position);
    if (placed <= 0) break;
    const auto k = std::min<int64_t>(
        placed,
        static_cast<int64_t>(std::ceil(params_.recompute_ratio * static_cast<double>(placed))));
    stats_.recompute_tokens += k;
    add_prefill(k, position + placed - k);
    position += hit.segment_tokens[i];
  }
  const int64_t all = std::min(position, hit.cached_tokens);
  const int64_t layers = std::max<int64_t>(params_.model_layers, 1);
  const int64_t selecting = (all + layers - 1) / layers;
  add_prefill(selecting, all - selecting);
}

CacheAccounting ChunkLruPolicy::accounting() const {
  CacheAccounting a = main_.accounting();
  a.bytes_moved += stats_.bytes_copied;
  // The generic "served from a cache" counters: chunk-hit tokens over the
  // prompt tokens looked up (so kv_cache.prefix_hit_rate equals
  // chunk_hit_rate under chunk_lru, and cache-only replays read hits here;
  // the main pool itself does no prefix caching).
  a.prefix_query_tokens = stats_.query_tokens;
  a.prefix_hit_tokens = stats_.hit_tokens;
  a.recompute_query_tokens = stats_.recompute_query_tokens;
  a.recompute_hit_tokens = stats_.recompute_hit_tokens;
  return a;
}

void ChunkLruPolicy::check_drained() const {
  main_.check_drained();
  chunk_pool_.check_invariants();
}

bool ChunkLruPolicy::take_pending_work(StepWork& pass) {
  const bool any =
      !pending_.seqs.empty() || pending_.kv_copy_bytes > 0 || pending_.rerope_tokens > 0;
  pass.seqs.insert(pass.seqs.end(), pending_.seqs.begin(), pending_.seqs.end());
  pass.kv_copy_bytes += pending_.kv_copy_bytes;
  pass.rerope_tokens += pending_.rerope_tokens;
  pending_.seqs.clear();
  pending_.kv_copy_bytes = 0;
  pending_.rerope_tokens = 0;
  return any;
}

void ChunkLruPolicy::report(RunMetrics& m) const {
  ChunkLruMetrics& k = m.part<ChunkLruMetrics>();
  k.chunk_hits = stats_.hits;
  k.chunk_misses = stats_.misses;
  k.chunk_evictions = static_cast<int64_t>(chunk_pool_.evictions());
  k.chunk_bytes_copied = stats_.bytes_copied;
  k.chunk_rope_tokens = stats_.rope_tokens;
  k.chunk_fallbacks = stats_.no_separator + stats_.oversized;
  k.chunk_recompute_tokens = stats_.recompute_tokens;
  k.chunk_system_prompt_context = stats_.system_prompt_context;
  // Token-weighted like prefix_hit_rate (same denominator: the prompt
  // tokens looked up), so the two compare directly.
  k.chunk_hit_rate = stats_.query_tokens > 0 ? static_cast<double>(stats_.hit_tokens) /
                                                   static_cast<double>(stats_.query_tokens)
                                             : 0.0;
  k.main_pool_bytes = params_.main.num_blocks * params_.main.block_bytes;
  k.chunk_pool_bytes = params_.chunk_blocks * params_.main.block_bytes;
}

}  // namespace kvsim
