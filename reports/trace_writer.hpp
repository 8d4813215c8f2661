#pragma once
// `kvsim run --trace FILE.json`: the run as Chrome trace-event JSON (the
// "JSON Array/Object Format" that ui.perfetto.dev and chrome://tracing
// load), streamed while the run goes:
//   - process "requests": each request an async span (arrival to finish)
//     with nested queue / prefill / decode phases, its token counts as args;
//     a rejected request an instant event;
//   - process "engine": threads "steps" (a serving step with its batch size
//     and tokens, or a dialog pass with its AR variant), "KV updates" (Genie
//     updates with bytes moved and pointer updates), "KV transfers" (swap)
//     and "VTCM" (waits for a grant); counters for the queue and KV in use;
//   - a cluster run: process "cluster" with the cluster's counters (queue,
//     KV in use, KV transfers in flight, blocks in tiers and the global
//     pool), then one process per instance ("instance 3: prefill (prefill,
//     TP 1)") with threads "steps", "KV transfers" (swaps, and the KV a
//     prefill instance sends to a decode instance), "tier loads" (a step's
//     reads from each tier below HBM) and its own queue and KV counters;
//   - one thread per shared link ("link kv_tiers.dram.read", "link
//     node0.node_nic.rx") with a slice per transfer (bytes, and the delay
//     sharing the link cost it): the engine's tier ports in the engine's or
//     the instance's process, the links a cluster's instances share in the
//     cluster's.
// Bounded: each kind of event keeps every one until half its budget is
// spent, then every 2nd, every 4th, ... so a long run's file stays near
// `max_events` events (a few dozen more at most) and still covers the whole
// run; the file's otherData
// says how many were seen and kept.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reports/output_rule.hpp"
#include "sim/engine/run_sink.hpp"

namespace kvsim {

class TraceRunSink final : public RunSink {
 public:
  static constexpr uint64_t kDefaultMaxEvents = 400'000;

  // Throws OutputRefused when the output rule (reports/output_rule.hpp)
  // does not let `path` be written (`force`: a user's regular file may be
  // replaced), std::filesystem::filesystem_error when the temporary file
  // beside it cannot be created.
  TraceRunSink(const std::string& path, const std::string& title,
               uint64_t max_events = kDefaultMaxEvents, bool force = false);
  ~TraceRunSink() override;  // without close(), the temporary file is removed
  TraceRunSink(const TraceRunSink&) = delete;
  TraceRunSink& operator=(const TraceRunSink&) = delete;
  void request(const RequestRow& row) override;
  void timeline(const TimelineRow& row) override;
  bool wants_spans() const override { return true; }
  void span(const SpanRow& row) override;
  void cluster_started(const std::vector<ClusterInstanceInfo>& instances) override;
  void cluster_timeline(const ClusterTimelineRow& row) override;
  void instance_span(int32_t instance, const SpanRow& row) override;
  // Ends the JSON document and renames it into place; throws
  // std::filesystem::filesystem_error when a write failed (a full disk),
  // OutputRefused when the destination may no longer be replaced.
  void close();

  // Whether the regular file at `path` is a trace kvsim wrote: it begins
  // with this writer's first line and ends with its generator record.
  static bool written_by_kvsim(const std::filesystem::path& path);

  // Keeps every event until half the budget is spent, then every 2nd, ...
  class Sampler {
   public:
    explicit Sampler(uint64_t budget) : budget_(budget), next_halving_(budget / 2) {}
    bool keep();
    uint64_t seen() const { return seen_; }
    uint64_t kept() const { return kept_; }

   private:
    uint64_t budget_, next_halving_;
    uint64_t seen_ = 0, kept_ = 0, stride_ = 1;
  };

 private:
  void event(const std::string& json);
  void engine_metadata();  // the one engine's process, before its first event
  void span_event(int pid, const SpanRow& r);
  std::string instances_sampled() const;
  // The thread of link `name` in process `pid`, named on first use.
  int link_thread(int pid, std::string_view name);

  OutputTarget target_;
  TemporaryPath temp_;
  std::ofstream out_;
  std::string path_;
  bool first_ = true;
  bool closed_ = false;
  bool engine_named_ = false;
  std::string title_;
  // Event budgets: requests (4 to 6 events each), steps and passes, other
  // spans, counters.
  Sampler requests_, steps_, others_, counters_;
  // A cluster: the budgets shared out, so that every instance keeps its
  // share of steps and spans, and every row time keeps all of its rows.
  uint64_t max_events_;
  std::vector<Sampler> instance_steps_, instance_others_;
  Sampler row_times_{1};
  size_t instances_ = 0;
  bool keep_row_time_ = false;
  std::map<std::pair<int, std::string>, int> link_threads_;
};

}  // namespace kvsim
