#include "reports/cluster_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/cluster/cluster_metrics.hpp"
#include "sim/serve/serving_metrics.hpp"

namespace kvsim {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kSmallWidth = 300, kSmallHeight = 210;

double end_of(const ChartSpec& c) {
  double end = 0;
  for (const auto& s : c.series)
    if (!s.x.empty()) end = std::max(end, s.x.back());
  return std::max(end, 1e-3);
}

std::string instance_name(const RunSeries& cluster, size_t i) {
  const ClusterInstanceInfo& info = cluster.cluster_instances()[i];
  return fmt::format("instance {} ({})", i, info.group);
}

// At each time, the least, the mean and the most of the instances' gauges
// (every instance has a row at every row time: the x values are shared).
ChartSpec spread_chart(const RunSeries& cluster, std::string title, std::string y_label,
                       Gauge max_of, Gauge last_of, double scale) {
  ChartSpec c = time_chart(std::move(title), std::move(y_label));
  std::map<double, std::vector<double>> at;
  for (const RunSeries& s : cluster.instance_series()) {
    const ChartSeries line = gauge_series("", s, max_of, last_of, scale);
    for (size_t k = 0; k < line.x.size(); ++k) at[line.x[k]].push_back(line.y[k]);
  }
  ChartSeries most{"most loaded instance", {}, {}, {}}, mean{"mean of the instances", {}, {}, {}},
      least{"least loaded instance", {}, {}, {}};
  for (const auto& [x, ys] : at) {
    double sum = 0;
    for (const double y : ys) sum += y;
    most.x.push_back(x);
    most.y.push_back(*std::max_element(ys.begin(), ys.end()));
    mean.x.push_back(x);
    mean.y.push_back(sum / static_cast<double>(ys.size()));
    least.x.push_back(x);
    least.y.push_back(*std::min_element(ys.begin(), ys.end()));
  }
  c.series = {most, mean, least};
  // With several groups, each group's mean beside them.
  std::vector<std::string> groups;
  for (const ClusterInstanceInfo& i : cluster.cluster_instances())
    if (std::find(groups.begin(), groups.end(), i.group) == groups.end()) groups.push_back(i.group);
  if (groups.size() > 1) {
    for (const std::string& g : groups) {
      std::map<double, std::pair<double, int>> sums;
      for (size_t i = 0; i < cluster.instance_series().size(); ++i) {
        if (cluster.cluster_instances()[i].group != g) continue;
        const ChartSeries line =
            gauge_series("", cluster.instance_series()[i], max_of, last_of, scale);
        for (size_t k = 0; k < line.x.size(); ++k) {
          sums[line.x[k]].first += line.y[k];
          ++sums[line.x[k]].second;
        }
      }
      ChartSeries s{"mean of " + g, {}, {}, {}};
      for (const auto& [x, sum] : sums) {
        s.x.push_back(x);
        s.y.push_back(sum.first / sum.second);
      }
      c.series.push_back(std::move(s));
    }
  }
  return c;
}

}  // namespace

ChartSpec instance_kv_chart(const RunSeries& cluster, size_t i) {
  const RunSeries& s = cluster.instance_series()[i];
  const ClusterInstanceInfo& info = cluster.cluster_instances()[i];
  ChartSpec c = time_chart(instance_name(cluster, i) + ": KV in use", "GiB");
  c.width = kSmallWidth;
  c.height = kSmallHeight;
  c.series.push_back(gauge_series("in use", s, &SeriesBucket::kv_used_max,
                                  &SeriesBucket::kv_used_last, kBytesPerGiB));
  const double cap = static_cast<double>(info.kv_capacity_bytes) / kBytesPerGiB;
  if (cap > 0) c.series.push_back({"its pool", {0.0, end_of(c)}, {cap, cap}, {}});
  return c;
}

ChartSpec instance_queue_chart(const RunSeries& cluster, size_t i) {
  const RunSeries& s = cluster.instance_series()[i];
  ChartSpec c = time_chart(instance_name(cluster, i) + ": requests", "requests");
  c.kind = ChartSpec::Kind::steps;
  c.width = kSmallWidth;
  c.height = kSmallHeight;
  c.series.push_back(
      gauge_series("running", s, &SeriesBucket::running_max, &SeriesBucket::running_last));
  c.series.push_back(
      gauge_series("waiting", s, &SeriesBucket::waiting_max, &SeriesBucket::waiting_last));
  return c;
}

ChartSpec instance_kv_spread_chart(const RunSeries& cluster) {
  return spread_chart(
      cluster,
      fmt::format("KV in use per instance, {} instances", cluster.instance_series().size()),
      "GiB per instance", &SeriesBucket::kv_used_max, &SeriesBucket::kv_used_last, kBytesPerGiB);
}

ChartSpec instance_waiting_spread_chart(const RunSeries& cluster) {
  ChartSpec c = spread_chart(
      cluster,
      fmt::format("Waiting requests per instance, {} instances", cluster.instance_series().size()),
      "requests per instance", &SeriesBucket::waiting_max, &SeriesBucket::waiting_last, 1.0);
  c.kind = ChartSpec::Kind::steps;
  return c;
}

std::vector<CaptionedChart> cluster_charts(const RunMetrics& m, const LabelledSeries& run) {
  const RunSeries& series = *run.series;
  const std::vector<LabelledSeries> runs = {run};
  const size_t n = series.instance_series().size();
  const std::string over = fmt::format("sum over {} instances", n);
  std::vector<CaptionedChart> out;

  // The cluster's totals.
  ChartSpec kv =
      time_chart(fmt::format("KV cache memory in use ({}, all their devices)", over), "GiB");
  kv.series.push_back(gauge_series("in use", series, &SeriesBucket::kv_used_max,
                                   &SeriesBucket::kv_used_last, kBytesPerGiB));
  double capacity = 0;
  for (const ClusterInstanceInfo& i : series.cluster_instances())
    capacity += static_cast<double>(i.kv_capacity_bytes);
  if (capacity > 0)
    kv.series.push_back({"capacity of the pools",
                         {0.0, end_of(kv)},
                         {capacity / kBytesPerGiB, capacity / kBytesPerGiB},
                         {}});
  out.push_back({kv, "KV memory in use in all the instances' pools (peak within each interval)"});
  ChartSpec queue = queue_chart(runs);
  queue.title = fmt::format("Queue length, {} (peak within each interval)", over);
  out.push_back({queue, "Running / waiting requests in the whole cluster"});
  ChartSpec batch = batch_size_chart(runs);
  batch.title = "Batch size (mean sequences per step, over every instance's steps)";
  out.push_back({batch, "Sequences per step"});

  // The instances side by side.
  if (n <= kSmallMultiples) {
    for (size_t i = 0; i < n; ++i)
      out.push_back({instance_kv_chart(series, i),
                     fmt::format("Instance {}: KV in use against its pool", i)});
    for (size_t i = 0; i < n; ++i)
      out.push_back({instance_queue_chart(series, i),
                     fmt::format("Instance {}: running / waiting requests", i)});
  } else {
    out.push_back({instance_kv_spread_chart(series),
                   "KV in use per instance: the most and least loaded instance at each time, "
                   "and the mean"});
    out.push_back({instance_waiting_spread_chart(series),
                   "Waiting requests per instance: the most and least loaded instance at each "
                   "time, and the mean"});
  }

  // Between the instances and below HBM.
  const ClusterMetrics* cm = m.find<ClusterMetrics>();
  if (cm != nullptr && cm->transfer.requests > 0) {
    ChartSpec t = time_chart(
        "KV transfers in flight, prefill to decode (peak within each interval)", "transfers");
    t.kind = ChartSpec::Kind::steps;
    t.series.push_back(gauge_series("in flight", series, &SeriesBucket::transfers_max,
                                    &SeriesBucket::transfers_last));
    out.push_back({t, "KV transfers between instances (queued on the link or crossing it)"});
  }
  ChartSpec below = time_chart("Blocks held below HBM", "blocks");
  const ChartSeries tiers =
      gauge_series("the instances' own tiers", series, &SeriesBucket::tier_blocks_max,
                   &SeriesBucket::tier_blocks_last);
  if (std::any_of(tiers.y.begin(), tiers.y.end(), [](double y) { return y > 0; }))
    below.series.push_back(tiers);
  if (series.has_pool())
    below.series.push_back(gauge_series("the global pool", series, &SeriesBucket::pool_blocks_max,
                                        &SeriesBucket::pool_blocks_last));
  if (chart_has_signal(below))
    out.push_back({below, "KV blocks in each instance's tiers (summed) and in the shared pool"});

  if (cm != nullptr && !cm->per_instance.empty()) {
    std::vector<std::pair<std::string, double>> bars;
    for (size_t i = 0; i < cm->per_instance.size(); ++i)
      bars.emplace_back(std::to_string(i), static_cast<double>(cm->per_instance[i].arrived));
    ChartSpec load = bar_chart("Requests routed to each instance", "requests", bars);
    load.x_label = "instance";
    load.width = std::max(load.width, static_cast<int>(14 * bars.size()));
    out.push_back({load, fmt::format("Requests per instance (load imbalance {:.2f}: the busiest "
                                     "front instance over the mean)",
                                     cm->load_imbalance)});
  }

  // What the requests saw, as for one instance.
  const ServingPoolMetrics& pool = m.parts.get_or_zero<ServingPoolMetrics>();
  if (pool.prefix_hit_rate > 0)
    out.push_back(
        {prefix_hit_rate_chart(runs),
         "Prefix-cache hits over time (prompts the mixed or prefill instances looked up)"});
  if (enough_for_cdf(runs)) {
    out.push_back({ttft_cdf_chart(runs), "TTFT of completed requests"});
    out.push_back({tpot_cdf_chart(runs), "TPOT of completed requests"});
  } else if (series.completed() > 0) {
    out.push_back(
        {per_request_latency_chart(series), "TTFT and end-to-end latency of each request"});
  }
  return out;
}

}  // namespace kvsim
