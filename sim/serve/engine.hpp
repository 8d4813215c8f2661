#pragma once
// One serving run: the workload's requests arrive as events, the scheduler
// builds each step with the cache policy, the timing model prices it, and the
// event engine advances the clock by that price (DESIGN, "the flow of one
// run"). Nothing here knows a bandwidth; nothing below the scheduler
// schedules events.
#include <functional>
#include <memory>
#include <vector>

#include "devices/timing_model.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/latency_histogram.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"
#include "sim/serve/run_sink.hpp"
#include "sim/serve/scheduler.hpp"
#include "sim/serve/step_observer.hpp"
#include "sim/simulator.hpp"

namespace kvsim {

// Where a long run stands, for a progress line (the CLI shows it on a
// terminal). Reported every few thousand steps; never affects the run.
struct RunProgress {
  int64_t arrived = 0, completed = 0, rejected = 0;
  int64_t running = 0, waiting = 0;
  TimeNs simulated = 0;
};

class ServingEngine {
 public:
  // `sink` may be null (rows are dropped).
  ServingEngine(const ScenarioSpec& scenario, RunSink* sink);
  ~ServingEngine();

  // Runs the whole workload and returns its metrics. Throws std::logic_error
  // when an invariant breaks (e.g. blocks not back in the pool at the end).
  RunMetrics run();

  const PoolSizing& sizing() const { return sizing_; }
  void set_progress(std::function<void(const RunProgress&)> callback) {
    progress_ = std::move(callback);
  }
  // Sequence objects ever allocated: bounded by the requests in flight at
  // once, not by the requests served (a memory check for long runs).
  size_t pooled_sequences() const { return sequence_pool_.size(); }

 private:
  void arm_arrival();
  void on_arrival();
  void kick();
  void start_step();
  void on_step_done();
  void complete(Sequence* seq);
  void reject(Sequence* seq);
  void observe(TimeNs now, int64_t step_tokens, TimeNs step_latency, bool force_row = false);
  Sequence* new_sequence(Request&& request);
  void recycle(Sequence* seq);

  const ScenarioSpec& scenario_;
  RunSink* sink_;
  NullRunSink null_sink_;
  PoolSizing sizing_;
  std::unique_ptr<KvCachePolicy> policy_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<TimingModel> timing_;
  std::unique_ptr<RequestSource> source_;
  Simulator sim_;

  // Sequences are pooled: a finished one is reused for a later request, so
  // memory follows the number in flight, not the number served.
  std::vector<std::unique_ptr<Sequence>> sequence_pool_;
  std::vector<Sequence*> free_sequences_;

  EventHandle arrival_event_;
  TimeNs arrival_event_time_ = -1;
  bool step_in_flight_ = false;
  bool kick_pending_ = false;
  ScheduledBatch batch_;
  StepWork work_;
  TimeNs step_latency_ = 0;

  // Metrics.
  LatencyHistogram ttft_, tpot_, e2e_;
  int64_t arrived_ = 0, completed_ = 0, rejected_ = 0, preempted_requests_ = 0;
  int64_t prompt_tokens_done_ = 0, output_tokens_done_ = 0;
  int64_t steps_ = 0;
  TimeNs last_observed_ = 0;
  double used_bytes_integral_ = 0;  // byte-nanoseconds
  double frag_integral_ = 0;        // fraction-nanoseconds while blocks are used
  double frag_time_ = 0;
  Bytes peak_used_bytes_ = 0;
  Bytes current_used_bytes_ = 0;
  double current_frag_ = 0;
  bool current_has_blocks_ = false;
  TimeNs last_timeline_ = -1;
  TimeNs last_completion_ = 0;
  std::function<void(const RunProgress&)> progress_;
  std::unique_ptr<StepObserver> numerics_;
};

}  // namespace kvsim
