#pragma once
// A request while the engine serves it: how much of it is known, computed and
// generated, and where its KV lives.
#include <cstdint>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "workloads/request.hpp"

namespace kvsim {

enum class SeqState : uint8_t { waiting, running, swapped, finished };

struct alignas(64) Sequence {
  // While the scheduler advances a running decode in bulk, computed,
  // generated and last_token_at lag behind by the bulk steps it took; the
  // scheduler settles them before anything reads them (Scheduler::settle,
  // BatchSummary::bulk_decodes).
  // What every step reads, first, so a decode touches one cache line.
  int64_t computed = 0;   // tokens whose KV is in the cache
  int64_t generated = 0;  // output tokens produced so far
  // The policy's commit_horizon after the last commit; 0 (commit) whenever
  // the sequence is admitted or swapped in anew.
  int64_t commit_horizon = 0;
  // request.prompt.size() and request.output.size(), kept by the engine
  // when it takes the request (the step loops read them for every sequence).
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  TimeNs first_token_at = -1;
  TimeNs last_token_at = -1;  // inter-token latency
  SeqSlot slot = kNoSeq;      // the policy's handle while running
  SeqState state = SeqState::waiting;
  bool admitted_once = false;
  int32_t preemptions = 0;
  HostSlot host = -1;      // the policy's handle while swapped out
  TimeNs started_at = -1;  // first scheduled: the end of its queueing
  TimeNs finished_at = -1;
  // The engine's summed KV stalls (ServingEngine::kv_wait_total_) when it
  // was first scheduled: what it waited is the sum at its end less this.
  TimeNs kv_wait_mark = 0;
  // When its admission parked it for an async load of tier hits
  // (sim/serve/async_loads.hpp): the wait until it runs is KV wait too.
  TimeNs parked_at = -1;
  int64_t cached_tokens = 0;  // prefix-cache hit at first admission
  Request request;
  std::vector<BlockHash> block_hashes;  // the policy's hash memo (see lookup_prefix)

  int64_t prompt_len() const { return static_cast<int64_t>(request.prompt.size()); }
  int64_t output_len() const { return static_cast<int64_t>(request.output.size()); }
  // Known content: the prompt and what has been generated.
  int64_t num_tokens() const { return prompt_len() + generated; }
  // Tokens still to compute before the next token can be sampled.
  int64_t remaining() const { return num_tokens() - computed; }
  // The same from the lengths the engine keeps (prompt_tokens, output_tokens).
  int64_t known_tokens() const { return prompt_tokens + generated; }
  int64_t tokens_to_compute() const { return known_tokens() - computed; }
  TokenView tokens() const {
    TokenView v = TokenView::of(request.prompt, request.output, generated);
    v.id_slot = request.id_slot;
    v.clear_context = request.clear_context;
    return v;
  }
};

}  // namespace kvsim
