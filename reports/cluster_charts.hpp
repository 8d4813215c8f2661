#pragma once
// The charts of a cluster run (SPEC 9 charts, for `cluster:` scenarios),
// from the series it streamed (reports/run_series.hpp): the cluster's totals
// on the one-instance charts, titled with what they sum over; then its
// instances side by side: with at most kSmallMultiples instances a KV chart
// and a queue chart per instance, with more the spread across instances
// (least, mean and most loaded at each time) and a line per group; what
// moved between instances and below HBM when anything did; the requests
// each instance served.
#include <vector>

#include "reports/run_charts.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

inline constexpr size_t kSmallMultiples = 8;

std::vector<CaptionedChart> cluster_charts(const RunMetrics& m, const LabelledSeries& run);

// One instance's KV in use against its pool (all of its devices), and its
// running and waiting requests.
ChartSpec instance_kv_chart(const RunSeries& cluster, size_t instance);
ChartSpec instance_queue_chart(const RunSeries& cluster, size_t instance);
// KV in use per instance (or waiting requests): the least, the mean and the
// most of the instances at each time.
ChartSpec instance_kv_spread_chart(const RunSeries& cluster);
ChartSpec instance_waiting_spread_chart(const RunSeries& cluster);

}  // namespace kvsim
