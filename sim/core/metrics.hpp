#pragma once
// The metrics of one run (SPEC 9). Keys are stable: add, don't rename.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_parts.hpp"

namespace kvsim {

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;  // milliseconds
  double p95 = 0, std = 0;  // added after SPEC 9's first keys: written after them
};

// Where a run came from, enough to run it again (`kvsim run --from`). Written
// last in metrics.json, under `provenance`, with the kvsim version and commit;
// `kvsim check` skips it like sim.wall_s. Empty for runs that were not loaded
// from a file (tests, inline scenarios).
struct RunProvenance {
  std::string scenario_file;           // absolute path of the scenario YAML
  std::string configs_dir;             // where device: and model: names resolved
  std::vector<std::string> overrides;  // the --set assignments, in order
  std::string resolved_scenario;       // the YAML document after --set, as text
};

struct RunMetrics {
  // The engine component that produced the run ("serving", "genie"; the
  // registry name, sim/scenario/engine_registry.hpp). Reports choose their
  // sections from it. Not a metrics.json key: the file's keys stay as SPEC 9
  // lists them.
  std::string engine;
  std::string scenario;
  uint64_t seed = 0;
  std::string device, model, policy;
  struct {
    int64_t arrived = 0, completed = 0, rejected = 0;
    int64_t preempted = 0;    // requests preempted at least once
    int64_t preemptions = 0;  // preemption events
  } requests;
  struct {
    LatencySummary ttft, tpot, e2e;
    // Inter-token latency: for every generated token after a request's first,
    // the time since its previous token (tokens one pass emits together,
    // such as accepted drafts, are 0 apart).
    LatencySummary itl;
  } latency_ms;
  struct {
    double output_tokens_per_s = 0, total_tokens_per_s = 0, requests_per_s = 0;
  } throughput;
  // The KV keys every engine fills (SPEC 9 kv_cache.*); each engine's and
  // policy's own are in its part (parts below).
  struct {
    int64_t capacity_tokens = 0;
    Bytes kv_bytes_per_token = 0;
    Bytes peak_used_bytes = 0;
    double mean_used_bytes = 0;
    Bytes bytes_moved = 0;
    uint64_t pointer_updates = 0;
    int64_t window_evicted_tokens = 0;  // sliding window
  } kv_cache;
  struct {
    Bytes device_bytes = 0, weights_bytes = 0, kv_bytes = 0;
  } memory;
  struct {
    std::string mode = "off";
    int64_t checks = 0;
    double max_abs_err = 0;
  } numerics;
  struct {
    int64_t skipped_records = 0;  // malformed trace records skipped (on_error: skip)
  } workload;
  struct {
    uint64_t events = 0;
    int64_t steps = 0;
    double simulated_s = 0, wall_s = 0;
  } sim;
  // Completed requests that met every target of the scenario's SLO (all
  // completed requests when it sets none), per second over the same span as
  // throughput, and as a fraction of the requests that arrived.
  struct {
    int64_t requests = 0;
    double requests_per_s = 0, fraction = 0;
  } goodput;
  RunProvenance provenance;
  // Each component's own counters, by type (sim/core/metrics_parts.hpp).
  MetricsParts parts;
  template <class T>
  T& part() {
    return parts.get<T>();
  }
  template <class T>
  const T* find() const {
    return parts.find<T>();
  }
};

// metrics_to_json() and metric_key_names(), which run every component's
// section, are the assembly's (sim/scenario/metrics_document.hpp).

// Value of a dotted key in a metrics JSON document, when numeric.
std::optional<double> metric_value(const nlohmann::ordered_json& doc, const std::string& key);
// The node at a dotted key, or nullptr.
const nlohmann::ordered_json* find_metric(const nlohmann::ordered_json& doc,
                                          const std::string& key);
// Dotted keys of a document's leaves in document order (only numeric leaves
// when numeric_only).
std::vector<std::string> metric_leaf_keys(const nlohmann::ordered_json& doc, bool numeric_only);

}  // namespace kvsim
