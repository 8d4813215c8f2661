#include "sim/serve/speculative_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_speculative(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const SpeculativeMetrics* found = m.find<SpeculativeMetrics>();
  if (found == nullptr) return;
  const SpeculativeMetrics& s = *found;
  MetricsObject o = metrics_object(doc, "speculative");
  o.put("method", s.method)
      .put("num_speculative_tokens", s.num_speculative_tokens)
      .put("verifies", s.verifies)
      .put("draft_tokens", s.draft_tokens)
      .put("accepted_tokens", s.accepted_tokens)
      .put("mean_accepted_length", s.mean_accepted_length)
      .put("acceptance_rate", s.acceptance_rate)
      .put("acceptance_rate_per_position", s.acceptance_rate_per_position)
      .put("draft_ms_per_step", s.draft_ms_per_step)
      .put("verify_ms_per_step", s.verify_ms_per_step)
      .put("drafter_weights_bytes", s.drafter_weights_bytes)
      .put("drafter_kv_bytes_per_token", s.drafter_kv_bytes_per_token);
}

}  // namespace

MetricsSection speculative_metrics_section() {
  return {"speculative", write_speculative};
}

}  // namespace kvsim
