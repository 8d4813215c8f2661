#pragma once
// A cluster's timeline (timeline.csv, the report's per-instance charts, the
// trace's per-instance counters): every instance's own timeline rows folded
// into buckets of output.timeline_interval on the one clock the instances
// share. When the clock enters a later bucket, the bucket that ends is
// written as one row per instance and one for the cluster, all at the
// bucket's last observation, so the file pivots on (time, instance) with no
// gap: an instance that wrote nothing in the bucket repeats its state with
// no steps. Memory holds one state per instance, whatever the run's length;
// nothing is scheduled on the clock, so the run is the same with or without
// a timeline.
#include <cstdint>
#include <functional>
#include <vector>

#include "base/units.hpp"
#include "sim/engine/run_sink.hpp"

namespace kvsim {

class ClusterTimeline {
 public:
  struct Instance {
    int64_t devices = 1;             // tp x pp
    Bytes instance_block_bytes = 0;  // one block, all of the instance's devices
    // Its prefix lookups count towards the cluster's hit rate (a decode
    // instance looks up prompts whose KV came over the link).
    bool counts_prefix = true;
  };
  // Blocks an instance holds in its own tiers below HBM, at a row's time.
  using TierProbe = std::function<int64_t(size_t instance)>;
  // Blocks in the cluster's global pool (-1 without one).
  using PoolProbe = std::function<int64_t()>;

  ClusterTimeline(TimeNs interval, std::vector<Instance> instances, RunSink& sink, TierProbe tiers,
                  PoolProbe pool);

  // An instance's own row (EngineShell::write_timeline): its state at
  // row.time and the steps since its previous row.
  void instance_row(size_t instance, const TimelineRow& row);
  // A KV transfer leaves `from` for `to` now, or arrives now. A row counts
  // the most in flight at any time of its interval: most transfers are far
  // shorter than the interval and would fall between the rows.
  void transfer_started(size_t from, size_t to, Bytes bytes, TimeNs now);
  void transfer_arrived(size_t from, size_t to, Bytes bytes, TimeNs now);
  // The run ended: writes the last bucket.
  void finish();

 private:
  struct State {
    TimelineRow row;                            // the last row, step columns summed over the bucket
    int64_t transfers = 0, transfers_peak = 0;  // in flight now, and the bucket's most
    Bytes transfer_bytes = 0, transfer_bytes_peak = 0;
  };
  // Moves to the bucket of `now`, writing the one that ends.
  void advance(TimeNs now);
  void write_bucket();

  TimeNs interval_;
  std::vector<Instance> instances_;
  RunSink& sink_;
  TierProbe tiers_;
  PoolProbe pool_;
  std::vector<State> states_;
  int64_t bucket_ = -1;   // the bucket rows are gathered in; -1 before the first
  TimeNs last_time_ = 0;  // its last observation
  int64_t transfers_ = 0, transfers_peak_ = 0;
  Bytes transfer_bytes_ = 0, transfer_bytes_peak_ = 0;
};

}  // namespace kvsim
