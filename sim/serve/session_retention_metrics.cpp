#include "sim/serve/session_retention_metrics.hpp"

#include <fmt/format.h>

#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

void write_session_retention(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const SessionRetentionMetrics* found = m.find<SessionRetentionMetrics>();
  if (found == nullptr) return;
  const SessionRetentionMetrics& r = *found;
  metrics_object(doc, "session_retention")
      .put("pins", r.pins)
      .put("hits", r.hits)
      .put("unused", r.unused)
      .put("expired", r.expired)
      .put("dropped", r.dropped)
      .put("refused", r.refused)
      .put("superseded", r.superseded)
      .put("closed", r.closed)
      .put("saved_prompt_tokens", r.saved_prompt_tokens)
      .put("peak_pinned_blocks", r.peak_pinned_blocks)
      .put("pinned_block_seconds", r.pinned_block_seconds)
      .put("mean_pinned_blocks", r.mean_pinned_blocks);
}

}  // namespace

MetricsSection session_retention_metrics_section() {
  return {"session_retention", write_session_retention};
}

std::string session_retention_summary(const RunMetrics& m) {
  const SessionRetentionMetrics* found = m.find<SessionRetentionMetrics>();
  if (found == nullptr) return {};
  const SessionRetentionMetrics& r = *found;
  return fmt::format(
      "session retention: {} pins, {} hit by the next call ({} prompt tokens saved), {} unused, "
      "{} expired, {} dropped for room, {} refused; pinned blocks mean {:.1f}, peak {}\n",
      r.pins, r.hits, r.saved_prompt_tokens, r.unused, r.expired, r.dropped, r.refused,
      r.mean_pinned_blocks, r.peak_pinned_blocks);
}

void add_session_retention(const RunMetrics& from, RunMetrics& into) {
  const SessionRetentionMetrics* found = from.find<SessionRetentionMetrics>();
  if (found == nullptr) return;
  const SessionRetentionMetrics& f = *found;
  SessionRetentionMetrics& t = into.part<SessionRetentionMetrics>();
  t.pins += f.pins;
  t.hits += f.hits;
  t.unused += f.unused;
  t.expired += f.expired;
  t.dropped += f.dropped;
  t.refused += f.refused;
  t.superseded += f.superseded;
  t.closed += f.closed;
  t.saved_prompt_tokens += f.saved_prompt_tokens;
  // Pools side by side: each instance's peak summed, an upper bound of the
  // cluster's simultaneous peak (as kv_cache.peak_used_bytes).
  t.peak_pinned_blocks += f.peak_pinned_blocks;
  t.pinned_block_seconds += f.pinned_block_seconds;
  t.mean_pinned_blocks += f.mean_pinned_blocks;
}

}  // namespace kvsim
