#pragma once
// Internal to sim/genie/: the state of one GenieEngine run, shared by
// genie_engine.cpp (turns, passes, KV updates) and genie_engine_run.cpp
// (construction, co-runners, timeline, metrics). Not an interface.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cache/kv_vtcm/kv_vtcm_placement.hpp"
#include "sim/cache/llama_backend_cost.hpp"
#include "sim/core/simulator.hpp"
#include "sim/engine/engine_shell.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_passes.hpp"
#include "sim/genie/genie_sessions.hpp"
#include "workloads/request.hpp"

namespace kvsim::dialog_detail {

// Same-time events: a pass or a burst ends first (its VTCM comes back), then
// arrivals (the co-runners' bursts arrive with the requests), then what starts.
inline constexpr int32_t kPrioDone = 0;
inline constexpr int32_t kPrioArrival = kArrivalPriority;
inline constexpr int32_t kPrioStart = 2;
inline constexpr int32_t kPrioStop = 3;

inline constexpr int32_t kLlmSession = 0;  // the first session registered

}  // namespace kvsim::dialog_detail

namespace kvsim {

struct GenieRunMetrics;

class GenieEngine::Impl {
 public:
  Impl(const InstanceSpec& scenario, Simulator& sim, EngineUplink& uplink, RunSink* sink,
       std::unique_ptr<GenieKvPolicy> policy);

  void start();
  void submit(Request request);
  RunMetrics finish();
  PoolSizing memory_plan() const;
  // Time to draft `drafts` tokens for a verify pass starting at `position`.
  TimeNs draft_time(int64_t drafts, int64_t position) const;

  const InstanceSpec& s_;
  EngineShell shell_;
  Simulator& sim_;
  const DialogWorkloadSpec& dialog_;
  std::unique_ptr<GenieKvPolicy> policy_;
  HtpTimingModel timing_;
  // The EAGLE draft head (workloads/dialog_workload_spec.hpp): one decoder
  // layer of the target's shape with its LM head; absent without one.
  std::optional<HtpTimingModel> draft_timing_;
  // What llama.cpp's backend leaves to the CPU (llama_cells); absent otherwise.
  std::unique_ptr<LlamaBackendCost> host_work_;
  VtcmSessions vtcm_;
  GenieCacheShape shape_;
  std::vector<int64_t> variants_;
  int64_t ctx_size_ = 0;
  int64_t update_threads_ = 1;  // CPU threads splitting each KV update (seed 002)
  bool windowed_ = false;
  Bytes vtcm_request_ = 0;
  std::vector<int32_t> co_runner_ids_;
  // KV resident in VTCM (sim/cache/kv_vtcm/; genie_kv_vtcm.cpp).
  std::unique_ptr<KvVtcmPlacement> kv_vtcm_;
  KvVtcmGeometry kv_geometry_;
  Bytes graph_vtcm_ = 0;  // the graph's tiles' need within the window
  std::vector<std::unique_ptr<GenieObserver>> observers_;
  std::function<void(const GeniePassRecord&)> pass_callback_;

 private:
  // The turn in flight.
  struct Turn {
    Request request;
    int64_t reply_tokens = 0;
    int64_t input_tokens = 0;  // prompt, plus the previous reply's last token
    int64_t cached_tokens = 0;
    std::vector<PassShape> prefill;
    size_t next_prefill = 0;
    int32_t passes = 0;
    int32_t verify_passes = 0;
    int64_t generated = 0;
    TimeNs first_token = -1;
    TimeNs last_token = -1;  // inter-token latency
    TimeNs started = -1;     // VTCM granted: the turn's work begins
    VtcmGrant grant;
    KvVtcmPlan kv;  // the KV the window holds this turn
  };
  struct Pending {  // the pass in flight
    GeniePassKind kind = GeniePassKind::prefill;
    PassShape shape;
    GeniePassRecord record;
  };

  void begin_turn(Request request);
  void acquire_vtcm();
  // genie_kv_vtcm.cpp: the placement at construction; this turn's plan for
  // its grant (returns the time to fill the mirrors from DDR); the time to
  // bring an update's changes into them; the counters into the metrics.
  void init_kv_vtcm();
  TimeNs place_kv_vtcm(const VtcmGrant& grant);
  TimeNs kv_vtcm_sync_time(const KvUpdatePlan& plan) const;
  void report_kv_vtcm(GenieRunMetrics& g) const;
  void start_turn();
  PassShape decode_shape(int64_t position, GeniePassKind* kind) const;
  void start_pass(GeniePassKind kind, PassShape shape, TimeNs delay);
  void on_pass_done();
  void complete_turn(TimeNs update_time);
  void reject_turn();
  void end_turn();
  void finish_dialog();
  TimeNs update_time(const KvUpdatePlan& plan) const;
  // `selected`: dispatchUpdate's keep-mask over the last pass's entries (empty: all).
  KvUpdatePlan dispatch(int64_t n_past, int64_t variant, const std::string& where,
                        std::vector<bool> selected = {});
  void co_runner_burst(size_t index, int64_t burst);
  void co_runner_release(size_t index, int64_t burst);
  void observe(TimeNs now, int64_t step_tokens, TimeNs step_latency, bool force_row = false);
  // A KV update as a span (trace, turn timeline), when the sink takes spans.
  void span_update(const KvUpdatePlan& plan, const KvUpdatePlan* rewind, TimeNs duration);
  Bytes used_bytes() const { return policy_->held_bytes(shape_.column_bytes()); }

  std::optional<Turn> turn_;
  Pending pending_;
  bool pending_token_ = false;  // the last reply token is not in the cache yet
  TimeNs engine_free_at_ = 0;   // the CPU update after the last pass ends
  bool stopped_ = false;
  TimeNs end_time_ = 0;
  bool turn_submitted_ = false;  // from submit() to the end of the turn

  // What only a dialog measures; the shell has the rest.
  int64_t passes_ = 0, context_resets_ = 0;
  int64_t attention_read_ = 0, attention_useful_ = 0;
  Bytes session_io_bytes_ = 0;
  Bytes mask_bytes_ = 0;  // attention masks the host wrote before the passes
  KvUsageIntegral kv_used_;
  struct {
    int64_t turns = 0;  // turns placed
    int64_t min_layers = 0;
    Bytes min_bytes = 0;
    Bytes fill_bytes = 0, read_bytes = 0;
    mutable Bytes sync_bytes = 0;  // counted where update_time prices them
  } kv_vtcm_counts_;
  // kind: llama_bench: each test's timed runs (ns), by test index.
  std::vector<std::vector<TimeNs>> bench_samples_;
};

}  // namespace kvsim
