#pragma once
// A cluster on one clock (sim/cluster/cluster_spec.hpp): one request source
// and its ArrivalPump, a router in front of the mixed or prefill instances,
// a second router in front of the decode instances, the KV links between
// them, and one engine per instance built by the engine registry on the
// shared Simulator (DESIGN, "a router and N instances are just more
// components"). The engines are the one-instance engines, unchanged: the
// cluster sees each one through the EngineUplink and RunSink it hands it.
//
// What instances share: the clock, the request source and, with
// `cluster.global_pool`, one KvTier built here and handed to every mixed and
// prefill instance's engine before the run (their chains' `global` tier).
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/cluster/cluster_links.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/cluster/cluster_timeline.hpp"
#include "sim/cluster/kv_link.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/engine/engine_shell.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/serve/data_parallel_group.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

class ClusterRun {
 public:
  // Builds one engine of an instance group on the cluster's clock (the
  // assembly's engine registry: sim/scenario/engine_registry.hpp).
  using MakeEngine = std::unique_ptr<InferenceEngine> (*)(const InstanceSpec& s, Simulator& sim,
                                                          EngineUplink& uplink, RunSink* sink);
  // `scenario` is the scenario's own instance (its workload feeds the
  // router); `cluster` its groups. `sink` may be null (rows are dropped).
  // The cluster writes one requests.csv row per request, as one engine does,
  // and gives the sink its instances (cluster_started), its timeline
  // (ClusterTimeline) and each instance's spans, with the KV transfers
  // between instances as spans of the sending instance.
  ClusterRun(const InstanceSpec& scenario, const ClusterSpec& cluster, MakeEngine make_engine,
             RunSink* sink);
  ~ClusterRun();
  ClusterRun(const ClusterRun&) = delete;
  ClusterRun& operator=(const ClusterRun&) = delete;

  // Runs the workload to the end and returns the cluster's metrics (the
  // usual keys over every instance, plus cluster.*). Throws std::logic_error
  // when a request is left anywhere or an instance's blocks are not all back
  // in its pool.
  RunMetrics run();

  // The memory plan of the first instance (for the report).
  PoolSizing memory_plan() const;
  // Where the run stands, summed over the instances (each reports every
  // few thousand of its steps). Before run().
  void set_progress(std::function<void(const RunProgress&)> callback);
  size_t instances() const { return instances_.size(); }
  const InferenceEngine& engine(size_t i) const;
  // The global pool every mixed and prefill instance shares; null without.
  const KvTier* global_pool() const { return pool_.get(); }
  // The links the instances share (cluster.links).
  const ClusterLinks& links() const { return *links_; }
  // The data-parallel groups (parallel.data with a MoE model), in order.
  size_t data_parallel_groups() const { return dp_groups_.size(); }
  const DataParallelGroup& data_parallel_group(size_t i) const { return *dp_groups_[i]; }

 private:
  class InstanceUplink;
  struct Handoff;  // a prefilled request on its way to a decode instance
  // One instance's KV events, passed to the prefix index of the router that
  // routes among its group, stamped with the clock.
  class EventTap final : public KvEventListener {
   public:
    void on_block_stored(const BlockHash& hash) override {
      index->on_event(member, KvEventKind::stored, hash, sim->now());
    }
    void on_block_removed(const BlockHash& hash) override {
      index->on_event(member, KvEventKind::removed, hash, sim->now());
    }
    PrefixIndex* index = nullptr;
    const Simulator* sim = nullptr;
    size_t member = 0;  // its position among the router's instances
  };

  // An instance's request rows stop here: the cluster writes one row per
  // request itself. The row of a leaving request is kept for the uplink call
  // that follows it (EngineShell writes the row, then tells the uplink). Its
  // timeline rows go to the cluster's timeline, its spans to the sink
  // tagged with the instance.
  class InstanceTap final : public RunSink {
   public:
    void request(const RequestRow& row) override { last = row; }
    void timeline(const TimelineRow& row) override {
      if (run->timeline_) run->timeline_->instance_row(index, row);
    }
    bool wants_spans() const override { return spans; }
    void span(const SpanRow& row) override {
      run->sink_->instance_span(static_cast<int32_t>(index), row);
    }
    RequestRow last;
    ClusterRun* run = nullptr;
    size_t index = 0;
    bool spans = false;
  };

  struct Instance {
    size_t index = 0;
    const InstanceGroup* group = nullptr;
    InstanceTap tap;
    std::unique_ptr<InstanceUplink> uplink;
    std::unique_ptr<InferenceEngine> engine;
    int64_t outstanding_requests = 0, outstanding_tokens = 0;
    int64_t outstanding_blocks = 0;          // each request's tokens rounded up to blocks
    int64_t block_size = 0, num_blocks = 0;  // of its pool (0 without one)
    EventTap events;
    bool touched = false;  // received a request at the current instant
    // Its device's port of the transfer link, all ranks together (prefill):
    // the transfers it sends share it.
    std::unique_ptr<SharedLink> port;
    int64_t running = 0, waiting = 0;  // at its last progress report
    ~Instance();
  };

  void submit(Request request);
  void arrivals_done();
  void on_left(Instance& from, const Request& request, const RequestRow& row);
  void start_transfer(Instance& from, const Request& request, const RequestRow& row);
  void deliver(uint64_t id);
  size_t route(RoutingPolicy& router, const std::vector<size_t>& members, const Request& request);
  // Before the run: the router's prefix index learns of its members, and
  // hears their KV events when it asks for them.
  void attach_index(RoutingPolicy& router, const std::vector<size_t>& members);
  int64_t request_blocks(const Instance& inst, const Request& request) const;
  void check_conserved() const;
  void build_timeline();
  void trace_links();
  void report_progress();
  RunMetrics collect(std::vector<RunMetrics> per_instance);
  void collect_links(const std::vector<RunMetrics>& per, RunMetrics& m) const;
  void collect_speculative(const std::vector<RunMetrics>& per, RunMetrics& m) const;
  void collect_tiers(const std::vector<RunMetrics>& per, int64_t query_tokens, int64_t hit_tokens,
                     RunMetrics& m) const;

  const InstanceSpec& scenario_;
  const ClusterSpec& cluster_;
  RunSink* sink_;  // may be null
  Simulator sim_;
  std::unique_ptr<ClusterLinks> links_;
  std::unique_ptr<RequestSource> source_;
  ArrivalPump pump_;
  EngineShell shell_;  // the cluster's own request accounting (rows, latencies)
  // Data-parallel groups of MoE ranks (parallel.data), each stepping its
  // ranks together; declared before the instances, whose engines use them.
  std::vector<std::unique_ptr<DataParallelGroup>> dp_groups_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<size_t> front_;   // mixed or prefill instances
  std::vector<size_t> decode_;  // decode instances
  std::unique_ptr<RoutingPolicy> front_router_, decode_router_;
  std::shared_ptr<KvTier> pool_;               // cluster.global_pool, shared by the front instances
  std::vector<InstanceView> views_;            // scratch, one per member routed among
  std::unique_ptr<ClusterTimeline> timeline_;  // with a sink only
  std::function<void(const RunProgress&)> progress_;

  // Requests between the prefill instance and the decode instance, and the
  // full output of each request at a prefill instance (which is asked for
  // its first token only): bounded by the requests in flight.
  std::unordered_map<uint64_t, std::vector<int32_t>> outputs_;
  std::unordered_map<uint64_t, Handoff> handoffs_;
  int64_t transfers_ = 0;
  Bytes transfer_bytes_ = 0;
  TimeNs transfer_time_ = 0, transfer_max_ = 0;
};

}  // namespace kvsim
