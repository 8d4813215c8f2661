#pragma once
// Continuous batching as vLLM does it (seed 001's nano-vllm is the small
// version): a waiting queue admitted first-come first-served, a running set
// that gets one token each per step (or a prefill chunk), a token budget
// (max_batched_tokens) and a sequence cap (max_num_seqs) per step, chunked
// prefill, and preemption of the most recently arrived running request when
// the cache has no room (by recompute, or by swapping its blocks to the host).
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "sim/serve/sequence.hpp"

namespace kvsim {

struct SchedulerParams {
  int64_t max_num_seqs = 256;
  int64_t max_batched_tokens = 8192;
  bool chunked_prefill = true;
  bool swap = false;  // preemption by swap (else recompute)
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int64_t tokens = 0;  // tokens computed for it in this step
};

// How the scheduler sums a step while it builds it, so the engine need not
// walk every sequence to price it or to commit it. A decode is one token
// that samples: computed + 1 == num_tokens().
struct BatchSummary {
  int64_t decodes = 0;
  int64_t decode_context = 0;  // sum of computed over the decodes
  // Items (indices into `items`, in batch order) that are not a decode, or
  // reach their commit horizon with this step: the only ones whose
  // commit() can change anything (Sequence::commit_horizon).
  std::vector<uint32_t> others;
  std::vector<uint32_t> at_horizon;
  // Sequences taken from the waiting queue this step.
  std::vector<Sequence*> admitted;
};

struct ScheduledBatch {
  std::vector<ScheduledSeq> items;
  // Sequences preempted while building this step (their KV left the device:
  // swapped out, or dropped for recompute) and sequences swapped back in.
  std::vector<Sequence*> preempted;
  std::vector<Sequence*> swapped_in;
  Bytes swap_in_bytes = 0;
  Bytes swap_out_bytes = 0;
  int64_t total_tokens = 0;
  BatchSummary summary;
  bool empty() const { return items.empty() && swap_in_bytes == 0 && swap_out_bytes == 0; }
};

class Scheduler {
 public:
  Scheduler(const SchedulerParams& params, KvCachePolicy& policy);

  void add_waiting(Sequence* seq);
  // Builds the next step. Mutates the cache through plan/apply.
  void schedule(ScheduledBatch& batch);
  // Removes a finished sequence from the running set and releases its cache.
  void finish(Sequence* seq);
  // Drops the head of the waiting queue (it can never be admitted).
  Sequence* reject_head();

  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  size_t num_swapped() const { return swapped_.size(); }
  const Sequence* waiting_head() const { return waiting_.empty() ? nullptr : waiting_.front(); }
  uint64_t preemptions() const { return preemptions_; }
  uint64_t swap_fallbacks() const { return swap_fallbacks_; }

 private:
  void schedule_running(ScheduledBatch& batch, int64_t& budget, bool& preempted);
  void schedule_swapped(ScheduledBatch& batch, int64_t& budget);
  void schedule_waiting(ScheduledBatch& batch, int64_t& budget);
  // Preempts the most recently arrived running sequence; returns it.
  Sequence* preempt_latest(ScheduledBatch& batch);
  void insert_running(Sequence* seq);  // keeps arrival order
  // Adds `seq` to the batch for `tokens` if the cache can grow; false if not.
  bool try_grow(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget);
  // Appends `seq` for `tokens` to the batch and its summary.
  static void add_item(Sequence* seq, int64_t tokens, ScheduledBatch& batch, int64_t& budget);

  SchedulerParams params_;
  KvCachePolicy& policy_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // sorted by request id (arrival order)
  std::deque<Sequence*> swapped_;   // sorted by request id
  uint64_t preemptions_ = 0;
  uint64_t swap_fallbacks_ = 0;
};

}  // namespace kvsim
