#pragma once
// Where a run streams its per-request and timeline rows while it runs, so
// memory does not grow with the number of finished requests. reports/ writes
// them to CSV; tests and benchmarks use NullRunSink.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

struct RequestRow {
  uint64_t id = 0;
  std::string_view status;  // completed | rejected
  TimeNs arrival = 0;
  TimeNs first_token = -1;
  TimeNs finished = -1;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;
  int32_t preemptions = 0;
  uint64_t session = 0;
  int32_t turn = 0;
  // When the request's work began (first scheduled, or its dialog turn was
  // granted VTCM); -1 when it never ran. Its queue phase ends here.
  TimeNs started = -1;
  // Of its time from `started` on, what its engine's steps spent waiting
  // for KV loads from tiers below HBM, stores into them and the store's
  // lookups beyond their compute (0 without tiers).
  TimeNs kv_wait = 0;
};

struct TimelineRow {
  TimeNs time = 0;
  int64_t running = 0, waiting = 0, swapped = 0;
  int64_t blocks_used = 0;
  Bytes kv_used_bytes = 0;
  int64_t tokens_held = 0;
  int64_t step_tokens = 0;  // tokens of the steps launched since the previous row
  TimeNs step_latency = 0;  // their summed duration
  int64_t steps = 0;        // how many steps that was (filled by the engine shell)
  int64_t step_seqs = 0;    // sequences in the step launched now (summed like step_tokens)
  // Prefix-cache lookups so far (cumulative tokens asked and found), for a
  // hit rate over time.
  int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
  // false for an engine without a block pool (the dialog engine's buffers):
  // swapped and blocks_used mean nothing there and are left out of its file.
  bool pool_of_blocks = true;
};

// A span of simulated time worth showing on its own (a trace event, a turn
// timeline bar): a step or pass, a KV update or transfer, a wait for VTCM.
// Engines emit them only to a sink that wants_spans().
struct SpanRow {
  // "step", "pass", "kv_update", "kv_transfer" (swap; between a cluster's
  // instances), "tier_load" (a step's reads from one tier below HBM, named
  // by the tier), "vtcm_wait", "link" (one transfer over a shared link,
  // named by the link: sim/core/shared_link.hpp)
  std::string_view track;
  std::string_view name;  // "step", "prefill", "decode", "swap", ...
  uint64_t id = 0;        // step or pass number, or the request id
  int32_t turn = -1;      // dialog turn, -1 elsewhere
  TimeNs start = 0, duration = 0;
  int64_t tokens = 0;           // tokens computed
  int64_t seqs = 0;             // sequences in the batch
  int64_t variant = 0;          // Genie AR-n variant (0 elsewhere)
  Bytes bytes = 0;              // bytes moved / granted
  int64_t pointer_updates = 0;  // Genie KV update
  bool variant_switch = false;  // Genie KV update that changed the variant
  TimeNs delay = 0;             // a link's transfer: what sharing the link cost it
};

// A cluster's instance as the reports name it (sim/cluster/cluster_run.hpp).
struct ClusterInstanceInfo {
  std::string group, role;      // role: mixed | prefill | decode
  int64_t tp = 1, pp = 1;       // its devices: tp x pp
  Bytes kv_capacity_bytes = 0;  // its KV pool, all of its devices together
};

// A cluster run's timeline (sim/cluster/cluster_timeline.hpp): the
// instances' rows folded into output.timeline_interval buckets, then at each
// bucket's last observation one row per instance (instance 0, 1, ...) and
// one for the whole cluster (instance -1), all at the same time.
struct ClusterTimelineRow {
  int32_t instance = -1;  // -1: the cluster (sums over its instances)
  // The instance's last row in the bucket (time is the bucket's last
  // observation); kv_used_bytes is the instance's, all of its devices
  // together, and the step columns sum the bucket's steps.
  TimelineRow state;
  // KV transfers this instance sends or awaits (the cluster: each once), the
  // most in flight at once within the interval, and their bytes.
  int64_t transfers_in_flight = 0;
  Bytes transfer_bytes_in_flight = 0;
  int64_t tier_blocks = 0;  // blocks held in its own tiers below HBM (dram, ssd)
  int64_t pool_blocks = 0;  // the cluster's global pool (the cluster row; -1 elsewhere)
};

class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual void request(const RequestRow& row) = 0;
  virtual void timeline(const TimelineRow& row) = 0;
  // Spans cost the engine a little per step: only sinks that ask get them.
  virtual bool wants_spans() const { return false; }
  virtual void span(const SpanRow&) {}
  // A cluster run calls these instead of timeline() and span(): first
  // cluster_started() with its instances, then the rows of its timeline and
  // each instance's spans (with wants_spans()). One instance's run never
  // calls them.
  virtual void cluster_started(const std::vector<ClusterInstanceInfo>&) {}
  virtual void cluster_timeline(const ClusterTimelineRow&) {}
  virtual void instance_span(int32_t, const SpanRow&) {}
};

class NullRunSink final : public RunSink {
 public:
  void request(const RequestRow&) override {}
  void timeline(const TimelineRow&) override {}
};

}  // namespace kvsim
