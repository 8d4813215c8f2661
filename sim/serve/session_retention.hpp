#pragma once
// Session KV retention: a finished call whose session sends another
// (Request::session_continues) keeps its sequence slot, so its blocks stay
// referenced and cannot be evicted, until the session's next call is
// admitted (its prefix lookup finds them and takes references of its own,
// then the pin goes) or `ttl` after the call ended, whichever comes first.
// This is Continuum's TTL pin for tool calls (arXiv 2511.02230: "selectively
// pins the KV cache in GPU memory with a time-to-live value", evicted when
// it expires) and SGLang's TTL prefix pin (sgl-project/sglang#18941, as
// NVIDIA Dynamo's docs/backends/sglang/agents.md describe it: pinned nodes
// "resist eviction for the specified TTL -- even under memory pressure",
// with a budget, SGLANG_HICACHE_MAX_PINNED_RATIO, beyond which pins are
// refused). Under pressure a pin either holds (`keep`, that hard pin) or the
// oldest pins go first (`evict_oldest`: soft retention, where "under enough
// pressure it is evicted and re-prefilled", sglang#27970's retention_seconds
// and LMCache#4456's retention TTL, which never wedge the pool).
//
// Without it (vLLM's default) a finished call's blocks are free at once,
// cached but evictable (refcount 0 in the free queue).
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/core/simulator.hpp"
#include "sim/serve/session_retention_metrics.hpp"
#include "sim/spec/instance_spec.hpp"
#include "workloads/request.hpp"

namespace kvsim {

class SessionRetention {
 public:
  // `policy` holds the pinned slots; expiries are events on `sim`;
  // `freed` is called when an expiry gave blocks back (the engine kicks
  // its scheduler: work may have waited for them).
  SessionRetention(const SessionRetentionConfig& config, KvCachePolicy& policy, Simulator& sim,
                   int64_t num_blocks, int64_t block_size, std::function<void()> freed);
  ~SessionRetention();
  SessionRetention(const SessionRetention&) = delete;
  SessionRetention& operator=(const SessionRetention&) = delete;

  // A call that ends now is to keep its slot (the scheduler then hands it
  // over to pin() instead of releasing it).
  bool wants(const Request& request) const {
    return !closed_ && request.session != 0 && request.session_continues;
  }
  // Takes `slot` (the finished call's, still held) for its session.
  void pin(const Request& request, SeqSlot slot);
  // A call was admitted into `slot` with `hit_tokens` cached: its session's
  // pin, if any, goes (its blocks are the call's now, where it reused them).
  void admitted(uint64_t session, SeqSlot slot, int64_t hit_tokens);
  // evict_oldest: releases the oldest pin not of `spare_session` (the call
  // asking, whose own pin it is about to reuse); false when there is none.
  bool make_room(uint64_t spare_session);
  // No request will come any more: every pin goes, no pin is made after.
  void close();
  int64_t pinned_blocks() const { return pinned_blocks_; }
  size_t pins() const { return pins_.size(); }
  // The counters, the integral taken to `end`.
  SessionRetentionMetrics metrics(TimeNs end) const;

 private:
  struct Pin {
    uint64_t session = 0;
    SeqSlot slot = kNoSeq;
    int64_t blocks = 0;
    EventHandle expiry;
  };
  using Pins = std::map<uint64_t, Pin>;  // by age (the order pins were made)
  // Releases the pin: its slot goes back to the policy.
  void release(Pins::iterator it, bool cancel_expiry);
  void expire(uint64_t age);
  void advance();  // the block-seconds integral up to now

  SessionRetentionConfig config_;
  KvCachePolicy& policy_;
  Simulator& sim_;
  int64_t block_size_;
  int64_t max_pinned_blocks_;
  std::function<void()> freed_;
  Pins pins_;
  std::unordered_map<uint64_t, uint64_t> by_session_;  // session -> age
  uint64_t next_age_ = 0;
  bool closed_ = false;
  int64_t pinned_blocks_ = 0;
  TimeNs integral_at_ = 0;
  SessionRetentionMetrics m_;
};

}  // namespace kvsim
