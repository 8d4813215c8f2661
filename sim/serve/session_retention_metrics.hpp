#pragma once
// What session KV retention did (sim/serve/session_retention.hpp), the
// section that writes metrics.json's `session_retention` object (runs with
// retention on only, so every other run's file keeps exactly its keys) and
// its line of the summary.
#include <cstdint>
#include <string>

#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct RunMetrics;

struct SessionRetentionMetrics {
  int64_t pins = 0;  // finished calls whose blocks were pinned for their session
  // Pins taken by their session's next call: with a prefix hit on the
  // pinned blocks (hits), or with none of them reused (unused).
  int64_t hits = 0, unused = 0;
  int64_t expired = 0;     // released when the TTL ran out
  int64_t dropped = 0;     // released early for room (on_pressure: evict_oldest)
  int64_t refused = 0;     // calls not pinned: max_pinned_fraction full (keep) or too big
  int64_t superseded = 0;  // released for a newer pin of the same session
  int64_t closed = 0;      // released when no request could come any more (run end)
  // Prompt tokens of the next calls found in their session's pinned blocks.
  int64_t saved_prompt_tokens = 0;
  int64_t peak_pinned_blocks = 0;
  double pinned_block_seconds = 0;  // blocks held by pins, integrated over the run
  double mean_pinned_blocks = 0;    // pinned_block_seconds / the run's simulated time
};

MetricsSection session_retention_metrics_section();
// "session retention: ..." (a line of the summary); empty when retention was off.
std::string session_retention_summary(const RunMetrics& m);
// Adds `from`'s counters (one instance of a cluster) to `into`'s, if it has any.
void add_session_retention(const RunMetrics& from, RunMetrics& into);

}  // namespace kvsim
