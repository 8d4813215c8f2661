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
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>

#include "devices/timing_model.hpp"
#include "sim/serve/speculative_metrics.hpp"
#include "sim/spec/instance_spec.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

// The sequences of a step that sample (each proposes drafts next) and their
// contexts summed once the step's tokens are in.
struct DraftBatch {
  int64_t sequences = 0;
  int64_t context = 0;
};

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
  int64_t verify(uint64_t request_id, int64_t generated, int64_t drafts) {
    const int64_t a = accepted_drafts(request_id, generated, drafts);
    count(drafts, a);
    return a;
  }
  // verify() in two halves, so that a step draws for all its sequences in
  // one pass (the draws of one sequence do not wait on the last one's): the
  // draw alone, pure, and its count.
  int64_t accepted_drafts(uint64_t request_id, int64_t generated, int64_t drafts) const {
    // Counter-based draws: draw i of (request, position) is the mixer of
    // its key and i, 53 bits n, u = n / 2^53 in [0, 1) (no generator to
    // seed per sequence). A draft is accepted when u is below its rate and
    // every draft before it was: all `drafts` draws are made and the run of
    // acceptances kept (the draws are pure, so those past the first
    // rejection change nothing), without a branch on each, which a rate of
    // 0.7 mispredicts.
    const uint64_t key = keys_(request_id, static_cast<uint64_t>(generated));
    if (thresholds_.empty()) return accepted_by_length(key, drafts);
    uint32_t accepted = 0;
    for (int64_t i = 0; i < drafts; ++i)
      accepted |= static_cast<uint32_t>((mix64(key + static_cast<uint64_t>(i)) >>
                                         (64 - kDrawBits)) < thresholds_[static_cast<size_t>(i)])
                  << i;
    return std::countr_one(accepted);
  }
  void count(int64_t drafts, int64_t accepted) {
    ++verifies_;
    drafts_ += drafts;
    accepted_ += accepted;
    ++with_drafts_[static_cast<size_t>(drafts)];
    ++with_accepted_[static_cast<size_t>(accepted)];
  }
  // The drafter's passes after a step whose target work is `target`: the
  // first over every token the target computed (its expert group routing
  // what the target's does, target.moe_tokens), then K - 1 of one token for
  // each of the batch's sequences, the group routing `group_sequences` of
  // them (the data-parallel ranks' samplers together; 0: this rank's times
  // ep / tp, as the target's rule without a group).
  TimeNs draft_latency(const StepWork& target, const DraftBatch& batch,
                       double group_sequences = 0) const;
  // The drafter's timing model (its op graph on the target's device and
  // layout), null for ngram.
  const TimingModel* drafter_timing() const {
    return drafter_timing_ ? &*drafter_timing_ : nullptr;
  }
  // A step's verify (the target's pass) and draft time, for the means.
  void count_step(TimeNs verify, TimeNs draft) {
    verify_ns_ += static_cast<double>(verify);
    draft_ns_ += static_cast<double>(draft);
    ++steps_;
  }
  SpeculativeMetrics metrics(Bytes drafter_weights, Bytes drafter_kv_per_token) const;

 private:
  // Bits of a draw: a double in [0, 1) holds 53 of them exactly.
  static constexpr int kDrawBits = 53;
  // The accepted-lengths model's one draw per pass.
  int64_t accepted_by_length(uint64_t key, int64_t drafts) const;

  StreamKeys keys_;  // (seed, speculative_acceptance)
  int64_t k_;
  std::string method_;
  AcceptanceModel acceptance_;
  // Per draft position of a model that draws once per draft: a draw n (53
  // bits) is an acceptance when n < thresholds_[i] (u = n / 2^53 < rate,
  // exactly); empty for accepted lengths (one draw per pass).
  std::vector<uint64_t> thresholds_;
  std::optional<TimingModel> drafter_timing_;  // none for ngram (host lookup)
  int64_t verifies_ = 0, drafts_ = 0, accepted_ = 0;
  // Verify passes by their drafts and by their accepted drafts (0..K): the
  // per-position counts are their tails, summed once for the metrics.
  std::vector<int64_t> with_drafts_, with_accepted_;
  double verify_ns_ = 0, draft_ns_ = 0;
  int64_t steps_ = 0;
};

}  // namespace kvsim
