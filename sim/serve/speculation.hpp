#pragma once
// Speculative decoding in the serving engine, as vLLM V1 runs it
// (vllm/v1/core/sched/scheduler.py, vllm/v1/spec_decode/eagle.py,
// vllm/v1/sample/rejection_sampler.py): a running decode is scheduled with
// its last sampled token and the K drafts proposed for it at the end of the
// step before (num_new_tokens = 1 + K, in the token budget), so the draft
// tokens take KV slots in its block table before the target verifies all
// K + 1 in one pass; the rejection sampler keeps the accepted drafts and
// adds one token of its own; the slots of the rejected drafts are given back
// (their KV is garbage and is never hashed: a block becomes findable only
// for content the sequence has). Then the drafter proposes the next step's
// drafts: one pass over every token the target just computed (its own KV
// for them), and K - 1 more of one token per sequence.
//
// This class holds what that needs beside the scheduler and the pool: the
// acceptance draws (seeded by request and position, so a run is the same
// whatever the batch), the drafter's price on the device, and the counters.
#include <cstdint>
#include <memory>
#include <optional>

#include "devices/timing_model.hpp"
#include "sim/serve/speculative_metrics.hpp"
#include "sim/spec/instance_spec.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

class Speculation {
 public:
  explicit Speculation(const InstanceSpec& s);

  int64_t num_speculative_tokens() const { return k_; }
  // Drafts a decode proposes with `output_left` output tokens still to
  // produce (this step's included): never more than the output needs after
  // the step's own token (vLLM stops a request at max_tokens).
  int64_t drafts_for(int64_t output_left) const {
    return std::min<int64_t>(k_, std::max<int64_t>(output_left - 1, 0));
  }
  // Drafts the target accepts out of `drafts` for request `request_id` at
  // `generated` output tokens: a draw keyed by both, and counted.
  int64_t verify(uint64_t request_id, int64_t generated, int64_t drafts);
  // The drafter's passes after a step whose target work is `target`: the
  // first over every token the target computed, then K - 1 of one token for
  // each of the `sampling` sequences whose contexts sum to `context`.
  TimeNs draft_latency(const StepWork& target, int64_t sampling, int64_t context) const;
  // A step's verify (the target's pass) and draft time, for the means.
  void count_step(TimeNs verify, TimeNs draft) {
    verify_ns_ += static_cast<double>(verify);
    draft_ns_ += static_cast<double>(draft);
    ++steps_;
  }
  SpeculativeMetrics metrics(Bytes drafter_weights, Bytes drafter_kv_per_token) const;

 private:
  StreamKeys keys_;  // (seed, speculative_acceptance)
  int64_t k_;
  std::string method_;
  AcceptanceModel acceptance_;
  std::optional<TimingModel> drafter_timing_;  // none for ngram (host lookup)
  int64_t verifies_ = 0, drafts_ = 0, accepted_ = 0;
  std::vector<int64_t> proposed_at_, accepted_at_;  // per position
  double verify_ns_ = 0, draft_ns_ = 0;
  int64_t steps_ = 0;
};

}  // namespace kvsim
