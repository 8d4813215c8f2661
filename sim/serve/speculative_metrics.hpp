#pragma once
// A speculative run's counters (speculative:, sim/serve/speculation.hpp) and
// the section that writes metrics.json's `speculative` object: for a run
// with speculation on only, so every other run's file keeps exactly its keys.
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct SpeculativeMetrics {
  std::string method;
  int64_t num_speculative_tokens = 0;
  int64_t verifies = 0;         // sequences' verify passes (one per sequence and step)
  int64_t draft_tokens = 0;     // drafts proposed and verified
  int64_t accepted_tokens = 0;  // of which the target accepted
  // Accepted drafts at position i / verify passes that had a draft there
  // (vLLM's num_accepted_tokens_per_pos / num_drafts).
  std::vector<double> acceptance_rate_per_position;
  double mean_accepted_length = 0;       // tokens emitted per verify pass: 1 + accepted / verifies
  double acceptance_rate = 0;            // accepted_tokens / draft_tokens
  double draft_ms_per_step = 0;          // the drafter's passes, mean over steps
  double verify_ms_per_step = 0;         // the target's pass, mean over steps
  Bytes drafter_weights_bytes = 0;       // per rank, in memory.weights_bytes
  Bytes drafter_kv_bytes_per_token = 0;  // per rank, in kv_cache.kv_bytes_per_token
  // The counts behind acceptance_rate_per_position (not written): a
  // cluster adds its instances' before taking the rates again.
  std::vector<int64_t> proposed_per_position, accepted_per_position;
};

MetricsSection speculative_metrics_section();

}  // namespace kvsim
