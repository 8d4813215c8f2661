#include "sim/serve/speculation.hpp"

#include "workloads/rng.hpp"

namespace kvsim {

Speculation::Speculation(const InstanceSpec& s)
    : keys_(s.seed, RandomStream::speculative_acceptance),
      k_(s.speculative.num_speculative_tokens),
      method_(s.speculative.method_name),
      acceptance_(s.speculative.acceptance),
      proposed_at_(static_cast<size_t>(k_), 0),
      accepted_at_(static_cast<size_t>(k_), 0) {
  // The drafter is priced like the target: its own op graph on the same
  // device and layout (vLLM runs the proposer on the target's workers).
  if (s.speculative.drafter)
    drafter_timing_.emplace(
        s.device, s.speculative.drafter->model,
        TimingModel::Params{s.tp, s.kv.dtype_bytes(), s.ep, s.expert_skew, s.ep_ranks_per_node});
}

int64_t Speculation::verify(uint64_t request_id, int64_t generated, int64_t drafts) {
  // Counter-based draws: draw i of (request, position) is the mixer of its
  // key and i, 53 bits in [0, 1) (no generator to seed per sequence).
  const uint64_t key = keys_(request_id, static_cast<uint64_t>(generated));
  uint64_t i = 0;
  const int64_t a = acceptance_.accepted_with(
      drafts, [key, &i] { return static_cast<double>(mix64(key + i++) >> 11) * 0x1.0p-53; });
  ++verifies_;
  drafts_ += drafts;
  accepted_ += a;
  for (int64_t j = 0; j < drafts; ++j) ++proposed_at_[static_cast<size_t>(j)];
  for (int64_t j = 0; j < a; ++j) ++accepted_at_[static_cast<size_t>(j)];
  return a;
}

TimeNs Speculation::draft_latency(const StepWork& target, int64_t sampling, int64_t context) const {
  if (!drafter_timing_ || sampling <= 0) return 0;
  TimeNs t = drafter_timing_->step_latency(target);
  for (int64_t j = 1; j < k_; ++j) {
    // Pass j drafts token j + 1 of each sequence, one position further on.
    StepWork w;
    w.totals_given = true;
    const auto n = static_cast<double>(sampling);
    const double c = static_cast<double>(context) + n * static_cast<double>(j);
    w.totals.tokens = n;
    w.totals.samplers = n;
    w.totals.attended_pairs = c + n;
    w.totals.kv_tokens_read = c + n;
    w.totals.context_read = c;
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
  for (size_t i = 0; i < proposed_at_.size(); ++i)
    m.acceptance_rate_per_position.push_back(proposed_at_[i] > 0
                                                 ? static_cast<double>(accepted_at_[i]) /
                                                       static_cast<double>(proposed_at_[i])
                                                 : 0.0);
  m.proposed_per_position = proposed_at_;
  m.accepted_per_position = accepted_at_;
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
