#pragma once
// What a run's charts need, gathered while the run streams and bounded in
// memory whatever the run's length (SPEC 9 charts; seed 002 turn timeline):
// the timeline folded into at most kMaxBuckets time buckets whose width
// doubles as the run grows (a chart is no wider than that), latency
// distributions in fixed log buckets (exact values while there are few), and
// the first spans of the run (steps, passes, KV updates, VTCM waits) for a
// turn timeline. The reports never read the CSV files back.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/run_sink.hpp"

namespace kvsim {

// A distribution of non-negative values (milliseconds) in fixed memory:
// exact while at most kExact values came, then log buckets 1% wide.
class BoundedDistribution {
 public:
  static constexpr size_t kExact = 4096;
  void add(double value);
  uint64_t count() const { return count_; }
  // Points of the empirical CDF, at most `max_points` (the last is at 1).
  void cdf(std::vector<double>& x, std::vector<double>& y, size_t max_points = 500) const;

 private:
  static size_t bucket_of(double value);
  static double bucket_upper(size_t index);
  std::vector<double> exact_;
  std::vector<uint64_t> buckets_;  // used once exact_ overflowed
  uint64_t count_ = 0;
};

// One bucket of the timeline: gauges keep their maximum and last value,
// work is summed.
struct SeriesBucket {
  bool any = false;  // a timeline row fell here
  double kv_used_max = 0, kv_used_last = 0;
  double running_max = 0, running_last = 0;
  double waiting_max = 0, waiting_last = 0;
  double swapped_max = 0, swapped_last = 0;
  double tokens_held_max = 0, tokens_held_last = 0;
  double step_tokens = 0, step_ns = 0, steps = 0, step_seqs = 0;
  int64_t prefix_query_last = 0, prefix_hit_last = 0;  // cumulative at the last row
  // From spans.
  double bytes_moved = 0, pointer_updates = 0, transfer_bytes = 0, vtcm_wait_ns = 0;
  // A cluster's timeline: KV transfers in flight, blocks in the instance's
  // own tiers below HBM, and in the global pool (the cluster's series).
  double transfers_max = 0, transfers_last = 0;
  double tier_blocks_max = 0, tier_blocks_last = 0;
  double pool_blocks_max = 0, pool_blocks_last = 0;

  void merge(const SeriesBucket& later);
};

// A request's latencies, for the per-request chart of runs with few requests.
struct RequestPoint {
  double arrival_s = 0, ttft_ms = 0, e2e_ms = 0;
  int32_t turn = 0;
};

class RunSeries final : public RunSink {
 public:
  static constexpr size_t kMaxBuckets = 512;
  static constexpr size_t kMaxSpans = 4000;
  static constexpr size_t kMaxRequestPoints = 256;

  void request(const RequestRow& row) override;
  void timeline(const TimelineRow& row) override;
  bool wants_spans() const override { return true; }
  void span(const SpanRow& row) override;
  // A cluster run: the cluster's rows fill this series' buckets (so the
  // one-instance charts show the cluster's totals), each instance's rows a
  // series of its own, bounded alike (fewer buckets each when there are
  // many instances: at most 16 x kMaxBuckets buckets together, 32 each).
  void cluster_started(const std::vector<ClusterInstanceInfo>& instances) override;
  void cluster_timeline(const ClusterTimelineRow& row) override;
  void instance_span(int32_t instance, const SpanRow& row) override;
  bool is_cluster() const { return !instances_.empty(); }
  const std::vector<ClusterInstanceInfo>& cluster_instances() const { return infos_; }
  const std::vector<RunSeries>& instance_series() const { return instances_; }
  // Whether the cluster had a global pool (its rows carry the pool's blocks).
  bool has_pool() const { return has_pool_; }

  double bucket_width_s() const { return static_cast<double>(width_) / 1e9; }
  const std::vector<SeriesBucket>& buckets() const { return buckets_; }
  const BoundedDistribution& ttft_ms() const { return ttft_; }
  const BoundedDistribution& tpot_ms() const { return tpot_; }
  const std::vector<RequestPoint>& request_points() const { return points_; }
  uint64_t completed() const { return ttft_.count(); }

  struct KeptSpan {
    std::string track, name;
    int32_t turn = -1;
    double start_s = 0, end_s = 0;
    int64_t variant = 0;
  };
  // The run's first spans that are not steps (a serving run has one per
  // step; its steps are in the buckets), at most kMaxSpans.
  const std::vector<KeptSpan>& spans() const { return spans_; }
  uint64_t spans_dropped() const { return spans_dropped_; }
  bool has_spans_of(const std::string& track) const;

 private:
  SeriesBucket& bucket_at(TimeNs t);
  void fold_cluster_row(const ClusterTimelineRow& row);

  size_t max_buckets_ = kMaxBuckets;
  TimeNs width_ = 1'000'000;  // 1 ms, doubled as needed
  std::vector<SeriesBucket> buckets_;
  BoundedDistribution ttft_, tpot_;
  std::vector<RequestPoint> points_;
  std::vector<KeptSpan> spans_;
  uint64_t spans_dropped_ = 0;
  std::vector<ClusterInstanceInfo> infos_;
  std::vector<RunSeries> instances_;  // a cluster's, one per instance
  bool has_pool_ = false;
};

// Forwards every row to several sinks (CSV files, chart series, a trace).
class FanOutRunSink final : public RunSink {
 public:
  explicit FanOutRunSink(std::vector<RunSink*> sinks);
  void request(const RequestRow& row) override;
  void timeline(const TimelineRow& row) override;
  bool wants_spans() const override { return wants_spans_; }
  void span(const SpanRow& row) override;
  void cluster_started(const std::vector<ClusterInstanceInfo>& instances) override;
  void cluster_timeline(const ClusterTimelineRow& row) override;
  void instance_span(int32_t instance, const SpanRow& row) override;

 private:
  std::vector<RunSink*> sinks_;
  bool wants_spans_ = false;
};

}  // namespace kvsim
