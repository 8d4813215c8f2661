// The dialog engine's part of metrics.json (seed 002): what the Genie
// buffers' updates did, the VTCM the LLM asked for and got, and the list of
// HTP sessions (written only for a run that had sessions).
#include "sim/genie/genie_metrics.hpp"

#include "sim/core/metrics.hpp"

namespace kvsim {

namespace {

void write_genie_metrics(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const GenieRunMetrics& k = m.parts.get_or_zero<GenieRunMetrics>();
  metrics_object(doc, "kv_cache")
      .before("window_evicted_tokens")
      .put("buffer_bytes", k.buffer_bytes)
      .put("compactions", k.compactions)
      .put("tensor_registrations", k.tensor_registrations)
      .put("mask_bytes", k.mask_bytes)
      .put("variant_switches", k.variant_switches)
      .put("rewinds", k.rewinds)
      .at_end()
      .put("attention_read_tokens", k.attention_read_tokens)
      .put("attention_useful_tokens", k.attention_useful_tokens)
      .put("context_resets", k.context_resets)
      .put("session_io_bytes", k.session_io_bytes);
  metrics_object(doc, "memory").after("kv_bytes").put("vtcm_bytes", k.vtcm_bytes);
  nlohmann::ordered_json vtcm;
  vtcm["requested_bytes"] = k.vtcm.requested_bytes;
  vtcm["granted_bytes"] = k.vtcm.granted_bytes;
  vtcm["wait_ms"] = k.vtcm.wait_ms;
  vtcm["sessions_waited"] = k.vtcm.sessions_waited;
  vtcm["kv_layers"] = k.vtcm.kv_layers;
  vtcm["kv_bytes"] = k.vtcm.kv_bytes;
  vtcm["kv_fill_bytes"] = k.vtcm.kv_fill_bytes;
  vtcm["kv_read_bytes"] = k.vtcm.kv_read_bytes;
  vtcm["kv_sync_bytes"] = k.vtcm.kv_sync_bytes;
  MetricsObject top(doc);
  top.after("memory").put("vtcm", std::move(vtcm));
  if (k.sessions.empty()) return;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& session : k.sessions) {
    nlohmann::ordered_json e;
    e["name"] = session.name;
    e["vtcm_requested_bytes"] = session.vtcm_requested_bytes;
    e["vtcm_granted_bytes"] = session.vtcm_granted_bytes;
    e["vtcm_wait_ms"] = session.vtcm_wait_ms;
    e["runs"] = session.runs;
    list.push_back(e);
  }
  top.after("workload").put("sessions", std::move(list));
}

}  // namespace

MetricsSection genie_metrics_section() {
  return {"genie", write_genie_metrics};
}

}  // namespace kvsim
