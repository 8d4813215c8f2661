#include "sim/metrics.hpp"

namespace kvsim {
namespace {
nlohmann::ordered_json latency_json(const LatencySummary& s) {
  nlohmann::ordered_json j;
  j["mean"] = s.mean;
  j["p50"] = s.p50;
  j["p90"] = s.p90;
  j["p99"] = s.p99;
  j["max"] = s.max;
  return j;
}

void flatten(const nlohmann::ordered_json& j, const std::string& prefix, bool numeric_only,
             std::vector<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      flatten(*it, key, numeric_only, out);
    else if (!numeric_only || it->is_number())
      out.push_back(key);
  }
}
}  // namespace

nlohmann::ordered_json metrics_to_json(const RunMetrics& m) {
  nlohmann::ordered_json j;
  j["scenario"] = m.scenario;
  j["seed"] = m.seed;
  j["device"] = m.device;
  j["model"] = m.model;
  j["policy"] = m.policy;
  auto& r = j["requests"];
  r["arrived"] = m.requests.arrived;
  r["completed"] = m.requests.completed;
  r["rejected"] = m.requests.rejected;
  r["preempted"] = m.requests.preempted;
  r["preemptions"] = m.requests.preemptions;
  auto& l = j["latency_ms"];
  l["ttft"] = latency_json(m.latency_ms.ttft);
  l["tpot"] = latency_json(m.latency_ms.tpot);
  l["e2e"] = latency_json(m.latency_ms.e2e);
  auto& t = j["throughput"];
  t["output_tokens_per_s"] = m.throughput.output_tokens_per_s;
  t["total_tokens_per_s"] = m.throughput.total_tokens_per_s;
  t["requests_per_s"] = m.throughput.requests_per_s;
  auto& k = j["kv_cache"];
  k["block_bytes"] = m.kv_cache.block_bytes;
  k["block_size"] = m.kv_cache.block_size;
  k["num_blocks"] = m.kv_cache.num_blocks;
  k["capacity_tokens"] = m.kv_cache.capacity_tokens;
  k["kv_bytes_per_token"] = m.kv_cache.kv_bytes_per_token;
  k["peak_used_bytes"] = m.kv_cache.peak_used_bytes;
  k["mean_used_bytes"] = m.kv_cache.mean_used_bytes;
  k["fragmentation"] = m.kv_cache.fragmentation;
  k["prefix_hit_rate"] = m.kv_cache.prefix_hit_rate;
  k["chunk_hit_rate"] = m.kv_cache.chunk_hit_rate;
  k["bytes_moved"] = m.kv_cache.bytes_moved;
  k["pointer_updates"] = m.kv_cache.pointer_updates;
  k["evictions"] = m.kv_cache.evictions;
  k["swapped_bytes"] = m.kv_cache.swapped_bytes;
  k["buffer_bytes"] = m.kv_cache.buffer_bytes;
  k["compactions"] = m.kv_cache.compactions;
  k["variant_switches"] = m.kv_cache.variant_switches;
  k["rewinds"] = m.kv_cache.rewinds;
  k["window_evicted_tokens"] = m.kv_cache.window_evicted_tokens;
  k["attention_read_tokens"] = m.kv_cache.attention_read_tokens;
  k["attention_useful_tokens"] = m.kv_cache.attention_useful_tokens;
  k["context_resets"] = m.kv_cache.context_resets;
  k["session_io_bytes"] = m.kv_cache.session_io_bytes;
  k["chunk_hits"] = m.kv_cache.chunk_hits;
  k["chunk_misses"] = m.kv_cache.chunk_misses;
  k["chunk_evictions"] = m.kv_cache.chunk_evictions;
  k["chunk_bytes_copied"] = m.kv_cache.chunk_bytes_copied;
  k["chunk_rope_tokens"] = m.kv_cache.chunk_rope_tokens;
  k["chunk_fallbacks"] = m.kv_cache.chunk_fallbacks;
  auto& mem = j["memory"];
  mem["device_bytes"] = m.memory.device_bytes;
  mem["weights_bytes"] = m.memory.weights_bytes;
  mem["kv_bytes"] = m.memory.kv_bytes;
  mem["vtcm_bytes"] = m.memory.vtcm_bytes;
  mem["activation_reserve_bytes"] = m.memory.activation_reserve_bytes;
  mem["main_pool_bytes"] = m.memory.main_pool_bytes;
  mem["chunk_pool_bytes"] = m.memory.chunk_pool_bytes;
  auto& v = j["vtcm"];
  v["requested_bytes"] = m.vtcm.requested_bytes;
  v["granted_bytes"] = m.vtcm.granted_bytes;
  v["wait_ms"] = m.vtcm.wait_ms;
  v["sessions_waited"] = m.vtcm.sessions_waited;
  auto& n = j["numerics"];
  n["mode"] = m.numerics.mode;
  n["checks"] = m.numerics.checks;
  n["max_abs_err"] = m.numerics.max_abs_err;
  j["workload"]["skipped_records"] = m.workload.skipped_records;
  if (!m.sessions.empty()) {
    auto& list = j["sessions"];
    list = nlohmann::ordered_json::array();
    for (const auto& session : m.sessions) {
      nlohmann::ordered_json e;
      e["name"] = session.name;
      e["vtcm_requested_bytes"] = session.vtcm_requested_bytes;
      e["vtcm_granted_bytes"] = session.vtcm_granted_bytes;
      e["vtcm_wait_ms"] = session.vtcm_wait_ms;
      e["runs"] = session.runs;
      list.push_back(e);
    }
  }
  auto& s = j["sim"];
  s["events"] = m.sim.events;
  s["steps"] = m.sim.steps;
  s["simulated_s"] = m.sim.simulated_s;
  s["wall_s"] = m.sim.wall_s;
  return j;
}

std::vector<std::string> metric_leaf_keys(const nlohmann::ordered_json& doc, bool numeric_only) {
  std::vector<std::string> out;
  if (doc.is_object()) flatten(doc, "", numeric_only, out);
  return out;
}

std::vector<std::string> metric_key_names() {
  return metric_leaf_keys(metrics_to_json(RunMetrics{}), /*numeric_only=*/true);
}

const nlohmann::ordered_json* find_metric(const nlohmann::ordered_json& doc,
                                          const std::string& key) {
  const nlohmann::ordered_json* cur = &doc;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::optional<double> metric_value(const nlohmann::ordered_json& doc, const std::string& key) {
  const nlohmann::ordered_json* v = find_metric(doc, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

}  // namespace kvsim
