#pragma once
// The metrics of one run (SPEC 9). Keys are stable: add, don't rename.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.hpp"

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

// A cluster run's metrics (RunMetrics::cluster). Defined at namespace scope:
// a nested struct with default member initializers is not default-
// constructible for std::optional until RunMetrics is complete (clang).
struct ClusterInstanceMetrics {
  std::string group, role;
  int64_t arrived = 0, completed = 0, rejected = 0, preemptions = 0, steps = 0;
  double prefix_hit_rate = 0, ttft_p50_ms = 0, ttft_p99_ms = 0;
  Bytes peak_used_bytes = 0;
};
struct ClusterMetrics {
  int64_t instances = 0, prefill_instances = 0, decode_instances = 0;
  std::string router, decode_router;
  // Requests routed to the busiest instance over the mean per instance
  // (of the instances the front router picks among): 1 is perfect balance.
  double load_imbalance = 0;
  struct {
    int64_t requests = 0;
    Bytes bytes = 0;    // KV moved prefill -> decode, all ranks
    double time_s = 0;  // summed over requests (queueing on the link included)
    double mean_ms = 0, max_ms = 0;
  } transfer;
  // cluster.global_pool: the one store the instances share (its traffic and
  // hits are kv_tiers.global); zeros without one.
  struct {
    Bytes capacity_bytes = 0;
    int64_t capacity_blocks = 0, instances = 0;
    uint64_t puts = 0;
  } global_pool;
  std::vector<ClusterInstanceMetrics> per_instance;
};

// A pipeline-parallel run's layout and the activations its stages passed on
// (RunMetrics::pipeline; devices/pipeline_timing.hpp). Absent with one stage.
struct PipelineMetrics {
  int64_t stages = 0, micro_batches = 0;
  int64_t devices = 0;                    // tensor x pipeline devices of the instance
  std::string layers;                     // decoder layers per stage, "16,16,15,15"
  std::string link;                       // the link between stages: device (HCCS) | network (RoCE)
  int64_t binding_stage = 0;              // the stage whose memory sets the block count
  int64_t binding_stage_layers = 0;       // its decoder layers
  Bytes binding_stage_weights_bytes = 0;  // per device of that stage
  double stage_link_bytes = 0;            // activations across every boundary, whole run
};

struct RunMetrics {
  // The engine component that produced the run ("serving", "genie"; the
  // registry name, sim/engine/engine_registry.hpp). Reports choose their
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
  struct {
    Bytes block_bytes = 0;
    int64_t block_size = 0;
    int64_t num_blocks = 0, capacity_tokens = 0;
    Bytes kv_bytes_per_token = 0;
    Bytes peak_used_bytes = 0;
    double mean_used_bytes = 0;
    double fragmentation = 0;
    double prefix_hit_rate = 0;
    // Hits of requests re-admitted after a recompute preemption, apart
    // from prefix_hit_rate (first admissions only), which measures sharing.
    double recompute_hit_rate = 0;
    double chunk_hit_rate = 0;
    Bytes bytes_moved = 0;
    uint64_t pointer_updates = 0, evictions = 0;
    Bytes swapped_bytes = 0;
    // On-device update modes and sliding window (seed 002).
    Bytes buffer_bytes = 0;               // KV buffers allocated (all layers, K and V)
    uint64_t compactions = 0;             // pointer_shift re-packs when headroom ran out
    uint64_t variant_switches = 0;        // AR-m -> AR-n realignments
    uint64_t rewinds = 0;                 // rejected speculative tokens rolled back
    int64_t window_evicted_tokens = 0;    // sliding window
    int64_t attention_read_tokens = 0;    // KV columns attention read, summed over passes
    int64_t attention_useful_tokens = 0;  // ... of which held valid tokens
    int64_t context_resets = 0;  // dialog turns that found ctx_size full (no window): cache cleared
    Bytes session_io_bytes = 0;  // dialog session cache saved + restored (seed 002 dump/loadCache)
    // chunk_lru (seed 003).
    int64_t chunk_hits = 0, chunk_misses = 0, chunk_evictions = 0;
    Bytes chunk_bytes_copied = 0;   // chunk pool -> main pool
    int64_t chunk_rope_tokens = 0;  // keys re-rotated to their real position
    int64_t chunk_fallbacks = 0;    // prompts without separator, plain prefill
  } kv_cache;
  // llama_cells (seed 004): written only for a run of that policy.
  struct {
    bool present = false;
    std::string type_k, type_v;
    bool v_trans = true;
    int64_t kv_size = 0;
    Bytes k_l_bytes = 0, v_l_bytes = 0, device_bytes = 0, host_bytes = 0, cell_bytes = 0;
    int64_t context_shifts = 0, discarded_tokens = 0, kshift_passes = 0, kshift_cells = 0;
    Bytes kshift_bytes = 0;
    int64_t defrags = 0, defrag_moves = 0;
    Bytes defrag_bytes = 0;
    int64_t slots_contiguous = 0, slots_scattered = 0, max_n = 0;
    Bytes host_read_bytes = 0;
  } llama_cells;
  struct {
    Bytes device_bytes = 0, weights_bytes = 0, kv_bytes = 0, vtcm_bytes = 0,
          activation_reserve_bytes = 0;
    Bytes main_pool_bytes = 0, chunk_pool_bytes = 0;  // chunk_lru's dual pool
  } memory;
  // One HTP session (an LLM dialog or another model sharing the NPU) and its
  // VTCM (seed 002, data README "VTCM window feature").
  struct Session {
    std::string name;
    Bytes vtcm_requested_bytes = 0, vtcm_granted_bytes = 0;
    double vtcm_wait_ms = 0;  // time spent waiting for VTCM
    int64_t runs = 0;         // VTCM acquisitions (turns or duty-cycle bursts)
  };
  struct {
    Bytes requested_bytes = 0;  // the LLM session (the first)
    Bytes granted_bytes = 0;    // smallest grant it ran with
    double wait_ms = 0;         // summed over all sessions
    int64_t sessions_waited = 0;
  } vtcm;
  std::vector<Session> sessions;  // empty for serving (Ascend) runs
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
  // A cluster run (a scenario with `cluster:`): its instances, routers and
  // the KV moved from prefill to decode instances. Absent for one instance,
  // whose metrics.json keeps exactly its keys.
  using ClusterInstance = ClusterInstanceMetrics;
  using Cluster = ClusterMetrics;
  std::optional<Cluster> cluster;
  std::optional<PipelineMetrics> pipeline;  // pipeline-parallel runs only
  // Tiers below device HBM (sim/cache/tiers/): one object per tier name,
  // zeros when the scenario has no such tier. Hit rates share
  // kv_cache.prefix_hit_rate's denominator (prompt tokens looked up at first
  // admissions), so device_hit_rate + the tiers' hit rates = prefix_hit_rate.
  struct KvTierMetrics {
    double hit_rate = 0;
    int64_t hit_tokens = 0;   // prompt tokens read back from this tier at first admissions
    Bytes bytes_read = 0;     // tier -> device, all ranks
    Bytes bytes_written = 0;  // device or the tier above -> tier, all ranks
    uint64_t evictions = 0;
    int64_t blocks_held = 0;  // at the end of the run
  };
  struct KvTiers {
    double device_hit_rate = 0;
    double load_time_s = 0;  // summed over steps, before any overlap with compute
    KvTierMetrics dram, ssd, global;
    // The object of a tier name (kv_tier_names()), null for another name.
    KvTierMetrics* tier(std::string_view name);
    const KvTierMetrics* tier(std::string_view name) const;
  } kv_tiers;
  RunProvenance provenance;
};

// Ordered JSON (keys in SPEC order) so that files compare byte for byte.
nlohmann::ordered_json metrics_to_json(const RunMetrics& m);
// Every numeric metric key, dotted (for `expect` validation and `check`).
std::vector<std::string> metric_key_names();
// Value of a dotted key in a metrics JSON document, when numeric.
std::optional<double> metric_value(const nlohmann::ordered_json& doc, const std::string& key);
// The node at a dotted key, or nullptr.
const nlohmann::ordered_json* find_metric(const nlohmann::ordered_json& doc,
                                          const std::string& key);
// Dotted keys of a document's leaves in document order (only numeric leaves
// when numeric_only).
std::vector<std::string> metric_leaf_keys(const nlohmann::ordered_json& doc, bool numeric_only);

}  // namespace kvsim
