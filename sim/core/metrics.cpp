#include "sim/core/metrics.hpp"

#include "base/build_info.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {
namespace {
nlohmann::ordered_json latency_json(const LatencySummary& s) {
  nlohmann::ordered_json j;
  j["mean"] = s.mean;
  j["p50"] = s.p50;
  j["p90"] = s.p90;
  j["p99"] = s.p99;
  j["max"] = s.max;
  j["p95"] = s.p95;
  j["std"] = s.std;
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

// What every run reports, whichever engine ran it: the header, requests,
// latency, throughput, the KV and memory keys both engines fill, numerics,
// workload and sim. The engines' and policies' own keys are placed around
// these by their sections (sim/core/metrics_section.hpp).
void write_run_metrics(const RunMetrics& m, nlohmann::ordered_json& j) {
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
  l["itl"] = latency_json(m.latency_ms.itl);
  // No request completed: no latency was measured, and 0 ms would read as
  // the best possible one (an `expect` max would pass). null says "none".
  if (m.requests.completed == 0)
    for (auto& section : l)
      for (auto& v : section) v = nullptr;
  auto& t = j["throughput"];
  t["output_tokens_per_s"] = m.throughput.output_tokens_per_s;
  t["total_tokens_per_s"] = m.throughput.total_tokens_per_s;
  t["requests_per_s"] = m.throughput.requests_per_s;
  auto& k = j["kv_cache"];
  k["capacity_tokens"] = m.kv_cache.capacity_tokens;
  k["kv_bytes_per_token"] = m.kv_cache.kv_bytes_per_token;
  k["peak_used_bytes"] = m.kv_cache.peak_used_bytes;
  k["mean_used_bytes"] = m.kv_cache.mean_used_bytes;
  k["bytes_moved"] = m.kv_cache.bytes_moved;
  k["pointer_updates"] = m.kv_cache.pointer_updates;
  k["window_evicted_tokens"] = m.kv_cache.window_evicted_tokens;
  auto& mem = j["memory"];
  mem["device_bytes"] = m.memory.device_bytes;
  mem["weights_bytes"] = m.memory.weights_bytes;
  mem["kv_bytes"] = m.memory.kv_bytes;
  auto& n = j["numerics"];
  n["mode"] = m.numerics.mode;
  n["checks"] = m.numerics.checks;
  n["max_abs_err"] = m.numerics.max_abs_err;
  j["workload"]["skipped_records"] = m.workload.skipped_records;
  auto& s = j["sim"];
  s["events"] = m.sim.events;
  s["steps"] = m.sim.steps;
  s["simulated_s"] = m.sim.simulated_s;
  s["wall_s"] = m.sim.wall_s;
}
// After every key SPEC 9 first listed (a new top-level object, not inside
// throughput, whose keys other tools read in order).
void write_goodput(const RunMetrics& m, nlohmann::ordered_json& j) {
  auto& g = j["goodput"];
  g["requests"] = m.goodput.requests;
  g["requests_per_s"] = m.goodput.requests_per_s;
  g["fraction"] = m.goodput.fraction;
}

// Last in the file, so every key SPEC 9 lists keeps its place. No timestamp
// and no host name: two runs of one build write the same bytes.
void write_provenance(const RunMetrics& m, nlohmann::ordered_json& j) {
  auto& p = j["provenance"];
  p["kvsim_version"] = build_info::version();
  p["kvsim_commit"] = build_info::commit();
  p["scenario_file"] = m.provenance.scenario_file;
  p["configs_dir"] = m.provenance.configs_dir;
  p["overrides"] = m.provenance.overrides;
  p["resolved_scenario"] = m.provenance.resolved_scenario;
}
}  // namespace

MetricsSection run_metrics_section() {
  return {"run", write_run_metrics};
}

MetricsSection goodput_metrics_section() {
  return {"goodput", write_goodput};
}

MetricsSection provenance_metrics_section() {
  return {"provenance", write_provenance};
}

std::vector<std::string> metric_leaf_keys(const nlohmann::ordered_json& doc, bool numeric_only) {
  std::vector<std::string> out;
  if (doc.is_object()) flatten(doc, "", numeric_only, out);
  return out;
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
