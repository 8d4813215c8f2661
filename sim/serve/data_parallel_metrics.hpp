#pragma once
// `data_parallel.*`: how the ranks of the data-parallel groups
// (parallel.data with a MoE model, sim/serve/data_parallel_group.hpp) shared
// their steps: each rank's batch, and the time ranks spent waiting for the
// slowest rank of a step (or idle through it), the cost of load imbalance.
#include <cstdint>
#include <vector>

#include "sim/core/metrics_section.hpp"
#include "sim/serve/data_parallel_group.hpp"

namespace kvsim {

struct DataParallelRankSummary {
  int64_t steps = 0;         // group steps it ran a batch in
  double mean_batch = 0;     // sequences per such step
  double mean_tokens = 0;    // tokens per such step
  double wait_fraction = 0;  // of the groups' step time, past its own price or idle
};

struct DataParallelMetrics {
  int64_t groups = 0;
  int64_t ranks = 0;  // per group
  int64_t steps = 0;  // group steps, all groups
  double step_ms_mean = 0;
  // Rank-time spent past the rank's own price of a step (waiting for the
  // slowest rank) or idle through it, over ranks x step time.
  double wait_fraction = 0;
  // Mean over steps of the slowest busy rank's price over their mean (1:
  // balanced).
  double slowest_over_mean = 0;
  double rank_mean_batch_min = 0, rank_mean_batch_max = 0;
  std::vector<DataParallelRankSummary> per_rank;  // every group's ranks, in order
};

// The metrics of `groups` (all of equal rank count).
DataParallelMetrics data_parallel_metrics(const std::vector<const DataParallelGroup*>& groups);

MetricsSection data_parallel_metrics_section();

}  // namespace kvsim
