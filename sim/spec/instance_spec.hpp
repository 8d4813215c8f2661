#pragma once
// One instance of the scenario tree (SPEC 4, SPEC 12): everything an engine
// runs from. A scenario is one instance (sim/scenario/scenario.hpp adds its
// name, expectations and cluster); each group of a cluster is another. Every
// part is its component's own typed spec: the device (its family's), the
// model, the parallel layout, the KV cache (the section's shared knobs and
// the policies, sim/spec/kv_cache_spec.hpp), the tiers, each engine's
// section, the workload, numerics, output and SLO.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/cache/tiers/tier_config.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/spec/genie_session_config.hpp"
#include "sim/spec/kv_cache_spec.hpp"
#include "sim/spec/speculative_config.hpp"
#include "workloads/workload.hpp"

namespace kvsim {

// `scheduler:`, the serving engine's section (sim/serve/serving_engine_spec.cpp
// declares its keys and their defaults).
// `scheduler.session_retention:` (sim/serve/session_retention_spec.cpp
// declares its keys): a finished call's blocks held for its session's next
// call. Off unless the section is given.
struct SessionRetentionConfig {
  enum class OnPressure : uint8_t { evict_oldest, keep };
  bool on = false;
  TimeNs ttl = 0;
  OnPressure on_pressure = OnPressure::evict_oldest;
  double max_pinned_fraction = 1.0;  // of the pool's blocks
};

struct SchedulerConfig {
  int64_t max_num_seqs = 0;
  int64_t max_batched_tokens = 0;
  bool chunked_prefill = false;
  int64_t max_model_len = 0;  // 0: the model's max_position_embeddings
  SessionRetentionConfig session_retention;
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
  // numerics.reuse_quality: what reusing cached KV does to a real model's
  // output (sim/numerics/reuse_quality_probe.hpp); off without a checkpoint.
  std::string quality_checkpoint;  // a llama2.c .bin (stories260K), resolved
  std::string quality_key_path;    // for errors about it
  int64_t quality_requests = 8;    // the first requests to finish
  int64_t quality_generated = 8;   // greedy positions compared after each prompt
  bool on() const { return mode != "off"; }
};

struct OutputConfig {
  TimeNs timeline_interval = 100 * kNsPerMs;  // simulated time between timeline rows
};

// Why an engine cannot run an instance: the key to change and the reason.
struct EngineRefusal {
  std::string key;
  std::string why;
};

struct InstanceSpec {
  std::string name;  // the scenario's (metrics.json `scenario`)
  uint64_t seed = 0;
  DeviceSpec device;
  ModelSpec model;
  int64_t tp = 1;
  int64_t ep = 1;          // `parallel.expert`: expert-parallel ranks (1: none)
  double expert_skew = 0;  // `parallel.expert_skew`: Zipf exponent of expert popularity
  // `parallel.data`: data-parallel attention ranks (vLLM's
  // data_parallel_size), each of tp devices with its own scheduler, running
  // batch and KV pool; a MoE model's experts spread over the data x tensor
  // ranks (ep), whose all-to-all makes every rank's step wait for the
  // slowest (sim/serve/data_parallel_group.hpp). This spec is one rank's.
  int64_t dp = 1;
  int64_t devices = 1;  // `parallel.devices`: dp x tp x pp, the dies the deployment holds
  // Expert-parallel ranks on one node (the device file's
  // max_tensor_parallel), when the group spans nodes; 0: one node.
  int64_t ep_ranks_per_node = 0;
  // `parallel.pipeline`: pipeline stages (vLLM pipeline_parallel_size), each
  // on tp devices: tp x pp devices per instance (models/pipeline_stages.hpp,
  // devices/pipeline_timing.hpp).
  int64_t pp = 1;
  int64_t micro_batches = 1;             // `parallel.micro_batches` (default: pp)
  std::vector<int64_t> pipeline_layers;  // `parallel.pipeline_layers` (empty: vLLM's split)
  bool pipeline_network_link = false;    // `parallel.pipeline_link` resolved: RoCE, else HCCS
  KvCacheSpec kv;
  KvTiersConfig kv_tiers;  // `kv_tiers:` tiers below device HBM (none: the device pool alone)
  // The engine that runs the instance (`engine:`, or the first of the
  // device family's engines that takes the policy and the workload).
  std::string engine;
  SchedulerConfig scheduler;      // the serving engine's `scheduler:`
  SpeculativeConfig speculative;  // the serving engine's `speculative:`
  HtpSessionConfig htp;           // the genie engine's `htp:` (VTCM requests and co-runners)
  std::shared_ptr<const WorkloadSpec> workload;
  NumericsConfig numerics;
  OutputConfig output;
  SloTargets slo;  // `slo:` the targets goodput counts requests against (vLLM's --goodput)

  const PolicySpec& policy() const { return kv.policy(); }
  int64_t max_model_len() const {
    return scheduler.max_model_len > 0 ? scheduler.max_model_len : model.max_position_embeddings;
  }
  // What sizing a block pool takes from the instance (device memory, the
  // parallel layout, the scheduler's limits, the KV dtype); the policy adds
  // what it owns (BlockPoolContract::size).
  PoolSizingInput pool_input() const;
  // The block pool of the running policy; std::logic_error when it keeps
  // none (a caller's bug: the engine checks come first).
  PoolSizing pool_sizing() const;
};

}  // namespace kvsim
