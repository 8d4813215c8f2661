#pragma once
// A cluster run's counters (a scenario with `cluster:`): its instances,
// routers, the KV moved from prefill to decode instances and the global
// pool; and the section that writes `cluster` (cluster runs only, so one
// instance's metrics.json keeps exactly its keys).
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"

namespace kvsim {

struct ClusterInstanceMetrics {
  std::string group, role;
  int64_t arrived = 0, completed = 0, rejected = 0, preemptions = 0, steps = 0;
  double prefix_hit_rate = 0, ttft_p50_ms = 0, ttft_p99_ms = 0;
  Bytes peak_used_bytes = 0;  // one device's share, as kv_cache.peak_used_bytes
  // Its devices (tp x pp) and what each of them holds.
  int64_t devices = 1;
  Bytes kv_bytes_per_device = 0, weights_bytes_per_device = 0;
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

MetricsSection cluster_metrics_section();

}  // namespace kvsim
