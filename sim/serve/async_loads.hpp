#pragma once
// Loads of lower-tier hits that run between steps (kv_tiers.load_overlap:
// async), as vLLM's OffloadingConnector runs them: its
// get_num_new_matched_tokens answers that the hit tokens "will be loaded
// asynchronously (between scheduler steps)", the scheduler allocates the
// request's blocks, schedules no token of it and parks it in
// WAITING_FOR_REMOTE_KVS, and the next schedule() after the worker reports
// the load finished (finished_recving) takes it like any waiting request
// (vllm/v1/core/sched/scheduler.py at 00024d31, schedule() and
// _update_waiting_for_remote_kv; the connector's side in
// vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py at
// 0072b0b7). Meanwhile the other requests' steps run: nothing here holds a
// step.
//
// A cap on the tokens whose loads start per scheduler step
// (kv_tiers.max_load_tokens_per_step), all requests together, in whole
// blocks and at least one: a longer load starts a part per step and spreads
// over ceil(tokens / cap) steps. vLLM has no such cap (its connector starts
// a request's whole load at once, in start_load_kv); its per-request
// `max_load_tokens` (kv_transfer_params, docs/features/kv_offloading_usage.md)
// sends the tokens past it to be recomputed instead, and the connector
// bounds the requests loading at once to max_num_seqs (max_concurrent_loads,
// the scheduler side's __init__ at 0072b0b7), which the scheduler applies.
// The cap is kvsim's bound for an engine that throttles its loads (as
// LMCache's async loading shapes its gets by a chunk budget, LMCache
// docs/source/kv_cache/async_loading), absent by default.
//
// Not modelled: vLLM allocates a loading request's blocks with
// delay_cache_blocks, so another request cannot reuse them before they
// land; here they are registered at admission (PagedPolicy::apply_admit),
// and a request admitted meanwhile may share them at once.
#include <cstdint>
#include <functional>
#include <list>
#include <vector>

#include "sim/cache/tiers/tier_chain.hpp"

namespace kvsim {

struct Sequence;

class AsyncLoads {
 public:
  // `cap_tokens` 0: no cap. `woken` runs whenever a part of a load lands
  // (the engine schedules again: a load finished, or the next part may go).
  AsyncLoads(TierChain& chain, int64_t block_size, int64_t cap_tokens, std::function<void()> woken);

  // `seq` was admitted with `blocks[i]` hits in tier i to read back.
  void add(Sequence* seq, std::vector<int64_t> blocks);
  // Called at each scheduler step: starts the loads the cap allows, oldest
  // first. Returns the blocks it started.
  int64_t issue();
  // Sequences whose loads have all landed since the last call, in the
  // order they landed.
  void take_ready(std::vector<Sequence*>& out);
  bool empty() const { return loads_.empty() && ready_.empty(); }
  // Requests whose loads have not all landed.
  size_t loading() const { return loads_.size(); }
  // The parts a load was cut into so far, all loads together.
  int64_t parts() const { return parts_; }

 private:
  struct Load {
    Sequence* seq = nullptr;
    std::vector<int64_t> left;  // blocks not started yet, per tier
    int64_t unstarted = 0;      // their sum
    int in_flight = 0;          // parts started and not landed
  };
  void landed(std::list<Load>::iterator it);

  TierChain& chain_;
  int64_t cap_blocks_;  // 0: no cap
  std::function<void()> woken_;
  std::list<Load> loads_;  // admission order; parts in flight point into it
  std::vector<Sequence*> ready_;
  int64_t parts_ = 0;
};

}  // namespace kvsim
