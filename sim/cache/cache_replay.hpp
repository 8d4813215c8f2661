#pragma once
// Cache-only replay (`kvsim hitcurve`): a request stream pushed
// through a KV-cache policy with no timing and no concurrency. Each request,
// in arrival order, is looked up, admitted with its prompt, committed (its
// full blocks become reusable by content), grown by the tokens its decode
// computes (all generated tokens but the last) and committed again, as the
// engine's decode steps write them, then released at once (its blocks
// become cached free blocks, reused in the pool's eviction order as later
// requests need room). What a policy's cache alone would serve, at a given
// capacity, with nothing else competing for the blocks.
//
// Hit definition (the same as a run's kv_cache.prefix_hit_rate): tokens
// served from cache = the prompt tokens the policy reuses at admission
// (paged: leading full blocks found by chained content hash, never the last
// prompt token, which is always recomputed as vLLM does); hit rate = tokens
// served from cache / prompt tokens.
#include <cstdint>

#include "sim/cache/kv_cache_policy.hpp"
#include "workloads/request.hpp"

namespace kvsim {

struct CacheReplayResult {
  int64_t requests = 0;
  int64_t prompt_tokens = 0;       // every request's prompt, admitted or not
  int64_t hit_tokens = 0;          // tokens served from cache
  int64_t decode_tokens = 0;       // generated tokens whose KV was written and cached
  int64_t oversized_requests = 0;  // prompt needs more blocks than the pool holds: not cached
  uint64_t evictions = 0;          // cached blocks overwritten
  double hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(prompt_tokens)
                             : 0.0;
  }
};

// Replays every request of `source` through `policy` (which must be empty)
// and leaves it drained. Completions are reported to the source at the
// request's own arrival time (zero service time), so closed-loop clients and
// chat turns keep coming.
CacheReplayResult replay_through_cache(KvCachePolicy& policy, RequestSource& source);

}  // namespace kvsim
