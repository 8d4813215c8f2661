#include "reports/run_series.hpp"

#include <algorithm>
#include <cmath>

namespace kvsim {

// ---------------------------------------------------------------------------
// BoundedDistribution: log buckets 1% wide from 1 us to ~10^7 ms.

namespace {
constexpr double kLowestMs = 1e-3;
constexpr double kGrowth = 1.01;
constexpr size_t kLogBuckets = 2400;
}  // namespace

size_t BoundedDistribution::bucket_of(double value) {
  if (!(value > kLowestMs)) return 0;
  const auto i = static_cast<size_t>(std::log(value / kLowestMs) / std::log(kGrowth)) + 1;
  return std::min(i, kLogBuckets - 1);
}

double BoundedDistribution::bucket_upper(size_t index) {
  return kLowestMs * std::pow(kGrowth, static_cast<double>(index));
}

void BoundedDistribution::add(double value) {
  ++count_;
  if (buckets_.empty()) {
    exact_.push_back(value);
    if (exact_.size() <= kExact) return;
    buckets_.assign(kLogBuckets, 0);
    for (const double v : exact_) ++buckets_[bucket_of(v)];
    exact_.clear();
    exact_.shrink_to_fit();
    return;
  }
  ++buckets_[bucket_of(value)];
}

void BoundedDistribution::cdf(std::vector<double>& x, std::vector<double>& y,
                              size_t max_points) const {
  x.clear();
  y.clear();
  if (count_ == 0) return;
  const double n = static_cast<double>(count_);
  std::vector<double> px, py;
  if (buckets_.empty()) {
    std::vector<double> sorted = exact_;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      px.push_back(sorted[i]);
      py.push_back(static_cast<double>(i + 1) / n);
    }
  } else {
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      if (buckets_[i] == 0) continue;
      seen += buckets_[i];
      px.push_back(bucket_upper(i));
      py.push_back(static_cast<double>(seen) / n);
    }
  }
  const size_t per = std::max<size_t>(1, max_points);
  const size_t stride = std::max<size_t>(1, (px.size() + per - 1) / per);
  for (size_t i = 0; i < px.size(); i += stride) {
    x.push_back(px[i]);
    y.push_back(py[i]);
  }
  if (y.back() < 1.0) {
    x.push_back(px.back());
    y.push_back(1.0);
  }
}

// ---------------------------------------------------------------------------
// SeriesBucket

void SeriesBucket::merge(const SeriesBucket& later) {
  if (later.any && !any) {
    // The gauges start with the later rows; the sums below still add up.
    any = true;
    kv_used_max = later.kv_used_max;
    running_max = later.running_max;
    waiting_max = later.waiting_max;
    swapped_max = later.swapped_max;
    tokens_held_max = later.tokens_held_max;
    transfers_max = later.transfers_max;
    tier_blocks_max = later.tier_blocks_max;
    pool_blocks_max = later.pool_blocks_max;
  } else if (later.any) {
    kv_used_max = std::max(kv_used_max, later.kv_used_max);
    running_max = std::max(running_max, later.running_max);
    waiting_max = std::max(waiting_max, later.waiting_max);
    swapped_max = std::max(swapped_max, later.swapped_max);
    tokens_held_max = std::max(tokens_held_max, later.tokens_held_max);
    transfers_max = std::max(transfers_max, later.transfers_max);
    tier_blocks_max = std::max(tier_blocks_max, later.tier_blocks_max);
    pool_blocks_max = std::max(pool_blocks_max, later.pool_blocks_max);
  }
  if (later.any) {
    kv_used_last = later.kv_used_last;
    running_last = later.running_last;
    waiting_last = later.waiting_last;
    swapped_last = later.swapped_last;
    tokens_held_last = later.tokens_held_last;
    transfers_last = later.transfers_last;
    tier_blocks_last = later.tier_blocks_last;
    pool_blocks_last = later.pool_blocks_last;
    prefix_query_last = later.prefix_query_last;
    prefix_hit_last = later.prefix_hit_last;
  }
  step_tokens += later.step_tokens;
  step_ns += later.step_ns;
  steps += later.steps;
  step_seqs += later.step_seqs;
  bytes_moved += later.bytes_moved;
  pointer_updates += later.pointer_updates;
  transfer_bytes += later.transfer_bytes;
  vtcm_wait_ns += later.vtcm_wait_ns;
}

// ---------------------------------------------------------------------------
// RunSeries

SeriesBucket& RunSeries::bucket_at(TimeNs t) {
  t = std::max<TimeNs>(t, 0);
  // Halve the resolution until the time fits: pairs of buckets merge.
  while (static_cast<size_t>(t / width_) >= max_buckets_) {
    std::vector<SeriesBucket> merged((buckets_.size() + 1) / 2);
    for (size_t i = 0; i < buckets_.size(); ++i) merged[i / 2].merge(buckets_[i]);
    buckets_ = std::move(merged);
    width_ *= 2;
  }
  const auto index = static_cast<size_t>(t / width_);
  if (buckets_.size() <= index) buckets_.resize(index + 1);
  return buckets_[index];
}

namespace {
// One timeline row as a bucket of its own, to merge into the bucket it falls in.
SeriesBucket row_bucket(const TimelineRow& r) {
  SeriesBucket row;
  row.any = true;
  row.kv_used_max = row.kv_used_last = static_cast<double>(r.kv_used_bytes);
  row.running_max = row.running_last = static_cast<double>(r.running);
  row.waiting_max = row.waiting_last = static_cast<double>(r.waiting);
  row.swapped_max = row.swapped_last = static_cast<double>(r.swapped);
  row.tokens_held_max = row.tokens_held_last = static_cast<double>(r.tokens_held);
  row.step_tokens = static_cast<double>(r.step_tokens);
  row.step_ns = static_cast<double>(r.step_latency);
  row.steps = static_cast<double>(r.steps);
  row.step_seqs = static_cast<double>(r.step_seqs);
  row.prefix_query_last = r.prefix_query_tokens;
  row.prefix_hit_last = r.prefix_hit_tokens;
  return row;
}
}  // namespace

void RunSeries::timeline(const TimelineRow& r) {
  bucket_at(r.time).merge(row_bucket(r));
}

void RunSeries::request(const RequestRow& r) {
  if (r.status != "completed") return;
  const double ttft = static_cast<double>(r.first_token - r.arrival) / 1e6;
  ttft_.add(ttft);
  if (r.output_tokens > 1)
    tpot_.add(static_cast<double>((r.finished - r.first_token) / (r.output_tokens - 1)) / 1e6);
  if (points_.size() < kMaxRequestPoints)
    points_.push_back({static_cast<double>(r.arrival) / 1e9, ttft,
                       static_cast<double>(r.finished - r.arrival) / 1e6, r.turn});
}

void RunSeries::span(const SpanRow& r) {
  // Every serving step is already in the buckets; tier loads are part of
  // their steps' time; link transfers are the links' table (kv_movement).
  if (r.track == "step" || r.track == "tier_load" || r.track == "link") return;
  SeriesBucket& b = bucket_at(r.start);
  if (r.track == "kv_update") {
    b.bytes_moved += static_cast<double>(r.bytes);
    b.pointer_updates += static_cast<double>(r.pointer_updates);
  } else if (r.track == "kv_transfer") {
    b.transfer_bytes += static_cast<double>(r.bytes);
  } else if (r.track == "vtcm_wait") {
    b.vtcm_wait_ns += static_cast<double>(r.duration);
  }
  if (spans_.size() >= kMaxSpans) {
    ++spans_dropped_;
    return;
  }
  spans_.push_back({std::string(r.track), std::string(r.name), r.turn,
                    static_cast<double>(r.start) / 1e9,
                    static_cast<double>(r.start + r.duration) / 1e9, r.variant});
}

void RunSeries::cluster_started(const std::vector<ClusterInstanceInfo>& instances) {
  infos_ = instances;
  const size_t each =
      std::clamp<size_t>(kMaxBuckets * 16 / std::max<size_t>(instances.size(), 1), 32, kMaxBuckets);
  instances_.assign(instances.size(), RunSeries());
  for (RunSeries& s : instances_) s.max_buckets_ = each;
}

void RunSeries::fold_cluster_row(const ClusterTimelineRow& r) {
  SeriesBucket row = row_bucket(r.state);
  row.transfers_max = row.transfers_last = static_cast<double>(r.transfers_in_flight);
  row.tier_blocks_max = row.tier_blocks_last = static_cast<double>(r.tier_blocks);
  row.pool_blocks_max = row.pool_blocks_last =
      static_cast<double>(std::max<int64_t>(r.pool_blocks, 0));
  bucket_at(r.state.time).merge(row);
}

void RunSeries::cluster_timeline(const ClusterTimelineRow& r) {
  if (r.instance < 0) {
    has_pool_ = has_pool_ || r.pool_blocks >= 0;
    fold_cluster_row(r);
  } else if (static_cast<size_t>(r.instance) < instances_.size()) {
    instances_[static_cast<size_t>(r.instance)].fold_cluster_row(r);
  }
}

void RunSeries::instance_span(int32_t instance, const SpanRow& r) {
  // Steps are in the rows; what crossed a link (a prefill instance's KV to
  // a decode instance, swaps) is summed where it started.
  if (r.track != "kv_transfer" || instance < 0 ||
      static_cast<size_t>(instance) >= instances_.size())
    return;
  instances_[static_cast<size_t>(instance)].bucket_at(r.start).transfer_bytes +=
      static_cast<double>(r.bytes);
  bucket_at(r.start).transfer_bytes += static_cast<double>(r.bytes);
}

bool RunSeries::has_spans_of(const std::string& track) const {
  return std::any_of(spans_.begin(), spans_.end(),
                     [&](const KeptSpan& s) { return s.track == track; });
}

// ---------------------------------------------------------------------------

FanOutRunSink::FanOutRunSink(std::vector<RunSink*> sinks) : sinks_(std::move(sinks)) {
  for (RunSink* s : sinks_) wants_spans_ = wants_spans_ || s->wants_spans();
}

void FanOutRunSink::request(const RequestRow& row) {
  for (RunSink* s : sinks_) s->request(row);
}

void FanOutRunSink::timeline(const TimelineRow& row) {
  for (RunSink* s : sinks_) s->timeline(row);
}

void FanOutRunSink::span(const SpanRow& row) {
  for (RunSink* s : sinks_)
    if (s->wants_spans()) s->span(row);
}

void FanOutRunSink::cluster_started(const std::vector<ClusterInstanceInfo>& instances) {
  for (RunSink* s : sinks_) s->cluster_started(instances);
}

void FanOutRunSink::cluster_timeline(const ClusterTimelineRow& row) {
  for (RunSink* s : sinks_) s->cluster_timeline(row);
}

void FanOutRunSink::instance_span(int32_t instance, const SpanRow& row) {
  for (RunSink* s : sinks_)
    if (s->wants_spans()) s->instance_span(instance, row);
}

}  // namespace kvsim
