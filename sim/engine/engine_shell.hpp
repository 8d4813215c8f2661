#pragma once
// What every engine does the same way, composed into each of them: the
// clock it runs on, the row sink, the request counters and latency
// histograms, the time-weighted KV usage, the progress line and the part of
// the metrics every run reports (SPEC 9: header, requests, latency_ms,
// throughput, workload, sim). An engine keeps only what differs: how it
// schedules work and what its cache reports.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "sim/core/latency_histogram.hpp"
#include "sim/core/metrics.hpp"
#include "sim/core/served_metrics.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/engine/session_metrics.hpp"

namespace kvsim {

struct InstanceSpec;

// A request as it leaves an engine, in the engine's own terms.
struct LeavingRequest {
  const Request& request;
  TimeNs first_token = -1;    // completed only
  int64_t prompt_tokens = 0;  // tokens fed as input (a dialog adds the last reply token)
  int64_t output_tokens = 0;  // tokens generated (completed) or asked for (rejected)
  int64_t cached_tokens = 0;  // prefix found in the cache
  int32_t preemptions = 0;
  TimeNs started = -1;  // first scheduled (RequestRow::started)
  TimeNs kv_wait = 0;   // its steps' stalls on KV loads and stores (RequestRow::kv_wait)
};

// Bytes of KV held, integrated over time between observations.
class KvUsageIntegral {
 public:
  // Accounts the bytes held since the last observation up to `now`; returns
  // that span in nanoseconds.
  // Inline: an engine observes twice a step.
  double advance(TimeNs now) {
    const double dt = static_cast<double>(now - last_);
    integral_ += static_cast<double>(current_) * dt;
    last_ = now;
    return dt;
  }
  void set(Bytes used) {
    current_ = used;
    peak_ = used > peak_ ? used : peak_;
  }
  Bytes current() const { return current_; }
  Bytes peak() const { return peak_; }
  double mean(double over_ns) const { return over_ns > 0 ? integral_ / over_ns : 0.0; }

 private:
  double integral_ = 0;  // byte-nanoseconds
  TimeNs last_ = 0;
  Bytes current_ = 0, peak_ = 0;
};

class EngineShell {
 public:
  // `engine_kind` is the engine's registry name (RunMetrics::engine). `sink`
  // may be null (rows are dropped). `uplink` hears of every request that
  // leaves.
  EngineShell(std::string_view engine_kind, const InstanceSpec& scenario, Simulator& sim,
              EngineUplink& uplink, RunSink* sink);
  EngineShell(const EngineShell&) = delete;
  EngineShell& operator=(const EngineShell&) = delete;

  Simulator& sim() { return sim_; }
  TimeNs now() const { return sim_.now(); }
  EngineUplink& uplink() { return uplink_; }
  RunSink& sink() { return *sink_; }

  // The clock starts for this engine (wall time is measured from here).
  void start();
  void count_arrival() { ++arrived_; }
  // Completed: latency histograms, counters, a requests.csv row, and the
  // request goes back up.
  void complete(const LeavingRequest& r);
  // Refused or dropped: a row and back up.
  void reject(const LeavingRequest& r);
  // `count` tokens of one request appeared now; `last_token` is the time of
  // its previous token (-1 before its first) and is moved to now. Every token
  // after the request's first adds an inter-token latency (tokens emitted
  // together are 0 apart).
  void tokens_emitted(TimeNs& last_token, int64_t count);
  // `times` requests emitted one token each now, all with their previous
  // token at `last_token` (>= 0): the same as that many tokens_emitted(t, 1)
  // calls with t == last_token, without a call per request (a decode step
  // emits one token per running request, mostly all a step latency apart).
  void tokens_emitted_after(TimeNs last_token, int64_t times);
  // The targets a completed request must meet to count towards goodput
  // (none by default: every completed request counts).
  void set_slo(const SloTargets& slo) { slo_ = slo; }

  // The engine's state at `row.time`, with the step launched then (if any) in
  // row.step_tokens / row.step_latency. A row is written every
  // output.timeline_interval (or when forced); its step columns sum every
  // step launched since the previous row, so sparse rows still account for
  // all the work done between them.
  void timeline(const TimelineRow& row, bool force);
  // timeline() in two halves, for an engine that builds its row only when
  // one is written: timeline_due() counts the step launched at `now` (if
  // any) and says whether a row is due; then write_timeline(row) writes it
  // with the step columns summed since the last row (row's own are not
  // read). The same rows as timeline() with the same arguments.
  bool timeline_due(TimeNs now, int64_t step_tokens, TimeNs step_latency, int64_t step_seqs,
                    bool force);
  void write_timeline(const TimelineRow& row);
  // Inter-token latencies are also added to `itl` (may be null).
  void mirror_itl(LatencyHistogram* itl) { itl_mirror_ = itl; }
  // This shell's own inter-token histogram, for instances to mirror into.
  LatencyHistogram* itl_histogram() { return &itl_; }
  // True when the sink takes spans (SpanRow): engines build them only then.
  bool spans_wanted() const { return spans_; }
  void span(const SpanRow& row) {
    if (spans_) sink_->span(row);
  }
  void set_progress(std::function<void(const RunProgress&)> callback) {
    progress_ = std::move(callback);
  }
  // Every 4096 steps, the progress line hears where the run stands.
  void step_started(int64_t step, int64_t running, int64_t waiting);

  int64_t arrived() const { return arrived_; }
  int64_t completed() const { return completed_; }
  int64_t rejected() const { return rejected_; }

  // Per-session metrics (metrics.json `agent_sessions`, session_metrics.hpp): on
  // from the start for a workload with a session graph (kind: agentic, the
  // agentic trace format), off otherwise so other runs keep their keys.
  // Tests of hand-built runs switch it on here.
  void enable_session_metrics() {
    if (!sessions_) sessions_ = std::make_unique<SessionMetricsCollector>();
  }
  const SessionMetricsCollector* session_metrics() const { return sessions_.get(); }

  // The metrics every engine reports alike: the scenario header, requests,
  // latency and throughput, numerics.mode, and sim.* over
  // `simulated` nanoseconds of `steps` steps (or passes).
  RunMetrics common_metrics(std::string policy, int64_t steps, TimeNs simulated) const;

 private:
  std::string_view engine_kind_;
  const InstanceSpec& scenario_;
  Simulator& sim_;
  EngineUplink& uplink_;
  NullRunSink null_sink_;
  RunSink* sink_;
  std::function<void(const RunProgress&)> progress_;
  std::chrono::steady_clock::time_point wall_start_;

  LatencyHistogram ttft_, tpot_, e2e_, itl_;
  LatencyHistogram kv_wait_;  // LeavingRequest::kv_wait of completed requests
  LatencyHistogram* itl_mirror_ = nullptr;
  SloTargets slo_;
  int64_t met_slo_ = 0;
  int64_t arrived_ = 0, completed_ = 0, rejected_ = 0;
  int64_t prompt_tokens_done_ = 0, output_tokens_done_ = 0;
  TimeNs last_completion_ = 0;
  TimeNs last_timeline_ = -1;
  // Steps launched since the last row. The token and time sums are kept
  // apart in memory: side by side, the compiler adds both with one 16-byte
  // load of the row the engine has just written in 8-byte pieces, which
  // stalls on store forwarding at every step.
  int64_t pending_step_tokens_ = 0;
  int64_t pending_steps_ = 0;
  TimeNs pending_step_time_ = 0;
  int64_t pending_step_seqs_ = 0;
  bool spans_ = false;
  std::unique_ptr<SessionMetricsCollector> sessions_;
};

}  // namespace kvsim
