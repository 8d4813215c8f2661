#include "sim/serve/speculation.hpp"

#include <cmath>

#include "workloads/rng.hpp"

namespace kvsim {

Speculation::Speculation(const InstanceSpec& s)
    : keys_(s.seed, RandomStream::speculative_acceptance),
      k_(s.speculative.num_speculative_tokens),
      method_(s.speculative.method_name),
      acceptance_(s.speculative.acceptance),
      with_drafts_(static_cast<size_t>(k_) + 1, 0),
      with_accepted_(static_cast<size_t>(k_) + 1, 0) {
  // The drafter is priced like the target: its own op graph on the same
  // device and layout (vLLM runs the proposer on the target's workers).
  if (s.speculative.drafter)
    drafter_timing_.emplace(
        s.device, s.speculative.drafter->model,
        TimingModel::Params{s.tp, s.kv.dtype_bytes(), s.ep, s.expert_skew, s.ep_ranks_per_node});
  if (acceptance_.kind() != AcceptanceModel::Kind::lengths)
    for (int64_t i = 0; i < k_; ++i)
      thresholds_.push_back(
          static_cast<uint64_t>(std::ceil(std::ldexp(acceptance_.conditional_rate(i), kDrawBits))));
}

int64_t Speculation::accepted_by_length(uint64_t key, int64_t drafts) const {
  uint64_t i = 0;
  return acceptance_.accepted_with(drafts, [key, &i] {
    return static_cast<double>(mix64(key + i++) >> (64 - kDrawBits)) * 0x1.0p-53;
  });
}

TimeNs Speculation::draft_latency(const StepWork& target, const DraftBatch& batch,
                                  double group_sequences) const {
  if (!drafter_timing_ || batch.sequences <= 0) return 0;
  TimeNs t = drafter_timing_->step_latency(target);
  for (int64_t j = 1; j < k_; ++j) {
    // Pass j drafts token j + 1 of each sequence, one position further on:
    // the target's decode sums, on the drafter's op graph.
    StepWork w;
    w.totals_given = true;
    w.totals.add_decodes(batch.sequences, batch.context + batch.sequences * j);
    w.moe_tokens = group_sequences;
    t += drafter_timing_->step_latency(w);
  }
  return t;
}

SpeculativeMetrics Speculation::metrics(Bytes drafter_weights, Bytes drafter_kv_per_token) const {
  SpeculativeMetrics m;
  m.method = method_;
  m.num_speculative_tokens = k_;
  m.verifies = verifies_;
  m.draft_tokens = drafts_;
  m.accepted_tokens = accepted_;
  // Position i had a draft in every pass of more than i drafts, and an
  // accepted one in every pass that accepted more than i.
  std::vector<int64_t> proposed(static_cast<size_t>(k_), 0), accepted(static_cast<size_t>(k_), 0);
  for (int64_t i = k_ - 1; i >= 0; --i) {
    const auto at = static_cast<size_t>(i);
    proposed[at] = with_drafts_[at + 1] + (at + 1 < proposed.size() ? proposed[at + 1] : 0);
    accepted[at] = with_accepted_[at + 1] + (at + 1 < accepted.size() ? accepted[at + 1] : 0);
  }
  for (size_t i = 0; i < proposed.size(); ++i)
    m.acceptance_rate_per_position.push_back(proposed[i] > 0 ? static_cast<double>(accepted[i]) /
                                                                   static_cast<double>(proposed[i])
                                                             : 0.0);
  m.proposed_per_position = std::move(proposed);
  m.accepted_per_position = std::move(accepted);
  m.mean_accepted_length =
      verifies_ > 0 ? 1.0 + static_cast<double>(accepted_) / static_cast<double>(verifies_) : 0.0;
  m.acceptance_rate =
      drafts_ > 0 ? static_cast<double>(accepted_) / static_cast<double>(drafts_) : 0.0;
  const double steps = steps_ > 0 ? static_cast<double>(steps_) : 1.0;
  m.verify_ms_per_step = verify_ns_ / steps / 1e6;
  m.draft_ms_per_step = draft_ns_ / steps / 1e6;
  m.drafter_weights_bytes = drafter_weights;
  m.drafter_kv_bytes_per_token = drafter_kv_per_token;
  return m;
}

}  // namespace kvsim
