#pragma once
// A scenario (SPEC 4): device, model, parallelism, cache policy, scheduler,
// workload, numerics and expectations, loaded strictly. load_scenario() either
// returns a scenario that can run or throws config::ConfigError listing every
// problem with FILE:LINE:COL and key path.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/reader.hpp"
#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "sim/cache/cache_config.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/genie/genie_session_config.hpp"
#include "workloads/workload.hpp"

namespace kvsim {

// `scheduler:`, read by read_scheduler_section from the serving engine's
// declaration (serving_engine_info), which holds the defaults.
struct SchedulerConfig {
  int64_t max_num_seqs = 0;
  int64_t max_batched_tokens = 0;
  bool chunked_prefill = false;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
};

// SPEC 8: real kernels run through the policy's buffers on a reduced
// "shadow" width with the real block and slot structure.
struct NumericsConfig {
  std::string mode = "off";   // off | sampled | full
  int64_t sample_every = 16;  // sampled: check one step in this many
  double tolerance = 1e-4;    // max abs error against the dense reference
  int64_t shadow_layers = 2;  // capped at the model's layers
  int64_t shadow_heads = 2;   // KV heads, capped at the model's KV heads per rank
  int64_t shadow_head_dim = 16;
};

struct OutputConfig {
  TimeNs timeline_interval = 100 * kNsPerMs;  // simulated time between timeline rows
};

// One `expect:` entry: a metric key and the bounds it must meet.
struct Expectation {
  std::string metric;
  std::optional<double> min, max, equals, approx;
  double rel = 0.0;
  double abs = 0.0;
  config::Location where;
};

struct ClusterSpec;  // sim/cluster/cluster_spec.hpp

struct ScenarioSpec {
  std::string name;
  std::string description;
  std::string file;         // the scenario file (empty for an inline test scenario)
  std::string configs_dir;  // where names resolve
  uint64_t seed = 0;
  DeviceSpec device;
  ModelSpec model;
  int64_t tp = 1;
  int64_t ep = 1;          // `parallel.expert`: expert-parallel ranks (1: none)
  double expert_skew = 0;  // `parallel.expert_skew`: Zipf exponent of expert popularity
  // `parallel.pipeline`: pipeline stages (vLLM pipeline_parallel_size), each
  // on tp devices: tp x pp devices per instance (models/pipeline_stages.hpp,
  // devices/pipeline_timing.hpp).
  int64_t pp = 1;
  int64_t micro_batches = 1;             // `parallel.micro_batches` (default: pp)
  std::vector<int64_t> pipeline_layers;  // `parallel.pipeline_layers` (empty: vLLM's split)
  bool pipeline_network_link = false;    // `parallel.pipeline_link` resolved: RoCE, else HCCS
  CacheConfig cache;
  KvTiersConfig kv_tiers;  // `kv_tiers:` tiers below device HBM (none: the device pool alone)
  SchedulerConfig scheduler;
  std::shared_ptr<const WorkloadSpec> workload;
  NumericsConfig numerics;
  OutputConfig output;
  SloTargets slo;  // `slo:` the targets goodput counts requests against (vLLM's --goodput)
  std::vector<Expectation> expect;
  HtpSessionConfig htp;  // `htp:` VTCM requests and co-runners (kind: htp devices)
  // `cluster:` instance groups behind a router; null: one instance (the
  // scenario itself), run exactly as without the key.
  std::shared_ptr<const ClusterSpec> cluster;

  int64_t max_model_len() const {
    return scheduler.max_model_len > 0 ? scheduler.max_model_len : model.max_position_embeddings;
  }
  PoolSizingInput pool_input() const;
};

// Loads a scenario file, applies `--set` overrides, resolves device/model
// names under configs/, validates everything and runs the cross-field checks.
ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from an in-memory document (tests, the Python module); `file`
// names it in errors.
ScenarioSpec load_scenario_text(const std::string& yaml_text, const std::string& file,
                                const std::string& configs_dir,
                                const std::vector<std::string>& overrides = {});

// The configs/ folder for a scenario: the nearest ancestor folder named
// `configs` that has devices/ and models/, else the one of this source tree.
std::string find_configs_dir(const std::string& scenario_path);

// Validates any kvsim YAML file (scenario, device or model), guessing the
// kind from its folder or content. Throws ConfigError.
void validate_file(const std::string& path);

// Names available under configs/<kind>/ (devices, models, scenarios).
std::vector<std::string> list_config_names(const std::string& configs_dir, const std::string& kind);

}  // namespace kvsim
