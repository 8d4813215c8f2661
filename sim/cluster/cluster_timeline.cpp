#include "sim/cluster/cluster_timeline.hpp"

#include <algorithm>
#include <utility>

namespace kvsim {

ClusterTimeline::ClusterTimeline(TimeNs interval, std::vector<Instance> instances, RunSink& sink,
                                 TierProbe tiers, PoolProbe pool)
    : interval_(interval > 0 ? interval : 1),
      instances_(std::move(instances)),
      sink_(sink),
      tiers_(std::move(tiers)),
      pool_(std::move(pool)),
      states_(instances_.size()) {}

void ClusterTimeline::advance(TimeNs now) {
  const int64_t bucket = now / interval_;
  if (bucket_ >= 0 && bucket > bucket_) write_bucket();
  bucket_ = bucket;
  last_time_ = now;
}

void ClusterTimeline::instance_row(size_t instance, const TimelineRow& row) {
  advance(row.time);
  TimelineRow& s = states_[instance].row;
  const TimelineRow steps = s;  // the bucket's steps so far
  s = row;
  s.step_tokens += steps.step_tokens;
  s.step_latency += steps.step_latency;
  s.steps += steps.steps;
  s.step_seqs += steps.step_seqs;
}

void ClusterTimeline::transfer_started(size_t from, size_t to, Bytes bytes, TimeNs now) {
  advance(now);
  for (const size_t i : {from, to}) {
    State& st = states_[i];
    ++st.transfers;
    st.transfer_bytes += bytes;
    st.transfers_peak = std::max(st.transfers_peak, st.transfers);
    st.transfer_bytes_peak = std::max(st.transfer_bytes_peak, st.transfer_bytes);
  }
  ++transfers_;
  transfer_bytes_ += bytes;
  transfers_peak_ = std::max(transfers_peak_, transfers_);
  transfer_bytes_peak_ = std::max(transfer_bytes_peak_, transfer_bytes_);
}

void ClusterTimeline::transfer_arrived(size_t from, size_t to, Bytes bytes, TimeNs now) {
  advance(now);
  for (const size_t i : {from, to}) {
    --states_[i].transfers;
    states_[i].transfer_bytes -= bytes;
  }
  --transfers_;
  transfer_bytes_ -= bytes;
}

void ClusterTimeline::finish() {
  if (bucket_ >= 0) write_bucket();
  bucket_ = -1;
}

void ClusterTimeline::write_bucket() {
  ClusterTimelineRow total;
  total.state.time = last_time_;
  for (size_t i = 0; i < states_.size(); ++i) {
    State& st = states_[i];
    const Instance& inst = instances_[i];
    ClusterTimelineRow out;
    out.instance = static_cast<int32_t>(i);
    out.state = st.row;
    out.state.time = last_time_;
    // The engine counts one device's share of each block; the file counts
    // the instance's, so that its rows add up to the cluster's.
    out.state.kv_used_bytes = st.row.pool_of_blocks ? st.row.blocks_used * inst.instance_block_bytes
                                                    : st.row.kv_used_bytes * inst.devices;
    out.transfers_in_flight = st.transfers_peak;
    out.transfer_bytes_in_flight = st.transfer_bytes_peak;
    st.transfers_peak = st.transfers;
    st.transfer_bytes_peak = st.transfer_bytes;
    out.tier_blocks = tiers_ ? tiers_(i) : 0;
    out.pool_blocks = -1;
    sink_.cluster_timeline(out);

    TimelineRow& t = total.state;
    t.running += out.state.running;
    t.waiting += out.state.waiting;
    t.swapped += out.state.swapped;
    t.blocks_used += out.state.blocks_used;
    t.kv_used_bytes += out.state.kv_used_bytes;
    t.tokens_held += out.state.tokens_held;
    t.step_tokens += out.state.step_tokens;
    t.step_latency += out.state.step_latency;
    t.steps += out.state.steps;
    t.step_seqs += out.state.step_seqs;
    if (inst.counts_prefix) {
      t.prefix_query_tokens += out.state.prefix_query_tokens;
      t.prefix_hit_tokens += out.state.prefix_hit_tokens;
    }
    t.pool_of_blocks = t.pool_of_blocks && out.state.pool_of_blocks;
    total.tier_blocks += out.tier_blocks;
    // The bucket's steps are written: the next bucket sums its own.
    st.row.step_tokens = 0;
    st.row.step_latency = 0;
    st.row.steps = 0;
    st.row.step_seqs = 0;
  }
  total.transfers_in_flight = transfers_peak_;
  total.transfer_bytes_in_flight = transfer_bytes_peak_;
  transfers_peak_ = transfers_;
  transfer_bytes_peak_ = transfer_bytes_;
  total.pool_blocks = pool_ ? pool_() : -1;
  sink_.cluster_timeline(total);
}

}  // namespace kvsim
