#pragma once
// One on-device dialog run (seed 002, SPEC 5 `dialog`): a single
// user's turns on a Qualcomm HTP. Each turn acquires VTCM (waiting while it
// cannot get its minimum), prefills its prompt in AR-n passes (the largest
// shipped variant for full passes, the last pass padded), decodes in AR-1 or
// in speculative verify passes, dispatches a Genie KV update after every pass
// (clear cache, set variant, rewind, update and set) and releases VTCM. Other
// models sharing the HTP (`htp.co_runners`) acquire and release VTCM on their
// duty cycle through the same allocator.
//
// Same shape as ServingEngine: an InferenceEngine on a clock it is given, or alone
// (construct from a scenario and a sink, run() once). Nothing here knows a
// bandwidth: HtpTimingModel prices every pass and update, the GenieKvPolicy
// plans them, and the Simulator advances the clock by the price.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devices/htp_timing.hpp"
#include "sim/cache/genie_policy.hpp"
#include "sim/core/metrics.hpp"
#include "sim/engine/arrival_pump.hpp"
#include "sim/engine/inference_engine.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

enum class GeniePassKind : uint8_t { prefill, decode, verify };
std::string_view genie_pass_kind_name(GeniePassKind kind);

// One HTP graph pass of the dialog, as the engine priced it, followed by the
// KV update dispatched after it. For tests, numerics and traces.
struct GeniePassRecord {
  int32_t turn = 0;  // 0-based turn of the dialog
  int32_t pass = 0;  // 0-based pass within the turn
  GeniePassKind kind = GeniePassKind::prefill;
  HtpPass htp;                  // what was priced (variant, useful tokens, KV columns read, VTCM)
  HtpPassTiming timing;         // its price
  TimeNs start = 0;             // when the pass started
  int64_t n_past_before = 0;    // tokens in the cache when the pass ran (logical positions)
  int64_t accepted_drafts = 0;  // verify passes: drafts the target model accepted
  KvUpdatePlan update;          // the update dispatched after the pass
  std::vector<KvUpdatePlan> extra;  // further updates (a verify pass's rewind)
  TimeNs update_time = 0;           // CPU copy + pointer registration + graph switch
};

// Watches a dialog run without changing it (the numerics checker). May
// throw CheckFailed (sim/serve/step_observer.hpp) to stop the run.
class GenieObserver {
 public:
  virtual ~GenieObserver() = default;
  // Every KV update the engine dispatches (restore, clear, set variant,
  // update and set, rewind), in order, right after `policy` applied it.
  // `where` names it for messages ("turn 2 after pass 5").
  virtual void on_update(const KvUpdatePlan& plan, const GenieKvPolicy& policy,
                         const std::string& where) = 0;
  // A pass finished and its updates were dispatched.
  virtual void on_pass(const GeniePassRecord& pass, const GenieKvPolicy& policy) {
    (void)pass;
    (void)policy;
  }
  virtual void report(RunMetrics& metrics) const { (void)metrics; }
};

class GenieEngine final : public InferenceEngine {
 public:
  // Alone on a clock of its own, fed by the scenario's dialog; run() runs it.
  // `sink` may be null (rows are dropped). Throws std::invalid_argument when
  // the scenario is not an HTP dialog scenario (cross-checks reject that
  // first) or the on-device policy is not available in this build.
  GenieEngine(const InstanceSpec& scenario, RunSink* sink);
  // Tests: the same with a given policy instead of the one kv_cache names.
  GenieEngine(const InstanceSpec& scenario, RunSink* sink, std::unique_ptr<GenieKvPolicy> policy);
  // A component on a shared clock: `sim` and `uplink` (whoever submits the
  // turns) outlive the engine. One turn at a time: a dialog is sequential.
  GenieEngine(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink, RunSink* sink);
  ~GenieEngine() override;
  GenieEngine(const GenieEngine&) = delete;
  GenieEngine& operator=(const GenieEngine&) = delete;

  // Alone only: runs the whole dialog and returns its metrics (the keys of a
  // serving run, plus vtcm.* and the sessions array). Throws CheckFailed
  // when a numerics check fails, std::logic_error when an invariant breaks.
  RunMetrics run();

  std::string_view kind() const override { return "genie"; }
  void start() override;
  // Throws std::logic_error when a turn is still in flight.
  void submit(Request request) override;
  RunMetrics finish() override;
  PoolSizing memory_plan() const override;
  void set_progress(std::function<void(const RunProgress&)> callback) override;
  // Every pass, as it completes (tests and traces). Never affects the run.
  void set_pass_callback(std::function<void(const GeniePassRecord&)> callback);
  // An extra observer (tests); the numerics observer of `numerics.mode` is
  // added by the engine itself.
  void add_observer(std::unique_ptr<GenieObserver> observer);

  const GenieKvPolicy& policy() const;

 private:
  class Impl;
  std::unique_ptr<SoloRig> solo_;  // alone only; declared first, it outlives impl_
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvsim
