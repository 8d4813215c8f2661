#pragma once
// Where the time of KV movement goes (metrics.json `kv_movement`): what each
// shared link carried (sim/core/shared_link.hpp) and how long requests
// waited for loads and stores. A link's queueing delay is a transfer's time
// taken less its time with the link to itself (the share others took from
// it); its utilisation is its busy time (some transfer on the wire) over the
// run's simulated time. Written for every run: `links` is empty when no
// movement crossed a link, the request waits zeros.
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "sim/core/metrics_section.hpp"
#include "sim/core/shared_link.hpp"

namespace kvsim {

struct LinkMetrics {
  std::string name;  // dotted ("kv_tiers.dram.read", "node0.node_nic.rx")
  int64_t transfers = 0;
  Bytes bytes = 0;
  TimeNs busy = 0;
  double delay_mean_ms = 0, delay_p50_ms = 0, delay_p99_ms = 0, delay_max_ms = 0;
};

struct KvMovementMetrics {
  // Per completed request: the stalls of its steps on loads, stores and
  // store lookups (ServingEngine), over the completed requests.
  struct {
    double mean = 0, p50 = 0, p99 = 0, max = 0;
  } request_wait_ms;
  std::vector<LinkMetrics> links;
};

// What `link` carried so far, named `prefix` + its own name.
LinkMetrics link_metrics(const SharedLink& link, const std::string& prefix = "");
// busy / simulated time (0 for a run of no time).
double link_utilisation(const LinkMetrics& link, double simulated_s);

MetricsSection kv_movement_metrics_section();

}  // namespace kvsim
